"""numba kernel for float32 ``normal_``'s Box-Muller transform (Note [normal_ float32
transcendentals] in ember/_kernels/random.py), imported only through random.py when numba is
present and not switched off.

The same float32 operations as random.py's NumPy path (``_log_ps``, ``_sincos_ps``), one
element at a time, each multiply-add fused exactly where that path fuses it (LLVM's fma)
and nothing else contracted: the bits are the NumPy path's. One call instead of ~60 NumPy
passes and 17 emulated fmas (randn(8, 16): ~400 -> ~10 us)."""
from __future__ import annotations

import numpy as np
from numba import njit

from ember._kernels.compiled.intrinsics import fma

_f32 = np.float32
_LP0, _LP1, _LP2, _LP3, _LP4, _LP5, _LP6, _LP7, _LP8 = (_f32(c) for c in (
    7.0376836292e-2, -1.1514610310e-1, 1.1676998740e-1, -1.2420140846e-1, 1.4249322787e-1,
    -1.6668057665e-1, 2.0000714765e-1, -2.4999993993e-1, 3.3333331174e-1))
_Q1, _Q2 = _f32(-2.12194440e-4), _f32(0.693359375)
_SQRT_HALF = _f32(0.707106781186547524)
_FOUR_OVER_PI = _f32(1.27323954473516)
_PI4_A, _PI4_B, _PI4_C = _f32(-0.78515625), _f32(-2.4187564849853515625e-4), \
    _f32(-3.77489497744594108e-8)
_C0, _C1, _C2 = _f32(2.443315711809948e-5), _f32(-1.388731625493765e-3), \
    _f32(4.166664568298827e-2)
_S0, _S1, _S2 = _f32(-1.9515295891e-4), _f32(8.3321608736e-3), _f32(-1.6666654611e-1)
_ONE, _ZERO, _HALF, _MINUS_HALF = _f32(1), _f32(0), _f32(0.5), _f32(-0.5)
_MINUS_TWO, _TWO_PI = _f32(-2), _f32(2.0 * np.pi)


@njit(cache=True, nogil=True)
def _radii(v, out):
    """out = sqrt(-2 log_ps(v)) for positive normal float32 v (random._log_ps): branch-free,
    so the loop vectorises."""
    vb = v.view(np.int32)
    for q in range(v.size):
        b = vb[q]
        e = _f32(((b >> 23) & 0xff) - 0x7e)
        m = _HALF + _f32(b & 0x007fffff) * _f32(2.0 ** -24)     # exact: the mantissa in [0.5, 1)
        low = m < _SQRT_HALF
        e = e - (_ONE if low else _ZERO)
        x = (m - _ONE) + (m if low else _ZERO)
        z = x * x
        y = fma(fma(fma(fma(fma(fma(fma(fma(_LP0, x, _LP1), x, _LP2), x, _LP3), x, _LP4), x,
                                _LP5), x, _LP6), x, _LP7), x, _LP8)
        y = fma(y * x, z, e * _Q1)
        y = fma(z, _MINUS_HALF, y)
        out[q] = np.sqrt(_MINUS_TWO * fma(e, _Q2, x + y))


@njit(cache=True, nogil=True)
def box_muller16(data, out):
    """random._box_muller16 for float32: ``data`` (k, 16) uniforms -> ``out`` (k, 16)
    (random._log_ps and random._sincos_ps, element by element)."""
    k = data.shape[0]
    v = np.empty((k, 8), np.float32)            # 1 - u of each chunk's first 8
    for r in range(k):
        for i in range(8):
            v[r, i] = _ONE - data[r, i]
    radius = np.empty((k, 8), np.float32)
    _radii(v.reshape(-1), radius.reshape(-1))
    for r in range(k):
        for i in range(8):
            t = _TWO_PI * data[r, 8 + i]          # >= +0
            j = np.int32(t * _FOUR_OVER_PI)
            j = (j + np.int32(1)) & np.int32(-2)
            y = _f32(j)
            x = t + y * _PI4_A
            x = x + y * _PI4_B
            x = x + y * _PI4_C
            sin_neg = (j & np.int32(4)) != 0
            cos_neg = (~(j - np.int32(2)) & np.int32(4)) != 0
            z = x * x
            yc = fma(fma(_C0, z, _C1), z, _C2)
            yc = fma(yc * z, z, -(z * _HALF)) + _ONE
            ys = fma(fma(_S0, z, _S1), z, _S2)
            ys = fma(ys * z, x, x)
            first = (j & np.int32(2)) == 0
            s = ys if first else yc
            c = yc if first else ys
            rad = radius[r, i]
            out[r, i] = rad * (-c if cos_neg else c)
            out[r, 8 + i] = rad * (-s if sin_neg else s)
