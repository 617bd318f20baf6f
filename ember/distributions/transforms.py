"""Transforms: maps ``y = t(x)`` between constraint sets, with an inverse and the log of the
absolute Jacobian determinant (torch.distributions.transforms).

A transform is described by what it is: its map, its inverse, ``log|det J|``, its domain and
codomain (whose ``event_dim`` say how many rightmost dims one element spans) and, for monotone
elementwise maps, its sign. The fixed transforms (no parameters) are built from exactly that by
``_fixed``; the parameterised ones are short classes; composition, inversion, concatenation and
stacking are written once each. ``cache_size=1`` remembers the last ``(x, y)`` pair so that
``t.inv(t(x))`` returns ``x`` itself.
"""
from __future__ import annotations

import functools
import math
import numbers
import weakref

import ember
from . import constraints
from .utils import _sum_rightmost, tril_matrix_to_vec, vec_to_tril_matrix

__all__ = [
    "Transform", "identity_transform", "ComposeTransform", "IndependentTransform",
    "ReshapeTransform", "CatTransform", "StackTransform", "CumulativeDistributionTransform",
    "AffineTransform", "PowerTransform", "ExpTransform", "SigmoidTransform", "TanhTransform",
    "SoftplusTransform", "AbsTransform", "SoftmaxTransform", "StickBreakingTransform",
    "LowerCholeskyTransform", "PositiveDefiniteTransform", "CorrCholeskyTransform",
]


def _softplus(x):
    return ember.nn.functional.softplus(x)


def _need_dims(shape, n):
    if len(shape) < n:
        raise ValueError("Too few dimensions on input")


class Transform:
    """Base class. Subclasses give ``_call`` (the map), ``_inverse``, ``log_abs_det_jacobian``,
    ``domain``/``codomain`` and, where the shape changes, ``forward_shape``/``inverse_shape``.
    ``_params`` names the constructor arguments ``with_cache`` passes on."""
    bijective = False
    domain: constraints.Constraint
    codomain: constraints.Constraint
    _params = ()

    def __init__(self, cache_size=0):
        if cache_size not in (0, 1):
            raise ValueError("cache_size must be 0 or 1")
        self._cache_size = cache_size
        self._cached_x_y = (None, None)
        self._inv = None                  # a weak reference to the inverse, once made
        super().__init__()

    def __getstate__(self):
        return {**self.__dict__, "_inv": None}

    # -- structure ------------------------------------------------------------------------
    @property
    def event_dim(self):
        if self.domain.event_dim != self.codomain.event_dim:
            raise ValueError("Please use either .domain.event_dim or .codomain.event_dim")
        return self.domain.event_dim

    @property
    def sign(self):
        """+1 / -1 for an increasing / decreasing elementwise bijection."""
        raise NotImplementedError

    @property
    def inv(self):
        """The inverse transform: ``t.inv(t(x)) == x``; ``t.inv.inv is t``."""
        inverse = self._inv() if self._inv is not None else None
        if inverse is None:
            inverse = self._make_inverse()
            self._inv = weakref.ref(inverse)
        return inverse

    def _make_inverse(self):
        return _InverseTransform(self)

    def with_cache(self, cache_size=1):
        """This transform with another cache size (itself when already so)."""
        if cache_size == self._cache_size:
            return self
        if not self._params and type(self).__init__ is not Transform.__init__:
            raise NotImplementedError(f"{type(self)}.with_cache is not implemented")
        params = [getattr(self, name) for name in self._params]
        return type(self)(*params, cache_size=cache_size)

    def __hash__(self):
        return id(self)

    def __eq__(self, other):             # (``!=`` follows, as for every Python object)
        return self is other

    def __repr__(self):
        return type(self).__name__ + "()"

    # -- evaluation -----------------------------------------------------------------------
    def _call(self, x):
        raise NotImplementedError(f"{type(self).__name__} does not define its map")

    def _inverse(self, y):
        raise NotImplementedError(f"{type(self).__name__} does not define its inverse")

    def log_abs_det_jacobian(self, x, y):
        """``log |det dy/dx|``, of shape ``x.shape[:x.dim() - domain.event_dim]``."""
        raise NotImplementedError(f"{type(self).__name__} does not define log|det J|")

    def forward_shape(self, shape):
        """The shape of ``t(x)`` for ``x`` of ``shape``."""
        return shape

    def inverse_shape(self, shape):
        """The shape of ``t.inv(y)`` for ``y`` of ``shape``."""
        return shape

    def __call__(self, x):
        if not self._cache_size:
            return self._call(x)
        last_x, last_y = self._cached_x_y
        if x is last_x:
            return last_y
        y = self._call(x)
        self._cached_x_y = (x, y)
        return y

    def _inv_call(self, y):
        if not self._cache_size:
            return self._inverse(y)
        last_x, last_y = self._cached_x_y
        if y is last_y:
            return last_x
        x = self._inverse(y)
        self._cached_x_y = (x, y)
        return x


class _InverseTransform(Transform):
    """``t.inv``: every property of ``t`` read the other way round."""

    def __init__(self, transform):
        super().__init__(cache_size=transform._cache_size)
        self._inv = transform             # strong: an inverse keeps its forward alive

    domain = constraints.dependent_property(is_discrete=False)(lambda self: self._inv.codomain)
    codomain = constraints.dependent_property(is_discrete=False)(lambda self: self._inv.domain)
    bijective = property(lambda self: self._inv.bijective)
    sign = property(lambda self: self._inv.sign)
    inv = property(lambda self: self._inv)

    def with_cache(self, cache_size=1):
        return self._inv.with_cache(cache_size).inv

    def __eq__(self, other):
        return isinstance(other, _InverseTransform) and self._inv == other._inv

    __hash__ = Transform.__hash__

    def __repr__(self):
        return f"_InverseTransform({self._inv!r})"

    forward_shape = property(lambda self: self._inv.inverse_shape)
    inverse_shape = property(lambda self: self._inv.forward_shape)

    def __call__(self, y):
        return self._inv._inv_call(y)

    def log_abs_det_jacobian(self, x, y):
        return self._inv.log_abs_det_jacobian(y, x).neg()


# ---------------------------------------------------------------------------------------------
# Fixed transforms: built from their map, inverse and log|det J|

def _fixed(name, doc, domain, codomain, forward, inverse, log_det=None, *, sign=None,
           bijective=True, shapes=None):
    """A parameterless Transform class. ``log_det(x, y)`` and ``sign`` may be absent (then
    they raise NotImplementedError); ``shapes`` is ``(forward_shape, inverse_shape)`` for maps
    that change the shape."""
    body = {
        "__doc__": doc, "__module__": __name__, "__qualname__": name,
        "domain": domain, "codomain": codomain, "bijective": bijective,
        "_call": lambda self, x: forward(x), "_inverse": lambda self, y: inverse(y),
        "__eq__": lambda self, other: isinstance(other, cls), "__hash__": Transform.__hash__,
    }
    if log_det is not None:
        body["log_abs_det_jacobian"] = lambda self, x, y: log_det(x, y)
    if sign is not None:
        body["sign"] = sign
    if shapes is not None:
        body["forward_shape"] = lambda self, shape: shapes[0](shape)
        body["inverse_shape"] = lambda self, shape: shapes[1](shape)
    cls = type(name, (Transform,), body)
    return cls


def _sigmoid(x):
    tiny, eps = ember.finfo(x.dtype).tiny, ember.finfo(x.dtype).eps
    return ember.sigmoid(x).clamp(min=tiny, max=1.0 - eps)


def _logit(y):
    tiny, eps = ember.finfo(y.dtype).tiny, ember.finfo(y.dtype).eps
    y = y.clamp(min=tiny, max=1.0 - eps)
    return y.log() - ember.log1p(-y)


def _log_dtanh(x):
    """``log(1 - tanh(x)^2) = 2 (log 2 - x - softplus(-2x))``, stable for large ``|x|``."""
    return 2.0 * (math.log(2.0) - x - _softplus(-2.0 * x))


ExpTransform = _fixed(
    "ExpTransform", "``y = exp(x)``.", constraints.real, constraints.positive,
    forward=ember.exp, inverse=ember.log, log_det=lambda x, y: x, sign=+1)

SigmoidTransform = _fixed(
    "SigmoidTransform", "``y = sigmoid(x)`` (kept inside the open unit interval).",
    constraints.real, constraints.unit_interval, forward=_sigmoid, inverse=_logit,
    log_det=lambda x, y: -(_softplus(x) + _softplus(-x)), sign=+1)

TanhTransform = _fixed(
    "TanhTransform", "``y = tanh(x)``, onto ``(-1, 1)``.", constraints.real,
    constraints.interval(-1.0, 1.0), forward=ember.tanh, inverse=ember.atanh,
    log_det=lambda x, y: _log_dtanh(x), sign=+1)

SoftplusTransform = _fixed(
    "SoftplusTransform", "``y = log(1 + exp(x))``.", constraints.real, constraints.positive,
    forward=_softplus, inverse=lambda y: y + ember.log(-ember.expm1(-y)),
    log_det=lambda x, y: -_softplus(-x), sign=+1)

AbsTransform = _fixed(
    "AbsTransform", "``y = |x|`` (not injective: the inverse returns the positive root).",
    constraints.real, constraints.positive, forward=ember.abs, inverse=lambda y: y,
    bijective=False)


def _vector_shape(shape):
    _need_dims(shape, 1)
    return shape


def _softmax(x):
    unnormalised = (x - x.amax(-1, keepdim=True)).exp()
    return unnormalised / unnormalised.sum(-1, keepdim=True)


SoftmaxTransform = _fixed(
    "SoftmaxTransform", "``y = softmax(x)`` over the last dim (not injective: the inverse is "
    "``log y``).", constraints.real_vector, constraints.simplex, forward=_softmax,
    inverse=ember.log, bijective=False, shapes=(_vector_shape, _vector_shape))


# Stick breaking: z_i = sigmoid(x_i - log(K - 1 - i)) is the fraction of the remaining stick
# given to y_i; the last entry takes what is left. The shift makes x = 0 the simplex centre.

def _stick_shift(k, dtype):
    """``log(k), log(k - 1), ..., log(1)`` (length ``k``)."""
    return ember.arange(k, 0, -1, dtype=dtype).log()


def _stick_forward(x):
    z = ember.sigmoid(x - _stick_shift(x.shape[-1], x.dtype))
    left = (1 - z).cumprod(-1)                       # stick left after each break
    one = ember.ones_like(x[..., :1])
    return ember.cat([z, one], -1) * ember.cat([one, left], -1)


def _stick_inverse(y):
    pieces = y[..., :-1]
    left = (1 - pieces.cumsum(-1)).clamp(min=ember.finfo(y.dtype).tiny)
    return pieces.log() - left.log() + _stick_shift(pieces.shape[-1], y.dtype)


def _stick_log_det(x, y):
    # dy_i/dx_i = y_i (1 - z_i); the Jacobian is triangular
    u = x - _stick_shift(x.shape[-1], x.dtype)
    return (y[..., :-1].log() + ember.nn.functional.logsigmoid(u) - u).sum(-1)


def _one_longer(shape):
    _need_dims(shape, 1)
    return shape[:-1] + (shape[-1] + 1,)


def _one_shorter(shape):
    _need_dims(shape, 1)
    return shape[:-1] + (shape[-1] - 1,)


StickBreakingTransform = _fixed(
    "StickBreakingTransform", "``R^(K-1)`` onto the ``K``-simplex by stick breaking.",
    constraints.real_vector, constraints.simplex, forward=_stick_forward,
    inverse=_stick_inverse, log_det=_stick_log_det, shapes=(_one_longer, _one_shorter))


def _on_diagonal(fn, m):
    """The strict lower triangle of ``m`` plus ``fn`` of its diagonal on the diagonal."""
    return m.tril(-1) + ember.diag_embed(fn(ember.diagonal(m, dim1=-2, dim2=-1)))


def _exp_diagonal(x):
    return _on_diagonal(ember.exp, x)


def _log_diagonal(y):
    return _on_diagonal(ember.log, y)


LowerCholeskyTransform = _fixed(
    "LowerCholeskyTransform", "Square matrices to lower-triangular ones with a positive "
    "diagonal: the strict lower part kept, the diagonal exponentiated.",
    constraints.independent(constraints.real, 2), constraints.lower_cholesky,
    forward=_exp_diagonal, inverse=_log_diagonal, bijective=False)


def _gram(x):
    factor = _exp_diagonal(x)
    return factor @ factor.mT


PositiveDefiniteTransform = _fixed(
    "PositiveDefiniteTransform", "Square matrices to positive-definite ones, ``L L^T`` with "
    "``L`` from LowerCholeskyTransform.", constraints.independent(constraints.real, 2),
    constraints.positive_definite, forward=_gram,
    inverse=lambda y: _log_diagonal(ember.linalg.cholesky(y)), bijective=False)


# CorrCholesky: x (D(D-1)/2 values) -> partial correlations r = tanh(x) in the strict lower
# triangle -> row i of L is r_ij * sqrt(prod_{k<j} (1 - r_ik^2)) for j < i and the remaining
# length sqrt(prod_{k<i} (1 - r_ik^2)) on the diagonal, so every row has unit norm.

def _remaining_before(values):
    """For each row, ``prod_{k<j} values_k`` at position ``j`` (1 at ``j = 0``)."""
    ones = ember.ones_like(values[..., :1])
    return ember.cat([ones, values[..., :-1].cumprod(-1)], -1)


def _corr_forward(x):
    eps = ember.finfo(x.dtype).eps
    r = vec_to_tril_matrix(x.tanh().clamp(min=-1 + eps, max=1 - eps), diag=-1)
    lengths = _remaining_before((1 - r * r).sqrt())
    return (r + ember.eye(r.shape[-1], dtype=r.dtype)) * lengths


def _unused_norm(y):
    """``1 - sum_{k<j} y_ik^2`` at ``(i, j)``: the squared length row ``i`` has left at ``j``."""
    used = (y * y).cumsum(-1)
    return ember.cat([ember.ones_like(used[..., :1]), 1 - used[..., :-1]], -1)


def _corr_inverse(y):
    r = tril_matrix_to_vec(y, diag=-1) / tril_matrix_to_vec(_unused_norm(y), diag=-1).sqrt()
    return ember.atanh(r)


def _corr_log_det(x, y):
    # d L_ij / d r_ij = sqrt(unused norm at (i, j)); the tanh step adds log(1 - r^2)
    stick = 0.5 * tril_matrix_to_vec(_unused_norm(y), diag=-1).log().sum(-1)
    return stick + _log_dtanh(x).sum(-1)


def _corr_forward_shape(shape):
    _need_dims(shape, 1)
    n = shape[-1]
    d = round((2 * n + 0.25) ** 0.5 + 0.5)
    if d * (d - 1) // 2 != n:
        raise ValueError("Input is not a flattend lower-diagonal number")
    return shape[:-1] + (d, d)


def _corr_inverse_shape(shape):
    _need_dims(shape, 2)
    if shape[-1] != shape[-2]:
        raise ValueError("Input is not square")
    d = shape[-1]
    return shape[:-2] + (d * (d - 1) // 2,)


CorrCholeskyTransform = _fixed(
    "CorrCholeskyTransform", "Unconstrained vectors of length ``D(D-1)/2`` to Cholesky factors "
    "of ``D x D`` correlation matrices.", constraints.real_vector, constraints.corr_cholesky,
    forward=_corr_forward, inverse=_corr_inverse, log_det=_corr_log_det,
    shapes=(_corr_forward_shape, _corr_inverse_shape))


# ---------------------------------------------------------------------------------------------
# Parameterised elementwise transforms

def _shape_of(value):
    return value.shape if ember.is_tensor(value) else ()


def _same_value(a, b):
    if isinstance(a, numbers.Number) and isinstance(b, numbers.Number):
        return a == b
    return bool((ember.as_tensor(a) == ember.as_tensor(b)).all())


def _real_vectors(event_dim):
    return constraints.independent(constraints.real, event_dim) if event_dim else constraints.real


class AffineTransform(Transform):
    """``y = loc + scale * x``; the rightmost ``event_dim`` dims form one element."""
    bijective = True
    _params = ("loc", "scale", "event_dim")

    def __init__(self, loc, scale, event_dim=0, cache_size=0):
        super().__init__(cache_size=cache_size)
        self.loc, self.scale, self._event_dim = loc, scale, event_dim

    event_dim = property(lambda self: self._event_dim)
    domain = constraints.dependent_property(is_discrete=False)(
        lambda self: _real_vectors(self._event_dim))
    codomain = constraints.dependent_property(is_discrete=False)(
        lambda self: _real_vectors(self._event_dim))

    @property
    def sign(self):
        if isinstance(self.scale, numbers.Real):
            return (self.scale > 0) - (self.scale < 0)
        return self.scale.sign()

    def __eq__(self, other):
        return (isinstance(other, AffineTransform) and _same_value(self.loc, other.loc)
                and _same_value(self.scale, other.scale))

    __hash__ = Transform.__hash__

    def _inverse(self, y):
        return (y - self.loc) / self.scale

    def _call(self, x):
        return self.scale * x + self.loc

    def log_abs_det_jacobian(self, x, y):
        if isinstance(self.scale, numbers.Real):
            per_entry = ember.full_like(x, math.log(abs(self.scale)))
        else:
            per_entry = self.scale.abs().log()
        keep = x.dim() - self._event_dim
        return _sum_rightmost(per_entry, self._event_dim).expand(x.shape[:keep])

    def forward_shape(self, shape):
        return ember.broadcast_shapes(shape, _shape_of(self.loc), _shape_of(self.scale))

    inverse_shape = forward_shape


class PowerTransform(Transform):
    """``y = x ** exponent`` on the positive reals."""
    domain = constraints.positive
    codomain = constraints.positive
    bijective = True
    _params = ("exponent",)

    def __init__(self, exponent, cache_size=0):
        super().__init__(cache_size=cache_size)
        if not ember.is_tensor(exponent):
            exponent = ember.tensor(exponent, dtype=ember.get_default_dtype())
        self.exponent = exponent

    @property
    def sign(self):
        return self.exponent.sign()

    def __eq__(self, other):
        return isinstance(other, PowerTransform) and _same_value(self.exponent, other.exponent)

    __hash__ = Transform.__hash__

    def _call(self, x):
        return ember.pow(x, self.exponent)

    def _inverse(self, y):
        return ember.pow(y, self.exponent.reciprocal())

    def log_abs_det_jacobian(self, x, y):
        # dy/dx = exponent * x ** (exponent - 1) = exponent * y / x
        return (y / x * self.exponent).abs().log()

    def forward_shape(self, shape):
        return ember.broadcast_shapes(self.exponent.shape, shape)

    inverse_shape = forward_shape


class CumulativeDistributionTransform(Transform):
    """``y = distribution.cdf(x)``: the support of a univariate distribution onto [0, 1]."""
    bijective = True
    codomain = constraints.unit_interval
    sign = +1
    _params = ("distribution",)

    def __init__(self, distribution, cache_size=0):
        super().__init__(cache_size=cache_size)
        self.distribution = distribution

    domain = property(lambda self: self.distribution.support)

    def log_abs_det_jacobian(self, x, y):
        return self.distribution.log_prob(x)      # d cdf / dx is the density

    def _inverse(self, y):
        return self.distribution.icdf(y)

    def _call(self, x):
        return self.distribution.cdf(x)


# ---------------------------------------------------------------------------------------------
# Structural transforms

class ReshapeTransform(Transform):
    """The rightmost ``in_shape`` dims reshaped to ``out_shape`` (log|det J| = 0)."""
    bijective = True
    _params = ("in_shape", "out_shape")

    def __init__(self, in_shape, out_shape, cache_size=0):
        super().__init__(cache_size=cache_size)
        if math.prod(in_shape) != math.prod(out_shape):
            raise ValueError("in_shape, out_shape have different numbers of elements")
        self.in_shape, self.out_shape = ember.Size(in_shape), ember.Size(out_shape)

    domain = constraints.dependent_property(lambda self: _real_vectors(len(self.in_shape)))
    codomain = constraints.dependent_property(lambda self: _real_vectors(len(self.out_shape)))

    @staticmethod
    def _swap_tail(shape, old, new):
        _need_dims(shape, len(old))
        cut = len(shape) - len(old)
        if tuple(shape[cut:]) != tuple(old):
            raise ValueError(f"Shape mismatch: expected {shape[cut:]} but got {old}")
        return ember.Size(shape[:cut]) + new

    def _call(self, x):
        return x.reshape(x.shape[:x.dim() - len(self.in_shape)] + self.out_shape)

    def _inverse(self, y):
        return y.reshape(y.shape[:y.dim() - len(self.out_shape)] + self.in_shape)

    def log_abs_det_jacobian(self, x, y):
        return x.new_zeros(x.shape[:x.dim() - len(self.in_shape)])

    def forward_shape(self, shape):
        return self._swap_tail(shape, self.in_shape, self.out_shape)

    def inverse_shape(self, shape):
        return self._swap_tail(shape, self.out_shape, self.in_shape)


class IndependentTransform(Transform):
    """``base_transform`` with ``reinterpreted_batch_ndims`` more dims in each element (its
    log|det J| summed over them)."""
    _params = ("base_transform", "reinterpreted_batch_ndims")

    def __init__(self, base_transform, reinterpreted_batch_ndims, cache_size=0):
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims
        self.base_transform = base_transform.with_cache(cache_size)
        super().__init__(cache_size=cache_size)

    domain = constraints.dependent_property(is_discrete=False)(
        lambda self: constraints.independent(self.base_transform.domain,
                                             self.reinterpreted_batch_ndims))
    codomain = constraints.dependent_property(is_discrete=False)(
        lambda self: constraints.independent(self.base_transform.codomain,
                                             self.reinterpreted_batch_ndims))
    bijective = property(lambda self: self.base_transform.bijective)
    sign = property(lambda self: self.base_transform.sign)

    def __repr__(self):
        return f"IndependentTransform({self.base_transform!r}, {self.reinterpreted_batch_ndims})"

    def _call(self, x):
        _need_dims(x.shape, self.domain.event_dim)
        return self.base_transform(x)

    def _inverse(self, y):
        _need_dims(y.shape, self.codomain.event_dim)
        return self.base_transform.inv(y)

    def log_abs_det_jacobian(self, x, y):
        return _sum_rightmost(self.base_transform.log_abs_det_jacobian(x, y),
                              self.reinterpreted_batch_ndims)

    forward_shape = property(lambda self: self.base_transform.forward_shape)
    inverse_shape = property(lambda self: self.base_transform.inverse_shape)


def _chain_event_dim(parts, out_event_dim, backwards):
    """The event dims one element spans at the far end of ``parts`` when ``out_event_dim``
    are needed at the near end: each part needs at least its own event dims and adds the
    difference between its two sides."""
    event_dim = out_event_dim
    for part in (reversed(parts) if backwards else parts):
        near, far = (part.codomain, part.domain) if backwards else (part.domain, part.codomain)
        event_dim = max(far.event_dim, event_dim + far.event_dim - near.event_dim)
    return event_dim


class ComposeTransform(Transform):
    """``parts`` applied in order: ``ComposeTransform([f, g])(x) == g(f(x))``."""
    _params = ("parts",)

    def __init__(self, parts, cache_size=0):
        super().__init__(cache_size=cache_size)
        self.parts = [p.with_cache(cache_size) for p in parts] if cache_size else list(parts)

    def __eq__(self, other):
        return isinstance(other, ComposeTransform) and self.parts == other.parts

    __hash__ = Transform.__hash__

    def _end(self, backwards):
        if not self.parts:
            return constraints.real
        first, last = self.parts[0], self.parts[-1]
        end = first.domain if backwards else last.codomain
        start_dim = (last.codomain if backwards else first.domain).event_dim
        event_dim = _chain_event_dim(self.parts, start_dim, backwards)
        if event_dim > end.event_dim:
            return constraints.independent(end, event_dim - end.event_dim)
        return end

    domain = constraints.dependent_property(is_discrete=False)(lambda self: self._end(True))
    codomain = constraints.dependent_property(is_discrete=False)(lambda self: self._end(False))
    bijective = property(lambda self: all(p.bijective for p in self.parts))

    @property
    def sign(self):
        return math.prod((p.sign for p in self.parts), start=1)

    def _make_inverse(self):
        inverse = ComposeTransform([p.inv for p in reversed(self.parts)])
        inverse._inv = weakref.ref(self)
        return inverse

    def __call__(self, x):
        return functools.reduce(lambda value, part: part(value), self.parts, x)

    def log_abs_det_jacobian(self, x, y):
        if not self.parts:
            return ember.zeros_like(x)
        points = [x]                      # the input of every part, then y
        for part in self.parts[:-1]:
            points.append(part(points[-1]))
        points.append(y)
        total, event_dim = 0, self.domain.event_dim
        for part, a, b in zip(self.parts, points, points[1:]):
            term = part.log_abs_det_jacobian(a, b)
            total = total + _sum_rightmost(term, event_dim - part.domain.event_dim)
            event_dim += part.codomain.event_dim - part.domain.event_dim
        return total

    def forward_shape(self, shape):
        return functools.reduce(lambda s, part: part.forward_shape(s), self.parts, shape)

    def inverse_shape(self, shape):
        return functools.reduce(lambda s, part: part.inverse_shape(s), self.parts[::-1], shape)

    def __repr__(self):
        inner = ",\n    ".join(repr(p) for p in self.parts)
        return f"ComposeTransform(\n    {inner}\n)"


identity_transform = ComposeTransform([])


class _PiecewiseTransform(Transform):
    """Shared part of Cat/StackTransform: ``transforms[i]`` acts on piece ``i`` of ``dim``."""

    def __init__(self, tseq, cache_size=0):
        assert all(isinstance(t, Transform) for t in tseq)
        super().__init__(cache_size=cache_size)
        self.transforms = [t.with_cache(cache_size) for t in tseq] if cache_size else list(tseq)

    bijective = property(lambda self: all(t.bijective for t in self.transforms))

    def _check(self, value):
        if not -value.dim() <= self.dim < value.dim() or value.size(self.dim) != self._size:
            raise ValueError(f"{type(self).__name__} expects size {self._size} at dim "
                             f"{self.dim}, got {tuple(value.shape)}")

    def _map(self, value, inverse):
        self._check(value)
        return self._join([t.inv(v) if inverse else t(v)
                           for t, v in zip(self.transforms, self._pieces(value))])

    def _call(self, x):
        return self._map(x, inverse=False)

    def _inverse(self, y):
        return self._map(y, inverse=True)


class CatTransform(_PiecewiseTransform):
    """``tseq[i]`` applied to the ``i``-th slice of ``dim`` (of length ``lengths[i]``, default
    1); the results concatenated."""
    _params = ("transforms", "dim", "lengths")

    def __init__(self, tseq, dim=0, lengths=None, cache_size=0):
        super().__init__(tseq, cache_size)
        self.lengths = [1] * len(self.transforms) if lengths is None else list(lengths)
        assert len(self.lengths) == len(self.transforms)
        self.dim = dim

    event_dim = property(lambda self: max(t.event_dim for t in self.transforms))
    length = property(lambda self: sum(self.lengths))
    _size = length
    domain = constraints.dependent_property(
        lambda self: constraints.cat([t.domain for t in self.transforms], self.dim, self.lengths))
    codomain = constraints.dependent_property(
        lambda self: constraints.cat([t.codomain for t in self.transforms], self.dim,
                                     self.lengths))

    def _pieces(self, value):
        starts = [sum(self.lengths[:i]) for i in range(len(self.lengths))]
        return [value.narrow(self.dim, s, n) for s, n in zip(starts, self.lengths)]

    def _join(self, pieces):
        return ember.cat(pieces, dim=self.dim)

    def log_abs_det_jacobian(self, x, y):
        self._check(x)
        terms = [_sum_rightmost(t.log_abs_det_jacobian(a, b), self.event_dim - t.event_dim)
                 for t, a, b in zip(self.transforms, self._pieces(x), self._pieces(y))]
        # the concatenated dim, counted from the end of the log-det's shape
        dim_in_result = (self.dim - x.dim() if self.dim >= 0 else self.dim) + self.event_dim
        if dim_in_result < 0:
            return ember.cat(terms, dim=dim_in_result)
        return sum(terms[1:], terms[0])          # dim lies inside one element: add up


class StackTransform(_PiecewiseTransform):
    """``tseq[i]`` applied to ``x.select(dim, i)``; the results stacked along ``dim``."""
    _params = ("transforms", "dim")

    def __init__(self, tseq, dim=0, cache_size=0):
        super().__init__(tseq, cache_size)
        self.dim = dim

    _size = property(lambda self: len(self.transforms))
    domain = constraints.dependent_property(
        lambda self: constraints.stack([t.domain for t in self.transforms], self.dim))
    codomain = constraints.dependent_property(
        lambda self: constraints.stack([t.codomain for t in self.transforms], self.dim))

    def _pieces(self, value):
        return value.unbind(self.dim)

    def _join(self, pieces):
        return ember.stack(pieces, dim=self.dim)

    def log_abs_det_jacobian(self, x, y):
        self._check(x)
        self._check(y)
        return self._join([t.log_abs_det_jacobian(a, b)
                           for t, a, b in zip(self.transforms, self._pieces(x), self._pieces(y))])
