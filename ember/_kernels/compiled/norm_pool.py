"""numba kernels for batch norm and max pooling's backward (float32), imported only through
ember._kernels.compiled.norm_pool_kernels().

One pass where NumPy needs one per step: batch norm's statistics and output, its backward's
two sums and the input gradient, and max pooling's scatter of the gradient (NumPy's
``bincount`` or fancy assignment needs flat indices built first). A compiled max-pool
forward (one scan per window, branch-free) lost to NumPy's running maximum over views
(3.4 vs 2.2 ms on 64x32x28x28, 48 vs 43 ms on ResNet's stem pool) and was dropped. Every kernel works on a range of independent rows
(channels, or (n, c) planes), so callers split the rows over threads (``nogil``) and the
result does not depend on the split. Sums run in float64; batch norm's statistics and
output round as torch's (Note [float32 batch-norm statistics] in nn_norm.py); no fast-math
in the elementwise loops.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ember._kernels.compiled.intrinsics import fma

_OPTS = dict(cache=True, nogil=True)


# Sums may be reordered (vectorised lanes, float64): the order is fixed at compile time, so
# results stay the same run to run; the elementwise loops keep IEEE order (no fast-math).
_SUM_OPTS = dict(cache=True, nogil=True, fastmath={"reassoc"})


@njit(**_SUM_OPTS)
def _sum(a):
    s = 0.0
    for i in range(a.shape[0]):
        s += a[i]
    return s


@njit(**_SUM_OPTS)
def _sq_dev32(a, m):
    """The float64 sum of the float32 squares of the float32 differences a - m."""
    s = 0.0
    for i in range(a.shape[0]):
        d = a[i] - m
        s += d * d
    return s


@njit(**_SUM_OPTS)
def _sum_and_dot(g, x, m):
    """(sum(g), sum(g * (x - m))) in float64."""
    sg = 0.0
    sd = 0.0
    for i in range(g.shape[0]):
        gv = np.float64(g[i])
        sg += gv
        sd += gv * (x[i] - m)
    return sg, sd


@njit(**_OPTS)
def bn_forward(x, weight, bias, eps, c0, c1, y, mean, var):
    """Training batch norm of channels c0..c1 of ``x`` (N, C, P): per channel the batch mean
    and biased variance into ``mean``/``var`` (C,) float32, then ``y = fma(x, a, fma(-mean,
    a, bias))`` with ``a = invstd * weight`` (float32), each step rounded as torch's (Note
    [float32 batch-norm statistics] in ember/_kernels/nn_norm.py)."""
    N, C, P = x.shape
    M = N * P
    for c in range(c0, c1):
        s = 0.0
        for n in range(N):
            s += _sum(x[n, c])
        mc = np.float32(s / M)
        q = 0.0
        for n in range(N):
            q += _sq_dev32(x[n, c], mc)
        v = np.float32(q) / np.float32(M)
        mean[c] = mc
        var[c] = v
        a = np.float32(1.0 / np.sqrt(np.float64(v) + eps)) * weight[c]
        shift = fma(-mc, a, bias[c])
        for n in range(N):
            xr, yr = x[n, c], y[n, c]
            for p in range(P):
                yr[p] = fma(xr[p], a, shift)


@njit(**_OPTS)
def bn_backward(g, x, mean, var, weight, eps, c0, c1, gx, gw, gb):
    """Training batch norm's gradients for channels c0..c1: ``x``, ``g``, ``gx`` (N, C, P),
    the forward's batch ``mean``/``var`` (C,); sums of g and g (x - mean) in float64, then
    gx = w invstd (g - sum(g)/M - (x - mean) invstd^2 sum(g (x - mean))/M)."""
    N, C, P = x.shape
    M = N * P
    for c in range(c0, c1):
        mc = mean[c]
        sg = 0.0
        sd = 0.0
        for n in range(N):
            a_, b_ = _sum_and_dot(g[n, c], x[n, c], np.float64(mc))
            sg += a_
            sd += b_
        invstd = np.float32(1.0 / np.sqrt(np.float64(var[c]) + eps))
        gw[c] = np.float32(sd * invstd)
        gb[c] = np.float32(sg)
        k = np.float32(invstd * invstd * sd / M)
        a = invstd * weight[c]
        mg = np.float32(sg / M)
        for n in range(N):
            for p in range(P):
                gx[n, c, p] = (g[n, c, p] - mg - (x[n, c, p] - mc) * k) * a


@njit(**_OPTS)
def max_pool_backward(g, idx, r0, r1, out):
    """Adds ``g`` (R, O) into ``out`` (R, S) (zeroed by the caller) at the flat indices
    ``idx`` (R, O) of rows r0..r1; returns the count of indices outside [0, S) (skipped)."""
    S = out.shape[1]
    bad = 0
    for r in range(r0, r1):
        for o in range(g.shape[1]):
            i = idx[r, o]
            if 0 <= i < S:
                out[r, i] += g[r, o]
            else:
                bad += 1
    return bad
