"""Process groups: initialization, groups and their ranks, ``ReduceOp``, ``Work``.

A ``ProcessGroup`` is an MPI intracommunicator (``ember/distributed/_mpi.py``) plus the
global ranks it spans and its timeout. Backend "gloo" (what CPU scripts ask for) and
"mpi" are both served by the MPI engine; "nccl" needs a GPU backend ember does not have.
The collectives live in ``_collectives.py`` and are re-exported here, where torch has them.
"""
from __future__ import annotations

import enum
import os
import threading
import time
from datetime import timedelta

from ember.distributed import _mpi
from ember.distributed._errors import DistBackendError

__all__ = ["Backend", "ReduceOp", "reduce_op", "Work", "ProcessGroup", "GroupMember", "group",
           "default_pg_timeout", "init_process_group", "destroy_process_group",
           "is_initialized", "is_available", "is_mpi_available", "is_gloo_available",
           "is_nccl_available", "is_ucc_available", "is_xccl_available",
           "is_backend_available", "is_torchelastic_launched", "get_rank", "get_world_size",
           "get_backend", "new_group", "new_subgroups", "new_subgroups_by_enumeration",
           "get_process_group_ranks", "get_global_rank", "get_group_rank", "get_pg_count",
           "get_node_local_rank"]

default_pg_timeout = timedelta(minutes=30)


class Backend(str):
    """A backend name: ``Backend("GLOO") == "gloo"``."""
    UNDEFINED, GLOO, NCCL, UCC, MPI, XCCL = "undefined", "gloo", "nccl", "ucc", "mpi", "xccl"
    backend_list = ["undefined", "gloo", "nccl", "ucc", "mpi", "xccl"]

    def __new__(cls, name):
        # torch 2.13 takes any name (third-party backends register theirs), lower-cased;
        # init_process_group refuses one it does not know
        if not isinstance(name, str):
            raise ValueError("Backend constructor parameter must be string-ish")
        return str.__new__(cls, name.lower())


class RedOpType(enum.IntEnum):
    SUM, AVG, PRODUCT, MIN, MAX, BAND, BOR, BXOR, PREMUL_SUM = range(9)

    def __repr__(self):
        return f"<RedOpType.{self.name}: {self.value}>"

    def __str__(self):
        return f"RedOpType.{self.name}"


class ReduceOp:
    """A reduction: ``ReduceOp.SUM`` ... (``RedOpType`` members), or ``ReduceOp(op)``;
    ``_make_nccl_premul_sum(factor)`` gives a PREMUL_SUM scaled by ``factor``."""
    RedOpType = RedOpType

    def __init__(self, op):
        if not isinstance(op, (RedOpType, ReduceOp)):
            raise TypeError(f"ReduceOp() takes a ReduceOp.RedOpType, got {type(op).__name__}")
        self.op = op.op if isinstance(op, ReduceOp) else op
        self.factor = getattr(op, "factor", None)

    def __eq__(self, other):
        return int(_red_type(self)) == int(_red_type(other))

    def __hash__(self):
        return hash(int(self.op))

    def __repr__(self):
        return f"<ReduceOp {self.op.name}>"


for _m in RedOpType:
    setattr(ReduceOp, _m.name, _m)


class reduce_op:
    """Deprecated alias of ReduceOp's members (``reduce_op.SUM``)."""
    SUM, PRODUCT, MIN, MAX = RedOpType.SUM, RedOpType.PRODUCT, RedOpType.MIN, RedOpType.MAX


def _make_nccl_premul_sum(factor):
    op = ReduceOp(RedOpType.PREMUL_SUM)
    op.factor = factor
    return op


def _red_type(op):
    if isinstance(op, ReduceOp):
        return op.op
    if isinstance(op, RedOpType):
        return op
    raise TypeError(f"op must be a torch.distributed.ReduceOp, got {op!r}")


# ---------------------------------------------------------------- process groups
class ProcessGroup:
    """A set of processes that run collectives together: ``rank()``, ``size()``, the
    global ranks it spans (``ranks``), its timeout and its communicator."""

    def __init__(self, comm, ranks, backend, timeout, name, store=None):
        self.comm = comm
        self.ranks = list(ranks)
        self.backend = backend
        self.timeout = timeout
        self.group_name = name
        self.group_desc = name
        self.store = store
        self.lock = threading.RLock()
        self.broken = None              # why the group can no longer be used
        self._p2p_tags = {}

    def rank(self):
        return self.comm.Get_rank()

    def size(self):
        return self.comm.Get_size()

    def name(self):
        return self.backend if self.backend in Backend.backend_list else "gloo"

    def get_group_store(self):
        return self.store

    def set_timeout(self, timeout):
        self.timeout = timeout

    def abort(self):
        self.broken = "the process group was aborted"

    shutdown = abort

    def describe(self, op, timeout):
        secs = timeout.total_seconds() if isinstance(timeout, timedelta) else float(timeout)
        return (f"ember.distributed ({self.name()} over MPI): {op} on rank {self.rank()} of "
                f"group '{self.group_name}' (size {self.size()}) timed out after "
                f"{secs * 1000:.0f} ms: a peer did not take part (it exited, hung, or "
                f"called a different collective)")

    def __repr__(self):
        return f"<ember.distributed.ProcessGroup {self.group_name!r} ranks={self.ranks}>"


class _GroupMember:
    """``GroupMember.WORLD`` (the default group once initialized) and the marker a process
    outside a group gets from ``new_group``."""
    NON_GROUP_MEMBER = -100

    @property
    def WORLD(self):
        return _world.default


class _World:
    def __init__(self):
        self.default = None
        self.groups = {}                # ProcessGroup -> global ranks
        self.generation = 0
        self.count = 0


_world = _World()
GroupMember = _GroupMember()
group = GroupMember


def _seconds(timeout):
    if timeout is None:
        return default_pg_timeout.total_seconds()
    if isinstance(timeout, timedelta):
        return timeout.total_seconds()
    return float(timeout)


def _default():
    if _world.default is None:
        raise ValueError("Default process group has not been initialized, please make sure "
                         "to call init_process_group.")
    return _world.default


def _resolve(grp):
    """The ProcessGroup a call means (``None`` is the default group)."""
    if grp is None or grp is GroupMember.WORLD:
        return _default()
    if grp == GroupMember.NON_GROUP_MEMBER:
        return None
    if not isinstance(grp, ProcessGroup):
        raise ValueError(f"Group {grp} is not registered, please create group with "
                         f"torch.distributed.new_group API")
    if grp.comm is None:
        raise ValueError("The given group has been destroyed (destroy_process_group)")
    return grp


def init_process_group(backend=None, init_method=None, timeout=None, world_size=-1, rank=-1,
                       store=None, group_name="", pg_options=None, device_id=None, _ranks=None):
    """Join this process to the default group: ``init_method`` ``env://`` (the default),
    ``tcp://host:port`` or ``file:///path``, or an explicit ``store`` with ``rank`` and
    ``world_size``. All processes must call it; it returns once the communicator spans
    them all (or raises after ``timeout``)."""
    if _world.default is not None:
        raise ValueError("trying to initialize the default process group twice!")
    name = _backend_name(backend)
    if store is not None and init_method is not None:
        raise AssertionError("Cannot specify both init_method and store.")
    seconds = _seconds(timeout)
    if store is None and init_method is None and _mpi.launched_by_mpiexec() and \
            "RANK" not in os.environ:       # started by mpiexec: MPI already knows the ranks
        comm = _mpi.mpi().COMM_WORLD.Dup()
        _set_default(ProcessGroup(comm, range(comm.Get_size()), name,
                                  timedelta(seconds=seconds), group_name or "0"))
        return
    if store is None:
        from ember.distributed.rendezvous import rendezvous
        store, rank, world_size = next(rendezvous(init_method or "env://", rank, world_size,
                                                  timeout=timedelta(seconds=seconds)))
        store.set_timeout(timedelta(seconds=seconds))
    else:
        if world_size <= 0:
            raise AssertionError("world_size must be positive if using store")
        if rank < 0:
            raise AssertionError("rank must be non-negative if using store")
    from ember.distributed.store import PrefixStore
    deadline = time.monotonic() + seconds
    comm = _mpi.join_world(PrefixStore(f"ember_mpi/{_world.generation}", store), rank,
                           world_size, deadline)
    _world.generation += 1
    _set_default(ProcessGroup(comm, range(world_size), name, timedelta(seconds=seconds),
                              group_name or "0", PrefixStore("default_pg", store)))


def _set_default(pg):
    pg.comm.Set_errhandler(_mpi.mpi().ERRORS_RETURN)
    _world.default = pg
    _world.groups[pg] = pg.ranks
    _world.count += 1


def _backend_name(backend):
    if backend is None:
        return "gloo"
    value = Backend(backend)
    if "nccl" in value and "gloo" not in value or value in ("ucc", "xccl"):
        raise RuntimeError(f"ember.distributed: backend '{value}' needs a GPU communication "
                           f"library; ember runs on the CPU: use 'gloo' or 'mpi' (both are "
                           f"served by ember's MPI engine)")
    if ":" in value:            # "cpu:gloo,cuda:nccl" -> the CPU entry
        value = dict(p.split(":") for p in value.split(",")).get("cpu", "gloo")
    if value not in Backend.backend_list or value == "undefined":
        raise AssertionError(f"Unknown backend type {value}")
    return Backend(value)


def destroy_process_group(group=None):
    """Free ``group`` (default: every group, leaving the process uninitialized)."""
    if group is None or group is GroupMember.WORLD:
        if _world.default is None:
            raise AssertionError("Process group cannot be None")
        for pg in list(_world.groups):
            _free(pg)
        _world.groups.clear()
        _world.default = None
        return
    if group == GroupMember.NON_GROUP_MEMBER:
        return
    _free(group)
    _world.groups.pop(group, None)


def _free(pg):
    comm, pg.comm = pg.comm, None
    if comm is not None and pg.broken is None:
        comm.Free()


def is_initialized():
    return _world.default is not None


def is_available():
    return True


def is_mpi_available():
    return _mpi.available()


is_gloo_available = is_mpi_available


def is_nccl_available():
    return False


def is_ucc_available():
    return False


def is_xccl_available():
    return False


def is_backend_available(backend):
    return Backend(backend) in ("gloo", "mpi") and _mpi.available()


def is_torchelastic_launched():
    return os.getenv("TORCHELASTIC_RUN_ID") is not None


def get_node_local_rank(fallback_rank=None):
    if "LOCAL_RANK" in os.environ:
        return int(os.environ["LOCAL_RANK"])
    if fallback_rank is not None:
        return int(fallback_rank)
    raise RuntimeError("LOCAL_RANK is not in the environment. Consider passing fallback_rank "
                       "to allow `get_node_local_rank` to work, assuming you are not running "
                       "in a multi-device context and want the code to run locally instead.")


def get_rank(group=None):
    """This process's rank in ``group`` (-1 outside it)."""
    pg = _resolve(group)
    return -1 if pg is None else pg.rank()


def get_world_size(group=None):
    pg = _resolve(group)
    return -1 if pg is None else pg.size()


def get_backend(group=None):
    pg = _resolve(group)
    if pg is None:
        raise ValueError("Invalid process group specified")
    return pg.backend


def get_pg_count():
    return _world.count


def get_process_group_ranks(group):
    pg = _resolve(group)
    return list(pg.ranks)


def get_global_rank(group, group_rank):
    pg = _resolve(group)
    if not 0 <= group_rank < len(pg.ranks):
        raise ValueError(f"Group rank {group_rank} is not part of group {pg.group_name}")
    return pg.ranks[group_rank]


def get_group_rank(group, global_rank):
    pg = _resolve(group)
    if global_rank not in pg.ranks:
        raise ValueError(f"Global rank {global_rank} is not part of group {pg.group_name}")
    return pg.ranks.index(global_rank)


def new_group(ranks=None, timeout=None, backend=None, pg_options=None,
              use_local_synchronization=False, group_desc=None, device_id=None,
              sort_ranks=True):
    """A group over the global ``ranks`` (default: all). Every process of the default
    group calls it (or, with ``use_local_synchronization``, the members only); a process
    outside ``ranks`` gets ``GroupMember.NON_GROUP_MEMBER``."""
    world = _default()
    ranks = list(range(world.size())) if ranks is None else list(ranks)
    if sort_ranks:
        ranks = sorted(ranks)
    if len(ranks) > world.size():
        raise ValueError("the new group's world size should be less or equal to the world "
                         "size set by init_process_group")
    for r in ranks:
        if not 0 <= r < world.size():
            raise ValueError(f"Rank {r} is out of range. Valid ranks are 0 to "
                             f"{world.size() - 1} (world_size={world.size()})")
    if len(set(ranks)) != len(ranks):
        raise ValueError(f"new_group: duplicate ranks in {ranks}")
    me = world.rank()
    _world.count += 1
    name = str(_world.count - 1)
    if me not in ranks:             # MPI_Comm_create_group involves the members only
        return GroupMember.NON_GROUP_MEMBER
    MPI = _mpi.mpi()
    members = world.comm.Get_group().Incl(ranks)
    with world.lock:
        comm = world.comm.Create_group(members, tag=_world.count % 32768)
    members.Free()
    comm.Set_errhandler(MPI.ERRORS_RETURN)
    pg = ProcessGroup(comm, ranks, _backend_name(backend) if backend else world.backend,
                      timedelta(seconds=_seconds(timeout if timeout is not None
                                                 else world.timeout)),
                      group_desc or name, world.store)
    _world.groups[pg] = ranks
    return pg


def new_subgroups(group_size=None, group=None, timeout=None, backend=None, pg_options=None,
                  group_desc=None):
    """Split the world into consecutive groups of ``group_size``; returns (my group,
    all groups)."""
    world = _default()
    n = world.size()
    group_size = group_size or 1
    if group_size <= 0 or n % group_size:
        raise ValueError(f"The world size ({n}) must be divisible by group_size={group_size}")
    ranks = [list(range(i, i + group_size)) for i in range(0, n, group_size)]
    return new_subgroups_by_enumeration(ranks, timeout, backend, pg_options, group_desc)


def new_subgroups_by_enumeration(ranks_per_subgroup_list, timeout=None, backend=None,
                                 pg_options=None, group_desc=None):
    me = get_rank()
    mine, groups = None, []
    for ranks in ranks_per_subgroup_list:
        g = new_group(ranks, timeout=timeout, backend=backend, use_local_synchronization=True) \
            if me in ranks else GroupMember.NON_GROUP_MEMBER
        groups.append(g)
        if me in ranks:
            mine = g
    return mine, groups


# ---------------------------------------------------------------- asynchronous work
class Work:
    """A collective in flight: ``wait(timeout)`` polls its MPI requests against the
    deadline, then runs the finishing step (copying results into the caller's tensors);
    ``get_future()`` gives a Future completed by the same wait."""

    def __init__(self, pg, op, requests, finish, result, timeout, statuses=None):
        self._pg, self._op = pg, op
        self._requests = requests
        self._statuses = statuses
        self._finish = finish
        self._result = result
        self._timeout = timeout
        self._started = time.monotonic()
        self._done = False
        self._error = None
        self._future = None
        self._source = -1

    def _progress(self, timeout=None):
        if self._done:
            return
        seconds = _seconds(timeout) if timeout is not None else _seconds(self._timeout)
        deadline = (time.monotonic() if timeout is not None else self._started) + seconds
        pg = self._pg
        try:
            if pg.broken is not None:
                raise DistBackendError(f"ember.distributed: {self._op} on group "
                                       f"'{pg.group_name}' cannot run: {pg.broken}")
            for i, req in enumerate(self._requests):
                status = self._statuses[i] if self._statuses else None
                try:
                    _mpi.wait(req, deadline, lambda: pg.describe(self._op, seconds),
                              status)
                except DistBackendError:
                    pg.broken = f"an earlier {self._op} timed out"
                    raise
                except _mpi.mpi().Exception as e:
                    pg.broken = f"{self._op} failed: {e.Get_error_string()}"
                    raise DistBackendError(f"ember.distributed: {self._op} on rank "
                                           f"{pg.rank()} failed (a peer exited?): "
                                           f"{e.Get_error_string()}") from None
                if status is not None:
                    self._source = status.Get_source()
            if self._finish is not None:
                self._finish()
        except BaseException as e:
            self._done, self._error = True, e
            if self._future is not None and not self._future.done():
                self._future.set_exception(e)
            raise
        self._done = True
        if self._future is not None and not self._future.done():
            self._future.set_result(self._result)

    def wait(self, timeout=None):
        if self._error is not None:
            raise self._error
        with self._pg.lock:
            self._progress(timeout)
        return True

    def is_completed(self):
        if not self._done and self._error is None:
            with self._pg.lock:
                if all(r.Test() for r in self._requests):
                    self._progress()
        return self._done

    def is_success(self):
        return self._done and self._error is None

    def exception(self):
        return self._error

    def result(self):
        self.wait()
        return self._result

    def source_rank(self):
        self.wait()
        return self._source

    def synchronize(self):
        pass

    def get_future(self):
        """A Future of this work's output tensors, completed when anyone waits on it (or on
        the work)."""
        if self._future is None:
            from ember.futures import Future
            fut = self._future = Future()
            fut._driver = self.wait
            if self._done and self._error is None:
                fut.set_result(self._result)
        return self._future

    def __repr__(self):
        return f"<ember.distributed.Work {self._op} {'done' if self._done else 'pending'}>"


from ember.distributed._collectives import *  # noqa: E402,F401,F403
from ember.distributed._collectives import __all__ as _collectives_all  # noqa: E402

__all__ += _collectives_all
