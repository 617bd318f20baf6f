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


# ------------------------------------------------------------------ whole (L, S) blocks
# Note [attention blocks]: float32 attention without a mask or dropout runs each (batch,
# head) block whole in one call, its products by OpenBLAS's sgemm called from here
# (compiled/intrinsics.sgemm) and its softmax by the row kernels above, while the block is
# in the core's cache; ember/_kernels/attention.py hands the blocks to OpenBLAS's threads
# (compiled/pool.py) or runs them on the caller's. A block's arithmetic does not depend on
# which thread takes it. Contexts are int64 arrays of addresses, sizes and strides in
# elements (q, k, v, out and grad_out may be strided views with contiguous rows).
from numba import carray                                               # noqa: E402

from ember._kernels.compiled.intrinsics import float32_at, sgemm      # noqa: E402


@njit(**_OPTS)
def _at(ctx, base, i, g, heads):
    """Address of block g of the operand at ctx[base], whose (batch, head) strides are
    ctx[i], ctx[i + 1] (elements)."""
    return ctx[base] + 4 * ((g // heads) * ctx[i] + (g % heads) * ctx[i + 1])


@njit(**_OPTS)
def sdpa_forward_blocks(ctx, lo, hi):
    """Blocks [lo, hi) of ctx [sgemm, q, k, v, p, out, heads, q_b, q_h, q_row, k_b, k_h,
    k_row, v_b, v_h, v_row, out_b, out_h, out_row, L, S, E, Ev, scale (float64 bits),
    causal]: p = softmax(scale q k^T) (causal: the positions after the query's left out),
    p contiguous (G, L, S); out = p v."""
    fn, heads = ctx[0], ctx[6]
    L, S, E, Ev = ctx[19], ctx[20], ctx[21], ctx[22]
    scale = ctx[23:24].view(np.float64)[0]
    one, zero = f32(1), f32(0)
    for g in range(lo, hi):
        pa = ctx[4] + 4 * g * L * S
        sgemm(fn, 0, 1, L, S, E, one, _at(ctx, 1, 7, g, heads), ctx[9],
              _at(ctx, 2, 10, g, heads), ctx[12], zero, pa, S)
        softmax_rows(carray(float32_at(pa), (L, S)), L, scale, ctx[24] != 0)
        sgemm(fn, 0, 0, L, Ev, S, one, pa, S, _at(ctx, 3, 13, g, heads), ctx[15], zero,
              _at(ctx, 5, 16, g, heads), ctx[18])


@njit(**_OPTS)
def sdpa_backward_blocks(ctx, lo, hi):
    """Blocks [lo, hi) of ctx [sgemm, q, k, v, p, dout, dq, dk, dv, heads, q_b, q_h, q_row,
    k_b, k_h, k_row, v_b, v_h, v_row, dout_b, dout_h, dout_row, L, S, E, Ev, scale (float64
    bits), need (1: dq, 2: dk, 4: dv)]: dv = p^T dout, dS = scale p (dP - rowsum(dP p)) with
    dP = dout v^T, dq = dS k, dk = dS^T q; p, dq, dk, dv contiguous (G, ., .)."""
    fn, heads = ctx[0], ctx[9]
    L, S, E, Ev = ctx[22], ctx[23], ctx[24], ctx[25]
    scale = ctx[26:27].view(np.float64)[0]
    need = ctx[27]
    one, zero = f32(1), f32(0)
    dp = np.empty((L, S), np.float32)
    for g in range(lo, hi):
        pa, do = ctx[4] + 4 * g * L * S, _at(ctx, 5, 19, g, heads)
        va = _at(ctx, 3, 16, g, heads)
        if need & 4:
            sgemm(fn, 1, 0, S, Ev, L, one, pa, S, do, ctx[21], zero, ctx[8] + 4 * g * S * Ev,
                  Ev)
        if need & 3:
            sgemm(fn, 0, 1, L, S, Ev, one, do, ctx[21], va, ctx[18], zero, dp.ctypes.data, S)
            softmax_grad_rows(dp, carray(float32_at(pa), (L, S)), scale)
            if need & 1:
                sgemm(fn, 0, 0, L, E, S, one, dp.ctypes.data, S, _at(ctx, 2, 13, g, heads),
                      ctx[15], zero, ctx[6] + 4 * g * L * E, E)
            if need & 2:
                sgemm(fn, 1, 0, S, E, L, one, dp.ctypes.data, S, _at(ctx, 1, 10, g, heads),
                      ctx[12], zero, ctx[7] + 4 * g * S * E, E)
