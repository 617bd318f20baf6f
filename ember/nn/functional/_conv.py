"""Convolutions (torch.nn.functional.conv*d, conv_transpose*d)."""
from __future__ import annotations

from ember._ops.nn_conv import convolution

__all__ = ["conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
           "conv_transpose3d"]


def _tuple(v, n, name="value"):
    if isinstance(v, (list, tuple)):
        v = [int(a) for a in v]
        if len(v) == 1:
            return v * n
        if len(v) != n:
            raise RuntimeError(f"expected {name} to be a single integer value or a list of {n} "
                               f"values to match the convolution dimensions, but got "
                               f"{name}={list(v)}")
        return v
    return [int(v)] * n


def _check_dim(input, n, name):
    if input.dim() not in (n + 1, n + 2):
        raise RuntimeError(f"Expected {n + 1}D (unbatched) or {n + 2}D (batched) input to "
                           f"{name}, but got input of size: {list(input.shape)}")
    return input.dim() == n + 1


def _conv(input, weight, bias, stride, padding, dilation, groups, n):
    unbatched = _check_dim(input, n, f"conv{n}d")
    if unbatched:
        input = input.unsqueeze(0)
    stride = _tuple(stride, n, "stride")
    dilation = _tuple(dilation, n, "dilation")
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


def _conv_t(input, weight, bias, stride, padding, output_padding, groups, dilation, n):
    unbatched = _check_dim(input, n, f"conv_transpose{n}d")
    if unbatched:
        input = input.unsqueeze(0)
    if isinstance(padding, str):
        raise TypeError(f"conv_transpose{n}d(): argument 'padding' (position 5) must be tuple of "
                        f"ints, not str")
    out = convolution(input, weight, bias, _tuple(stride, n, "stride"),
                      _tuple(padding, n, "padding"), _tuple(dilation, n, "dilation"), True,
                      _tuple(output_padding, n, "output_padding"), groups)
    return out.squeeze(0) if unbatched else out


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """1D convolution over an input of shape (N, C_in, L) or (C_in, L)."""
    return _conv(input, weight, bias, stride, padding, dilation, groups, 1)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2D convolution over an input of shape (N, C_in, H, W) or (C_in, H, W)."""
    return _conv(input, weight, bias, stride, padding, dilation, groups, 2)


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """3D convolution over an input of shape (N, C_in, D, H, W) or (C_in, D, H, W)."""
    return _conv(input, weight, bias, stride, padding, dilation, groups, 3)


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """1D transposed convolution ("deconvolution")."""
    return _conv_t(input, weight, bias, stride, padding, output_padding, groups, dilation, 1)


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """2D transposed convolution ("deconvolution")."""
    return _conv_t(input, weight, bias, stride, padding, output_padding, groups, dilation, 2)


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """3D transposed convolution ("deconvolution")."""
    return _conv_t(input, weight, bias, stride, padding, output_padding, groups, dilation, 3)
