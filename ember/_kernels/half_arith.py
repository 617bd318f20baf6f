"""float16 / bfloat16 ``add``, ``sub``, ``mul`` and ``div`` rounded as torch's CPU kernels
round them (Note [half scalars]). Imports only NumPy and the layout helpers.

Note [half scalars]: torch computes half arithmetic in float32 ("opmath") and rounds the
result once, but its operands reach that float32 in different ways (found by experiment
against torch 2.13, bit for bit on thousands of values):
- ``mul``/``div`` by a Python number, or by a 0-d tensor given second (``x * 0.1``,
  ``x / torch.tensor(3.)``, ``0.1 * x``): the number enters unrounded, as float32. A 0-d
  tensor given first (``torch.tensor(.1) * x``) is cast to the half dtype first.
- ``add``/``sub`` with a number or 0-d tensor: the number is rounded to the half dtype first.
- ``add``/``sub`` with ``alpha`` != 1: alpha is rounded to the half dtype; torch's vector
  loop computes ``a + alpha * b`` in float32, but its scalar loop (the elements after the
  last whole block of 32 in each inner loop, or every element where an operand's inner
  stride is neither contiguous nor 0) rounds ``alpha * b`` to the half dtype before adding.
  The inner loop runs over the dimensions in memory order, coalesced where every operand is
  contiguous across them; from 32768 elements torch splits the loop over its threads (equal
  chunks), each chunk with its own tail.
- ``s / x`` is ``x.reciprocal() * s`` (Tensor.__rtruediv__), so it follows ``mul``.
"""
from __future__ import annotations

import math

import numpy as np

from ember._kernels.layout import stride_order

GRAIN = 32768          # torch's TensorIterator splits loops over threads from here
BLOCK = 32             # torch's half vector loop: two 16-lane vectors per step
_F32 = np.float32


def is_half(d):
    return d.itemsize == 2 and d.kind in "fV" and d.name in ("float16", "bfloat16")


def _number(b):
    return isinstance(b, (int, float, np.integer, np.floating)) and \
        not isinstance(b, (bool, np.bool_))


def half_operands(a, b):
    """The half dtype when ``a`` is a half array and ``b`` an array of its dtype or a real
    number (Note [half scalars]); else None."""
    if type(a) is not np.ndarray or not is_half(a.dtype):
        return None
    if type(b) is np.ndarray:
        return a.dtype if b.dtype == a.dtype else None
    return a.dtype if _number(b) else None


def _up(x):
    return x.astype(_F32) if type(x) is np.ndarray else x


def vector_mask(shape, operands, nthreads):
    """Where torch's vector loop computes an elementwise result of ``shape`` from the array
    ``operands`` (broadcastable to it): a bool array, or None when it computes all of it
    (Note [half scalars])."""
    n = math.prod(shape)
    if n == 0 or not operands:
        return None
    views = [np.broadcast_to(x, shape) for x in operands]
    order = stride_order(shape, views)
    dims = [d for d in order if shape[d] != 1]
    if not dims:
        return None
    sizes = [shape[d] for d in dims]
    strides = [[v.strides[d] for d in dims] for v in views]
    item = views[0].itemsize
    inner, j = sizes[-1], len(dims) - 1
    while j > 0 and all(st[j - 1] == st[j] * sizes[j] for st in strides):
        j -= 1
        inner *= sizes[j]
    if not all(st[-1] in (0, item) for st in strides):
        return np.zeros(shape, bool)                   # the scalar loop throughout
    chunk = n
    if n >= GRAIN and nthreads > 1:
        chunk = -(-n // min(nthreads, -(-n // GRAIN)))
    if inner == n and chunk == n:                      # one loop: only the end is a tail
        if n % BLOCK == 0:
            return None
        flat = np.arange(n) < n - n % BLOCK
    else:
        idx = np.arange(n)
        row = idx - idx % inner
        part = idx - idx % chunk
        start = np.maximum(row, part)
        end = np.minimum(np.minimum(row + inner, part + chunk), n)
        length = end - start
        flat = idx - start < length - length % BLOCK
    # back to ``shape``: flat runs in memory order (size-1 dimensions change nothing)
    return flat.reshape([shape[d] for d in order]).transpose(np.argsort(order))


def add(a, b, alpha=1, negate=False, nthreads=None):
    """``a + alpha * b`` (``a - alpha * b`` when ``negate``) for a half array ``a`` and ``b``
    a half array or a number, rounded as torch's (Note [half scalars])."""
    low = a.dtype
    af = _up(a)
    bf = _up(b) if type(b) is np.ndarray else _F32(np.array(b).astype(low))
    if alpha == 1:
        r = np.subtract(af, bf) if negate else np.add(af, bf)
        return np.asarray(r).astype(low)
    al = _F32(np.array(-alpha if negate else alpha).astype(low))
    vec = np.multiply(bf, al, dtype=_F32)
    r = np.add(af, vec)
    if r.ndim == 0:
        return np.asarray(np.add(af, _F32(np.asarray(vec).astype(low)))).astype(low)
    if nthreads is None:
        from ember._threads import get_num_threads      # (torch's thread count, mirrored)
        nthreads = get_num_threads()
    n = r.size
    whole = type(b) is not np.ndarray or b.ndim == 0 or \
        b.shape == a.shape and b.flags.c_contiguous
    if whole and a.flags.c_contiguous and r.flags.c_contiguous and \
            (n < GRAIN or nthreads == 1):                  # one loop: a tail at the end
        m = n - n % BLOCK
        if m < n:
            flat, fa = r.reshape(-1), af.reshape(-1)
            fv = np.broadcast_to(vec, r.shape).reshape(-1)
            flat[m:] = fa[m:] + fv[m:].astype(low).astype(_F32)
        return r.astype(low)
    mask = vector_mask(r.shape, [x for x in (a, b) if type(x) is np.ndarray], nthreads)
    if mask is not None:
        tail = ~mask
        fa = np.broadcast_to(af, r.shape)[tail]
        fv = np.broadcast_to(vec, r.shape)[tail]
        r[tail] = fa + fv.astype(low).astype(_F32)
    return r.astype(low)


def scale(kernel, a, b):
    """``mul``/``div`` of a half array ``a`` by ``b`` (a half array, or a number entering
    unrounded as float32), computed in float32 and rounded once."""
    bf = _up(b) if type(b) is np.ndarray else _F32(b)
    return np.asarray(kernel(_up(a), bf)).astype(a.dtype)
