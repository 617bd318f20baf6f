"""ember's compiled range kernels run on the worker threads of NumPy's own OpenBLAS.

Note [one pool]: after every threaded GEMM NumPy's OpenBLAS keeps its workers spinning for
~0.1 s (Note [one thread plan] in numpy_blas.py). A kernel that ember then splits over its
own pool (split.py) finds the second core taken by that spinner: on (16, 64, 512) the GELU
split over ember's two threads ran 0.59 ms right after a GEMM, slower than on one thread
(0.44). torch has one OpenMP pool for its GEMMs and its elementwise loops; ember gets the
same by handing its compiled kernels to OpenBLAS's pool itself: ``blas_level1_thread`` (an
exported OpenBLAS entry point, the one its threaded level-1 routines use) cuts a range of
``m`` items into one contiguous part per thread and calls a C function on each part, the
caller's thread taking the first. The kernels are numba ``cfunc``s (no GIL), called with
OpenBLAS's legacy level-1 arguments ``(m, n, k, alpha, a, lda, b, ldb, c, ldc, sb)``:
``a`` starts at 0 and advances by 8 bytes per item (double precision, ``lda`` 1), so a part
starting at item ``lo`` receives ``a == 8 * lo``; ``c`` points to the kernel's context, an
int64 array of array addresses, sizes and scalar bits; ``n`` is its length (see
compiled/pool.py). The same GELU then took 0.25 ms alone and ~0.3 ms after the GEMM, its
spinning workers picking the parts up at once.

Taken only where it can be trusted: OpenBLAS 0.3.11 or later (its precision codes, in
``mode``, changed then), built with its own pthreads server (not OpenMP), numba installed,
and a probe kernel's parts covering its range exactly at first use. Otherwise (or with
``EMBER_NO_BLAS_POOL=1``) ``run`` returns False and callers split over ember's pool.
Kernels split their work into parts that do not depend on the thread count where it could
change a result's bits (a reduction sums fixed blocks in a fixed order).
"""
from __future__ import annotations

import ctypes
import os
import re
import struct

import numpy as np

from ember._kernels import numpy_blas
from ember._kernels.split import _own_pools_ran

_BLAS_DOUBLE = 0x3            # OpenBLAS >= 0.3.11: mode & 0xF == 3 is real double precision
# fn: blas_level1_thread; created: OpenBLAS's thread count (a ctypes view of its global);
# mod: the cfuncs; ok: None until the first use has probed the pool
_state = {"fn": None, "created": None, "mod": None, "ok": None}
_ALPHA = ctypes.c_double(0.0)


def _version(config):
    m = re.search(rb"OpenBLAS (\d+)\.(\d+)\.(\d+)", config or b"")
    return tuple(int(v) for v in m.groups()) if m else None


def _setup():
    """The ``blas_level1_thread`` function and the created-threads counter, or None."""
    if os.environ.get("EMBER_NO_BLAS_POOL", "") not in ("", "0"):
        return None
    found = numpy_blas._library()
    if not found:
        return None
    lib, prefix, suffix = found[:3]
    config = getattr(lib, f"{prefix}openblas_get_config{suffix}", None)
    parallel = getattr(lib, f"{prefix}openblas_get_parallel{suffix}", None)
    fn = getattr(lib, "blas_level1_thread", None)
    if config is None or parallel is None or fn is None:
        return None
    config.restype, parallel.restype = ctypes.c_char_p, ctypes.c_int
    if (_version(config()) or (0,)) < (0, 3, 11) or parallel() != 1:    # 1: pthreads
        return None
    try:
        created = ctypes.c_int.in_dll(lib, "blas_num_threads")
    except ValueError:
        return None
    fn.restype = ctypes.c_int
    fn.argtypes = (ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64,
                   ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p,
                   ctypes.c_int64, ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p,
                   ctypes.c_int)
    return fn, created


def _call(fn, address, ctx, m, threads):
    fn(_BLAS_DOUBLE, m, ctx.size, 0, ctypes.byref(_ALPHA), None, 1, None, 1,
       ctx.ctypes.data, 0, address, threads)


def kernels():
    """ember._kernels.compiled.pool (the cfuncs) when the pool can run them, else None:
    also None once onnxruntime's pool has run in this process (Note [one thread plan]: its
    convolutions then run beside OpenBLAS held at one thread, whose workers must stay
    asleep; waking them here left them spinning through the next convolutions, CNN step
    22.7 -> 30.1 ms)."""
    if _own_pools_ran[0]:
        return None
    if _state["ok"] is None:
        _state["ok"] = False
        from ember._kernels import compiled
        mod = compiled.module("pool")
        setup = _setup() if mod is not None else None
        if setup is not None:
            fn, created = setup
            n = 1000
            out = np.full(n, -1, np.int64)
            ctx = np.array([out.ctypes.data, n], np.int64)
            _call(fn, mod.probe.address, ctx, n, max(1, min(created.value, 4)))
            if np.array_equal(out, np.arange(n)):
                _state.update(fn=fn, created=created, mod=mod, ok=True)
    return _state["mod"] if _state["ok"] else None


def threads_for(items):
    """How many of OpenBLAS's threads a run over ``items`` parts takes: ember's thread
    count (``split.threads``) capped by the threads OpenBLAS created and by ``items``."""
    from ember._kernels import split
    return max(1, min(split.threads(), _state["created"].value, items))


def run(kernel, ctx, items, min_items=1):
    """Run the cfunc ``kernel`` over parts of ``range(items)`` on OpenBLAS's threads with the
    int64 context ``ctx`` (one thread when ``items < 2 * min_items``). Returns False where
    the pool is not in use (nothing ran)."""
    if kernels() is None:
        return False
    if items <= 0:
        return True
    t = threads_for(items // max(1, min_items))
    _call(_state["fn"], kernel.address, ctx, items, t)
    return True


def context(*values):
    """The int64 context of a kernel: arrays give their address, floats their float64 bits,
    ints themselves (the arrays must stay alive until the run returns)."""
    if _state["ok"]:
        return _state["mod"].context(*values)      # (compiled: ~4x faster)
    items = []
    for v in values:
        if isinstance(v, np.ndarray):
            items.append(v.ctypes.data)
        elif isinstance(v, (float, np.floating)):
            items.append(_DOUBLE_BITS.unpack(_DOUBLE.pack(v))[0])
        else:
            items.append(int(v))
    return np.array(items, np.int64)        # (one array from a list: 16 -> ~6 us for six)


_DOUBLE, _DOUBLE_BITS = struct.Struct("<d"), struct.Struct("<q")
