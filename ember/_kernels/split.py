"""Row-split parallelism for kernels that release the GIL (numba ``nogil``, onnxruntime):
ember's own small thread pool, sized by ``ember.get_num_threads``.

The split is over independent rows (channels, planes), so results never depend on it
(bit for bit). Used by the compiled batch-norm and pooling kernels and by the concurrent
convolution backward (Note [concurrent conv backward] in nn_conv.py).
"""
from __future__ import annotations

import os

_pool = []
_MAX_WORKERS = 32

# a forked child has none of the parent's pool threads: it starts a pool of its own
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_pool.clear)


def pool():
    """The shared helper pool (threads start on first use)."""
    if not _pool:
        from concurrent.futures import ThreadPoolExecutor
        _pool.append(ThreadPoolExecutor(_MAX_WORKERS, thread_name_prefix="ember-conv"))
    return _pool[0]


def threads():
    """ember's thread count (``set_num_threads``, else the CPUs)."""
    from ember._kernels.integer_gemm import _threads
    return _threads()


# below this many elements a split costs more than it saves (a hand-off is ~20-50 us)
MIN_SPLIT_ELEMENTS = 1 << 17


def run_rows(fn, rows, elements):
    """``fn(lo, hi)`` over rows [0, rows), in ``threads()`` contiguous ranges when the work
    (``elements`` in all) is large enough; the caller's thread takes the first range.
    Returns the results of the calls in range order."""
    t = min(threads(), rows, max(1, elements // MIN_SPLIT_ELEMENTS))
    if t <= 1:
        return [fn(0, rows)]
    bounds = [rows * i // t for i in range(t + 1)]
    jobs = [pool().submit(fn, bounds[i], bounds[i + 1]) for i in range(1, t)]
    first = None
    try:
        first = fn(bounds[0], bounds[1])
    finally:
        rest = [j.result() for j in jobs]
    return [first] + rest
