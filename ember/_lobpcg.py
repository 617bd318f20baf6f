"""``torch.lobpcg``: a few extreme eigenpairs of a symmetric (generalized) eigenproblem.

Knyazev's Locally Optimal Block Preconditioned Conjugate Gradient. Each step searches the
span of the current block X (m, n), the preconditioned residuals W = iK (A X - B X diag(E))
of the pairs not yet converged and the previous step's direction P; a Rayleigh-Ritz
projection on that B-orthonormalized basis picks the next X. ``method="ortho"`` (default)
drops near-dependent basis columns before the projection; ``"basic"`` only
B-orthonormalizes. A is touched only through products A @ Y, so a sparse COO A is never
densified. The iteration runs in float64 on NumPy arrays; results come back in A's dtype.

The backward (dense A, B None) is the exact derivative of the top-k eigenpairs of the
symmetric A, from its full eigendecomposition; the gradient is symmetric.
"""
from __future__ import annotations

import numpy as np

import ember


class _Worker:
    """What ``tracker(worker)`` sees each step: torch's ``ivars`` / ``fvars`` / ``bvars`` /
    ``tvars`` dictionaries (``istep``, ``converged_count``, ``E``, ``X``, ``R``...)."""

    def __init__(self, iparams, fparams, bparams, method):
        self.ivars = {"istep": 0, "converged_count": 0, "converged_end": 0}
        self.ivars.update(iparams or {})
        self.fvars = {"_": 0.0}
        self.fvars.update(fparams or {})
        self.bvars = {"ortho_use_drop": False, "largest": True}
        self.bvars.update(bparams or {})
        self.tvars = {}
        self.method = method

    def __repr__(self):
        return f"LOBPCG(method={self.method!r}, istep={self.ivars['istep']})"


def _operator(M):
    """``Y -> M @ Y`` on float64 arrays, for a dense or sparse COO ember matrix (or None)."""
    if M is None:
        return None
    if M.is_sparse:
        idx = M.coalesce()._indices().numpy()
        vals = M.coalesce()._values().detach().numpy().astype(np.float64)
        rows, cols, m = idx[0], idx[1], M.shape[0]

        def apply(Y):
            out = np.zeros((m, Y.shape[1]))
            np.add.at(out, rows, vals[:, None] * Y[cols])
            return out
        return apply
    arr = M.detach().numpy().astype(np.float64)
    return lambda Y: arr @ Y


def _b_orthonormal(S, B, drop):
    """Columns spanning S, orthonormal in the B inner product; with ``drop`` the directions
    whose Gram eigenvalue is tiny relative to the largest are discarded."""
    G = S.T @ (S if B is None else B(S))
    G = (G + G.T) / 2
    w, V = np.linalg.eigh(G)
    keep = w > (w.max() * 1e-13 if drop else 0.0)
    if not keep.any():
        return S[:, :0]
    return S @ (V[:, keep] / np.sqrt(w[keep]))


def _ritz(S, A, n, largest):
    """Rayleigh-Ritz on the B-orthonormal basis S: (values (n,), coefficients (q, n))."""
    H = S.T @ A(S)
    w, C = np.linalg.eigh((H + H.T) / 2)
    order = np.argsort(-w if largest else w, kind="stable")[:n]
    return w[order], C[:, order]


def _solve(A, B, iK, X, k, n, tol, niter, largest, method, tracker, worker):
    """LOBPCG on one matrix; X (m, n) float64 start. Returns (E (k,), X (m, k))."""
    drop = method != "basic"
    X = _b_orthonormal(X, B, True)
    E, C = _ritz(X, A, n, largest)
    X = X @ C
    P = None
    nrm_A = nrm_B = None
    for step in range(niter if niter >= 0 else 1 << 62):
        AX, BX = A(X), (X if B is None else B(X))
        R = AX - BX * E
        if nrm_A is None:               # scale of the residual test, as ||A|| + |E| ||B||
            probe = np.random.default_rng(0).standard_normal((X.shape[0], 1))
            nrm_A = np.linalg.norm(A(probe)) / np.linalg.norm(probe)
            nrm_B = 1.0 if B is None else np.linalg.norm(B(probe)) / np.linalg.norm(probe)
        err = np.linalg.norm(R, axis=0) / ((nrm_A + np.abs(E) * nrm_B) *
                                           np.linalg.norm(X, axis=0))
        done = err < tol
        count = int(np.argmin(done)) if not done.all() else len(done)
        worker.ivars.update(istep=step, converged_count=count, converged_end=count)
        worker.tvars.update(E=E, X=X, R=R)
        if tracker is not None:
            tracker(worker)
        if count >= k:
            break
        W = R[:, ~done]
        if iK is not None:
            W = iK(W)
        parts = [X, W] + ([P] if P is not None and P.shape[1] else [])
        S = _b_orthonormal(np.concatenate(parts, 1), B, drop)
        E, C = _ritz(S, A, n, largest)
        newX = S @ C
        # the new direction: the part of the update outside the old X
        P = newX - X @ (X.T @ (newX if B is None else B(newX)))
        X = newX
    return E[:k], X[:, :k]


class _LobpcgFn(ember.autograd.Function):
    """Forward: the solve; backward: the exact derivative of the top-k eigenpairs."""

    @staticmethod
    def forward(ctx, A, E, X, has_B):
        ctx.refusal = ("lobpcg.backward does not support sparse input yet. Note that "
                       "lobpcg.forward does though." if A.is_sparse else
                       "lobpcg.backward does not support backward with B != I yet."
                       if has_B else None)
        ctx.save_for_backward(None if A.is_sparse else A, E, X)
        return E.clone(), X.clone()

    @staticmethod
    def backward(ctx, gE, gX):
        if ctx.refusal:
            raise ValueError(ctx.refusal)
        A, E, X = ctx.saved_tensors
        Asym = (A + A.mT) / 2
        lam, U = ember.linalg.eigh(Asym)
        G = ember.zeros_like(A)
        if gE is not None:
            G = G + (X * gE.unsqueeze(-2)) @ X.mT
        if gX is not None:
            C = U.mT @ gX                                           # (*, m, k)
            diff = E.unsqueeze(-2) - lam.unsqueeze(-1)              # lambda_i - lambda_j
            near = diff.abs() <= 1e-10 * lam.abs().amax(-1, keepdim=True).unsqueeze(-1)
            F = ember.where(near, ember.zeros_like(diff), 1 / ember.where(near, 1, diff))
            G = G + U @ (C * F) @ X.mT
        return (G + G.mT) / 2, None, None, None


def lobpcg(A, k=None, B=None, X=None, n=None, iK=None, niter=None, tol=None, largest=None,
           method=None, tracker=None, ortho_iparams=None, ortho_fparams=None,
           ortho_bparams=None):
    """(E (*, k), X (*, m, k)): the k largest (or smallest) eigenvalues of A x = E B x and
    their B-orthonormal eigenvectors. A (*, m, m) symmetric, dense or sparse COO; B likewise
    (default identity); X (*, m, n) an initial block; iK (m, m) a preconditioner."""
    if tuple(A.shape[-2:]) != (A.shape[-1], A.shape[-1]) or A.dim() < 2:
        raise AssertionError(f"A must be square, got shape {A.shape}")
    if B is not None and tuple(B.shape) != tuple(A.shape):
        raise AssertionError(f"A and B must have the same shapes, got {A.shape} and {B.shape}")
    m = A.shape[-1]
    dtype = A.dtype if A.is_floating_point() else ember.get_default_dtype()
    k = 1 if k is None else int(k)
    if X is not None:
        if tuple(X.shape[-2:-1]) != (m,):
            raise AssertionError(f"X has shape {X.shape}, but A has {m} rows")
        n = X.shape[-1]
    n = (k if n is None else int(n))
    if m < 3 * n:
        raise ValueError(f"LOBPCG algorithm is not applicable when the number of A rows (={m})"
                         f" is smaller than 3 x the number of requested eigenpairs (={n})")
    if k > n:
        raise ValueError(f"k (={k}) must not exceed the block size n (={n})")
    largest = True if largest is None else bool(largest)
    method = "ortho" if method is None else method
    niter = 1000 if niter is None else int(niter)
    tol = float(np.finfo(dtype.np).eps ** 0.5) if tol is None else float(tol)
    batch = tuple(A.shape[:-2])
    if X is None:
        X = ember.randn(*batch, m, n, dtype=dtype)
    worker = _Worker(ortho_iparams, ortho_fparams, ortho_bparams, method)
    worker.bvars["largest"] = largest
    Es, Xs = [], []
    for i in np.ndindex(*batch):
        Ai = A[i] if i else A
        Bi = None if B is None else (B[i] if i else B)
        iKi = None if iK is None else (iK[i] if i and iK.dim() > 2 else iK)
        x0 = (X[i] if i else X).detach().numpy().astype(np.float64)
        e, x = _solve(_operator(Ai), _operator(Bi), _operator(iKi), x0, k, n, tol, niter,
                      largest, method, tracker, worker)
        Es.append(e)
        Xs.append(x)
    E = ember.tensor(np.stack(Es).reshape(*batch, k), dtype=dtype)
    Xr = ember.tensor(np.stack(Xs).reshape(*batch, m, k), dtype=dtype)
    if not (ember.is_grad_enabled() and A.requires_grad):
        return E, Xr
    return _LobpcgFn.apply(A, E, Xr, B is not None)
