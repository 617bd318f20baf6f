"""Cauchy(loc, scale)."""
import math

import ember
from . import constraints
from .distribution import Distribution

__all__ = ["Cauchy"]


class Cauchy(Distribution):
    """Cauchy (Lorentz) distribution: mean undefined (nan), variance infinite."""
    support = constraints.real
    has_rsample = True
    _batched = ("loc", "scale")
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}

    def __init__(self, loc, scale, validate_args=None):
        self._init_params(loc, scale, validate_args=validate_args)

    def _filled(self, number):
        return ember.full(self._extended_shape(), number, dtype=self.loc.dtype)

    mean = property(lambda self: self._filled(math.nan))
    variance = property(lambda self: self._filled(math.inf))
    mode = property(lambda self: self.loc)

    def rsample(self, sample_shape=ember.Size()):
        noise = ember.empty(self._extended_shape(sample_shape), dtype=self.loc.dtype).cauchy_()
        return self.loc + noise * self.scale

    def log_prob(self, value):
        z = (self._checked(value) - self.loc) / self.scale
        return -(z * z).log1p() - self.scale.log() - math.log(math.pi)

    def cdf(self, value):
        z = (self._checked(value) - self.loc) / self.scale
        return 0.5 + ember.atan(z) / math.pi

    def icdf(self, value):
        return self.loc + self.scale * ember.tan(math.pi * (value - 0.5))

    def entropy(self):
        return self.scale.log() + math.log(4 * math.pi)
