"""numba row kernels for cross-entropy on float32 logits (ember/_kernels/nn_fused.py runs
them on OpenBLAS's threads through compiled/pool.py, Note [one pool] in blas_pool.py).

``exp_rows``: each row's maximum m, e = exp(x - m) and its sum s in one kernel (NumPy needs
four passes: 1.5 ms on (1120, 1000) where torch's log_softmax takes 0.5 on two threads); the
exponential is the vectorised ``2^k e^r`` of compiled/gelu.py, sums accumulate in float64.
A row holding NaN or an infinity is flagged and left for the NumPy path. ``scale_rows``:
out = e * f per row (the backward's softmax times the loss weight). ``lane_row_sums``: the
row sums of small float32 softmaxes in torch's lane order (reduction._row_sums).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ember._kernels.compiled.attention import _exp_nonpositive, _row_max

_SUMS = dict(cache=True, nogil=True, error_model="numpy", fastmath={"reassoc"})
f32 = np.float32


@njit(**_SUMS)
def _all_finite(row):
    """Whether ``row`` holds no NaN and no infinity (one vectorised pass)."""
    check = f32(0)
    for j in range(row.size):
        check += row[j] * f32(0)                  # NaN for a NaN or an infinity
    return check == check


@njit(**_SUMS)
def _shifted_exp(row, out, d, bits):
    """d = row - max(row), out = exp(d); returns (the max, the sum of out in float64)."""
    C = row.size
    top = _row_max(row, C)
    for j in range(C):
        d[j] = row[j] - top
    _exp_nonpositive(d, out, bits, C)
    total = 0.0
    for j in range(C):
        total += out[j]
    return top, total


@njit(**_SUMS)
def exp_rows(x, e, s, m, bad):
    """Rows of x (R, C): m = max, e = exp(x - m), s = sum(e); bad[r] = 1 (and nothing else
    written) where the row holds a NaN or an infinity."""
    R, C = x.shape
    d = np.empty(C, np.float32)
    bits = np.empty(C, np.int32)
    for r in range(R):
        if not _all_finite(x[r]):
            bad[r] = 1
            continue
        top, total = _shifted_exp(x[r], e[r], d, bits)
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


@njit(cache=True, nogil=True)
def _nan_or_posinf(row):
    for j in range(row.size):
        v = row[j]
        if v != v or v == f32(np.inf):
            return True
    return False


@njit(**_SUMS)
def softmax_last(x, y, bad, log):
    """Rows of x (R, C): y = softmax(row), or log_softmax when ``log``; bad[r] = 1 (row left
    for the NumPy path) where it holds a NaN, +inf, or nothing but -inf."""
    R, C = x.shape
    d = np.empty(C, np.float32)
    bits = np.empty(C, np.int32)
    for r in range(R):
        row = x[r]
        if not _all_finite(row) and _nan_or_posinf(row):
            bad[r] = 1
            continue
        out = y[r]
        top, total = _shifted_exp(row, out, d, bits)
        if top == -np.inf:                        # every position masked
            bad[r] = 1
            continue
        s = f32(total)
        if log:
            lse = np.log(s)
            for j in range(C):
                out[j] = d[j] - lse
        else:
            inv = f32(1) / s
            for j in range(C):
                out[j] = out[j] * inv


@njit(**_SUMS)
def softmax_grad(g, y, out):
    """Rows (R, C): out = y (g - sum(g y)), the gradient of softmax with output y."""
    R, C = g.shape
    for r in range(R):
        gr, yr, o = g[r], y[r], out[r]
        total = 0.0
        for j in range(C):
            total += gr[j] * yr[j]
        s = f32(total)
        for j in range(C):
            o[j] = (gr[j] - s) * yr[j]


@njit(**_SUMS)
def log_softmax_grad(g, y, out, bad):
    """Rows (R, C): out = g - exp(y) sum(g), the gradient of log_softmax with output y;
    bad[r] = 1 (left for the NumPy path) where y holds a NaN or a positive value."""
    R, C = g.shape
    e = np.empty(C, np.float32)
    bits = np.empty(C, np.int32)
    for r in range(R):
        gr, yr, o = g[r], y[r], out[r]
        flag = 0
        total = 0.0
        for j in range(C):
            v = yr[j]
            flag += 0 if v <= f32(0) else 1            # NaN or positive
            total += gr[j]
        if flag:
            bad[r] = 1
            continue
        _exp_nonpositive(yr, e, bits, C)
        s = f32(total)
        for j in range(C):
            o[j] = gr[j] - e[j] * s


@njit(cache=True, nogil=True)
def lane_row_sums(e, out):
    """out[r] = the sum of row r of e (R, C), C >= 8, float32, in torch's softmax order
    (Note [float32 softmax rows] in reduction.py): 8 lanes over the whole blocks of 8, the
    tail added into the first lanes, the lanes halved pairwise (4 + 4, 2 + 2, 1 + 1)."""
    R, C = e.shape
    whole = C // 8 * 8
    acc = np.empty(8, np.float32)
    for r in range(R):
        row = e[r]
        for k in range(8):
            acc[k] = row[k]
        for j in range(8, whole, 8):
            for k in range(8):
                acc[k] = acc[k] + row[j + k]
        for k in range(C - whole):
            acc[k] = acc[k] + row[whole + k]
        for k in range(4):
            acc[k] = acc[k] + acc[k + 4]
        for k in range(2):
            acc[k] = acc[k] + acc[k + 2]
        out[r] = acc[0] + acc[1]

