"""GeneralizedPareto(loc, scale, concentration)."""
import math

import ember
from . import constraints
from ._continuous import fill_where
from .distribution import Distribution

__all__ = ["GeneralizedPareto"]


class GeneralizedPareto(Distribution):
    """Survival function ``(1 + k z)^(-1/k)``, ``z = (x - loc) / scale``, ``k = concentration``
    (``exp(-z)`` at ``k = 0``: the exponential; ``k = -1``: uniform). ``rsample`` inverts the cdf."""
    has_rsample = True
    _batched = ("loc", "scale", "concentration")
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive, "concentration": constraints.real}

    def __init__(self, loc, scale, concentration, validate_args=None):
        self._init_params(loc, scale, concentration, validate_args=validate_args)

    def _shape(self):
        """``(k == 0, k)`` with the zeros of ``k`` (to isclose) replaced by 1: each formula
        takes its ``k = 0`` limit there by a ``where``, and the other branch must stay finite."""
        k = self.concentration
        at_zero = ember.isclose(k, ember.zeros_like(k))
        return at_zero, fill_where(at_zero, 1.0, k)

    def _z(self, value):
        return (value - self.loc) / self.scale

    def rsample(self, sample_shape=ember.Size()):
        return self.icdf(ember.rand(self._extended_shape(sample_shape), dtype=self.loc.dtype))

    def log_survival_function(self, value):
        z = self._z(self._checked(value))
        at_zero, k = self._shape()
        return ember.where(at_zero, -z, -ember.log1p(k * z) / k)

    def log_prob(self, value):
        z = self._z(self._checked(value))
        at_zero, k = self._shape()
        exponent = 1 + 1 / k
        # -(1 + 1/k) log(1 + k z); at k = -1 (uniform) the exponent is 0 even on the boundary
        tail = fill_where(exponent == 0, 0.0, exponent * ember.log1p(k * z))
        return -self.scale.log() - ember.where(at_zero, z, tail)

    def cdf(self, value):
        return -ember.expm1(self.log_survival_function(value))

    def log_cdf(self, value):
        return ember.log(self.cdf(value))

    def icdf(self, value):
        at_zero, k = self._shape()
        log_survival = ember.log1p(-value)
        general = self.loc + self.scale / k * ember.expm1(-k * log_survival)
        return ember.where(at_zero, self.loc - self.scale * log_survival, general)

    mode = property(lambda self: self.loc)

    @property
    def mean(self):
        """``loc + scale / (1 - k)`` for k < 1, else nan."""
        k = self.concentration
        finite = k < 1
        safe_k = fill_where(~finite, 0.5, k)
        return fill_where(~finite, math.nan, self.loc + self.scale / (1 - safe_k))

    @property
    def variance(self):
        """``scale^2 / ((1 - k)^2 (1 - 2 k))`` for k < 1/2, else nan."""
        k = self.concentration
        finite = k < 0.5
        safe_k = fill_where(~finite, 0.25, k)
        return fill_where(~finite, math.nan, self.scale.pow(2) / ((1 - safe_k).pow(2) * (1 - 2 * safe_k)))

    def entropy(self):
        return (self.scale.log() + self.concentration + 1).expand(self.batch_shape)

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        """``[loc, inf)``, or ``[loc, loc - scale / k]`` for k < 0."""
        k = self.concentration
        upper = fill_where(k >= 0, math.inf, self.loc - self.scale / k)
        return constraints.interval(self.loc, upper)
