"""Poisson(rate): counts of events at a given mean rate."""
import ember
from . import constraints
from ._discrete import checks_value
from .exp_family import ExponentialFamily

__all__ = ["Poisson"]


class Poisson(ExponentialFamily):
    """``P(k) = rate^k e^-rate / k!``."""
    support = constraints.nonnegative_integer
    _batched = ("rate",)
    arg_constraints = {"rate": constraints.nonnegative}

    def __init__(self, rate, validate_args=None):
        self._init_params(rate, validate_args=validate_args)

    @property
    def mean(self):
        return self.rate

    @property
    def mode(self):
        return self.rate.floor()

    @property
    def variance(self):
        return self.rate

    def sample(self, sample_shape=ember.Size()):
        with ember.no_grad():
            return ember.poisson(self.rate.expand(self._extended_shape(sample_shape)))

    @checks_value
    def log_prob(self, value):
        """``k log(rate) - rate - log k!`` (``0 log 0 = 0``)."""
        return ember.xlogy(value, self.rate) - self.rate - ember.lgamma(value + 1)
