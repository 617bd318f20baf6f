"""Data the elastic agent works with: the worker spec, workers, their group and states."""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Callable

__all__ = ["WorkerSpec", "Worker", "WorkerState", "WorkerGroup", "RunResult", "ElasticAgent"]


@dataclass
class WorkerSpec:
    """What to run: ``local_world_size`` copies of ``entrypoint *args`` (a binary or a
    picklable function) of role ``role``,
    restarted at most ``max_restarts`` times, watched every ``monitor_interval`` s."""
    role: str
    local_world_size: int
    rdzv_handler: Any
    fn: Callable | None = None
    entrypoint: str | None = None
    args: tuple = ()
    max_restarts: int = 3
    monitor_interval: float = 0.1
    master_port: int | None = None
    master_addr: str | None = None
    local_addr: str | None = None
    virtual_local_rank: bool = False

    def __post_init__(self):
        if self.local_world_size <= 0:
            raise AssertionError(f"local_world_size must be > 0, got {self.local_world_size}")
        if self.monitor_interval <= 0:
            raise AssertionError(f"monitor_interval must be > 0, got {self.monitor_interval}")
        if self.fn is not None:
            if self.entrypoint is not None:
                raise AssertionError("WorkerSpec: give either fn or entrypoint, not both")
            self.entrypoint, self.fn = self.fn, None

    def get_entrypoint_name(self):
        return self.entrypoint if isinstance(self.entrypoint, str) else \
            self.entrypoint.__qualname__


class WorkerState(str, Enum):
    UNKNOWN = "UNKNOWN"
    INIT = "INIT"
    HEALTHY = "HEALTHY"
    UNHEALTHY = "UNHEALTHY"
    STOPPED = "STOPPED"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"

    @staticmethod
    def is_running(state: "WorkerState") -> bool:
        return state in (WorkerState.HEALTHY, WorkerState.UNHEALTHY)


@dataclass
class Worker:
    """One worker process: its ranks (-1 until assigned) and pid."""
    local_rank: int
    global_rank: int = -1
    role_rank: int = -1
    world_size: int = -1
    role_world_size: int = -1
    id: Any = None


class WorkerGroup:
    """The ``spec.local_world_size`` workers of this agent for one rendezvous round."""

    def __init__(self, spec: WorkerSpec):
        self.spec = spec
        self.workers = [Worker(local_rank=i) for i in range(spec.local_world_size)]
        self.store = None
        self.group_rank = None
        self.group_world_size = None
        self.master_addr = None
        self.master_port = None
        self.state = WorkerState.INIT


@dataclass
class RunResult:
    """Outcome of ``agent.run()``: ``failures`` maps global rank -> ``ProcessFailure``."""
    state: WorkerState
    return_values: dict = field(default_factory=dict)
    failures: dict = field(default_factory=dict)

    def is_failed(self) -> bool:
        return self.state == WorkerState.FAILED


class ElasticAgent:
    """Runs and supervises a worker group (see ``LocalElasticAgent``)."""

    def run(self, role: str = "default") -> RunResult:
        raise NotImplementedError

    def get_worker_group(self, role: str = "default") -> WorkerGroup:
        raise NotImplementedError
