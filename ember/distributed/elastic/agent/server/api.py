"""Data the elastic agent works with: the worker spec, workers, their group and states."""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Callable, Union

__all__ = ["WorkerSpec", "Worker", "WorkerState", "WorkerGroup", "RunResult", "ElasticAgent"]

_Entrypoint = Union[str, Callable, None]   # a binary to exec, or a picklable function
_Address = Union[str, None]                # a host name / IP, ``None`` = let the agent pick


@dataclass
class WorkerSpec:
    """What to run: ``local_world_size`` copies of ``entrypoint *args`` (a binary or a
    picklable function) of role ``role``,
    restarted at most ``max_restarts`` times, watched every ``monitor_interval`` s."""
    # who runs and how many, agreed through which rendezvous
    role: str
    local_world_size: int
    rdzv_handler: Any
    # what runs (``fn`` is the old spelling of a function entrypoint)
    fn: Callable | None = None
    entrypoint: _Entrypoint = None
    args: tuple[Any, ...] = ()
    # supervision
    max_restarts: int = 3
    monitor_interval: float = 0.1
    # where the workers' store lives and what this node calls itself
    master_port: int | None = None
    master_addr: _Address = None
    local_addr: _Address = None
    virtual_local_rank: bool = False

    def __post_init__(self):
        for name in ("local_world_size", "monitor_interval"):
            _require(getattr(self, name) > 0, f"{name} must be > 0, got {getattr(self, name)}")
        if self.fn is None:
            return
        _require(self.entrypoint is None, "WorkerSpec: give either fn or entrypoint, not both")
        self.fn, self.entrypoint = None, self.fn

    def get_entrypoint_name(self):
        """The binary's path, or the function's qualified name."""
        target = self.entrypoint
        return target if isinstance(target, str) else target.__qualname__


def _require(ok: bool, message: str):
    if not ok:
        raise AssertionError(message)


# The lifecycle of a worker group; members are strings equal to their own name.
_STATES = ("UNKNOWN", "INIT", "HEALTHY", "UNHEALTHY", "STOPPED", "SUCCEEDED", "FAILED")
_RUNNING = frozenset({"HEALTHY", "UNHEALTHY"})   # workers are up (maybe failing)

WorkerState = Enum("WorkerState", [(s, s) for s in _STATES], type=str, module=__name__,
                   qualname="WorkerState")


def _is_running(state) -> bool:
    """Whether a group in ``state`` has live worker processes."""
    return state in _RUNNING


WorkerState.is_running = staticmethod(_is_running)


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
        self.spec, self.state = spec, WorkerState.INIT
        self.workers = [Worker(local_rank=r) for r in range(spec.local_world_size)]
        # filled in by the agent once a rendezvous round completes
        self.store = self.group_rank = self.group_world_size = None
        self.master_addr = self.master_port = None


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
