"""Helpers shared by the distributions: broadcasting, probs/logits conversion, lazy properties,
standard-normal and standard-gamma draws (the latter with an implicit-reparameterisation
gradient)."""
from __future__ import annotations

from numbers import Number

import numpy as np

import ember

__all__ = ["broadcast_all", "logits_to_probs", "probs_to_logits", "clamp_probs",
           "lazy_property", "tril_matrix_to_vec", "vec_to_tril_matrix"]


def broadcast_all(*values):
    """Broadcast numbers and tensors to one shape; numbers become tensors of the default dtype
    (or of the first tensor's dtype)."""
    if not all(ember.is_tensor(v) or isinstance(v, Number) for v in values):
        raise ValueError("Input arguments must all be instances of numbers.Number, "
                         "torch.Tensor or objects implementing __torch_function__.")
    if not all(ember.is_tensor(v) for v in values):
        dtype = ember.get_default_dtype()
        for v in values:
            if ember.is_tensor(v):
                dtype = v.dtype
                break
        values = [v if ember.is_tensor(v) else ember.tensor(v, dtype=dtype) for v in values]
    return ember.broadcast_tensors(*values)


def _standard_normal(shape, dtype, device=None):
    """A tensor of ``shape`` filled from N(0, 1) by ``normal_`` (torch's stream)."""
    return ember.empty(shape, dtype=dtype).normal_()


def _sum_rightmost(value, dim):
    """Sum out the ``dim`` rightmost dimensions of ``value``."""
    if dim == 0:
        return value
    required_shape = value.shape[:-dim] + (-1,)
    return value.reshape(required_shape).sum(-1)


def logits_to_probs(logits, is_binary=False):
    """Logits to probabilities: sigmoid when ``is_binary``, else softmax over the last dim."""
    if is_binary:
        return ember.sigmoid(logits)
    return ember.softmax(logits, dim=-1)


def clamp_probs(probs):
    """Clamp probabilities into the open interval ``(eps, 1 - eps)``."""
    eps = ember.finfo(probs.dtype).eps
    return probs.clamp(min=eps, max=1 - eps)


def probs_to_logits(probs, is_binary=False):
    """Probabilities to logits: ``log(p) - log1p(-p)`` when ``is_binary``, else ``log(p)``."""
    ps_clamped = clamp_probs(probs)
    if is_binary:
        return ember.log(ps_clamped) - ember.log1p(-ps_clamped)
    return ember.log(ps_clamped)


class lazy_property:
    """A property computed once per instance on first access (grad enabled), then cached in the
    instance's ``__dict__``."""

    def __init__(self, wrapped):
        self.wrapped = wrapped
        self.__doc__ = wrapped.__doc__

    def __get__(self, instance, obj_type=None):
        if instance is None:
            return _lazy_property_and_property(self.wrapped)
        with ember.enable_grad():
            value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value


class _lazy_property_and_property(lazy_property, property):
    """What ``Class.attr`` returns for a lazy_property (so Sphinx-like tools see a property)."""

    def __init__(self, wrapped):
        property.__init__(self, wrapped)


def tril_matrix_to_vec(mat, diag=0):
    """The lower triangle (offset ``diag``) of ``(..., n, n)`` as ``(..., m)``, row by row."""
    n = mat.shape[-1]
    if not (-n <= diag < n):
        raise ValueError(f"diag ({diag}) provided is outside [{-n}, {n - 1}].")
    rows, cols = np.tril_indices(n, k=diag)
    return mat[..., ember.from_numpy(rows), ember.from_numpy(cols)]


def vec_to_tril_matrix(vec, diag=0):
    """Inverse of :func:`tril_matrix_to_vec`: ``(..., m)`` to ``(..., n, n)``."""
    m = vec.shape[-1]
    n = 1
    while len(np.tril_indices(n, k=diag)[0]) < m:
        n += 1
    if len(np.tril_indices(n, k=diag)[0]) != m:
        raise ValueError(f"The size of last dimension is {m} which cannot be expressed as "
                         "the lower triangular part of a square D x D matrix.")
    rows, cols = np.tril_indices(n, k=diag)
    flat = vec.new_zeros(vec.shape[:-1] + (n * n,))
    index = ember.from_numpy(rows * n + cols).expand(vec.shape)
    return flat.scatter(-1, index, vec).reshape(vec.shape[:-1] + (n, n))


def _batch_mv(bmat, bvec):
    """Batched matrix-vector product ``(..., n, m) @ (..., m) -> (..., n)`` with broadcasting."""
    return ember.matmul(bmat, bvec.unsqueeze(-1)).squeeze(-1)


def _batch_mahalanobis(bL, bx):
    """Squared Mahalanobis distance ``x^T (L L^T)^-1 x`` for lower-triangular ``L (..., n, n)``
    and ``x (..., n)``, broadcasting the batch dims."""
    n = bx.size(-1)
    shape = ember.broadcast_shapes(bL.shape[:-2], bx.shape[:-1])
    L = bL.expand(shape + (n, n))
    x = bx.expand(shape + (n,))
    M = ember.linalg.solve_triangular(L, x.unsqueeze(-1), upper=False).squeeze(-1)
    return M.pow(2).sum(-1)


# ---------------------------------------------------------------------------------------------
# Standard gamma draws

def _standard_gamma(alpha):
    """Gamma(alpha, 1) draws on torch's stream (``ember._standard_gamma``: torch's
    Marsaglia-Tsang sampler), differentiable w.r.t. ``alpha`` (torch's implicit gradient)."""
    return ember._standard_gamma(alpha)


def expand_probs_or_logits(src, new, shape):
    """Give ``new`` the probs and/or logits ``src`` holds (whichever exist), expanded to
    ``shape``; ``new._param`` is the last of them (the one the constructor stored)."""
    for name in ("probs", "logits"):
        if name in src.__dict__:
            setattr(new, name, getattr(src, name).expand(shape))
            new._param = getattr(new, name)


def init_probs_or_logits(dist, probs, logits):
    """Store exactly one of ``probs``/``logits`` (broadcast to a tensor) on ``dist`` and
    return the batch shape it gives (empty for a Python number)."""
    if (probs is None) == (logits is None):
        raise ValueError("Either `probs` or `logits` must be specified, but not both.")
    name, value = ("probs", probs) if probs is not None else ("logits", logits)
    (t,) = broadcast_all(value)
    setattr(dist, name, t)
    dist._param = t
    return ember.Size() if isinstance(value, Number) else t.size()
