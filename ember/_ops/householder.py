"""torch.geqrf (LAPACK's compact Householder QR) and torch.ormqr (a product with its Q).

``geqrf`` is one op record (kernel: LAPACK per matrix); like torch it has no derivative.
``ormqr`` applies the k reflectors H_i = I - tau_i v_i v_i^H of a geqrf result to a matrix
one at a time in ember ops (as ``linalg.householder_product`` builds Q), so it is
differentiable through autograd; Q itself is never formed.
"""
from __future__ import annotations

from ember._kernels import linalg as K
from ember._ops.linalg import _d, _E, _named, _out
from ember._ops.registry import OpDef, public

geqrf_op = OpDef("geqrf(Tensor self) -> (Tensor a, Tensor tau)", K.geqrf, promote=None,
                 grad_name="GeqrfBackward0")


@geqrf_op.def_backward
def _(ctx, grads, self):
    raise NotImplementedError("the derivative for 'geqrf' is not implemented.")


@public("geqrf", method=True)
def geqrf(input, *, out=None):
    """(a, tau): R on and above the diagonal of ``a``, Householder vectors below it."""
    a, tau = _d(geqrf_op, input)
    return _out(_named("geqrf", ("a", "tau"), (a, tau)), out, "geqrf", ("a", "tau"))


def _tname(dt):
    from ember._kernels.reduction import tname
    return tname(dt.np if hasattr(dt, "np") else dt)


def _check_ormqr(A, tau, C, left):
    if A.dim() < 2:
        raise RuntimeError("torch.ormqr: input must have at least 2 dimensions.")
    if C.dim() < 2:
        raise RuntimeError("torch.ormqr: other must have at least 2 dimensions.")
    side = -2 if left else -1
    if C.shape[side] != A.shape[-2]:
        raise RuntimeError(f"torch.ormqr: other.shape[{side}] must be equal to "
                           f"input.shape[-2]")
    if tau.shape[-1] != min(C.shape[side], A.shape[-1]):
        raise RuntimeError(f"torch.ormqr: tau.shape[-1] must be equal to "
                           f"min(other.shape[{side}], input.shape[-1])")
    if tuple(tau.shape[:-1]) != tuple(A.shape[:-2]):
        raise RuntimeError(f"torch.ormqr: Expected batch dimensions of tau to be equal to "
                           f"input.shape[:-2], but got {list(tau.shape[:-1])}")
    if tuple(C.shape[:-2]) != tuple(A.shape[:-2]):
        raise RuntimeError(f"torch.ormqr: Expected batch dimensions of other to be equal to "
                           f"input.shape[:-2], but got {list(C.shape[:-2])}")
    for name, t in (("other", C), ("tau", tau)):
        if t.dtype != A.dtype:
            raise RuntimeError(f"torch.ormqr: Expected input and {name} to have the same "
                               f"dtype, but input has dtype{_tname(A.dtype)} and {name} has "
                               f"dtype {_tname(t.dtype)}")
    if not (A.is_floating_point() or A.is_complex()):
        raise NotImplementedError(f"\"ormqr_cpu\" not implemented for '{_tname(A.dtype)}'")


@public("ormqr", method=True)
def ormqr(input, input2, input3, left=True, transpose=False, *, out=None):
    """Q @ other (``left``) or other @ Q, Q^H with ``transpose``, where Q = H_1 ... H_k
    comes from ``geqrf``: input (*, m, n) holds the vectors, input2 (*, k) their tau."""
    A, tau, C = input, input2, input3
    _check_ormqr(A, tau, C, left)
    E = _E()
    m, k = A.shape[-2], tau.shape[-1]
    rows = E.arange(m).unsqueeze(-1)
    one, zero = E.ones((), dtype=A.dtype), E.zeros((), dtype=A.dtype)
    # Q C = H_1 (... (H_k C)) and C Q^H = C H_k^H ... H_1^H take the reflectors last first
    order = range(k - 1, -1, -1) if left != transpose else range(k)
    for i in order:
        v = E.where(rows > i, A[..., :, i:i + 1], E.where(rows == i, one, zero))
        t = tau[..., i].unsqueeze(-1).unsqueeze(-1)
        if transpose:
            t = t.conj()
        C = C - t * (v @ (v.mH @ C)) if left else C - t * ((C @ v) @ v.mH)
    if k == 0:
        C = C.clone()
    return _out(C, out, "ormqr")
