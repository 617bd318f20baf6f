"""numba kernels for the exact GELU on flat float32 arrays, imported only through
ember._kernels.nn_activation (``_compiled()``) when numba is present and not switched off.

Same formula as the NumPy path (Abramowitz & Stegun 7.1.26 for the normal tail, one
``exp(-x^2 / 2)`` shared by the value and the derivative), two loops per block of
``_BLOCK`` elements that LLVM vectorises: numba's scalar ``exp`` does not vectorise without
SVML (a plain loop ran 2.6 ms on (16, 64, 512), the NumPy passes 2.4 ms), so the exponential
is computed here as ``2^k * e^r``: ``k`` the nearest integer to ``y log2 e``, ``r = y - k ln 2``
(ln 2 split in two, Cody & Waite) and ``e^r`` a degree-7 Taylor polynomial (|r| <= ln2 / 2,
relative error < 1e-8), ``2^k`` built from its exponent bits. Arguments below -87 give 0
(float32's exp is subnormal there). On (16, 64, 512): value and derivative 0.45 ms
(NumPy 2.4 ms, torch's forward 0.25 + backward 0.44 ms); max |error| against float64 on
[-12, 12] 4.2e-7 (torch's float32 1.1e-6). No fast-math: the same result every run.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

_OPTS = dict(cache=True, nogil=True, error_model="numpy")
_BLOCK = 4096
f32 = np.float32
_P = f32(0.3275911)
_A0, _A1, _A2, _A3, _A4 = (f32(a) for a in (0.254829592, -0.284496736, 1.421413741,
                                             -1.453152027, 1.061405429))
_RSQRT2 = f32(1 / math.sqrt(2))
_RSQRT2PI = f32(1 / math.sqrt(2 * math.pi))
_LOG2E = f32(1 / math.log(2))
_LN2_HI, _LN2_LO = f32(0.693359375), f32(-2.12194440e-4)
_E2, _E3, _E4, _E5, _E6, _E7 = (f32(1 / math.factorial(k)) for k in range(2, 8))


@njit(**_OPTS)
def _gauss_parts(x, mant, bits):
    """exp(-x^2 / 2) = mant * bits.view(float32) for each element of ``x``."""
    for j in range(x.size):
        az = abs(x[j]) * _RSQRT2
        y0 = -(az * az)
        y = max(y0, f32(-87.0))
        k = np.int32(y * _LOG2E - f32(0.5))          # y <= 0: truncation rounds to nearest
        kf = f32(k)
        r = (y - kf * _LN2_HI) - kf * _LN2_LO
        e = f32(1) + r * (f32(1) + r * (_E2 + r * (_E3 + r * (_E4 + r * (_E5 + r * (
            _E6 + r * _E7))))))
        mant[j] = e if y0 > f32(-87.0) else f32(0)
        bits[j] = (k + np.int32(127)) << np.int32(23)


@njit(**_OPTS)
def _cdf(v, g):
    """Phi(v) given g = exp(-v^2 / 2)."""
    t = f32(1) / (f32(1) + _P * (abs(v) * _RSQRT2))
    h = f32(0.5) * (((((_A4 * t + _A3) * t + _A2) * t + _A1) * t + _A0) * t) * g
    return h if v < 0 else f32(1) - h


@njit(**_OPTS)
def gelu(x, out):
    """out = x * Phi(x), flat float32 arrays."""
    mant = np.empty(_BLOCK, np.float32)
    bits = np.empty(_BLOCK, np.int32)
    scale = bits.view(np.float32)
    for lo in range(0, x.size, _BLOCK):
        xs = x[lo:lo + _BLOCK]
        os = out[lo:lo + _BLOCK]
        _gauss_parts(xs, mant, bits)
        for j in range(xs.size):
            v = xs[j]
            os[j] = v * _cdf(v, mant[j] * scale[j])


@njit(**_OPTS)
def gelu_backward(x, grad, out):
    """out = grad * (Phi(x) + x phi(x)), flat float32 arrays."""
    mant = np.empty(_BLOCK, np.float32)
    bits = np.empty(_BLOCK, np.int32)
    scale = bits.view(np.float32)
    for lo in range(0, x.size, _BLOCK):
        xs = x[lo:lo + _BLOCK]
        gs = grad[lo:lo + _BLOCK]
        os = out[lo:lo + _BLOCK]
        _gauss_parts(xs, mant, bits)
        for j in range(xs.size):
            v = xs[j]
            g = mant[j] * scale[j]
            os[j] = (_cdf(v, g) + v * g * _RSQRT2PI) * gs[j]


@njit(**_OPTS)
def gelu_train(x, out, factor):
    """out = x * Phi(x) and factor = Phi(x) + x phi(x), flat float32 arrays."""
    mant = np.empty(_BLOCK, np.float32)
    bits = np.empty(_BLOCK, np.int32)
    scale = bits.view(np.float32)
    for lo in range(0, x.size, _BLOCK):
        xs = x[lo:lo + _BLOCK]
        os = out[lo:lo + _BLOCK]
        fs = factor[lo:lo + _BLOCK]
        _gauss_parts(xs, mant, bits)
        for j in range(xs.size):
            v = xs[j]
            g = mant[j] * scale[j]
            c = _cdf(v, g)
            os[j] = v * c
            fs[j] = c + v * g * _RSQRT2PI
