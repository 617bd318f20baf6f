"""Faster routes for a few hot elementwise updates where NumPy's general loops are slow.

- ``axpy_``: ``y += alpha * x`` in one pass through BLAS. NumPy needs a temporary and two
  passes (multiply, then add): 3.7x slower on a 512x784 float32 weight. The optimizers'
  update ``p.add_(g, alpha=-lr)`` is this operation.
- ``maximum_scalar``: ``np.maximum(a, s)`` against a zero-stride scalar runs NumPy's
  non-SIMD loop (2.5x slower than against an array operand), so the scalar is given as a
  read-only array of the operand's shape, sliced from one cached buffer per (dtype, value).
"""
from __future__ import annotations

import math
import threading

import numpy as np

_AXPY_MIN = 4096               # below this, BLAS's call overhead outweighs the saved pass


# Note [NumPy's own BLAS]: the axpy must run on the OpenBLAS that NumPy's matmul uses, not
# SciPy's copy (scipy.linalg.blas): each library keeps its own pool of threads that
# spin-wait after a call, and on a small machine two spinning pools alternating calls
# starve each other (a 0.5 ms GEMM followed by SciPy's saxpy took 47 ms here). NumPy ships
# no axpy in Python, so the CBLAS symbol is looked up in NumPy's bundled library; when it
# cannot be found (another NumPy build), the two-pass NumPy route is used.
_axpy_fns = None


def _find_numpy_axpy():
    """{'f': saxpy, 'd': daxpy} ctypes functions of NumPy's bundled OpenBLAS, or {}."""
    import ctypes
    import glob
    import os
    libdir = os.path.join(os.path.dirname(os.path.dirname(np.__file__)), "numpy.libs")
    for path in sorted(glob.glob(os.path.join(libdir, "libscipy_openblas*"))):
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for prefix, suffix, int_t in (("scipy_cblas_", "64_", ctypes.c_int64),
                                      ("cblas_", "64_", ctypes.c_int64),
                                      ("scipy_cblas_", "", ctypes.c_int),
                                      ("cblas_", "", ctypes.c_int)):
            fns = {}
            for ch, real_t in (("f", ctypes.c_float), ("d", ctypes.c_double)):
                fn = getattr(lib, f"{prefix}{'s' if ch == 'f' else 'd'}axpy{suffix}", None)
                if fn is None:
                    break
                fn.restype = None
                fn.argtypes = (int_t, real_t, ctypes.c_void_p, int_t, ctypes.c_void_p, int_t)
                fns[ch] = fn
            if len(fns) == 2:
                return fns
    return {}


def axpy_(y, x, alpha):
    """``y += alpha * x`` in place through BLAS when it applies: float32/float64 arrays of
    one shape and dtype, both C-contiguous and not overlapping, ``alpha`` finite and
    non-zero (BLAS skips ``alpha == 0``, where NumPy would turn an infinite ``x`` into
    NaN). Returns whether it did the update."""
    global _axpy_fns
    if type(x) is not np.ndarray or x.dtype != y.dtype or y.dtype.char not in "fd" or \
            x.shape != y.shape or y.size < _AXPY_MIN or \
            not (x.flags.c_contiguous and y.flags.c_contiguous and y.flags.writeable):
        return False
    if isinstance(alpha, (complex, np.complexfloating)):
        return False
    a = float(alpha)
    if a == 0.0 or not math.isfinite(a) or np.may_share_memory(x, y):
        return False
    if _axpy_fns is None:
        _axpy_fns = _find_numpy_axpy()
    fn = _axpy_fns.get(y.dtype.char)
    if fn is None:
        return False
    fn(y.size, a, x.ctypes.data, 1, y.ctypes.data, 1)
    return True


_SCALAR_CHUNK = 1 << 18        # elements per cached scalar buffer (1 MB of float32)
_scalar_bufs: dict = {}
_scalar_lock = threading.Lock()


def _scalar_buffer(dtype, value):
    key = (dtype.str, np.asarray(value, dtype).tobytes())     # tells -0.0 from 0.0
    buf = _scalar_bufs.get(key)
    if buf is None:
        with _scalar_lock:
            buf = np.full(_SCALAR_CHUNK, value, dtype)
            buf.flags.writeable = False
            if len(_scalar_bufs) < 16:
                _scalar_bufs[key] = buf
    return buf


def maximum_scalar(a, value):
    """``np.maximum(a, value)`` for a float array ``a`` (NaN propagates), on NumPy's SIMD
    loop: the scalar comes as an array operand, chunk by chunk for large ``a``."""
    if a.dtype.kind != "f" or a.size < 1024 or not a.flags.c_contiguous:
        return np.maximum(a, np.asarray(value, a.dtype))
    s = _scalar_buffer(a.dtype, value)
    out = np.empty(a.shape, a.dtype)
    af, of = a.reshape(-1), out.reshape(-1)
    n = af.size
    for i in range(0, n, _SCALAR_CHUNK):
        j = min(i + _SCALAR_CHUNK, n)
        np.maximum(af[i:j], s[:j - i], out=of[i:j])
    return out
