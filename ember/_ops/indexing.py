"""Indexing: ``Tensor.__getitem__`` and ``__setitem__``.

Basic indices (ints, slices, None, Ellipsis) make views through the ``_basic_index`` op;
``__setitem__`` writes through a view with ``copy_`` / ``fill_`` so autograd sees an in-place
op on a view (Note [view + in-place]). Anything else (integer/bool tensors, lists, arrays)
goes to ``ember/_ops/advanced_indexing.py``.
"""
from __future__ import annotations

import warnings

import numpy as np

from ember._ops.core import basic_index, unsqueeze
from ember._ops.registry import public
from ember._runtime_flags import user_stacklevel
from ember._state import state
from ember._tensor import Tensor


def _is_basic(item):
    return item is None or item is Ellipsis or isinstance(item, (int, slice)) and \
        not isinstance(item, bool)


def _seq_as_tuple(index):
    """torch's legacy rule: a list holding tensors, sequences, slices, None or Ellipsis is
    read as a tuple of indices (with a deprecation warning)."""
    if type(index) is not list or len(index) >= 32:
        return False
    for it in index:
        if isinstance(it, (Tensor, list, tuple, slice, np.ndarray)) or it is None or \
                it is Ellipsis:
            warnings.warn("Using a non-tuple sequence for multidimensional indexing is deprecated "
                          "and will be changed in pytorch 2.9; use x[tuple(seq)] instead of "
                          "x[seq]. In pytorch 2.9 this will be interpreted as tensor index, "
                          "x[torch.tensor(seq)], which will result either in an error or a "
                          "different result", UserWarning, stacklevel=user_stacklevel())
            return True
    return False


def _normalize(index):
    """Index as a tuple; 0-dim integer tensors become ints, ranges lists."""
    if not isinstance(index, tuple):
        index = tuple(index) if _seq_as_tuple(index) else (index,)
    out = []
    seen_ellipsis = False
    for it in index:
        if it is Ellipsis:
            if seen_ellipsis:           # torch tolerates repeated ellipses: only the first counts
                continue
            seen_ellipsis = True
        if isinstance(it, Tensor) and it.ndim == 0 and it._data.dtype.kind in "iu" and \
                it._data.dtype != np.uint8:
            it = int(it.item())
        elif isinstance(it, np.integer):
            it = int(it)
        elif isinstance(it, range):         # a sequence of indices, as a list is
            it = list(it)
        elif isinstance(it, slice):
            it = slice(*(_slice_bound(v) for v in (it.start, it.stop, it.step)))
            if it.step is not None and it.step <= 0:
                raise ValueError("slice step cannot be zero" if it.step == 0 else
                                 "step must be greater than zero")
        out.append(it)
    return tuple(out)


def _slice_bound(v):
    if v is None or isinstance(v, int):
        return v
    if isinstance(v, Tensor):
        return int(v.item())
    try:
        return v.__index__()
    except AttributeError:
        raise TypeError("slice indices must be integers or None or have an __index__ "
                        "method") from None


def _check_bounds(self, index):
    nd = self.ndim
    n_real = sum(1 for i in index if i is not None and i is not Ellipsis)
    if n_real > nd:
        raise IndexError(f"too many indices for tensor of dimension {nd}")
    dim = 0
    for it in index:
        if it is Ellipsis:
            dim += nd - n_real
            continue
        if it is None:
            continue
        if isinstance(it, int):
            size = self.shape[dim]
            if not -size <= it < size:
                raise IndexError(f"index {it} is out of bounds for dimension {dim} with size "
                                 f"{size}")
        dim += 1


def _with_ellipsis(index):
    """Append ``...`` so that NumPy returns a 0-d view (not a scalar copy) for all-int
    indices."""
    for i in index:
        if i is Ellipsis:
            return index
    return index + (Ellipsis,)


def basic_view(self, idx, bare=False):
    """The view ``self[idx]`` for a basic index. ``None`` entries become ``unsqueeze`` so the
    new dims get torch's strides (NumPy gives them stride 0). ``bare``: the index was one
    slice, not a tuple (its node is a slice even when it keeps the whole dim)."""
    _check_bounds(self, idx)
    if bare:
        return basic_index(self, idx)
    if not any(i is None for i in idx):
        return _chained(basic_index(self, _with_ellipsis(idx)), self, idx)
    # torch's order: each entry in turn (so ``x[None, 0]`` is a select of an unsqueeze)
    n_real = sum(1 for i in idx if i is not None and i is not Ellipsis)
    v, pending, start = self, [], 0

    def flush(v, pending, start):
        if any(not _keeps_dim(it, v.shape[start + k]) for k, it in enumerate(pending)):
            sub = (slice(None),) * start + tuple(pending) + (Ellipsis,)
            v = _chained(basic_index(v, sub), v, sub)
        return v

    for it in idx:
        if it is None:
            v = flush(v, pending, start)
            start += sum(1 for p in pending if isinstance(p, slice))
            pending = []
            v = unsqueeze(v, start)
            start += 1
        elif it is Ellipsis:
            pending.extend([slice(None)] * (self.ndim - n_real))
        else:
            pending.append(it)
    return flush(v, pending, start)


def _chained(out, src, idx):
    """torch records one view node per index step: show ``out``'s fused node so."""
    if out._grad_fn is not None and len(idx) > 1:
        from ember.autograd.linear_layout import dress_index
        dress_index(out, src.shape, idx)
    return out


def _keeps_dim(item, size):
    """Is ``item`` a slice over the whole of a dim of ``size`` (torch skips it)?"""
    return isinstance(item, slice) and item.start in (None, 0) and item.step in (None, 1) \
        and (item.stop is None or item.stop >= size)


def _batched_index(self, index, *value):
    """With modes active (vmap), an index holding a batched tensor goes to
    ember/func/_vmap.py: the paths here read index data, which a batched wrapper does not
    hold. NotImplemented when no index entry is batched."""
    from ember.func._vmap import batched_index
    return batched_index(self, index, *value)


def _plain_slice(it):
    """A slice of int/None bounds and a positive (or no) step: no normalising needed."""
    a, b, c = it.start, it.stop, it.step
    return (a is None or type(a) is int) and (b is None or type(b) is int) and \
        (c is None or type(c) is int and c > 0)


def _plain_index(self, index):
    """``x[i]``, ``x[i, j]``, ``x[:, a:b]``, ``x[a:b]``: ints in bounds and plain slices,
    no more entries than dims: the view at once (basic_view's result, without its general
    normalising), or None."""
    shape = self._data.shape
    if type(index) is int:
        if shape and -shape[0] <= index < shape[0]:
            return basic_index(self, (index, Ellipsis))
        return None
    if type(index) is slice:
        return basic_index(self, (index,)) if shape and _plain_slice(index) else None
    if type(index) is not tuple or not 0 < len(index) <= len(shape):
        return None
    for d, it in enumerate(index):
        if type(it) is int:
            if not -shape[d] <= it < shape[d]:
                return None
        elif type(it) is not slice or not _plain_slice(it):
            return None
    return _chained(basic_index(self, index + (Ellipsis,)), self, index)


def _refuse_zero_dim(self, index):
    """torch's texts for a bare int or slice into a 0-d tensor (``loss[0]``)."""
    if self._data.ndim:
        return
    if type(index) is int:
        if index == 0:
            raise IndexError("invalid index of a 0-dim tensor. Use `tensor.item()` in Python or "
                             "`tensor.item<T>()` in C++ to convert a 0-dim tensor to a number")
        raise IndexError(f"index {index} is out of bounds for dimension 0 with size 0")
    if type(index) is slice:
        raise IndexError("slice() cannot be applied to a 0-dim tensor.")


@public("__getitem__", method=True, function=False)
def getitem(self, index):
    if state.modes:
        r = _batched_index(self, index)
        if r is not NotImplemented:
            return r
    elif (r := _plain_index(self, index)) is not None:
        return r
    _refuse_zero_dim(self, index)
    idx = _normalize(index)
    if all(_is_basic(i) for i in idx):
        return basic_view(self, idx, type(index) is slice)
    from ember._ops import advanced_indexing
    return advanced_indexing.getitem(self, idx)


def _strip_leading_ones(value, ndim):
    """torch drops leading size-1 dims of an assigned value (``x[0] = ones(1, 4)``)."""
    shape = tuple(value.shape)
    k = 0
    while k < len(shape) - ndim and shape[k] == 1:
        k += 1
    return value if k == 0 else value.reshape(shape[k:])


def _assign(target, value):
    """torch's ``copy_to``: a 0-d value (a number becomes one) is filled in with
    ``fill_(Tensor)`` (FillBackward3, whose value edge is None for a number), any other
    tensor copied; either refuses an expanded target."""
    if isinstance(value, Tensor):
        viewed = value.ndim > target.ndim
        if viewed:
            value = _strip_leading_ones(value, target.ndim)
        if value.ndim == 0:
            target.fill_(value)
            return
        shape = tuple(target.shape)
        if tuple(value.shape) != shape and not _broadcasts(tuple(value.shape), shape):
            value.expand(shape)                 # torch's error: the value is expanded
        if tuple(value.shape) != shape and value.requires_grad and state.grad_enabled:
            # torch's graph: the value viewed without its leading 1s, then expanded
            if not viewed:
                value = value.view(tuple(value.shape))
            value = value.expand(shape)
        target.copy_(value)
        return
    data = target._data
    if type(data) is np.ndarray and not data.flags.writeable:
        from ember._dispatch import has_internal_overlap, _OVERLAP_MSG
        if has_internal_overlap(data):
            raise RuntimeError(_OVERLAP_MSG)
    if target._requires_grad and state.grad_enabled and type(data) is np.ndarray:
        from ember._ops.core import scalar_for
        from ember._tensor import _make
        target.fill_(_make(scalar_for(value, data.dtype)))     # the node torch records
    else:
        target.fill_(value)


def _broadcasts(src, dst):
    n = len(src)
    return n <= len(dst) and all(a in (1, b) for a, b in zip(src, dst[len(dst) - n:]))


def _whole(self, idx):
    """Does the basic index ``idx`` keep every element (only ``...`` and full slices)?
    torch then writes into ``self`` itself, not into a view of it."""
    return all(i is Ellipsis or isinstance(i, slice) and _keeps_dim(i, n) for i, n in
               zip(_with_dims(idx, self.ndim), self.shape)) and \
        sum(1 for i in idx if i is not Ellipsis) <= self.ndim


def _with_dims(idx, ndim):
    """``idx`` with its ``...`` spread over the dims it stands for."""
    n_real = sum(1 for i in idx if i is not Ellipsis)
    out = []
    for i in idx:
        out.extend([slice(None)] * (ndim - n_real) if i is Ellipsis else [i])
    return out


# the C++ type torch names when a complex number can't be stored in a real tensor
_C_TYPE = {"float32": "float", "float64": "double", "float16": "double", "bfloat16": "double",
           "int64": "int64_t", "int32": "int", "int16": "int16_t", "int8": "int8_t",
           "uint8": "uint8_t", "uint16": "uint16_t", "uint32": "uint32_t", "uint64": "uint64_t"}


def _check_value(self, value):
    if isinstance(value, (Tensor, int, float, bool, complex, np.generic)):
        name = self.dtype.name
        if isinstance(value, complex) and (name in _C_TYPE or name == "bool"):
            if name == "bool":                              # any nonzero is True
                return value != 0
            if value.imag:
                raise RuntimeError(f"value cannot be converted to type "
                                   f"{_C_TYPE[self.dtype.name]} without overflow")
            return value.real
        return value.item() if isinstance(value, np.generic) else value
    t = type(value)
    name = t.__qualname__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"
    raise TypeError(f"can't assign a {name} to a {self.type()}")


@public("__setitem__", method=True, function=False)
def setitem(self, index, value):
    if state.modes and _batched_index(self, index, value) is not NotImplemented:
        return
    _refuse_zero_dim(self, index)
    idx = _normalize(index)
    value = _check_value(self, value)
    if all(_is_basic(i) for i in idx):
        if not any(i is None for i in idx) and _whole(self, idx):
            _assign(self, value)
            return
        _assign(basic_view(self, idx, type(index) is slice), value)
        return
    from ember._ops import advanced_indexing
    advanced_indexing.setitem(self, idx, value)
