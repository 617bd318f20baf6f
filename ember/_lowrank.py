"""Randomized low-rank SVD and PCA (``torch.svd_lowrank``, ``torch.pca_lowrank``).

Halko, Martinsson and Tropp (2009), "Finding structure with randomness": a Gaussian test
matrix sketches the range of A, a few power iterations (each followed by a QR, for
stability) sharpen it, and the SVD of the small projected matrix gives the factors. Written
in ember ops, so gradients flow through QR and SVD; the test matrix comes from ember's
generator (torch's stream), so a seeded call gives torch's factors.
"""
from __future__ import annotations

import ember


def _floating(A):
    return A.dtype if A.is_floating_point() or A.is_complex() else ember.float32


def get_approximate_basis(A, q, niter=2, M=None):
    """Q (*, m, q) with orthonormal columns such that Q Q^H (A - M) approximates A - M,
    without forming A - M."""
    niter = 2 if niter is None else niter
    R = ember.randn(A.shape[-1], q, dtype=_floating(A))

    def times(X):                       # (A - M) X
        Y = A @ X
        return Y if M is None else Y - M @ X

    def times_h(X):                     # (A - M)^H X
        Y = A.mH @ X
        return Y if M is None else Y - M.mH @ X

    Q = ember.linalg.qr(times(R)).Q
    for _ in range(niter):
        Q = ember.linalg.qr(times_h(Q)).Q
        Q = ember.linalg.qr(times(Q)).Q
    return Q


def svd_lowrank(A, q=6, niter=2, M=None):
    """(U (*, m, q'), S (*, q'), V (*, n, q')): an approximate SVD of A - M (M defaults to
    zero) with q' = min(q, m, n) singular triplets, A ~ U diag(S) V^H."""
    q = 6 if q is None else q
    m, n = A.shape[-2:]
    if M is not None:
        M = M.broadcast_to(A.shape)
    wide = m < n
    if wide:                            # work on the tall A^H
        A = A.mH
        M = None if M is None else M.mH
    Q = get_approximate_basis(A, q, niter=niter, M=M)
    B = Q.mH @ A
    if M is not None:
        B = B - Q.mH @ M
    U, S, Vh = ember.linalg.svd(B, full_matrices=False)
    U, V = Q @ U, Vh.mH
    return (V, S, U) if wide else (U, S, V)


def pca_lowrank(A, q=None, center=True, niter=2):
    """(U, S, V) of the approximate SVD of A with its column means removed (``center``):
    V's columns are the principal directions, S**2 / (m - 1) the variances along them."""
    rows, cols = A.shape[-2:]
    q = min(6, rows, cols) if q is None else q
    if not 0 <= q <= min(rows, cols):
        raise ValueError(f"q(={q}) must be non-negative integer and not greater than "
                         f"min(m, n)={min(rows, cols)}")
    if not niter >= 0:
        raise ValueError(f"niter(={niter}) must be non-negative integer")
    if not center:
        return svd_lowrank(A, q, niter=niter)
    return svd_lowrank(A - A.mean(dim=(-2,), keepdim=True), q, niter=niter)
