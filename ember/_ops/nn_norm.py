"""Fused normalisation records (batch norm, layer norm) and torch's top-level norm fronts
(``torch.batch_norm``, ``torch.layer_norm``, ``torch.group_norm``, ``torch.instance_norm``,
``torch.rms_norm``). The rest of the family lives in ember/nn/functional/_norm.py.

The records' backward rules recompute the statistics in ember ops, so they are
differentiable again (double backward).
"""
from __future__ import annotations

from ember._kernels import nn_norm as K
from ember._kernels.util import keeps_channels_last
from ember._ops.registry import OpDef, public
from ember.autograd.grad_mode import is_grad_enabled

batch_norm_impl = OpDef(
    "_batch_norm_impl(Tensor input, Tensor? weight, Tensor? bias, Tensor? running_mean, "
    "Tensor? running_var, bool training, float momentum, float eps) -> "
    "(Tensor output, Tensor mean, Tensor var)",
    keeps_channels_last(K.batch_norm), promote=None, autocast="fp32",
    saves=("input", "weight", "running_mean", "running_var", "mean", "var"),
    grad_name="NativeBatchNormBackward0")

batch_norm_backward = OpDef(
    "_batch_norm_backward(Tensor grad_output, Tensor input, Tensor? weight, Tensor? mean, "
    "Tensor? var, bool training, float eps) -> (Tensor grad_input, Tensor grad_weight, "
    "Tensor grad_bias)",
    K.batch_norm_backward, promote=None, grad_name="NativeBatchNormBackwardBackward0")

layer_norm_impl = OpDef(
    "_layer_norm_impl(Tensor input, int[] normalized_shape, Tensor? weight, Tensor? bias, "
    "float eps) -> Tensor",
    K.layer_norm, promote=None, autocast="fp32", saves=("input", "weight", "bias"),
    grad_name="NativeLayerNormBackward0")

layer_norm_backward = OpDef(
    "_layer_norm_backward(Tensor grad_out, Tensor input, int[] normalized_shape, "
    "Tensor? weight, float eps, bool need_input=True, bool need_weight=True, "
    "bool need_bias=True) -> (Tensor grad_input, Tensor grad_weight, Tensor grad_bias)",
    K.layer_norm_backward, promote=None, differentiable=False)


def _cshape(ndim, C):
    return (1, C) + (1,) * (ndim - 2)


@batch_norm_impl.def_backward
def _(ctx, grads, input, weight, bias, running_mean, running_var, training, momentum, eps):
    g = grads[0] if isinstance(grads, (tuple, list)) else grads
    if g is None:
        return (None,) * 8
    n = ctx.needs_input_grad
    x = input
    if not is_grad_enabled():
        # plain backward (no create_graph): one fused kernel; in training it reuses the
        # forward's batch statistics (recomputed for half types, kept in float32 there)
        if training:
            _, mean, var = ctx.result
            if x.dtype.itemsize < 4:
                mean = var = None
        else:
            mean, var = running_mean, running_var
        gx, gwt, gb = batch_norm_backward(g, x, weight, mean, var, training, eps)
        return (gx if n[0] else None, gwt if n[1] and weight is not None else None,
                gb if n[2] else None, None, None, None, None, None)
    axes = [0] + list(range(2, x.dim()))
    cs = _cshape(x.dim(), x.shape[1])
    if training:
        mean = x.mean(axes, keepdim=True)
        xc = x - mean
        invstd = ((xc * xc).mean(axes, keepdim=True) + eps).rsqrt()
    else:
        xc = x - running_mean.reshape(cs)
        invstd = (running_var.reshape(cs) + eps).rsqrt()
    xhat = xc * invstd
    gw = g * weight.reshape(cs) if weight is not None else g
    gx = None
    if n[0]:
        if training:
            gx = invstd * (gw - gw.mean(axes, keepdim=True)
                           - xhat * (gw * xhat).mean(axes, keepdim=True))
        else:
            gx = gw * invstd
    gwt = (g * xhat).sum(axes) if n[1] and weight is not None else None
    gb = g.sum(axes) if n[2] else None
    return gx, gwt, gb, None, None, None, None, None


@layer_norm_impl.def_backward
def _(ctx, g, input, normalized_shape, weight, bias, eps):
    n = ctx.needs_input_grad
    x = input
    if not is_grad_enabled():
        # plain backward (no create_graph): one fused kernel (statistics recomputed)
        gx, gwt, gb = layer_norm_backward(g, x, normalized_shape, weight, eps, bool(n[0]),
                                          bool(n[2] and weight is not None),
                                          bool(n[3] and bias is not None))
        return (gx if n[0] else None, None,
                gwt if n[2] and weight is not None else None,
                gb if n[3] and bias is not None else None, None)
    k = len(normalized_shape)
    axes = list(range(x.dim() - k, x.dim()))
    lead = list(range(0, x.dim() - k))
    mean = x.mean(axes, keepdim=True)
    xc = x - mean
    invstd = ((xc * xc).mean(axes, keepdim=True) + eps).rsqrt()
    xhat = xc * invstd
    gw = g * weight if weight is not None else g
    gx = None
    if n[0]:
        gx = invstd * (gw - gw.mean(axes, keepdim=True)
                       - xhat * (gw * xhat).mean(axes, keepdim=True))
    gwt = gb = None
    if n[2] and weight is not None:
        gwt = (g * xhat).sum(lead) if lead else g * xhat
    if n[3] and bias is not None:
        gb = g.sum(lead) if lead else g
    return gx, None, gwt, gb, None


# -------------------------------------------------------------------- torch.* fronts

def _F():
    from ember.nn import functional
    return functional


@public("batch_norm")
def batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps,
               cudnn_enabled):
    return _F().batch_norm(input, running_mean, running_var, weight, bias, training,
                           momentum, eps)


@public("layer_norm")
def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-05,
               cudnn_enable=True):
    return _F().layer_norm(input, normalized_shape, weight, bias, eps)


@public("group_norm")
def group_norm(input, num_groups, weight=None, bias=None, eps=1e-05, cudnn_enabled=True):
    return _F().group_norm(input, num_groups, weight, bias, eps)


@public("instance_norm")
def instance_norm(input, weight, bias, running_mean, running_var, use_input_stats, momentum,
                  eps, cudnn_enabled):
    return _F().instance_norm(input, running_mean, running_var, weight, bias,
                              use_input_stats, momentum, eps)


@public("rms_norm")
def rms_norm(input, normalized_shape, weight=None, eps=None):
    return _F().rms_norm(input, normalized_shape, weight, eps)
