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
def _padded(x, ph, pw, fill, shift):
    """int16 ``x - shift`` (N, H, W, O) padded on H and W with ``fill - shift``."""
    N, H, W, O = x.shape
    xp = np.empty((N, H + 2 * ph, W + 2 * pw, O), np.int16)
    xp[:] = fill - shift
    for n in range(N):
        for h in range(H):
            for w in range(W):
                for o in range(O):
                    xp[n, h + ph, w + pw, o] = np.int16(x[n, h, w, o]) - shift
    return xp


@njit(**_OPTS)
def _requant_row(row, onednn, xs, mul, add, inv, zp, lo, hi, out):
    """:func:`requantize_rows` with the rule's branch taken outside the loop."""
    M, O = row.shape
    if onednn:
        for i in range(M):
            for c in range(O):
                out[i, c] = np.int32(_requant(row[i, c], True, xs, mul[c], add[c], inv, zp,
                                              lo, hi))
    else:
        for i in range(M):
            for c in range(O):
                out[i, c] = np.int32(_requant(row[i, c], False, xs, mul[c], add[c], inv, zp,
                                              lo, hi))


@njit(**_OPTS)
def depthwise2d(x, x_zp, w, wz, kh, kw, sh, sw, ph, pw, dh, dw, saturate,
                onednn, xs, mul, add, inv, zp, lo, hi, out):
    """Depthwise 2-d convolution of channels-last uint8 ``x`` (N, H, W, O) (one input
    channel an output channel) with int32 weights ``w`` (kh*kw, O) and zero points ``wz``
    (O,), requantized into ``out`` (N, Ho, Wo, O) by :func:`_requant`.

    The exact sum of ``(x - x_zp) * (w - wz)`` over the taps (the padding holds ``x_zp``);
    ``saturate``: fbgemm's depthwise kernel, which adds the raw products ``x * w`` in
    consecutive pairs of taps saturated to int16, then subtracts the zero points' terms.
    One output row (Wo, O) at a time, tap by tap, over the padded input."""
    N, H, W, O = x.shape
    Ho, Wo = out.shape[1], out.shape[2]
    taps = kh * kw
    acc = np.empty((Wo, O), np.int32)
    pair = np.empty((Wo, O), np.int32)
    xsum = np.zeros((Wo, O), np.int32)
    wsum = np.zeros(O, np.int32)
    wzs = np.empty((taps, O), np.int16)      # the shifted weights (exact sums)
    for t in range(taps):
        for o in range(O):
            wsum[o] += w[t, o]
            wzs[t, o] = w[t, o] - wz[o]
    any_wz = False
    for o in range(O):
        if wz[o] != 0:
            any_wz = True
    sums = saturate and any_wz          # the inputs' sums are needed
    xp = _padded(x, ph, pw, x_zp, 0 if saturate else x_zp)
    for n in range(N):
        for oh in range(Ho):
            acc[:] = 0
            if saturate:
                if sums:
                    xsum[:] = 0
                for t0 in range(0, taps, 2):
                    pair[:] = 0
                    for t in range(t0, min(t0 + 2, taps)):
                        ih = oh * sh + (t // kw) * dh
                        j = (t % kw) * dw
                        for ow in range(Wo):
                            for o in range(O):
                                pair[ow, o] += xp[n, ih, ow * sw + j, o] * w[t, o]
                        if sums:
                            for ow in range(Wo):
                                for o in range(O):
                                    xsum[ow, o] += xp[n, ih, ow * sw + j, o]
                    for ow in range(Wo):
                        for o in range(O):
                            acc[ow, o] += min(max(pair[ow, o], -32768), 32767)
                for ow in range(Wo):
                    for o in range(O):
                        acc[ow, o] -= wz[o] * xsum[ow, o] + x_zp * wsum[o] - \
                            taps * x_zp * wz[o]
            else:
                for t in range(taps):
                    ih = oh * sh + (t // kw) * dh
                    j = (t % kw) * dw
                    for ow in range(Wo):
                        for o in range(O):
                            acc[ow, o] += xp[n, ih, ow * sw + j, o] * wzs[t, o]
            for ow in range(Wo):
                for o in range(O):
                    out[n, oh, ow, o] = np.int32(_requant(acc[ow, o], onednn, xs, mul[o],
                                                          add[o], inv, zp, lo, hi))


@njit(**_OPTS)
def depthwise3x3(x, x_zp, w, wz, sh, sw, ph, pw, dh, dw, saturate,
                 onednn, xs, mul, add, inv, zp, lo, hi, out):
    """:func:`depthwise2d` for 3x3 kernels, the nine taps of an output value summed in
    registers (about twice as fast)."""
    N, H, W, O = x.shape
    Ho, Wo = out.shape[1], out.shape[2]
    w16 = np.empty((9, O), np.int16)        # raw (saturate) or shifted weights
    wsum = np.zeros(O, np.int32)
    corr = np.zeros(O, np.int32)            # the zero points' terms (saturate)
    any_wz = False
    for o in range(O):
        for t in range(9):
            w16[t, o] = w[t, o] if saturate else w[t, o] - wz[o]
            wsum[o] += w[t, o]
        corr[o] = x_zp * wsum[o] - 9 * x_zp * wz[o]
        if wz[o] != 0:
            any_wz = True
    sums = saturate and any_wz
    xp = _padded(x, ph, pw, x_zp, 0 if saturate else x_zp)
    row = np.empty((Wo, O), np.int32)
    lo16, hi16 = np.int32(-32768), np.int32(32767)
    for n in range(N):
        for oh in range(Ho):
            i0, i1, i2 = oh * sh, oh * sh + dh, oh * sh + 2 * dh
            for ow in range(Wo):
                j0, j1, j2 = ow * sw, ow * sw + dw, ow * sw + 2 * dw
                if saturate:
                    for o in range(O):
                        p01 = np.int32(xp[n, i0, j0, o] * w16[0, o] + \
                            xp[n, i0, j1, o] * w16[1, o])
                        p23 = np.int32(xp[n, i0, j2, o] * w16[2, o] + \
                            xp[n, i1, j0, o] * w16[3, o])
                        p45 = np.int32(xp[n, i1, j1, o] * w16[4, o] + \
                            xp[n, i1, j2, o] * w16[5, o])
                        p67 = np.int32(xp[n, i2, j0, o] * w16[6, o] + \
                            xp[n, i2, j1, o] * w16[7, o])
                        acc = min(max(p01, lo16), hi16) + min(max(p23, lo16), hi16) + \
                            min(max(p45, lo16), hi16) + min(max(p67, lo16), hi16) + \
                            xp[n, i2, j2, o] * w16[8, o] - corr[o]
                        if sums:
                            acc -= wz[o] * (
                                np.int32(xp[n, i0, j0, o]) + xp[n, i0, j1, o] + xp[n, i0, j2, o] +
                                xp[n, i1, j0, o] + xp[n, i1, j1, o] + xp[n, i1, j2, o] +
                                xp[n, i2, j0, o] + xp[n, i2, j1, o] + xp[n, i2, j2, o])
                        row[ow, o] = acc
                else:
                    for o in range(O):
                        acc = xp[n, i0, j0, o] * w16[0, o] + \
                            xp[n, i0, j1, o] * w16[1, o] + \
                            xp[n, i0, j2, o] * w16[2, o] + \
                            xp[n, i1, j0, o] * w16[3, o] + \
                            xp[n, i1, j1, o] * w16[4, o] + \
                            xp[n, i1, j2, o] * w16[5, o] + \
                            xp[n, i2, j0, o] * w16[6, o] + \
                            xp[n, i2, j1, o] * w16[7, o] + \
                            xp[n, i2, j2, o] * w16[8, o]
                        row[ow, o] = acc
            _requant_row(row, onednn, xs, mul, add, inv, zp, lo, hi, out[n, oh])


@njit(**_OPTS)
def binary(a, sa, pa, za, b, sb, pb, zb, multiply, body, inv, ozp, qmin, qmax, out):
    """quantized::add / mul of two 8-bit integer vectors in memory order, the engine's way
    (ember/_kernels/quantized_ops.py): the first ``body`` elements dequantized as
    ``float32(q * scale + premul)`` (one rounding, taken in float64; ``premul`` =
    float32(-zero_point * scale)), added (multiplied) in float32 and quantized as
    ``rint(y * inv) + ozp``; the tail dequantized as ``float32(q - zero_point) * scale`` and
    quantized as ``rint(y * inv + ozp)`` (float32 steps). Saturated to [qmin, qmax]."""
    for i in range(a.size):
        if i < body:
            x = np.float32(np.float64(a[i]) * np.float64(sa) + np.float64(pa))
            y = np.float32(np.float64(b[i]) * np.float64(sb) + np.float64(pb))
        else:
            x = np.float32(np.int32(a[i]) - za) * sa
            y = np.float32(np.int32(b[i]) - zb) * sb
        v = x * y if multiply else x + y
        if i < body:
            q = np.int32(np.rint(v * inv)) + ozp
        else:
            q = np.int32(np.rint(v * inv + np.float32(ozp)))
        out[i] = min(max(q, qmin), qmax)


@njit(**_OPTS)
def quantize_fused(x, inv, zp, qmin, qmax, out):
    """8-bit per-tensor quantization of float32 ``x`` (flat): ``rint(float32(x * inv + zp))``
    with the multiply-add rounded once (taken in float64), NaN to ``qmax``, clamped to
    [qmin, qmax] (ember/_kernels/quantized.quantize)."""
    for i in range(x.size):
        v = np.rint(np.float32(np.float64(x[i]) * inv + zp))
        if v != v:
            v = qmax
        out[i] = np.int32(min(max(v, qmin), qmax))


@njit(**_OPTS)
def max_pool2d_last(x, kh, kw, sh, sw, ph, pw, dh, dw, out):
    """Max pooling of channels-last integers ``x`` (N, H, W, C) into ``out`` (N, Ho, Wo, C):
    each window's positions inside the input (the padding never wins)."""
    N, H, W, C = x.shape
    Ho, Wo = out.shape[1], out.shape[2]
    for n in range(N):
        for oh in range(Ho):
            for ow in range(Wo):
                first = True
                for i in range(kh):
                    ih = oh * sh - ph + i * dh
                    if ih < 0 or ih >= H:
                        continue
                    for j in range(kw):
                        iw = ow * sw - pw + j * dw
                        if iw < 0 or iw >= W:
                            continue
                        if first:
                            for c in range(C):
                                out[n, oh, ow, c] = x[n, ih, iw, c]
                            first = False
                        else:
                            for c in range(C):
                                out[n, oh, ow, c] = max(out[n, oh, ow, c], x[n, ih, iw, c])

