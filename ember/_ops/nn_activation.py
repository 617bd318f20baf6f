"""torch's top-level activation fronts (``torch.selu``, ``torch.celu``, ``torch.prelu``,
``torch.rrelu``, ``torch.hardshrink``, ``torch.threshold`` and their in-place forms). The
activations themselves live in ember/nn/functional/_activation.py (composites of ember
ops, autograd from their parts)."""
from __future__ import annotations

from ember._ops.registry import public


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
