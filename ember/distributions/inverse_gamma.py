"""InverseGamma(concentration, rate)."""
import math

from . import constraints
from ._continuous import fill_where
from .gamma import Gamma
from .transformed_distribution import TransformedDistribution
from .transforms import PowerTransform

__all__ = ["InverseGamma"]


class InverseGamma(TransformedDistribution):
    """``1 / X`` for ``X ~ Gamma(concentration, rate)``."""
    support = constraints.positive
    has_rsample = True
    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}

    def __init__(self, concentration, rate, validate_args=None):
        gamma = Gamma(concentration, rate, validate_args=validate_args)
        reciprocal = PowerTransform(gamma.rate.new_tensor(-1.0))
        super().__init__(gamma, reciprocal, validate_args=validate_args)

    concentration = property(lambda self: self.base_dist.concentration)
    rate = property(lambda self: self.base_dist.rate)
    mode = property(lambda self: self.rate / (self.concentration + 1))

    @property
    def mean(self):
        a = self.concentration
        return fill_where(a <= 1, math.inf, self.rate / (a - 1))

    @property
    def variance(self):
        a = self.concentration
        return fill_where(a <= 2, math.inf, self.rate.square() / ((a - 1).square() * (a - 2)))

    def entropy(self):
        a = self.concentration
        return a + self.rate.log() + a.lgamma() - (1 + a) * a.digamma()
