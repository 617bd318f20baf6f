"""Kernels for the extra ops (ember/_ops/extra.py): NumPy only."""
from __future__ import annotations

import numpy as np

from ember._kernels.shape import check_window


def as_strided_scatter(self, src, size, stride, storage_offset=None):
    """A contiguous copy of ``self`` whose ``as_strided(size, stride, storage_offset)``
    window holds ``src``."""
    out = np.array(self, order="C", copy=True)
    flat = out.reshape(-1)
    item = flat.itemsize
    size, stride, off, _ = check_window(size, stride, storage_offset or 0, item, out.nbytes)
    win = np.lib.stride_tricks.as_strided(flat[off:], shape=tuple(size),
                                          strides=tuple(s * item for s in stride))
    win[...] = np.broadcast_to(np.asarray(src, dtype=out.dtype), tuple(size))
    return out


def unravel_index(indices, shape):
    idx = np.asarray(indices).astype(np.int64)
    outs = []
    for s in reversed(shape):
        if s == 0:
            outs.append(np.zeros_like(idx))
            continue
        outs.append(np.mod(idx, s))
        idx = np.floor_divide(idx, s)
    return tuple(o.copy() for o in reversed(outs))


def nonzero_static(self, size, fill_value=-1):
    a = np.asarray(self)
    if int(size) < 0:
        raise RuntimeError("nonzero_static: 'size' must be an non-negative integer")
    nz = np.argwhere(a).astype(np.int64)
    out = np.full((int(size), a.ndim), fill_value, np.int64)
    n = min(int(size), nz.shape[0])
    out[:n] = nz[:n]
    return out


def histogramdd(sample, edges, weight=None, density=False):
    """hist: ``sample`` (N, D) counted into the bins of ``edges`` (D 1-D arrays); a point
    outside [edges[0], edges[-1]] is skipped, the last bin includes its right edge."""
    x = np.asarray(sample)
    N, D = x.shape
    edges = [np.asarray(e) for e in edges]
    nb = [len(e) - 1 for e in edges]
    keep = np.ones(N, bool)
    flat = np.zeros(N, np.int64)
    for d, e in enumerate(edges):
        v = x[:, d]
        keep &= (v >= e[0]) & (v <= e[-1])
        pos = np.searchsorted(e, v, side="right") - 1 if nb[d] > 0 else np.zeros(N, np.int64)
        pos = np.clip(pos, 0, max(nb[d] - 1, 0))
        flat = flat * max(nb[d], 1) + pos
    w = np.ones(N, x.dtype) if weight is None else np.asarray(weight).reshape(-1)
    total = int(np.prod(nb, dtype=np.int64))
    hist = np.bincount(flat[keep], weights=w[keep].astype(np.float64),
                       minlength=total)[:total].reshape(nb)
    if density:
        s = hist.sum()
        vol = np.ones(nb)
        for d, e in enumerate(edges):
            shp = [1] * D
            shp[d] = nb[d]
            vol = vol * np.diff(e.astype(np.float64)).reshape(shp)
        hist = hist / (s * vol)
    return hist.astype(x.dtype)


def hash_tensor(a, dim=(), keepdim=False, mode=0):
    """uint64 xor of the 64-bit patterns of ``a``'s values, each widened first (floats to
    float64, integers and bools to int64), over ``dim`` (every dim when empty)."""
    from ember._kernels.reduction import reduce_axes, squeeze_axes, tname
    if mode != 0:
        raise RuntimeError(f"Unknown hash_tensor mode: {mode}")
    axes = reduce_axes(dim, a.ndim)
    if axes is None and a.size == 0:
        raise RuntimeError("hash_tensor: Expected reduction dim to be specified for "
                           "input.numel() == 0. Specify the reduction dim with the 'dim' "
                           "argument.")
    for d in axes or ():
        if a.shape[d] == 0:
            raise IndexError(f"hash_tensor: Expected reduction dim {d} to have non-zero size.")
    kind = "f" if a.dtype.name == "bfloat16" else a.dtype.kind
    if kind == "c" or kind == "u" and a.dtype.itemsize > 1:
        if a.size:                  # an empty result never reaches torch's kernel
            raise NotImplementedError(f"\"xor_sum_cpu\" not implemented for '{tname(a.dtype)}'")
        a = a.real.astype(np.int64)
        kind = "i"
    bits = a.astype(np.float64 if kind == "f" else np.int64).view(np.uint64)
    r = np.bitwise_xor.reduce(bits, axis=axes, keepdims=True)
    return squeeze_axes(r, axes, keepdim, a.ndim)
