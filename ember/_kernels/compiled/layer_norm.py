"""numba kernels for layer norm over the last dims (float32 rows), imported only through
ember._kernels.compiled.layer_norm_kernels() (ember/_kernels/nn_norm.py calls them).

NumPy needs ~6 full passes for the forward and ~13 for the backward (it recomputes the
statistics); here the forward is one pass for the statistics and one for the output, the
backward one for the row sums and one for the input gradient: on (1024, 128) float32,
0.18 -> 0.05 ms forward and 0.39 -> 0.05 ms backward. Row statistics are summed in float64
(one pass over the row shifted by its first element), the weight and bias gradients too, or
per 32-row block in float32 with the blocks added in float64 where the kernels run on OpenBLAS's threads (the NumPy path sums in float32);
elementwise arithmetic stays float32 in IEEE order (no fast-math beyond reassociating the
sums), so results are the same run to run and within float32 rounding of torch's.
"""
from __future__ import annotations

import numpy as np
from numba import njit

_OPTS = dict(cache=True, nogil=True, fastmath={"reassoc"})


@njit(**_OPTS)
def _row_stats(x, r, eps):
    """(mean, 1 / sqrt(var + eps)) of row ``r`` of ``x`` as float32, in one float64 pass.

    The pass sums d = x - x[r, 0] and d * d: shifted by an element of the row, the
    variance E[d^2] - E[d]^2 loses nothing to a mean far from zero (|d| is at most the
    row's range, so the cancellation is bounded by C ulps of float64)."""
    C = x.shape[1]
    x0 = np.float64(x[r, 0])
    s = 0.0
    q = 0.0
    for c in range(C):
        d = x[r, c] - x0
        s += d
        q += d * d
    mean_d = s / C
    v = max(q / C - mean_d * mean_d, 0.0)
    return np.float32(x0 + mean_d), np.float32(1.0 / np.sqrt(v + eps))


@njit(**_OPTS)
def forward(x, w, b, eps, y):
    """y = (x - mean) * rstd * w + b per row of ``x`` (R, C) float32; ``w``/``b`` (C,)."""
    R, C = x.shape
    for r in range(R):
        mf, rf = _row_stats(x, r, eps)
        for c in range(C):
            y[r, c] = (x[r, c] - mf) * rf * w[c] + b[c]


@njit(**_OPTS)
def backward(g, x, w, eps, gx, gw, gb):
    """Gradients of ``forward`` w.r.t. x (into ``gx`` (R, C) float32) and w, b (into ``gw``,
    ``gb`` (C,), accumulated): gx = rstd (g w - mean(g w) - xhat mean(g w xhat)). float64
    ``gw``/``gb`` sum every row in double; float32 ones (a block of rows on OpenBLAS's
    threads, the blocks then added in double) vectorise, as the float64 sums do not."""
    R, C = x.shape
    for r in range(R):
        mf, rf = _row_stats(x, r, eps)
        s1 = 0.0
        s2 = 0.0
        for c in range(C):
            xh = (x[r, c] - mf) * rf
            gy = g[r, c] * w[c]
            s1 += gy
            s2 += gy * xh
            gw[c] += g[r, c] * xh
            gb[c] += g[r, c]
        a1 = np.float32(s1 / C)
        a2 = np.float32(s2 / C)
        for c in range(C):
            xh = (x[r, c] - mf) * rf
            gx[r, c] = (g[r, c] * w[c] - a1 - xh * a2) * rf

