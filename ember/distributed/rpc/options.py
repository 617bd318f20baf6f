"""``BackendType``, ``TensorPipeRpcBackendOptions`` and ``WorkerInfo``.

``BackendType.TENSORPIPE`` names ember's ZeroMQ transport (``_agent.py``), so scripts
written for torch's TensorPipe backend run unchanged. Device maps need a GPU backend,
which ember does not have: they are refused with NotImplementedError.
"""
from __future__ import annotations

import enum

from ember.distributed.rpc import constants

__all__ = ["BackendType", "RpcBackendOptions", "TensorPipeRpcBackendOptions", "WorkerInfo"]


class BackendType(enum.Enum):
    """The RPC transports: TENSORPIPE is ember's ZeroMQ agent."""
    TENSORPIPE = "TENSORPIPE"

    def __repr__(self):
        return f"BackendType.{self.name}"


def _no_devices(what):
    raise NotImplementedError(
        f"TensorPipeRpcBackendOptions: {what} is not supported: ember's RPC agent (ZeroMQ) "
        f"moves CPU tensors only and ember has no GPU backend")


class RpcBackendOptions:
    """Options common to every backend: ``rpc_timeout`` (seconds) and ``init_method``."""

    def __init__(self, rpc_timeout=constants.DEFAULT_RPC_TIMEOUT_SEC,
                 init_method=constants.DEFAULT_INIT_METHOD):
        self.rpc_timeout = float(rpc_timeout)
        self.init_method = init_method


class TensorPipeRpcBackendOptions(RpcBackendOptions):
    """The agent's options: ``num_worker_threads`` serve incoming requests; calls without
    their own timeout use ``rpc_timeout`` seconds; ``init_method`` is a rendezvous url."""

    def __init__(self, *, num_worker_threads=constants.DEFAULT_NUM_WORKER_THREADS,
                 rpc_timeout=constants.DEFAULT_RPC_TIMEOUT_SEC,
                 init_method=constants.DEFAULT_INIT_METHOD, device_maps=None, devices=None,
                 _transports=None, _channels=None):
        super().__init__(rpc_timeout, init_method)
        if device_maps:
            _no_devices("device_maps")
        if devices:
            _no_devices("devices")
        if int(num_worker_threads) < 1:
            raise ValueError(f"num_worker_threads must be positive, got {num_worker_threads}")
        self.num_worker_threads = int(num_worker_threads)
        self.device_maps = {}
        self.devices = []
        self._transports = _transports
        self._channels = _channels

    def set_device_map(self, to, device_map):
        _no_devices("set_device_map")

    def set_devices(self, devices):
        _no_devices("set_devices")


class WorkerInfo:
    """A worker's ``name`` and ``id`` (its rank)."""
    __slots__ = ("name", "id")

    def __init__(self, name, id):
        self.name = name
        self.id = id

    def __eq__(self, other):
        return (isinstance(other, WorkerInfo) and self.id == other.id
                and self.name == other.name)

    def __hash__(self):
        return hash((self.name, self.id))

    def __repr__(self):
        return f"WorkerInfo(id={self.id}, name={self.name})"

    def __reduce__(self):
        return WorkerInfo, (self.name, self.id)
