"""float32/float64 sums in the order torch's CPU kernels add, emulated with NumPy.

Note [torch's summation order]
------------------------------
NumPy's ``np.add.reduce`` sums pairwise; torch's CPU sum adds in another order, so the last
bits of a float32 sum or mean differ. The order below was found by experiment (arrays
built so that the grouping decides the rounding, then thousands of random arrays compared
bit for bit), for torch 2.13 on an AVX2 CPU (``torch.backends.cpu.get_cpu_capability()``):
a vector holds V = 32 bytes, 8 float32 or 4 float64 lanes. The lane count follows that
capability; where torch runs its AVX-512 kernels the vectors are presumably twice as wide
(not checked: _BYTES would change).

* The cascade. A run of ``size`` items (each a value, or a row of independent lanes) is
  added in blocks of ``step = 2 ** max(4, ceil(log2(size)) // 4)`` items, each block from
  zero and in order. Block sums are added in order into a second accumulator which, after
  every ``step`` blocks, is added into a third and cleared; the third is likewise added into
  a fourth after every ``step ** 2`` blocks; the fourth is never cleared. The items after
  the last whole block are added in order from zero, and the result is
  ``((tail + second) + third) + fourth``.
* Four accumulators ("row sum"). ``size`` items are read as rows of 4: item ``4 i + k``
  goes to accumulator k, each accumulator a cascade over its ``size // 4`` items; the last
  ``size % 4`` items are added in order to accumulator 0, then accumulators 1, 2, 3 are
  added to it in order.
* A contiguous reduced run of n elements (a full sum, or ``x.sum(-1)``): with n >= V,
  the first ``V * (n // V)`` elements are vectors and get the row sum above (so 32-float
  rows of four vectors, each lane a cascade); then, from zero, the last ``n % V`` elements
  and then the V lanes are added in order. With n < V the elements themselves get the row
  sum.
* A reduced dimension that is not the contiguous one (``x.sum(0)`` of (R, C), or the middle
  one of three): the columns of whole groups of 4 vectors (32 float32), or of 4 columns
  where C < V, get one cascade over the R rows each; the remaining columns get the row sum
  over the rows.
* Threads: a full sum of more than 32768 elements is cut into k = min(threads,
  ceil(n / 32768)) chunks of ceil(n / k) elements, each summed as above, and the chunk sums
  are added in order from zero (so the bits follow torch.get_num_threads(); ember takes its
  own get_num_threads(), the same number by default). Reductions with several outputs split
  over the outputs, which does not change bits.
* ``mean`` is this sum divided by n in the same dtype.

Other layouts (several reduced dimensions that are not adjacent in memory, strided views
that no transpose makes contiguous, empty or 0-d inputs) return None: the caller keeps
NumPy's order there.

Every accumulator starts at +0.0, so a sum of -0.0s is +0.0 (the ``+ 0`` below).

Vectorised: each level of the cascade is one ``np.add.reduce`` over an axis that is not
the innermost (NumPy adds such an axis in order, with the lanes as its inner loop); where
the inner axis has one lane, ``np.add.accumulate`` (a prefix scan, always in order). The
same additions compiled (compiled/torch_sum.py) run where numba is in use; a large float32
full sum runs torch's chunks on OpenBLAS's threads (compiled/pool.py torch_chunk_sums).
Callers: sum (ember/_ops/core.py), mean (reduction.py), mse_loss (nn_norm.py), sum_to_size.
"""
from __future__ import annotations

import sys

import numpy as np

from ember._kernels import compiled

GRAIN = 32768          # elements; above this a full sum is split over torch's threads
_BYTES = 32            # AVX2 vector width


def _chain(x, axis):
    """Sum of x along ``axis`` in index order (not the last axis)."""
    if x.shape[axis] == 1:
        return np.take(x, 0, axis=axis)
    if x.shape[-1] >= 2:
        return np.add.reduce(x, axis=axis)
    return np.take(np.add.accumulate(x, axis=axis), -1, axis=axis)


def _ceil_log2(n):
    return 0 if n <= 1 else int(n - 1).bit_length()


def _cascade(x):
    """x (M, size, W) -> (M, W): the cascade over axis 1 (Note [torch's summation order])."""
    M, size, W = x.shape
    step = 1 << max(4, _ceil_log2(size) // 4)
    nb = size // step
    out = _chain(x[:, nb * step:], 1) if size > nb * step else np.zeros((M, W), x.dtype)
    if nb:
        level = _chain(x[:, :nb * step].reshape(M, nb, step, W), 2)       # block sums
        for _ in range(2):                        # second and third accumulators
            n = level.shape[1] // step
            if level.shape[1] > n * step:
                out = out + _chain(level[:, n * step:], 1)
            else:
                out = out + 0
            if not n:
                return out
            level = _chain(level[:, :n * step].reshape(M, n, step, W), 2)
        out = out + _chain(level, 1)              # the fourth
    return out


def _row_sum(x):
    """x (M, size, W) -> (M, W): four interleaved cascades, then added in order."""
    M, size, W = x.shape
    si = size // 4
    if si:
        p = _cascade(x[:, :si * 4].reshape(M, si, 4 * W)).reshape(M, 4, W)
    else:
        p = np.zeros((M, 4, W), x.dtype)
    return _chain(np.concatenate([p[:, :1], x[:, si * 4:], p[:, 1:]], axis=1), 1)


_LOAD = 2048           # elements from which numba is loaded for a sum


def _kernels(size):
    """The compiled kernels: loaded for large sums, or once numba is in the process anyway."""
    if size >= _LOAD or "numba" in sys.modules:
        return compiled.module("torch_sum")
    return compiled.loaded("torch_sum")


# a row of n < 8 items as the four accumulators add it: item k into accumulator k (k < 4),
# the items after the first four into accumulator 0, then accumulators 1, 2, 3 in order
_SHORT_ORDER = [list(range(n)) if n < 4 else [0] + list(range(4, n)) + [1, 2, 3]
                for n in range(8)]


def inner(x):
    """x (M, n), each row one contiguous reduced run -> (M,)."""
    M, n = x.shape
    V = _BYTES // x.itemsize
    if x.flags.c_contiguous and (k := _kernels(x.size)) is not None:
        out = np.empty(M, x.dtype)
        k.rows_sum(x.reshape(-1), M, n, V, out)
        return out
    vs = n // V
    if vs == 0:               # rows shorter than a vector: the four accumulators take one
        return np.add.accumulate(x[:, _SHORT_ORDER[n]], axis=1)[:, -1] + 0   # item each
    lanes = _row_sum(x[:, :vs * V].reshape(M, vs, V))
    z = np.concatenate([x[:, vs * V:], lanes], axis=1)
    return np.add.accumulate(z, axis=1)[:, -1] + 0


def outer(x):
    """x (A, R, C) summed over R (not the contiguous dimension) -> (A, C)."""
    A, R, C = x.shape
    if R < 4:                   # no cascade block, no row of four: the rows added in order
        return np.add.reduce(x, axis=1) + 0
    V = _BYTES // x.itemsize
    if x.flags.c_contiguous and (k := _kernels(x.size)) is not None:
        out = np.empty(A * C, x.dtype)
        k.columns_sum(x.reshape(-1), A, R, C, V, out)
        return out.reshape(A, C)
    g = 4 * V if C >= V else 4                  # columns per cascade
    cv = C // g * g
    parts = []
    if cv:
        parts.append(_cascade(x[:, :, :cv]))
    if C > cv:
        parts.append(_row_sum(x[:, :, cv:]))
    r = parts[0] if len(parts) == 1 else np.concatenate(parts, axis=1)
    return r + 0


POOL_MIN = 1 << 20     # float32 elements from which a full sum's chunks run on the pool


def full(a, threads):
    """The sum of a contiguous 1-D array, as torch cuts it over ``threads``."""
    n = a.size
    if threads <= 1 or n <= GRAIN:
        return inner(a[None])[0]
    k = min(threads, -(-n // GRAIN))
    c = -(-n // k)
    q = n // c
    p = None
    if n >= POOL_MIN and a.dtype == np.float32:     # torch's chunks on OpenBLAS's threads
        from ember._kernels import blas_pool
        pool = blas_pool.kernels()
        if pool is not None:
            p = np.empty(-(-n // c), np.float32)
            blas_pool.run(pool.torch_chunk_sums, blas_pool.context(a, p, n, c), p.size)
    if p is None:
        parts = [inner(a[:q * c].reshape(q, c))]
        if n > q * c:
            parts.append(inner(a[q * c:][None]))
        p = np.concatenate(parts)
    return np.add.accumulate(p)[-1] + 0


def torch_sum(a, axes, threads):
    """``a.sum(axes)`` (axes: a tuple, or None for all) in torch's order, the kept
    dimensions in a's order without keepdim's ones; None where not emulated."""
    if type(a) is not np.ndarray or a.dtype not in (np.float32, np.float64) or \
            a.ndim == 0 or a.size == 0:
        return None
    nd = a.ndim
    red = set(range(nd)) if axes is None else {ax % nd for ax in axes}
    if a.flags.c_contiguous:
        perm = list(range(nd))
    else:           # a transposed view of a contiguous array: memory order first
        perm = sorted(range(nd), key=lambda i: -abs(a.strides[i]))
        if not a.transpose(perm).flags.c_contiguous:
            return None
        if any(a.strides[i] < 0 for i in range(nd) if a.shape[i] > 1):
            return None
    b = a.transpose(perm)
    # dims in memory order without the size-1 ones, runs of equal "reduced" merged
    runs = []
    for i in range(nd):
        s, r = b.shape[i], perm[i] in red
        if s == 1:
            continue
        if runs and runs[-1][1] == r:
            runs[-1][0] *= s
        else:
            runs.append([s, r])
    flags = [r for _, r in runs]
    if True not in flags:                       # only size-1 dimensions reduced
        res = b + 0
    elif flags == [True]:
        res = full(b.reshape(-1), threads)
    elif flags == [False, True]:
        res = inner(b.reshape(runs[0][0], runs[1][0]))
    elif flags == [True, False]:
        res = outer(b.reshape(1, runs[0][0], runs[1][0]))
    elif flags == [False, True, False]:
        res = outer(b.reshape(runs[0][0], runs[1][0], runs[2][0]))
    else:
        return None
    kept = [perm[i] for i in range(nd) if perm[i] not in red]
    res = np.asarray(res, a.dtype).reshape([a.shape[i] for i in kept])
    if kept != sorted(kept):
        res = res.transpose(np.argsort(kept))
    return res


def _small(x):
    """A full sum of n < 16 rows of four vectors (no cascade block yet) in a few NumPy calls:
    the rows' lanes in order, the spare vectors and the other three vectors into the first,
    then the tail elements and the lanes."""
    V = _BYTES // x.itemsize
    n = x.size
    vs = n // V
    if vs == 0:
        return inner(x[None])[0]
    si, W = vs // 4, 4 * V
    lanes = np.add.reduce(x[:si * W].reshape(si, W), axis=0) if si else np.zeros(W, x.dtype)
    if vs > si * 4:
        lanes = np.concatenate((lanes[:V], x[si * W:vs * V], lanes[V:]))
    f = np.add.reduce(lanes.reshape(-1, V), axis=0)
    if n > vs * V:
        f = np.concatenate((x[vs * V:], f))
    return np.add.accumulate(f)[-1] + 0


def _threads():
    global _threads
    from ember._threads import get_num_threads as _threads     # (imported once)
    return _threads()


def reduce_sum(a, axes, keepdim):
    """``np.add.reduce(a, axis=axes, keepdims=keepdim)`` in torch's order for float32 /
    float64 (axes: a tuple of wrapped axes, or None for all); None where not emulated."""
    if type(a) is not np.ndarray or a.dtype not in (np.float32, np.float64):
        return None
    if (axes is None or len(axes) == a.ndim) and a.flags.c_contiguous and a.size:
        if a.size > GRAIN:                      # (the common cases with less Python)
            r = full(a.reshape(-1), _threads())
        elif a.size < 64 * _BYTES // a.itemsize and _kernels(a.size) is None:
            r = _small(a.reshape(-1))
        else:
            r = inner(a.reshape(1, -1))[0]
        r = np.asarray(r, a.dtype)
    elif a.ndim == 2 and axes is not None and len(axes) == 1 and a.flags.c_contiguous \
            and min(a.shape) > 1:
        R, C = a.shape                          # (a bias's gradient, a row's sums)
        r = outer(a.reshape(1, R, C)).reshape(C) if axes[0] == 0 else inner(a)
    else:
        r = torch_sum(a, axes, _threads())
    if r is None or not keepdim:
        return r
    red = range(a.ndim) if axes is None else axes
    return r.reshape([1 if i in red else a.shape[i] for i in range(a.ndim)])
