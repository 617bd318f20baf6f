"""Remote references: ``RRef`` and the reference counting of their values.

The owner of a value keeps it in ``_owned`` (rref id -> ``_Entry``) while some other
worker holds a user RRef to it; each user RRef is a *fork* with its own id. Protocol:

- ``remote()`` sends ``_remote_create(rref id, fork id, func, ...)``: the owner records
  the fork as a user, computes the value on a worker thread and answers once it exists
  (then the user is ``confirmed_by_owner``; a timeout of ``remote`` fails ``to_here``).
- Pickling an RRef into an RPC creates a new fork. An owner records it at once; a user
  tells the owner (``_add_fork``) and keeps its own RRef alive until the owner has
  answered, so the owner's count never drops to zero while a fork is on its way.
- A user RRef that is garbage collected sends ``_delete`` (one-way). A delete that
  overtakes its ``_add_fork`` is remembered (``early_deletes``) and cancels it.
- The owner drops the entry when it has no users and no early deletes; its own RRef
  objects hold the entry directly, so the value lives while they do.

Bookkeeping functions are ``_rpc_inline``: they run on the I/O thread in arrival order.
"""
from __future__ import annotations

import itertools
import threading

from ember.distributed import autograd as dist_autograd
from ember.distributed.rpc import _profiling, _wire, api, constants
from ember.distributed.rpc._agent import RemoteError
from ember.distributed.rpc.options import WorkerInfo
from ember.futures import Future

__all__ = ["RRef"]

_lock = threading.Lock()
_owned = {}            # rref id -> _Entry, while forks of it exist elsewhere
_pending_forks = {}    # fork id -> the user RRef it was forked from, until the owner knows
_local_ids = itertools.count()


class _Entry:
    __slots__ = ("future", "users", "early_deletes", "created")

    def __init__(self):
        self.future = Future()      # the value (or a RemoteError)
        self.users = set()
        self.early_deletes = set()
        self.created = False


def _inline(fn):
    fn._rpc_inline = True
    return fn


def _gid(i):
    return f"GloballyUniqueId(created_on={i[0]}, local_id={i[1]})"


def _new_id(agent):
    return (agent.info.id, next(_local_ids))


def _no_agent():
    if api._agent is None:
        raise RuntimeError("Current RPC agent is not set! Did you initialize the RPC framework "
                           "(e.g. by calling `rpc.init_rpc`)?")
    return api._agent


class RRef:
    """A reference to a value on some worker (its owner). ``RRef(value)`` owns ``value``
    here; ``rpc.remote`` returns user RRefs."""

    def __init__(self, value, type_hint=None):
        agent = _no_agent()
        entry = _Entry()
        entry.future.set_result(value)
        entry.created = True
        self._init(agent, agent.info, _new_id(agent), None, entry)

    def _init(self, agent, owner, rref_id, fork_id, entry):
        self._agent, self._owner, self._rref_id, self._fork_id = agent, owner, rref_id, fork_id
        self._entry = entry
        self._created = None         # remote(): the Future of the owner's acknowledgement

    @classmethod
    def _make(cls, agent, owner, rref_id, fork_id, entry=None):
        r = cls.__new__(cls)
        r._init(agent, owner, rref_id, fork_id, entry)
        return r

    def __class_getitem__(cls, item):
        return cls

    # ------------------------------------------------------------------ queries
    def is_owner(self):
        return self._fork_id is None

    def owner(self):
        return self._owner

    def owner_name(self):
        return self._owner.name

    def confirmed_by_owner(self):
        if self._created is None:
            return True
        return self._created.done() and self._created._error is None

    def local_value(self):
        """The value (owner only); waits while it is still being computed."""
        if not self.is_owner():
            raise RuntimeError(
                f"For UserRRef(rref_id={_gid(self._rref_id)}, fork_id={_gid(self._fork_id)}), "
                f"can't call localValue() on user {self._agent.info}. Call it on owner "
                f"{self._owner}")
        try:
            return self._entry.future.wait()
        except RemoteError as e:
            raise e.to_exception() from None

    def to_here(self, timeout=constants.UNSET_RPC_TIMEOUT):
        """A copy of the value, fetched from the owner (``timeout`` seconds)."""
        if self.is_owner():
            return self.local_value()
        if self._created is not None and self._created.done():
            self._created.wait()        # creation failed (e.g. timed out): raise that
        agent = self._agent
        try:
            value = api._call(agent, self._owner, _fetch, (self._rref_id,), None, timeout,
                              "to_here",
                              event=f"to_here#({agent.info.name})->({self._owner.name})",
                              sync=True).wait()
        except Exception as e:           # the value's own error: its remote type and text
            remote = getattr(e, "_remote_error", None)
            if remote is None:
                raise
            raise remote.to_exception() from None
        created = self._created      # the owner acknowledged before answering: take it in
        if created is not None and not created.done():
            try:
                created.wait()
            except Exception:           # noqa: BLE001 - the value came: creation worked
                pass
        return value

    # ------------------------------------------------------------------ proxies
    def rpc_sync(self, timeout=constants.UNSET_RPC_TIMEOUT):
        """``rref.rpc_sync().method(*args)`` runs ``method`` on the value at the owner."""
        return _Proxy(self, api.rpc_sync, timeout)

    def rpc_async(self, timeout=constants.UNSET_RPC_TIMEOUT):
        return _Proxy(self, api.rpc_async, timeout)

    def remote(self, timeout=constants.UNSET_RPC_TIMEOUT):
        return _Proxy(self, api.remote, timeout)

    def backward(self, dist_autograd_ctx_id=-1, retain_graph=False):
        """Backward from the (scalar tensor) value, run on its owner: with
        ``dist_autograd_ctx_id`` a distributed backward in that context, else a local one
        (into ``.grad``)."""
        if self.is_owner():
            return _backward(self, dist_autograd_ctx_id, retain_graph)
        return api.rpc_sync(self._owner, _backward,
                            args=(self, dist_autograd_ctx_id, retain_graph))

    def _get_future(self):
        return self._created

    # ------------------------------------------------------------------ lifetime
    def __del__(self):
        try:
            agent = self._agent
            if self._fork_id is not None and agent.running:
                agent.notify(self._owner.id, _wire.encode(
                    (_delete, (self._rref_id, self._fork_id), {})))
        except Exception:            # noqa: BLE001 - interpreter teardown
            pass

    def __reduce__(self):
        raise RuntimeError("RRef can only be pickled by the RPC framework: pass it as an "
                           "argument of rpc_sync/rpc_async/remote")

    def __repr__(self):
        if self.is_owner():
            return f"OwnerRRef({_gid(self._rref_id)})"
        return f"UserRRef(RRefId = {_gid(self._rref_id)}, ForkId = {_gid(self._fork_id)})"


class _Proxy:
    def __init__(self, rref, call, timeout):
        self._rref, self._call, self._timeout = rref, call, timeout

    def __getattr__(self, name):
        rref, call, timeout = self._rref, self._call, self._timeout

        def method(*args, **kwargs):
            return call(rref.owner(), _call_method, args=(rref, name, args, kwargs),
                        timeout=timeout)
        return method


def _backward(rref, context_id, retain_graph):
    from ember._tensor import Tensor
    value = rref.local_value()
    if not isinstance(value, Tensor):
        raise RuntimeError("RRef should contain a tensor for .backward()")
    if context_id == -1:
        value.backward(retain_graph=retain_graph)
    else:
        dist_autograd.backward(context_id, [value], retain_graph=retain_graph)


def _call_method(rref, name, args, kwargs):
    return getattr(rref.local_value(), name)(*args, **kwargs)


# ---------------------------------------------------------------------- owner's table
def _get_or_create(rref_id):
    entry = _owned.get(rref_id)
    if entry is None:
        entry = _owned[rref_id] = _Entry()
    return entry


def _add_user(rref_id, entry, fork_id):
    if fork_id in entry.early_deletes:
        entry.early_deletes.discard(fork_id)
    else:
        entry.users.add(fork_id)
    _maybe_free(rref_id, entry)


def _remove_user(rref_id, entry, fork_id):
    if fork_id in entry.users:
        entry.users.discard(fork_id)
    else:
        entry.early_deletes.add(fork_id)
    _maybe_free(rref_id, entry)


def _maybe_free(rref_id, entry):
    if entry.created and not entry.users and not entry.early_deletes:
        if _owned.get(rref_id) is entry:
            del _owned[rref_id]


def _produce(agent, entry, func, args, kwargs, context_id=-1):
    def settle(fut):
        try:
            entry.future.set_result(fut.wait())
        except RemoteError as e:
            entry.future.set_exception(e)
    with dist_autograd._active(context_id):
        result = agent.run(func, args, kwargs)
    result.add_done_callback(settle)


@_inline
def _remote_create(rref_id, fork_id, func, args, kwargs):
    agent = api._agent
    with _lock:
        entry = _get_or_create(rref_id)
        entry.created = True
        _add_user(rref_id, entry, fork_id)
    try:
        agent.submit(_produce, agent, entry, func, args, kwargs, dist_autograd._current_id())
    except Exception as e:              # noqa: BLE001 - to_here raises it
        entry.future.set_exception(RemoteError.capture(e, agent.info))
    ack = Future()               # answered once the value (or its error) exists
    entry.future.add_done_callback(lambda _: ack.set_result(None))
    return ack


@_inline
def _fetch(rref_id):
    with _lock:
        return _get_or_create(rref_id).future


@_inline
def _add_fork(rref_id, fork_id):
    with _lock:
        _add_user(rref_id, _get_or_create(rref_id), fork_id)


@_inline
def _delete(rref_id, fork_id):
    with _lock:
        _remove_user(rref_id, _get_or_create(rref_id), fork_id)


@_inline
def _owned_count():
    """How many values this worker keeps for users elsewhere (for tests)."""
    with _lock:
        return len(_owned)


@_inline
def _user_count():
    """How many user RRefs (forks) of this worker's values exist (for tests)."""
    with _lock:
        return sum(len(e.users) for e in _owned.values())


def _reset():
    with _lock:
        _owned.clear()
        _pending_forks.clear()


# ---------------------------------------------------------------------- forking (_wire)
def _fork_for_send(rref):
    """The pickled state of a new fork of ``rref``: (owner rank, owner name, rref id,
    fork id); registers the fork with the owner first."""
    agent = rref._agent
    fork_id = _new_id(agent)
    if rref.is_owner():
        with _lock:
            entry = _owned.setdefault(rref._rref_id, rref._entry)
            entry.created = True
            _add_user(rref._rref_id, entry, fork_id)
    else:
        _pending_forks[fork_id] = rref
        fut = agent.request(rref._owner.id, _wire.encode(
            (_add_fork, (rref._rref_id, fork_id), {})), 0)
        fut.add_done_callback(lambda _: _pending_forks.pop(fork_id, None))
    return rref._owner.id, rref._owner.name, rref._rref_id, fork_id


def _unfork(state):
    """The RRef for a received fork: the owner's own RRef when it comes home."""
    owner_id, owner_name, rref_id, fork_id = state
    agent = _no_agent()
    if owner_id == agent.info.id:
        with _lock:
            entry = _get_or_create(rref_id)
            _remove_user(rref_id, entry, fork_id)
        return RRef._make(agent, agent.info, rref_id, None, entry)
    return RRef._make(agent, WorkerInfo(owner_name, owner_id), rref_id, fork_id)


def _remote(agent, dst, func, args, kwargs, timeout):
    """``rpc.remote``: a user RRef whose value the owner ``dst`` computes (an owner RRef
    when ``dst`` is this worker)."""
    rref_id = _new_id(agent)
    if dst.id == agent.info.id:
        entry = _Entry()
        entry.created = True
        agent.submit(_produce, agent, entry, func, args, kwargs)
        return RRef._make(agent, agent.info, rref_id, None, entry)
    fork_id = _new_id(agent)
    rref = RRef._make(agent, dst, rref_id, fork_id)
    frames, autograd = api._encode_call(
        agent, dst.id, (_remote_create, (rref_id, fork_id, func, args, kwargs), {}))
    profiles = _profiling.recording()
    if not profiles:
        rref._created = agent.request(dst.id, frames, timeout, autograd)
        return rref
    events = _profiling.start(f"rpc_remote#{_profiling.func_name(func)}({agent.info.name} -> "
                              f"{dst.name})", profiles, agent.info.id)
    rref._created = _profiling.follow(agent.request(dst.id, frames, timeout, autograd),
                                      events, dst.id, unwrap=False)
    return rref
