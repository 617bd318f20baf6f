"""torch.nn.functional on quantized tensors: what ``F.max_pool2d(qx, ...)``,
``F.hardsigmoid(qx)``, ``F.interpolate(qx, ...)`` run. The functional wrappers
(ember/nn/functional) check their arguments as for float tensors, then hand a quantized input
here (:func:`is_quantized` is their test). Ops torch's QuantizedCPU backend lacks raise its
NotImplementedError naming the ATen op it could not run."""
from __future__ import annotations

import numpy as np

from ember import _dtype
from ember._kernels import quantized_ops as QK
from ember._ops.quantized import (qparams, int_array, from_ints, is_quantized, could_not_run,
                                  float_array, per_tensor)
from ember._ops.quantized_functional import (apply_pointwise, write_into, leaky_relu_fn,
                                             clamp_fn)

__all__ = ["is_quantized", "max_pool", "avg_pool", "adaptive_avg_pool", "hardtanh",
           "leaky_relu", "hardsigmoid", "threshold", "refuse", "bilinear", "channel_shuffle"]

_F32 = np.float32
_PER_TENSOR = ("Expected quantizer->qscheme() == kPerTensorAffine to be true, but got false.  "
               "(Could this error message be improved?  If so, please report an enhancement "
               "request to PyTorch.)")


def _per_tensor(x):
    qp = qparams(x)
    if qp.per_channel:
        raise RuntimeError(_PER_TENSOR)
    return qp


def refuse(aten_name):
    """torch's error for an op the quantized backend does not have."""
    raise could_not_run(aten_name)


def _last(a):
    """(N, C, *S) -> (N, *S, C) view (np.moveaxis without its argument checks)."""
    return a.transpose((0,) + tuple(range(2, a.ndim)) + (1,))


def _first(a):
    """(N, *S, C) -> (N, C, *S) view."""
    return a.transpose((0, a.ndim - 1) + tuple(range(1, a.ndim - 1)))


def _same_params(x, ints):
    return from_ints(ints, x.dtype, qparams(x))


# ------------------------------------------------------------------ pooling

def max_pool(input, kernel, stride, padding, dilation, ceil_mode, return_indices):
    """Max pooling of the integers (the order of values is the order of integers)."""
    n = len(kernel)
    if return_indices:
        refuse(f"max_pool{n}d_with_indices.out")
    _per_tensor(input)
    ints = int_array(input)
    if _channels_last(input):       # pooled in memory order, the result stays channels-last
        ints = QK.max_pool(_last(ints), list(kernel), list(stride),
                           list(padding), list(dilation), bool(ceil_mode), channels_last=True)
        return _same_params(input, _first(ints))
    ints = QK.max_pool(ints, list(kernel), list(stride), list(padding), list(dilation),
                       bool(ceil_mode))
    return _same_params(input, ints)


def avg_pool(input, kernel, stride, padding, ceil_mode, count_include_pad,
             divisor_override=None):
    """Average pooling: the integers' window sums over the count, rounded half to even
    (quantized_ops.avg_pool); the output keeps the input's parameters."""
    qp = _per_tensor(input)
    lo, hi = _dtype.QRANGE[input.dtype]
    last = _channels_last(input)
    ints = QK.avg_pool(int_array(input), list(kernel), list(stride), list(padding),
                       bool(ceil_mode), bool(count_include_pad), divisor_override,
                       qp.zero_point, channel_vectors=last)
    return _same_params(input, _layout(np.clip(ints, lo, hi), last))


def _channels_last(input):
    """A 4-d tensor laid out (N, H, W, C) in memory (and not also plain contiguous)."""
    a = int_array(input)
    return a.ndim == 4 and not a.flags.c_contiguous and \
        QK.memory_order(a) == (0, 2, 3, 1)


def _layout(ints, channels_last):
    """``ints`` (N, C, H, W) stored channels-last when ``channels_last`` (torch's pooling
    keeps its input's layout)."""
    if not channels_last:
        return ints
    return np.ascontiguousarray(ints.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)


def adaptive_avg_pool(input, output_size):
    """Adaptive average pooling (quantized_ops.adaptive_avg_pool); keeps the layout."""
    _per_tensor(input)
    lo, hi = _dtype.QRANGE[input.dtype]
    last = _channels_last(input)
    ints = QK.adaptive_avg_pool(int_array(input), list(output_size), qparams(input).zero_point,
                                channel_vectors=last)
    return _same_params(input, _layout(np.clip(ints, lo, hi), last))


# ------------------------------------------------------------------ activations

def _result(input, result, inplace):
    return write_into(input, result) if inplace else result


def hardtanh(input, min_val, max_val, inplace=False):
    """hardtanh / relu6: the clamp of the values on the input's own parameters."""
    qp = _per_tensor(input)
    return _result(input, apply_pointwise(input, clamp_fn(min_val, max_val), qp.scale,
                                          qp.zero_point), inplace)


def leaky_relu(input, negative_slope, inplace=False):
    qp = _per_tensor(input)
    return _result(input, apply_pointwise(input, leaky_relu_fn(negative_slope), qp.scale,
                                          qp.zero_point), inplace)


def hardsigmoid(input, inplace=False):
    """Fixed output parameters: scale 1/256, zero point at the range's start."""
    from ember._ops.quantized_kernels import fixed_range, _hardsigmoid
    _per_tensor(input)
    return _result(input, fixed_range("hardsigmoid", _hardsigmoid, input), inplace)


def threshold(input, threshold, value, inplace=False):
    if inplace:
        refuse("threshold.out")
    qp = _per_tensor(input)
    t, v = _F32(threshold), _F32(value)
    return apply_pointwise(input, lambda x: np.where(x > t, x, v), qp.scale, qp.zero_point)


# ------------------------------------------------------------------ resampling, shuffles

def bilinear(input, out_size, src_scales, align_corners):
    """Bilinear upsampling of the integers: float32 source positions and weights (torch's
    ``area_pixel_compute_source_index``), ``r = h0 * (w0 * q00 + w1 * q01) + h1 * (...)`` in
    float32, then ``nearbyint(float32(zp) + float32(r - zp))``; the output keeps the input's
    parameters."""
    _per_tensor(input)
    ints = int_array(input)
    x = ints.astype(_F32)
    idx = []
    for axis, (size, out, scale) in enumerate(zip(ints.shape[-2:], out_size, src_scales)):
        i0, i1, l0, l1 = _linear_taps(size, out, scale, align_corners)
        shape = [1] * ints.ndim
        shape[ints.ndim - 2 + axis] = out
        idx.append((i0, i1, l0.reshape(shape), l1.reshape(shape)))
    (h0, h1, hl0, hl1), (w0, w1, wl0, wl1) = idx
    rows0, rows1 = x[..., h0, :], x[..., h1, :]
    top = wl0 * rows0[..., w0] + wl1 * rows0[..., w1]
    bottom = wl0 * rows1[..., w0] + wl1 * rows1[..., w1]
    zp = _F32(qparams(input).zero_point)
    # the zero point comes off in float32 and goes back on in float32 before the rounding
    result = np.rint(zp + ((hl0 * top + hl1 * bottom).astype(_F32) - zp))
    lo, hi = _dtype.QRANGE[input.dtype]
    return _same_params(input, np.clip(result, lo, hi))


def _linear_taps(size, out, scale, align_corners):
    if align_corners:
        ratio = _F32((size - 1) / (out - 1)) if out > 1 else _F32(0)
        src = np.arange(out, dtype=_F32) * ratio
    else:
        ratio = _F32(1.0 / scale) if scale else _F32(size / out)
        src = np.maximum(ratio * (np.arange(out, dtype=_F32) + _F32(0.5)) - _F32(0.5), _F32(0))
    i0 = np.minimum(np.floor(src).astype(np.int64), size - 1)
    i1 = np.minimum(i0 + 1, size - 1)
    l1 = (src - i0).astype(_F32)
    return i0, i1, (_F32(1) - l1).astype(_F32), l1


def channel_shuffle(input, groups):
    """torch's quantized channel_shuffle takes quint8 only."""
    if input.dtype is not _dtype.quint8:
        raise RuntimeError(f"Quantized channel shuffle works only on QUInt8 but got "
                           f"{_dtype.TYPE_NAMES.get(input.dtype.name, input.dtype.name)}")
    ints = int_array(input)
    n, c = ints.shape[0], ints.shape[1]
    rest = ints.shape[2:]
    shuffled = ints.reshape((n, groups, c // groups) + rest).swapaxes(1, 2).reshape(ints.shape)
    return _same_params(input, np.ascontiguousarray(shuffled))


def dequantized(input):
    """The float32 values (a helper for ops that compute in float and quantize back)."""
    return float_array(input)


def requantized(input, values):
    qp = _per_tensor(input)
    return per_tensor(input.dtype, values, qp.scale, qp.zero_point)


_UPSAMPLE = {("nearest", 1): "upsample_nearest1d.out",
             ("nearest-exact", 1): "_upsample_nearest_exact1d.out",
             ("linear", 1): "upsample_linear1d.out", ("bicubic", 2): "upsample_bicubic2d.out",
             ("trilinear", 3): "upsample_trilinear3d.out"}


def interpolate(input, mode, n, out_size, scales, align_corners, antialias):
    """F.interpolate of a quantized tensor in the modes other than 2-d/3-d nearest (those
    gather integers and need nothing here): bilinear is torch's quantized kernel, the rest
    are refused as torch refuses them."""
    if mode == "bilinear" and not antialias:
        return bilinear(input, out_size, scales, align_corners)
    if mode == "bilinear":
        refuse("_upsample_bilinear2d_aa.out")
    refuse(_UPSAMPLE.get((mode, n), f"upsample_{mode}{n}d.out"))
