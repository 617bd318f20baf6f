"""The elastic agent: ``WorkerSpec`` in, supervised worker group out (``RunResult``)."""
from ember.distributed.elastic.agent.server.api import (  # noqa: F401
    ElasticAgent, RunResult, Worker, WorkerGroup, WorkerSpec, WorkerState)
from ember.distributed.elastic.agent.server.local_elastic_agent import (  # noqa: F401
    DefaultLogsSpecs, LocalElasticAgent)

__all__ = ["ElasticAgent", "RunResult", "Worker", "WorkerGroup", "WorkerSpec", "WorkerState",
           "DefaultLogsSpecs", "LocalElasticAgent"]
