"""``init_rpc``, ``shutdown``, ``rpc_sync``, ``rpc_async``, ``remote``, ``get_worker_info``.

Rendezvous goes through the stores of ``ember.distributed``: each worker binds its ROUTER
on a random port, publishes ``rpc/worker/<rank> -> (name, address)`` in the store of
``init_method`` and reads everyone else's. Graceful shutdown waits for this worker's
outstanding calls, then meets the others in a store barrier (bounded by the timeout).
"""
from __future__ import annotations

import gc
import os
import pickle
import re
import socket
import threading
import time
from datetime import timedelta
from urllib.parse import urlparse

from ember.distributed import autograd as dist_autograd
from ember.distributed._errors import DistNetworkError
from ember.distributed.rendezvous import rendezvous
from ember.distributed.rpc import _profiling, _wire, constants
from ember.distributed.rpc._agent import Agent
from ember.distributed.rpc.options import (BackendType, RpcBackendOptions,
                                           TensorPipeRpcBackendOptions, WorkerInfo)

__all__ = ["init_rpc", "shutdown", "rpc_sync", "rpc_async", "remote", "get_worker_info",
           "get_rpc_timeout"]

_agent = None
_init_lock = threading.Lock()
_NAME = re.compile(r"^[A-Za-z0-9_\-:.]{1,128}$")


def _current():
    if _agent is None:
        raise RuntimeError("RPC has not been initialized. Call torch.distributed.rpc.init_rpc "
                           "first.")
    return _agent


def _local_host(init_method):
    """The address to bind: the interface that reaches the master (127.0.0.1 locally)."""
    url = urlparse(init_method)
    host = url.hostname if url.scheme == "tcp" else os.environ.get("MASTER_ADDR")
    if not host or host in ("localhost", "127.0.0.1", "::1"):
        return "127.0.0.1"
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect((host, 9))
            return s.getsockname()[0]
    except OSError:
        return "127.0.0.1"


def init_rpc(name, backend=BackendType.TENSORPIPE, rank=-1, world_size=None,
             rpc_backend_options=None):
    """Start this worker's agent and meet the ``world_size`` others through the store of
    ``rpc_backend_options.init_method``; worker names must be unique."""
    global _agent
    backend = BackendType.TENSORPIPE if backend is None else backend
    if not isinstance(backend, BackendType):
        raise TypeError(f"Argument backend must be a member of BackendType, got {backend!r}")
    if not isinstance(name, str) or not _NAME.match(name):
        raise ValueError(f"Worker name must match ^[A-Za-z0-9_\\-:.]{{1,128}}$, got {name!r}")
    options = rpc_backend_options or TensorPipeRpcBackendOptions()
    if not isinstance(options, RpcBackendOptions):
        raise TypeError(f"rpc_backend_options must be TensorPipeRpcBackendOptions, got "
                        f"{type(options).__name__}")
    if not hasattr(options, "num_worker_threads"):
        options.num_worker_threads = constants.DEFAULT_NUM_WORKER_THREADS
    with _init_lock:
        if _agent is not None:
            raise RuntimeError("RPC is already initialized")
        store, rank, world_size = next(rendezvous(
            options.init_method, rank, -1 if world_size is None else world_size))
        agent = Agent(WorkerInfo(name, rank), _local_host(options.init_method), options)
        try:
            workers, addresses = _exchange(store, agent, world_size, options.rpc_timeout)
        except BaseException:
            agent.stop()
            raise
        agent.store, agent.world_size = store, world_size
        _agent = agent                  # before start: requests may come in at once
        agent.start(workers, addresses)


def _exchange(store, agent, world_size, timeout):
    """Publish this worker's (name, address); every worker's WorkerInfo and address."""
    me = agent.info
    store.set(f"rpc/worker/{me.id}", pickle.dumps((me.name, agent.address)))
    keys = [f"rpc/worker/{r}" for r in range(world_size)]
    store.wait(keys, timedelta(seconds=timeout if timeout > 0 else 1800))
    published = [pickle.loads(store.get(key)) for key in keys]
    store.add("rpc/init/read", 1)
    if me.id == 0:                      # serves the TCPStore: keep it until all have read
        deadline = time.monotonic() + (timeout if timeout > 0 else 1800)
        while store.add("rpc/init/read", 0) < world_size and time.monotonic() < deadline:
            time.sleep(0.002)
    workers, addresses = {}, {}
    for r, (name, address) in enumerate(published):
        if name == me.name and r != me.id:
            raise RuntimeError(f"RPC worker name {name} is not unique. Workers {me.id} and {r} "
                               f"share the same name.")
        workers[r], addresses[r] = WorkerInfo(name, r), address
    return workers, addresses


def shutdown(graceful=True, timeout=constants.DEFAULT_SHUTDOWN_TIMEOUT):
    """Stop this worker. ``graceful``: first wait for its outstanding calls and for every
    other worker to reach shutdown too (at most ``timeout`` seconds; 0 = the agent's
    rpc_timeout); a worker that never arrives makes it raise RuntimeError, after closing."""
    global _agent
    agent = _current()
    error = None
    if graceful:
        limit = timeout or agent.timeout or 1800.0
        deadline = time.monotonic() + limit
        gc.collect()                        # dead RRefs send their deletes now
        while (agent.pending or agent.oneway) and time.monotonic() < deadline:
            time.sleep(0.002)
        try:
            _barrier(agent, deadline, limit)
        except Exception as e:              # noqa: BLE001 - dead master: reported below
            error = e if isinstance(e, RuntimeError) else RuntimeError(
                f"RPC shutdown of {agent.info} failed: {type(e).__name__}: {e}")
    with _init_lock:
        _agent = None
    agent.stop()
    from ember.distributed.rpc import rref
    rref._reset()
    if error is not None:
        raise error


def _barrier(agent, deadline, limit):
    """All workers arrive, then all leave (rank 0 serves the TCPStore: it leaves last)."""
    store, world, me = agent.store, agent.world_size, agent.info
    store.set(f"rpc/shutdown/arrived/{me.id}", b"1")
    if store.add("rpc/shutdown/arrived", 1) == world:
        store.set("rpc/shutdown/done", b"1")
    try:
        left = max(0.001, deadline - time.monotonic())
        store.wait(["rpc/shutdown/done"], timedelta(seconds=left))
    except Exception:                       # noqa: BLE001 - name who is missing
        missing = [str(w.name) for r, w in sorted(agent.workers.items())
                   if not store.check([f"rpc/shutdown/arrived/{r}"])]
        raise RuntimeError(f"RPC shutdown of {me} timed out after {limit:.2f} seconds: workers "
                           f"{missing} did not reach shutdown") from None
    if me.id != 0:
        try:
            store.add("rpc/shutdown/left", 1)
        except DistNetworkError:
            # rank 0 stops serving the store once the count reaches the world size, which
            # can be before this add's reply is written: the add has landed, nothing is lost
            pass
        return
    store.add("rpc/shutdown/left", 1)
    while store.add("rpc/shutdown/left", 0) < world and time.monotonic() < deadline:
        time.sleep(0.002)


def get_worker_info(worker_name=None):
    """This worker's WorkerInfo, or the one named ``worker_name``."""
    agent = _current()
    return agent.info if worker_name is None else _resolve(agent, worker_name)


def get_rpc_timeout():
    """The default timeout of calls, in seconds."""
    return _current().timeout


def _set_rpc_timeout(rpc_timeout):
    _current().timeout = float(rpc_timeout)


def _resolve(agent, to):
    """A WorkerInfo from a name, rank or WorkerInfo."""
    if isinstance(to, WorkerInfo):
        found = agent.workers.get(to.id)
        what = f"name {to.name}"
    elif isinstance(to, str):
        found = agent.by_name.get(to)
        what = f"name {to}"
    elif isinstance(to, int):
        found = agent.workers.get(to)
        what = f"id {to}"
    else:
        raise TypeError(f"RPC destination must be a worker name, rank or WorkerInfo, got "
                        f"{type(to).__name__}")
    if found is None:
        raise RuntimeError(f"name:{agent.info.name},rank:{agent.info.id} could not find "
                           f"destination {what}")
    return found


def _timeout(agent, timeout):
    if timeout is None or timeout < 0:
        return agent.timeout
    return float(timeout)


def rpc_async(to, func, args=None, kwargs=None, timeout=constants.UNSET_RPC_TIMEOUT):
    """Run ``func(*args, **kwargs)`` on worker ``to``; a Future of its value. ``timeout``
    in seconds: -1 = the default, 0 = none."""
    agent = _current()
    dst = _resolve(agent, to)
    if not callable(func):
        raise TypeError(f"function should be callable, got {type(func).__name__}")
    return _call(agent, dst, func, args, kwargs, timeout, "rpc_async")


def _call(agent, dst, func, args, kwargs, timeout, kind, event=None, sync=False):
    """Send the request; its Future (``sync``: waited for at once by this thread). While a
    profile records on this thread the call is an event (``<kind>#<func>(me -> dst)``, or
    ``event``) holding the callee's ops too."""
    args = tuple(args) if args else ()
    kwargs = dict(kwargs) if kwargs else {}
    tensors, keep = [], ([] if dst.id in agent.lend_to else None)
    frames = _wire.dumps_call(func, args, kwargs, agent.same_host(dst.id), tensors, keep)
    if frames is not None:              # no RRefs, tensors at the top only: a plain pickle
        context_id = dist_autograd._current_id()
        autograd = (context_id, dist_autograd._on_send(context_id, tensors) if tensors else -1)
        plain = True
    else:
        keep = None if keep is None else []     # (arrays dumps_call may have lent)
        frames, autograd = _encode_call(agent, dst.id, (func, args, kwargs), keep)
        plain = False
    profiles = _profiling.recording()
    if not profiles:
        return agent.request(dst.id, frames, _timeout(agent, timeout), autograd, plain=plain,
                             sync=sync, keep=keep)
    name = event or f"{kind}#{_profiling.func_name(func)}({agent.info.name} -> {dst.name})"
    events = _profiling.start(name, profiles, agent.info.id)
    raw = agent.request(dst.id, frames, _timeout(agent, timeout), autograd,
                        profiled=event is None, plain=plain, sync=sync, keep=keep)
    return _profiling.follow(raw, events, dst.id, unwrap=event is None)


def _encode_call(agent, dst, call, keep=None):
    """The frames of request ``call`` to rank ``dst`` and its (context id, autograd message
    id): inside a distributed autograd context, tensors requiring grad get a send node.
    ``keep``: a list for the arrays lent to ``dst`` (see ``_wire.encode``)."""
    tensors = []
    frames = _wire.encode(call, agent.same_host(dst), tensors, keep)
    context_id = dist_autograd._current_id()
    return frames, (context_id, dist_autograd._on_send(context_id, tensors))


def rpc_sync(to, func, args=None, kwargs=None, timeout=constants.UNSET_RPC_TIMEOUT):
    """``rpc_async(...).wait()``: the value of ``func`` run on worker ``to``."""
    agent = _current()
    dst = _resolve(agent, to)
    if not callable(func):
        raise TypeError(f"function should be callable, got {type(func).__name__}")
    return _call(agent, dst, func, args, kwargs, timeout, "rpc_sync", sync=True).wait()


def remote(to, func, args=None, kwargs=None, timeout=constants.UNSET_RPC_TIMEOUT):
    """Run ``func`` on worker ``to`` and leave the value there: an RRef to it."""
    from ember.distributed.rpc import rref
    agent = _current()
    dst = _resolve(agent, to)
    if not callable(func):
        raise TypeError(f"function should be callable, got {type(func).__name__}")
    return rref._remote(agent, dst, func, tuple(args or ()), dict(kwargs or {}),
                        _timeout(agent, timeout))
