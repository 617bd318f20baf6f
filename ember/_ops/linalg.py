"""``torch.linalg`` op records and fronts (``ember.linalg``), plus torch's top-level aliases
(``torch.det``, ``torch.svd``, ``torch.cholesky_solve`` ...).

Records with a LAPACK kernel (``ember/_kernels/linalg.py``) carry backward rules written in
ember ops (so they are differentiable again); everything else is composed from them
in the fronts below (autograd from the parts). Records are registered under torch's ATen
names (``linalg_det``...) with no ``ember.*`` front; the public fronts live in ``LINALG``
(installed as ``ember.linalg``). Named tuples come from the schema's return names
(``torch.return_types.linalg_slogdet(sign, logabsdet)``).
"""
from __future__ import annotations

import math
import types

import numpy as np

from ember._kernels import linalg as K
from ember._dispatch import all_ints, check_int_list, user_position
from ember._ops.registry import OpDef, public
from ember._ops.core import conj_if_complex
from ember._tensor import Tensor

LINALG: dict = {}


def _rec(schema, kernel, **kw):
    kw.setdefault("promote", None)
    return OpDef(schema, kernel, **kw)


def _d(op, *args):
    from ember._dispatch import dispatch
    return dispatch(op, args, None)


def linalg(fn=None, *, name=None):
    def deco(f):
        LINALG[name or f.__name__] = f
        f.__qualname__ = f.__name__ = name or f.__name__
        f.__module__ = "ember.linalg"
        return f
    return deco(fn) if fn is not None else deco


def _E():
    import ember
    return ember


def _out(res, out, name, fields=None):
    if out is None:
        return res
    from ember._dispatch import _write_out
    fake = types.SimpleNamespace(public_name=name, num_outputs=len(fields) if fields else 1,
                                 returns_list=False, schema_return_names=fields)
    return _write_out(fake, res, out)


def _named(name, fields, values):
    from ember.return_types import _named as nt
    return nt(name, tuple(fields))(*values)


def _eye_like(n, t, real=False):
    E = _E()
    dt = t.real.dtype if real and t.is_complex() else t.dtype
    return E.eye(n, dtype=dt)


def _is_zero(g):
    """``g`` is None or a plain tensor of zeros that needs no gradient. (A vmap/func
    wrapper's ``_data`` is only a placeholder, and forward-mode AD differentiates w.r.t. a
    zero cotangent: neither may drop its terms, or jacrev(jacrev) / hessian lose them.)"""
    return g is None or type(g) is Tensor and not g._requires_grad and not g._data.any()


def _solve_tri(A, B, upper, left=True, unitriangular=False):
    """Differentiable triangular solve (left or right) via the record."""
    if left:
        return _d(solve_triangular_op, A, B, upper, unitriangular)
    return _d(solve_triangular_op, A.mT, B.mT, not upper, unitriangular).mT


# ==================================================================== det / slogdet / inv

det_op = _rec("linalg_det(Tensor A) -> Tensor", K.det, saves=("A", "result"))


def _inv_H(A):
    return _d(inv_ex_op, A, False)[0].mH


@det_op.def_backward
def _(ctx, g, A):
    d = ctx.result
    return (g * d.conj()).unsqueeze(-1).unsqueeze(-1) * _inv_H(A) if d.is_complex() else \
        (g * d).unsqueeze(-1).unsqueeze(-1) * _inv_H(A)


slogdet_op = _rec("linalg_slogdet(Tensor A) -> (Tensor sign, Tensor logabsdet)", K.slogdet,
                  saves=("A", "sign"))


@slogdet_op.def_backward
def _(ctx, g, A):
    gs, gl = g
    sign = ctx.result[0]
    if A.is_complex():
        c = -(gs.conj() * sign).imag
        coef = gl + 1j * c
    else:
        coef = gl
    return coef.unsqueeze(-1).unsqueeze(-1) * _inv_H(A)


inv_ex_op = _rec("linalg_inv_ex(Tensor A, *, bool check_errors=False) -> (Tensor inverse, "
                 "Tensor info)", K.inv_ex, saves=("result",))
inv_op = _rec("linalg_inv(Tensor A) -> Tensor", K.inv, saves=("result",),
              grad_name="LinalgInvExBackward0")      # torch computes inv through inv_ex


@inv_op.def_backward
def _(ctx, g, A):
    Ai = ctx.result
    AiH = Ai.mH
    return -(AiH @ g @ AiH)


@inv_ex_op.def_backward
def _(ctx, g, A, check_errors):
    AiH = ctx.result[0].mH
    return -(AiH @ g[0] @ AiH), None


# ==================================================================== solve

solve_ex_op = _rec("linalg_solve_ex(Tensor A, Tensor B, *, bool check_errors=False) -> "
                   "(Tensor result, Tensor info)", K.solve_ex, saves=("A", "result"))


@solve_ex_op.def_backward
def _(ctx, g, A, B, check_errors):
    g = g[0]
    X = ctx.result[0]
    gB = _d(solve_ex_op, A.mH, g, False)[0]
    gA = -(gB @ X.mH) if ctx.needs_input_grad[0] else None
    return gA, gB, None


solve_triangular_op = _rec("linalg_solve_triangular(Tensor A, Tensor B, *, bool upper, "
                           "bool unitriangular=False) -> Tensor", K.solve_triangular,
                           saves=("A", "result"))


@solve_triangular_op.def_backward
def _(ctx, g, A, B, upper, unitriangular):
    gB = _d(solve_triangular_op, A.mH, g, not upper, unitriangular)
    gA = None
    if ctx.needs_input_grad[0]:
        gA = -(gB @ ctx.result.mH)
        if upper:
            gA = gA.triu(1 if unitriangular else 0)
        else:
            gA = gA.tril(-1 if unitriangular else 0)
    return gA, gB, None, None


# ==================================================================== Cholesky

cholesky_ex_op = _rec("linalg_cholesky_ex(Tensor A, *, bool upper=False, bool check_errors=False)"
                      " -> (Tensor L, Tensor info)", K.cholesky_ex, saves=("result",))
cholesky_op = _rec("linalg_cholesky(Tensor A, *, bool upper=False) -> Tensor", K.cholesky,
                   saves=("result",))


def _cholesky_backward(L, gL, upper):
    if upper:
        L, gL = L.mH, gL.mH
    gA = (L.mH @ gL).tril()
    gA = 0.5 * (gA + gA.tril(-1).mH)
    gA = _solve_tri(L.mH, gA, True, left=True)
    gA = _solve_tri(L, gA, False, left=False)
    return gA


@cholesky_op.def_backward
def _(ctx, g, A, upper):
    return _cholesky_backward(ctx.result, g, upper), None


@cholesky_ex_op.def_backward
def _(ctx, g, A, upper, check_errors):
    return _cholesky_backward(ctx.result[0], g[0], upper), None, None


# ==================================================================== QR

qr_op = _rec("linalg_qr(Tensor A, str mode='reduced') -> (Tensor Q, Tensor R)", K.qr,
             saves=("A", "result"))


def _qr_backward_tall(gQ, gR, Q, R):
    gA = gR @ R.mH if gR is not None else None
    if gQ is not None:
        QhgQ = Q.mH @ gQ
        gA = -QhgQ if gA is None else gA - QhgQ
    M = gA.triu()
    S = M + M.mH
    # syminvadj: halve the (real) diagonal
    n = S.shape[-1]
    S = S - 0.5 * _E().diag_embed(S.diagonal(0, -2, -1).real if S.is_complex()
                                  else S.diagonal(0, -2, -1))
    gA = Q @ S
    if gQ is not None:
        gA = gA + gQ
    return _solve_tri(R.mH, gA, False, left=False)


@qr_op.def_backward
def _(ctx, g, A, mode):
    if mode == "r":
        raise RuntimeError("The derivative of linalg.qr depends on Q, which is not computed when "
                           "mode='r'. Please use linalg.qr(A, mode='reduced') if you are going to "
                           "differentiate through linalg.qr.")
    Q, R = ctx.result
    gQ, gR = g
    m, n = ctx.shapes[0][-2:]
    if mode == "complete" and m > n:
        raise RuntimeError("The QR decomposition is not differentiable when mode='complete' and "
                           "nrows > ncols.")
    if m >= n:
        return _qr_backward_tall(gQ, gR, Q, R), None
    E = _E()
    U, V = R[..., :, :m], R[..., :, m:]
    Y = A[..., :, m:]
    gU, gV = gR[..., :, :m], gR[..., :, m:]
    gY = Q @ gV
    gQ2 = gQ + Y @ gV.mH
    gX = _qr_backward_tall(gQ2, gU, Q, U)
    return E.cat([gX, gY], -1), None


# ==================================================================== eigh / eig

eigh_op = _rec("linalg_eigh(Tensor A, str UPLO='L') -> (Tensor eigenvalues, Tensor eigenvectors)",
               K.eigh, saves=("result",))


@eigh_op.def_backward
def _(ctx, g, A, UPLO):
    E = _E()
    L, V = ctx.result
    gL, gV = g
    n = L.shape[-1]
    I = E.eye(n, dtype=L.dtype)
    if _is_zero(gV):
        ret = E.diag_embed(gL).to(V.dtype)
    else:
        VhgV = V.mH @ gV
        VhgV = 0.5 * (VhgV - VhgV.mH)
        Ed = L.unsqueeze(-2) - L.unsqueeze(-1) + I
        ret = VhgV / Ed * (1 - I) + E.diag_embed(gL)
    return V @ ret @ V.mH, None


eig_op = _rec("linalg_eig(Tensor A) -> (Tensor eigenvalues, Tensor eigenvectors)", K.eig,
              saves=("result",))


@eig_op.def_backward
def _(ctx, g, A):
    E = _E()
    L, V = ctx.result
    gL, gV = g
    n = L.shape[-1]
    I = E.eye(n, dtype=L.real.dtype)
    if _is_zero(gV):
        ret = E.diag_embed(gL).to(V.dtype)
    else:
        VhgV = V.mH @ gV
        re = VhgV.diagonal(0, -2, -1).real
        ret = VhgV - V.mH @ (V * re.unsqueeze(-2))
        Ec = (L.unsqueeze(-2) - L.unsqueeze(-1)).conj() + I
        ret = ret / Ec * (1 - I) + E.diag_embed(gL)
    gA = _d(solve_ex_op, V.mH, ret @ V.mH, False)[0]
    return gA


# ==================================================================== SVD

svd_op = _rec("linalg_svd(Tensor A, bool full_matrices=True) -> (Tensor U, Tensor S, Tensor Vh)",
              K.svd, saves=("result",))


def _svd_backward(gU, gS, gVh, U, S, Vh, full_matrices):
    E = _E()
    m, n = U.shape[-2], Vh.shape[-1]
    k = S.shape[-1]
    if full_matrices:
        U = U[..., :, :k]
        Vh = Vh[..., :k, :]
        gU = None if gU is None else gU[..., :, :k]
        gVh = None if gVh is None else gVh[..., :k, :]
    if _is_zero(gU):
        gU = None
    if _is_zero(gVh):
        gVh = None
    if gU is None and gVh is None:
        return (U * gS.unsqueeze(-2)) @ Vh
    V = Vh.mH
    gV = None if gVh is None else gVh.mH
    I = E.eye(k, dtype=S.dtype)
    S2 = S * S
    Ed = S2.unsqueeze(-2) - S2.unsqueeze(-1) + I
    gA = None
    UhgU = None
    if gU is not None:
        UhgU = U.mH @ gU
        UhgU = UhgU - UhgU.mH
        gA = UhgU * S.unsqueeze(-2)
    if gV is not None:
        VhgV = V.mH @ gV
        VhgV = VhgV - VhgV.mH
        t = S.unsqueeze(-1) * VhgV
        gA = t if gA is None else gA + t
    gA = gA / Ed * (1 - I)
    if gS is not None:
        gA = gA + E.diag_embed(gS)
    if U.is_complex() and UhgU is not None:
        gA = gA + E.diag_embed(UhgU.diagonal(0, -2, -1) / (2 * S))
    if m > k and gU is not None:
        gA = U @ gA
        gUSinv = gU / S.unsqueeze(-2)
        gA = gA + gUSinv - U @ (U.mH @ gUSinv)
        gA = gA @ Vh
    elif n > k and gV is not None:
        gA = gA @ Vh
        gVSinv = gV / S.unsqueeze(-2)
        gA = gA + gVSinv.mH - (gVSinv.mH @ V) @ Vh
        gA = U @ gA
    else:
        gA = U @ gA @ Vh
    return gA


@svd_op.def_backward
def _(ctx, g, A, full_matrices):
    U, S, Vh = ctx.result
    gU, gS, gVh = g
    return _svd_backward(gU, gS, gVh, U, S, Vh, full_matrices), None


# ==================================================================== pinv, lstsq, matrix_exp

pinv_op = _rec("linalg_pinv(Tensor A, *, Tensor? atol=None, Tensor? rtol=None, "
               "bool hermitian=False) -> Tensor", K.pinv, saves=("A", "result"))


def _pinv_backward(G, A, Ap):
    """VJP of A -> pinv(A) at cotangent G (shape of pinv(A))."""
    ApH = Ap.mH
    gA = -(ApH @ G @ ApH)
    m, n = A.shape[-2], A.shape[-1]
    E = _E()
    Im = E.eye(m, dtype=A.dtype)
    In = E.eye(n, dtype=A.dtype)
    gA = gA + (Im - A @ Ap) @ G.mH @ (Ap @ ApH)
    gA = gA + (ApH @ Ap) @ G.mH @ (In - Ap @ A)
    return gA


@pinv_op.def_backward
def _(ctx, g, A, atol, rtol, hermitian):
    return _pinv_backward(g, A, ctx.result), None, None, None


lstsq_op = _rec("linalg_lstsq(Tensor self, Tensor b, float? rcond=None, *, str? driver=None) -> "
                "(Tensor solution, Tensor residuals, Tensor rank, Tensor singular_values)",
                K.lstsq, saves=("self", "b", "result"))


@lstsq_op.def_backward
def _(ctx, g, A, B, rcond, driver):
    gX, gres = g[0], g[1]
    X = ctx.result[0]
    Ap = _d(pinv_op, A, None, None, False)
    vec = B.ndim == A.ndim - 1
    if vec:
        B, gX, X = B.unsqueeze(-1), gX.unsqueeze(-1), X.unsqueeze(-1)
    gB = Ap.mH @ gX
    gA = _pinv_backward(gX @ B.mH, A, Ap) if ctx.needs_input_grad[0] else None
    if gres is not None and gres.numel() and not _is_zero(gres):
        # residuals = sum_rows |B - A X|^2; A^H (B - A X) = 0 kills the X-dependence
        R = B - A @ X
        GR = 2 * R * gres.unsqueeze(-2)
        gB = gB + GR
        if gA is not None:
            gA = gA - GR @ X.mH
    if vec:
        gB = gB.squeeze(-1)
    return gA, gB, None, None


matrix_exp_op = _rec("linalg_matrix_exp(Tensor self) -> Tensor", K.matrix_exp, saves=("self",),
                     grad_name="LinalgMatrixExpBackward0")


@matrix_exp_op.def_backward
def _(ctx, g, A):
    E = _E()
    n = A.shape[-1]
    AH = A.mH
    Z = E.zeros_like(g)
    top = E.cat([AH, g], -1)
    bot = E.cat([Z, AH.expand(g.shape) if tuple(AH.shape) != tuple(g.shape) else AH], -1)
    big = E.cat([top.expand(top.shape), bot], -2)
    return _d(matrix_exp_op, big)[..., :n, n:]


# ==================================================================== LU

lu_factor_ex_op = _rec("linalg_lu_factor_ex(Tensor A, *, bool pivot=True, bool check_errors=False)"
                       " -> (Tensor LU, Tensor pivots, Tensor info)", None,
                       saves=("result",))


def _lu_factor_ex_kernel(a, pivot=True, check_errors=False, fname="linalg.lu_factor_ex"):
    K.check_matrix(a, fname)
    K.check_fc(a, fname, "input")
    if not pivot:
        raise RuntimeError("linalg.lu_factor: LU without pivoting is not implemented on the CPU")
    lu, piv, info = K.lu_factor_batched(np.ascontiguousarray(a))
    if check_errors:
        _check_lu_info(info, fname)
    return lu, piv, info


def _check_lu_info(info, fname):
    """torch's error for the first matrix whose factor has a zero pivot (``info`` > 0)."""
    if not info.any():
        return
    flat = info.reshape(-1)
    i = int(np.flatnonzero(flat)[0])
    batch = f"(Batch element {i}): " if info.ndim else ""
    raise K.LinAlgError(f"torch.{fname}: {batch}U[{flat[i]},{flat[i]}] is zero and using it on "
                        f"lu_solve would result in a division by zero. If you still want to "
                        f"perform the factorization, consider calling linalg.lu(A, pivot) or "
                        f"linalg.lu_factor_ex(A, pivot)")


lu_factor_ex_op.kernel = _lu_factor_ex_kernel

lu_perm_op = _rec("_linalg_lu_permutation(Tensor LU, Tensor pivots) -> Tensor",
                  K.pivots_to_permutation, differentiable=False)


def _lu_unpack_parts(LU):
    E = _E()
    m, n = LU.shape[-2:]
    k = min(m, n)
    L = LU[..., :, :k].tril(-1) + E.eye(m, k, dtype=LU.dtype)
    U = LU[..., :k, :].triu()
    return L, U


@lu_factor_ex_op.def_backward
def _(ctx, g, A, pivot, check_errors):
    E = _E()
    LU, piv, _ = ctx.result
    gLU = g[0]
    m, n = LU.shape[-2:]
    k = min(m, n)
    P = _d(lu_perm_op, LU, piv)
    L, U = _lu_unpack_parts(LU)
    gL, gU = gLU[..., :, :k].tril(-1), gLU[..., :k, :].triu()
    if m == n:
        M = (L.mH @ gL).tril(-1) + (gU @ U.mH).triu()
        X = _solve_tri(L.mH, M, True, left=True, unitriangular=True)
        X = _solve_tri(U.mH, X, False, left=False)
    elif m < n:
        # wide: A = P L [U1 U2], L square (m x m)
        U1 = U[..., :, :k]
        X = (L.mH @ gL - gU @ U.mH).tril(-1)
        X = _solve_tri(U1.mH, X, False, left=False)
        X = E.cat([X + gU[..., :, :k], gU[..., :, k:]], -1)
        X = _solve_tri(L.mH, X, True, left=True, unitriangular=True)
    else:
        # tall: A = P [L1; L2] U, U square (n x n)
        L1 = L[..., :k, :]
        X = (gU @ U.mH - L.mH @ gL).triu()
        X = _solve_tri(L1.mH, X, True, left=True, unitriangular=True)
        X = E.cat([X + gL[..., :k, :], gL[..., k:, :]], -2)
        X = _solve_tri(U.mH, X, False, left=False)
    return P @ X, None, None


# ==================================================================== LDL

ldl_factor_ex_op = _rec("linalg_ldl_factor_ex(Tensor self, *, bool hermitian=False, "
                        "bool check_errors=False) -> (Tensor LD, Tensor pivots, Tensor info)",
                        K.ldl_factor_ex, differentiable=False)
ldl_solve_op = _rec("linalg_ldl_solve(Tensor LD, Tensor pivots, Tensor B, *, bool hermitian=False)"
                    " -> Tensor", K.ldl_solve, differentiable=False)


# ==================================================================== fronts: ember.linalg


def _check_tensor(x, fname, arg="A"):
    from ember._tensor import Tensor
    if not isinstance(x, Tensor):
        raise TypeError(f"{fname}(): argument '{arg}' (position 1) must be Tensor, not "
                        f"{type(x).__name__}")


@linalg
def det(A, *, out=None):
    _check_tensor(A, "linalg_det")
    return _out(_d(det_op, A), out, "linalg_det")


@linalg
def slogdet(A, *, out=None):
    return _out(_d(slogdet_op, A), out, "linalg_slogdet", ("sign", "logabsdet"))


@linalg
def inv(A, *, out=None):
    _check_tensor(A, "linalg_inv")
    return _out(_d(inv_op, A), out, "linalg_inv")


@linalg
def inv_ex(A, *, check_errors=False, out=None):
    return _out(_d(inv_ex_op, A, check_errors), out, "linalg_inv_ex", ("inverse", "info"))


def _solve_prep(A, B, left, fname):
    """(A', B', vector) for the left solve A' X = B' equivalent to torch's solve(A, B, left)."""
    vec = B.ndim == 1 or (B.ndim == A.ndim - 1 and tuple(B.shape) == tuple(A.shape[:-1]))
    if vec:
        B = B.unsqueeze(-1) if left else B.unsqueeze(-2)
    if not left:
        A, B = A.mT, B.mT
    return A, B, vec


def _solve_post(X, left, vec):
    if not left:
        X = X.mT
    if vec:
        X = X.squeeze(-1) if left else X.squeeze(-2)
    return X


@linalg
def solve_ex(A, B, *, left=True, check_errors=False, out=None):
    K.check_fc(A._data, "linalg.solve_ex", "input")
    A2, B2, vec = _solve_prep(A, B, left, "linalg.solve_ex")
    X, info = _d(solve_ex_op, A2, B2, check_errors)
    res = _named("linalg_solve_ex", ("result", "info"), (_solve_post(X, left, vec), info))
    return _out(res, out, "linalg_solve_ex", ("result", "info"))


@linalg
def solve(A, B, *, left=True, out=None):
    _check_tensor(A, "linalg_solve")
    if A.ndim < 2:
        raise RuntimeError("linalg.solve: The input tensor A must have at least 2 dimensions.")
    K.check_square(A._data, "linalg.solve")
    K.check_fc(A._data, "linalg.solve", "input")
    if A.dtype != B.dtype:
        raise RuntimeError(f"linalg.solve: Expected A and B to have the same dtype, but found "
                           f"A of type {K.tname(A._data.dtype)} and B of type "
                           f"{K.tname(B._data.dtype)} instead")
    A2, B2, vec = _solve_prep(A, B, left, "linalg.solve")
    if B2.ndim >= 2 and B2.shape[-2] != A2.shape[-1]:     # (named as the function called)
        raise RuntimeError(f"linalg.solve: Incompatible shapes of A and B for the equation "
                           f"AX = B ({A2.shape[-2]}x{A2.shape[-1]} and {B2.shape[-2]}x"
                           f"{B2.shape[-1]})")
    X, info = _d(solve_ex_op, A2, B2, False)
    if info._data.any():
        K._raise_solve("torch.linalg.solve", info._data)
    return _out(_solve_post(X, left, vec), out, "linalg_solve")


_UNSET = object()


def _solve_triangular_arity(A, B, more):
    """torch's parser text for a call of solve_triangular missing A, B or the keyword-only
    ``upper``, or giving more than two positional arguments (found by experiment: it counts
    ``upper`` among the required positional ones: 'takes from 3 to 2 positional arguments',
    'missing 1 required positional arguments: "upper"'; "argument" for more than one)."""
    fname = "linalg_solve_triangular"
    if more:
        return TypeError(f"{fname}() takes from 3 to 2 positional arguments but "
                         f"{2 + len(more)} were given")
    names = ["input", "B", "upper"]
    missing = names[0 if A is _UNSET else 1 if B is _UNSET else 2:]
    n = len(missing)
    return TypeError(f"{fname}() missing {n} required positional argument{'s' if n == 1 else ''}"
                     f": " + ", ".join(f'"{m}"' for m in missing))


@linalg
def solve_triangular(A=_UNSET, B=_UNSET, *_more, upper=_UNSET, left=True, unitriangular=False,
                     out=None):
    if _more or A is _UNSET or B is _UNSET or upper is _UNSET:
        raise _solve_triangular_arity(A, B, _more)
    if left:
        r = _d(solve_triangular_op, A, B, upper, unitriangular)
    else:
        r = _d(solve_triangular_op, A.mT, B.mT, not upper, unitriangular).mT
    return _out(r, out, "linalg_solve_triangular")


@linalg
def cholesky(A, *, upper=False, out=None):
    return _out(_d(cholesky_op, A, upper), out, "linalg_cholesky")


@linalg
def cholesky_ex(A, *, upper=False, check_errors=False, out=None):
    return _out(_d(cholesky_ex_op, A, upper, check_errors), out, "linalg_cholesky_ex",
                ("L", "info"))


@linalg
def qr(A, mode="reduced", *, out=None):
    return _out(_d(qr_op, A, mode), out, "linalg_qr", ("Q", "R"))


@linalg
def eigh(A, UPLO="L", *, out=None):
    return _out(_d(eigh_op, A, UPLO), out, "linalg_eigh", ("eigenvalues", "eigenvectors"))


@linalg
def eigvalsh(A, UPLO="L", *, out=None):
    K.check_square(A._data, "linalg.eigvalsh")
    return _out(_d(eigh_op, A, UPLO)[0], out, "linalg_eigvalsh")


@linalg
def eig(A, *, out=None):
    return _out(_d(eig_op, A), out, "linalg_eig", ("eigenvalues", "eigenvectors"))


@linalg
def eigvals(A, *, out=None):
    K.check_square(A._data, "linalg.eigvals")
    return _out(_d(eig_op, A)[0], out, "linalg_eigvals")


@linalg
def svd(A, full_matrices=True, *, driver=None, out=None):
    return _out(_d(svd_op, A, full_matrices), out, "linalg_svd", ("U", "S", "Vh"))


@linalg
def svdvals(A, *, driver=None, out=None):
    K.check_matrix(A._data, "linalg.svdvals")
    K.check_fc(A._data, "linalg.svdvals", "input")
    from ember._state import state
    if not (state.grad_enabled and A.requires_grad):
        from ember._creation import tensor as _t
        return _out(_wrap(K.svdvals(A._data)), out, "linalg_svdvals")
    return _out(_d(svd_op, A, False)[1], out, "linalg_svdvals")


def _wrap(arr):
    from ember._tensor import Tensor
    import ember
    return ember.from_numpy(arr)


@linalg
def pinv(A, *, atol=None, rtol=None, hermitian=False, out=None, rcond=None):
    if rcond is not None:
        rtol = rcond
    return _out(_d(pinv_op, A, atol, rtol, hermitian), out, "linalg_pinv")


@linalg
def lstsq(A, B, rcond=None, *, driver=None):
    return _d(lstsq_op, A, B, rcond, driver)


@linalg
def matrix_exp(A):
    return _d(matrix_exp_op, A)


@linalg
def lu_factor_ex(A, *, pivot=True, check_errors=False, out=None):
    return _out(_d(lu_factor_ex_op, A, pivot, check_errors), out, "linalg_lu_factor_ex",
                ("LU", "pivots", "info"))


@linalg
def lu_factor(A, *, pivot=True, out=None):
    K.check_matrix(A._data, "linalg.lu_factor")
    LU, piv, info = _d(lu_factor_ex_op, A, pivot, False)
    _check_lu_info(info._data, "linalg.lu_factor")
    return _out(_named("linalg_lu_factor", ("LU", "pivots"), (LU, piv)), out,
                "linalg_lu_factor", ("LU", "pivots"))


@linalg
def lu(A, *, pivot=True, out=None):
    LU, piv, _ = _d(lu_factor_ex_op, A, pivot, False)
    P = _d(lu_perm_op, LU, piv)
    L, U = _lu_unpack_parts(LU)
    return _out(_named("linalg_lu", ("P", "L", "U"), (P, L, U)), out, "linalg_lu",
                ("P", "L", "U"))


@linalg
def lu_solve(LU, pivots, B, *, left=True, adjoint=False, out=None):
    if B.ndim < 2:
        raise RuntimeError("linalg.lu_solve: The input tensor B must have at least 2 "
                           "dimensions.")
    n = LU.shape[-1]
    if (B.shape[-2] if left else B.shape[-1]) != n:
        raise RuntimeError(f"linalg.lu_solve: Incompatible shapes of A and B for the equation "
                           f"{'AX' if left else 'XA'} = B ({LU.shape[-2]}x{n} and "
                           f"{B.shape[-2]}x{B.shape[-1]})")
    P = _d(lu_perm_op, LU, pivots)
    L, U = _lu_unpack_parts(LU)
    # A = P L U
    if left and not adjoint:        # X = U^-1 L^-1 P^T B
        X = _solve_tri(U, _solve_tri(L, P.mT @ B, False, unitriangular=True), True)
    elif left and adjoint:          # A^H X = B: U^H L^H P^T X = B
        Y = _solve_tri(L.mH, _solve_tri(U.mH, B, False), True, unitriangular=True)
        X = P @ Y
    elif not adjoint:               # X A = B: X P L U = B
        Y = _solve_tri(L, _solve_tri(U, B, True, left=False), False, left=False,
                       unitriangular=True)
        X = Y @ P.mT
    else:                           # X A^H = B: X U^H L^H P^T = B
        W = _solve_tri(L.mH, B @ P, True, left=False, unitriangular=True)
        X = _solve_tri(U.mH, W, False, left=False)
    return _out(X, out, "linalg_lu_solve")


@linalg
def ldl_factor_ex(A, *, hermitian=False, check_errors=False, out=None):
    return _out(_d(ldl_factor_ex_op, A, hermitian, check_errors), out, "linalg_ldl_factor_ex",
                ("LD", "pivots", "info"))


@linalg
def ldl_factor(A, *, hermitian=False, out=None):
    LD, piv, info = _d(ldl_factor_ex_op, A, hermitian, False)
    if info._data.any():
        raise RuntimeError("torch.linalg.ldl_factor: The factorization could not be completed "
                           "because the input is singular.")
    return _out(_named("linalg_ldl_factor", ("LD", "pivots"), (LD, piv)), out,
                "linalg_ldl_factor", ("LD", "pivots"))


@linalg
def ldl_solve(LD, pivots, B, *, hermitian=False, out=None):
    return _out(_d(ldl_solve_op, LD, pivots, B, hermitian), out, "linalg_ldl_solve")


# -------------------------------------------------------------------- norms


@linalg
def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None, out=None):
    from ember._ops.reduction import norm_op
    if isinstance(ord, str):
        from ember._legacy import type_name
        raise TypeError(f"linalg_vector_norm(): argument 'ord' must be Number, not "
                        f"{type_name(type(ord))}")
    if isinstance(dim, int):
        dim = (dim,)
    elif dim is not None:
        dim = check_int_list("linalg_vector_norm", "dim", tuple(dim),
                             None if all_ints(dim) else user_position(__import__("sys")._getframe(), "dim"))
    return _out(_d(norm_op, x, ord, dim, keepdim, dtype), out, "linalg_vector_norm")


def _amax(x, dim, keepdim):
    return x.amax(dim, keepdim)


@linalg
def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None, out=None):
    E = _E()
    K.check_matrix(A._data, "linalg.matrix_norm") if A.ndim < 2 else None
    if dtype is not None:
        A = A.to(dtype)
    K.check_fc(A._data, "linalg.matrix_norm", "input")
    dim = check_int_list("linalg_matrix_norm", "dim", tuple(dim))
    if len(dim) != 2:
        raise RuntimeError("linalg.matrix_norm: dim must be a 2-tuple. Got " +
                           " ".join(str(d) for d in dim))
    nd = A.ndim
    d0, d1 = (d % nd for d in dim)
    if d0 == d1:
        raise RuntimeError(f"linalg.matrix_norm: dims must be different. Got ({dim[0]}, {dim[1]})")
    if ord == "fro":
        r = vector_norm(A, 2, (d0, d1), keepdim)
    elif ord == "nuc" or ord in (2, -2, 2.0, -2.0):
        Am = E.movedim(A, (d0, d1), (-2, -1))
        s = svdvals(Am)
        if ord == "nuc" or ord > 0 and not s.shape[-1]:    # no singular values: 0
            r = s.sum(-1)
        else:
            r = s.amax(-1) if ord > 0 else s.amin(-1)
        if keepdim:
            for d in sorted((d0, d1)):
                r = r.unsqueeze(d)
    elif ord in (1, -1, math.inf, -math.inf):
        sum_dim, red_dim = (d0, d1) if ord in (1, -1) else (d1, d0)
        s = A.abs().sum(sum_dim, keepdim=True)
        if ord > 0:     # the max of no column sums is 0 (they are >= 0), as torch's
            r = s.amax(red_dim, keepdim=True) if s.shape[red_dim] else s.sum(red_dim, True)
        else:
            r = s.amin(red_dim, keepdim=True)
        if not keepdim:
            r = r.squeeze((d0, d1)) if hasattr(r, "squeeze") else r
    else:
        raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    return _out(r, out, "linalg_matrix_norm")


@linalg
def norm(A, ord=None, dim=None, keepdim=False, *, dtype=None, out=None):
    if isinstance(dim, int):
        dim = (dim,)
    elif dim is not None:
        dim = check_int_list("linalg_norm", "dim", tuple(dim))
    if dim is not None:
        if len(dim) == 1:
            return vector_norm(A, 2 if ord is None else ord, dim, keepdim, dtype=dtype, out=out)
        return matrix_norm(A, "fro" if ord is None else ord, dim, keepdim, dtype=dtype, out=out)
    if ord is None:
        return vector_norm(A, 2, None, keepdim, dtype=dtype, out=out)
    if A.ndim == 2:
        return matrix_norm(A, ord, (-2, -1), keepdim, dtype=dtype, out=out)
    if A.ndim == 1:
        return vector_norm(A, ord, None, keepdim, dtype=dtype, out=out)
    raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input must be 1D "
                       f"or 2D. Got {A.ndim}D.")


@linalg
def cond(A, p=None, *, out=None):
    K.check_matrix(A._data, "linalg.cond")
    if p is None or p in (2, -2):
        s = svdvals(A)
        r = s.amax(-1) / s.amin(-1) if p != -2 else s.amin(-1) / s.amax(-1)
    else:
        K.check_square(A._data, "linalg.cond")
        r = matrix_norm(A, p) * matrix_norm(inv(A), p)
    return _out(r, out, "linalg_cond")


def _tols(A, atol, rtol, smax):
    E = _E()
    m, n = A.shape[-2:]
    if rtol is None:
        atol_pos = atol is not None and bool((E.as_tensor(atol)._data > 0).any()) \
            if not isinstance(atol, (int, float)) else atol is not None and atol > 0
        rtol = 0.0 if atol_pos else float(np.finfo(A.real._data.dtype if A.is_complex()
                                                   else A._data.dtype).eps) * max(m, n)
    atol = 0.0 if atol is None else atol
    return E.maximum(E.as_tensor(atol, dtype=smax.dtype), E.as_tensor(rtol, dtype=smax.dtype)
                     * smax)


@linalg
def matrix_rank(A, tol=None, hermitian=False, *, atol=None, rtol=None, out=None):
    E = _E()
    K.check_matrix(A._data, "linalg.matrix_rank")
    if not (A.is_floating_point() or A.is_complex()):     # (torch's svd dispatch text)
        raise RuntimeError("This function doesn't handle types other than float and double")
    K.check_fc(A._data, "linalg.matrix_rank", "input")
    if tol is not None:
        atol, rtol = tol, 0.0
    with E.no_grad():
        s = eigvalsh(A).abs() if hermitian else svdvals(A)
        if s.shape[-1] == 0:
            return _out(E.zeros(tuple(A.shape[:-2]), dtype=E.int64), out, "linalg_matrix_rank")
        smax = s.amax(-1)
        tol = _tols(A, atol, rtol, smax)
        r = (s > tol.unsqueeze(-1)).sum(-1)
    return _out(r, out, "linalg_matrix_rank")


@linalg
def matrix_power(A, n, *, out=None):
    E = _E()
    K.check_square(A._data, "linalg.matrix_power")
    if not isinstance(n, int):
        raise TypeError(f"linalg_matrix_power(): argument 'n' must be int, not {type(n).__name__}")
    if n == 0:
        I = E.eye(A.shape[-1], dtype=A.dtype).expand(A.shape)
        # torch: A.clone().copy_(eye) -- the result requires grad (with a zero gradient)
        r = E.where(E.ones((), dtype=E.bool), I, A) if A.requires_grad else I.clone()
        return _out(r, out, "linalg_matrix_power")
    if n < 0:
        A = inv(A)
        n = -n
    result = None
    base = A
    while n:
        if n & 1:
            result = base if result is None else result @ base
        n >>= 1
        if n:
            base = base @ base
    return _out(result if result is not A else A.clone(), out, "linalg_matrix_power")


@linalg
def cross(input, other, *, dim=-1, out=None):
    E = _E()
    if input.ndim != other.ndim:
        raise RuntimeError("linalg.cross: inputs must have the same number of dimensions.")
    a, b = E.broadcast_tensors(input, other)
    return _out(E.cross(a, b, dim), out, "linalg_cross")


@linalg
def multi_dot(tensors, *, out=None):
    E = _E()
    ts = list(tensors)
    if len(ts) < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {len(ts)}")
    first_1d, last_1d = ts[0].ndim == 1, ts[-1].ndim == 1
    if first_1d:
        ts[0] = ts[0].unsqueeze(0)
    if last_1d:
        ts[-1] = ts[-1].unsqueeze(-1)
    for i, t in enumerate(ts):
        if t.ndim != 2:
            if i in (0, len(ts) - 1):
                raise RuntimeError(f"multi_dot(): the {'first' if i == 0 else 'last'} tensor "
                                   f"must be 1D or 2D but got {t.ndim}D")
            raise RuntimeError(f"multi_dot(): tensor {i} must be 2D but got {t.ndim}D")
    from ember._ops.blas import _multi_dot_order, _chain, _check_chain
    _check_chain(list(tensors))
    r = _chain(ts, _multi_dot_order([tuple(t.shape) for t in ts]), 0, len(ts) - 1)
    if first_1d and last_1d:
        r = r.reshape(())
    elif first_1d:
        r = r.squeeze(0)
    elif last_1d:
        r = r.squeeze(-1)
    return _out(r, out, "linalg_multi_dot")


@linalg
def householder_product(A, tau, *, out=None):
    E = _E()
    K.check_matrix(A._data, "torch.linalg.householder_product", "input")
    m, n = A.shape[-2:]
    k = tau.shape[-1]
    if m < n:
        raise RuntimeError("torch.linalg.householder_product: input.shape[-2] must be greater "
                           "than or equal to input.shape[-1]")
    if n < k:
        raise RuntimeError("torch.linalg.householder_product: input.shape[-1] must be greater "
                           "than or equal to tau.shape[-1]")
    Q = E.eye(m, n, dtype=A.dtype).expand(tuple(A.shape[:-2]) + (m, n))
    rows = E.arange(m).unsqueeze(-1)
    for i in range(k - 1, -1, -1):
        col = A[..., :, i:i + 1]
        v = E.where(rows > i, col, E.where(rows == i, E.ones((), dtype=A.dtype),
                                           E.zeros((), dtype=A.dtype)))
        t = tau[..., i].unsqueeze(-1).unsqueeze(-1)
        Q = Q - t * (v @ (v.mH @ Q))
    if k == 0 and (A.requires_grad or tau.requires_grad):
        # no reflector: Q does not depend on the inputs, but torch's output still requires
        # grad (zero gradient)
        Q = E.where(E.ones((), dtype=E.bool), Q, A)
        if tau.requires_grad:
            Q = Q + tau.sum(-1).unsqueeze(-1).unsqueeze(-1)
    return _out(Q, out, "linalg_householder_product")


@linalg
def tensorinv(A, ind=2, *, out=None):
    import operator
    from functools import reduce
    if ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    shp = tuple(A.shape)
    outer, inner = shp[:ind], shp[ind:]
    p = reduce(operator.mul, outer, 1)
    q = reduce(operator.mul, inner, 1)
    if p != q:
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[ind:]) == "
                           f"prod(self.shape[:ind]), but got {q} != {p}")
    r = inv(A.reshape(p, q)).reshape(inner + outer)
    return _out(r, out, "linalg_tensorinv")


@linalg
def tensorsolve(A, B, dims=None, *, out=None):
    E = _E()
    if dims is not None:
        nd = A.ndim
        dims = [d % nd for d in dims]
        rest = [d for d in range(nd) if d not in dims]
        A = A.permute(*(rest + dims))
    res_shape = tuple(A.shape[B.ndim:])
    n = int(np.prod(res_shape)) if res_shape else 1
    r = solve(A.reshape(B.numel(), n), B.reshape(B.numel()))
    return _out(r.reshape(res_shape), out, "linalg_tensorsolve")


@linalg
def vander(x, *, N=None):
    E = _E()
    if x.ndim < 1:
        x = x.unsqueeze(0)  # torch treats a 0-d x as a 1-vector
    n = x.shape[-1] if N is None else N
    if n <= 1:
        raise RuntimeError("N must be greater than 1.")
    ones = E.ones(tuple(x.shape) + (1,), dtype=x.dtype)
    rest = x.unsqueeze(-1).expand(tuple(x.shape) + (n - 1,)).cumprod(-1)
    return E.cat([ones, rest], -1)


@linalg
def vecdot(x, y, *, dim=-1, out=None):
    return _out((conj_if_complex(x) * y).sum(dim), out, "linalg_vecdot")


@linalg
def diagonal(A, *, offset=0, dim1=-2, dim2=-1):
    return _E().diagonal(A, offset, dim1, dim2)


@linalg
def matmul(input, other, *, out=None):
    return _E().matmul(input, other, out=out)


# ==================================================================== torch.* aliases


@public("det", method=True)
def _t_det(input):
    return _d(det_op, input)


@public("slogdet", method=True)
def _t_slogdet(input, *, out=None):
    s, l = _d(slogdet_op, input)
    return _named("slogdet", ("sign", "logabsdet"), (s, l))


@public("logdet", method=True)
def _t_logdet(input):
    E = _E()
    s, l = _d(slogdet_op, input)
    if input.is_complex():
        return E.log(s) + l
    nan = E.full((), float("nan"), dtype=l.dtype)
    return E.where(s < 0, nan, l)


@public("inverse", method=True)
def _t_inverse(input, *, out=None):
    return _out(_d(inv_op, input), out, "inverse")


@public("matrix_exp", method=True)
def _t_matrix_exp(input):
    return _d(matrix_exp_op, input)


@public("matrix_power", method=True)
def _t_matrix_power(input, n, *, out=None):
    return matrix_power(input, n, out=out)


@public("pinverse", method=True)
def _t_pinverse(input, rcond=1e-15):
    return _d(pinv_op, input, None, rcond, False)


@public("svd", method=True)
def _t_svd(input, some=True, compute_uv=True, *, out=None):
    E = _E()
    if compute_uv:
        U, S, Vh = _d(svd_op, input, not some)
        V = Vh.mH
    else:
        m, n = input.shape[-2:]
        S = svdvals(input)
        U = E.zeros(tuple(input.shape[:-2]) + (m, m), dtype=input.dtype)
        V = E.zeros(tuple(input.shape[:-2]) + (n, n), dtype=input.dtype)
    return _out(_named("svd", ("U", "S", "V"), (U, S, V)), out, "svd", ("U", "S", "V"))


def _deprecated(name, message):
    """torch's once-a-process warning for the pre-``torch.linalg`` spellings."""
    from ember._runtime_flags import warn_once
    warn_once(name, f"torch.{name} is deprecated in favor of {message}", stacklevel=4)


@public("qr", method=True)
def _t_qr(input, some=True, *, out=None):
    _deprecated("qr", "torch.linalg.qr and will be removed in a future PyTorch release.\n"
                "The boolean parameter 'some' has been replaced with a string parameter "
                "'mode'.\nQ, R = torch.qr(A, some)\nshould be replaced with\nQ, R = "
                "torch.linalg.qr(A, 'reduced' if some else 'complete')")
    Q, R = _d(qr_op, input, "reduced" if some else "complete")
    return _out(_named("qr", ("Q", "R"), (Q, R)), out, "qr", ("Q", "R"))


@public("cholesky", method=True)
def _t_cholesky(input, upper=False, *, out=None):
    _deprecated("cholesky", "torch.linalg.cholesky and will be removed in a future PyTorch "
                "release.\nL = torch.cholesky(A)\nshould be replaced with\nL = "
                "torch.linalg.cholesky(A)\nand\nU = torch.cholesky(A, upper=True)\nshould be "
                "replaced with\nU = torch.linalg.cholesky(A).mH\nThis transform will produce "
                "equivalent results for all valid (symmetric positive definite) inputs.")
    return _out(_d(cholesky_op, input, upper), out, "cholesky")


@public("cholesky_solve", method=True)
def _t_cholesky_solve(input, input2, upper=False, *, out=None):
    L = input2
    if input.ndim < 2:
        raise RuntimeError(f"b should have at least 2 dimensions, but has {input.ndim} "
                           f"dimensions instead")
    if L.ndim < 2 or L.shape[-1] != L.shape[-2]:
        raise RuntimeError(f"A must be batches of square matrices, but they are "
                           f"{L.shape[-2] if L.ndim > 1 else 1} by {L.shape[-1]} matrices")
    if input.shape[-2] != L.shape[-1]:
        raise RuntimeError(f"Incompatible matrix sizes for cholesky_solve: each A matrix is "
                           f"{L.shape[-1]} by {L.shape[-1]} but each b matrix is "
                           f"{input.shape[-2]} by {input.shape[-1]}")
    if upper:
        X = _solve_tri(L, _solve_tri(L.mH, input, False), True)
    else:
        X = _solve_tri(L.mH, _solve_tri(L, input, False), True)
    return _out(X, out, "cholesky_solve")


@public("cholesky_inverse", method=True)
def _t_cholesky_inverse(input, upper=False, *, out=None):
    E = _E()
    I = E.eye(input.shape[-1], dtype=input.dtype).expand(input.shape)
    return _out(_t_cholesky_solve(I, input, upper), out, "cholesky_inverse")


@public("triangular_solve", method=True)
def _t_triangular_solve(input, A, upper=True, transpose=False, unitriangular=False, *, out=None):
    _deprecated("triangular_solve", "torch.linalg.solve_triangularand will be removed in a "
                "future PyTorch release.\ntorch.linalg.solve_triangular has its arguments "
                "reversed and does not return a copy of one of the inputs.\nX = "
                "torch.triangular_solve(B, A).solution\nshould be replaced with\nX = "
                "torch.linalg.solve_triangular(A, B).")
    M = A.mT if transpose else A
    up = (not upper) if transpose else upper
    X = _d(solve_triangular_op, M, input, up, unitriangular)
    return _named("triangular_solve", ("solution", "cloned_coefficient"), (X, A.clone()))


@public("lu_unpack")
def _t_lu_unpack(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True, *, out=None):
    E = _E()
    P = _d(lu_perm_op, LU_data, LU_pivots) if unpack_pivots else E.empty(0, dtype=LU_data.dtype)
    if unpack_data:
        L, U = _lu_unpack_parts(LU_data)
    else:
        L = E.empty(0, dtype=LU_data.dtype)
        U = E.empty(0, dtype=LU_data.dtype)
    return _out(_named("lu_unpack", ("P", "L", "U"), (P, L, U)), out, "lu_unpack",
                ("P", "L", "U"))


@public("lu_solve", method=True)
def _t_lu_solve(input, LU_data, LU_pivots, *, out=None):
    _deprecated("lu_solve", "torch.linalg.lu_solveand will be removed in a future PyTorch "
                "release.\nNote that torch.linalg.lu_solve has its arguments reversed.\nX = "
                "torch.lu_solve(B, LU, pivots)\nshould be replaced with\nX = "
                "torch.linalg.lu_solve(LU, pivots, B)")
    return lu_solve(LU_data, LU_pivots, input, out=out)


@public("lu", method=True)
def _t_lu(A, pivot=True, get_infos=False, out=None):
    _deprecated("lu", "torch.linalg.lu_factor / torch.linalg.lu_factor_ex and will be removed "
                "in a future PyTorch release.\nLU, pivots = torch.lu(A, compute_pivots)\n"
                "should be replaced with\nLU, pivots = torch.linalg.lu_factor(A, "
                "compute_pivots)\nand\nLU, pivots, info = torch.lu(A, compute_pivots, "
                "get_infos=True)\nshould be replaced with\nLU, pivots, info = "
                "torch.linalg.lu_factor_ex(A, compute_pivots)")
    LU, piv, info = _d(lu_factor_ex_op, A, pivot, False)
    if get_infos:
        return LU, piv, info
    return LU, piv
