"""torch's top-level activation fronts (``torch.selu``, ``torch.celu``, ``torch.prelu``,
``torch.rrelu``, ``torch.hardshrink``, ``torch.threshold`` and their in-place forms). The
activations themselves live in ember/nn/functional/_activation.py (composites of ember
ops, autograd from their parts)."""
from __future__ import annotations

import math

from ember._kernels import nn_activation as K
from ember._kernels.util import half_in_float32
from ember._ops.registry import OpDef, public
from ember.autograd.grad_mode import is_grad_enabled

# The exact GELU's gradient in one kernel (the backward of ``gelu``, approximate='none'):
# ``grad * (Phi(x) + x phi(x))``, one exp shared by both terms (ember/_kernels/nn_activation.py).
gelu_backward = OpDef("gelu_backward(Tensor grad_output, Tensor self) -> Tensor",
                      half_in_float32(K.gelu_backward), saves=("grad_output", "self"))


# GELU (exact) in a training step: the output and its derivative from one evaluation; the
# derivative (saved, not differentiable) makes the backward one multiply. ember.nn.functional
# .gelu takes it for float32 input that requires grad when no mode is active.
gelu_train = OpDef("_gelu_train(Tensor self) -> (Tensor output, Tensor grad_factor)",
                   K.gelu_train, promote=None, saves=("self", "grad_factor"),
                   grad_name="GeluBackward0", none_grads=True)


@gelu_train.def_backward
def _(ctx, grads, x):
    g = grads[0]
    if g is None:
        return None
    if not is_grad_enabled():
        return g * ctx.result[1]
    return gelu_backward(g, x)          # differentiable again (create_graph)


@gelu_backward.def_backward
def _(ctx, gg, g, x):
    """d/dg: gelu'(x); d/dx: g * gelu''(x) = g * phi(x) * (2 - x^2)."""
    phi = (-0.5 * x * x).exp() * (1 / math.sqrt(2 * math.pi))
    return gelu_backward(gg, x), gg * g * phi * (2 - x * x)


def _F():
    from ember.nn import functional
    return functional


@public("selu")
def selu(input):
    return _F().selu(input)


@public("selu_")
def selu_(input):
    return _F().selu(input, inplace=True)


@public("celu")
def celu(input, alpha=1.0):
    return _F().celu(input, alpha)


@public("celu_")
def celu_(input, alpha=1.0):
    return _F().celu(input, alpha, inplace=True)


@public("prelu", method=True)
def prelu(input, weight):
    return _F().prelu(input, weight)


@public("rrelu")
def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, generator=None):
    return _F().rrelu(input, lower, upper, training)


@public("rrelu_")
def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False, generator=None):
    return _F().rrelu(input, lower, upper, training, inplace=True)


@public("hardshrink", method=True)
def hardshrink(input, lambd=0.5):
    return _F().hardshrink(input, lambd)


@public("threshold")
def threshold(input, threshold, value):
    return _F().threshold(input, threshold, value)


@public("threshold_")
def threshold_(input, threshold, value):
    return _F().threshold(input, threshold, value, inplace=True)
