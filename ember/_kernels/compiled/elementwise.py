"""numba kernels for the large float32 elementwise passes of a training step (ReLU, its
gradient, a sum), run over parts of flat arrays on OpenBLAS's threads by compiled/pool.py
(Note [one pool] in ember/_kernels/blas_pool.py). Plain IEEE arithmetic in NumPy's order:
the same bits as the NumPy paths they stand in for.
"""
from __future__ import annotations

import numpy as np
from numba import njit

_OPTS = dict(cache=True, nogil=True)
f32 = np.float32


@njit(**_OPTS)
def relu(x, out):
    """out = 0 where x < 0, else x (-0.0 and NaN kept, as torch's clamp_min)."""
    for j in range(x.size):
        v = x[j]
        out[j] = f32(0) if v < f32(0) else v


@njit(**_OPTS)
def threshold_backward(g, x, threshold, out):
    """out = 0 where x <= threshold, else g (a NaN x passes g)."""
    for j in range(x.size):
        out[j] = f32(0) if x[j] <= threshold else g[j]


@njit(**_OPTS)
def add(a, b, out):
    """out = a + b."""
    for j in range(a.size):
        out[j] = a[j] + b[j]


@njit(**_OPTS)
def add_rows(out, b):
    """out[r] += b for each row r of out (R, C); b (C,)."""
    R, C = out.shape
    for r in range(R):
        row = out[r]
        for j in range(C):
            row[j] = row[j] + b[j]


@njit(**_OPTS)
def column_sums(a, out):
    """out (C,) = the sum of the rows of a (R, C), added in row order, float32."""
    R, C = a.shape
    for j in range(C):
        out[j] = f32(0)
    for r in range(R):
        row = a[r]
        for j in range(C):
            out[j] = out[j] + row[j]
