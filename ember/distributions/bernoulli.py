"""Bernoulli(probs | logits): one trial, values 0 or 1."""
import ember
from . import constraints
from ._discrete import (BINARY, ProbsOrLogits, bernoulli_entropy, bernoulli_log_mass, checks_value,
                        counts_support)
from .exp_family import ExponentialFamily

__all__ = ["Bernoulli"]


class Bernoulli(ProbsOrLogits, ExponentialFamily):
    """``P(1) = probs = sigmoid(logits)``; give exactly one of ``probs`` and ``logits``."""
    support = constraints.boolean
    has_enumerate_support = True
    arg_constraints = BINARY

    def __init__(self, probs=None, logits=None, validate_args=None):
        self._take_param(probs, logits)
        super().__init__(self._param.shape, validate_args=validate_args)

    @property
    def mean(self):
        return self.probs

    @property
    def mode(self):
        """1 above one half, 0 below, nan at a tie."""
        p = self.probs
        return ember.where(p == 0.5, float("nan"), (p > 0.5).to(p.dtype))

    @property
    def variance(self):
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape=ember.Size()):
        p = self.probs.expand(self._extended_shape(sample_shape))
        with ember.no_grad():
            return ember.bernoulli(p)

    @checks_value
    def log_prob(self, value):
        return bernoulli_log_mass(self.logits, value)

    def entropy(self):
        return bernoulli_entropy(self.logits, self.probs)

    def enumerate_support(self, expand=True):
        return counts_support(2, self._param.dtype, self.batch_shape, expand)
