"""``LaunchConfig`` / ``elastic_launch`` / ``launch_agent``: run an elastic agent from
Python (what ``python -m ember.distributed.run`` does after parsing its options)."""
from __future__ import annotations

import logging
import os
import signal
import sys
import uuid
from dataclasses import dataclass, field

from ember.distributed.elastic.multiprocessing import SignalException
from ember.distributed.elastic.multiprocessing.errors import ChildFailedError

__all__ = ["LaunchConfig", "elastic_launch", "launch_agent"]

log = logging.getLogger("ember.distributed.elastic")


@dataclass
class LaunchConfig:
    """How to launch: ``min_nodes..max_nodes`` nodes of ``nproc_per_node`` workers, the
    rendezvous (``rdzv_backend`` at ``rdzv_endpoint``, ``rdzv_configs``), restarts and
    where logs go (``logs_specs``, a ``DefaultLogsSpecs``)."""
    min_nodes: int
    max_nodes: int
    nproc_per_node: int
    logs_specs: object = None
    run_id: str = ""
    role: str = "default_role"
    rdzv_endpoint: str = ""
    rdzv_backend: str = "etcd"
    rdzv_configs: dict = field(default_factory=dict)
    rdzv_timeout: int = -1
    max_restarts: int = 3
    monitor_interval: float = 0.1
    start_method: str = "spawn"
    log_line_prefix_template: str | None = None
    metrics_cfg: dict = field(default_factory=dict)
    local_addr: str | None = None
    event_log_handler: str = "null"
    numa_options: object = None
    signals_to_handle: str = "SIGTERM,SIGINT,SIGHUP,SIGQUIT"
    duplicate_stdout_filters: list | None = None
    duplicate_stderr_filters: list | None = None
    virtual_local_rank: bool = False
    shutdown_timeout: int | None = None

    def __post_init__(self):
        if self.rdzv_timeout != -1:
            self.rdzv_configs["timeout"] = self.rdzv_timeout


class elastic_launch:
    """``elastic_launch(config, entrypoint)(*args)`` runs ``launch_agent``; returns
    ``{rank: return value}`` or raises ``ChildFailedError``."""

    def __init__(self, config: LaunchConfig, entrypoint):
        self._config = config
        self._entrypoint = entrypoint

    def __call__(self, *args):
        return launch_agent(self._config, self._entrypoint, list(args))


def _entrypoint_name(entrypoint, args):
    """The script (or module) a ``python`` entry point runs, else the binary's (or the
    function's) name."""
    if callable(entrypoint):
        return entrypoint.__name__
    if entrypoint != sys.executable:
        return os.path.basename(entrypoint)
    if "-c" in args:                       # --run-path: python -u -c CODE script
        return args[args.index("-c") + 2]
    return next((a for a in args if not a.startswith("-")), entrypoint)


def _install_signal_handlers(names: str):
    def raise_signal(signum, frame):
        raise SignalException(f"Process {os.getpid()} got signal: {signum}",
                              sigval=signal.Signals(signum))
    for name in filter(None, (s.strip() for s in names.split(","))):
        try:
            signal.signal(getattr(signal, name), raise_signal)
        except (AttributeError, ValueError, OSError):
            log.warning("Signal %s is not supported here; it is not forwarded", name)


def launch_agent(config: LaunchConfig, entrypoint, args) -> dict:
    """Rendezvous, run and supervise the local workers of ``entrypoint *args`` (a binary,
    e.g. ``sys.executable``, or a picklable function); returns ``{rank: return value}``
    (``None`` for binaries) or raises ``ChildFailedError``."""
    from ember.distributed.elastic import rendezvous as rdzv_mod
    from ember.distributed.elastic.agent.server import LocalElasticAgent, WorkerSpec
    from ember.distributed.elastic.multiprocessing import DefaultLogsSpecs
    if config.duplicate_stdout_filters or config.duplicate_stderr_filters:
        raise NotImplementedError("launch_agent: duplicate_stdout_filters/"
                                  "duplicate_stderr_filters are not supported by ember")
    if not config.run_id:
        config.run_id = str(uuid.uuid4())
    params = rdzv_mod.RendezvousParameters(
        backend=config.rdzv_backend, endpoint=config.rdzv_endpoint, run_id=config.run_id,
        min_nodes=config.min_nodes, max_nodes=config.max_nodes,
        local_addr=config.local_addr, **config.rdzv_configs)
    handler = rdzv_mod.get_rendezvous_handler(params)
    spec = WorkerSpec(role=config.role, local_world_size=config.nproc_per_node,
                      rdzv_handler=handler, entrypoint=entrypoint, args=tuple(args),
                      max_restarts=config.max_restarts,
                      monitor_interval=config.monitor_interval, local_addr=config.local_addr,
                      virtual_local_rank=config.virtual_local_rank)
    shutdown_timeout = config.shutdown_timeout
    if shutdown_timeout is None:
        shutdown_timeout = int(os.environ.get("TORCH_ELASTIC_SHUTDOWN_TIMEOUT", "30"))
    agent = LocalElasticAgent(spec, config.logs_specs or DefaultLogsSpecs(),
                              config.start_method, shutdown_timeout=shutdown_timeout)
    _install_signal_handlers(config.signals_to_handle)
    result = agent.run()
    if result.is_failed():
        raise ChildFailedError(name=_entrypoint_name(entrypoint, args),
                               failures=result.failures)
    return result.return_values
