"""Constraints: small predicate objects. ``c.check(value)`` says, for each batch element of
``value`` (its last ``c.event_dim`` dims form one element), whether it lies in the set.

Bounded sets keep their bounds as attributes named in ``_bounds`` (shown by ``repr``);
the public names below are the singletons and classes torch.distributions.constraints
exposes (the registries in ``constraint_registry`` dispatch on the classes).
"""
from __future__ import annotations

import ember

__all__ = [
    # the base class and dependent (uncheckable) constraints
    "Constraint", "dependent", "dependent_property", "is_dependent",
    # fixed sets
    "real", "real_vector", "positive", "nonnegative", "unit_interval", "boolean",
    "nonnegative_integer", "positive_integer", "one_hot", "simplex", "lower_triangular",
    "lower_cholesky", "corr_cholesky", "square", "symmetric", "positive_semidefinite",
    "positive_definite",
    # families: call with bounds or with other constraints
    "greater_than", "greater_than_eq", "less_than", "interval", "half_open_interval",
    "integer_interval", "multinomial", "independent", "cat", "stack",
    "MixtureSameFamilyConstraint",
]


class Constraint:
    """A set of values. ``check`` returns a bool tensor of shape ``value.shape[:-event_dim]``."""
    event_dim = 0         # how many rightmost dims make one element
    is_discrete = False
    _bounds = ()          # names of the constructor arguments, in order

    def __init__(self, *args, **kwargs):
        given = dict(zip(self._bounds, args), **kwargs)
        if len(args) + len(kwargs) != len(self._bounds) or set(given) != set(self._bounds):
            raise TypeError(f"{type(self).__name__}() takes the arguments {self._bounds}")
        self.__dict__.update(given)

    def check(self, value):
        raise NotImplementedError

    def __repr__(self):
        shown = ", ".join(f"{name}={getattr(self, name)}" for name in self._bounds)
        return f"{type(self).__name__.lstrip('_')}({shown})"


# ---------------------------------------------------------------------------------------------
# Elementwise sets

def _is_integral(x):
    return x % 1 == 0


class _Real(Constraint):
    def check(self, value):
        return value == value          # NaN is the one real-typed value outside


class _Boolean(Constraint):
    is_discrete = True

    def check(self, value):
        return value.eq(0) | value.eq(1)


class _GreaterThan(Constraint):
    _bounds = ("lower_bound",)

    def check(self, value):
        return value > self.lower_bound


class _GreaterThanEq(Constraint):
    _bounds = ("lower_bound",)

    def check(self, value):
        return value >= self.lower_bound


class _LessThan(Constraint):
    _bounds = ("upper_bound",)

    def check(self, value):
        return value < self.upper_bound


class _Interval(Constraint):
    _bounds = ("lower_bound", "upper_bound")

    def check(self, value):
        return (value >= self.lower_bound) & (value <= self.upper_bound)


class _HalfOpenInterval(Constraint):
    _bounds = ("lower_bound", "upper_bound")

    def check(self, value):
        return (value >= self.lower_bound) & (value < self.upper_bound)


class _IntegerInterval(Constraint):
    is_discrete = True
    _bounds = ("lower_bound", "upper_bound")

    def check(self, value):
        return _is_integral(value) & (value >= self.lower_bound) & (value <= self.upper_bound)


class _IntegerLessThan(Constraint):
    is_discrete = True
    _bounds = ("upper_bound",)

    def check(self, value):
        return _is_integral(value) & (value <= self.upper_bound)


class _IntegerGreaterThan(Constraint):
    is_discrete = True
    _bounds = ("lower_bound",)

    def check(self, value):
        return _is_integral(value) & (value >= self.lower_bound)


# ---------------------------------------------------------------------------------------------
# Vector sets (event_dim 1)

class _Simplex(Constraint):
    event_dim = 1

    def check(self, value):
        nonnegative = (value >= 0).all(-1)
        return nonnegative & ((value.sum(-1) - 1).abs() < 1e-6)


class _OneHot(Constraint):
    is_discrete = True
    event_dim = 1

    def check(self, value):
        return (value.sum(-1) == 1) & boolean.check(value).all(-1)


class _Multinomial(Constraint):
    """Nonnegative counts summing to at most ``upper_bound`` (not shown by ``repr``)."""
    event_dim = 1
    is_discrete = True
    _bounds = ("upper_bound",)

    def __repr__(self):
        return "Multinomial()"

    def check(self, value):
        within_total = value.sum(-1) <= self.upper_bound
        return within_total & (value >= 0).all(-1)


# ---------------------------------------------------------------------------------------------
# Matrix sets (event_dim 2)

def _each_matrix(flags):
    """Reduce a ``(..., n, m)`` bool tensor to ``(...)``: all entries true."""
    return flags.flatten(-2).all(-1)


class _LowerTriangular(Constraint):
    event_dim = 2

    def check(self, value):
        return _each_matrix(value.tril() == value)


class _LowerCholesky(Constraint):
    event_dim = 2

    def check(self, value):
        positive_diagonal = (value.diagonal(dim1=-2, dim2=-1) > 0).all(-1)
        return _LowerTriangular().check(value) & positive_diagonal


class _CorrCholesky(Constraint):
    """Lower Cholesky factors whose rows have unit norm (factors of correlation matrices)."""
    event_dim = 2

    def check(self, value):
        tol = 10 * value.size(-1) * ember.finfo(value.dtype).eps
        norms = ember.linalg.norm(value.detach(), dim=-1)
        return _LowerCholesky().check(value) & ((norms - 1).abs() <= tol).all(-1)


class _Square(Constraint):
    event_dim = 2

    def check(self, value):
        rows, cols = value.shape[-2:]
        return ember.full(value.shape[:-2], rows == cols, dtype=ember.bool)


class _Symmetric(_Square):
    def check(self, value):
        square = super().check(value)
        if not bool(square.all()):
            return square
        return _each_matrix(ember.isclose(value, value.mT, atol=1e-6))


class _PositiveSemidefinite(_Symmetric):
    def check(self, value):
        symmetric = super().check(value)
        if not bool(symmetric.all()):
            return symmetric
        return (ember.linalg.eigvalsh(value) >= 0).all(-1)


class _PositiveDefinite(_Symmetric):
    def check(self, value):
        symmetric = super().check(value)
        if not bool(symmetric.all()):
            return symmetric
        return ember.linalg.cholesky_ex(value).info == 0


# ---------------------------------------------------------------------------------------------
# Sets built from other sets

class _IndependentConstraint(Constraint):
    """``base_constraint`` with its ``reinterpreted_batch_ndims`` rightmost batch dims read as
    event dims: an element is valid when all its parts are."""

    def __init__(self, base_constraint, reinterpreted_batch_ndims):
        assert isinstance(base_constraint, Constraint)
        assert isinstance(reinterpreted_batch_ndims, int) and reinterpreted_batch_ndims >= 0
        self.base_constraint = base_constraint
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims

    @property
    def is_discrete(self):
        return self.base_constraint.is_discrete

    @property
    def event_dim(self):
        return self.base_constraint.event_dim + self.reinterpreted_batch_ndims

    def check(self, value):
        flags = self.base_constraint.check(value)
        extra = self.reinterpreted_batch_ndims
        if flags.dim() < extra:
            raise ValueError(f"Expected value.dim() >= {self.event_dim} but got {value.dim()}")
        return flags.flatten(flags.dim() - extra).all(-1) if extra else flags

    def __repr__(self):
        return f"IndependentConstraint({self.base_constraint!r}, {self.reinterpreted_batch_ndims})"


class MixtureSameFamilyConstraint(Constraint):
    """The support of a MixtureSameFamily: its components' support, checked on the value with
    the component axis (just left of the event dims) put back."""

    def __init__(self, base_constraint):
        assert isinstance(base_constraint, Constraint), \
            f"base_constraint must be a Constraint, got {type(base_constraint).__name__}"
        self.base_constraint = base_constraint

    is_discrete = property(lambda self: self.base_constraint.is_discrete)
    event_dim = property(lambda self: self.base_constraint.event_dim)

    def check(self, value):
        with_axis = value.unsqueeze(value.dim() - self.event_dim)
        return self.base_constraint.check(with_axis).all(-1)

    def __repr__(self):
        return f"MixtureSameFamilyConstraint({self.base_constraint!r})"


class _Pieces(Constraint):
    """Shared part of ``cat`` and ``stack``: one constraint per piece of dimension ``dim``."""

    @property
    def is_discrete(self):
        return any(c.is_discrete for c in self.cseq)

    def __repr__(self):
        return f"{type(self).__name__.lstrip('_')}()"


class _Cat(_Pieces):
    """``cseq[i]`` holds on the ``i``-th slice of ``dim``, of length ``lengths[i]`` (default 1)."""

    def __init__(self, cseq, dim=0, lengths=None):
        self.cseq = list(cseq)
        self.lengths = [1] * len(self.cseq) if lengths is None else list(lengths)
        assert len(self.lengths) == len(self.cseq)
        self.dim = dim

    @property
    def event_dim(self):
        return max(c.event_dim for c in self.cseq)

    def check(self, value):
        starts = [sum(self.lengths[:i]) for i in range(len(self.lengths))]
        return ember.cat([c.check(value.narrow(self.dim, start, length))
                          for c, start, length in zip(self.cseq, starts, self.lengths)], self.dim)


class _Stack(_Pieces):
    """``cseq[i]`` holds on ``value.select(dim, i)``."""

    def __init__(self, cseq, dim=0):
        self.cseq = list(cseq)
        self.dim = dim

    @property
    def event_dim(self):
        inner = max(c.event_dim for c in self.cseq)
        stacked_inside_event = self.dim < 0 and -self.dim > inner
        return inner + 1 if stacked_inside_event else inner

    def check(self, value):
        return ember.stack([c.check(value.select(self.dim, i)) for i, c in enumerate(self.cseq)],
                           self.dim)


# ---------------------------------------------------------------------------------------------
# Dependent constraints: placeholders for supports that depend on a distribution's parameters

class _Dependent(Constraint):
    """Cannot be checked; ``is_discrete`` and ``event_dim`` are known only where given."""

    def __init__(self, **facts):
        self._facts = {k: v for k, v in facts.items() if v is not NotImplemented}

    def _fact(self, name):
        if name not in self._facts:
            raise NotImplementedError(f".{name} cannot be determined statically")
        return self._facts[name]

    is_discrete = property(lambda self: self._fact("is_discrete"))
    event_dim = property(lambda self: self._fact("event_dim"))

    def __call__(self, *, is_discrete=NotImplemented, event_dim=NotImplemented):
        """A dependent constraint with these facts known (the others as in ``self``)."""
        return _Dependent(**{**self._facts, **_Dependent(is_discrete=is_discrete,
                                                         event_dim=event_dim)._facts})

    def check(self, value):
        raise ValueError("Cannot determine validity of dependent constraint")


class _DependentProperty(property, _Dependent):
    """A property (e.g. ``Uniform.support``) that is also a dependent constraint; usable bare
    (``@dependent_property``) or with facts (``@dependent_property(event_dim=1)``)."""

    def __init__(self, fn=None, **facts):
        property.__init__(self, fn)
        _Dependent.__init__(self, **facts)

    def __call__(self, fn):
        return _DependentProperty(fn, **self._facts)


def is_dependent(constraint):
    """True for ``constraints.dependent`` and the constraints made from it."""
    return isinstance(constraint, _Dependent)


# ---------------------------------------------------------------------------------------------
# Public names

dependent = _Dependent()
dependent_property = _DependentProperty

real = _Real()
boolean = _Boolean()
positive = _GreaterThan(0.0)
nonnegative = _GreaterThanEq(0.0)
unit_interval = _Interval(0.0, 1.0)
positive_integer = _IntegerGreaterThan(1)
nonnegative_integer = _IntegerGreaterThan(0)
one_hot = _OneHot()
simplex = _Simplex()
square = _Square()
symmetric = _Symmetric()
lower_triangular = _LowerTriangular()
lower_cholesky = _LowerCholesky()
corr_cholesky = _CorrCholesky()
positive_definite = _PositiveDefinite()
positive_semidefinite = _PositiveSemidefinite()

greater_than, greater_than_eq, less_than = _GreaterThan, _GreaterThanEq, _LessThan
interval, half_open_interval, integer_interval = _Interval, _HalfOpenInterval, _IntegerInterval
multinomial = _Multinomial
independent, cat, stack = _IndependentConstraint, _Cat, _Stack
real_vector = independent(real, 1)
