"""Op records for convolution, padding and pooling (kernels in ember/_kernels/nn_conv.py).

``convolution`` is ATen's generic N-d (transposed) convolution; its backward is written
with ``convolution`` and ``_conv_weight_grad`` (both bilinear), so double backward works;
a plain backward (no ``create_graph``) runs the fused ``_conv_backward`` record instead.
Max pooling records return flat spatial indices; their backward scatters with ember ops.
"""
from __future__ import annotations

import numpy as np

from ember._kernels import nn_conv as K
from ember._kernels.util import (as_channels_last, half_in_float32, is_channels_last,
                                 keeps_channels_last)
from ember._ops.registry import defop
from ember.autograd.grad_mode import is_grad_enabled
from ember.autograd.input_link import link_input


def _ntuple(v, n):
    v = list(v) if isinstance(v, (list, tuple)) else [v]
    return v * n if len(v) == 1 and n != 1 else v


def _conv_memory_format(kernel):
    """torch's CPU convolutions answer a channels-last input or weight with a channels-last
    output (the memory-format tutorial's conv -> batch norm -> pool chain stays so)."""
    def run(x, w, *rest):
        out = kernel(x, w, *rest)
        if (is_channels_last(x) or is_channels_last(w)) and out.ndim == x.ndim:
            if out.ndim == 5 and x.shape[0] == 1 and rest and rest[-1] == 1:
                # torch's 3-d convolutions of one sample without groups (another CPU route)
                # answer with a contiguous output
                return np.ascontiguousarray(out)
            out = as_channels_last(out)
        return out
    return run


convolution = defop(
    "convolution(Tensor input, Tensor weight, Tensor? bias, SymInt[] stride, SymInt[] padding, "
    "SymInt[] dilation, bool transposed, SymInt[] output_padding, SymInt groups) -> Tensor",
    _conv_memory_format(half_in_float32(K.convolution)), method=False, out=False,
    saves=("input", "weight"), grad_name="ConvolutionBackward0", autocast="lower")

conv_weight_grad = defop(
    "_conv_weight_grad(Tensor input, Tensor grad_output, SymInt[] weight_size, SymInt[] stride, "
    "SymInt[] padding, SymInt[] dilation, SymInt groups) -> Tensor",
    half_in_float32(K.conv_weight_grad), function=False, method=False, out=False,
    saves=("input", "grad_output"), grad_name="ConvolutionBackwardBackward0")


conv_backward = defop(
    "_conv_backward(Tensor grad_output, Tensor input, Tensor weight, SymInt[] stride, "
    "SymInt[] padding, SymInt[] dilation, SymInt groups, bool[] output_mask) -> "
    "(Tensor grad_input, Tensor grad_weight, Tensor grad_bias)",
    half_in_float32(K.conv_backward), function=False, method=False, out=False,
    differentiable=False)


def _tpad(in_shape, g_shape, ksize, stride, padding, dilation):
    """output_padding making a transposed conv of ``g`` come out with ``in_shape``."""
    n = len(ksize)
    return [in_shape[2 + i] - ((g_shape[2 + i] - 1) * stride[i] - 2 * padding[i]
                               + dilation[i] * (ksize[i] - 1) + 1) for i in range(n)]


def _crop(t, shape):
    """Drop trailing rows a strided conv produced beyond ``shape`` (output_padding rows)."""
    if tuple(t.shape[2:]) == tuple(shape[2:]):
        return t
    idx = (slice(None), slice(None)) + tuple(slice(0, s) for s in shape[2:])
    return t[idx]


@convolution.def_backward
def _(ctx, g, input, weight, bias, stride, padding, dilation, transposed, output_padding,
      groups):
    need = ctx.needs_input_grad
    n = len(ctx.shapes[1]) - 2
    stride, padding, dilation = (_ntuple(v, n) for v in (stride, padding, dilation))
    ksize = ctx.shapes[1][2:]
    gi = gw = gb = None
    if not transposed and not is_grad_enabled() and (need[0] or need[1]):
        # plain backward (no create_graph): one record for all three, the input and weight
        # gradients concurrently where that pays (Note [concurrent conv backward])
        mask = [bool(need[0]), bool(need[1]), len(need) > 2 and bool(need[2])]
        gi, gw, gb = conv_backward(g, input, weight, stride, padding, dilation, groups, mask)
        return tuple(t if m else None for t, m in zip((gi, gw, gb), mask))
    if not transposed:
        if need[0]:
            op = _tpad(ctx.shapes[0], g.shape, ksize, stride, padding, dilation)
            gi = convolution(g, weight, None, stride, padding, dilation, True, op, groups)
        if need[1]:
            gw = conv_weight_grad(input, g, list(ctx.shapes[1]), stride, padding, dilation,
                                  groups)
    else:
        if need[0]:
            gi = _crop(convolution(g, weight, None, stride, padding, dilation, False, [0] * n,
                                        groups), ctx.shapes[0])
        if need[1]:
            gw = conv_weight_grad(g, input, list(ctx.shapes[1]), stride, padding, dilation,
                                  groups)
    if len(need) > 2 and need[2]:
        gb = g.sum([0] + list(range(2, g.ndim)))
    return gi, gw, gb


@conv_weight_grad.def_backward
def _(ctx, gg, input, grad_output, weight_size, stride, padding, dilation, groups):
    need = ctx.needs_input_grad
    n = len(weight_size) - 2
    stride, padding, dilation = (_ntuple(v, n) for v in (stride, padding, dilation))
    ga = gb = None
    if need[0]:
        op = _tpad(ctx.shapes[0], grad_output.shape, weight_size[2:], stride, padding, dilation)
        ga = convolution(grad_output, gg, None, stride, padding, dilation, True, op, groups)
    if need[1]:
        gb = _crop(convolution(input, gg, None, stride, padding, dilation, False, [0] * n, groups),
                   ctx.shapes[1])
    return ga, gb


constant_pad_nd = defop("constant_pad_nd(Tensor self, SymInt[] pad, Scalar value=0) -> Tensor",
                        K.constant_pad_nd, method=False, promote=None,
                        grad_name="ConstantPadNdBackward0")


@constant_pad_nd.def_backward
def _(ctx, g, self, pad, value):
    return constant_pad_nd(g, [-p for p in pad])


# -------------------------------------------------------------------- max pooling

max_pool_with_indices = defop(
    "_max_pool_with_indices(Tensor self, int[] kernel_size, int[] stride, int[] padding, "
    "int[] dilation, bool ceil_mode) -> (Tensor values, Tensor indices)",
    keeps_channels_last(half_in_float32(K.max_pool)), function=False, method=False, out=False,
    promote=None,
    saves=("indices",), grad_name="MaxPool2DWithIndicesBackward0")

adaptive_max_pool = defop(
    "_adaptive_max_pool(Tensor self, int[] output_size) -> (Tensor values, Tensor indices)",
    keeps_channels_last(half_in_float32(K.adaptive_max_pool)), function=False, method=False,
    out=False, promote=None, saves=("indices",), grad_name="AdaptiveMaxPool2DBackward0")


def _scatter_back(g, indices, in_shape, nd):
    """grad of x -> x.flatten(-nd).gather(-1, indices.flatten(-nd)) in ember ops."""
    from ember._ops.factory import zeros
    lead = tuple(in_shape[:len(in_shape) - nd])
    size = 1
    for s in in_shape[len(in_shape) - nd:]:
        size *= s
    z = zeros(lead + (size,), dtype=g.dtype)
    gi = z.scatter_add(-1, indices.reshape(lead + (-1,)), g.reshape(lead + (-1,)))
    return gi.reshape(tuple(in_shape))


max_pool_backward = defop(
    "_max_pool_backward(Tensor grad_output, Tensor indices, int[] input_size, int nd, "
    "bool overlap) -> Tensor",
    half_in_float32(K.max_pool_backward), function=False, method=False, out=False, promote=None,
    saves=("indices",), grad_name="MaxPoolBackwardBackward0")


@max_pool_backward.def_backward
def _(ctx, gg, grad_output, indices, input_size, nd, overlap):
    lead = tuple(input_size[:len(input_size) - nd])
    gs = ctx.shapes[0]
    picked = gg.reshape(lead + (-1,)).gather(-1, indices.reshape(lead + (-1,)))
    return picked.reshape(tuple(gs)), None


@max_pool_with_indices.def_backward
def _(ctx, grads, self, kernel_size, stride, padding, dilation, ceil_mode):
    g = grads[0] if isinstance(grads, tuple) else grads
    nd = len(kernel_size)
    overlap = any(dilation[i] * (kernel_size[i] - 1) + 1 > stride[i] for i in range(nd))
    idx = ctx.result[1]
    if any(dilation[i] > 1 and padding[i] for i in range(nd)):
        # a dilated window can lie in the padding only: its index (torch's first tap) may be
        # past the input; such outputs are -inf and pass no gradient
        size = 1
        for v in ctx.shapes[0][-nd:]:
            size *= v
        out = idx >= size
        if bool(out.any()):
            g, idx, overlap = g.masked_fill(out, 0), idx.masked_fill(out, 0), True
    gi = max_pool_backward(g, idx, list(ctx.shapes[0]), nd, overlap)
    return link_input(gi, ctx, 0, name=f"MaxPool{max(nd, 2)}DWithIndicesBackwardBackward0")


@adaptive_max_pool.def_backward
def _(ctx, grads, self, output_size):
    g = grads[0] if isinstance(grads, tuple) else grads
    nd = len(output_size)
    gi = max_pool_backward(g, ctx.result[1], list(ctx.shapes[0]), nd, True)
    return link_input(gi, ctx, 0, name=f"AdaptiveMaxPool{max(nd, 2)}DBackwardBackward0")


# Composites written in ember ops whose first-order gradient would not depend on their input
# (a convolution with constant weights, a matmul with a constant matrix) run on
# ``_grad_links_input(input)``: an identity whose backward is ``link_input`` (torch's
# formulas for those ops take the input, so under create_graph their gradient has it as an
# input with zero derivative). ``node``: the name of that gradient's node.

grad_links_input = defop(
    "_grad_links_input(Tensor self, str node) -> Tensor", lambda x, node: x.view(),
    function=False, method=False, out=False, promote=None, grad_name="AliasBackward0")


@grad_links_input.def_backward
def _(ctx, g, self, node):
    return link_input(g, ctx, 0, name=node), None


def links_input(x, node):
    """``x`` through ``_grad_links_input`` when it requires grad (grad mode on); else ``x``."""
    if x.requires_grad and is_grad_enabled():
        return grad_links_input(x, node)
    return x


# -------------------------------------------------------------------- average pooling
# The common case (no padding, windows inside the input, no divisor override) as one record
# pair; nn.functional's avg_pool keeps its convolution-based composite for the rest.

avg_pool_exact = defop(
    "_avg_pool(Tensor self, int[] kernel_size, int[] stride) -> Tensor",
    keeps_channels_last(half_in_float32(K.avg_pool_exact)), function=False, method=False, out=False,
    promote=None,
    grad_name="AvgPool2DBackward0")

avg_pool_exact_backward = defop(
    "_avg_pool_backward(Tensor grad_output, int[] input_size, int[] kernel_size, "
    "int[] stride) -> Tensor",
    half_in_float32(K.avg_pool_exact_backward), function=False, method=False, out=False,
    promote=None, grad_name="AvgPoolBackwardBackward0")


@avg_pool_exact.def_backward
def _(ctx, g, self, kernel_size, stride):
    gi = avg_pool_exact_backward(g, list(ctx.shapes[0]), kernel_size, stride)
    name = f"AvgPool{max(len(kernel_size), 2)}DBackwardBackward0"
    return link_input(gi, ctx, 0, name=name), None, None


@avg_pool_exact_backward.def_backward
def _(ctx, gg, grad_output, input_size, kernel_size, stride):
    # linear in grad_output: its VJP is the pooling itself
    return avg_pool_exact(gg, kernel_size, stride), None, None, None


# -------------------------------------------------------------------- torch.* aliases
# torch exposes these nn.functional ops at top level too (torch.conv2d, torch.max_pool2d...).

def _alias(name, fname=None):
    def front(*args, **kwargs):
        from ember.nn import functional as F
        return getattr(F, fname or name)(*args, **kwargs)
    front.__name__ = front.__qualname__ = name
    public(name)(front)


from ember._ops.registry import public  # noqa: E402

for _n in ("conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
           "conv_transpose3d", "max_pool1d", "max_pool2d", "max_pool3d",
           "max_pool1d_with_indices", "avg_pool1d", "adaptive_avg_pool1d",
           "adaptive_max_pool1d", "pixel_shuffle", "pixel_unshuffle", "channel_shuffle",
           "native_channel_shuffle", "cosine_similarity", "pairwise_distance"):
    _alias(_n)


# ATen's grid samplers take the modes as integers (nn.functional.grid_sample's enums)
_GRID_MODES = ("bilinear", "nearest", "bicubic")
_GRID_PADDING = ("zeros", "border", "reflection")


def _grid_sampler(name, nd):
    def front(input, grid, interpolation_mode, padding_mode, align_corners):
        if nd is not None and input.dim() != nd + 2:
            raise RuntimeError(f"{name}(): expected {nd + 2}D input, but got input with "
                               f"sizes {list(input.shape)}")
        if not 0 <= interpolation_mode < 3 or not 0 <= padding_mode < 3:
            raise RuntimeError(f"{name}(): unknown interpolation_mode {interpolation_mode} "
                               f"or padding_mode {padding_mode} (expected 0, 1 or 2)")
        from ember.nn import functional as F
        return F.grid_sample(input, grid, _GRID_MODES[interpolation_mode],
                             _GRID_PADDING[padding_mode], bool(align_corners))
    front.__name__ = front.__qualname__ = name
    public(name)(front)


for _n, _d in (("grid_sampler", None), ("grid_sampler_2d", 2), ("grid_sampler_3d", 3)):
    _grid_sampler(_n, _d)
