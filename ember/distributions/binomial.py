"""Binomial(total_count, probs | logits): successes in ``total_count`` independent trials."""
import ember
from . import constraints
from ._discrete import (BINARY, ProbsOrLogits, checks_value, counts_support,
                        homogeneous_count, integers_up_to, log1p_exp, log_choose)
from .distribution import Distribution

__all__ = ["Binomial"]


class Binomial(ProbsOrLogits, Distribution):
    """``P(k) = C(n, k) p^k (1 - p)^(n - k)`` for ``n = total_count`` (a float tensor)."""
    has_enumerate_support = True
    _batched = ("total_count", "probs", "logits")
    arg_constraints = {"total_count": constraints.nonnegative_integer, **BINARY}

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        (self.total_count,) = self._take_param(probs, logits, total_count)
        super().__init__(self._param.shape, validate_args=validate_args)

    support = integers_up_to(lambda self: self.total_count)
    mean = property(lambda self: self.probs * self.total_count)

    @property
    def mode(self):
        n = self.total_count
        return ((n + 1) * self.probs).floor().clamp(max=n)

    @property
    def variance(self):
        return self.mean * (1 - self.probs)

    def sample(self, sample_shape=ember.Size()):
        """Counts drawn by ``ember.binomial`` (torch's sampler and stream)."""
        shape = self._extended_shape(sample_shape)
        trials, p = self.total_count.expand(shape), self.probs.expand(shape)
        with ember.no_grad():
            return ember.binomial(trials, p)

    @checks_value
    def log_prob(self, value):
        """``log C(n, k) + k l - n log(1 + e^l)`` with ``l`` the logits (as ``log p = l -
        log(1 + e^l)`` and ``log(1 - p) = -log(1 + e^l)``)."""
        n, l = self.total_count, self.logits
        return log_choose(n, value) + value * l - n * log1p_exp(l)

    def entropy(self):
        homogeneous_count(self.total_count, "entropy")
        ks = self.enumerate_support(False)
        log_pmf = self.log_prob(ks)
        return -(log_pmf.exp() * log_pmf).sum(0)

    def enumerate_support(self, expand=True):
        count = homogeneous_count(self.total_count, "enumerate_support")
        return counts_support(count + 1, self._param.dtype, self.batch_shape, expand)
