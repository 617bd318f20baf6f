"""HalfNormal(scale)."""
import math

from . import constraints
from ._continuous import Reflected
from .normal import Normal
from .transforms import AbsTransform

__all__ = ["HalfNormal"]


class HalfNormal(Reflected):
    """``|X|`` for ``X ~ Normal(0, scale)``."""
    support = constraints.nonnegative
    has_rsample = True
    arg_constraints = {"scale": constraints.positive}

    def __init__(self, scale, validate_args=None):
        super().__init__(Normal(0, scale, validate_args=False), AbsTransform(), validate_args=validate_args)

    mean = property(lambda self: self.scale * math.sqrt(2 / math.pi))
    variance = property(lambda self: self.scale.pow(2) * (1 - 2 / math.pi))
