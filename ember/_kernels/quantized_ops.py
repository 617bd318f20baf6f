"""NumPy kernels of quantized elementwise, pooling and resampling ops, with the rounding of
torch's x86 engine (found by running torch on random inputs with half-way ties; the tests in
tests/quantization/test_qops_*.py hold the evidence).

The elementwise kernels (sigmoid, leaky_relu, hardtanh, elu, quantized::add/mul/sigmoid...)
run in memory order, a vectorized body over whole vectors (64 8-bit or 16 32-bit lanes with
AVX-512) and a scalar tail over the rest, which round differently:

- body: dequantize with ``fma(q, scale, -zero_point * scale)``, apply the function in float32,
  quantize with ``nearbyint(y * float32(1/scale))`` and the zero point added as an integer
  (``quantized.dequantize_vec`` / ``quantize_vec``); qint32 adds the zero point in float32
  before rounding; quantized::hardswish takes ``1/scale`` in float64;
- tail: dequantize as ``float32(q - zero_point) * scale``, apply the function, quantize with
  ``nearbyint(y * float32(1/scale) + float32(zero_point))`` (two roundings).

Pooling and means over the trailing dimensions average the integers themselves:
``nearbyint(sum / count)`` (half to even), the zero point never subtracted; channels-last
2-d and all 3-d pooling run over channel vectors with their own rules (see the functions).
"""
from __future__ import annotations

import numpy as np

from ember._kernels import compiled
from ember._kernels.quantized import dequantize, dequantize_vec, quantize_vec, inverse_scale

_F32 = np.float32


def _vector_width():
    """8-bit elements in one vector register of the engine: 64 with AVX-512 (what torch picks
    when the CPU has avx512f/bw/vl/dq), else 32 (AVX2)."""
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((line.split(":", 1)[1].split() for line in f
                          if line.startswith("flags")), [])
    except OSError:
        return 32
    return 64 if {"avx512f", "avx512bw", "avx512vl", "avx512dq"} <= set(flags) else 32


VECTOR_WIDTH = _vector_width()


def pointwise(ints, scale, zero_point, fn, out_scale, out_zero_point, qmin, qmax, storage,
              inverse_in_double=False):
    """``quantize(fn(dequantize(ints)))`` as the engine's elementwise kernels round (module
    docstring): ``fn`` maps a float32 array to a float32 array of the same shape. ``ints`` is
    read in memory order; returns integers of ``storage`` shaped like ``ints``."""
    return pointwise_n([(ints, scale, zero_point)], fn, out_scale, out_zero_point, qmin, qmax,
                       storage, inverse_in_double)


def memory_order(a):
    """The permutation of ``a``'s axes in which the engine walks it: (0, 2, 3, 1) for a
    channels-last (N, C, H, W) array, (0, 2, 3, 4, 1) for a channels-last 3-d one (torch
    keeps those layouts), else the logical order (other layouts get contiguous outputs, and
    the walk follows the output)."""
    if a.ndim in (4, 5) and not a.flags.c_contiguous:
        perm = (0,) + tuple(range(2, a.ndim)) + (1,)
        if a.transpose(perm).flags.c_contiguous:
            return perm
    return tuple(range(a.ndim))


def pointwise_n(inputs, fn, out_scale, out_zero_point, qmin, qmax, storage,
                inverse_in_double=False):
    """:func:`pointwise` of several quantized operands ``[(ints, scale, zero_point), ...]``
    (broadcast together): ``fn(x0, x1, ...)`` on their float32 values (quantized::add,
    mul...). The elements are taken in the first operand's memory order (so the scalar tail
    is the last elements in memory), and the result has its layout. ``inverse_in_double``:
    the body multiplies by ``float32(1.0 / scale)`` computed in float64 (quantized::hardswish)
    instead of the float32 quotient."""
    arrays = [np.asarray(i) for i, _, _ in inputs]
    if any(a.shape != arrays[0].shape for a in arrays):
        arrays = np.broadcast_arrays(*arrays)
    first = np.asarray(inputs[0][0])
    order = memory_order(first) if first.shape == arrays[0].shape else tuple(range(first.ndim))
    views = [a.transpose(order) for a in arrays]
    shape = views[0].shape
    flats = [np.ascontiguousarray(v).reshape(-1) for v in views]
    n = flats[0].size
    width = VECTOR_WIDTH // np.dtype(storage).itemsize      # 64 8-bit or 16 32-bit lanes
    body = n - n % width
    out = _compiled_binary(fn, flats, inputs, body, out_scale, out_zero_point, qmin, qmax,
                           storage, inverse_in_double)
    if out is not None:
        return out.reshape(shape).transpose(np.argsort(order))
    out = np.empty(n, storage)
    if body:
        xs = [dequantize_vec(f[:body], s, z) for f, (_, s, z) in zip(flats, inputs)]
        y = np.asarray(fn(*xs), _F32)
        if np.dtype(storage).itemsize == 4:     # qint32 vectors add the zero point in float32
            v = np.rint(y * inverse_scale(out_scale) + _F32(out_zero_point)).astype(np.int64)
            out[:body] = np.clip(v, qmin, qmax).astype(storage)
        elif inverse_in_double:
            v = np.rint(y * _F32(1.0 / float(out_scale))).astype(np.int64) + int(out_zero_point)
            out[:body] = np.clip(v, qmin, qmax).astype(storage)
        else:
            out[:body] = quantize_vec(y, out_scale, out_zero_point, qmin, qmax, storage)
    if body < n:
        xs = [dequantize(f[body:], s, z) for f, (_, s, z) in zip(flats, inputs)]
        y = np.asarray(fn(*xs), _F32) * inverse_scale(out_scale) + _F32(out_zero_point)
        # saturated as int64: float32 bounds of qint32 would round past its range
        out[body:] = np.clip(np.rint(y).astype(np.int64), qmin, qmax).astype(storage)
    return out.reshape(shape).transpose(np.argsort(order))


def _compiled_binary(fn, flats, inputs, body, out_scale, out_zero_point, qmin, qmax, storage,
                     inverse_in_double):
    """quantized::add / mul of two 8-bit tensors with per-tensor parameters in one compiled
    pass (compiled/quantized.binary: the same steps as below); None where it does not
    apply or the compiled kernels are off."""
    if fn is not np.add and fn is not np.multiply or len(flats) != 2 or inverse_in_double \
            or np.dtype(storage).itemsize != 1:
        return None
    kernels = compiled.kernels()
    a, b = flats
    if kernels is None or a.dtype != b.dtype or a.dtype != np.dtype(storage) or \
            any(np.ndim(s) or np.ndim(z) for _, s, z in inputs):
        return None
    (_, sa, za), (_, sb, zb) = inputs
    xa, xb = (abs(float(s)) * (256 + abs(int(z))) for s, z in ((sa, za), (sb, zb)))
    if not (xa * xb if fn is np.multiply else xa + xb) * float(inverse_scale(out_scale)) \
            < 2.0 ** 30:        # (the results' integers fit int32: no overflow to mimic)
        return None
    pre = [_F32(-int(z)) * _F32(s) for s, z in ((sa, za), (sb, zb))]
    out = np.empty(a.size, storage)
    kernels.binary(a, _F32(sa), pre[0], np.int32(za), b, _F32(sb), pre[1], np.int32(zb),
                   fn is np.multiply, body, _F32(inverse_scale(out_scale)),
                   np.int32(out_zero_point), np.int32(qmin), np.int32(qmax), out)
    return out


def integer_mean(sums, counts):
    """The average of integer windows as pooling and trailing-dimension means take it:
    ``nearbyint(sum / count)``, half to even (exact: int64 sums, float64 quotient)."""
    return np.rint(np.asarray(sums, np.int64) / np.asarray(counts, np.float64))


# ---------------------------------------------------------------- pooling windows

def pool_windows(size, kernel, stride, padding, dilation, ceil_mode):
    """Output length of a pooling dimension and each output's window (start, end) over the
    padded input, torch's rule (a last window that starts in the right padding is dropped)."""
    span = dilation * (kernel - 1) + 1
    num = size + 2 * padding - span
    out = (num + (stride - 1 if ceil_mode else 0)) // stride + 1
    if ceil_mode and (out - 1) * stride >= size + padding:
        out -= 1
    return max(out, 0)


def max_pool(ints, kernel, stride, padding, dilation, ceil_mode, channels_last=False):
    """Max pooling of an integer array over its last ``len(kernel)`` dimensions (with
    ``channels_last``: over the dimensions before the last one, (N, *S, C)). The integers
    are pooled as they are (their order is the values' order); padding is the dtype's
    smallest integer, which never wins (a window always holds an input)."""
    nd = len(kernel)
    first = ints.ndim - nd - (1 if channels_last else 0)
    sizes = ints.shape[first:first + nd]
    outs = [pool_windows(sizes[i], kernel[i], stride[i], padding[i], dilation[i], ceil_mode)
            for i in range(nd)]
    pad_hi = [max(0, (outs[i] - 1) * stride[i] + dilation[i] * (kernel[i] - 1) + 1 -
                  sizes[i] - padding[i]) for i in range(nd)]
    if channels_last and nd == 2 and ints.ndim == 4 and ints.size and min(outs) > 0 and \
            compiled.kernels() is not None:
        out = np.empty((ints.shape[0],) + tuple(outs) + (ints.shape[-1],), ints.dtype)
        compiled.kernels().max_pool2d_last(np.ascontiguousarray(ints), *kernel, *stride,
                                           *padding, *dilation, out)
        return out
    x = ints
    if any(padding) or any(pad_hi):
        widths = [(0, 0)] * ints.ndim
        for i in range(nd):
            widths[first + i] = (padding[i], pad_hi[i])
        x = np.pad(ints, widths, constant_values=np.iinfo(ints.dtype).min)
    # one dimension at a time, the outermost first (a window's max is the max over its rows
    # of each row's max): kernel[i] - 1 passes each instead of prod(kernel) - 1 in all, the
    # first ones over long contiguous runs
    for i in range(nd):
        lead = (slice(None),) * (first + i)
        taps = [lead + (slice(o * dilation[i], o * dilation[i] + (outs[i] - 1) * stride[i] + 1,
                              stride[i]),) for o in range(kernel[i])]
        if len(taps) == 1:
            x = x[taps[0]]
            continue
        result = np.maximum(x[taps[0]], x[taps[1]])
        for sl in taps[2:]:
            np.maximum(result, x[sl], out=result)
        x = result
    return np.array(x) if np.may_share_memory(x, ints) else x


def avg_pool(ints, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override,
             zero_point, channel_vectors=False):
    """Average pooling over the last ``len(kernel)`` dimensions, torch's windows: the integer
    sum of the window's inputs, plus ``zero_point`` for each padding position inside it when
    ``count_include_pad`` (the padding stands for the value 0), over the count (the window's
    part inside the padded input, or inside the input), :func:`integer_mean`. With
    ``divisor_override`` d: ``nearbyint(float32(sum - n * zp) * float32(1/d) + float32(zp))``
    (n the positions summed), float32 throughout."""
    nd = len(kernel)
    lead = ints.shape[:-nd]
    sizes = ints.shape[-nd:]
    outs = [pool_windows(sizes[i], kernel[i], stride[i], padding[i], 1, ceil_mode)
            for i in range(nd)]
    sums = np.zeros(lead + tuple(outs), np.int64)
    padded_count = np.ones(tuple(outs), np.int64)
    real_count = np.ones(tuple(outs), np.int64)
    for i in range(nd):
        starts = np.arange(outs[i]) * stride[i] - padding[i]
        ends = np.minimum(starts + kernel[i], sizes[i] + padding[i])
        shape = [1] * nd
        shape[i] = outs[i]
        padded_count = padded_count * (ends - starts).reshape(shape)
        real_count = real_count * (np.minimum(ends, sizes[i]) -
                                   np.maximum(starts, 0)).reshape(shape)
    padded = np.pad(ints.astype(np.int64), [(0, 0)] * len(lead) +
                    [(padding[i], padding[i] + kernel[i]) for i in range(nd)])
    for offs in np.ndindex(*kernel):
        sl = tuple(slice(offs[i], offs[i] + (outs[i] - 1) * stride[i] + 1, stride[i])
                   for i in range(nd))
        sums += padded[(Ellipsis,) + sl]
    if count_include_pad:
        sums += (padded_count - real_count) * int(zero_point)
        counts = padded_count
    else:
        counts = real_count
    if divisor_override:     # float32((sum - n*zp)) * float32(1/d) + float32(zp), rounded
        centered = (sums - counts * int(zero_point)).astype(_F32)
        return np.rint(centered * (_F32(1) / _F32(divisor_override)) + _F32(zero_point))
    result = integer_mean(sums, counts)
    if (nd == 3 or channel_vectors) and ints.ndim >= nd + 1:
        # 3-d pooling, and 2-d pooling of channels-last tensors, run over channels in vectors
        # of int32 lanes: whole vectors average the values q - zp (rounded half to even, zp
        # added back), the remaining channels the raw q
        lanes = VECTOR_WIDTH // 4
        axis = ints.ndim - nd - 1
        body = ints.shape[axis] - ints.shape[axis] % lanes
        sl = (slice(None),) * axis + (slice(0, body),)
        result[sl] = integer_mean(sums[sl] - counts * int(zero_point), counts) + zero_point
    return result


def centered_mean(sums, counts, zero_point):
    """Adaptive pooling's channel-vector average: ``nearbyint(fma(sum - n*zp, float32(1/n),
    zp))``, one rounding of the multiply-add in float32 (the zero point inside the rounding,
    unlike avg_pool's)."""
    centered = np.asarray(sums, np.int64) - np.asarray(counts, np.int64) * int(zero_point)
    inv = (_F32(1) / np.asarray(counts, _F32)).astype(np.float64)
    return np.rint((centered * inv + int(zero_point)).astype(_F32))


def adaptive_avg_pool(ints, output_size, zero_point=0, channel_vectors=False):
    """Adaptive average pooling over the last ``len(output_size)`` dimensions: window
    ``[floor(i*n/o), ceil((i+1)*n/o))``, its integer sum times ``float32(1/count)``, rounded
    half to even. ``channel_vectors`` (channels-last input): whole vectors of channels take
    :func:`centered_mean`."""
    nd = len(output_size)
    sizes = ints.shape[-nd:]
    if all(o == 1 for o in output_size):        # one window: a plain sum in memory order
        x = ints.sum(axis=tuple(range(ints.ndim - nd, ints.ndim)), dtype=np.int64,
                     keepdims=True)
    else:
        x = ints.astype(np.int64)
    for i in range(nd if x.shape[-nd:] != tuple(output_size) else 0):
        axis = x.ndim - nd + i
        n, o = sizes[i], output_size[i]
        parts = []
        for j in range(o):
            start, end = (j * n) // o, -((-(j + 1) * n) // o)
            parts.append(np.take(x, np.arange(start, end), axis=axis).sum(axis, keepdims=True))
        x = np.concatenate(parts, axis=axis)
    counts = np.ones((), np.int64)
    for i in range(nd):
        n, o = sizes[i], output_size[i]
        c = np.array([-((-(j + 1) * n) // o) - (j * n) // o for j in range(o)])
        shape = [1] * nd
        shape[i] = o
        counts = counts * c.reshape(shape)
    result = np.rint(x.astype(_F32) * (_F32(1) / counts.astype(_F32)))
    if channel_vectors and ints.ndim >= nd + 1:
        lanes = VECTOR_WIDTH // 4
        axis = ints.ndim - nd - 1
        body = ints.shape[axis] - ints.shape[axis] % lanes
        sl = (slice(None),) * axis + (slice(0, body),)
        result[sl] = centered_mean(x[sl], counts, zero_point)
    return result
