"""Pooling (torch.nn.functional.*pool*)."""
from __future__ import annotations

import numpy as np

from ember._kernels import nn_conv as _K
from ember._ops.nn_conv import (avg_pool_exact, convolution, constant_pad_nd, links_input,
                                max_pool_with_indices, adaptive_max_pool as _adaptive_max_pool)

__all__ = ["max_pool1d", "max_pool2d", "max_pool3d", "max_pool1d_with_indices",
           "max_pool2d_with_indices", "max_pool3d_with_indices",
           "avg_pool1d", "avg_pool2d", "avg_pool3d",
           "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d",
           "adaptive_max_pool1d", "adaptive_max_pool2d", "adaptive_max_pool3d",
           "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d_with_indices",
           "adaptive_max_pool3d_with_indices",
           "lp_pool1d", "lp_pool2d", "lp_pool3d", "max_unpool1d", "max_unpool2d", "max_unpool3d"]


from ember._dispatch import check_int_list  # noqa: E402
from ember._state import state as _state  # noqa: E402
from ember._ops import quantized_nn as _qnn  # noqa: E402  (quantized inputs)
from ember.autograd.profiler import torch_op_range  # noqa: E402
from ember.autograd.linear_layout import named, spatial_named, torch_node  # noqa: E402
from ember.amp.autocast_mode import (fp32_under_autocast as _fp32_under_autocast,  # noqa: E402
                                     outside_autocast as _outside_autocast)
from ember.nn.functional._vision import (  # noqa: E402  (pools keep channels-last inputs')
    keeps_memory_format as _keeps_memory_format)


def _tuple(v, n, fname=None, name=None, position=None):
    """An int or int sequence as a list of ``n``; with ``fname`` the elements are checked as
    torch's argument parser does (TypeError for a float)."""
    if isinstance(v, (list, tuple)):
        if fname is not None:
            check_int_list(fname, name, v, position)
        v = [int(a) for a in v]
        return v * n if len(v) == 1 else v
    if fname is not None and not hasattr(type(v), "__index__") and not (
            hasattr(v, "dim") and v.dim() == 0 and not v.is_floating_point()):
        from ember._legacy import type_name
        raise TypeError(f"{fname}(): argument '{name}' (position {position}) must be tuple of "
                        f"ints, not {type_name(type(v))}")
    return [int(v)] * n


def _check_input(input, n, name):
    d = input.dim()
    if d in (n + 1, n + 2):
        return
    if name == "avg_pool1d":
        raise RuntimeError(f"Expected 2 to 3 dimensions, but got {d}-dimensional tensor for "
                           f"argument #1 'self' (while checking arguments for avg_pool1d)")
    if name == "max_pool1d":
        raise RuntimeError(f"max_pool1d: Expected 2D or 3D (batch mode) tensor with optional 0 "
                           f"dim batch size for input, but got:{list(input.shape)}")
    if name == "avg_pool2d":
        if d < 3:           # torch reads the size of dim -3 first
            raise IndexError(f"Dimension out of range (expected to be in range of "
                             f"[{-max(d, 1)}, {max(d, 1) - 1}], but got -3)")
        raise RuntimeError(f"Expected 3D or 4D (batch mode) tensor with optional 0 dim batch "
                           f"size for input, but got:{list(input.shape)}")
    raise RuntimeError(f"non-empty {n + 1}D or {n + 2}D (batch mode) tensor expected for input")


def _check_dtype(input, kernel, allow=("float",)):
    """torch's kernels are compiled for some dtypes only: floating ones, plus ``"int64"``
    (average pooling) or ``"integer"`` (max pooling: every integer dtype, not bool); another
    dtype is torch's NotImplementedError naming the ``kernel``."""
    if _qnn.is_quantized(input):
        return
    dt = input.dtype
    if dt.is_floating_point and not dt.is_complex or \
            "int64" in allow and dt.name == "int64" or \
            "integer" in allow and not dt.is_floating_point and not dt.is_complex and \
            dt.name != "bool":
        return
    from ember._dtype import scalar_type_name
    raise NotImplementedError(f'"{kernel}" not implemented for \'{scalar_type_name(dt)}\'')


_WORDS = {2: "two", 3: "three"}


def _check_lengths(n, fname, plain_1d, args):
    """torch's texts for a kernel_size / stride / padding / dilation sequence of the wrong
    length (``args``: (name, value) in torch's order); 2-d and 3-d pools take one value or
    ``n``, 1-d ones exactly one; an empty stride stands for the default."""
    for name, v in args:
        if not isinstance(v, (list, tuple)):
            continue
        L = len(v)
        if name == "stride" and L == 0 or L == 1 or L == n:
            continue
        if n == 1 and plain_1d:
            what = {"kernel_size": "an int, list of ints or", "dilation": "an int, list of "
                    "ints or", "padding": "an int, list of ints, or",
                    "stride": "None, an int, list of ints, or"}[name]
            raise RuntimeError(f"max_pool1d() {name} must be {what} tuple of ints of size 1 "
                               f"but got size {L}")
        if n == 1:
            raise RuntimeError(f"{fname}() argument '{name}' should contain one int (got {L})")
        either = "" if fname == "avg_pool3d" else "either "
        if name == "dilation":
            raise RuntimeError(f"{fname}: dilation must be either a single int, or a tuple of "
                               f"{_WORDS[n]} ints")
        omitted = "omitted, " if name == "stride" else ""
        raise RuntimeError(f"{fname}: {name} must {either}be {omitted}a single int, or a tuple "
                           f"of {_WORDS[n]} ints")


def _check_positive_sizes(input, n, fname, plain_1d):
    """torch's pools refuse an input with an empty non-batch dimension (its texts)."""
    shape = list(input.shape)
    if all(shape[d] for d in range(max(len(shape) - n - 1, 0), len(shape))):
        return
    if n == 3:
        where = "max_pool3d_with_indices_out_cpu_template" if fname == "max_pool3d" else \
            "avg_pool3d"
        raise RuntimeError(f"{where}(): Expected input's non-batch dimensions to have positive "
                           f"length, but input has a shape of {shape} and non-batch dimension "
                           f"0 has length zero!")
    if plain_1d:
        raise RuntimeError(f"max_pool1d: Expected 2D or 3D (batch mode) tensor with optional 0 "
                           f"dim batch size for input, but got:{shape}")
    if n == 1:                          # (torch pools the input unsqueezed to 2-d)
        shape = shape[:-1] + [1] + shape[-1:]
    raise RuntimeError(f"Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size "
                       f"for input, but got:{shape}")


def _pool_args(n, kernel_size, stride, padding, dilation=1, name=None, fname=None):
    """(kernel, stride, padding, dilation) tuples, checked in torch's order; ``name``
    (max_pool1d) selects its own messages, other 1-d pools read as 2-d with a height 1;
    ``fname`` names the function in argument-type errors."""
    if fname is not None:
        _check_lengths(n, fname, name == "max_pool1d",
                       (("kernel_size", kernel_size), ("stride", stride), ("padding", padding),
                        ("dilation", dilation)))
    k = _tuple(kernel_size, n, fname, "kernel_size", 2)
    s = k if stride is None or (isinstance(stride, (list, tuple)) and len(stride) == 0) \
        else _tuple(stride, n, fname, "stride", 3)
    p = _tuple(padding, n, fname, "padding", 4)
    d = _tuple(dilation, n, fname, "dilation", 5)
    if name == "max_pool1d":
        if k[0] <= 0:
            raise RuntimeError(f"max_pool1d() kernel_size must be greater than zero, but got "
                               f"{k[0]}")
        if s[0] <= 0:
            raise RuntimeError(f"max_pool1d() stride must be greater than zero, but got {s[0]}")
    letters, kk, ss = ("THW"[3 - n:], k, s) if n > 1 else ("HW", (1, *k), (1, *s))
    if any(v == 0 for v in ss):
        raise RuntimeError("stride should not be zero")
    if any(v <= 0 for v in kk):
        raise RuntimeError("kernel size should be greater than zero, but got " +
                           " ".join(f"k{c}: {v}" for c, v in zip(letters, kk)))
    if any(v < 0 for v in ss):
        raise RuntimeError("stride should be greater than zero, but got " +
                           " ".join(f"d{c}: {v}" for c, v in zip(letters, ss)))
    return k, s, p, d


def _check_pad(n, k, p, d, plain_1d):
    """torch's padding bounds: half the dilated kernel, then half the kernel itself (only
    a dilated max pool reaches that one); max_pool1d without indices has its own check."""
    if plain_1d:
        if p[0] > k[0] // 2:
            raise RuntimeError(f"max_pool1d() padding should be at most half of kernel size, "
                               f"but got padding={p[0]} and kernel_size={k[0]}")
        return
    for i in range(n):
        if p[i] > ((k[i] - 1) * d[i] + 1) // 2:
            raise RuntimeError(f"pad should be at most half of effective kernel size, but got "
                               f"pad={p[i]}, kernel_size={k[i]} and dilation={d[i]}")
    if all(p[i] <= k[i] // 2 for i in range(n)):
        return
    msg = "pad should be smaller than or equal to half of kernel size, but got "
    if n == 3:
        raise RuntimeError(msg + f"kT: {k[0]} kW: {k[2]} kH: {k[1]} padT: {p[0]} padW: {p[2]} "
                           f"padH: {p[1]}")
    kh, kw, ph, pw = (k[0], k[1], p[0], p[1]) if n == 2 else (1, k[0], 0, p[0])
    raise RuntimeError(msg + f"padW = {pw}, padH = {ph}, kW = {kw}, kH = {kh}")


def _check_out(input, n, k, s, p, d, ceil_mode, avg=False, plain_1d=False):
    S = input.shape[-n:]
    if any(v < 0 for v in p):
        if plain_1d:
            raise RuntimeError(f"max_pool1d() padding must be non-negative, but got {p[0]}")
        raise RuntimeError(f"pad must be non-negative, but got pad: {min(p)}")
    _check_pad(n, k, p, d, plain_1d)
    if any(v <= 0 for v in d):      # (after the padding checks, as torch)
        if plain_1d:
            raise RuntimeError(f"max_pool1d() dilation must be greater than zero, but got "
                               f"{d[0]}")
        letters, dd = ("THW"[3 - n:], d) if n > 1 else ("HW", (1, *d))
        raise RuntimeError("dilation should be greater than zero, but got " +
                           " ".join(f"dilation{c}: {v}" for c, v in zip(letters, dd)))
    out = [_K.pool_out_size(S[i], k[i], s[i], p[i], d[i], ceil_mode) for i in range(n)]
    if any(o <= 0 for o in out):
        lead = input.shape[-n - 1] if input.dim() > n else 1
        raise RuntimeError(f"Given input size: ({'x'.join(str(v) for v in (lead,) + tuple(S))}). "
                           f"Calculated output size: "
                           f"({'x'.join(str(v) for v in [lead] + out)}). Output size is too small")
    return out


def _max_pool(input, n, kernel_size, stride, padding, dilation, ceil_mode, return_indices):
    _check_input(input, n, f"max_pool{n}d")
    k, s, p, d = _pool_args(n, kernel_size, stride, padding, dilation,
                            None if return_indices else f"max_pool{n}d",
                            f"max_pool{n}d")
    _check_positive_sizes(input, n, f"max_pool{n}d", n == 1 and not return_indices)
    _check_out(input, n, k, s, p, d, ceil_mode, plain_1d=n == 1 and not return_indices)
    if n == 1 and not return_indices:
        _check_dtype(input, "max_pool1d_impl")
    else:
        _check_dtype(input, f"max_pool{max(n, 2)}d", ("integer",))
    if _qnn.is_quantized(input):
        return _qnn.max_pool(input, k, s, p, d, ceil_mode, return_indices)
    vals, idx = max_pool_with_indices(input, k, s, p, d, bool(ceil_mode))
    return (vals, idx) if return_indices else vals


@torch_op_range("aten::max_pool1d")
@named("SqueezeBackward1")
def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """1D max pooling; ``return_indices`` also returns the argmax positions."""
    return _max_pool(input, 1, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


@torch_op_range("aten::max_pool2d")
def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """2D max pooling; ``return_indices`` also returns the (flat H*W) argmax positions."""
    return _max_pool(input, 2, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


@torch_op_range("aten::max_pool3d")
@named("MaxPool3DWithIndicesBackward0")
@_fp32_under_autocast
def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """3D max pooling; ``return_indices`` also returns the (flat D*H*W) argmax positions."""
    return _max_pool(input, 3, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


@named("SqueezeBackward1")
def max_pool1d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode=False, return_indices=False):
    return _max_pool(input, 1, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool2d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode=False, return_indices=False):
    return _max_pool(input, 2, kernel_size, stride, padding, dilation, ceil_mode, True)


@named("MaxPool3DWithIndicesBackward0")
@_fp32_under_autocast
def max_pool3d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode=False, return_indices=False):
    return _max_pool(input, 3, kernel_size, stride, padding, dilation, ceil_mode, True)


def _divisor(L, k, s, p, O, count_include_pad):
    start = np.arange(O) * s - p
    end = np.minimum(start + k, L + p)
    size = end - start
    if count_include_pad:
        return size
    return np.minimum(end, L) - np.maximum(start, 0)


def _avg_pool(input, n, kernel_size, stride, padding, ceil_mode, count_include_pad,
              divisor_override=None):
    import ember
    _check_input(input, n, f"avg_pool{n}d")
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    k, s, p, _ = _pool_args(n, kernel_size, stride, padding, fname=f"avg_pool{n}d")
    _check_positive_sizes(input, n, f"avg_pool{n}d", False)
    out = _check_out(input, n, k, s, p, [1] * n, ceil_mode, avg=True)
    S = list(input.shape[-n:])
    if n == 3 and any(S[i] < k[i] for i in range(n)):
        # avg_pool3d (unlike 1d/2d) wants the unpadded input at least as large as the kernel
        raise RuntimeError(f"avg_pool3d(): input image (T: {S[0]} H: {S[1]} W: {S[2]}) "
                           f"smaller than kernel size (kT: {k[0]} kH: {k[1]} kW: {k[2]})")
    _check_dtype(input, "avg_pool3d_out_frame" if n == 3 else "avg_pool2d", ("int64",))
    if _qnn.is_quantized(input):
        return _qnn.avg_pool(input, k, s, p, ceil_mode, count_include_pad, divisor_override)
    if not any(p) and not divisor_override and input.dtype.is_floating_point and \
            all((out[i] - 1) * s[i] + k[i] <= S[i] for i in range(n)):
        return avg_pool_exact(input, k, s)        # windows inside the input: one record
    lead = tuple(input.shape[:-n])
    # torch's avg_pool backward takes the input: under create_graph the gradient depends on it
    x = links_input(input, f"AvgPool{max(n, 2)}DBackwardBackward0")
    x = x.reshape((-1, 1) + tuple(S))
    pad = []
    for i in reversed(range(n)):
        extra = max(0, (out[i] - 1) * s[i] + k[i] - (S[i] + 2 * p[i]))
        pad += [p[i], p[i] + extra]
    if any(pad):
        x = constant_pad_nd(x, pad)
    w = ember.ones((1, 1) + tuple(k), dtype=input.dtype)
    y = convolution(x, w, None, s, [0] * n, [1] * n, False, [0] * n, 1)
    y = y.reshape(lead + tuple(out))
    # integer inputs keep their dtype: torch divides the integer sum (C++ truncation)
    integral = not (input.dtype.is_floating_point or input.dtype.is_complex)
    if divisor_override:
        return y.div(divisor_override, rounding_mode="trunc") if integral \
            else y / divisor_override
    div = np.ones((), dtype=np.int64)
    for i in range(n):
        div = np.multiply.outer(div, _divisor(S[i], k[i], s[i], p[i], out[i],
                                              count_include_pad))
    div = ember.tensor(div, dtype=input.dtype)
    return y.div(div, rounding_mode="trunc") if integral else y / div


@torch_op_range("aten::avg_pool1d")
@named("SqueezeBackward1")
def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True):
    """1D average pooling."""
    return _avg_pool(input, 1, kernel_size, stride, padding, ceil_mode, count_include_pad)


@torch_op_range("aten::avg_pool2d")
@named("AvgPool2DBackward0")
@_keeps_memory_format
def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    """2D average pooling."""
    return _avg_pool(input, 2, kernel_size, stride, padding, ceil_mode, count_include_pad,
                     divisor_override)


@torch_op_range("aten::avg_pool3d")
@named("AvgPool3DBackward0")
@_fp32_under_autocast
def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    """3D average pooling."""
    return _avg_pool(input, 3, kernel_size, stride, padding, ceil_mode, count_include_pad,
                     divisor_override).contiguous()     # (torch's: whatever the input's format)


def _out_size(input, n, output_size, fname=None):
    if fname is not None and isinstance(output_size, (list, tuple)):
        check_int_list(fname, "output_size", [1 if v is None else v for v in output_size])
    o = list(output_size) if isinstance(output_size, (list, tuple)) else [output_size] * n
    avg = fname is None or "avg" in fname
    if len(o) != n:                     # (torch's texts; a 2-d/3-d pool takes n values)
        if n == 1:
            raise RuntimeError(f"{fname}() argument 'output_size' should contain one int "
                               f"(got {len(o)})")
        if avg:
            raise RuntimeError(f"{fname}: output_size must be {n}")
        raise RuntimeError(f"{fname}(): internal error: output_size.size() must be {n}")
    S = input.shape[-n:]
    out = [S[i] if o[i] is None else int(o[i]) for i in range(n)]
    if any(v < 0 for v in out):
        if not avg:                     # torch allocates the output first
            shape = list(input.shape[:-n]) + [1] * (n == 1) + out
            raise RuntimeError(f"Trying to create tensor with negative dimension "
                               f"{next(v for v in out if v < 0)}: {shape}")
        # (a 1-d pool is torch's 2-d one on a height of 1; its 3-d text has no space before
        # the last value)
        vals = ([1] if n == 1 else []) + out
        text = ", ".join(str(v) for v in vals) if n < 3 else \
            f"{vals[0]}, {vals[1]},{vals[2]}"
        raise RuntimeError(f"adaptive_avg_pool{max(n, 2)}d: elements of output_size must be "
                           f"greater than or equal to 0 but received {{{text}}}")
    return out


def _check_nonempty(input, name, first):
    # torch: the dims from ``first`` on must be non-empty (the batch dim may be 0)
    for d in range(first, input.dim()):
        if input.shape[d] == 0:
            raise RuntimeError(f"{name}(): Expected input to have non-zero size for non-batch "
                               f"dimensions, but input has sizes {list(input.shape)} with "
                               f"dimension {d} being empty")


@_outside_autocast
def _adaptive_avg(input, n, output_size):
    import ember
    if input.dim() not in (n + 1, n + 2):
        raise RuntimeError(f"adaptive_avg_pool{n}d(): Expected {n + 1}D or {n + 2}D tensor, but "
                           f"got {list(input.shape)}")
    _check_nonempty(input, f"adaptive_avg_pool{n}d", input.dim() - n)
    out = _out_size(input, n, output_size, f"adaptive_avg_pool{n}d")
    _check_dtype(input, "adaptive_avg_pool3d_cpu" if n == 3 else "adaptive_avg_pool2d")
    if _qnn.is_quantized(input):
        return _qnn.adaptive_avg_pool(input, out)
    if _state.modes:        # a trace records torch's one op, not the composite below
        from ember.jit._trace import record_whole
        traced = record_whole(f"aten::adaptive_avg_pool{n}d",
                              globals()[f"adaptive_avg_pool{n}d"], input, list(out),
                              python_function=n > 1)     # torch's 1-d one is builtin
        if traced is not None:
            return traced
    half = input.dtype in (ember.float16, ember.bfloat16)   # float32 math, one rounding
    x = input.float() if half else input
    if any(o != 1 for o in out):        # (torch takes a mean for all-ones: no link there)
        x = links_input(x, f"AdaptiveAvgPool{max(n, 2)}DBackwardBackward0")
    for i in range(n):
        d = x.dim() - n + i
        L = x.shape[d]
        start, end = _K.adaptive_ranges(L, out[i])
        A = np.zeros((L, out[i]))
        for j in range(out[i]):
            A[start[j]:end[j], j] = 1.0 / (end[j] - start[j])
        x = ember.matmul(x.movedim(d, -1), ember.tensor(A, dtype=x.dtype)).movedim(-1, d)
    return x.to(input.dtype) if half else x


@torch_op_range("aten::adaptive_avg_pool1d")
@named("SqueezeBackward1")
def adaptive_avg_pool1d(input, output_size):
    """1D adaptive average pooling."""
    return _adaptive_avg(input, 1, output_size)


@torch_op_range("aten::adaptive_avg_pool2d")
@torch_node(lambda out, x, output_size, *a, **k: "MeanBackward1" if all(
    n == 1 for n in out.shape[-2:]) else "AdaptiveAvgPool2DBackward0")
@_keeps_memory_format
def adaptive_avg_pool2d(input, output_size):
    """2D adaptive average pooling; ``None`` in ``output_size`` keeps that input size."""
    return _adaptive_avg(input, 2, output_size)


@torch_op_range("aten::adaptive_avg_pool3d")
@torch_node(lambda out, x, output_size, *a, **k: "MeanBackward1" if all(
    n == 1 for n in out.shape[-3:]) else "AdaptiveAvgPool3DBackward0")
@_fp32_under_autocast
def adaptive_avg_pool3d(input, output_size):
    """3D adaptive average pooling."""
    return _adaptive_avg(input, 3, output_size)


def _adaptive_max(input, n, output_size, return_indices):
    if input.dim() not in (n + 1, n + 2):
        raise RuntimeError(f"adaptive_max_pool{n}d(): Expected {n + 1}D or {n + 2}D tensor, but "
                           f"got {list(input.shape)}")
    _check_nonempty(input, f"adaptive_max_pool{n}d", 1)
    _check_dtype(input, "adaptive_max_pool3d_cpu" if n == 3 else "adaptive_max_pool2d")
    vals, idx = _adaptive_max_pool(input, _out_size(input, n, output_size,
                                                    f"adaptive_max_pool{n}d"))
    if n == 3:          # torch's 3-d kernel returns contiguous results for any input format
        vals, idx = vals.contiguous(), idx.contiguous()
    return (vals, idx) if return_indices else vals


@torch_op_range("aten::adaptive_max_pool1d")
@named("SqueezeBackward1")
def adaptive_max_pool1d(input, output_size, return_indices=False):
    """1D adaptive max pooling."""
    return _adaptive_max(input, 1, output_size, return_indices)


@torch_op_range("aten::adaptive_max_pool2d")
@named("AdaptiveMaxPool2DBackward0")
def adaptive_max_pool2d(input, output_size, return_indices=False):
    """2D adaptive max pooling."""
    return _adaptive_max(input, 2, output_size, return_indices)


@torch_op_range("aten::adaptive_max_pool3d")
@named("AdaptiveMaxPool3DBackward0")
@_fp32_under_autocast
def adaptive_max_pool3d(input, output_size, return_indices=False):
    """3D adaptive max pooling."""
    return _adaptive_max(input, 3, output_size, return_indices)


def adaptive_max_pool1d_with_indices(input, output_size, return_indices=False):
    return _adaptive_max(input, 1, output_size, True)


def adaptive_max_pool2d_with_indices(input, output_size, return_indices=False):
    return _adaptive_max(input, 2, output_size, True)


@_fp32_under_autocast
def adaptive_max_pool3d_with_indices(input, output_size, return_indices=False):
    return _adaptive_max(input, 3, output_size, True)


def _lp_pool(input, n, norm_type, kernel_size, stride, ceil_mode):
    import ember
    k = _tuple(kernel_size, n)
    if norm_type == float("inf"):       # the limit: torch takes the max of the magnitudes
        return globals()[f"max_pool{n}d"](input.abs(), kernel_size, stride,
                                          ceil_mode=ceil_mode)
    out = _avg_pool(input.pow(norm_type), n, kernel_size, stride, 0, ceil_mode, True)
    return (ember.sign(out) * ember.relu(ember.abs(out))).mul(int(np.prod(k))).pow(
        1.0 / norm_type)


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """1D power-average pooling."""
    return _lp_pool(input, 1, norm_type, kernel_size, stride, ceil_mode)


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """2D power-average pooling."""
    return _lp_pool(input, 2, norm_type, kernel_size, stride, ceil_mode)


def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """3D power-average pooling."""
    return _lp_pool(input, 3, norm_type, kernel_size, stride, ceil_mode)


def _max_unpool(input, indices, n, kernel_size, stride, padding, output_size):
    import ember
    from ember._determinism import alert_not_deterministic
    k, s, p, _ = _pool_args(n, kernel_size, stride, padding)
    S = input.shape[-n:]
    default = [(S[i] - 1) * s[i] - 2 * p[i] + k[i] for i in range(n)]
    if output_size is None:
        out = default
    else:
        given = output_size
        if len(given) == n + 2 or (len(given) == n + 1 and input.dim() == n + 1):
            given = given[-n:]
        if len(given) != n:
            raise ValueError(f"output_size should be a sequence containing {n} or {n + 2} "
                             f"elements, but it has a length of '{len(given)}'")
        out = [int(v) for v in given]
        for i in range(n):
            lo, hi = default[i] - s[i], default[i] + s[i]
            if not lo < out[i] < hi:        # (the sequence as given: a tuple, list or Size)
                raise ValueError(f'invalid output_size "{given}" (dim {i} must be between '
                                 f'{lo} and {hi})')
    rank = input.dim() + (n == 1)       # (a 1-d unpool is torch's 2-d one, unsqueezed)
    m = max(n, 2)
    if rank not in (m + 1, m + 2):
        raise RuntimeError(f"Input to max_unpooling{m}d should be a {m + 1}d or {m + 2}d Tensor, "
                           f"but got a tensor with {rank} dimensions.")
    if indices.dtype != ember.int64:
        from ember._dtype import scalar_type_name
        raise RuntimeError(f"elements in indices should be type int64 but got: "
                           f"{scalar_type_name(indices.dtype)}")
    if tuple(indices.shape) != tuple(input.shape):      # (a 1-d pool shown as 2-d, as torch)
        pad = [1] if n == 1 else []
        raise RuntimeError(f"Expected shape of indices to be same as that of the input tensor "
                           f"({list(input.shape) + pad}) but got indices tensor with shape: "
                           f"{list(indices.shape) + pad}")
    lead = tuple(input.shape[:-n])
    size = int(np.prod(out))
    if size == 0:       # torch checks no index when the output is empty
        return ember.zeros(lead + tuple(out), dtype=input.dtype)
    idx = indices.reshape(lead + (-1,))
    if idx.numel() and (int(idx.max()) >= size or int(idx.min()) < 0):
        bad = int(idx.max()) if int(idx.max()) >= size else int(idx.min())
        raise RuntimeError(f"Found an invalid max index: {bad} (output volumes are of size "
                           f"{'x'.join(map(str, out + [1] if n == 1 else out))})")
    alert_not_deterministic(f"max_unpooling{max(n, 2)}d_forward_out")   # torch's CPU alert
    z = ember.zeros(lead + (size,), dtype=input.dtype)
    return z.scatter(-1, idx, input.reshape(lead + (-1,))).reshape(lead + tuple(out))


@_fp32_under_autocast
def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """Partial inverse of max_pool1d."""
    return _max_unpool(input, indices, 1, kernel_size, stride, padding, output_size)


@_fp32_under_autocast
@_keeps_memory_format
def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """Partial inverse of max_pool2d."""
    return _max_unpool(input, indices, 2, kernel_size, stride, padding, output_size)


@_fp32_under_autocast
def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """Partial inverse of max_pool3d."""
    return _max_unpool(input, indices, 3, kernel_size, stride, padding, output_size)
