"""Gumbel(loc, scale)."""
import math

import ember
from . import constraints
from .transformed_distribution import TransformedDistribution
from .transforms import AffineTransform, ExpTransform
from .uniform import Uniform
from .utils import euler_constant

__all__ = ["Gumbel"]


class Gumbel(TransformedDistribution):
    """Type-I extreme value: ``loc - scale * log(-log U)``, ``U ~ Uniform(tiny, 1 - eps)``."""
    support = constraints.real
    _batched = ("loc", "scale")
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}

    def __init__(self, loc, scale, validate_args=None):
        loc, scale = self._set_params(loc, scale)
        finfo = ember.finfo(loc.dtype)
        unit = Uniform(ember.full_like(loc, finfo.tiny), ember.full_like(loc, 1 - finfo.eps),
                       validate_args=validate_args)
        log = ExpTransform().inv
        steps = [log, AffineTransform(0.0, -ember.ones_like(scale)), log, AffineTransform(loc, -scale)]
        super().__init__(unit, steps, validate_args=validate_args)

    mean = property(lambda self: self.loc + euler_constant * self.scale)
    mode = property(lambda self: self.loc)
    stddev = property(lambda self: self.scale * (math.pi / 6 ** 0.5))
    variance = property(lambda self: self.stddev.pow(2))

    def log_prob(self, value):
        z = (self._checked(value) - self.loc) / self.scale
        return -(z + ember.exp(-z)) - self.scale.log()

    def entropy(self):
        return self.scale.log() + (1 + euler_constant)
