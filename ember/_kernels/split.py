"""Row-split parallelism for kernels that release the GIL (numba ``nogil``, onnxruntime,
NumPy's GEMMs): ember's own small thread pool, sized by ``ember.get_num_threads``.

The split is over independent rows (channels, planes, GEMM rows),
so results never depend on it (bit for bit). Used by the compiled batch-norm and pooling
kernels, the concurrent convolution backward (Note [concurrent conv backward] in
nn_conv.py), ember's float32 GEMMs (``matmul``, Note [one thread plan] in numpy_blas.py)
and large elementwise kernels (``chunks``, ``ufunc``).
"""
from __future__ import annotations

import os
import threading

import numpy as np

from ember._kernels import numpy_blas, own_gemm
from ember._threads import _settings as _thread_settings

_pool = []
_MAX_WORKERS = 32
# set once an onnxruntime session has run (Note [one thread plan])
_own_pools_ran = [False]


def own_pools_ran():
    """Mark that onnxruntime's pool is in use in this process: from now on ember's GEMMs
    hold OpenBLAS at one thread and split over this pool."""
    _own_pools_ran[0] = True

# a forked child has none of the parent's pool threads: it starts a pool of its own
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_pool.clear)


def pool():
    """The shared helper pool (threads start on first use)."""
    if not _pool:
        from concurrent.futures import ThreadPoolExecutor
        _pool.append(ThreadPoolExecutor(_MAX_WORKERS, thread_name_prefix="ember-conv"))
    return _pool[0]


class _Budget(threading.local):
    n = None        # (a class default: a missing attribute of a local costs ~1.5 us a look)


_budget = _Budget()


def threads():
    """ember's thread count (``set_num_threads``, else the CPUs), or this thread's share
    inside ``share`` (a half of a concurrent kernel)."""
    n = _budget.n
    if n is not None:
        return n
    n = _thread_settings["threads"]
    if n is None:
        n = _thread_settings["default"]
        if n is None:
            from ember._threads import _default_threads
            n = _default_threads()
    return n


class share:
    """``with share(n):`` the splits started by this thread use ``n`` threads: a kernel
    running beside another one (Note [concurrent conv backward]) takes its half only."""
    __slots__ = ("n", "prev")

    def __init__(self, n):
        self.n = max(1, int(n))

    def __enter__(self):
        self.prev = _budget.n
        _budget.n = self.n
        return self

    def __exit__(self, *exc):
        _budget.n = self.prev


# below this many elements a split costs more than it saves (a hand-off is ~20-50 us)
MIN_SPLIT_ELEMENTS = 1 << 17


def run_rows(fn, rows, elements):
    """``fn(lo, hi)`` over rows [0, rows), in ``threads()`` contiguous ranges when the work
    (``elements`` in all) is large enough; the caller's thread takes the first range.
    Returns the results of the calls in range order."""
    t = min(threads(), rows, max(1, elements // MIN_SPLIT_ELEMENTS))
    if t <= 1:
        return [fn(0, rows)]
    results = {}

    def part(lo, hi):
        results[lo] = fn(lo, hi)
    _run_parts(part, rows, t)
    return [results[lo] for lo in sorted(results)]


# ---------------------------------------------------------------- GEMM (Note [one thread plan])

# OpenBLAS runs a GEMM on one thread when m*n*k <= 65536 * 4 (its SMP threshold) and a GEMV
# when m*n < 2304 * 4; above that it wakes its spinning pool, so ember holds it at one thread
_BLAS_GEMM_MIN = 65536 * 4
_BLAS_GEMV_MIN = 2304 * 4
# a split GEMM hands each thread at least this many multiply-adds (~1 ms at 1 thread / 8),
# which also keeps every part above OpenBLAS's small-matrix kernels (m*n*k <= 100^3),
# whose summation order differs: the bits would then depend on the split
MIN_SPLIT_MACS = 1 << 21
# and at least this many rows: a one-row piece would be a GEMV, another summation order
MIN_SPLIT_ROWS = 16


def matmul(a, b, out=None):
    """``np.matmul(a, b)`` (into ``out`` when given) for ember's kernels. Once onnxruntime's
    pool runs in this process (``own_pools_ran``), NumPy's OpenBLAS is held at one thread
    (Note [one thread plan] in numpy_blas.py) and a large GEMM split by rows of ``a`` (2-D,
    or N-D over a 2-D ``b``; with ``out``, any batch over a broadcasting ``b``, or by ``b``'s
    columns when ``a`` has few rows) or by batch entries (equal batch shapes) over ember's
    pool. Each output
    row is the same one-thread BLAS computation whatever the split, so the bits do not
    depend on the thread count (tests/test_threads.py). float32 only: OpenBLAS's float64
    GEMM gave other bits for a block of rows than for the whole (AMD EPYC, 2026-11-29), so
    other dtypes keep OpenBLAS's own threads."""
    if own_gemm.wanted(a, b) and (out is None or out.shape == np.broadcast_shapes(
            a.shape[:-1], b.shape[:-2] + (1,)) + b.shape[-1:]):
        return own_gemm.matmul(a, b, out)     # Note [own GEMM]
    if a.size * b.size < _BLAS_GEMV_MIN or not _own_pools_ran[0]:
        return np.matmul(a, b, out=out)  # m*n*k <= a.size * b.size: small, one thread
    if a.dtype.char != "f" or b.dtype.char != "f" or not a.ndim or not b.ndim:
        return np.matmul(a, b, out=out)
    m = a.shape[-2] if a.ndim > 1 else 1
    n = b.shape[-1] if b.ndim > 1 else 1
    work = m * n * a.shape[-1]
    if work < (_BLAS_GEMV_MIN if m == 1 or n == 1 else _BLAS_GEMM_MIN):
        return np.matmul(a, b, out=out)  # OpenBLAS stays on the caller's thread by itself
    with numpy_blas.one_thread():
        if out is not None:
            return _split_rows_into(a, b, out, work)
        return _split_matmul(a, b, work)


def gemm_rows(fn, rows, macs, dtype):
    """``fn(lo, hi)``: GEMMs over output rows [lo, hi). Once onnxruntime's pool runs
    (``own_pools_ran``) and the work is float32 and large enough for OpenBLAS's threads, runs
    with OpenBLAS held at one thread and the rows split over ember's pool, so no spinning
    OpenBLAS helper takes a core from the others (Note [one thread plan]); else
    ``fn(0, rows)`` as it is. ``macs``: the multiply-adds of one GEMM call over all the rows
    (m*n*k): each part keeps at least ``MIN_SPLIT_MACS``, above OpenBLAS's small-matrix
    kernels (m*n*k <= 100^3 on SkylakeX), whose other summation order would change the
    bits with the thread count."""
    if not _own_pools_ran[0] or np.dtype(dtype).char != "f" or macs < _BLAS_GEMM_MIN:
        return fn(0, rows)
    t = min(threads(), rows // MIN_SPLIT_ROWS, max(1, macs // MIN_SPLIT_MACS))
    with numpy_blas.one_thread():
        if t <= 1:
            return fn(0, rows)
        _run_parts(fn, rows, t, align=MIN_SPLIT_ROWS)


def _split_rows_into(a, b, out, work):
    """``np.matmul(a, b, out=out)`` by blocks of ``a``'s rows (axis -2; any batch dims, ``b``
    broadcasting), each block one-threaded BLAS on its own worker."""
    t = threads()
    if a.ndim < 2 or b.ndim < 2 or out.shape[-2] != a.shape[-2]:
        return np.matmul(a, b, out=out)
    rows = a.shape[-2]
    if rows < 2 * MIN_SPLIT_ROWS and a.ndim == 2 and b.ndim == 2:
        # few rows (Winograd's transforms: a 16x16 matrix by a long one): split b's columns
        cols = b.shape[1]
        t = min(t, cols // MIN_SPLIT_ROWS, max(1, work // MIN_SPLIT_MACS))
        if t <= 1:
            return np.matmul(a, b, out=out)

        def part_cols(lo, hi):
            np.matmul(a, b[:, lo:hi], out=out[:, lo:hi])
        _run_parts(part_cols, cols, t, align=MIN_SPLIT_ROWS)
        return out
    t = min(t, rows // MIN_SPLIT_ROWS, max(1, work // MIN_SPLIT_MACS))
    if t <= 1:
        return np.matmul(a, b, out=out)

    def part(lo, hi):
        np.matmul(a[..., lo:hi, :], b, out=out[..., lo:hi, :])
    _run_parts(part, rows, t, align=MIN_SPLIT_ROWS)
    return out


def _split_matmul(a, b, work):
    t = threads()
    if t <= 1 or a.ndim < 2:
        return np.matmul(a, b)
    if b.ndim <= 2:
        rows = 1
        for d in a.shape[:-1]:
            rows *= d
        a2 = a.reshape(rows, a.shape[-1])        # a view for C-contiguous a (else a copy)
        per_row = work // max(a.shape[-2], 1)
        out_shape = a.shape[:-1] + (b.shape[-1],) if b.ndim == 2 else a.shape[:-1]
    elif a.ndim == b.ndim and a.shape[:-2] == b.shape[:-2]:
        rows = a.shape[0]
        a2 = a
        per_row = work * (a.size // max(a.shape[0], 1)) // max(a.shape[-2] * a.shape[-1], 1)
        out_shape = a.shape[:-1] + (b.shape[-1],)
    else:
        return np.matmul(a, b)
    t = min(t, rows // MIN_SPLIT_ROWS if b.ndim <= 2 else rows,
            max(1, rows * per_row // MIN_SPLIT_MACS))
    if t <= 1:
        return np.matmul(a, b)
    out = np.empty(out_shape, np.result_type(a, b))
    o2 = out if b.ndim > 2 else out.reshape(rows, -1) if b.ndim == 2 else out.reshape(rows)
    def part(lo, hi):
        np.matmul(a2[lo:hi], b if b.ndim <= 2 else b[lo:hi], out=o2[lo:hi])
    _run_parts(part, rows, t, align=MIN_SPLIT_ROWS if b.ndim <= 2 else 1)
    return out


def _run_parts(fn, rows, t, align=1):
    """``fn(lo, hi)`` over ``t`` contiguous ranges of [0, rows), inner bounds multiples of
    ``align``; the caller's thread takes the first range."""
    bounds = [rows * i // t // align * align for i in range(t)] + [rows]
    jobs = [pool().submit(fn, bounds[i], bounds[i + 1]) for i in range(1, t)]
    try:
        fn(bounds[0], bounds[1])
    finally:
        for j in jobs:
            j.result()

