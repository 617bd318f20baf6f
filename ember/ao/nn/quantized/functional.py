"""torch.ao.nn.quantized.functional: functional forms on quantized tensors. Each checks its
input as torch does (``ValueError: Input to 'quantized.X' must be quantized!``) and runs the
``quantized::`` record or the nn.functional op that handles quantized tensors; ``linear`` and
``conv1d/2d/3d`` prepack the weight and call ``quantized::linear`` / ``quantized::convNd``."""
from __future__ import annotations

import warnings

import ember
import ember.nn.functional as _F
from ember.ops import quantized as _Q

__all__ = ["avg_pool2d", "avg_pool3d", "adaptive_avg_pool2d", "adaptive_avg_pool3d", "conv1d",
           "conv2d", "conv3d", "interpolate", "linear", "max_pool1d", "max_pool2d", "celu",
           "leaky_relu", "hardtanh", "hardswish", "threshold", "elu", "hardsigmoid", "clamp",
           "upsample", "upsample_bilinear", "upsample_nearest"]


def _require_quantized(input, name):
    if not input.is_quantized:
        raise ValueError(f"Input to '{name}' must be quantized!")


def _tuple(v, n):
    return list(v) if isinstance(v, (list, tuple)) else [v] * n


# ------------------------------------------------------------------ pooling

def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    """2-D average pooling of a quantized (N, C, H, W) or (C, H, W) tensor; the output keeps
    the input's parameters."""
    _require_quantized(input, "quantized.avg_pool2d")
    return _F.avg_pool2d(input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                         divisor_override)


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    _require_quantized(input, "quantized.avg_pool3d")
    return _F.avg_pool3d(input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                         divisor_override)


def adaptive_avg_pool2d(input, output_size):
    _require_quantized(input, "quantized.functional.adaptive_avg_pool2d")
    return _F.adaptive_avg_pool2d(input, output_size)


def adaptive_avg_pool3d(input, output_size):
    _require_quantized(input, "quantized.functional.adaptive_avg_pool3d")
    return _F.adaptive_avg_pool3d(input, output_size)


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    if return_indices:
        raise NotImplementedError("return_indices is not yet implemented!")
    return _F.max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode,
                         return_indices=False)


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    if return_indices:
        raise NotImplementedError("return_indices is not yet implemented!")
    return _F.max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode,
                         return_indices=False)


# ------------------------------------------------------------------ resampling

def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    """Resize a quantized tensor: 'nearest' (2-d, 3-d) and 'bilinear' (2-d)."""
    _require_quantized(input, "quantized.interpolate")
    return _F.interpolate(input, size, scale_factor, mode, align_corners)


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    warnings.warn("nn.quantized.functional.upsample is deprecated. Use "
                  "nn.quantized.functional.interpolate instead.")
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_bilinear(input, size=None, scale_factor=None):
    warnings.warn("nn.quantized.functional.upsample_bilinear is deprecated. Use "
                  "nn.quantized.functional.interpolate instead.")
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


def upsample_nearest(input, size=None, scale_factor=None):
    warnings.warn("nn.quantized.functional.upsample_nearest is deprecated. Use "
                  "nn.quantized.functional.interpolate instead.")
    return interpolate(input, size, scale_factor, mode="nearest")


# ------------------------------------------------------------------ activations

def celu(input, scale, zero_point, alpha=1.0):
    _require_quantized(input, "quantized.celu")
    return _Q.celu(input, scale, zero_point, alpha)


def leaky_relu(input, negative_slope=0.01, inplace=False, scale=None, zero_point=None):
    """With ``scale`` and ``zero_point`` the result is requantized onto them (not in place);
    else it keeps the input's parameters."""
    if scale is not None and zero_point is not None:
        assert not inplace, "Cannot rescale with `inplace`"
        return _Q.leaky_relu(input, negative_slope, False, scale, zero_point)
    return _F.leaky_relu(input, negative_slope, inplace)


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    _require_quantized(input, "quantized.hardtanh")
    return _F.hardtanh(input, min_val, max_val, inplace)


def hardswish(input, scale, zero_point):
    _require_quantized(input, "quantized.hardswish")
    return _Q.hardswish(input, scale, zero_point)


def threshold(input, threshold, value):
    _require_quantized(input, "quantized.threshold")
    if threshold is None:
        raise ValueError("Input to 'threshold' must be specified!")
    if value is None:
        raise ValueError("Input to 'value' must be specified!")
    return _Q.threshold(input, threshold, value)


def elu(input, scale, zero_point, alpha=1.0):
    _require_quantized(input, "quantized.elu")
    return _Q.elu(input, scale, zero_point, alpha)


def hardsigmoid(input, inplace=False):
    _require_quantized(input, "quantized.hardsigmoid")
    return _F.hardsigmoid(input, inplace)


def clamp(input, min_, max_):
    _require_quantized(input, "quantized.clamp")
    return _Q.clamp(input, min_, max_)


# ------------------------------------------------------------------ linear and convolution

def linear(input, weight, bias=None, scale=None, zero_point=None):
    """``y = x W^T + b`` of a quint8 input and a qint8 weight (float bias), quantized onto
    (scale, zero_point), the input's when not given."""
    if scale is None:
        scale = input.q_scale()
    if zero_point is None:
        zero_point = input.q_zero_point()
    packed = _Q.linear_prepack(weight, bias)
    return _Q.linear(input, packed, scale, zero_point)


def _conv(n, input, weight, bias, stride, padding, dilation, groups, padding_mode, scale,
          zero_point, dtype):
    if padding_mode != "zeros":
        raise NotImplementedError("Only zero-padding is supported!")
    if input.dtype is not ember.quint8:
        raise NotImplementedError("Only torch.quint8 is supported for activation tensor!")
    if weight.dtype is not ember.qint8:
        raise NotImplementedError("Only torch.qint8 is supported for weight tensor!")
    if input.dim() != n + 2:
        shape = {1: "(N, C, L)", 2: "(N, C, H, W)", 3: "(N, C, D, H, W)"}[n]
        raise ValueError(f"Input shape must be `{shape}`!")
    prepack = getattr(_Q, f"conv{n}d_prepack")
    packed = prepack(weight, bias, _tuple(stride, n), _tuple(padding, n), _tuple(dilation, n),
                     groups)
    return getattr(_Q, f"conv{n}d")(input, packed, scale, zero_point)


def conv1d(input, weight, bias, stride=1, padding=0, dilation=1, groups=1,
           padding_mode="zeros", scale=1.0, zero_point=0, dtype=None):
    """1-d convolution of a quint8 (N, C, L) input with a qint8 weight (float bias)."""
    return _conv(1, input, weight, bias, stride, padding, dilation, groups, padding_mode,
                 scale, zero_point, dtype)


def conv2d(input, weight, bias, stride=1, padding=0, dilation=1, groups=1,
           padding_mode="zeros", scale=1.0, zero_point=0, dtype=None):
    """2-d convolution of a quint8 (N, C, H, W) input with a qint8 weight (float bias)."""
    return _conv(2, input, weight, bias, stride, padding, dilation, groups, padding_mode,
                 scale, zero_point, dtype)


def conv3d(input, weight, bias, stride=1, padding=0, dilation=1, groups=1,
           padding_mode="zeros", scale=1.0, zero_point=0, dtype=None):
    """3-d convolution of a quint8 (N, C, D, H, W) input with a qint8 weight (float bias)."""
    return _conv(3, input, weight, bias, stride, padding, dilation, groups, padding_mode,
                 scale, zero_point, dtype)
