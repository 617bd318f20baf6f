"""numba row kernels for cross-entropy on float32 logits (ember/_kernels/nn_fused.py runs
them on OpenBLAS's threads through compiled/pool.py, Note [one pool] in blas_pool.py).

``exp_rows``: each row's maximum m, e = exp(x - m) and its sum s in one kernel (NumPy needs
four passes: 1.5 ms on (1120, 1000) where torch's log_softmax takes 0.5 on two threads); the
exponential is the vectorised ``2^k e^r`` of compiled/gelu.py, sums accumulate in float64.
A row holding NaN or an infinity is flagged and left for the NumPy path. ``scale_rows``:
out = e * f per row (the backward's softmax times the loss weight).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ember._kernels.compiled.attention import _exp_nonpositive, _row_max

_SUMS = dict(cache=True, nogil=True, error_model="numpy", fastmath={"reassoc"})
f32 = np.float32


@njit(**_SUMS)
def exp_rows(x, e, s, m, bad):
    """Rows of x (R, C): m = max, e = exp(x - m), s = sum(e); bad[r] = 1 (and nothing else
    written) where the row holds a NaN or an infinity."""
    R, C = x.shape
    y = np.empty(C, np.float32)
    bits = np.empty(C, np.int32)
    for r in range(R):
        row = x[r]
        check = f32(0)
        for j in range(C):
            check += row[j] * f32(0)              # NaN for a NaN or an infinity
        if check != check:
            bad[r] = 1
            continue
        top = _row_max(row, C)
        for j in range(C):
            y[j] = row[j] - top
        out = e[r]
        _exp_nonpositive(y, out, bits, C)
        total = 0.0
        for j in range(C):
            total += out[j]
        s[r] = f32(total)
        m[r] = top


@njit(cache=True, nogil=True)
def scale_rows(e, f, out):
    """out[r] = e[r] * f[r] for rows of e (R, C) float32, f (R,) float32."""
    R, C = e.shape
    for r in range(R):
        fr = f[r]
        src = e[r]
        dst = out[r]
        for j in range(C):
            dst[j] = src[j] * fr
