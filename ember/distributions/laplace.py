"""Laplace(loc, scale)."""
import ember
from . import constraints
from ._continuous import LOG_2
from .distribution import Distribution

__all__ = ["Laplace"]


class Laplace(Distribution):
    """Double exponential: density ``exp(-|x - loc| / scale) / (2 scale)``."""
    support = constraints.real
    has_rsample = True
    _batched = ("loc", "scale")
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}

    def __init__(self, loc, scale, validate_args=None):
        self._init_params(loc, scale, validate_args=validate_args)

    mean = mode = property(lambda self: self.loc)
    stddev = property(lambda self: self.scale * 2 ** 0.5)
    variance = property(lambda self: 2 * self.scale.pow(2))

    def _quantile(self, t):
        """The quantile at probability ``(1 + t) / 2``, ``t`` in (-1, 1)."""
        return self.loc - self.scale * t.sign() * ember.log1p(-t.abs())

    def rsample(self, sample_shape=ember.Size()):
        shape = self._extended_shape(sample_shape)
        low = ember.finfo(self.loc.dtype).eps - 1  # keeps log1p(-|t|) finite
        return self._quantile(ember.empty(shape, dtype=self.loc.dtype).uniform_(low, 1))

    def log_prob(self, value):
        distance = (self._checked(value) - self.loc).abs()
        return -distance / self.scale - ember.log(2 * self.scale)

    def cdf(self, value):
        offset = self._checked(value) - self.loc
        return 0.5 - 0.5 * offset.sign() * ember.expm1(-offset.abs() / self.scale)

    def icdf(self, value):
        return self._quantile(2 * value - 1)

    def entropy(self):
        return self.scale.log() + (1 + LOG_2)
