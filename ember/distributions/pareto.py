"""Pareto(scale, alpha)."""
from . import constraints
from .exponential import Exponential
from .transformed_distribution import TransformedDistribution
from .transforms import AffineTransform, ExpTransform

__all__ = ["Pareto"]


class Pareto(TransformedDistribution):
    """Pareto type I on ``[scale, inf)``: ``scale * exp(E)``, ``E ~ Exponential(alpha)``."""
    _batched = ("scale", "alpha")
    arg_constraints = {"alpha": constraints.positive, "scale": constraints.positive}

    def __init__(self, scale, alpha, validate_args=None):
        scale, alpha = self._set_params(scale, alpha)
        steps = [ExpTransform(), AffineTransform(0.0, scale)]
        super().__init__(Exponential(alpha, validate_args=validate_args), steps, validate_args=validate_args)

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        return constraints.greater_than_eq(self.scale)

    mode = property(lambda self: self.scale)

    @property
    def mean(self):
        """``alpha scale / (alpha - 1)``; inf for alpha <= 1."""
        a = self.alpha.clamp(min=1)
        return self.scale * a / (a - 1)

    @property
    def variance(self):
        """``scale^2 alpha / ((alpha - 1)^2 (alpha - 2))``; inf for alpha <= 2."""
        a = self.alpha.clamp(min=2)
        return self.scale.pow(2) * a / ((a - 1).pow(2) * (a - 2))

    def entropy(self):
        return (self.scale / self.alpha).log() + 1 + self.alpha.reciprocal()
