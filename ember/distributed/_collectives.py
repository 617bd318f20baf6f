"""The collectives, point-to-point messages and object collectives, on MPI.

Each call checks its arguments, issues one nonblocking MPI operation on the group's
communicator (in program order, which is what keeps ranks matched) and returns a ``Work``;
``async_op=False`` waits on it at once. Results are written into the caller's tensors by
the work's finishing step (tensors that are not contiguous go through a contiguous copy).
``src``/``dst`` are global ranks, ``group_src``/``group_dst`` ranks within the group.
"""
from __future__ import annotations

import pickle

import numpy as np

from ember.autograd import profiler as _profiler
from ember.autograd.graph import bump_version
from ember.distributed import _mpi
from ember.distributed.distributed_c10d import ReduceOp, RedOpType, Work, _red_type, _resolve

__all__ = ["all_reduce", "all_reduce_coalesced", "reduce", "broadcast", "all_gather",
           "all_gather_into_tensor", "all_gather_single", "all_gather_coalesced", "gather",
           "scatter", "reduce_scatter", "reduce_scatter_tensor", "reduce_scatter_single",
           "all_to_all", "all_to_all_single",
           "barrier", "monitored_barrier", "send", "recv", "isend", "irecv", "P2POp",
           "batch_isend_irecv", "broadcast_object_list", "all_gather_object",
           "gather_object", "scatter_object_list", "send_object_list", "recv_object_list"]


# ---------------------------------------------------------------- helpers
def _tensor(t, name="tensor"):
    from ember._tensor import Tensor
    if not isinstance(t, Tensor):
        raise TypeError(f"Invalid function argument. Expected parameter `{name}` of type "
                        f"torch.Tensor\n             but got {type(t)} instead.")
    if t._data.dtype.names is not None or t.device.type != "cpu":
        raise RuntimeError(f"ember.distributed: {name} must be a dense CPU tensor, got "
                           f"{t.dtype} on {t.device}")
    return t


def _tensors(ts, name):
    if not isinstance(ts, (list, tuple)):
        raise TypeError(f"Invalid function argument. Expected parameter `{name}` of type "
                        f"List[torch.Tensor]\n             but got {type(ts)} instead.")
    return [_tensor(t, name) for t in ts]


def _shape(t):
    return tuple(t.shape)


def _check_like(op, tensors, like, what="tensor", exact_shape=False):
    """Every tensor of ``tensors`` has ``like``'s dtype (else ValueError, as torch) and its
    element count, or with ``exact_shape`` its shape (else RuntimeError naming the index)."""
    for i, t in enumerate(tensors):
        if t.dtype != like.dtype:
            raise ValueError(f"{op}: invalid usage of tensors with different dtypes: {what} "
                             f"{i} is {t.dtype}, expected {like.dtype}")
        if (t.shape != like.shape) if exact_shape else (t.numel() != like.numel()):
            raise RuntimeError(f"{op}: invalid {what} size at index {i} (expected "
                               f"{_shape(like)}, got {_shape(t)})")


def _per_rank(pg, op, tensors, name, like=None, exact_shape=False):
    """Check list argument ``name`` of ``op``: one tensor per rank of ``pg`` (RuntimeError
    otherwise) and, when ``like`` is given, each like it (see ``_check_like``)."""
    if len(tensors) != pg.size():
        where = f"ProcessGroup{pg.name().capitalize()}"
        if op == "all_gather":                  # the texts of gloo, the backend scripts name
            raise RuntimeError(f"{where}::allgather: invalid output tensor list at index 0 "
                               f"(expected length {pg.size()}, got {len(tensors)})")
        if op in ("gather", "scatter"):
            io = "output" if op == "gather" else "input"
            raise RuntimeError(f"{where}::{op}: Incorrect {io} list size {len(tensors)}. "
                               f"{io.capitalize()} list size should be {pg.size()}, same as "
                               f"size of the process group.")
        raise RuntimeError(f"{op}: {name} has {len(tensors)} tensors, expected one per rank "
                           f"of the group ({pg.size()})")
    if like is not None:
        _check_like(op, tensors, like, name, exact_shape)
    return tensors


def _root_list(pg, root, op, tensors, name, like, side):
    """The rooted list argument of gather (``side`` "destination") / scatter ("source"):
    checked with ``_per_rank`` on the root, which must be given one; elsewhere it must be
    absent and None is returned."""
    if pg.rank() != root:
        if tensors:
            raise ValueError(f"Argument ``{name}`` must NOT be specified on non-{side} "
                             f"ranks.")
        return None
    if tensors is None:
        raise ValueError(f"Argument ``{name}`` must be specified on {side} rank.")
    return _per_rank(pg, op, _tensors(tensors, name), name, like)


def _world_multiple(pg, op, whole, part, whole_name, part_name):
    """``whole`` holds ``world_size`` times ``part``'s elements, of ``part``'s dtype."""
    if whole.dtype != part.dtype:
        raise ValueError(f"{op}: invalid usage of tensors with different dtypes: "
                         f"{whole_name} is {whole.dtype}, {part_name} {part.dtype}")
    if whole.numel() != part.numel() * pg.size():
        raise RuntimeError(f"{op}: {whole_name} {_shape(whole)} must hold world_size="
                           f"{pg.size()} times the {part_name} {_shape(part)}")


def _unflatten_into(flat, tensors):
    """Copy consecutive pieces of the 1-d ``flat`` into ``tensors`` (each its own size)."""
    at = 0
    for t in tensors:
        n = t._data.size
        t._data[...] = flat[at:at + n].reshape(t._data.shape)
        at += n
        bump_version(t)


def _out(t):
    """(contiguous array to receive into, step copying it back into ``t``)."""
    a = t._data
    if a.flags.c_contiguous:
        return a, lambda: bump_version(t)
    tmp = np.ascontiguousarray(a)

    def back():
        t._data[...] = tmp
        bump_version(t)
    return tmp, back


def _in(t):
    return np.ascontiguousarray(t._data)


def _buf(arr, count=None):
    """mpi4py's buffer spec: NumPy array (as bytes for types MPI lacks), count, datatype."""
    dt = _mpi.datatype(arr.dtype)
    n = arr.size if count is None else count
    if arr.dtype in _mpi._NATIVE:
        return [arr, n, dt]
    return [arr.reshape(-1).view(np.uint8), n, dt]


def _vbuf(arr, counts):
    displs = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(int).tolist()
    spec = _buf(arr)
    return [spec[0], (list(map(int, counts)), displs), spec[2]]


def _group_rank(pg, rank, group_rank, what, op):
    if group_rank is not None:
        if rank is not None:
            raise ValueError(f"Can not specify both {what} and group_{what}")
        r = group_rank
    else:
        r = 0 if rank is None else rank
        if r in pg.ranks:
            r = pg.ranks.index(r)
        elif list(pg.ranks) != list(range(pg.size())):  # (the world's: the root check below)
            raise ValueError(f"Global rank {r} is not part of group {pg.group_name}")
    if not 0 <= r < pg.size():
        raise RuntimeError(f"ProcessGroup{pg.name().capitalize()}::{op}: invalid root rank: {r}")
    return r


def _run(pg, op, issue, finish, result, async_op, statuses=None):
    """Issue ``issue(comm) -> requests`` under the group's lock and wrap it in a Work."""
    from ember.distributed._errors import DistBackendError
    with pg.lock:
        if pg.broken is not None:
            raise DistBackendError(f"ember.distributed: {op} on group '{pg.group_name}' "
                                   f"cannot run: {pg.broken}")
        requests = issue(pg.comm)
    work = Work(pg, op, requests, finish, result, pg.timeout, statuses)
    if async_op:
        return work
    if _profiler._local.active:
        with _profiler.record_function(f"{pg.name()}:{op}"):
            work.wait()
    else:
        work.wait()
    return None


def _check_reduction(op, t, fn):
    kind = _red_type(op)
    dt = t._data.dtype
    if dt.kind == "c" and kind not in (RedOpType.SUM, RedOpType.AVG, RedOpType.PREMUL_SUM):
        raise ValueError(f"{fn} does not support {kind} on complex tensors")
    if kind in (RedOpType.BAND, RedOpType.BOR, RedOpType.BXOR) and dt.kind not in "iub":
        raise RuntimeError(f"Cannot use ReduceOp.{kind.name} with non-integral dtype")
    if kind == RedOpType.AVG and dt.kind in "iub":
        import ember
        ember.empty(0, dtype=t.dtype).div_(2)       # torch's casting error
    return kind


def _post_reduce(kind, op, t, n):
    """AVG divides the sum by the group size; PREMUL_SUM scaled the inputs already."""
    if kind == RedOpType.AVG:
        t._data[...] = t._data / n if t._data.dtype.kind == "c" else \
            (t._data / np.asarray(n, t._data.dtype)).astype(t._data.dtype)


def _premul(kind, op, t, arr):
    if kind == RedOpType.PREMUL_SUM:
        factor = getattr(op, "factor", None)
        if factor is None:
            raise ValueError("ReduceOp.PREMUL_SUM needs a factor: use "
                             "torch.distributed._make_nccl_premul_sum(factor)")
        f = factor.item() if hasattr(factor, "item") else factor
        np.multiply(arr, np.asarray(f).astype(arr.dtype), out=arr, casting="unsafe")


# ---------------------------------------------------------------- reductions
def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce ``tensor`` over the group, in place on every rank."""
    _tensor(tensor)
    pg = _resolve(group)
    if pg is None:
        return None
    kind = _check_reduction(op, tensor, "all_reduce")
    arr, back = _out(tensor)
    _premul(kind, op, tensor, arr)
    mpi_op = _mpi.reduce_op(kind.name, arr.dtype)
    MPI = _mpi.mpi()

    def finish():
        back()
        _post_reduce(kind, op, tensor, pg.size())
    return _run(pg, "all_reduce", lambda c: [c.Iallreduce(MPI.IN_PLACE, _buf(arr), mpi_op)],
                finish, [tensor], async_op)


def all_reduce_coalesced(tensors, op=ReduceOp.SUM, group=None, async_op=False):
    """``all_reduce`` of several tensors (of one dtype) in one message."""
    tensors = _tensors(tensors, "tensors")
    pg = _resolve(group)
    if pg is None or not tensors:
        return None
    kind = _check_reduction(op, tensors[0], "all_reduce_coalesced")
    flat = np.concatenate([t._data.reshape(-1) for t in tensors])
    _premul(kind, op, tensors[0], flat)
    mpi_op = _mpi.reduce_op(kind.name, flat.dtype)
    MPI = _mpi.mpi()

    def finish():
        _unflatten_into(flat, tensors)
        for t in tensors:
            _post_reduce(kind, op, t, pg.size())
    return _run(pg, "all_reduce_coalesced",
                lambda c: [c.Iallreduce(MPI.IN_PLACE, _buf(flat), mpi_op)], finish, tensors,
                async_op)


def reduce(tensor, dst=None, op=ReduceOp.SUM, group=None, async_op=False, group_dst=None):
    """Reduce ``tensor`` over the group into rank ``dst``'s tensor."""
    _tensor(tensor)
    pg = _resolve(group)
    if pg is None:
        return None
    root = _group_rank(pg, dst, group_dst, "dst", "reduce")
    kind = _check_reduction(op, tensor, "reduce")
    MPI = _mpi.mpi()
    mine = pg.rank() == root
    arr, back = _out(tensor) if mine else (_in(tensor).copy(), None)
    _premul(kind, op, tensor, arr)
    mpi_op = _mpi.reduce_op(kind.name, arr.dtype)

    def issue(c):
        if mine:
            return [c.Ireduce(MPI.IN_PLACE, _buf(arr), mpi_op, root)]
        return [c.Ireduce(_buf(arr), None, mpi_op, root)]

    def finish():
        if mine:
            back()
            _post_reduce(kind, op, tensor, pg.size())
    return _run(pg, "reduce", issue, finish, [tensor], async_op)


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=None, async_op=False):
    """``output`` on rank i = the reduction over ranks of their ``input_list[i]``."""
    _tensor(output, "output")
    inputs = _tensors(input_list, "input_list")
    pg = _resolve(group)
    if pg is None:
        return None
    _per_rank(pg, "reduce_scatter", inputs, "input_list", like=output, exact_shape=True)
    send = np.concatenate([t._data.reshape(-1) for t in inputs])
    return _reduce_scatter(pg, "reduce_scatter", op, output, send, async_op)


def _deprecated(old, new):
    """torch 2.13's FutureWarning for a collective renamed ``*_single``."""
    import warnings

    from ember._runtime_flags import user_stacklevel
    warnings.warn(f"`torch.distributed.{old}` is deprecated. Please use "
                  f"`torch.distributed.{new}` instead.", FutureWarning,
                  stacklevel=user_stacklevel())


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None, async_op=False):
    """``reduce_scatter_single`` under its older name (deprecated in torch 2.13)."""
    _deprecated("reduce_scatter_tensor", "reduce_scatter_single")
    return reduce_scatter_single(output, input, op, group, async_op)


def reduce_scatter_single(output, input, op=ReduceOp.SUM, group=None, async_op=False):
    """``output`` on rank i = the reduced i-th chunk of ``input`` (size × output's size)."""
    _tensor(output, "output")
    _tensor(input, "input")
    pg = _resolve(group)
    if pg is None:
        return None
    _world_multiple(pg, "reduce_scatter_tensor", input, output, "input", "output")
    return _reduce_scatter(pg, "reduce_scatter_tensor", op, output, _in(input).copy(),
                           async_op)


def _reduce_scatter(pg, name, op, output, send, async_op):
    kind = _check_reduction(op, output, name)
    _premul(kind, op, output, send)
    arr, back = _out(output)
    mpi_op = _mpi.reduce_op(kind.name, send.dtype)

    def finish():
        back()
        _post_reduce(kind, op, output, pg.size())
    return _run(pg, name, lambda c: [c.Ireduce_scatter_block(_buf(send, arr.size), _buf(arr),
                                                              mpi_op)],
                finish, [output], async_op)


# ---------------------------------------------------------------- data movement
def broadcast(tensor, src=None, group=None, async_op=False, group_src=None):
    """Copy rank ``src``'s tensor into every rank's ``tensor``."""
    _tensor(tensor)
    pg = _resolve(group)
    if pg is None:
        return None
    root = _group_rank(pg, src, group_src, "src", "broadcast")
    arr, back = _out(tensor)
    return _run(pg, "broadcast", lambda c: [c.Ibcast(_buf(arr), root)], back, [tensor],
                async_op)


def all_gather(tensor_list, tensor, group=None, async_op=False):
    """``tensor_list[i]`` = rank i's ``tensor``, on every rank."""
    outs = _tensors(tensor_list, "tensor_list")
    _tensor(tensor)
    pg = _resolve(group)
    if pg is None:
        return None
    _per_rank(pg, "all_gather", outs, "tensor_list", like=tensor)
    send = _in(tensor)
    recv = np.empty(send.size * pg.size(), send.dtype)
    return _run(pg, "all_gather", lambda c: [c.Iallgather(_buf(send), _buf(recv, send.size))],
                lambda: _unflatten_into(recv, outs), [outs], async_op)


def all_gather_coalesced(output_tensor_lists, input_tensor_list, group=None, async_op=False):
    """``all_gather`` of several tensors: ``output_tensor_lists[j][i]`` = rank i's j-th."""
    works = [all_gather(outs, t, group, async_op=True)
             for outs, t in zip(output_tensor_lists, _tensors(input_tensor_list,
                                                              "input_tensor_list"))]
    if async_op:
        return works[-1] if works else None
    for w in works:
        if w is not None:
            w.wait()
    return None


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
    """``all_gather_single`` under its older name (deprecated in torch 2.13)."""
    _deprecated("all_gather_into_tensor", "all_gather_single")
    return all_gather_single(output_tensor, input_tensor, group, async_op)


def all_gather_single(output_tensor, input_tensor, group=None, async_op=False):
    """``output_tensor`` (size × input's elements, concatenated or stacked) = every rank's
    input in rank order."""
    _tensor(output_tensor, "output_tensor")
    _tensor(input_tensor, "input_tensor")
    pg = _resolve(group)
    if pg is None:
        return None
    _world_multiple(pg, "all_gather_into_tensor", output_tensor, input_tensor,
                    "output_tensor", "input_tensor")
    send = _in(input_tensor)
    arr, back = _out(output_tensor)
    return _run(pg, "all_gather_into_tensor",
                lambda c: [c.Iallgather(_buf(send), _buf(arr, send.size))], back,
                [output_tensor], async_op)


def gather(tensor, gather_list=None, dst=None, group=None, async_op=False, group_dst=None):
    """Rank ``dst``'s ``gather_list[i]`` = rank i's ``tensor``."""
    _tensor(tensor)
    pg = _resolve(group)
    if pg is None:
        return None
    root = _group_rank(pg, dst, group_dst, "dst", "gather")
    outs = _root_list(pg, root, "gather", gather_list, "gather_list", tensor, "destination")
    mine = outs is not None
    send = _in(tensor)
    recv = np.empty(send.size * pg.size(), send.dtype) if mine else None
    return _run(pg, "gather",
                lambda c: [c.Igather(_buf(send), _buf(recv, send.size) if mine else None,
                                      root)],
                (lambda: _unflatten_into(recv, outs)) if mine else None,
                [outs] if mine else [], async_op)


def scatter(tensor, scatter_list=None, src=None, group=None, async_op=False, group_src=None):
    """Rank i's ``tensor`` = rank ``src``'s ``scatter_list[i]``."""
    _tensor(tensor)
    pg = _resolve(group)
    if pg is None:
        return None
    root = _group_rank(pg, src, group_src, "src", "scatter")
    ins = _root_list(pg, root, "scatter", scatter_list, "scatter_list", tensor, "source")
    mine = ins is not None
    send = np.concatenate([t._data.reshape(-1) for t in ins]) if mine else None
    arr, back = _out(tensor)
    return _run(pg, "scatter",
                lambda c: [c.Iscatter(_buf(send, arr.size) if mine else None, _buf(arr),
                                      root)], back, [tensor], async_op)


def all_to_all(output_tensor_list, input_tensor_list, group=None, async_op=False):
    """Rank i's ``output_tensor_list[j]`` = rank j's ``input_tensor_list[i]``."""
    outs = _tensors(output_tensor_list, "output_tensor_list")
    ins = _tensors(input_tensor_list, "input_tensor_list")
    pg = _resolve(group)
    if pg is None:
        return None
    _per_rank(pg, "all_to_all", outs, "output_tensor_list")
    _per_rank(pg, "all_to_all", ins, "input_tensor_list")
    dtype = ins[0]._data.dtype
    send = np.concatenate([t._data.reshape(-1) for t in ins])
    recv = np.empty(sum(t.numel() for t in outs), dtype)
    sc, rc = [t.numel() for t in ins], [t.numel() for t in outs]

    return _run(pg, "all_to_all",
                lambda c: [c.Ialltoallv(_vbuf(send, sc), _vbuf(recv, rc))],
                lambda: _unflatten_into(recv, outs), [outs],
                async_op)


def all_to_all_single(output, input, output_split_sizes=None, input_split_sizes=None,
                      group=None, async_op=False):
    """Split ``input`` along dim 0 (evenly, or by ``input_split_sizes``), send piece j to
    rank j, and concatenate what arrives into ``output``."""
    _tensor(output, "output")
    _tensor(input, "input")
    pg = _resolve(group)
    if pg is None:
        return None
    n = pg.size()

    def counts(t, splits, what):
        rows = t.shape[0] if t.dim() else 1
        row = t.numel() // rows if rows else 0
        if splits is None or len(splits) == 0:
            if rows % n:
                raise RuntimeError(f"all_to_all_single: {what} dim 0 ({rows}) is not "
                                 f"divisible by the group size {n}")
            return [rows // n * row] * n
        splits = [int(s) for s in splits]
        if len(splits) != n or sum(splits) != rows:
            raise RuntimeError(f"all_to_all_single: {what}_split_sizes {splits} must have "
                             f"{n} entries summing to dim 0 ({rows})")
        return [s * row for s in splits]
    sc = counts(input, input_split_sizes, "input")
    rc = counts(output, output_split_sizes, "output")
    send = _in(input)
    arr, back = _out(output)
    return _run(pg, "all_to_all_single",
                lambda c: [c.Ialltoallv(_vbuf(send, sc), _vbuf(arr, rc))], back, [output],
                async_op)


def barrier(group=None, async_op=False, device_ids=None, timeout=None):
    """Wait until every rank of the group reached the barrier."""
    pg = _resolve(group)
    if pg is None:
        return None
    work = _run(pg, "barrier", lambda c: [c.Ibarrier()], None, [], True)
    if async_op:
        return work
    work.wait(timeout)
    return None


def monitored_barrier(group=None, timeout=None, wait_all_ranks=False):
    """A barrier that names the ranks that did not arrive: rank 0 waits for a message from
    each (within ``timeout``), then releases them."""
    import time

    from ember.distributed.distributed_c10d import _seconds
    pg = _resolve(group)
    if pg is None:
        return None
    seconds = _seconds(timeout if timeout is not None else pg.timeout)
    tag = 0x7ffe
    token = np.zeros(1, np.uint8)
    if pg.rank() != 0:
        work = _run(pg, "monitored_barrier",
                    lambda c: [c.Isend(_buf(token), 0, tag), c.Irecv(_buf(token.copy()), 0,
                                                                      tag)],
                    None, [], True)
        work.wait(timeout if timeout is not None else pg.timeout)
        return None
    deadline = time.monotonic() + seconds
    late = []
    with pg.lock:
        for r in range(1, pg.size()):
            req = pg.comm.Irecv(_buf(np.zeros(1, np.uint8)), r, tag)
            while not req.Test():
                if time.monotonic() > deadline:
                    req.Cancel()
                    late.append(r)
                    break
            if late and not wait_all_ranks:
                break
        if late:
            from ember.distributed._errors import DistBackendError
            ms = int(seconds * 1000)
            who = (f"Ranks {', '.join(map(str, late))} failed" if wait_all_ranks else
                   f"Rank {late[0]} failed")
            raise DistBackendError(f"{who} to pass monitoredBarrier in {ms} ms")
        for r in range(1, pg.size()):
            pg.comm.Send(_buf(token), r, tag)
    return None


# ---------------------------------------------------------------- point to point
def _peer(pg, rank, group_rank, what, any_ok=False):
    if rank is None and group_rank is None:
        if any_ok:
            return _mpi.mpi().ANY_SOURCE
        raise ValueError(f"{what} must be given")
    r = _group_rank(pg, rank, group_rank, what, what)
    if r == pg.rank():
        what = {"dst": "destination", "src": "source"}.get(what, what)
        raise ValueError(f"Invalid {what} rank: {what} rank should not be the same as the "
                         f"rank of the current process.")
    return r


def isend(tensor, dst=None, group=None, tag=0, group_dst=None):
    """Send ``tensor`` to rank ``dst``; returns a Work."""
    _tensor(tensor)
    pg = _resolve(group)
    if pg is None:
        return None
    peer = _peer(pg, dst, group_dst, "dst")
    data = _in(tensor)
    return _run(pg, "send", lambda c: [c.Isend(_buf(data), peer, tag)], None, [tensor], True)


def irecv(tensor, src=None, group=None, tag=0, group_src=None):
    """Receive into ``tensor`` from rank ``src`` (any rank when None); returns a Work whose
    ``source_rank()`` says who sent."""
    _tensor(tensor)
    pg = _resolve(group)
    if pg is None:
        return None
    peer = _peer(pg, src, group_src, "src", any_ok=True)
    arr, back = _out(tensor)
    status = _mpi.mpi().Status()
    work = _run(pg, "recv", lambda c: [c.Irecv(_buf(arr), peer, tag)], back, [tensor], True,
                [status])
    ranks = pg.ranks
    work._to_global = lambda r: ranks[r] if r >= 0 else r
    return work


def send(tensor, dst=None, group=None, tag=0, group_dst=None):
    work = isend(tensor, dst, group, tag, group_dst)
    if work is not None:
        work.wait()


def recv(tensor, src=None, group=None, tag=0, group_src=None):
    """Receive into ``tensor``; returns the sender's global rank (-1 outside the group)."""
    work = irecv(tensor, src, group, tag, group_src)
    if work is None:
        return -1
    work.wait()
    return work._to_global(work._source)


class P2POp:
    """One send or receive for ``batch_isend_irecv``: ``P2POp(dist.isend, tensor, peer)``."""

    def __init__(self, op, tensor, peer=None, group=None, tag=0, group_peer=None):
        if op not in (isend, irecv):
            raise ValueError("Invalid ``op``. Expected ``op`` to be of type "
                             "``torch.distributed.isend`` or ``torch.distributed.irecv``.")
        self.op, self.tensor, self.peer = op, tensor, peer
        self.group, self.tag, self.group_peer = group, tag, group_peer


def batch_isend_irecv(p2p_op_list):
    """Start every send and receive of the list; returns their Works."""
    if not p2p_op_list or not all(isinstance(p, P2POp) for p in p2p_op_list):
        raise ValueError("Invalid ``p2p_op_list``. Each op is expected to to be of type "
                         "``torch.distributed.P2POp``.")
    return [p.op(p.tensor, p.peer, p.group, p.tag, p.group_peer) for p in p2p_op_list]


# ---------------------------------------------------------------- Python objects
def _pickled(obj):
    import ember
    data = np.frombuffer(pickle.dumps(obj), np.uint8).copy()
    return ember.from_numpy(data)


def _unpickled(t, n):
    return pickle.loads(t._data[:n].tobytes())


def _sizes(pg, size):
    import ember
    sizes = [ember.zeros(1, dtype=ember.int64) for _ in range(pg.size())]
    all_gather(sizes, ember.tensor([size]), pg)
    return [int(s.item()) for s in sizes]


def _padded_pickle(pg, obj):
    """(``obj`` pickled into a uint8 tensor padded to the group's longest pickle, every
    rank's pickle length, one empty receive buffer per rank of that padded length)."""
    import ember
    mine = _pickled(obj)
    sizes = _sizes(pg, mine.numel())
    longest = max(sizes)
    padded = ember.zeros(longest, dtype=ember.uint8)
    padded._data[:mine.numel()] = mine._data
    return padded, sizes, lambda: [ember.empty(longest, dtype=ember.uint8)
                                   for _ in range(pg.size())]


def _packed(objects):
    """(int64 tensor of pickle lengths, uint8 tensor of the pickles end to end)."""
    import ember
    payloads = [_pickled(o) for o in objects]
    sizes = ember.tensor([p.numel() for p in payloads], dtype=ember.int64)
    return sizes, ember.cat(payloads) if payloads else ember.empty(0, dtype=ember.uint8)


def _unpack_into(object_list, sizes, blob):
    """``object_list[i]`` = the i-th pickle of ``blob`` (lengths ``sizes``)."""
    at = 0
    for i, n in enumerate(sizes.tolist()):
        object_list[i] = pickle.loads(blob._data[at:at + n].tobytes())
        at += n


def broadcast_object_list(object_list, src=None, group=None, device=None, group_src=None):
    """Rank ``src``'s picklable objects replace every rank's ``object_list`` entries."""
    import ember
    pg = _resolve(group)
    if pg is None:
        return
    root = _group_rank(pg, src, group_src, "src", "broadcast")
    mine = pg.rank() == root
    if mine:
        sizes, blob = _packed(object_list)
    else:
        sizes = ember.zeros(len(object_list), dtype=ember.int64)
    broadcast(sizes, group=pg, group_src=root)
    if not mine:
        blob = ember.empty(int(sizes.sum().item()), dtype=ember.uint8)
    broadcast(blob, group=pg, group_src=root)
    if not mine:
        _unpack_into(object_list, sizes, blob)


def all_gather_object(object_list, obj, group=None):
    """``object_list[i]`` = rank i's ``obj``."""
    pg = _resolve(group)
    if pg is None:
        return
    padded, sizes, buffers = _padded_pickle(pg, obj)
    outs = buffers()
    all_gather(outs, padded, pg)
    for i, (t, n) in enumerate(zip(outs, sizes)):
        object_list[i] = _unpickled(t, n)


def gather_object(obj, object_gather_list=None, dst=None, group=None, group_dst=None):
    """Rank ``dst``'s ``object_gather_list[i]`` = rank i's ``obj``."""
    pg = _resolve(group)
    if pg is None:
        return
    root = _group_rank(pg, dst, group_dst, "dst", "gather")
    padded, sizes, buffers = _padded_pickle(pg, obj)
    is_root = pg.rank() == root
    outs = buffers() if is_root else None
    gather(padded, outs, group=pg, group_dst=root)
    if is_root:
        if object_gather_list is None:
            raise ValueError("Argument ``object_gather_list`` must be specified on "
                             "destination rank.")
        for i, (t, n) in enumerate(zip(outs, sizes)):
            object_gather_list[i] = _unpickled(t, n)


def scatter_object_list(scatter_object_output_list, scatter_object_input_list=None, src=None,
                        group=None, group_src=None):
    """``scatter_object_output_list[0]`` on rank i = rank ``src``'s input list entry i."""
    if not isinstance(scatter_object_output_list, list) or not scatter_object_output_list:
        raise ValueError("Expected argument scatter_object_output_list to be a list of size "
                         "at least 1.")
    pg = _resolve(group)
    if pg is None:
        return
    root = _group_rank(pg, src, group_src, "src", "scatter")
    objects = [None]
    if pg.rank() == root:
        objects = list(scatter_object_input_list)
        if len(objects) != pg.size():
            raise ValueError(f"scatter_object_list: the source needs {pg.size()} objects")
    everything = [objects]
    broadcast_object_list(everything, group=pg, group_src=root)
    scatter_object_output_list[0] = everything[0][pg.rank()]


def send_object_list(object_list, dst=None, group=None, device=None, group_dst=None,
                     use_batch=False):
    """Send picklable objects to rank ``dst`` (``recv_object_list`` receives them)."""
    pg = _resolve(group)
    sizes, blob = _packed(object_list)
    send(sizes, dst, pg, group_dst=group_dst)
    send(blob, dst, pg, group_dst=group_dst)


def recv_object_list(object_list, src=None, group=None, device=None, group_src=None,
                     use_batch=False):
    """Receive ``len(object_list)`` objects into ``object_list``; returns the sender."""
    import ember
    pg = _resolve(group)
    sizes = ember.zeros(len(object_list), dtype=ember.int64)
    sender = recv(sizes, src, pg, group_src=group_src)
    blob = ember.empty(int(sizes.sum().item()), dtype=ember.uint8)
    recv(blob, sender, pg)
    _unpack_into(object_list, sizes, blob)
    return sender

