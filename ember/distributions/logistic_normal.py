"""LogisticNormal(loc, scale)."""
from . import constraints
from .normal import Normal
from .transformed_distribution import TransformedDistribution
from .transforms import StickBreakingTransform

__all__ = ["LogisticNormal"]


class LogisticNormal(TransformedDistribution):
    """The stick-breaking image of independent normals on ``R^(K-1)``: a distribution on the
    ``K``-simplex; ``loc`` and ``scale`` have shape ``batch_shape + (K - 1,)``."""
    support = constraints.simplex
    has_rsample = True
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}

    def __init__(self, loc, scale, validate_args=None):
        normal = Normal(loc, scale, validate_args=validate_args)
        if normal.batch_shape == ():  # one normal: a 2-simplex
            normal = normal.expand([1])
        super().__init__(normal, StickBreakingTransform(), validate_args=validate_args)

    # base_dist is Independent(Normal): the stick-breaking acts on a vector
    loc = property(lambda self: self.base_dist.base_dist.loc)
    scale = property(lambda self: self.base_dist.base_dist.scale)
