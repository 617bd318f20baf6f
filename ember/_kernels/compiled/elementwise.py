"""numba kernels for the large float32 elementwise passes of a training step (ReLU, its
gradient, a sum), run over parts of flat arrays on OpenBLAS's threads by compiled/pool.py
(Note [one pool] in ember/_kernels/blas_pool.py). Plain IEEE arithmetic in NumPy's order:
the same bits as the NumPy paths they stand in for.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ember._kernels.compiled.intrinsics import fma

_OPTS = dict(cache=True, nogil=True)
f32 = np.float32


@njit(**_OPTS)
def relu(x, out):
    """out = 0 where x < 0, else x (-0.0 and NaN kept, as torch's clamp_min)."""
    for j in range(x.size):
        v = x[j]
        out[j] = f32(0) if v < f32(0) else v


@njit(**_OPTS)
def threshold_backward(g, x, threshold, out):
    """out = 0 where x <= threshold, else g (a NaN x passes g)."""
    for j in range(x.size):
        out[j] = f32(0) if x[j] <= threshold else g[j]


@njit(**_OPTS)
def add(a, b, out):
    """out = a + b."""
    for j in range(a.size):
        out[j] = a[j] + b[j]


@njit(**_OPTS)
def mul(a, b, out):
    """out = a * b."""
    for j in range(a.size):
        out[j] = a[j] * b[j]


@njit(**_OPTS)
def add_scalar(a, s, out):
    """out = a + s (``s`` a float32)."""
    for j in range(a.size):
        out[j] = a[j] + s


@njit(**_OPTS)
def mul_scalar(a, s, out):
    """out = a * s (``s`` a float32)."""
    for j in range(a.size):
        out[j] = a[j] * s


@njit(**_OPTS)
def where_zero(cond, x, zero, out):
    """out = x where cond, else ``zero`` (+0 of x's dtype): clamp's and masks' gradients."""
    for j in range(x.size):
        out[j] = x[j] if cond[j] else zero


@njit(**_OPTS)
def add_scaled(a, b, alpha, out):
    """out = a + alpha * b rounded once (``alpha`` of the arrays' dtype)."""
    for j in range(a.size):
        out[j] = fma(alpha, b[j], a[j])


@njit(**_OPTS)
def fma_arrays(x, y, z, out):
    """out = x * y + z rounded once, elementwise over flat arrays of one dtype."""
    for j in range(x.size):
        out[j] = fma(x[j], y[j], z[j])


@njit(**_OPTS)
def add_scaled_(a, b, alpha):
    """a += alpha * b rounded once, in place (add_scaled into a would take LLVM's scalar
    loop: its overlap check refuses out == a)."""
    for j in range(a.size):
        a[j] = fma(alpha, b[j], a[j])


@njit(**_OPTS)
def add_rows(out, b):
    """out[r] += b for each row r of out (R, C); b (C,)."""
    R, C = out.shape
    for r in range(R):
        row = out[r]
        for j in range(C):
            row[j] = row[j] + b[j]


@njit(**_OPTS)
def column_sums(a, out):
    """out (C,) = the sum of the rows of a (R, C), added in row order, float32."""
    R, C = a.shape
    for j in range(C):
        out[j] = f32(0)
    for r in range(R):
        row = a[r]
        for j in range(C):
            out[j] = out[j] + row[j]


@njit(**_OPTS)
def outer_rows(a, b, out):
    """out[t, i, j] = a[t, i] * b[t, j]: a (T, M), b (T, N), out (T, M, N) (a batched
    matrix product whose contraction has length 1: per-sample weight gradients)."""
    T, M = a.shape
    N = b.shape[1]
    for t in range(T):
        at, bt, ot = a[t], b[t], out[t]
        for i in range(M):
            v, row = at[i], ot[i]
            for j in range(N):
                row[j] = v * bt[j]


# ---------------------------------------------------------------------------- tanh
# NumPy's float32 tanh is a scalar libm loop on CPUs without AVX-512 (~2.7 ns an element on
# an AVX2 EPYC); this one vectorises (8 lanes on AVX2). |x| < 0.625: x + x s Q(s), s = x^2,
# Q a degree-5 fit to (tanh(x)/x - 1)/s (relative error 2e-10); above: 1 - 2 / (e + 1) with
# e = exp(2|x|) as 2^k e^r (the GELU kernel's exponential); |x| is clamped at 10, where tanh
# rounds to 1 in float32. Within 1 ulp of the correctly rounded result (measured on a
# grid of 8M values: 0 off in 97% below 0.625, at most 25% off by one on [0.625, 1]).
_TANH_Q = tuple(f32(c) for c in (-0.3333333134651184, 0.1333320587873459,
                                 -0.05394676327705383, 0.021700704470276833,
                                 -0.008177400566637516, 0.00214296393096447))
_Q0, _Q1, _Q2, _Q3, _Q4, _Q5 = _TANH_Q
_LOG2E = f32(1.4426950408889634)
_LN2_HI, _LN2_LO = f32(0.693359375), f32(-2.12194440e-4)
_E2, _E3, _E4, _E5, _E6, _E7 = (f32(c) for c in (1 / 2, 1 / 6, 1 / 24, 1 / 120, 1 / 720,
                                                  1 / 5040))
_TANH_BLOCK = 1024
_TANH_OPTS = dict(_OPTS, error_model="numpy", fastmath={"contract"})   # vectorises; FMAs


@njit(**_TANH_OPTS)
def _exp_2abs(x, mant, bits, xv):
    """exp(2 min(|x|, 10)) = mant * bits.view(float32), elementwise; xv = x (a copy the
    second loop reads, so that an ``out`` that is ``x`` does not keep LLVM from
    vectorising it)."""
    for j in range(x.size):
        v = x[j]
        xv[j] = v
        y = min(abs(v), f32(10)) * f32(2)
        k = np.int32(y * _LOG2E + f32(0.5))         # y >= 0: truncation rounds to nearest
        kf = f32(k)
        r = (y - kf * _LN2_HI) - kf * _LN2_LO
        mant[j] = f32(1) + r * (f32(1) + r * (_E2 + r * (_E3 + r * (_E4 + r * (_E5 + r * (
            _E6 + r * _E7))))))
        bits[j] = (k + np.int32(127)) << np.int32(23)


@njit(**_TANH_OPTS)
def _tanh_finish(x, mant, scale, out):
    for j in range(x.size):
        v = x[j]
        a = min(abs(v), f32(10))
        big = f32(1) - f32(2) / (mant[j] * scale[j] + f32(1))
        q = a * a
        small = v + v * q * (_Q0 + q * (_Q1 + q * (_Q2 + q * (_Q3 + q * (_Q4 + q * _Q5)))))
        t = small if a < f32(0.625) else (big if v > f32(0) else -big)
        out[j] = t if a > f32(0) else v             # zeros keep their sign, NaN stays NaN


@njit(**_TANH_OPTS)
def tanh(x, out):
    """out = tanh(x), flat float32 arrays (``out`` may be ``x``)."""
    mant = np.empty(_TANH_BLOCK, np.float32)
    bits = np.empty(_TANH_BLOCK, np.int32)
    xv = np.empty(_TANH_BLOCK, np.float32)
    scale = bits.view(np.float32)
    n = x.size
    for s in range(0, n, _TANH_BLOCK):
        m = min(_TANH_BLOCK, n - s)
        _exp_2abs(x[s:s + m], mant[:m], bits[:m], xv[:m])
        _tanh_finish(xv[:m], mant[:m], scale[:m], out[s:s + m])


@njit(**_TANH_OPTS)
def _sum_into(a, b, out):
    for j in range(out.size):
        out[j] = a[j] + b[j]


@njit(**_TANH_OPTS)
def tanh_sum(a, b, out):
    """out = tanh(a + b), flat float32 arrays (``out`` may be ``a`` or ``b``): a recurrent
    layer's gates, the input projection plus the hidden state's GEMM, in one call."""
    mant = np.empty(_TANH_BLOCK, np.float32)
    bits = np.empty(_TANH_BLOCK, np.int32)
    xs = np.empty(_TANH_BLOCK, np.float32)
    xv = np.empty(_TANH_BLOCK, np.float32)
    scale = bits.view(np.float32)
    n = a.size
    for s in range(0, n, _TANH_BLOCK):
        m = min(_TANH_BLOCK, n - s)
        _sum_into(a[s:s + m], b[s:s + m], xs[:m])
        _exp_2abs(xs[:m], mant[:m], bits[:m], xv[:m])
        _tanh_finish(xv[:m], mant[:m], scale[:m], out[s:s + m])


# ----------------------------------------------------------------------------- exp
# NumPy's float32 exp runs ~2-3 ns an element on the AVX2 host above (torch's 2 threads 4x
# that speed on 16M values). exp(x) = 2^k e^r as in the GELU kernel, for x in [-87, 88]
# (2^k a normal float32 there); anything else (overflow, subnormal results, NaN) is left to
# the caller, which counts on the return value. Within 1 ulp of the correctly rounded
# result, 94% exact (NumPy's own float32 exp: 3 ulps). The polynomials of exp and tanh are
# contracted into fused multiply-adds (fastmath "contract", nothing else): 30% faster on
# AVX2 and a little closer (exp's largest error 1.2 -> 0.94 ulp of the exact value); on a
# CPU without FMA each step rounds (exp then within 2 ulps, tanh still within 1).
_EXP_LO, _EXP_HI = f32(-87.0), f32(88.0)
_ROUNDER = f32(12582912.0)                  # 1.5 * 2^23: adding it rounds to an integer


@njit(**_TANH_OPTS)
def _exp_parts(x, mant, bits):
    """exp(x) = mant * bits.view(float32) for x in [-87, 88] (others: exp(0))."""
    for j in range(x.size):
        v = x[j]
        y = v if (v >= _EXP_LO) & (v <= _EXP_HI) else f32(0)
        kf = (y * _LOG2E + _ROUNDER) - _ROUNDER          # nearest integer, branch-free
        k = np.int32(kf)
        r = (y - kf * _LN2_HI) - kf * _LN2_LO
        mant[j] = f32(1) + r * (f32(1) + r * (_E2 + r * (_E3 + r * (_E4 + r * (_E5 + r * (
            _E6 + r * _E7))))))
        bits[j] = (k + np.int32(127)) << np.int32(23)


@njit(**_TANH_OPTS)
def _outside(x):
    """How many elements of x lie outside [-87, 88] or are NaN."""
    n = 0
    for j in range(x.size):
        v = x[j]
        n += 0 if (v >= _EXP_LO) & (v <= _EXP_HI) else 1
    return n


@njit(**_TANH_OPTS)
def _times(mant, scale, out):
    for j in range(out.size):
        out[j] = mant[j] * scale[j]


@njit(**_TANH_OPTS)
def exp(x, out):
    """out = exp(x) for flat float32 arrays (``out`` may be ``x``) where x lies in [-87, 88];
    returns the count of elements outside (NaN included), whose ``out`` the caller fixes."""
    mant = np.empty(_TANH_BLOCK, np.float32)
    bits = np.empty(_TANH_BLOCK, np.int32)
    scale = bits.view(np.float32)
    n = x.size
    outside = 0
    for s in range(0, n, _TANH_BLOCK):      # (counted per block: no pass of its own)
        m = min(_TANH_BLOCK, n - s)
        outside += _outside(x[s:s + m])
        _exp_parts(x[s:s + m], mant[:m], bits[:m])
        _times(mant[:m], scale[:m], out[s:s + m])
    return outside
