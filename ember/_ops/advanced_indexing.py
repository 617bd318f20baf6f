"""Advanced indexing: ``x[idx]`` / ``x[idx] = v`` with integer tensors, lists, bool masks,
mixed with ints, slices, None and Ellipsis.

torch's two steps: first the basic part (ints, slices, None, Ellipsis) makes a view through
``_basic_index`` (an int *selects*, removing its dim before the advanced indices are
placed; this is where torch differs from NumPy for ``x[0, :, [1, 2]]``); then the advanced
indices (one per remaining dim, ``:`` elsewhere) go to the ``index.Tensor`` record (a copy)
or, for assignment, to ``index_put_`` on that view, so autograd sees an in-place op on a
view (Note [view + in-place]). The advanced dims land where NumPy puts them: in place when
adjacent, first otherwise.
"""
from __future__ import annotations

import warnings

import numpy as np

from ember._dispatch import dispatch
from ember._ops.shape import index_op, index_put
from ember._tensor import Tensor

_SL = slice(None)


def _index_array(it):
    """An advanced index entry as a NumPy (integer or bool) array."""
    if isinstance(it, Tensor):
        arr = it._data
    elif isinstance(it, np.ndarray):
        arr = it
    elif isinstance(it, str):
        raise TypeError("new(): invalid data type 'str'")
    elif isinstance(it, (list, tuple)):
        if any(isinstance(v, str) for v in it):
            raise TypeError("new(): invalid data type 'str'")
        try:
            arr = np.asarray(it)
        except ValueError:
            raise IndexError("too many indices: nested sequences of different lengths") from None
        if arr.size == 0 and arr.dtype.kind == "f":
            arr = arr.astype(np.int64)
    else:
        raise IndexError(f"only integers, slices (`:`), ellipsis (`...`), None and long or byte "
                         f"Variables are valid indices (got {type(it).__name__})")
    if arr.dtype == np.uint8:
        from ember._runtime_flags import user_stacklevel
        warnings.warn("indexing with dtype torch.uint8 is now deprecated, please use a dtype "
                      "torch.bool instead.", UserWarning, stacklevel=user_stacklevel())
        arr = arr.astype(np.bool_)
    if arr.dtype != np.bool_ and arr.dtype != np.int64 and arr.dtype != np.int32:
        raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
    return arr


def _is_scalar_bool(it):
    return isinstance(it, (bool, np.bool_)) or isinstance(it, Tensor) and it.ndim == 0 and \
        it._data.dtype == np.bool_


def split_index(self, idx):
    """(basic index tuple or None, advanced index tuple for the basic view)."""
    entries = []
    consumed = 0
    n_ellipsis = 0
    for it in idx:
        if it is None or it is Ellipsis:
            n_ellipsis += it is Ellipsis
            entries.append(("basic", it))
        elif isinstance(it, slice) or isinstance(it, int) and not isinstance(it, bool):
            entries.append(("basic", it))
            consumed += 1
        elif _is_scalar_bool(it):
            entries.append(("bool", bool(it)))
        else:
            arr = _index_array(it)
            if arr.dtype == np.bool_ and arr.ndim == 0:
                entries.append(("bool", bool(arr)))
            elif arr.dtype == np.bool_:
                entries.append(("mask", arr))
                consumed += arr.ndim
            else:
                entries.append(("adv", arr))
                consumed += 1
    nd = self.ndim
    if consumed > nd:
        raise IndexError(f"too many indices for tensor of dimension {nd}")
    basic, adv = [], []
    trivial = True
    dim = 0
    for kind, it in entries:
        if kind == "basic":
            if it is Ellipsis:
                k = nd - consumed
                basic.append(Ellipsis)
                adv.extend([_SL] * k)
                dim += k
            elif it is None:
                basic.append(None)
                adv.append(_SL)
                trivial = False
            elif isinstance(it, slice):
                basic.append(it)
                adv.append(_SL)
                dim += 1
                if it != _SL:
                    trivial = False
            else:
                basic.append(it)
                dim += 1
                trivial = False
        elif kind == "bool":
            basic.append(None)
            adv.append(np.zeros(1 if it else 0, np.int64))
            trivial = False
        elif kind == "mask":
            for j in range(it.ndim):
                if it.shape[j] != self.shape[dim + j]:
                    raise IndexError(f"The shape of the mask {list(it.shape)} at index {j} does "
                                     f"not match the shape of the indexed tensor "
                                     f"{list(self.shape)} at index {dim + j}")
            basic.extend([_SL] * it.ndim)
            adv.append(it)
            dim += it.ndim
        else:
            basic.append(_SL)
            adv.append(it)
            dim += 1
    while adv and isinstance(adv[-1], slice):
        adv.pop()
    return (None if trivial else tuple(basic)), tuple(adv)


def _basic_view(self, basic):
    if basic is None:
        return self
    from ember._ops.indexing import basic_view
    return basic_view(self, basic)


def getitem(self, idx):
    basic, adv = split_index(self, idx)
    v = _basic_view(self, basic)
    if not adv:
        return v
    return dispatch(index_op, (v, adv), None)


def setitem(self, idx, value):
    basic, adv = split_index(self, idx)
    v = _basic_view(self, basic)
    if isinstance(value, Tensor):            # no cast: index_put_ wants equal dtypes, as torch
        from ember._ops.indexing import _strip_leading_ones
        value = _strip_leading_ones(value, 0)
    if not adv:
        from ember._ops.indexing import _assign
        _assign(v, value)
        return
    try:
        dispatch(index_put.inplace_variant, (v, adv, value, False), None)
    except RuntimeError as e:
        _raise_value_shape(v, adv, value, e)
        raise


def _raise_value_shape(v, adv, value, err):
    """torch's text for a value that does not broadcast to the indexing result (the in-place
    dispatch words it as a broadcast of the value against ``self``)."""
    if not isinstance(value, Tensor) or "must match the size of tensor b" not in str(err):
        return
    from ember._kernels.shape import norm_index
    idx = tuple(a._data if isinstance(a, Tensor) else a for a in adv)
    try:
        res = np.broadcast_to(np.zeros((), np.bool_), v.shape)[norm_index(v._data, idx)].shape
    except Exception:                                   # pragma: no cover - other errors
        return
    try:
        np.broadcast_shapes(tuple(value.shape), res)
    except ValueError:
        raise RuntimeError(f"shape mismatch: value tensor of shape {list(value.shape)} cannot "
                           f"be broadcast to indexing result of shape {list(res)}") from None
