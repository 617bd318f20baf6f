"""``biject_to(c)`` and ``transform_to(c)``: a transform from unconstrained reals onto the set
of constraint ``c`` (a bijection for ``biject_to``; ``transform_to`` may fold, e.g. softmax).

Each registry is a dict from constraint class to a factory ``constraint -> Transform``; the
tables at the bottom fill both.
"""
from __future__ import annotations

import functools
import numbers

from . import constraints as C, transforms as T

__all__ = ["biject_to", "transform_to", "ConstraintRegistry"]


class ConstraintRegistry:
    """Constraint class -> factory ``constraint -> Transform``."""

    def __init__(self):
        self._registry = {}

    def register(self, constraint, factory=None):
        """Register ``factory`` for ``constraint`` (a Constraint subclass, or an instance standing
        for its class); without ``factory``, a decorator."""
        if factory is None:            # used as a decorator
            return functools.partial(self.register, constraint)
        kind = type(constraint) if isinstance(constraint, C.Constraint) else constraint
        if not (isinstance(kind, type) and issubclass(kind, C.Constraint)):
            raise TypeError("Expected constraint to be either a Constraint subclass or instance, "
                            f"but got {constraint}")
        self._registry[kind] = factory
        return factory

    def __call__(self, constraint):
        factory = self._registry.get(type(constraint))
        if factory is None:
            raise NotImplementedError(f"Cannot transform {type(constraint).__name__} constraints")
        return factory(constraint)


biject_to = ConstraintRegistry()
transform_to = ConstraintRegistry()


def _is(value, number):
    return isinstance(value, numbers.Number) and value == number


def _onto_half_line(bound, direction):
    """exp onto (0, inf), then mirrored (``direction`` -1) and shifted to start at ``bound``."""
    return T.ComposeTransform([T.ExpTransform(), T.AffineTransform(bound, direction)])


def _onto_interval(c):
    """Sigmoid onto (0, 1), then stretched and shifted onto ``[lower_bound, upper_bound]``."""
    if _is(c.lower_bound, 0) and _is(c.upper_bound, 1):
        return T.SigmoidTransform()
    width = c.upper_bound - c.lower_bound
    return T.ComposeTransform([T.SigmoidTransform(), T.AffineTransform(c.lower_bound, width)])


def _nested(registry):
    """Factories for the constraints made of other constraints: they ask ``registry`` again."""
    return {
        C._IndependentConstraint: lambda c: T.IndependentTransform(
            registry(c.base_constraint), c.reinterpreted_batch_ndims),
        C._Cat: lambda c: T.CatTransform([registry(p) for p in c.cseq], c.dim, c.lengths),
        C._Stack: lambda c: T.StackTransform([registry(p) for p in c.cseq], c.dim),
    }


_BOTH = {
    C._Real: lambda c: T.identity_transform,
    C._GreaterThan: lambda c: _onto_half_line(c.lower_bound, +1),
    C._GreaterThanEq: lambda c: _onto_half_line(c.lower_bound, +1),
    C._LessThan: lambda c: _onto_half_line(c.upper_bound, -1),
    C._Interval: _onto_interval,
    C._HalfOpenInterval: _onto_interval,
    C._CorrCholesky: lambda c: T.CorrCholeskyTransform(),
}

_BIJECTIONS_ONLY = {C._Simplex: lambda c: T.StickBreakingTransform()}

_TRANSFORMS_ONLY = {
    C._Simplex: lambda c: T.SoftmaxTransform(),
    C._LowerCholesky: lambda c: T.LowerCholeskyTransform(),
    C._PositiveDefinite: lambda c: T.PositiveDefiniteTransform(),
    C._PositiveSemidefinite: lambda c: T.PositiveDefiniteTransform(),
}

for _registry, _own in ((biject_to, _BIJECTIONS_ONLY), (transform_to, _TRANSFORMS_ONLY)):
    for _kind, _factory in {**_BOTH, **_own, **_nested(_registry)}.items():
        _registry.register(_kind, _factory)
