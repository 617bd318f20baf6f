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

from ember._kernels.compiled.attention import _exp_nonpositive, _row_max, _row_max_no_nan

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



# ------------------------------------------------- cross entropy of small logits, one call each

@njit(**_SUMS)
def ce_rows(x, t, ignore_index, e, s, m):
    """``exp_rows`` of float32 logits x (R, C) whose targets t (R,) are checked. Returns
    False, having written only part, where a row holds NaN or an infinity or a target is
    neither in [0, C) nor ``ignore_index`` (left for the NumPy path)."""
    R, C = x.shape
    d = np.empty(C, np.float32)
    bits = np.empty(C, np.int32)
    for r in range(R):
        k = t[r]
        row = x[r]
        if k != ignore_index and (k < 0 or k >= C) or not _all_finite(row):
            return False
        top = _row_max_no_nan(row, C)         # (no buffer per row, as _row_max has)
        for j in range(C):
            d[j] = row[j] - top
        _exp_nonpositive(d, e[r], bits, C)
        total = 0.0
        for j in range(C):
            total += e[r, j]
        s[r] = f32(total)
        m[r] = top
    return True


@njit(cache=True, nogil=True)
def nll_cascade(v, t, ignore_index, S):
    """Note [nll cascade] (ember/_kernels/nn_norm.py) row by row: the total of v (n,) in its
    dtype, rows whose t is ``ignore_index`` adding and moving nothing; returns (total, rows
    kept). Each step rounds in v's dtype: no reassociation here."""
    levels = np.zeros(8, v.dtype)
    kept = 0
    for i in range(v.size):
        if t[i] == ignore_index:
            continue
        kept += 1
        levels[0] += v[i]
        j, span = 0, S
        while j < 7 and i % span == 0:           # row 0 climbs to the top level
            levels[j + 1] += levels[j]
            levels[j] = 0
            j += 1
            span *= S
    total = levels[0]
    for j in range(1, 8):
        total += levels[j]
    return total, kept


@njit(cache=True, nogil=True)
def ce_finish(logs, x, t, m, ignore_index, S, losses, lse):
    """From ``ce_rows``' m and NumPy's logs = log(s): losses = logs - (x[t] - m) (0 on
    ignored rows) and lse = logs + m, float32 (R,); returns ``nll_cascade`` of the losses."""
    for r in range(logs.size):
        k = t[r]
        losses[r] = f32(0) if k == ignore_index else logs[r] - (x[r, k] - m[r])
        lse[r] = logs[r] + m[r]
    return nll_cascade(losses, t, ignore_index, S)


@njit(cache=True, nogil=True, error_model="numpy")         # (x / 0 is inf, not an error)
def ce_grad_rows(e, s, lse, t, ignore_index, reduction, g, gl, out):
    """The cross-entropy gradient from the forward's e (R, C) and s (R,), for the loss
    gradient g ((R,) for reduction 0, else (1,)) and the lse gradient gl ((R,), or empty for
    none): out[r] = e[r] * ((a + gl[r]) / s[r]), less a at the target, a the row's share of
    g (0 on ignored rows); NaN on rows holding +inf (lse[r] = +inf), as log_softmax's.
    float32 throughout, in the NumPy path's order."""
    R, C = e.shape
    a = g[0]
    if reduction == 1:
        kept = 0
        for r in range(R):
            kept += t[r] != ignore_index
        a = a / f32(kept)
    for r in range(R):
        if lse[r] == np.inf:
            out[r] = np.nan
            continue
        k = t[r]
        ar = f32(0) if k == ignore_index else (g[r] if reduction == 0 else a)
        coef = ar + gl[r] if gl.size else ar
        f = coef / s[r]
        for j in range(C):
            out[r, j] = e[r, j] * f
        if k != ignore_index:
            out[r, k] -= ar
