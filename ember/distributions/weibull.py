"""Weibull(scale, concentration)."""
import ember
from . import constraints
from .exponential import Exponential
from .transformed_distribution import TransformedDistribution
from .transforms import AffineTransform, PowerTransform
from .utils import euler_constant

__all__ = ["Weibull"]


class Weibull(TransformedDistribution):
    """``scale * E ** (1 / concentration)`` for ``E ~ Exponential(1)``."""
    support = constraints.positive
    _batched = ("scale", "concentration")
    arg_constraints = {"scale": constraints.positive, "concentration": constraints.positive}

    def __init__(self, scale, concentration, validate_args=None):
        scale, concentration = self._set_params(scale, concentration)
        steps = [PowerTransform(concentration.reciprocal()), AffineTransform(0.0, scale)]
        super().__init__(Exponential(ember.ones_like(scale), validate_args=validate_args), steps,
                         validate_args=validate_args)

    concentration_reciprocal = property(lambda self: self.concentration.reciprocal())

    def _raw_moment(self, n):
        """``E[X^n] / scale^n = Gamma(1 + n / concentration)``."""
        return ember.exp(ember.lgamma(1 + n * self.concentration_reciprocal))

    mean = property(lambda self: self.scale * self._raw_moment(1))
    variance = property(lambda self: self.scale.pow(2) * (self._raw_moment(2) - self._raw_moment(1).pow(2)))

    @property
    def mode(self):
        k = self.concentration
        return self.scale * ((k - 1) / k) ** k.reciprocal()

    def entropy(self):
        inv_k = self.concentration_reciprocal
        return euler_constant * (1 - inv_k) + ember.log(self.scale * inv_k) + 1
