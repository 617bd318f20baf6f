"""torch's refusals of writes whose source shares memory with the written tensor.

Elementwise in-place ops and ``out=`` refuse an operand that *partly* overlaps the written
tensor (the very same memory, laid out alike, is fine: ``x.add_(x)``); indexing writes
(``index_put_``, ``index_copy_``, ``scatter_``...) refuse any overlap of their source or
indices with it. As in torch, overlap is judged only between non-overlapping dense layouts
(a strided view is "too hard" to judge and passes), from the byte ranges they cover.
"""
from __future__ import annotations

import numpy as np

from ember._kernels.shape import address

_may_share = np.may_share_memory

OVERLAP_MSG = ("unsupported operation: some elements of the input tensor and the written-to "
               "tensor refer to a single memory location. Please clone() the tensor before "
               "performing the operation.")

# in-place ops that write without torch's check (fills, matrix products, masked writes)
_UNCHECKED = {"fill_", "zero_", "masked_fill_", "masked_scatter_", "index_fill_", "addbmm_",
              "addmm_", "addmv_", "addr_", "baddbmm_", "tril_", "triu_", "set_", "resize_",
              "resize_as_", "detach_", "requires_grad_", "share_memory_"}
# indexing writes: no overlap at all between the written tensor and source/indices
_NO_OVERLAP = {"index_put_", "index_copy_", "index_add_", "index_reduce_", "scatter_",
               "scatter_add_", "scatter_reduce_", "put_"}
# out= ops checked (beside the elementwise ones, named by their in-place variants)
_OUT_PARTIAL = {"cat", "concat", "concatenate"}
_OUT_NO_OVERLAP = {"index_select", "index_copy", "index_add", "scatter", "scatter_add",
                   "gather", "take"}


def _dense_range(a):
    """The [start, end) bytes under ``a`` if its layout is non-overlapping and dense (some
    order of its dims is contiguous), else None."""
    if type(a) is not np.ndarray or a.size == 0:
        return None
    dims = sorted((st, n) for n, st in zip(a.shape, a.strides) if n != 1)
    expect = a.itemsize
    for st, n in dims:
        if st != expect:
            return None
        expect *= n
    start = address(a)
    return start, start + a.size * a.itemsize


def status(a, b):
    """'no', 'full', 'partial' or 'too_hard' for NumPy arrays ``a`` and ``b``."""
    if a is b:
        return "full"
    if not _may_share(a, b):                        # disjoint bounds (the common case)
        return "no"
    ra, rb = _dense_range(a), _dense_range(b)
    if ra is None or rb is None:
        return "too_hard"
    if ra == rb:
        return "full" if a.strides == b.strides else "partial"
    return "partial" if ra[0] < rb[1] and rb[0] < ra[1] else "no"


def _operands(args):
    from ember._tensor import Tensor
    for a in args:
        if isinstance(a, Tensor):
            yield a._data
        elif isinstance(a, (list, tuple)):          # (indices may come as arrays)
            for x in a:
                if isinstance(x, Tensor):
                    yield x._data
                elif type(x) is np.ndarray:
                    yield x


def _check(dst, operands, refuse_full):
    for arr in operands:
        s = status(dst, arr)
        if s == "partial" or s == "full" and refuse_full:
            raise RuntimeError(OVERLAP_MSG)


def check_inplace(op, args):
    """Before in-place ``op`` writes into ``args[0]``: torch's overlap refusals."""
    name = op.public_name
    if name in _UNCHECKED or not args:
        return
    dst = getattr(args[0], "_data", None)
    if type(dst) is not np.ndarray:         # (a meta / sparse / list first argument)
        return
    _check(dst, _operands(args[1:]), name in _NO_OVERLAP)


def check_out(op, args, out):
    """Before ``op`` writes into ``out=``: torch's overlap refusals for elementwise ops,
    ``cat`` and the indexing ops."""
    from ember._tensor import Tensor
    name = op.public_name
    if not isinstance(out, Tensor) or type(out._data) is not np.ndarray:
        return
    if name in _OUT_NO_OVERLAP:
        _check(out._data, _operands(args), True)
    elif name in _OUT_PARTIAL or _elementwise(name):
        _check(out._data, _operands(args), False)


_ELEMENTWISE: set = set()


def _elementwise(name):
    """Does ``name`` have an in-place variant torch checks as elementwise?"""
    if not _ELEMENTWISE:
        from ember._ops.registry import OPS
        _ELEMENTWISE.update(o.public_name[:-1] for o in OPS.values() if o.is_inplace and
                            o.public_name not in _UNCHECKED and
                            o.public_name not in _NO_OVERLAP)
    return name in _ELEMENTWISE
