"""numba kernel for float32 ``erf`` (ember/_kernels/elementwise.py; SciPy's scalar loop takes
~16 ns an element), imported only when numba is present and not switched off.

Computed in float64 and rounded once, branch-free so that LLVM vectorises the loops: below 1,
``erf(x) = x P(x^2)`` (P of degree 8); from 1 to 4, ``erf(x) = 1 - exp(-x^2) Q(t)`` with Q of
degree 14 in ``t = (|x| - 2.5) / 1.5`` approximating ``erfcx`` (``exp(x^2) erfc(x)``, smooth
there); |x| is clipped at 4, where the second form rounds to +-1 in float32. The coefficients
are least-squares fits made for ember against SciPy's float64 erf / erfcx on Chebyshev points
(relative error under 1e-11 on each range). ``exp`` is ``2^k e^r`` (k the nearest integer to
y log2 e, r reduced by ln 2 split in two, e^r a degree-10 Taylor polynomial, 2^k from its
exponent bits): together well under half a float32 ulp, so nearly every result is erf
correctly rounded (1M normal draws: 99.998%, the rest 1 ulp).
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

_BLOCK = 4096
_LOG2E = 1 / math.log(2)
_LN2_HI, _LN2_LO = 0.6931471803691238, 1.9082149292705877e-10
_INV_FACT = tuple(1 / math.factorial(k) for k in range(11))


@njit(cache=True, nogil=True, error_model="numpy")
def _block(x, out, lo, hi, tail, bits):
    """erf over x[lo:hi] into out[lo:hi]; ``tail`` and ``bits`` are per-block scratch."""
    n = hi - lo
    for j in range(n):                      # everything but the 2^k of exp(-x^2)
        v = np.float64(x[lo + j])
        a = min(abs(v), 4.0)
        y = -a * a
        k = np.int64(y * _LOG2E - 0.5)
        kf = np.float64(k)
        r = (y - kf * _LN2_HI) - kf * _LN2_LO
        t = (a - 2.5) / 1.5
        e = (_INV_FACT[0] + r * (_INV_FACT[1] + r * (_INV_FACT[2] + r * (_INV_FACT[3]
            + r * (_INV_FACT[4] + r * (_INV_FACT[5] + r * (_INV_FACT[6] + r * (_INV_FACT[7]
            + r * (_INV_FACT[8] + r * (_INV_FACT[9] + r * _INV_FACT[10]))))))))))
        q = (0.21080636405462475 + t * (-0.11152102074926729
            + t * (0.0561104942732831
            + t * (-0.027005275780576467
            + t * (0.012489356647264119
            + t * (-0.00557092898581826
            + t * (0.002403783842226947
            + t * (-0.0010047883596411016
            + t * (0.0004085591027010006
            + t * (-0.00016449763941787693
            + t * (6.367244755131001e-05
            + t * (-2.0489476679285298e-05
            + t * (7.473484783709393e-06
            + t * (-5.0582340206589335e-06
            + t * 1.8130311211996592e-06))))))))))))))
        tail[j] = e * q
        bits[j] = (k + np.int64(1023)) << np.int64(52)
    scale = bits.view(np.float64)
    for j in range(n):
        v = np.float64(x[lo + j])
        u = v * v
        p = v * (1.1283791670946965 + u * (-0.3761263888987626 + u * (0.11283791313583054
                + u * (-0.026866133629922313 + u * (0.005223785019073759
                + u * (-0.0008542670741357863 + u * (0.00011956948120973213
                + u * (-1.391170527681378e-05 + u * 1.059527781619258e-06))))))))
        m = 1.0 - tail[j] * scale[j]
        m = m if v >= 0.0 else -m
        r = p if abs(v) < 1.0 else m
        out[lo + j] = np.float32(r if v == v else v)


@njit(cache=True, nogil=True, error_model="numpy")
def erf_f32(x, out):
    """out = erf(x); x, out flat float32 arrays of one size."""
    tail = np.empty(_BLOCK, np.float64)
    bits = np.empty(_BLOCK, np.int64)
    for lo in range(0, x.size, _BLOCK):
        _block(x, out, lo, min(lo + _BLOCK, x.size), tail, bits)
