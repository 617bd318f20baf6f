"""numba kernels (imported only through ember._kernels.compiled.kernels()).

Each reproduces the float32 steps of a NumPy rule in ember/_kernels/quantized_gemm.py, in
the same order, one element at a time: no fast-math flags, so LLVM neither reorders nor
contracts a product and a sum into a fused multiply-add (tests check the machine code).
"""
from __future__ import annotations

import numpy as np
from numba import njit

_OPTS = dict(cache=True, nogil=True)


@njit(**_OPTS)
def _requant(a, onednn, xs, m, b, inv, zp, lo, hi):
    """One accumulator value -> its output integer (as float32), by oneDNN's rule
    ``rint((a * xs * m + b) * inv + zp)`` or the static one ``rint((a + b) * m) + zp``,
    every step rounded to float32, then clamped to [lo, hi]."""
    v = np.float32(a)
    if onednn:
        v = v * xs
        v = v * m
        v = v + b
        v = v * inv
        v = v + zp
        v = np.rint(v)
    else:
        v = v + b
        v = v * m
        v = np.rint(v)
        v = v + zp
    if v < lo:
        v = lo
    if v > hi:
        v = hi
    return v


@njit(**_OPTS)
def requantize_rows(acc, onednn, xs, mul, add, inv, zp, lo, hi, out):
    """(M, O) accumulator (int32, float32 or float64) -> (M, O) integers ``out`` (uint8 or
    int8), ``mul``/``add`` float32 (O,): see :func:`_requant`."""
    M, O = acc.shape
    for i in range(M):
        for c in range(O):
            out[i, c] = np.int32(_requant(acc[i, c], onednn, xs, mul[c], add[c], inv, zp,
                                          lo, hi))


@njit(**_OPTS)
def depthwise2d(x, x_zp, w, wz, kh, kw, sh, sw, ph, pw, dh, dw, saturate,
                onednn, xs, mul, add, inv, zp, lo, hi, out):
    """Depthwise 2-d convolution of channels-last uint8 ``x`` (N, H, W, O) (one input
    channel an output channel) with int32 weights ``w`` (kh*kw, O) and zero points ``wz``
    (O,), requantized into ``out`` (N, Ho, Wo, O) by :func:`_requant`.

    The exact sum of ``(x - x_zp) * (w - wz)`` over the taps (the padding holds ``x_zp``);
    ``saturate``: fbgemm's depthwise kernel, which adds the raw products ``x * w`` in
    consecutive pairs of taps saturated to int16, then subtracts the zero points' terms."""
    N, H, W, O = x.shape
    Ho, Wo = out.shape[1], out.shape[2]
    taps = kh * kw
    acc = np.empty(O, np.int32)
    pair = np.empty(O, np.int32)
    xsum = np.empty(O, np.int32)
    wsum = np.zeros(O, np.int32)
    wzs = np.empty((taps, O), np.int32)      # the shifted weights (unsaturated sums)
    for t in range(taps):
        for o in range(O):
            wsum[o] += w[t, o]
            wzs[t, o] = w[t, o] - wz[o]
    any_wz = False
    for o in range(O):
        if wz[o] != 0:
            any_wz = True
    for n in range(N):
        for oh in range(Ho):
            for ow in range(Wo):
                acc[:] = 0
                if saturate:
                    xsum[:] = 0
                    for t0 in range(0, taps, 2):
                        pair[:] = 0
                        for t in range(t0, min(t0 + 2, taps)):
                            ih = oh * sh - ph + (t // kw) * dh
                            iw = ow * sw - pw + (t % kw) * dw
                            if 0 <= ih < H and 0 <= iw < W:
                                for o in range(O):
                                    pair[o] += np.int32(x[n, ih, iw, o]) * w[t, o]
                                if any_wz:
                                    for o in range(O):
                                        xsum[o] += x[n, ih, iw, o]
                            else:
                                for o in range(O):
                                    pair[o] += x_zp * w[t, o]
                                if any_wz:
                                    for o in range(O):
                                        xsum[o] += x_zp
                        for o in range(O):
                            acc[o] += min(max(pair[o], -32768), 32767)
                    for o in range(O):
                        acc[o] -= wz[o] * xsum[o] + x_zp * wsum[o] - taps * x_zp * wz[o]
                else:
                    for t in range(taps):
                        ih = oh * sh - ph + (t // kw) * dh
                        iw = ow * sw - pw + (t % kw) * dw
                        if 0 <= ih < H and 0 <= iw < W:
                            for o in range(O):
                                acc[o] += (np.int32(x[n, ih, iw, o]) - x_zp) * wzs[t, o]
                for o in range(O):
                    out[n, oh, ow, o] = np.int32(_requant(acc[o], onednn, xs, mul[o], add[o],
                                                          inv, zp, lo, hi))
