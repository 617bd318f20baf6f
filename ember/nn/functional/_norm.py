"""Normalisation functions (torch.nn.functional): batch_norm and layer_norm are fused
records (ember/_ops/nn_norm.py); the others are composites of ember ops."""
from __future__ import annotations

import numpy as np

import ember
from ember._dtype import scalar_type_name
from ember._ops.nn_norm import batch_norm_impl, layer_norm_impl
from ember.autograd.profiler import torch_op_range
from ember.autograd.linear_layout import named, spatial_named, torch_node
from ember.nn.functional._vision import keeps_memory_format

__all__ = ["batch_norm", "instance_norm", "layer_norm", "group_norm", "rms_norm",
           "local_response_norm", "normalize"]


def _verify_batch_size(size):
    n = size[0]
    for s in size[2:]:
        n *= s
    if n == 1:
        raise ValueError(f"Expected more than 1 value per channel when training, got input "
                         f"size {size if isinstance(size, list) else ember.Size(size)}")


def _numel(shape):
    n = 1
    for s in shape:
        n *= s
    return n


# the op torch's QuantizedCPU backend lacks when a float normalization gets a quantized input
_QUANTIZED_REFUSAL = {"batch_norm": "native_batch_norm", "LayerNormKernelImpl":
                      "native_batch_norm", "GroupNormKernelImpl": "var_mean.correction"}


def _check_floating(input, kernel, complex_ok=False):
    if input.is_quantized and kernel in _QUANTIZED_REFUSAL:
        from ember._ops.quantized import could_not_run
        raise could_not_run(_QUANTIZED_REFUSAL[kernel])
    if not (input.is_floating_point() or complex_ok and input.is_complex()):
        raise NotImplementedError(f'"{kernel}" not implemented for '
                                  f"'{scalar_type_name(input.dtype)}'")


def _update_running(running, new, momentum, unbiased_factor=1.0, count=None):
    """running = (1 - momentum) running + momentum new; a float16 ``running`` is updated in
    float32 and rounded once (torch's kernels), from a float32 ``new``."""
    with ember.no_grad():
        if running.dtype == ember.float16:
            new = new.detach().float()
            if unbiased_factor != 1.0:
                new = new * unbiased_factor
            running.copy_(running.float() * (1 - momentum) + new * momentum)
            return
        if new.dtype != running.dtype:         # (under no_grad: nothing is recorded)
            new = new.to(running.dtype)
        if count is not None and running.dtype == ember.float32:
            # Note [float32 batch-norm statistics]: torch's kernel updates in float32, the
            # mean as momentum * mean + (1 - momentum) * running, the variance (count > 1)
            # as fma(momentum, unbiased, (1 - momentum) * running), unbiased in float32
            # (1 - momentum too: 1 - float32(0.6), not float32(0.4))
            import numpy
            from ember.autograd.graph import bump_version
            f32 = numpy.float32
            mom = f32(momentum)
            value = new._data
            dest = running._data
            kept = dest * (f32(1) - mom)
            if count > 1:
                value = value * f32(count) / f32(count - 1)
                value = numpy.float64(mom) * value + kept
            else:
                value = value * mom + kept
            if type(dest) is numpy.ndarray and dest.flags.writeable:
                numpy.copyto(dest, value, casting="unsafe")
                bump_version(running)              # (torch: one version per update)
            else:
                running.copy_(ember.tensor(value, dtype=ember.float32))
            return
        if unbiased_factor != 1.0:
            new = new * unbiased_factor
        running.mul_(1 - momentum).add_(new * momentum)


@torch_op_range("aten::batch_norm")
def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False,
               momentum=0.1, eps=1e-05):
    if training:
        _verify_batch_size(tuple(input.shape))
    if training and eps <= 0.0:
        raise ValueError(f"batch_norm eps must be positive during training, but got {eps}")
    elif eps < 0.0:
        raise ValueError(f"batch_norm eps must be non-negative, but got {eps}")
    if training and (running_mean is None) != (running_var is None):
        raise ValueError("running_mean and running_var must either both be None or neither "
                         "be None")
    if not training:
        for name, t in (("running_mean", running_mean), ("running_var", running_var)):
            if t is None:
                raise RuntimeError(f"{name} must be defined in evaluation mode")
    _check_floating(input, "batch_norm")
    if input.dim() == 1 and input.numel() == 0:
        # torch's empty 1-D fast path: empty result, running stats untouched
        if weight is not None or bias is not None:
            raise IndexError("select(): index 0 out of range for tensor of size [0] at "
                             "dimension 0")
        return input.clone()
    if input.dim() < 2:
        if running_mean is None:
            raise IndexError(f"Dimension out of range (expected to be in range of "
                             f"[-{max(input.dim(), 1)}, {max(input.dim(), 1) - 1}], but got 1)")
        raise RuntimeError(f"running_mean should contain 0 elements not "
                           f"{running_mean.numel()}")
    C = input.shape[1]
    for name, t in (("running_mean", running_mean), ("running_var", running_var),
                    ("weight", weight), ("bias", bias)):          # torch checks in this order
        if t is not None and t.numel() != C:
            raise RuntimeError(f"{name} should contain {C} elements not {t.numel()}")
    _check_batch_norm_dtypes(input, weight, bias, running_mean, running_var, training)
    if training:
        out, mean, var = batch_norm_impl(input, weight, bias, None, None, True, momentum, eps)
        if running_mean is not None and input.numel():     # an empty batch leaves them
            n = input.numel() // C
            if input.dtype in (ember.float16, ember.bfloat16):    # the float32 statistics
                with ember.no_grad():
                    x32 = input.detach().float()
                    dims = [0] + list(range(2, input.dim()))
                    mean, var = x32.mean(dims), x32.var(dims, correction=0)
            _update_running(running_mean, mean, momentum, count=1)
            _update_running(running_var, var, momentum, n / max(n - 1, 1), count=n)
        return out
    out, _, _ = batch_norm_impl(input, weight, bias, running_mean, running_var, False,
                                momentum, eps)
    return out


@torch_op_range("aten::instance_norm")
@named("ViewBackward0")
def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None,
                  use_input_stats=True, momentum=0.1, eps=1e-05):
    if use_input_stats:
        size = tuple(input.shape)
        n = 1
        for s in size[2:]:
            n *= s
        if n == 1:
            raise ValueError(f"Expected more than 1 spatial element when training, got input "
                             f"size {ember.Size(size)}")
    if not use_input_stats:
        if running_mean is None or running_var is None:
            raise RuntimeError("Expected running_mean and running_var to be defined when "
                               "use_input_stats is false")
        return batch_norm(input, running_mean, running_var, weight, bias, False, momentum, eps)
    if (running_mean is None) != (running_var is None):
        raise ValueError("running_mean and running_var must either both be None or neither "
                         "be None")
    _check_floating(input, "batch_norm")
    N, C = input.shape[0], input.shape[1]
    y = _normalize_groups(input, C, weight, bias, eps)
    if running_mean is not None or running_var is not None:
        with ember.no_grad():
            d = input.detach().reshape((N, C, _numel(input.shape[2:])))
            if d.dtype == ember.float16:
                d = d.float()
            if running_mean is not None:
                _update_running(running_mean, d.mean(2).mean(0), momentum)
            if running_var is not None:
                _update_running(running_var, d.var(2, correction=1).mean(0), momentum)
    return y


@torch_op_range("aten::layer_norm")
def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-05):
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    normalized_shape = [int(s) for s in normalized_shape]
    if not normalized_shape:
        raise RuntimeError("Expected normalized_shape to be at least 1-dimensional, i.e., "
                           "containing at least one element, but got normalized_shape = []")
    if weight is not None and not input.is_floating_point():
        raise RuntimeError("mixed dtype (CPU): all inputs must share same datatype.")
    _check_floating(input, "LayerNormKernelImpl")
    _check_mixed_dtypes(input, weight, bias)
    return layer_norm_impl(input, normalized_shape, weight, bias, eps)


def _check_batch_norm_dtypes(input, weight, bias, running_mean, running_var, training):
    """torch's CPU batch-norm dtype rule, by experiment: the parameters are "mixed" when the
    first given of weight, bias, running_mean, running_var differs from the input's dtype;
    mixed parameters must all be float32 and the input float16/bfloat16, else every one
    must have the input's dtype (checked running statistics first in training, weight and
    bias first in evaluation)."""
    params = (weight, bias, running_mean, running_var)
    first = next((p for p in params if p is not None), None)
    if first is None:
        return
    if first.dtype != input.dtype:
        if any(p is not None and p.dtype != ember.float32 for p in params):
            raise RuntimeError("mixed dtype (CPU): expect parameter to have scalar type of Float")
        if input.dtype not in (ember.float16, ember.bfloat16):
            raise RuntimeError("mixed dtype (CPU): all inputs must share same datatype.")
        return
    order = (running_mean, running_var, weight, bias) if training else params
    for p in order:
        if p is not None and p.dtype != input.dtype:
            from ember._dtype import scalar_type_name
            raise RuntimeError(f"expected scalar type {scalar_type_name(input._data.dtype)} "
                               f"but found {scalar_type_name(p._data.dtype)}")


def _check_mixed_dtypes(input, *params):
    """torch's CPU mixed-dtype rule of the norms: parameters of the input's dtype, or float32
    ones for a half / bfloat16 input."""
    for p in params:
        if p is None or p.dtype == input.dtype or \
                p.dtype == ember.float32 and input.dtype in (ember.float16, ember.bfloat16):
            continue
        if p.dtype == ember.float32:
            raise RuntimeError("mixed dtype (CPU): all inputs must share same datatype.")
        raise RuntimeError("mixed dtype (CPU): expect parameter to have scalar type of Float")


def _normalize_groups(input, groups, weight, bias, eps):
    """(N, C, *) normalized over each of ``groups`` channel groups per sample, then scaled
    and shifted per channel. A half / bfloat16 input is computed in float32 and rounded once
    to its dtype, as torch's CPU kernels (float32 parameters allowed there)."""
    _check_mixed_dtypes(input, weight, bias)
    low = input.dtype in (ember.float16, ember.bfloat16)
    x = input.float() if low else input
    N, C = x.shape[0], x.shape[1]
    flat = x.reshape((N, groups, _numel(x.shape[1:]) // groups))
    y = layer_norm_impl(flat, [flat.shape[-1]], None, None, eps).reshape(x.shape)
    cs = (1, C) + (1,) * (x.dim() - 2)
    if weight is not None:
        y = y * (weight.float() if low else weight).reshape(cs)
    if bias is not None:
        y = y + (bias.float() if low else bias).reshape(cs)
    return y.to(input.dtype) if low else y


@torch_op_range("aten::group_norm")
@named("NativeGroupNormBackward0")
@keeps_memory_format
def group_norm(input, num_groups, weight=None, bias=None, eps=1e-05):
    if input.dim() < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received "
                           f"{input.dim()}")
    N, C = input.shape[0], input.shape[1]
    _verify_batch_size([N * C // num_groups, num_groups] + list(input.shape[2:]))
    if C % num_groups:
        raise RuntimeError(f"Expected number of channels in input to be divisible by "
                           f"num_groups, but got input of shape {list(input.shape)} and "
                           f"num_groups={num_groups}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and (t.dim() != 1 or t.numel() != C):
            # (torch names the weight's shape in the bias message too: [0] without a weight)
            shown = list(weight.shape) if weight is not None else [0]
            raise RuntimeError(f"Expected {name} to be a vector of size equal to the number of "
                               f"channels in input, but got {name} of shape {shown} and input "
                               f"of shape {list(input.shape)}")
    _check_floating(input, "GroupNormKernelImpl")
    return _normalize_groups(input, num_groups, weight, bias, eps)


def rms_norm(input, normalized_shape, weight=None, eps=None):
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    k = len(normalized_shape)
    if input.dim() < k:
        raise ValueError(f"Input tensor must have at least {k} dimensions, but got "
                         f"{input.dim()}")
    if tuple(input.shape[input.dim() - k:]) != tuple(normalized_shape):
        raise RuntimeError(     # torch's rms_norm text: no ", " after the "*"
            f"Given normalized_shape={list(normalized_shape)}, expected input with shape "
            f"[*{', '.join(str(s) for s in normalized_shape)}], but got input of size"
            f"{list(input.shape)}")
    _check_floating(input, "rms_norm", complex_ok=True)
    if weight is not None and weight.dtype != input.dtype:
        # torch's fused kernel wants one dtype; it warns once a process and computes anyway
        from ember._runtime_flags import user_stacklevel, warn_once
        from ember.nn.functional._attention import _c_type
        warn_once("rms_norm dtype mismatch",
                  f"Mismatch dtype between input and weight: input dtype = "
                  f"{_c_type(input.dtype)}, weight dtype = {_c_type(weight.dtype)}, Cannot "
                  f"dispatch to fused implementation.", stacklevel=user_stacklevel() + 1)
    out_dtype = input.dtype                 # whatever the weight's dtype, as torch
    if input.dtype in (ember.float16, ember.bfloat16):     # torch: float32 math, one rounding
        input = input.float()                              # (and float32's eps by default)
        weight = None if weight is None else weight.float()
    if eps is None:
        eps = ember.finfo(input.dtype).eps
    dims = list(range(input.dim() - k, input.dim()))
    y = input * ((input * input).mean(dims, keepdim=True) + eps).rsqrt()
    if weight is not None:
        y = y * weight
    return y if y.dtype == out_dtype else y.to(out_dtype)


def local_response_norm(input, size, alpha=0.0001, beta=0.75, k=1.0):
    dim = input.dim()
    if dim < 3:
        raise ValueError(f"Expected 3D or higher dimensionality input (got {dim} dimensions)")
    if input.numel() == 0:
        return input
    C = input.shape[1]
    sq = input * input
    if dim > 3 and sq.dtype in (ember.bfloat16, ember.float16) and \
            ember.is_autocast_enabled("cpu"):
        sq = sq.float()     # torch pools the squares with avg_pool3d: float32 under autocast
    # sum over a window of ``size`` channels [c - size//2, c + (size-1)//2], zero padded
    lo, hi = size // 2, (size - 1) // 2
    sq_flat = sq.reshape((input.shape[0], C, -1))
    zeros_lo = sq_flat.new_zeros((input.shape[0], lo, sq_flat.shape[2]))
    zeros_hi = sq_flat.new_zeros((input.shape[0], hi, sq_flat.shape[2]))
    padded = ember.cat([zeros_lo, sq_flat, zeros_hi], 1)
    acc = padded.narrow(1, 0, C)
    for i in range(1, size):
        acc = acc + padded.narrow(1, i, C)
    div = (acc.reshape(input.shape) * (alpha / size) + k) ** beta
    return input / div


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    denom = input.norm(p, dim, keepdim=True).clamp_min(eps).expand_as(input)
    if out is None:
        return input / denom
    return ember.div(input, denom, out=out)


del np
