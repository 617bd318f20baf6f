"""Wishart(df, covariance_matrix | precision_matrix | scale_tril): sums of outer products of
Gaussian vectors."""
import math
import warnings
from numbers import Number

import numpy as np

import ember
from . import constraints
from ._discrete import SCALE_MATRICES, checks_value, factor_from, half_log_det
from .exp_family import ExponentialFamily
from .gamma import Chi2
from .multivariate_normal import _MATRICES
from .utils import lazy_property

__all__ = ["Wishart"]


def _mvdigamma(x, p):
    """The multivariate digamma ``sum_{i < p} digamma(x - i / 2)``."""
    halves = ember.arange(p, dtype=x.dtype) / 2
    return ember.digamma(x.unsqueeze(-1) - halves).sum(-1)


class Wishart(ExponentialFamily):
    """``X = sum_k z_k z_k^T`` over ``df`` draws ``z_k ~ N(0, Sigma)`` of shape ``(p,)``, for real
    ``df > p - 1``; ``Sigma`` is given by exactly one of ``covariance_matrix``,
    ``precision_matrix`` or ``scale_tril``. ``rsample`` uses the Bartlett decomposition
    ``X = (L A)(L A)^T``: ``A`` lower triangular with ``A_ii^2 ~ Chi2(df - i)`` and standard
    normal entries below the diagonal."""
    support = constraints.positive_definite
    has_rsample = True
    _batched = ("df",) + _MATRICES
    arg_constraints = {**SCALE_MATRICES, "df": constraints.greater_than(0)}

    def __init__(self, df, covariance_matrix=None, precision_matrix=None, scale_tril=None,
                 validate_args=None):
        matrices = (covariance_matrix, precision_matrix, scale_tril)
        given = {name: m for name, m in zip(_MATRICES, matrices) if m is not None}
        if len(given) != 1:
            raise ValueError("Exactly one of covariance_matrix or precision_matrix or scale_tril "
                             "may be specified.")
        (name, matrix), = given.items()
        if matrix.dim() < 2:
            raise ValueError("scale_tril must be at least two-dimensional, with optional leading "
                             "batch dimensions")
        p = matrix.shape[-1]
        if isinstance(df, Number):
            batch_shape = matrix.shape[:-2]
            self.df = ember.tensor(df, dtype=matrix.dtype).expand(batch_shape)
        else:
            batch_shape = ember.broadcast_shapes(matrix.shape[:-2], df.shape)
            self.df = df.expand(batch_shape)
        if bool((self.df <= p - 1).any()):
            raise ValueError(f"Value of df={df} expected to be greater than ndim - 1 = {p - 1}.")
        setattr(self, name, matrix.expand(batch_shape + (p, p)))
        # df must exceed p - 1: a constraint of this instance
        self.arg_constraints = dict(type(self).arg_constraints, df=constraints.greater_than(p - 1))
        if bool((self.df < p).any()):
            warnings.warn("Low df values detected. Singular samples are highly likely to occur "
                          "for ndim - 1 < df < ndim.")
        super().__init__(batch_shape, (p, p), validate_args=validate_args)
        self._unbroadcasted_scale_tril = factor_from(covariance_matrix, precision_matrix,
                                                     scale_tril)
        self._dist_chi2 = Chi2(self.df.unsqueeze(-1) - ember.arange(p, dtype=matrix.dtype))

    def _full(self, matrix):
        return matrix.expand(self.batch_shape + self.event_shape)

    def _times_df(self, matrix):
        return self.df.reshape(self.batch_shape + (1, 1)) * matrix

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
        return self._times_df(self.covariance_matrix)

    @property
    def mode(self):
        """``(df - p - 1) Sigma``, undefined (nan) unless ``df > p + 1``."""
        excess = self.df - self.event_shape[-1] - 1
        excess = ember.where(excess > 0, excess, math.nan)
        return excess.reshape(self.batch_shape + (1, 1)) * self.covariance_matrix

    @property
    def variance(self):
        """``Var X_ij = df (Sigma_ij^2 + Sigma_ii Sigma_jj)``."""
        V = self.covariance_matrix
        d = V.diagonal(dim1=-2, dim2=-1)
        return self._times_df(V.square() + d.unsqueeze(-1) * d.unsqueeze(-2))

    def _bartlett_sampling(self, sample_shape=ember.Size()):
        p = self.event_shape[-1]
        shape = ember.Size(sample_shape) + self.batch_shape
        diagonal = self._dist_chi2.rsample(sample_shape).sqrt()
        diagonal = diagonal.clamp(min=ember.finfo(self.df.dtype).eps)
        rows, cols = np.tril_indices(p, k=-1)
        below = ember.randn(shape + (len(rows),), dtype=diagonal.dtype)
        flat = ember.zeros(shape + (p * p,), dtype=diagonal.dtype)
        flat = flat.scatter(-1, ember.from_numpy(rows * p + cols).expand(below.shape), below)
        A = flat.reshape(shape + (p, p)) + ember.diag_embed(diagonal)
        LA = self._unbroadcasted_scale_tril @ A
        return LA @ LA.mT

    def _all_regular(self, draws):
        """Per draw (leading dim): are all the matrices of its batch non-singular?"""
        return self.support.check(draws).reshape(draws.shape[0], -1).all(-1)

    def rsample(self, sample_shape=ember.Size(), max_try_correction=None):
        """Bartlett draws, corrected as torch does, so that seeded streams agree: the first pass
        redraws every draw that has a *non*-singular matrix in its batch (torch's check), then
        each of at most ``max_try_correction`` (default 10) passes draws anew for the draws
        still pending and keeps a redraw whose matrices are all non-singular."""
        sample_shape = ember.Size(sample_shape)
        sample = self._bartlett_sampling(sample_shape)
        draws = sample.reshape((-1,) + self.batch_shape + self.event_shape)
        flagged = self.support.check(draws).reshape(draws.shape[0], -1).any(-1)
        pending = flagged.nonzero().squeeze(-1)
        if pending.numel() == 0:
            return sample
        warnings.warn("Singular sample detected.")
        for _ in range(10 if max_try_correction is None else max_try_correction):
            redraws = self._bartlett_sampling((pending.numel(),))
            kept = self._all_regular(redraws)
            draws = draws.index_put((pending[kept],), redraws[kept])
            pending = pending[~kept]
            if pending.numel() == 0:
                break
        return draws.reshape(sample.shape)

    def _log_normalizer(self):
        """``log(2^(df p / 2) |Sigma|^(df / 2) Gamma_p(df / 2))``."""
        p = self.event_shape[-1]
        half_df = self.df / 2
        return (half_df * (p * math.log(2) + 2 * half_log_det(self._unbroadcasted_scale_tril))
                + ember.mvlgamma(half_df, p=p))

    @checks_value
    def log_prob(self, value):
        """``(df - p - 1) / 2 log|X| - tr(Sigma^-1 X) / 2 - log normaliser``."""
        p = self.event_shape[-1]
        precision = ember.cholesky_inverse(self._unbroadcasted_scale_tril)
        trace = (precision * value).sum((-2, -1))
        log_det = ember.linalg.slogdet(value).logabsdet
        return (self.df - p - 1) / 2 * log_det - trace / 2 - self._log_normalizer()

    def entropy(self):
        """``log normaliser - (df - p - 1) / 2 E[log|X|] + df p / 2``, with ``E[log|X|] =
        psi_p(df / 2) + p log 2 + log|Sigma|``."""
        p = self.event_shape[-1]
        half_df = self.df / 2
        expected_log_det = (_mvdigamma(half_df, p) + p * math.log(2)
                            + 2 * half_log_det(self._unbroadcasted_scale_tril))
        return self._log_normalizer() - (self.df - p - 1) / 2 * expected_log_det + p * half_df
