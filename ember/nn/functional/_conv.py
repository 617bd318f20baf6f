"""Convolutions (torch.nn.functional.conv*d, conv_transpose*d)."""
from __future__ import annotations

from ember._kernels.nn_conv import check_conv
from ember._ops.nn_conv import convolution

__all__ = ["conv1d", "conv2d", "conv3d", "conv_tbc", "conv_transpose1d", "conv_transpose2d",
           "conv_transpose3d"]


from ember._dispatch import check_int_list  # noqa: E402
from ember.autograd.profiler import torch_op_range  # noqa: E402

_POSITION = {"stride": 4, "padding": 5, "dilation": 6, "output_padding": 6}


def _int(a, name, fname=None):
    if isinstance(a, float) or (hasattr(a, "is_floating_point") and a.is_floating_point()):
        from ember._legacy import type_name
        raise TypeError(f"{fname or 'conv'}(): argument '{name}' (position "
                        f"{_POSITION.get(name, 4)}) must be tuple of ints, not "
                        f"{type_name(type(a))}")
    return int(a)


def _tuple(v, n, name="value", fname=None):
    if isinstance(v, (list, tuple)):
        check_int_list(fname or f"conv{n}d", name, v)
        v = [_int(a, name, fname) for a in v]
        if len(v) == 1:
            return v * n
        if len(v) != n:
            raise RuntimeError(f"expected {name} to be a single integer value or a list of {n} "
                               f"values to match the convolution dimensions, but got "
                               f"{name}={list(v)}")
        return v
    return [_int(v, name, fname or f"conv{n}d")] * n


def _check_dtypes(input, weight, bias, transposed=False):
    # torch refuses mixed dtypes here (no type promotion) unless autocast casts them
    if input.dtype == weight.dtype and (bias is None or bias.dtype == input.dtype):
        return
    from ember.amp.autocast_mode import is_autocast_enabled
    if is_autocast_enabled("cpu"):
        return
    from ember._dtype import scalar_type_name
    if input.is_quantized and bias is not None:     # torch checks the bias first for these
        raise RuntimeError(f"Input type (c10::{input.dtype.name}) and bias type "
                           f"({scalar_type_name(bias.dtype).lower()}) should be the same")
    c = {"Float": "float", "Double": "double", "Half": "c10::Half", "BFloat16": "c10::BFloat16",
         "Long": "long int", "Int": "int", "Short": "short int", "Char": "signed char",
         "Byte": "unsigned char", "Bool": "bool", "ComplexFloat": "c10::complex<float>",
         "ComplexDouble": "c10::complex<double>"}        # (C++'s type names, as torch's)
    i = scalar_type_name(input.dtype)
    if bias is not None and bias.dtype != input.dtype and (not transposed or
                                                           input.dtype == weight.dtype):
        b = scalar_type_name(bias.dtype)     # (a plain convolution checks its bias first)
        raise RuntimeError(f"Input type ({c.get(i, i)}) and bias type ({c.get(b, b)}) should be "
                           f"the same")
    w = scalar_type_name(weight.dtype)
    if i == "BFloat16" and _onednn_bf16():    # torch's oneDNN path
        raise RuntimeError(f"Input type (CPUBFloat16Type) and weight type (torch.{w}Tensor) "
                           f"should be the same or input should be a MKLDNN tensor and weight "
                           f"is a dense tensor")
    raise RuntimeError(f"expected scalar type {i} but found {w}")


def _onednn_bf16():
    """Does torch run bfloat16 convolutions on oneDNN on this CPU (and so word a dtype
    mismatch as oneDNN does)? It does where the CPU has AVX-512 BW, VL and DQ (or native
    bfloat16 instructions); elsewhere its own kernels check the dtypes."""
    try:
        from numpy._core._multiarray_umath import __cpu_features__ as f
    except ImportError:                                   # pragma: no cover
        return True
    return bool(f.get("AVX512BW") and f.get("AVX512VL") and f.get("AVX512DQ")
                or f.get("AVX512BF16"))


def _check_dim(input, n, name):
    if input.dim() not in (n + 1, n + 2):
        raise RuntimeError(f"Expected {n + 1}D (unbatched) or {n + 2}D (batched) input to "
                           f"{name}, but got input of size: {list(input.shape)}")
    return input.dim() == n + 1


def _conv(input, weight, bias, stride, padding, dilation, groups, n):
    unbatched = _check_dim(input, n, f"conv{n}d")
    _check_dtypes(input, weight, bias)
    if unbatched:
        input = input.unsqueeze(0)
    stride = _tuple(stride, n, "stride")
    dilation = _tuple(dilation, n, "dilation")
    if weight.dim() < 3:
        raise RuntimeError("weight should have at least three dimensions")
    if isinstance(padding, str) and weight.dim() != n + 2 and padding in ("same", "valid"):
        raise RuntimeError(f"Expected {weight.dim()}-dimensional input for {weight.dim()}-"
                           f"dimensional weight{list(weight.shape)}, but got {input.dim()}-"
                           f"dimensional input of size {list(input.shape)} instead")
    if weight.dim() != n + 2:
        # torch's convolution takes its dimensions from the weight: conv2d's [1, 1] stride
        # for a 3-d weight is a list of the wrong length
        k = weight.dim() - 2
        for name, v in (("stride", stride), ("padding", padding), ("dilation", dilation)):
            if isinstance(v, (list, tuple)) and len(v) not in (1, k):
                raise RuntimeError(f"expected {name} to be a single integer value or a list "
                                   f"of {k} values to match the convolution dimensions, but "
                                   f"got {name}={list(v)}")
        raise RuntimeError(f"Expected {k + 2}-dimensional input for {k + 2}-dimensional weight "
                           f"{list(weight.shape)}, but got {input.dim()}-dimensional input of "
                           f"size {list(input.shape)} instead")
    if isinstance(padding, str):
        if padding == "valid":
            padding = [0] * n
        elif padding == "same":
            if any(s != 1 for s in stride):
                raise RuntimeError("padding='same' is not supported for strided convolutions")
            ks = weight.shape[2:]
            total = [dilation[i] * (ks[i] - 1) for i in range(n)]
            left = [t // 2 for t in total]
            extra = [t - 2 * l for t, l in zip(total, left)]
            if any(extra):
                from ember._ops.nn_conv import constant_pad_nd
                from ember._runtime_flags import user_stacklevel, warn_once
                warn_once("conv same padding copy", "Using padding='same' with even kernel "
                          "lengths and odd dilation may require a zero-padded copy of the input "
                          "be created", stacklevel=user_stacklevel() + 1)
                pad = []
                for i in reversed(range(n)):
                    pad += [0, extra[i]]
                input = constant_pad_nd(input, pad)
            padding = left
        else:
            raise RuntimeError(f"Invalid padding string: '{padding}'")
    else:
        padding = _tuple(padding, n, "padding")
    out = convolution(input, weight, bias, stride, padding, dilation, False, [0] * n, groups)
    return out.squeeze(0) if unbatched else out


def _per_axis(output_padding, stride, dilation):
    """torch's 'output_padding_height: 1 ... dilation_width: 1' (a 1-d convolution is a
    2-d one of height 1)."""
    if len(stride) == 1:
        output_padding, stride, dilation = ((0,) + tuple(output_padding), (1,) + tuple(stride),
                                            (1,) + tuple(dilation))
    axes = ("depth", "height", "width")[-len(stride):]
    return " ".join(f"{name}_{axis}: {v}" for name, vals in (
        ("output_padding", output_padding), ("stride", stride), ("dilation", dilation))
        for axis, v in zip(axes, vals))


def _conv_t(input, weight, bias, stride, padding, output_padding, groups, dilation, n):
    unbatched = _check_dim(input, n, f"conv_transpose{n}d")
    if bias is not None and bias.dtype != input.dtype and n < 3:
        bias = bias.to(input.dtype)     # torch's 1d/2d transposed kernels cast the bias
    _check_dtypes(input, weight, bias, transposed=True)
    if unbatched:
        input = input.unsqueeze(0)
    if isinstance(padding, str):
        raise TypeError(f"conv_transpose{n}d(): argument 'padding' (position 5) must be tuple of "
                        f"ints, not str")
    stride, dilation = _tuple(stride, n, "stride"), _tuple(dilation, n, "dilation")
    output_padding = _tuple(output_padding, n, "output_padding")
    if any(p < 0 for p in output_padding):
        raise RuntimeError("negative output_padding is not supported")
    padding = _tuple(padding, n, "padding")
    if any(output_padding[i] >= max(stride[i], dilation[i]) for i in range(n)):
        # the convolution's own checks (channels, groups) come first in torch
        check_conv(input, weight, stride, padding, dilation, groups, True)
        raise RuntimeError("output padding must be smaller than either stride or dilation, but "
                           "got " + _per_axis(output_padding, stride, dilation))
    out = convolution(input, weight, bias, stride, padding, dilation, True, output_padding,
                      groups)
    return out.squeeze(0) if unbatched else out


@torch_op_range("aten::conv1d")
def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """1D convolution over an input of shape (N, C_in, L) or (C_in, L)."""
    return _conv(input, weight, bias, stride, padding, dilation, groups, 1)


@torch_op_range("aten::conv2d")
def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2D convolution over an input of shape (N, C_in, H, W) or (C_in, H, W)."""
    return _conv(input, weight, bias, stride, padding, dilation, groups, 2)


@torch_op_range("aten::conv3d")
def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """3D convolution over an input of shape (N, C_in, D, H, W) or (C_in, D, H, W)."""
    return _conv(input, weight, bias, stride, padding, dilation, groups, 3)


@torch_op_range("aten::conv_transpose1d")
def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """1D transposed convolution ("deconvolution")."""
    return _conv_t(input, weight, bias, stride, padding, output_padding, groups, dilation, 1)


@torch_op_range("aten::conv_transpose2d")
def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """2D transposed convolution ("deconvolution")."""
    return _conv_t(input, weight, bias, stride, padding, output_padding, groups, dilation, 2)


@torch_op_range("aten::conv_transpose3d")
def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """3D transposed convolution ("deconvolution")."""
    return _conv_t(input, weight, bias, stride, padding, output_padding, groups, dilation, 3)


def conv_tbc(input, weight, bias, pad=0):
    """1D convolution in time-batch-channel layout: ``input (T, B, C_in)``, ``weight (K, C_in,
    C_out)``, ``bias (C_out,)``, ``pad`` steps of zeros at both ends (negative: cropped) ->
    ``(T + 2 * pad - K + 1, B, C_out)``; conv1d on permuted views underneath."""
    if isinstance(pad, bool) or not isinstance(pad, int):
        raise TypeError(f"conv_tbc(): argument 'pad' (position 4) must be int, not "
                        f"{type(pad).__name__}")
    if input.dim() != 3:
        raise RuntimeError("Input must have 3 dims: time, batch, in_channel")
    if weight.dim() != 3:
        raise RuntimeError("Weight tensor must have 3 dims: kernel_width, in_channels, "
                           "out_channels.")
    if bias.dim() != 1:
        raise RuntimeError("Bias must be 1-D")
    if bias.size(0) != weight.size(2):
        raise RuntimeError("Bias size must equal dim 2 in the weight tensor (output channels).")
    if input.size(2) != weight.size(1):
        raise RuntimeError("Input dim 2 (input channels) is not == dim 1 in the weight tensor")
    steps = input.size(0) + 2 * pad - weight.size(0) + 1
    if steps < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {steps}: "
                           f"[{steps}, {input.size(1)}, {weight.size(2)}]")
    if pad < 0:
        input, pad = input[-pad:input.size(0) + pad], 0
    extra = int(steps == 0)         # conv1d needs one output step; it is dropped again
    out = conv1d(input.permute(1, 2, 0), weight.permute(2, 1, 0), bias, padding=pad + extra)
    return out.permute(2, 0, 1)[extra:extra + steps]
