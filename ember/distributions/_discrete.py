"""Pieces the discrete and matrix families share: value checking, one probs-or-logits parameter
with the Bernoulli log-mass and entropy, the relaxed (Concrete) families' view of their base,
counting helpers, and the Gaussian linear algebra (triangular solves, Mahalanobis distances,
log-determinants; the low-rank forms by the Woodbury identity and the matrix determinant
lemma)."""
from __future__ import annotations

import functools
import math

import ember
from . import constraints
from .utils import broadcast_all, lazy_property, logits_to_probs, probs_to_logits

ONE_OF_PROBS_LOGITS = "Either `probs` or `logits` must be specified, but not both."

# the constraints of a binary (Bernoulli-like) and of a categorical probs/logits parameter, and
# of the three ways to give a Gaussian's scale
BINARY = {"probs": constraints.unit_interval, "logits": constraints.real}
SIMPLEX = {"probs": constraints.simplex, "logits": constraints.independent(constraints.real, 1)}
SCALE_MATRICES = {"covariance_matrix": constraints.positive_definite,
                  "precision_matrix": constraints.positive_definite,
                  "scale_tril": constraints.lower_cholesky}


def checks_value(method):
    """Decorate ``log_prob`` / ``cdf``: validate ``value`` first when the family validates."""
    @functools.wraps(method)
    def checked(self, value):
        return method(self, self._checked(value))
    return checked


def integers_up_to(last):
    """A ``support`` property: the integers ``0, ..., last(self)``."""
    def support(self):
        return constraints.integer_interval(0, last(self))
    return constraints.dependent_property(support, is_discrete=True, event_dim=0)


class ProbsOrLogits:
    """Mixin for a family given ``probs`` or ``logits`` (exactly one): the other is derived on
    first use, by sigmoid / logit when ``_binary``, by softmax / log otherwise."""
    _binary = True
    _batched = ("probs", "logits")

    def _take_param(self, probs, logits, *others):
        """Store the given parameter broadcast with ``others`` (returned, in the parameter's
        dtype)."""
        if (probs is None) == (logits is None):
            raise ValueError(ONE_OF_PROBS_LOGITS)
        self._given = "probs" if logits is None else "logits"
        param, *others = broadcast_all(probs if logits is None else logits, *others)
        setattr(self, self._given, param)
        return [other.to(param.dtype) for other in others]

    @property
    def _param(self):
        return self.__dict__[self._given]

    @property
    def param_shape(self):
        return self._param.shape

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits, is_binary=self._binary)

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=self._binary)


def log1p_exp(x):
    """``log(1 + e^x)`` without overflow (softplus with no threshold)."""
    return ember.logaddexp(x, x.new_zeros(()))


def logit(p):
    """``log(p / (1 - p))``."""
    return p.log() - (-p).log1p()


def bernoulli_log_mass(logits, value):
    """``x log p + (1 - x) log(1 - p) = x l - log(1 + e^l)`` for ``p = sigmoid(l)``, in the
    value's (floating) dtype, as torch."""
    log_mass = value * logits - log1p_exp(logits)
    return log_mass.to(value.dtype) if value.is_floating_point() else log_mass


def bernoulli_entropy(logits, probs):
    """``-p log p - (1 - p) log(1 - p) = log(1 + e^l) - p l``."""
    return log1p_exp(logits) - probs * logits


class Relaxed:
    """Mixin for a relaxed family that is a TransformedDistribution of its base ``base_dist``,
    which holds the parameters."""
    temperature = property(lambda self: self.base_dist.temperature)
    probs = property(lambda self: self.base_dist.probs)
    logits = property(lambda self: self.base_dist.logits)


# ---------------------------------------------------------------------------------------------
# Counts

def counts_support(count, dtype, batch_shape, expand):
    """``0, 1, ..., count - 1`` along a new leading dim, then ones (or ``batch_shape``)."""
    values = ember.arange(count, dtype=dtype).reshape((count,) + (1,) * len(batch_shape))
    return values.expand((count,) + tuple(batch_shape)) if expand else values


def homogeneous_count(total_count, what):
    """The common value of ``total_count`` as an int; NotImplementedError if it varies."""
    count = int(total_count.max())
    if count != total_count.min():
        raise NotImplementedError(f"Inhomogeneous total count not supported by `{what}`.")
    return count


def log_choose(n, k):
    """``log(n! / (k! (n - k)!))`` through lgamma."""
    return (n + 1).lgamma() - (k + 1).lgamma() - (n - k + 1).lgamma()


# ---------------------------------------------------------------------------------------------
# Gaussian linear algebra. L is a lower Cholesky factor: Sigma = L L^T.

LOG_2PI = math.log(2 * math.pi)


def matvec(matrix, vector):
    """``matrix @ vector`` over broadcast batch dims."""
    return (matrix @ vector.unsqueeze(-1)).squeeze(-1)


def half_log_det(L):
    """``log det(L L^T) / 2`` from the diagonal of the factor."""
    return L.diagonal(dim1=-2, dim2=-1).log().sum(-1)


def mahalanobis(L, x):
    """``x^T (L L^T)^-1 x = |L^-1 x|^2`` by one triangular solve."""
    z = ember.linalg.solve_triangular(L, x.unsqueeze(-1), upper=False)
    return z.squeeze(-1).square().sum(-1)


def scale_tril_from_precision(P):
    """Lower ``L`` with ``L L^T = P^-1``, without inverting ``P``: the Cholesky factor of ``P``
    read backwards (both axes flipped) is an upper ``U`` with ``U U^T = P``, so ``L = U^-T``."""
    U = ember.linalg.cholesky(P.flip(-2, -1)).flip(-2, -1)
    eye = ember.eye(P.shape[-1], dtype=P.dtype)
    return ember.linalg.solve_triangular(U, eye, upper=True).mT


def factor_from(covariance_matrix, precision_matrix, scale_tril):
    """The lower factor of the covariance, from whichever of the three was given."""
    if scale_tril is not None:
        return scale_tril
    if covariance_matrix is not None:
        return ember.linalg.cholesky(covariance_matrix)
    return scale_tril_from_precision(precision_matrix)


class LowRankCovariance:
    """``Sigma = W W^T + diag(d)`` with ``W (..., n, m)``, ``d (..., n)``. The capacitance
    ``C = I_m + W^T D^-1 W`` (Cholesky ``K``) gives, by the matrix determinant lemma,
    ``log det Sigma = log det C + sum log d`` and, by the Woodbury identity,
    ``x^T Sigma^-1 x = x^T D^-1 x - |K^-1 W^T D^-1 x|^2``."""

    def __init__(self, W, d):
        self.W, self.d = W, d
        self.Wt_over_d = W.mT / d.unsqueeze(-2)
        capacitance = self.Wt_over_d @ W + ember.eye(W.shape[-1], dtype=W.dtype)
        self.K = ember.linalg.cholesky(capacitance)

    def log_det(self):
        return 2 * half_log_det(self.K) + self.d.log().sum(-1)

    def mahalanobis(self, x):
        return (x.square() / self.d).sum(-1) - mahalanobis(self.K, matvec(self.Wt_over_d, x))

    def precision(self):
        """``D^-1 - (K^-1 W^T D^-1)^T (K^-1 W^T D^-1)`` (Woodbury)."""
        A = ember.linalg.solve_triangular(self.K, self.Wt_over_d, upper=False)
        return ember.diag_embed(self.d.reciprocal()) - A.mT @ A

    def scale_tril(self):
        """``D^1/2 chol(I_n + D^-1/2 W W^T D^-1/2)``."""
        sqrt_d = self.d.sqrt().unsqueeze(-1)
        scaled = self.W / sqrt_d
        inner = scaled @ scaled.mT + ember.eye(self.W.shape[-2], dtype=self.W.dtype)
        return sqrt_d * ember.linalg.cholesky(inner)

    def dense(self):
        return self.W @ self.W.mT + ember.diag_embed(self.d)
