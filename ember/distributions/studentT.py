"""StudentT(df, loc, scale)."""
import math

import ember
from . import constraints
from ._continuous import fill_where
from .distribution import Distribution
from .gamma import Chi2
from .utils import _standard_normal

__all__ = ["StudentT"]


class StudentT(Distribution):
    """Student's t with ``df`` degrees of freedom, shifted by ``loc`` and scaled by ``scale``:
    ``loc + scale * N / sqrt(V / df)``, ``N ~ Normal(0, 1)``, ``V ~ Chi2(df)``."""
    support = constraints.real
    has_rsample = True
    _batched = ("df", "loc", "scale")
    arg_constraints = {"df": constraints.positive, "loc": constraints.real, "scale": constraints.positive}

    def __init__(self, df, loc=0.0, scale=1.0, validate_args=None):
        self._init_params(df, loc, scale, validate_args=validate_args)
        Chi2(self.df)  # like torch, df is checked here even when validate_args is False

    mode = property(lambda self: self.loc)
    mean = property(lambda self: fill_where(self.df <= 1, math.nan, self.loc))

    @property
    def variance(self):
        """``scale^2 df / (df - 2)`` for df > 2, inf for 1 < df <= 2, nan below."""
        df = self.df
        safe_df = fill_where(df <= 2, 3.0, df)  # keeps the gradient finite
        finite = self.scale.pow(2) * safe_df / (safe_df - 2)
        return fill_where(df <= 1, math.nan, fill_where(df <= 2, math.inf, finite))

    def rsample(self, sample_shape=ember.Size()):
        normal = _standard_normal(self._extended_shape(sample_shape), dtype=self.df.dtype)
        chi2 = Chi2(self.df, validate_args=False).rsample(sample_shape)
        return self.loc + self.scale * (normal * ember.rsqrt(chi2 / self.df))

    def _log_beta_half(self):
        """``log B(df / 2, 1 / 2)``."""
        half_df = 0.5 * self.df
        return ember.lgamma(half_df) + math.lgamma(0.5) - ember.lgamma(half_df + 0.5)

    def log_prob(self, value):
        z = (self._checked(value) - self.loc) / self.scale
        df = self.df
        log_norm = self.scale.log() + 0.5 * df.log() + self._log_beta_half()
        return -0.5 * (df + 1) * ember.log1p(z * z / df) - log_norm

    def entropy(self):
        df = self.df
        digamma_gap = ember.digamma(0.5 * (df + 1)) - ember.digamma(0.5 * df)
        return self.scale.log() + 0.5 * df.log() + self._log_beta_half() + 0.5 * (df + 1) * digamma_gap
