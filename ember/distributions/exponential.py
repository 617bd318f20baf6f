"""Exponential(rate)."""
import ember
from . import constraints
from .exp_family import ExponentialFamily

__all__ = ["Exponential"]


class Exponential(ExponentialFamily):
    """Density ``rate * exp(-rate * x)`` on ``x >= 0``."""
    support = constraints.nonnegative
    has_rsample = True
    _batched = ("rate",)
    arg_constraints = {"rate": constraints.positive}

    def __init__(self, rate, validate_args=None):
        self._init_params(rate, validate_args=validate_args)

    mean = stddev = property(lambda self: self.rate.reciprocal())
    mode = property(lambda self: ember.zeros_like(self.rate))
    variance = property(lambda self: self.rate.pow(-2))

    def rsample(self, sample_shape=ember.Size()):
        unit = ember.empty(self._extended_shape(sample_shape), dtype=self.rate.dtype).exponential_()
        return unit / self.rate

    def log_prob(self, value):
        return self.rate.log() - self.rate * self._checked(value)

    def cdf(self, value):
        return -ember.expm1(-self.rate * self._checked(value))

    def icdf(self, value):
        return ember.log1p(-value) / -self.rate

    def entropy(self):
        return 1 - self.rate.log()
