"""Kumaraswamy(concentration1, concentration0)."""
import math

import ember
from . import constraints
from ._continuous import fill_where
from .transformed_distribution import TransformedDistribution
from .transforms import AffineTransform, PowerTransform
from .uniform import Uniform
from .utils import euler_constant

__all__ = ["Kumaraswamy"]


class Kumaraswamy(TransformedDistribution):
    """On (0, 1) with cdf ``1 - (1 - x^a)^b`` (``a = concentration1``, ``b = concentration0``):
    ``(1 - U^(1/b))^(1/a)``, ``U ~ Uniform(0, 1)``."""
    support = constraints.unit_interval
    has_rsample = True
    _batched = ("concentration1", "concentration0")
    arg_constraints = {"concentration1": constraints.positive, "concentration0": constraints.positive}

    def __init__(self, concentration1, concentration0, validate_args=None):
        a, b = self._set_params(concentration1, concentration0)
        unit = Uniform(ember.zeros_like(b), ember.ones_like(b), validate_args=validate_args)
        steps = [PowerTransform(b.reciprocal()), AffineTransform(1.0, -1.0), PowerTransform(a.reciprocal())]
        super().__init__(unit, steps, validate_args=validate_args)

    def _raw_moment(self, n):
        """``E[X^n] = b B(1 + n / a, b)``."""
        a, b = self.concentration1, self.concentration0
        shifted = 1 + n / a
        return b * ember.exp(ember.lgamma(shifted) + ember.lgamma(b) - ember.lgamma(shifted + b))

    mean = property(lambda self: self._raw_moment(1))
    variance = property(lambda self: self._raw_moment(2) - self.mean.pow(2))

    @property
    def mode(self):
        """torch 2.13's expression, ``exp(log1p(-b) / b - log1p(-a b))``, nan unless a, b >= 1."""
        a, b = self.concentration1, self.concentration0
        log_mode = ember.log1p(-b) / b - ember.log1p(-a * b)
        return fill_where((a < 1) | (b < 1), math.nan, log_mode).exp()

    def entropy(self):
        a, b = self.concentration1, self.concentration0
        harmonic_b = ember.digamma(b + 1) + euler_constant  # H_b
        return (1 - 1 / b) + (1 - 1 / a) * harmonic_b - ember.log(a) - ember.log(b)
