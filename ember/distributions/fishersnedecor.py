"""FisherSnedecor(df1, df2)."""
import math

import ember
from . import constraints
from ._continuous import fill_where
from .distribution import Distribution
from .gamma import Gamma

__all__ = ["FisherSnedecor"]


class FisherSnedecor(Distribution):
    """The F distribution: ``(V1 / df1) / (V2 / df2)`` for independent ``Vi ~ Chi2(dfi)``."""
    support = constraints.positive
    has_rsample = True
    _batched = ("df1", "df2")
    arg_constraints = {"df1": constraints.positive, "df2": constraints.positive}

    def __init__(self, df1, df2, validate_args=None):
        self._init_params(df1, df2, validate_args=validate_args)
        self._scaled_chi2s(None)  # like torch, checks df1 and df2 even when validate_args is False

    def _scaled_chi2s(self, validate_args=False):
        """``Vi / (2 dfi) ~ Gamma(dfi / 2, dfi)`` for i = 1, 2 (the factor 2 cancels in the ratio)."""
        return [Gamma(df * 0.5, df, validate_args=validate_args) for df in (self.df1, self.df2)]

    mean = property(lambda self: fill_where(self.df2 <= 2, math.nan, self.df2 / (self.df2 - 2)))
    mode = property(lambda self: fill_where(
        self.df1 <= 2, math.nan, (self.df1 - 2) / self.df1 * self.df2 / (self.df2 + 2)))

    @property
    def variance(self):
        d1, d2 = self.df1, fill_where(self.df2 <= 4, math.nan, self.df2)
        return 2 * d2.pow(2) * (d1 + d2 - 2) / (d1 * (d2 - 2).pow(2) * (d2 - 4))

    def rsample(self, sample_shape=ember.Size()):
        shape = self._extended_shape(sample_shape)
        numerator, denominator = (g.rsample(sample_shape).view(shape) for g in self._scaled_chi2s())
        tiny = ember.finfo(denominator.dtype).tiny
        return (numerator / denominator.clamp(min=tiny)).clamp(min=tiny)

    def log_prob(self, value):
        x = self._checked(value)
        a, b = self.df1 * 0.5, self.df2 * 0.5
        ratio = self.df1 / self.df2
        log_beta = a.lgamma() + b.lgamma() - (a + b).lgamma()
        return a * ratio.log() + (a - 1) * ember.log(x) - (a + b) * ember.log1p(ratio * x) - log_beta
