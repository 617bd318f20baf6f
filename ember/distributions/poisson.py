"""Poisson(rate): counts of events at a given mean rate."""
import ember
from . import constraints
from ._discrete import Batched, checks_value
from .exp_family import ExponentialFamily
from .utils import broadcast_all

__all__ = ["Poisson"]


class Poisson(Batched, ExponentialFamily):
    """``P(k) = rate^k e^-rate / k!``."""
    arg_constraints = {"rate": constraints.nonnegative}
    support = constraints.nonnegative_integer
    _batched = ("rate",)

    def __init__(self, rate, validate_args=None):
        (self.rate,) = broadcast_all(rate)
        super().__init__(self.rate.shape, validate_args=validate_args)

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
