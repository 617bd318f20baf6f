"""``torch.distributed.rpc`` on ZeroMQ (pyzmq, the optional extra ``rpc``).

Remote calls (``rpc_sync``, ``rpc_async``, ``remote``) and remote references (``RRef``)
between the workers that ``init_rpc`` joins. ``BackendType.TENSORPIPE`` names ember's
ZeroMQ agent (``_agent.py``); tensors travel as raw buffers beside the pickle
(``_wire.py``); RRef reference counting is in ``rref.py``.
"""
from ember.distributed.rpc import constants, functions  # noqa: F401
from ember.distributed.rpc.api import (_set_rpc_timeout, get_rpc_timeout,  # noqa: F401
                                       get_worker_info, init_rpc, remote, rpc_async,
                                       rpc_sync, shutdown)
from ember.distributed.rpc.options import (BackendType, RpcBackendOptions,  # noqa: F401
                                           TensorPipeRpcBackendOptions, WorkerInfo)
from ember.distributed.rpc.rref import RRef  # noqa: F401

PyRRef = RRef

__all__ = ["init_rpc", "shutdown", "rpc_sync", "rpc_async", "remote", "get_worker_info",
           "get_rpc_timeout", "RRef", "PyRRef", "WorkerInfo", "BackendType",
           "RpcBackendOptions", "TensorPipeRpcBackendOptions", "constants", "functions",
           "is_available"]


def is_available():
    """True: the ZeroMQ agent needs only pyzmq."""
    return True


def _register_with_jit():
    """Scripted code may call ``rpc_async``/``rpc_sync``/``remote`` (``ember/jit/_rpc.py``)."""
    from ember.jit import _script_api
    _script_api.JIT_BUILTINS.update({rpc_async: "rpc_async", rpc_sync: "rpc_sync",
                                     remote: "remote"})


_register_with_jit()
