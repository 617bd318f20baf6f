"""Activation functions (torch.nn.functional): composites of ember ops, autograd from their
parts. Branches that could overflow are evaluated on clamped inputs so that the unused side
of a ``where`` never puts inf/nan into the gradient. Where torch has one kernel, the
composite is recorded under torch's node name (``record_as``, Note [named composites])."""
from __future__ import annotations

import math
import warnings

import ember
from ember._dtype import scalar_type_name
from ember._ops import elementwise as _ew
from ember._ops import quantized_nn as _qnn
from ember._state import state as _state
from ember._tensor import Tensor
from ember.autograd.grad_mode import is_grad_enabled
from ember.autograd.composite import record_as, record_inplace_as
from ember.amp.autocast_mode import lower_under_autocast as _lower_under_autocast

__all__ = ["threshold", "threshold_", "relu", "relu_", "relu6", "hardtanh", "hardtanh_",
           "elu", "elu_", "selu", "selu_", "celu", "celu_", "leaky_relu", "leaky_relu_",
           "prelu", "rrelu", "rrelu_", "glu", "gelu", "logsigmoid", "hardshrink", "tanhshrink",
           "softsign", "softplus", "softmin", "softmax", "log_softmax", "gumbel_softmax",
           "softshrink", "tanh", "sigmoid", "hardsigmoid", "silu", "mish", "hardswish"]

_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def _act(name, fn, input, inplace, inplace_name=None, saves_result=False):
    """``fn(input)`` recorded as torch's node ``name``; with ``inplace``, written into
    ``input`` and recorded as torch's in-place node (``inplace_name``, default ``name``;
    ``saves_result``: it keeps the result, so writing into it later fails at backward)."""
    if not inplace:
        return record_as(name, fn, input)
    return record_inplace_as(inplace_name or name, fn, input, saves_result)


def _tracked(input):
    return input.requires_grad and ember.is_grad_enabled()


def _check_floating(input, kernel):
    if not (input.is_floating_point() or input.is_complex()):
        raise NotImplementedError(f'"{kernel}" not implemented for '
                                  f"'{scalar_type_name(input.dtype)}'")


def threshold(input, threshold, value, inplace=False):
    if _qnn.is_quantized(input):
        return _qnn.threshold(input, threshold, value, inplace)
    fill = ember.as_tensor(value, dtype=input.dtype)
    return _act("ThresholdBackward0", lambda t: ember.where(t > threshold, t, fill), input,
                inplace, "ThresholdBackward1")


def threshold_(input, threshold, value):
    return globals()["threshold"](input, threshold, value, inplace=True)


def relu(input, inplace=False):
    return input.relu_() if inplace else ember.relu(input)


def relu_(input):
    return input.relu_()


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    if _qnn.is_quantized(input):
        return _qnn.hardtanh(input, min_val, max_val, inplace)
    if not (input.is_floating_point() or input.is_complex()):
        # torch keeps integer dtypes: the limits are converted to the input's type
        if input.dtype == input.new_zeros(()).bool().dtype:
            raise RuntimeError("Bool inputs not supported for hardtanh")
        if input.dtype.name == "uint8" and min_val < 0:
            raise RuntimeError("cannot do hardtanh on an unsigned type with negative limits")
        min_val, max_val = int(min_val), int(max_val)
    elif _tracked(input):
        # torch's gradient is 1 strictly inside (min_val, max_val) (and at NaN), 0 at and
        # beyond the limits
        return _act("HardtanhBackward0", lambda t: ember.where(
            ((t <= min_val) | (t >= max_val)).logical_not(), t,
            t.detach().clamp(min_val, max_val)), input, inplace)
    return input.clamp_(min_val, max_val) if inplace else input.clamp(min_val, max_val)


def hardtanh_(input, min_val=-1.0, max_val=1.0):
    return hardtanh(input, min_val, max_val, inplace=True)


def relu6(input, inplace=False):
    return hardtanh(input, 0.0, 6.0, inplace)


def _neg_part_exp(x, alpha, scale_in=1.0):
    """alpha * (exp(x / scale_in) - 1) on x <= 0, computed on min(x, 0)."""
    xn = x.clamp_max(0)
    return alpha * (xn / scale_in).expm1() if scale_in != 1.0 else alpha * xn.expm1()


def elu(input, alpha=1.0, inplace=False):
    if _qnn.is_quantized(input):
        _qnn.refuse("elu.out")
    _check_floating(input, "elu_cpu")
    return _act("EluBackward0", lambda t: ember.where(t > 0, t, _neg_part_exp(t, alpha)),
                input, inplace, "EluBackward1", saves_result=True)


def elu_(input, alpha=1.0):
    return elu(input, alpha, inplace=True)


def selu(input, inplace=False):
    if _qnn.is_quantized(input):
        _qnn.refuse("elu.out")
    _check_floating(input, "elu_cpu")
    return _act("EluBackward0", lambda t: _SELU_SCALE * ember.where(
        t > 0, t, _neg_part_exp(t, _SELU_ALPHA)), input, inplace, "EluBackward1", True)


def selu_(input):
    return selu(input, inplace=True)


def celu(input, alpha=1.0, inplace=False):
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError")
    if _qnn.is_quantized(input):
        _qnn.refuse("elu.out")
    _check_floating(input, "elu_cpu")
    return _act("CeluBackward0", lambda t: ember.where(
        t > 0, t, _neg_part_exp(t, alpha, alpha)), input, inplace, "CeluBackward1", True)


def celu_(input, alpha=1.0):
    return celu(input, alpha, inplace=True)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    if _qnn.is_quantized(input):
        return _qnn.leaky_relu(input, negative_slope, inplace)
    _check_floating(input, "leaky_relu_cpu")
    return _act("LeakyReluBackward0", lambda t: ember.where(t > 0, t, t * negative_slope),
                input, inplace, "LeakyReluBackward1", True)


def leaky_relu_(input, negative_slope=0.01):
    return leaky_relu(input, negative_slope, inplace=True)


@_lower_under_autocast
def prelu(input, weight):
    if not isinstance(weight, ember.Tensor):
        raise TypeError(f"prelu(): argument 'weight' (position 2) must be Tensor, not "
                        f"{type(weight).__name__}")
    if isinstance(input, ember.Tensor) and input.dtype != weight.dtype:
        raise RuntimeError(f"prelu: Type promoting not supported. Got "
                           f"{scalar_type_name(input.dtype)} and {scalar_type_name(weight.dtype)}")
    n = weight.numel()
    if n != 1:
        if input.dim() == 0:
            raise RuntimeError("Not allow zero-dim input tensor.")
        C = input.shape[1] if input.dim() >= 2 else 1
        if n != C:
            raise RuntimeError(f"Mismatch of parameter numbers and input channel size. Found "
                               f"parameter numbers = {n} and channel size = {C}.")
        if input.dim() >= 2:
            weight = weight.reshape((1, C) + (1,) * (input.dim() - 2))
    elif weight.dim() > 0:
        weight = weight.reshape(())
    return record_as("PreluKernelBackward0",
                     lambda t, w: ember.where(t > 0, t, w * t), input, weight)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    if lower > upper:
        raise RuntimeError("Lower bound should be less than or equal to the upper bound")
    _check_floating(input, "leaky_relu_cpu")
    # results contiguous whatever the input's layout, as torch's rrelu_with_noise
    if training:
        a = ember.empty(input.shape, dtype=input.dtype).uniform_(lower, upper)
        fn = lambda t: ember.where(t >= 0, t, t * a).contiguous()        # noqa: E731
    else:
        slope = (lower + upper) / 2
        fn = lambda t: ember.where(t > 0, t, t * slope).contiguous()     # noqa: E731
    return _act("RreluWithNoiseBackward0", fn, input, inplace, "RreluWithNoiseBackward1", True)


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False):
    return rrelu(input, lower, upper, training, inplace=True)


def glu(input, dim=-1):
    if input.dim() == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    d = dim + input.dim() if dim < 0 else dim
    if input.shape[d] % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {d} is size "
                           f"{input.shape[d]}")
    _check_floating(input, "glu_cpu")

    def halves(t):
        a, b = t.chunk(2, dim)
        return a * b.sigmoid()
    return record_as("GluBackward0", halves, input)


def _ops_activation():
    """ember._ops.nn_activation (imported on first use: it imports this package)."""
    mod = _OPS_ACTIVATION[0]
    if mod is None:
        from ember._ops import nn_activation as mod
        _OPS_ACTIVATION[0] = mod
    return mod


_OPS_ACTIVATION = [None]


def gelu(input, approximate="none"):
    if approximate == "none" and type(input) is Tensor and input.requires_grad and \
            input.dtype is ember.float32 and is_grad_enabled() and not _state.modes:
        return _ops_activation().gelu_train(input)[0]
    return _ew.gelu(input, approximate=approximate)


def logsigmoid(input):
    _check_floating(input, "log_sigmoid_cpu")
    return record_as("LogSigmoidBackward0", _logsigmoid, input)


def _logsigmoid(x):
    # min(x, 0) - log1p(exp(-|x|)), one stable branch per sign (gradient 1/2 at 0); half
    # dtypes in float32, rounded once (torch's kernel)
    if x.dtype in (ember.float16, ember.bfloat16):
        return _logsigmoid(x.float()).to(x.dtype)
    neg, zero = x < 0, x.new_zeros(())
    xn, xp = ember.where(neg, x, zero), ember.where(neg, zero, x)
    # contiguous whatever the input's layout, as torch's (its kernel keeps a buffer)
    return ember.where(neg, xn - xn.exp().log1p(), -(-xp).exp().log1p()).contiguous()


def hardshrink(input, lambd=0.5):
    _check_floating(input, "hardshrink_cpu")
    return record_as("HardshrinkBackward0", lambda t: ember.where(
        (t > lambd) | (t < -lambd), t, t.new_zeros(())), input)


def softshrink(input, lambd=0.5):
    if lambd < 0:
        hi = float(ember.finfo(input.dtype).max) if input.is_floating_point() else float("inf")
        raise RuntimeError(f"lambda must be in range [0, {hi:g}] for input dtype "
                           f"{scalar_type_name(input.dtype)}, but found {lambd:g}")
    _check_floating(input, "softshrink_check")
    return record_as("SoftshrinkBackward0", lambda t: ember.where(
        t > lambd, t - lambd, ember.where(t < -lambd, t + lambd, t.new_zeros(()))), input)


def tanhshrink(input):
    return input - input.tanh()


def softsign(input):
    return input / (input.abs() + 1)


def softplus(input, beta=1.0, threshold=20.0):
    _check_floating(input, "softplus_cpu")
    return record_as("SoftplusBackward0", _in_float32(lambda t: _softplus(t, beta, threshold)),
                     input)


def _softplus(x, beta=1.0, threshold=20.0):
    bx = x * beta
    soft = bx.clamp_max(threshold).exp().log1p()
    if beta != 1:
        soft = soft / beta
    return ember.where(bx > threshold, x, soft)


def _get_softmax_dim(name, ndim, stacklevel):
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call "
                  f"to include dim=X as an argument.", stacklevel=stacklevel)
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        dim = _get_softmax_dim("softmax", input.dim(), _stacklevel)
    return ember.softmax(input, dim, dtype=dtype)


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        dim = _get_softmax_dim("softmin", input.dim(), _stacklevel)
    return ember.softmax(-input, dim, dtype=dtype)         # negated first, then cast (torch)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        dim = _get_softmax_dim("log_softmax", input.dim(), _stacklevel)
    return ember.log_softmax(input, dim, dtype=dtype)


def gumbel_softmax(logits, tau=1, hard=False, eps=1e-10, dim=-1):
    """softmax((logits + g) / tau) with g = -log(E), E ~ Exp(1); ``hard``: the one-hot of
    its argmax in the forward pass, the soft gradient in the backward (straight through)."""
    noise = -ember.empty(logits.shape, dtype=logits.dtype).exponential_().log()
    soft = ((logits + noise) / tau).softmax(dim)
    if not hard:
        return soft
    one_hot = ember.zeros_like(logits)
    one_hot.scatter_(dim, soft.argmax(dim, keepdim=True), 1.0)
    return one_hot - soft.detach() + soft


def tanh(input):
    return input.tanh()


def sigmoid(input):
    return input.sigmoid()


def hardsigmoid(input, inplace=False):
    if _qnn.is_quantized(input):
        return _qnn.hardsigmoid(input, inplace)
    _check_floating(input, "hardsigmoid_cpu")
    return _act("HardsigmoidBackward0", _hardsigmoid, input, inplace)


def _hardsigmoid(x):
    # gradient 1/6 strictly inside (-3, 3), 0 at and beyond the corners (and at NaN)
    lin = x / 6 + 0.5
    return ember.where((x > -3) & (x < 3), lin, lin.detach().clamp(0, 1))


def silu(input, inplace=False):
    return _ew.silu_(input) if inplace else _ew.silu(input)


def mish(input, inplace=False):
    _check_floating(input, "mish_cpu")
    return _act("MishBackward0", _in_float32(lambda t: t * _softplus(t).tanh()), input, inplace)


def hardswish(input, inplace=False):
    if _qnn.is_quantized(input):
        _qnn.refuse("hardswish_" if inplace else "hardswish")
    _check_floating(input, "hardswish_cpu")
    return _act("HardswishBackward0", _in_float32(_hardswish), input, inplace)


def _hardswish(x):
    # torch's gradient: 0 for x <= -3, x/3 + 1/2 for -3 < x < 3, 1 for x >= 3 (and NaN);
    # its value x * (x + 3) / 6 in that order
    inside = (x > -3) & (x < 3)
    xi = ember.where(inside, x, x.new_zeros(()))
    return ember.where(x <= -3, x * 0, ember.where(inside, xi * (xi + 3) / 6, x))


def _in_float32(fn):
    """``fn`` computed in float32 for a half / bfloat16 tensor and rounded once to its dtype
    (torch's CPU kernels for these activations)."""
    def run(t, *args):
        if t.dtype in (ember.float16, ember.bfloat16):
            return fn(t.float(), *args).to(t.dtype)
        return fn(t, *args)
    return run


del math
