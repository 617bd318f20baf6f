"""uint8 bilinear / bicubic resize as torch's CPU kernel computes it (Pillow's method).

Two separable passes, width first; each pass is an (L, O) weight matrix turned into
int16-range fixed-point weights, applied in integers with rounding, and clamped to uint8
before the next pass. (Float weights with one rounding at the end miss torch's result by 1
in up to ~1% of the pixels.)
"""
from __future__ import annotations

import numpy as np

_CUBIC_A = -0.75                        # torch's (non-antialiased) bicubic coefficient


def interp_matrix(L, O, src_scale, align_corners, mode):
    """(L, O) weights of non-antialiased bilinear / bicubic resampling from L to O samples
    (source indices clamped at the borders, as the float kernels do)."""
    dst = np.arange(O, dtype=np.float64)
    src = dst * src_scale if align_corners else src_scale * (dst + 0.5) - 0.5
    A = np.zeros((L, O))
    cols = np.arange(O)
    if mode == "bicubic":
        i0 = np.floor(src).astype(np.int64)
        t = src - i0
        a = _CUBIC_A

        def near(v):
            return ((a + 2) * v - (a + 3)) * v * v + 1

        def far(v):
            return ((a * v - 5 * a) * v + 8 * a) * v - 4 * a
        for j, w in enumerate((far(t + 1), near(t), near(1 - t), far(2 - t))):
            np.add.at(A, (np.clip(i0 - 1 + j, 0, L - 1), cols), w)
        return A
    if not align_corners:
        src = np.maximum(src, 0.0)
    i0 = np.minimum(np.floor(src).astype(np.int64), L - 1)
    lam = src - i0
    np.add.at(A, (i0, cols), 1 - lam)
    np.add.at(A, (np.minimum(i0 + 1, L - 1), cols), lam)
    return A


def _fixed_point(A):
    """int16-range integer weights of ``A`` and their number of fraction bits."""
    bits = 0
    while bits < 22 and int(0.5 + A.max() * (1 << (bits + 1))) < (1 << 15):
        bits += 1
    return np.trunc(A * (1 << bits) + np.where(A < 0, -0.5, 0.5)), bits


def _pass(a, A, axis):
    Q, bits = _fixed_point(A)
    x = np.moveaxis(a, axis, -1).astype(np.float64)     # integer sums stay exact (< 2**53)
    y = np.floor((x @ Q + ((1 << bits) >> 1)) / (1 << bits))
    return np.moveaxis(np.clip(y, 0, 255).astype(np.uint8), -1, axis)


def resize_uint8(a, mats):
    """Resize the last two dims of uint8 array ``a`` (N, C, H, W) with weight matrices
    ``mats = (A_h (H, Ho), A_w (W, Wo))``: width pass, then height pass."""
    return np.ascontiguousarray(_pass(_pass(a, mats[1], -1), mats[0], -2))
