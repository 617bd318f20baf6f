"""HalfCauchy(scale)."""
import math

import ember
from . import constraints
from ._continuous import Reflected
from .cauchy import Cauchy
from .transforms import AbsTransform

__all__ = ["HalfCauchy"]


class HalfCauchy(Reflected):
    """``|X|`` for ``X ~ Cauchy(0, scale)``: infinite mean and variance."""
    support = constraints.nonnegative
    has_rsample = True
    arg_constraints = {"scale": constraints.positive}

    def __init__(self, scale, validate_args=None):
        super().__init__(Cauchy(0, scale, validate_args=False), AbsTransform(), validate_args=validate_args)

    mean = property(lambda self: ember.full(self._extended_shape(), math.inf, dtype=self.scale.dtype))
    variance = property(lambda self: self.base_dist.variance)

    def log_prob(self, value):
        return super().log_prob(ember.as_tensor(value, dtype=self.scale.dtype))
