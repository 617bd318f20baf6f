"""MultivariateNormal(loc, covariance_matrix | precision_matrix | scale_tril)."""
import ember
from . import constraints
from ._discrete import (LOG_2PI, SCALE_MATRICES, checks_value, factor_from, half_log_det,
                        mahalanobis, matvec)
from .distribution import Distribution
from .utils import _standard_normal, lazy_property

__all__ = ["MultivariateNormal"]

_MATRICES = ("covariance_matrix", "precision_matrix", "scale_tril")


def one_matrix(**matrices):
    """The name and value of the one matrix given (ValueError unless exactly one, of at least
    two dims)."""
    given = [(name, m) for name, m in matrices.items() if m is not None]
    if len(given) != 1:
        raise ValueError("Exactly one of covariance_matrix or precision_matrix or scale_tril "
                         "may be specified.")
    name, matrix = given[0]
    if matrix.dim() < 2:
        label = "scale_tril matrix" if name == "scale_tril" else name
        raise ValueError(f"{label} must be at least two-dimensional, with optional leading "
                         "batch dimensions")
    return name, matrix


class MultivariateNormal(Distribution):
    """``N(loc, Sigma)`` over ``R^n``: ``loc (..., n)`` and one of ``covariance_matrix``
    (``Sigma``), ``precision_matrix`` (``Sigma^-1``) or ``scale_tril`` (lower ``L``, ``Sigma =
    L L^T``) of shape ``(..., n, n)``. Everything is computed from ``L``."""
    support = constraints.real_vector
    has_rsample = True
    _batched = ("loc",) + _MATRICES
    arg_constraints = {"loc": constraints.real_vector, **SCALE_MATRICES}

    def __init__(self, loc, covariance_matrix=None, precision_matrix=None, scale_tril=None,
                 validate_args=None):
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        name, matrix = one_matrix(covariance_matrix=covariance_matrix,
                                  precision_matrix=precision_matrix, scale_tril=scale_tril)
        batch_shape = ember.broadcast_shapes(loc.shape[:-1], matrix.shape[:-2])
        setattr(self, name, matrix.expand(batch_shape + matrix.shape[-2:]))
        self.loc = loc.expand(batch_shape + loc.shape[-1:])
        super().__init__(batch_shape, loc.shape[-1:], validate_args=validate_args)
        self._unbroadcasted_scale_tril = factor_from(covariance_matrix, precision_matrix,
                                                     scale_tril)

    def _full(self, matrix):
        return matrix.expand(self.batch_shape + self.event_shape * 2)

    @lazy_property
    def scale_tril(self):
        return self._full(self._unbroadcasted_scale_tril)

    @lazy_property
    def covariance_matrix(self):
        L = self._unbroadcasted_scale_tril
        return self._full(L @ L.mT)

    @lazy_property
    def precision_matrix(self):
        return self._full(ember.cholesky_inverse(self._unbroadcasted_scale_tril))

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        """The diagonal of ``L L^T``: squared row norms of ``L``."""
        row_norms = self._unbroadcasted_scale_tril.square().sum(-1)
        return row_norms.expand(self.batch_shape + self.event_shape)

    def rsample(self, sample_shape=ember.Size()):
        """``loc + L eps`` with ``eps`` standard normal."""
        eps = _standard_normal(self._extended_shape(sample_shape), dtype=self.loc.dtype)
        return matvec(self._unbroadcasted_scale_tril, eps) + self.loc

    @checks_value
    def log_prob(self, value):
        L = self._unbroadcasted_scale_tril
        n = self.event_shape[0]
        return -0.5 * (n * LOG_2PI + mahalanobis(L, value - self.loc)) - half_log_det(L)

    def entropy(self):
        n = self.event_shape[0]
        h = 0.5 * n * (1 + LOG_2PI) + half_log_det(self._unbroadcasted_scale_tril)
        return h.expand(self.batch_shape)
