"""Indexing: ``Tensor.__getitem__`` and ``__setitem__``.

Basic indices (ints, slices, None, Ellipsis) make views through the ``_basic_index`` op;
``__setitem__`` writes through a view with ``copy_`` so autograd sees an in-place op on a
view (Note [view + in-place]).
"""
from __future__ import annotations

import numpy as np

from ember._ops.core import basic_index
from ember._ops.registry import public
from ember._tensor import Tensor


def _is_basic(item):
    return item is None or item is Ellipsis or isinstance(item, (int, slice)) and \
        not isinstance(item, bool)


def _normalize(index):
    """Index as a tuple; 0-dim integer tensors become ints."""
    if not isinstance(index, tuple):
        index = (index,)
    out = []
    for it in index:
        if isinstance(it, Tensor) and it.ndim == 0 and it.dtype.is_integer:
            it = int(it.item())
        elif isinstance(it, np.integer):
            it = int(it)
        elif isinstance(it, slice):
            it = slice(*(int(v.item()) if isinstance(v, Tensor) else v
                         for v in (it.start, it.stop, it.step)))
            if it.step is not None and it.step <= 0:
                raise ValueError("step must be greater than zero")
        out.append(it)
    return tuple(out)


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


@public("__getitem__", method=True, function=False)
def getitem(self, index):
    idx = _normalize(index)
    if all(_is_basic(i) for i in idx):
        _check_bounds(self, idx)
        return basic_index(self, idx)
    from ember._ops import advanced_indexing
    return advanced_indexing.getitem(self, idx)


@public("__setitem__", method=True, function=False)
def setitem(self, index, value):
    idx = _normalize(index)
    if all(_is_basic(i) for i in idx):
        _check_bounds(self, idx)
        target = basic_index(self, idx)
        if isinstance(value, Tensor):
            target.copy_(value)
        else:
            target.fill_(value)
        return
    from ember._ops import advanced_indexing
    advanced_indexing.setitem(self, idx, value)
