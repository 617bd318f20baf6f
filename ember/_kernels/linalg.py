"""Linear algebra kernels (``torch.linalg``) on NumPy / LAPACK.

NumPy's ``np.linalg`` routines work on stacks of matrices, so the kernels are vectorised
over the leading (batch) dims. SciPy is imported lazily, inside the kernels that need it
(``import ember`` must stay fast). Error messages follow torch's.
"""
from __future__ import annotations

import numpy as np

from ember._kernels import numpy_blas

from ember._kernels.reduction import tname

# -------------------------------------------------------------------- checks


class _LinAlgError(RuntimeError):
    """torch.linalg.LinAlgError: a numerical failure (singular input, not positive-definite).
    Named ``_LinAlgError`` as torch's class is (``type(e).__name__`` prints that)."""


LinAlgError = _LinAlgError


def is_fc(dt):
    return dt.kind in "fc" or dt.kind == "V"


def check_fc(a, fname, arg="input"):
    if not is_fc(a.dtype):
        raise RuntimeError(f"{fname}: Expected a floating point or complex tensor as {arg}. "
                           f"Got {tname(a.dtype)}")


def check_matrix(a, fname, arg="A"):
    if a.ndim < 2:
        raise RuntimeError(f"{fname}: The input tensor {arg} must have at least 2 dimensions.")


def check_square(a, fname, arg="A"):
    check_matrix(a, fname, arg)
    if a.shape[-1] != a.shape[-2]:
        raise RuntimeError(f"{fname}: {arg} must be batches of square matrices, but they are "
                           f"{a.shape[-2]} by {a.shape[-1]} matrices")


def check_same_dtype(a, b, fname, an="A", bn="B"):
    if a.dtype != b.dtype:
        raise RuntimeError(f"{fname}: Expected {bn} and {an} to have the same dtype, but found "
                           f"{bn} of type {tname(b.dtype)} and {an} of type {tname(a.dtype)} "
                           f"instead.")


def _work(a):
    """float16/bfloat16 are not LAPACK types; torch refuses them on CPU too."""
    return a


def _batch_msg(fname, msg, info, batched):
    return msg


def _fresh(r, dt):
    r = np.asarray(r)
    if r.dtype != dt:
        r = r.astype(dt)
    return np.ascontiguousarray(r) if r.ndim else r.copy()


# -------------------------------------------------------------------- LU-based


def _lapack(name, dt):
    from scipy.linalg import lapack
    p = {np.dtype(np.float32): "s", np.dtype(np.float64): "d",
         np.dtype(np.complex64): "c", np.dtype(np.complex128): "z"}[np.dtype(dt)]
    return getattr(lapack, p + name)


# Note [small LU order]: torch's LAPACK (MKL) factors a square float32/float64 matrix of side
# 16 or less (found by experiment, bit for bit on random matrices of sides 1-16; sides 17 and
# more are blocked and differ) as the unblocked right-looking algorithm: the pivot row is the
# first of largest magnitude, rows are swapped whole, the column below the pivot is scaled
# by the rounded reciprocal of the pivot (divided instead where one element is left and the
# side is 4 or less, and for pivots below the smallest normal), and the trailing block takes
# away the rounded product of column and row (no multiply-add). SciPy's LAPACK rounds
# differently in about half the float32 matrices, which moved det/slogdet/lu_factor a last
# bit off torch's (a flow's logdet of a 2x2 mixing matrix).
_LU_SMALL_MAX = 16


def _lu_small(flat):
    """(LU, pivots (1-based int32), info) of a (B, n, n) stack of finite float32/float64
    matrices, n <= _LU_SMALL_MAX, in torch's LAPACK's rounding (Note [small LU order])."""
    lu = flat.copy()
    B, n = lu.shape[0], lu.shape[-1]
    piv = np.empty((B, n), np.int32)
    info = np.zeros(B, np.int32)
    tiny = np.finfo(lu.dtype).tiny
    one = lu.dtype.type(1)
    if B == 1:                               # one matrix: scalar pivots, fewer NumPy calls
        m = lu[0]
        with np.errstate(divide="ignore", invalid="ignore"):
            for k in range(n):
                p = k + int(np.argmax(np.abs(m[k:, k])))
                piv[0, k] = p + 1
                if p != k:
                    m[[k, p]] = m[[p, k]]
                d = m[k, k]
                if d == 0 and not info[0]:
                    info[0] = k + 1
                if k + 1 == n:
                    break
                if d != 0:
                    if (n <= 4 and n - k == 2) or abs(d) < tiny:
                        m[k + 1:, k] /= d
                    else:
                        m[k + 1:, k] *= one / d
                m[k + 1:, k + 1:] -= np.multiply.outer(m[k + 1:, k], m[k, k + 1:])
        return lu, piv, info
    with np.errstate(divide="ignore", invalid="ignore"):
        for k in range(n):
            p = np.argmax(np.abs(lu[:, k:, k]), axis=1)
            piv[:, k] = p + (k + 1)
            if p.any():
                i = np.flatnonzero(p)
                j = p[i] + k
                top = lu[i, k, :].copy()
                lu[i, k, :] = lu[i, j, :]
                lu[i, j, :] = top
            d = lu[:, k, k]
            if k + 1 == n:
                info[(info == 0) & (d == 0)] = n
                break
            col = lu[:, k + 1:, k]
            small = np.abs(d) < tiny                 # (zero pivots included)
            if n <= 4 and n - k == 2:
                scaled = col / d[:, None]
            else:
                scaled = col * (one / d)[:, None]
                if small.any():
                    scaled[small] = col[small] / d[small, None]
            if small.any():
                zero = d == 0
                info[(info == 0) & zero] = k + 1
                scaled[zero] = col[zero]             # (LAPACK leaves a zero pivot's column)
            lu[:, k + 1:, k] = scaled
            lu[:, k + 1:, k + 1:] -= lu[:, k + 1:, k:k + 1] * lu[:, k:k + 1, k + 1:]
    return lu, piv, info


def lu_factor_batched(a):
    """(LU, pivots (1-based int32), info (int32)) for a stack of (m, n) matrices."""
    m, n = a.shape[-2:]
    if m == n and 0 < n <= _LU_SMALL_MAX and a.dtype in (np.float32, np.float64) \
            and np.isfinite(a).all():
        lu, piv, info = _lu_small(a.reshape((-1, n, n)))
        return lu.reshape(a.shape), piv.reshape(a.shape[:-1]), info.reshape(a.shape[:-2])
    getrf = _lapack("getrf", a.dtype)
    batch = a.shape[:-2]
    m, n = a.shape[-2:]
    flat = a.reshape((int(np.prod(batch, dtype=np.int64)), m, n))
    lu = np.empty_like(flat)
    piv = np.empty((flat.shape[0], min(m, n)), np.int32)
    info = np.zeros(flat.shape[0], np.int32)
    for i in range(flat.shape[0]):
        if m == 0 or n == 0:
            lu[i] = flat[i]
            continue
        l, p, inf = getrf(flat[i])
        lu[i] = l
        piv[i] = p[:min(m, n)] + 1
        info[i] = inf
    return lu.reshape(a.shape), piv.reshape(batch + (min(m, n),)), info.reshape(batch)


def det(a):
    """The product of the LU factor's diagonal times the pivots' sign, as torch computes it
    (NumPy's det goes through exp(log|det|): 43.99999999 for an exact 44). Bits can still
    differ from torch's where its LAPACK (MKL) rounds the factorisation differently."""
    check_square(a, "linalg.det")
    check_fc(a, "linalg.det", "input")
    n = a.shape[-1]
    if n == 0 or a.size // (n * n) > _DET_LU_MAX_BATCH:
        return _fresh(np.linalg.det(a), a.dtype)
    # torch's LAPACK reads the row-major matrix as column-major: it factors A^T
    lu, piv, _ = lu_factor_batched(np.swapaxes(a, -1, -2))
    diag = np.diagonal(lu, axis1=-2, axis2=-1)
    prod = diag[..., 0].copy()
    for j in range(1, n):                   # left to right, as a sequential product
        prod = prod * diag[..., j]
    swaps = np.count_nonzero(piv != np.arange(1, n + 1, dtype=piv.dtype), axis=-1)
    return _fresh(np.where(swaps % 2 == 1, -prod, prod), a.dtype)


_DET_LU_MAX_BATCH = 4096      # beyond this many matrices a per-matrix LAPACK loop is too slow


def slogdet(a):
    check_square(a, "linalg.slogdet")
    check_fc(a, "linalg.slogdet", "input")
    n = a.shape[-1]
    if a.dtype in (np.float32, np.float64) and 0 < n <= _LU_SMALL_MAX \
            and a.size // (n * n) <= _DET_LU_MAX_BATCH and np.isfinite(a).all():
        # as det: the LU factor of A^T (torch's column-major LAPACK), then torch's log of
        # the diagonal's magnitudes summed in torch's order
        from ember._kernels.elementwise import log
        from ember._kernels.torch_sum import reduce_sum
        lu, piv, _ = lu_factor_batched(np.ascontiguousarray(np.swapaxes(a, -1, -2)))
        diag = np.diagonal(lu, axis1=-2, axis2=-1)
        swaps = np.count_nonzero(piv != np.arange(1, n + 1, dtype=piv.dtype), axis=-1)
        s = np.prod(np.sign(diag), axis=-1) * np.where(swaps % 2 == 1, -1, 1)
        with np.errstate(divide="ignore"):
            logs = np.ascontiguousarray(np.asarray(log(np.abs(diag))))
        l = reduce_sum(logs, (logs.ndim - 1,), False)
        if l is None:
            l = np.sum(logs, axis=-1)
        return _fresh(s, a.dtype), _fresh(l, a.dtype)
    s, l = np.linalg.slogdet(a)
    return _fresh(s, a.dtype), _fresh(l, np.empty(0, a.dtype).real.dtype)


def _singular_info(a):
    """Per-matrix LAPACK info of getrf (0, or the 1-based index of the zero pivot)."""
    return lu_factor_batched(a)[2]


def inv_ex(a, check_errors=False, fname="linalg.inv_ex"):
    check_square(a, fname)
    check_fc(a, fname, "input")
    if a.shape[-1] == 0:
        return np.empty_like(a), np.zeros(a.shape[:-2], np.int32)
    try:
        r = np.linalg.inv(a)
        info = np.zeros(a.shape[:-2], np.int32)
    except np.linalg.LinAlgError:
        info = _singular_info(a)
        with np.errstate(all="ignore"):
            lu, piv, _ = lu_factor_batched(a)
            r = _inv_from_lu(lu, piv, info)
        if check_errors:
            _raise_singular(fname, info)
    return _fresh(r, a.dtype), info


def _inv_from_lu(lu, piv, info):
    getri = _lapack("getri", lu.dtype)
    n = lu.shape[-1]
    nb = int(np.prod(lu.shape[:-2], dtype=np.int64))
    flat = lu.reshape((nb, n, n))
    pf = piv.reshape((nb, n))
    out = np.empty_like(flat)
    for i in range(flat.shape[0]):
        if info.reshape(-1)[i] != 0:
            out[i] = np.nan
            continue
        r, _ = getri(flat[i], pf[i] - 1)
        out[i] = r
    return out.reshape(lu.shape)


def _raise_singular(fname, info):
    flat = info.reshape(-1)
    bad = np.nonzero(flat)[0]
    if len(bad) == 0:
        return
    i = bad[0]
    base = fname.replace("_ex", "")
    pre = f"{base}: (Batch element {i}): " if info.ndim > 0 else f"{base}: "
    raise LinAlgError(f"{pre}The diagonal element {flat[i]} is zero, the inversion could not be "
                       f"completed because the input matrix is singular.")


def inv(a):
    return inv_ex(a, True, "linalg.inv")[0]


def _solve_shapes(a, b, fname):
    check_square(a, fname)
    check_fc(a, fname, "input")
    check_same_dtype(a, b, fname)


def solve_ex(a, b, check_errors=False, fname="linalg.solve_ex"):
    """Left solve A X = B, B a (batch of) matrices broadcast against A."""
    _solve_shapes(a, b, fname)
    if b.ndim < 2:
        raise RuntimeError(f"{fname}: The input tensor B must have at least 2 dimensions.")
    if b.shape[-2] != a.shape[-1]:
        raise RuntimeError(f"{fname}: Incompatible shapes of A and B for the equation AX = B "
                           f"({a.shape[-2]}x{a.shape[-1]} and {b.shape[-2]}x{b.shape[-1]})")
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    A = np.broadcast_to(a, batch + a.shape[-2:])
    B = np.broadcast_to(b, batch + b.shape[-2:])
    info = np.zeros(batch, np.int32)
    if a.shape[-1] == 0 or b.shape[-1] == 0:
        return np.zeros(B.shape, a.dtype), info
    if not batch and a.dtype == b.dtype:
        # one matrix: LAPACK getrf/getrs on copies in the layouts LAPACK takes as they are
        # (A's row-major copy is A^T column-major, solved transposed), no transposing
        # copies as NumPy's gesv makes (Note [NumPy's own BLAS]); 512x512: ~15% faster
        lu, x = np.array(a, order="C"), np.array(b, order="F")
        res = numpy_blas.lu_solve_inplace(lu, x)
        if res is not None:
            if res == 0:
                return np.ascontiguousarray(x), info
            info = _singular_info(np.ascontiguousarray(a))   # torch's index: A's own getrf
            if check_errors:
                _raise_solve(fname, info)
            return np.full(B.shape, np.nan, a.dtype), info
    try:
        r = np.linalg.solve(A, B)
    except np.linalg.LinAlgError:
        info = _singular_info(np.ascontiguousarray(A))
        if check_errors:
            _raise_solve(fname, info)
        r = np.full(B.shape, np.nan, a.dtype)
        ok = info == 0
        if ok.any():
            r[ok] = np.linalg.solve(A[ok], B[ok])
    return _fresh(r, a.dtype), info


def _raise_solve(fname, info):
    flat = info.reshape(-1)
    bad = np.nonzero(flat)[0]
    if len(bad):
        i = bad[0]
        base = fname.replace("_ex", "")
        pre = f"{base}: (Batch element {i}): " if info.ndim > 0 else f"{base}: "
        raise LinAlgError(f"{pre}The solver failed because the input matrix is singular.")


def solve(a, b):
    return solve_ex(a, b, True, "torch.linalg.solve")[0]


def solve_triangular(a, b, upper, unitriangular=False):
    fname = "linalg.solve_triangular"
    check_matrix(a, fname)
    check_matrix(b, fname, "B")
    check_square(a, fname)
    check_fc(a, fname, "input")
    check_same_dtype(a, b, fname)
    if b.shape[-2] != a.shape[-1]:
        raise RuntimeError(f"{fname}: Incompatible shapes of A and B for the equation AX = B "
                           f"({a.shape[-2]}x{a.shape[-1]} and {b.shape[-2]}x{b.shape[-1]})")
    from scipy.linalg import solve_triangular as st
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    nb = int(np.prod(batch, dtype=np.int64))
    A = np.broadcast_to(a, batch + a.shape[-2:]).reshape((nb,) + a.shape[-2:])
    B = np.broadcast_to(b, batch + b.shape[-2:]).reshape((nb,) + b.shape[-2:])
    out = np.zeros(B.shape, np.result_type(a.dtype, b.dtype))
    n = a.shape[-1]
    with np.errstate(all="ignore"):
        if B.shape[0] == 1 or n > 64:
            for i in range(B.shape[0]):
                if n == 0 or B.shape[-1] == 0:
                    continue
                try:
                    out[i] = st(A[i], B[i], lower=not upper, unit_diagonal=unitriangular,
                                check_finite=False)
                except np.linalg.LinAlgError:
                    out[i] = _tri_subst(A[i:i + 1], B[i:i + 1], upper, unitriangular)[0]
        elif n and B.shape[-1]:
            out[...] = _tri_subst(A, B, upper, unitriangular)
    return out.reshape(batch + b.shape[-2:])


def _tri_subst(A, B, upper, unit):
    """Vectorised (over the batch) forward/back substitution; inf/nan on zero pivots."""
    n = A.shape[-1]
    X = np.zeros(B.shape, np.result_type(A.dtype, B.dtype))
    rng = range(n - 1, -1, -1) if upper else range(n)
    for i in rng:
        s = B[:, i, :] - np.einsum("bk,bkj->bj", A[:, i, :], X)
        X[:, i, :] = s if unit else s / A[:, i, i][:, None]
    return X


# -------------------------------------------------------------------- Cholesky


def cholesky_ex(a, upper=False, check_errors=False, fname="linalg.cholesky_ex"):
    check_square(a, fname)
    check_fc(a, fname, "input")
    info = np.zeros(a.shape[:-2], np.int32)
    if a.shape[-1] == 0:
        return np.empty_like(a), info
    # torch reads the lower triangle only
    low = np.tril(a)
    herm = low + np.swapaxes(np.tril(a, -1), -1, -2).conj()
    try:
        L = np.linalg.cholesky(herm)
    except np.linalg.LinAlgError:
        potrf = _lapack("potrf", a.dtype)
        flat = herm.reshape((-1,) + a.shape[-2:])
        L = np.zeros_like(flat)
        inf = info.reshape(-1)
        for i in range(flat.shape[0]):
            c, k = potrf(flat[i], lower=1, clean=1)
            inf[i] = k
            L[i] = np.tril(c)
        info = inf.reshape(a.shape[:-2])
        L = L.reshape(a.shape)
        if check_errors:
            bad = np.nonzero(inf)[0]
            if len(bad):
                j = bad[0]
                base = fname.replace("_ex", "")
                pre = f"{base}: (Batch element {j}): " if info.ndim > 0 else f"{base}: "
                raise LinAlgError(f"{pre}The factorization could not be completed because the "
                                  f"input is not positive-definite (the leading minor of order "
                                   f"{inf[j]} is not positive-definite).")
    if upper:
        L = np.swapaxes(L, -1, -2).conj()
    return _fresh(L, a.dtype), info


def cholesky(a, upper=False):
    return cholesky_ex(a, upper, True, "linalg.cholesky")[0]


# -------------------------------------------------------------------- QR, eig, SVD


def qr(a, mode="reduced"):
    fname = "linalg.qr"
    check_matrix(a, fname)
    check_fc(a, fname, "input")
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of "
                           f"'reduced' (default), 'r', or 'complete'")
    m, n = a.shape[-2:]
    if a.size == 0:
        k = min(m, n)
        qc = m if mode == "complete" else k
        Q = np.zeros(a.shape[:-2] + ((m, qc) if mode != "r" else (0,)), a.dtype)
        if mode != "r" and m:
            Q[..., :, :] = np.eye(m, qc, dtype=a.dtype)
        R = np.zeros(a.shape[:-2] + ((qc if mode == "complete" else k), n), a.dtype)
        return Q, R
    if mode == "r":
        R = np.linalg.qr(a, mode="r")
        return np.zeros((0,), a.dtype), _fresh(R, a.dtype)
    Q, R = np.linalg.qr(a, mode=mode)
    return _fresh(Q, a.dtype), _fresh(R, a.dtype)


def eigh(a, UPLO="L"):
    fname = "linalg.eigh"
    check_square(a, fname)
    check_fc(a, fname, "input")
    if UPLO not in ("L", "U"):
        raise RuntimeError("Expected UPLO argument to be 'L' or 'U', but got " + str(UPLO))
    if a.shape[-1] == 0:
        return np.zeros(a.shape[:-1], a.real.dtype), np.empty_like(a)
    w, v = np.linalg.eigh(a, UPLO=UPLO)
    return _fresh(w, a.real.dtype), _fresh(v, a.dtype)


def eigvalsh(a, UPLO="L"):
    fname = "linalg.eigvalsh"
    check_square(a, fname)
    check_fc(a, fname, "input")
    if a.shape[-1] == 0:
        return np.zeros(a.shape[:-1], a.real.dtype)
    return _fresh(np.linalg.eigvalsh(a, UPLO=UPLO), a.real.dtype)


def _complex_of(dt):
    return np.result_type(dt, np.complex64)


def eig(a):
    fname = "linalg.eig"
    if a.dtype.kind in "iub":       # torch looks for the complex dtype first (non-square too)
        raise RuntimeError(f"Unknown Complex ScalarType for {tname(a.dtype)}")
    check_square(a, fname)
    check_fc(a, fname, "input")
    cdt = _complex_of(a.dtype)
    if not np.isfinite(a).all():
        raise RuntimeError("torch.linalg.eig: input tensor should not contain infs or NaNs.")
    if a.shape[-1] == 0:
        return np.zeros(a.shape[:-1], cdt), np.zeros(a.shape, cdt)
    w, v = np.linalg.eig(a)
    return _fresh(w, cdt), _fresh(v, cdt)


def svd(a, full_matrices=True):
    fname = "linalg.svd"
    check_matrix(a, fname)
    check_fc(a, fname, "input")
    m, n = a.shape[-2:]
    k = min(m, n)
    rdt = a.real.dtype
    if a.size == 0:
        um, vn = (m, n) if full_matrices else (k, k)
        U = np.zeros(a.shape[:-2] + (m, um), a.dtype)
        Vh = np.zeros(a.shape[:-2] + (vn, n), a.dtype)
        if um:
            U[...] = np.eye(m, um, dtype=a.dtype)
        if vn:
            Vh[...] = np.eye(vn, n, dtype=a.dtype)
        return U, np.zeros(a.shape[:-2] + (k,), rdt), Vh
    _svd_nan_check(a)
    U, S, Vh = np.linalg.svd(a, full_matrices=full_matrices)
    return _fresh(U, a.dtype), _fresh(S, rdt), _fresh(Vh, a.dtype)


def _svd_nan_check(a):
    """torch's LAPACK SVD fails on a matrix holding NaN (an inf goes through, giving NaN)."""
    bad = np.isnan(a).reshape((-1,) + a.shape[-2:]).any(axis=(1, 2))
    if bad.any():
        where = f"(Batch element {int(np.flatnonzero(bad)[0])}): " if a.ndim > 2 else ""
        raise _LinAlgError(f"linalg.svd: {where}The algorithm failed to converge because the "
                           f"input matrix contained non-finite values.")


def svdvals(a):
    check_matrix(a, "linalg.svdvals")
    check_fc(a, "linalg.svdvals", "input")
    if a.size == 0:
        return np.zeros(a.shape[:-2] + (min(a.shape[-2:]),), a.real.dtype)
    _svd_nan_check(a)
    return _fresh(np.linalg.svd(a, compute_uv=False), a.real.dtype)


# -------------------------------------------------------------------- pinv, lstsq, expm


def pinv(a, atol=None, rtol=None, hermitian=False):
    fname = "linalg.pinv"
    check_matrix(a, fname)
    check_fc(a, fname, "input")
    m, n = a.shape[-2:]
    if a.size == 0:
        return np.zeros(a.shape[:-2] + (n, m), a.dtype)
    if rtol is None:
        rtol = 0.0 if (atol is not None and np.any(np.asarray(atol) > 0)) else \
            np.finfo(a.dtype).eps * max(m, n)
    atol = 0.0 if atol is None else atol
    if hermitian:
        w, v = np.linalg.eigh(a)
        s = np.abs(w)
        smax = s.max(-1, keepdims=True)
        tol = np.maximum(np.expand_dims(np.asarray(atol), -1), np.expand_dims(np.asarray(rtol), -1) * smax)
        inv = np.where(s > tol, 1 / np.where(s > tol, w, 1), 0)
        r = (v * inv[..., None, :]) @ np.swapaxes(v, -1, -2).conj()
    else:
        _svd_nan_check(a)
        u, s, vh = np.linalg.svd(a, full_matrices=False)
        smax = s[..., :1]
        tol = np.maximum(np.expand_dims(np.asarray(atol), -1), np.expand_dims(np.asarray(rtol), -1) * smax)
        inv = np.where(s > tol, 1 / np.where(s > tol, s, 1), 0)
        r = (np.swapaxes(vh, -1, -2).conj() * inv[..., None, :]) @ np.swapaxes(u, -1, -2).conj()
    return _fresh(r, a.dtype)


def lstsq(a, b, rcond=None, driver=None):
    fname = "torch.linalg.lstsq"
    check_matrix(a, "torch.linalg.lstsq", "input")
    check_fc(a, "torch.linalg.lstsq", "input")
    if a.dtype != b.dtype:
        raise RuntimeError(f"torch.linalg.lstsq: Expected input and other to have the same dtype, "
                           f"but got input with dtype {tname(a.dtype)} and other with dtype "
                           f"{tname(b.dtype)}")
    drivers = ("gels", "gelsy", "gelsd", "gelss")
    if driver is None:
        driver = "gelsy"
    if driver not in drivers:
        raise RuntimeError(f"torch.linalg.lstsq: parameter `driver` should be one of "
                           f"(gels, gelsy, gelsd, gelss)")
    vec = b.ndim == a.ndim - 1
    if vec:
        b = b[..., None]
    m, n = a.shape[-2:]
    if b.shape[-2] != m:
        raise RuntimeError(f"torch.linalg.lstsq: input.size(-2) should match other.size(-2)")
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    nb = int(np.prod(batch, dtype=np.int64))
    A = np.broadcast_to(a, batch + (m, n)).reshape((nb, m, n))
    B = np.broadcast_to(b, batch + b.shape[-2:]).reshape((nb,) + b.shape[-2:])
    k = B.shape[-1]
    rdt = a.real.dtype
    if rcond is None:
        rcond = np.finfo(a.dtype).eps * max(m, n)
    X = np.zeros((A.shape[0], n, k), a.dtype)
    ranks = np.zeros(A.shape[0], np.int64)
    svals = np.zeros((A.shape[0], min(m, n)), rdt)
    for i in range(A.shape[0]):
        if A[i].size == 0:
            continue
        x, _, r, s = np.linalg.lstsq(A[i], B[i], rcond=rcond)
        X[i], ranks[i], svals[i] = x, r, s
    sol = X.reshape(batch + (n, k))
    if vec:
        sol = sol[..., 0]
    full_rank = bool((ranks == min(m, n)).all()) if A.shape[0] else True
    if m > n and driver != "gelsy" and full_rank:
        # torch keeps the trailing size-1 dim for a vector b
        res = np.sum(np.abs(B - A @ X) ** 2, axis=-2).reshape(batch + (k,)).astype(rdt)
    else:
        res = np.zeros((0,), rdt)
    rank = ranks.reshape(batch) if driver != "gels" else np.zeros((0,), np.int64)
    sv = svals.reshape(batch + (min(m, n),)) if driver in ("gelsd", "gelss") else \
        np.zeros((0,), rdt)
    return _fresh(sol, a.dtype), res, rank, sv


def matrix_exp(a):
    check_square(a, "linalg.matrix_exp")
    check_fc(a, "linalg.matrix_exp", "input")
    if a.size == 0:
        return np.empty_like(a)
    from scipy.linalg import expm
    return _fresh(expm(a), a.dtype)


# -------------------------------------------------------------------- permutations, LDL


def pivots_to_permutation(lu, pivots):
    """P (dtype of ``lu``) with A = P L U from LAPACK's 1-based row swaps."""
    m = lu.shape[-2]
    batch = pivots.shape[:-1]
    k = pivots.shape[-1]
    perm = np.broadcast_to(np.arange(m), batch + (m,)).copy()
    if perm.size:
        flat = perm.reshape(-1, m)
        piv = pivots.reshape(-1, k).astype(np.int64) - 1
        rows = np.arange(flat.shape[0])
        for i in range(k):
            j = piv[:, i]
            a, b = flat[rows, i].copy(), flat[rows, j].copy()
            flat[rows, i], flat[rows, j] = b, a
        perm = flat.reshape(batch + (m,))
    # row i of P^T A is row perm[i] of A  ->  P[perm[i], i] = 1
    P = np.zeros(batch + (m, m), lu.dtype)
    if P.size:
        np.put_along_axis(P, perm[..., None, :], 1, axis=-2)
    return P


def ldl_factor_ex(a, hermitian=False, check_errors=False):
    fname = "torch.linalg.ldl_factor_ex"
    check_square(a, "torch.linalg.ldl_factor_ex")
    check_fc(a, fname, "input")
    n = a.shape[-1]
    name = "hetrf" if hermitian and a.dtype.kind == "c" else "sytrf"
    f = _lapack(name, a.dtype)
    flat = a.reshape((int(np.prod(a.shape[:-2], dtype=np.int64)), n, n))
    LD = np.zeros_like(flat)
    piv = np.zeros((flat.shape[0], n), np.int32)
    info = np.zeros(flat.shape[0], np.int32)
    for i in range(flat.shape[0]):
        if n == 0:
            continue
        ld, ip, inf = f(flat[i], lower=1)
        LD[i] = np.tril(ld)
        piv[i] = ip
        info[i] = inf
    if check_errors and info.any():
        raise RuntimeError(f"torch.linalg.ldl_factor_ex: The factorization could not be "
                           f"completed because the input is singular.")
    return LD.reshape(a.shape), piv.reshape(a.shape[:-1]), info.reshape(a.shape[:-2])


def ldl_solve(LD, pivots, B, hermitian=False):
    fname = "torch.linalg.ldl_solve"
    check_square(LD, fname, "LD")
    check_matrix(B, fname, "B")
    n = LD.shape[-1]
    name = "hetrs" if hermitian and LD.dtype.kind == "c" else "sytrs"
    f = _lapack(name, LD.dtype)
    batch = np.broadcast_shapes(LD.shape[:-2], B.shape[:-2], pivots.shape[:-1])
    nb = int(np.prod(batch, dtype=np.int64))
    L = np.broadcast_to(LD, batch + (n, n)).reshape((nb, n, n))
    P = np.broadcast_to(pivots, batch + (n,)).reshape((nb, n))
    Bf = np.broadcast_to(B, batch + B.shape[-2:]).reshape((nb,) + B.shape[-2:])
    X = np.zeros(Bf.shape, LD.dtype)
    for i in range(L.shape[0]):
        if n == 0 or Bf.shape[-1] == 0:
            continue
        x, _ = f(L[i], P[i], Bf[i], lower=1)
        X[i] = x
    return X.reshape(batch + B.shape[-2:])


# -------------------------------------------------------------------- Householder QR

def geqrf(a):
    """LAPACK geqrf per matrix of ``a`` (*, m, n): (the compact QR: R on and above the
    diagonal, the Householder vectors below it; tau (*, min(m, n)))."""
    if a.ndim < 2:
        raise RuntimeError("torch.geqrf: input must have at least 2 dimensions.")
    if a.dtype.kind not in "fc" or a.dtype.itemsize < 4:
        raise NotImplementedError(f"\"geqrf_cpu\" not implemented for '{tname(a.dtype)}'")
    m, n = a.shape[-2:]
    k = min(m, n)
    batch = a.shape[:-2]
    flat = a.reshape((int(np.prod(batch, dtype=np.int64)), m, n))
    out = np.array(flat, copy=True)
    tau = np.zeros((flat.shape[0], k), a.dtype)
    if m and n:
        lapack_geqrf = _lapack("geqrf", a.dtype)
        for i in range(flat.shape[0]):
            qr, t, _, _ = lapack_geqrf(flat[i])
            out[i] = qr
            tau[i] = t[:k]
    return out.reshape(a.shape), tau.reshape(batch + (k,))
