"""Folding batch norm into the preceding convolution or linear layer (torch.nn.utils.fusion):
an eval-mode BN ``y = (x - mean) / sqrt(var + eps) * gamma + beta`` is linear, so
``bn(conv(x))`` equals a convolution with scaled weights and a shifted bias."""
from __future__ import annotations

import copy

import ember
from ember.nn.parameter import Parameter

__all__ = ["fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval",
           "fuse_linear_bn_weights"]


def fuse_conv_bn_eval(conv, bn, transpose=False):
    """A copy of eval-mode ``conv`` computing ``bn(conv(x))``."""
    if conv.training or bn.training:
        raise AssertionError("Fusion only for eval!")
    fused = copy.deepcopy(conv)
    if bn.running_mean is None or bn.running_var is None:
        raise AssertionError("running statistics are required")
    fused.weight, fused.bias = fuse_conv_bn_weights(
        fused.weight, fused.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight, bn.bias,
        transpose)
    return fused


def fuse_conv_bn_weights(conv_w, conv_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b, transpose=False):
    """(weight, bias) Parameters of the convolution folded with the batch norm's statistics
    ``bn_rm``/``bn_rv`` and affine ``bn_w``/``bn_b`` (either may be None). Weight
    ``(C_out, C_in/g, *k)`` (transposed: ``(C_in, C_out/g, *k)``)."""
    w_dtype = conv_w.dtype
    b_dtype = conv_b.dtype if conv_b is not None else w_dtype
    if conv_b is None:
        conv_b = ember.zeros_like(bn_rm)
    if bn_w is None:
        bn_w = ember.ones_like(bn_rm)
    if bn_b is None:
        bn_b = ember.zeros_like(bn_rm)
    rsqrt = ember.rsqrt(bn_rv + bn_eps)
    shape = ([1, -1] if transpose else [-1, 1]) + [1] * (conv_w.dim() - 2)
    fused_w = (conv_w * (bn_w * rsqrt).reshape(shape)).to(dtype=w_dtype)
    fused_b = ((conv_b - bn_rm) * rsqrt * bn_w + bn_b).to(dtype=b_dtype)
    return Parameter(fused_w, conv_w.requires_grad), Parameter(fused_b, conv_b.requires_grad)


def fuse_linear_bn_eval(linear, bn):
    """A copy of eval-mode ``linear`` computing ``bn(linear(x))``."""
    if linear.training or bn.training:
        raise AssertionError("Fusion only for eval!")
    if linear.out_features != bn.num_features and bn.num_features != 1:
        raise AssertionError("To fuse, linear.out_features must equal bn.num_features or "
                             "bn.num_features must be 1")
    fused = copy.deepcopy(linear)
    fused.weight, fused.bias = fuse_linear_bn_weights(
        fused.weight, fused.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight, bn.bias)
    return fused


def fuse_linear_bn_weights(linear_w, linear_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b):
    """(weight, bias) Parameters of the linear layer folded with the batch norm."""
    if linear_b is None:
        linear_b = ember.zeros_like(bn_rm)
    bn_scale = bn_w * ember.rsqrt(bn_rv + bn_eps)
    fused_w = linear_w * bn_scale.unsqueeze(-1)
    fused_b = (linear_b - bn_rm) * bn_scale + bn_b
    return Parameter(fused_w, linear_w.requires_grad), Parameter(fused_b, linear_b.requires_grad)
