"""GeneralizedPareto(loc, scale, concentration)."""
import math
from numbers import Number, Real

import ember
from . import constraints
from .distribution import Distribution
from .utils import broadcast_all

__all__ = ["GeneralizedPareto"]


class GeneralizedPareto(Distribution):
    """Generalized Pareto: Exponential-like tail with shape ``concentration`` (0: exponential,
    -1: uniform). ``rsample`` inverts the cdf."""
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive, "concentration": constraints.real}
    has_rsample = True

    def __init__(self, loc, scale, concentration, validate_args=None):
        self.loc, self.scale, self.concentration = broadcast_all(loc, scale, concentration)
        if isinstance(loc, Number) and isinstance(scale, Number) and isinstance(concentration, Number):
            batch_shape = ember.Size()
        else:
            batch_shape = self.loc.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(GeneralizedPareto, batch_shape, _instance, "loc", "scale", "concentration")

    def _safe_concentration(self):
        eq_zero = ember.isclose(self.concentration, ember.zeros_like(self.concentration))
        return eq_zero, ember.where(eq_zero, ember.ones_like(self.concentration), self.concentration)

    def _z(self, x):
        return (x - self.loc) / self.scale

    def rsample(self, sample_shape=ember.Size()):
        shape = self._extended_shape(sample_shape)
        return self.icdf(ember.rand(shape, dtype=self.loc.dtype))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        z = self._z(value)
        eq_zero, k = self._safe_concentration()
        y = 1 / k + ember.ones_like(z)
        where_nonzero = ember.where(y == 0, y, y * ember.log1p(k * z))
        log_scale = math.log(self.scale) if isinstance(self.scale, Real) else self.scale.log()
        return -log_scale - ember.where(eq_zero, z, where_nonzero)

    def log_survival_function(self, value):
        if self._validate_args:
            self._validate_sample(value)
        z = self._z(value)
        eq_zero, k = self._safe_concentration()
        return ember.where(eq_zero, -z, -ember.log1p(k * z) / k)

    def log_cdf(self, value):
        return ember.log1p(-ember.exp(self.log_survival_function(value)))

    def cdf(self, value):
        return ember.exp(self.log_cdf(value))

    def icdf(self, value):
        eq_zero, k = self._safe_concentration()
        logu = ember.log1p(-value)
        where_nonzero = self.loc + self.scale / k * ember.expm1(-k * logu)
        where_zero = self.loc - self.scale * logu
        return ember.where(eq_zero, where_zero, where_nonzero)

    @property
    def mean(self):
        valid = self.concentration < 1
        k = ember.where(valid, self.concentration, ember.full_like(self.concentration, 0.5))
        result = self.loc + self.scale / (1 - k)
        return ember.where(valid, result, ember.full_like(result, math.nan))

    @property
    def variance(self):
        valid = self.concentration < 0.5
        k = ember.where(valid, self.concentration, ember.full_like(self.concentration, 0.25))
        result = self.scale ** 2 / ((1 - k) ** 2 * (1 - 2 * k))
        return ember.where(valid, result, ember.full_like(result, math.nan))

    def entropy(self):
        return (ember.log(self.scale) + self.concentration + 1).expand(self._batch_shape)

    @property
    def mode(self):
        return self.loc

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        lower = self.loc
        upper = ember.where(self.concentration < 0, lower - self.scale / self.concentration,
                            ember.full_like(lower, math.inf))
        return constraints.interval(lower, upper)
