"""numba row kernels for scaled dot-product attention on float32 scores (ember/_kernels/
attention.py calls them through ``_compiled()``; the NumPy passes stay for float64, without
numba and under ``EMBER_NO_NUMBA=1``).

``softmax_rows``: scale, causal mask, max, exp and normalisation of each row in one kernel
(NumPy needs six passes, its row max alone 0.25 ms on (16, 4, 64, 64)); the exponential is
the vectorised ``2^k e^r`` of ember/_kernels/compiled/gelu.py. ``softmax_grad_rows``:
``dS = scale * P * (dP - rowsum(dP * P))`` in place of dP. Row sums accumulate in float64.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

_OPTS = dict(cache=True, nogil=True, error_model="numpy")
# row sums: reassociated so that they vectorise (the elementwise arithmetic keeps IEEE
# order; the exponential's polynomial is contracted into fused multiply-adds)
_SUMS = dict(_OPTS, fastmath={"reassoc"})
f32 = np.float32
_LOG2E = f32(1 / math.log(2))
_LN2_HI, _LN2_LO = f32(0.693359375), f32(-2.12194440e-4)
_E2, _E3, _E4, _E5, _E6, _E7 = (f32(1 / math.factorial(k)) for k in range(2, 8))


@njit(**dict(_OPTS, fastmath={"contract"}))      # the polynomial as fused multiply-adds
def _exp_nonpositive(y, out, bits, n):
    """out[:n] = exp(y[:n]) for y <= 0 (y < -87 gives 0; -inf gives 0)."""
    for j in range(n):
        y0 = y[j]
        yc = max(y0, f32(-87.0))
        k = np.int32(yc * _LOG2E - f32(0.5))
        kf = f32(k)
        r = (yc - kf * _LN2_HI) - kf * _LN2_LO
        e = f32(1) + r * (f32(1) + r * (_E2 + r * (_E3 + r * (_E4 + r * (_E5 + r * (
            _E6 + r * _E7))))))
        out[j] = e if y0 > f32(-87.0) else f32(0)
        bits[j] = (k + np.int32(127)) << np.int32(23)
    scale = bits.view(np.float32)
    for j in range(n):
        out[j] *= scale[j]


@njit(**_OPTS)
def _row_max(y, n):
    """max(y[:n]) (NaNs skipped; the caller checks for NaN itself). Sixteen running maxima
    side by side, which LLVM turns into vector compares (one running max did not vectorise:
    4.4 -> 2.1 ms over 7M float32)."""
    lanes = np.full(16, -np.inf, np.float32)
    m = n - n % 16
    for j in range(0, m, 16):
        for k in range(16):
            v = y[j + k]
            lanes[k] = v if v > lanes[k] else lanes[k]
    top = f32(-np.inf)
    for k in range(16):
        top = lanes[k] if lanes[k] > top else top
    for j in range(m, n):
        top = y[j] if y[j] > top else top
    return top


@njit(cache=True, nogil=True, error_model="numpy", fastmath={"nnan", "reassoc", "nsz"})
def _row_max_no_nan(y, n):
    """max(y[:n]) of a row known to hold no NaN (so the compare may vectorise: 2x
    ``_row_max`` on rows of 64)."""
    top = f32(-np.inf)
    for j in range(n):
        v = y[j]
        top = v if v > top else top
    return top


@njit(**_SUMS)
def softmax_rows(s, L, scale, causal):
    """Rows of ``s`` (R, S) float32, R a multiple of L (row r is query position r % L):
    softmax(scale * row) in place, positions j > r % L left out when ``causal``; rows with
    no finite score become 0. Per (L, S) block: the rows' kept positions scaled and shifted
    by their maximum, packed one after another, one exponential over them all, then each
    row normalised (one exponential per row of 64 spent most of its time starting and
    ending loops)."""
    R, S = s.shape
    y = np.empty(L * S, np.float32)
    e = np.empty(L * S, np.float32)
    bits = np.empty(L * S, np.int32)
    live = np.empty(L, np.int64)        # positions kept; 0: none finite, -1: a NaN
    sc = f32(scale)
    for r0 in range(0, R, L):
        block = s[r0:r0 + L]
        at = 0
        for i in range(L):
            row = block[i]
            n = min(S, i + 1) if causal else S
            yi = y[at:at + n]
            check = f32(0)
            for j in range(n):
                v = row[j] * sc
                yi[j] = v
                check += v
            top = _row_max_no_nan(yi, n) if check == check else f32(np.nan)
            live[i] = n
            if check != check:
                live[i] = -1
            elif top == f32(-np.inf):
                live[i] = 0
            if live[i] > 0:
                for j in range(n):
                    yi[j] -= top
            at += n
        _exp_nonpositive(y, e, bits, at)
        at = 0
        for i in range(L):
            row = block[i]
            n = live[i]
            if n <= 0:
                for j in range(S):
                    row[j] = f32(np.nan) if n < 0 else f32(0)
                at += min(S, i + 1) if causal else S
                continue
            ei = e[at:at + n]
            total = 0.0
            for j in range(n):
                total += ei[j]
            inv = f32(1.0 / total)
            for j in range(n):
                row[j] = ei[j] * inv
            for j in range(n, S):
                row[j] = f32(0)
            at += n


@njit(**_SUMS)
def softmax_grad_rows(dp, p, scale):
    """dp (R, S) <- scale * p * (dp - rowsum(dp * p)), float32, in place."""
    R, S = dp.shape
    sc = f32(scale)
    for r in range(R):
        a = dp[r]
        b = p[r]
        total = 0.0
        for j in range(S):
            total += a[j] * b[j]
        t = f32(total)
        for j in range(S):
            a[j] = sc * (b[j] * (a[j] - t))
