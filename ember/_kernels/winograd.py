"""Winograd minimal-filtering kernels for 3x3, stride-1 convolutions (Lavin & Gray 2015).

Algorithm
---------
A 1-D correlation of an ``alpha = m + r - 1`` long input tile ``d`` with an ``r`` long
filter ``g``, producing ``m`` outputs ``y[i] = sum_k d[i + k] g[k]`` (written F(m, r)), is
the transpose of the linear convolution ``s = g * h`` of ``g`` with an ``m`` long ``h``.
That convolution is polynomial multiplication: evaluate ``g(x)`` and ``h(x)`` at ``alpha``
points (``alpha - 1`` finite points plus "infinity", meaning the leading coefficient),
multiply pointwise, interpolate. With ``V`` the ``alpha x alpha`` evaluation (Vandermonde)
matrix and ``E_n`` the ``alpha x n`` evaluation matrix of an ``n``-coefficient polynomial,

    s = V^-1 [(E_r g) . (E_m h)]        so by transposition     y = A^T [(G g) . (B^T d)]

with ``A^T = E_m^T`` (m x alpha), ``G = E_r`` (alpha x r) and ``B^T = V^-T`` (alpha x alpha):
``alpha`` multiplications instead of ``m * r``. The 2-D form nests the 1-D one:
``Y = A^T [(G g G^T) . (B^T d B)] A``. Each row of ``B^T`` is rescaled to integers (the
factor moves into the matching row of ``G``). ``_toom_cook`` derives all three matrices
exactly (``fractions.Fraction``) from the points 0, 1, -1 (alpha 4) and 1/2, -2 (alpha 6).

Over a whole layer the pointwise products of one tile position ``p`` (of ``alpha^2``) sum
over input channels, so they become GEMMs: ``M[p] = U[p] @ V[p]`` with the transformed
weights ``U`` (alpha^2, O, C) and the transformed input tiles ``V`` (alpha^2, C, T),
``T = N * tiles``: one batched ``np.matmul``.

Forward: F(2x2, 3x3) (alpha 4, 2.25x fewer multiplies than direct), its per-position
GEMMs summed over channels in blocks for float32 accuracy (Note [Winograd accuracy]);
F(4x4, 3x3) (alpha 6, 4x fewer) only on request, being ~5x less accurate.

Weight gradient: ``gw[o, c] = sum_{n, i, j} gy[n, o, i, j] xp[n, c, i + ., j + .]`` is a
correlation of the padded input with the output gradient, giving a 3x3 result. F(3x3, 2x2)
tiles the gradient plane in 2x2 blocks (each the "filter" ``g``) against 4x4 input tiles
(``d``); the sum over all tiles and the batch goes inside 16 GEMMs (O x T) @ (T x C),
before the small output transform ``A^T M A``. F(3x3, 4x4) (4x4 gradient blocks, 6x6
input tiles, 36 GEMMs; on request only) does the same with 2.25 instead of 4 multiplies
per gradient pixel.

Layout
------
A 2-D transform ``X t X^T`` of an L x L tile is ``kron(X, X) @ vec(t)``. Each transform is
therefore one strided gather of all tiles (an ``as_strided`` view of the zero-padded input,
copied into a (L^2, C, N, th, tw) scratch buffer) and one GEMM with the small Kronecker
matrix, whose ``out=`` is the (alpha^2, C, N, th, tw) = (alpha^2, C, T) operand of the
batched per-position GEMM: no further copy. On this memory-bound target a GEMM that
streams the data once beats separable per-coefficient ufunc passes (measured 2-4x). The
output transform is likewise one GEMM (m^2 x alpha^2) @ (alpha^2, O*T), followed by one
scatter of the (m, m, O, N, th, tw) result into (N, O, th*m, tw*m), with the bias fused.
Planes that are not whole tiles are zero-padded up and the output cropped. Large
temporaries live in the per-thread ``_scratch`` buffers of ``nn_conv`` (Note [conv
scratch]).
"""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
from numpy.lib.stride_tricks import as_strided

from . import split
from .nn_conv import _SCRATCH_MIN_BYTES, _scratch, summed_matmul

# Interpolation points, first alpha - 1 used (plus infinity). For alpha 6, {1/2, -2} instead
# of the common {2, -2} balances the magnitudes in G and B^T: measured float32 error of
# F(4x4, 3x3) at C=512 drops ~2.5x (max) / ~1.5x (rms); the GEMM transforms are dense,
# so the less sparse B^T costs nothing.
_POINTS = (0, 1, -1, Fraction(1, 2), -2, 2, Fraction(-1, 2))


def _inverse(a):
    """Exact inverse of a square list-of-lists of Fractions (Gauss-Jordan)."""
    n = len(a)
    m = [list(row) + [Fraction(int(i == j)) for j in range(n)] for i, row in enumerate(a)]
    for c in range(n):
        p = next(i for i in range(c, n) if m[i][c] != 0)
        m[c], m[p] = m[p], m[c]
        piv = m[c][c]
        m[c] = [v / piv for v in m[c]]
        for i in range(n):
            if i != c and m[i][c] != 0:
                f = m[i][c]
                m[i] = [a_ - f * b_ for a_, b_ in zip(m[i], m[c])]
    return [row[n:] for row in m]


def _toom_cook(m, r):
    """(A^T (m, alpha), G (alpha, r), B^T (alpha, alpha)) float64 for F(m, r)."""
    alpha = m + r - 1
    pts = [Fraction(p) for p in _POINTS[:alpha - 1]]

    def evalmat(n):     # rows: [1, p, p^2, ..., p^(n-1)] per point, then infinity
        return [[p ** k for k in range(n)] for p in pts] + [[Fraction(int(k == n - 1))
                                                             for k in range(n)]]
    vinv = _inverse(evalmat(alpha))
    bt = [[vinv[k][p] for k in range(alpha)] for p in range(alpha)]    # V^-T
    g = evalmat(r)
    for p in range(alpha):      # make row p of B^T primitive integers; G row p compensates
        den = math.lcm(*(v.denominator for v in bt[p]))
        s = Fraction(den, math.gcd(*(int(v * den) for v in bt[p])))
        bt[p] = [v * s for v in bt[p]]
        g[p] = [v / s for v in g[p]]
    at = [list(col) for col in zip(*evalmat(m))]                         # E_m^T
    f = lambda a: np.array([[float(v) for v in row] for row in a])      # noqa: E731
    return f(at), f(g), f(bt)


_MATS = {}


def _mats(m, r):
    """(A^T, G, B^T) float64 for F(m, r), cached."""
    key = (m, r)
    if key not in _MATS:
        _MATS[key] = _toom_cook(m, r)
    return _MATS[key]


_KRON = {}


def _kron(m, r, which, dtype):
    """kron(X, X) for X = A^T, G or B^T of F(m, r), in ``dtype``: the 2-D transform
    ``X t X^T`` of a row-major flattened tile ``t`` is ``kron(X, X) @ t.ravel()``."""
    key = (m, r, which, np.dtype(dtype))
    if key not in _KRON:
        mat = _mats(m, r)["agb".index(which)]
        _KRON[key] = np.kron(mat, mat).astype(dtype)
    return _KRON[key]


def _buf(slot, shape, dtype):
    """An uninitialised ``shape`` array on this thread's scratch buffer ``slot`` (Note [conv
    scratch]). Unlike ``_scratch`` itself, buffers from 1 MB up are reused too (the request
    is rounded up to ``_SCRATCH_MIN_BYTES``): several 4-16 MB temporaries per call were
    otherwise faulted in afresh each time, measured 25-40% of the whole kernel on 14x14
    planes. Three slots ("wino_a/b/c") rotate between temporaries whose lifetimes do not
    overlap."""
    dtype = np.dtype(dtype)
    nbytes = dtype.itemsize * int(np.prod(shape))
    if nbytes < (1 << 20):
        return np.empty(shape, dtype)
    raw = _scratch(slot, (max(nbytes, _SCRATCH_MIN_BYTES),), np.uint8)
    return raw[:nbytes].view(dtype).reshape(shape)


def _transform(src, kmat, L, step, th, tw, out, slot):
    """2-D tile transform of every L x L tile of ``src`` (N, Cs, Hs, Ws), tile (a, b) =
    src[:, :, step*a : step*a + L, step*b : step*b + L], a < th, b < tw.

    The tiles are gathered (one strided copy) into a (L*L, Cs, N, th, tw) scratch buffer,
    then ``kmat`` (alpha^2, L^2) (a Kronecker product, see ``_kron``) maps them in one GEMM
    into ``out``, an (alpha^2, Cs, N, th, tw) C-contiguous array (the GEMM operand layout).
    ``slot``: the scratch slot for the gathered tiles.
    A GEMM here beats per-coefficient ufunc passes: the matrix is tiny, so BLAS streams
    the data once, while each ufunc pass is a full trip through memory."""
    N, Cs = src.shape[:2]
    s = src.strides
    tiles = as_strided(src, (L, L, Cs, N, th, tw),
                       (s[2], s[3], s[1], s[0], step * s[2], step * s[3]), writeable=False)
    D = _buf(slot, (L * L, Cs, N, th, tw), src.dtype)
    np.copyto(D.reshape(L, L, Cs, N, th, tw), tiles)
    split.matmul(kmat, D.reshape(L * L, -1), out=out.reshape(kmat.shape[0], -1))
    return out


def _padded(x, lo, Hp, Wp, slot):
    """x (N, C, H, W) placed at (lo[0], lo[1]) in a zero (N, C, Hp, Wp) scratch buffer
    (x itself when nothing is added); only the border is zeroed."""
    N, C, H, W = x.shape
    t, l = lo
    if t == 0 and l == 0 and Hp == H and Wp == W:
        return x
    xp = _buf(slot, (N, C, Hp, Wp), x.dtype)
    xp[:, :, :t] = 0
    xp[:, :, t + H:] = 0
    xp[:, :, t:t + H, :l] = 0
    xp[:, :, t:t + H, l + W:] = 0
    xp[:, :, t:t + H, l:l + W] = x
    return xp


def _input_tiles(x, lo, step, th, tw, kmat, slot):
    """B^T d B of every (step + 2)-wide tile (stride ``step``) of x (N, C, H, W) placed at
    ``lo`` in zeros up to whole tiles -> (alpha^2, C, N, th, tw) on scratch ``slot``. The
    padded input lives on slot "wino_a" and the gathered tiles on "wino_b"; ``slot`` may be
    "wino_a" (the tiles are gathered before the transform writes)."""
    N, C = x.shape[:2]
    xp = _padded(x, lo, step * th + 2, step * tw + 2, "wino_a")
    V = _buf(slot, (kmat.shape[0], C, N, th, tw), x.dtype)
    return _transform(xp, kmat, step + 2, step, th, tw, V, "wino_b")


# Note [Winograd accuracy]: float32 F(2x2, 3x3) with one per-position GEMM of depth C
# landed 1.5x (C=64) to 2.6x (C=256) further from a float64 result than torch's own float32
# convolution (rms, ResNet-18 shapes), F(4x4, 3x3) 6-10x: the GEMM's rounding (Note [GEMM
# depth] in nn_conv) amplified by the output transform. Summed over C in blocks of
# _GEMM_DEPTH, F(2x2, 3x3) lands at ~1.2x torch's error on every shape measured; F(4x4, 3x3)
# stays ~5x (its larger transforms amplify the rounding of U and V themselves), so the
# kernels use it only when asked (``m=4``/``r=4``). tests/nn/test_winograd.py holds this.
_GEMM_DEPTH = 32


def _tiles(n, m):
    return -(-n // m)


def _weight_transform(w, m, slot):
    """U = G w G^T for every (o, c): w (O, C, 3, 3) -> (alpha^2, O, C) C-contiguous, one
    (alpha^2 x 9) @ (9 x O*C) GEMM reading w transposed in place."""
    O, C = w.shape[:2]
    kg = _kron(m, 3, "g", w.dtype)
    U = _buf(slot, (kg.shape[0], O * C), w.dtype)
    split.matmul(kg, np.ascontiguousarray(w).reshape(O * C, 9).T, out=U)
    return U.reshape(-1, O, C)


def forward_tile(N, C, O, Ho, Wo):
    """Output tile size m for the forward convolution: always 2 (F(2x2, 3x3)). F(4x4, 3x3)
    multiplies 1.8x less but lands ~5x further from float64 than torch's float32
    convolution (Note [Winograd accuracy]); ``conv2d_3x3(..., m=4)`` still runs it."""
    return 2


def _scatter(Yt, Y6, b):
    """Y6[n, o, t, i, u, j] = Yt[i, j, o, n, t, u] (+ b[o]): output tiles into the image.
    Per (i, j) the copies read whole contiguous tile rows; one 6-D copy instead is faster
    only for very narrow tile grids (measured)."""
    m = Yt.shape[0]
    O = Yt.shape[2]
    if Yt.shape[-1] < 4:
        dst = Y6.transpose(3, 5, 1, 0, 2, 4)
        if b is None:
            np.copyto(dst, Yt)
        else:
            np.add(Yt, b.reshape(O, 1, 1, 1), out=dst)
        return
    for i in range(m):
        for j in range(m):
            src = Yt[i, j].transpose(1, 0, 2, 3)
            if b is None:
                np.copyto(Y6[:, :, :, i, :, j], src)
            else:
                np.add(src, b.reshape(O, 1, 1), out=Y6[:, :, :, i, :, j])


def conv2d_3x3(x, w, lo, hi, bias=None, m=None):
    """3x3 stride-1 convolution (cross-correlation) by Winograd F(m x m, 3x3).

    x (N, C, H, W), w (O, C, 3, 3), zero padding lo=(top, left), hi=(bottom, right),
    bias (O,) or None -> new C-contiguous (N, O, H + top + bottom - 2, W + left + right - 2)
    of x's dtype. ``m`` (2 or 4) forces the tile size (default: ``forward_tile``)."""
    N, C, H, W = x.shape
    O = w.shape[0]
    dt = x.dtype
    w = w.astype(dt, copy=False)
    Ho, Wo = H + lo[0] + hi[0] - 2, W + lo[1] + hi[1] - 2
    if Ho <= 0 or Wo <= 0:
        raise ValueError(f"conv2d_3x3: empty output {Ho}x{Wo}")
    if m is None:
        m = forward_tile(N, C, O, Ho, Wo)
    a2 = (m + 2) ** 2
    th, tw = _tiles(Ho, m), _tiles(Wo, m)
    T = N * th * tw
    # Scratch slots: padded x a, tiles b, V a (written after the tiles were gathered from
    # the padded x), U b, M c, Yt a, uncropped Y b.
    V = _input_tiles(x, lo, m, th, tw, _kron(m, 3, "b", dt), "wino_a")
    # per-position GEMMs: (a2, O, C) @ (a2, C, T), summed over C in blocks
    M = _buf("wino_c", (a2, O, T), dt)
    summed_matmul(_weight_transform(w, m, "wino_b"), V.reshape(a2, C, T), _GEMM_DEPTH, M,
                  "wino_d")
    # output: A^T M A for all tiles in one GEMM, then one scatter into (N, O, th, m, tw, m)
    Yt = _buf("wino_a", (m, m, O, N, th, tw), dt)
    split.matmul(_kron(m, 3, "a", dt), M.reshape(a2, O * T), out=Yt.reshape(m * m, O * T))
    exact = th * m == Ho and tw * m == Wo
    Y = np.empty((N, O, Ho, Wo), dt) if exact else \
        _buf("wino_b", (N, O, th * m, tw * m), dt)
    b = None if bias is None else np.asarray(bias).astype(dt, copy=False)
    _scatter(Yt, Y.reshape(N, O, th, m, tw, m), b if exact else None)
    if exact:
        return Y
    res = np.empty((N, O, Ho, Wo), dt)
    if b is not None:
        np.add(Y[:, :, :Ho, :Wo], b.reshape(O, 1, 1), out=res)
    else:
        np.copyto(res, Y[:, :, :Ho, :Wo])
    return res


def conv2d_3x3_weight_grad(x, gy, lo, hi, r=None):
    """Gradient of sum(gy * conv2d_3x3(x, w, lo, hi)) w.r.t. w, by Winograd F(3x3, r x r).

    x (N, C, H, W), gy (N, O, Ho, Wo) with Ho = H + lo[0] + hi[0] - 2 (same for W)
    -> gw (O, C, 3, 3) of x's dtype. r x r blocks of gy (the "filter", G g G^T) meet
    (r+2) x (r+2) tiles of the padded x (B^T d B); (r+2)^2 GEMMs (O x T) @ (T x C) sum over
    all tiles and the batch; then gw = A^T M A per (o, c). ``r``: 2 (F(3x3, 2x2), alpha 4)
    or 4 (F(3x3, 4x4), alpha 6); default ``wgrad_tile``."""
    N, C, H, W = x.shape
    O, Ho, Wo = gy.shape[1:]
    dt = x.dtype
    gy = gy.astype(dt, copy=False)
    if (Ho, Wo) != (H + lo[0] + hi[0] - 2, W + lo[1] + hi[1] - 2):
        raise ValueError(f"conv2d_3x3_weight_grad: gy {gy.shape} does not match x {x.shape}")
    if r is None:
        r = wgrad_tile(N, C, O, Ho, Wo)
    a2 = (r + 2) ** 2
    th, tw = _tiles(Ho, r), _tiles(Wo, r)
    T = N * th * tw
    # Scratch slots: padded x a, tiles b, V c, padded gy a, tiles b, U a (written after the
    # tiles were gathered from the padded gy), M b.
    V = _input_tiles(x, lo, r, th, tw, _kron(3, r, "b", dt), "wino_c")
    gyp = _padded(gy, (0, 0), r * th, r * tw, "wino_a")
    U = _buf("wino_a", (a2, O, N, th, tw), dt)
    _transform(gyp, _kron(3, r, "g", dt), r, r, th, tw, U, "wino_b")
    M = _buf("wino_b", (a2, O, C), dt)
    split.matmul(U.reshape(a2, O, T), V.reshape(a2, C, T).transpose(0, 2, 1), out=M)
    gw = split.matmul(M.reshape(a2, O * C).T, _kron(3, r, "a", dt).T)  # (O*C, 9)
    return gw.reshape(O, C, 3, 3)


def wgrad_tile(N, C, O, Ho, Wo):
    """gy block size r for the weight gradient: always 2 (F(3x3, 2x2)); F(3x3, 4x4) is
    1.5-3x less accurate than torch's weight gradient (Note [Winograd accuracy])."""
    return 2


def use_winograd(N, C, O, H, W, op="forward"):
    """Whether Winograd beats the im2col + GEMM path of ``nn_conv`` for a 3x3 stride-1
    "same" (pad 1) convolution of an (N, C, H, W) input to O channels: ``op`` "forward"
    (``conv2d_3x3`` vs ``conv_forward``) or "weight_grad" (``conv2d_3x3_weight_grad`` vs
    ``conv_weight_grad``).

    Only kernels as accurate as torch's count (Note [Winograd accuracy]): F(2x2, 3x3) with
    its blocked GEMMs and F(3x3, 2x2). Measured (float32, 2-core AVX2 + OpenBLAS, min of 11
    interleaved runs on a shared machine, ResNet-18 stages at batch 8 and 32):
    - forward: F(2x2, 3x3) runs 0.89-1.03x the speed of im2col + GEMM (F(4x4, 3x3) was
      1.1-1.8x faster, at 5x torch's error), so the forward never uses Winograd.
    - weight gradient: F(3x3, 2x2) 1.09-1.33x faster from 128 channels on 14x14 and 28x28
      planes, 0.84-1.03x at 64 channels on 28x28 and 56x56 (kept there: the im2col weight
      gradient's one deep GEMM swung 2-6x between runs on the loaded machine); 7x7 planes
      and few outputs per weight (N*H*W < 1024) lose (its (alpha^2, O, C) product and
      output transform cost per weight, not per pixel)."""
    if op not in ("forward", "weight_grad"):
        raise ValueError(f"use_winograd: unknown op {op!r}")
    if op == "forward":
        return False
    k, s = min(C, O), min(H, W)
    return (k >= 128 or (k >= 64 and s >= 28)) and s >= 14 and N * H * W >= 1024
