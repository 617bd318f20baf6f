"""Bernoulli(probs | logits): one trial, values 0 or 1."""
import ember
from ember.nn.functional import binary_cross_entropy_with_logits as _bce
from . import constraints
from ._discrete import BINARY, ProbsOrLogits, checks_value, counts_support
from .exp_family import ExponentialFamily

__all__ = ["Bernoulli"]


class Bernoulli(ProbsOrLogits, ExponentialFamily):
    """``P(1) = probs = sigmoid(logits)``; give exactly one of ``probs`` and ``logits``."""
    arg_constraints = BINARY
    support = constraints.boolean
    has_enumerate_support = True
    _batched = ("probs", "logits")

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
        """``x log p + (1 - x) log(1 - p)``, computed stably from the logits."""
        logits, value = ember.broadcast_tensors(self.logits, value)
        return -_bce(logits, value, reduction="none")

    def entropy(self):
        return _bce(self.logits, self.probs, reduction="none")

    def enumerate_support(self, expand=True):
        return counts_support(2, self._param.dtype, self.batch_shape, expand)
