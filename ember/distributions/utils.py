"""Helpers the distributions share: broadcasting parameters, probs <-> logits, cached
properties, sums over trailing dims, triangular packing, and the standard draws."""
from __future__ import annotations

from numbers import Number

import numpy as np

import ember

__all__ = ["broadcast_all", "logits_to_probs", "probs_to_logits", "clamp_probs",
           "lazy_property", "tril_matrix_to_vec", "vec_to_tril_matrix"]

euler_constant = 0.57721566490153286060        # Euler-Mascheroni constant, -digamma(1)


def broadcast_all(*values):
    """Tensors of one common shape from tensors and Python numbers. Numbers take the dtype of
    the first tensor given, or the default dtype when there is none."""
    tensors = [v for v in values if ember.is_tensor(v)]
    if len(tensors) + sum(isinstance(v, Number) for v in values) != len(values):
        raise ValueError("Input arguments must all be instances of numbers.Number, "
                         "torch.Tensor or objects implementing __torch_function__.")
    dtype = tensors[0].dtype if tensors else ember.get_default_dtype()
    as_tensors = [v if ember.is_tensor(v) else ember.tensor(v, dtype=dtype) for v in values]
    return ember.broadcast_tensors(*as_tensors)


def _standard_normal(shape, dtype, device=None):
    """N(0, 1) draws of ``shape`` (``normal_``, so on torch's stream)."""
    return ember.empty(shape, dtype=dtype).normal_()


def _standard_gamma(alpha):
    """Gamma(alpha, 1) draws on torch's stream, differentiable w.r.t. ``alpha`` (implicit
    reparameterisation; the op lives in ``ember._standard_gamma``)."""
    return ember._standard_gamma(alpha)


def _sum_rightmost(value, dim):
    """``value`` summed over its last ``dim`` dims (unchanged for ``dim == 0``)."""
    if dim == 0:
        return value
    return value.flatten(max(value.dim() - dim, 0)).sum(-1)


def logits_to_probs(logits, is_binary=False):
    """Probabilities from logits: sigmoid for one binary event, softmax over the last dim."""
    return ember.sigmoid(logits) if is_binary else ember.softmax(logits, dim=-1)


def probs_to_logits(probs, is_binary=False):
    """Logits from probabilities: ``log p - log(1 - p)`` for a binary event, else ``log p``
    (probabilities clamped away from 0 and 1 first)."""
    p = clamp_probs(probs)
    log_p = p.log()
    return log_p - (-p).log1p() if is_binary else log_p


def clamp_probs(probs):
    """``probs`` clamped into ``[eps, 1 - eps]`` (``eps`` of its dtype)."""
    eps = ember.finfo(probs.dtype).eps
    return probs.clamp(eps, 1 - eps)


class lazy_property:
    """A read-once attribute: the first access computes it (with grad enabled, so it stays
    differentiable) and stores the value in the instance, replacing the descriptor."""

    def __init__(self, wrapped):
        self.wrapped = wrapped
        self.__doc__ = wrapped.__doc__

    def __get__(self, instance, owner=None):
        if instance is not None:
            with ember.enable_grad():
                value = instance.__dict__[self.wrapped.__name__] = self.wrapped(instance)
            return value
        return _lazy_property_and_property(self.wrapped)


class _lazy_property_and_property(lazy_property, property):
    """What the class attribute reads as: a lazy_property that documentation tools also see as
    a property."""

    def __init__(self, wrapped):
        property.__init__(self, wrapped)


# ---------------------------------------------------------------------------------------------
# Triangular packing: the entries on and below diagonal ``diag`` of an n x n matrix, row by row

def _tril_size(n, diag):
    return len(np.tril_indices(n, k=diag)[0])


def tril_matrix_to_vec(mat, diag=0):
    """``(..., n, n)`` to the ``(..., m)`` vector of its lower triangle (offset ``diag``)."""
    n = mat.shape[-1]
    if diag < -n or diag >= n:
        raise ValueError(f"diag ({diag}) provided is outside [{-n}, {n - 1}].")
    rows, cols = (ember.from_numpy(i) for i in np.tril_indices(n, k=diag))
    return mat[..., rows, cols]


def vec_to_tril_matrix(vec, diag=0):
    """The inverse of :func:`tril_matrix_to_vec`: ``(..., m)`` to ``(..., n, n)``, zeros above
    the diagonal ``diag``; ``n`` is the smallest size whose triangle holds ``m`` entries."""
    m = vec.shape[-1]
    n = next(k for k in range(1, m + 2 + abs(diag)) if _tril_size(k, diag) >= m)
    if _tril_size(n, diag) != m:
        raise ValueError(f"The size of last dimension is {m} which cannot be expressed as "
                         "the lower triangular part of a square D x D matrix.")
    rows, cols = np.tril_indices(n, k=diag)
    flat_index = ember.from_numpy(rows * n + cols).expand(vec.shape)
    flat = vec.new_zeros(vec.shape[:-1] + (n * n,)).scatter(-1, flat_index, vec)
    return flat.reshape(vec.shape[:-1] + (n, n))


# ---------------------------------------------------------------------------------------------
# Batched linear algebra

def _batch_mv(bmat, bvec):
    """``(..., n, m) @ (..., m) -> (..., n)``, broadcasting the batch dims."""
    return (bmat @ bvec[..., None])[..., 0]


def _batch_mahalanobis(bL, bx):
    """``x^T (L L^T)^-1 x`` for lower-triangular ``L (..., n, n)`` and ``x (..., n)``: the
    squared norm of ``L^-1 x`` (batch dims broadcast)."""
    n = bx.shape[-1]
    batch = ember.broadcast_shapes(bL.shape[:-2], bx.shape[:-1])
    solved = ember.linalg.solve_triangular(bL.expand(batch + (n, n)),
                                           bx.expand(batch + (n,)).unsqueeze(-1), upper=False)
    return solved.squeeze(-1).pow(2).sum(-1)
