"""BLAS/LAPACK routines of the OpenBLAS that NumPy ships, called through ctypes.

Note [NumPy's own BLAS]: NumPy exposes GEMM (``matmul``) and a few LAPACK drivers but not
the building blocks (axpy, getrf/getrs). SciPy does (``scipy.linalg.blas``/``lapack``), but
over its own copy of OpenBLAS with its own pool of threads; each pool spin-waits after a
call, and on a small machine two spinning pools alternating calls starve each other (a
0.5 ms NumPy GEMM followed by SciPy's saxpy took 47 ms here). So the routines below are
looked up in the library NumPy itself loaded. Where they cannot be found (a NumPy build
without the bundled ``scipy_openblas``), every getter returns None and callers keep their
plain NumPy route.
"""
from __future__ import annotations

import ctypes
import glob
import os

import numpy as np

_lib = None          # (CDLL, name prefix, name suffix, BLAS integer type), or False


def _library():
    global _lib
    if _lib is None:
        _lib = False
        libdir = os.path.join(os.path.dirname(os.path.dirname(np.__file__)), "numpy.libs")
        for path in sorted(glob.glob(os.path.join(libdir, "libscipy_openblas*"))):
            try:
                lib = ctypes.CDLL(path)
            except OSError:
                continue
            for prefix, suffix, int_t in (("scipy_", "64_", ctypes.c_int64),
                                          ("", "64_", ctypes.c_int64),
                                          ("scipy_", "", ctypes.c_int),
                                          ("", "", ctypes.c_int)):
                if hasattr(lib, f"{prefix}cblas_daxpy{suffix}"):
                    _lib = (lib, prefix, suffix, int_t)
                    break
            if _lib:
                break
    return _lib or None


_PREFIX = {"f": "s", "d": "d", "F": "c", "D": "z"}
_fns = {}


def _get(key, make):
    fn = _fns.get(key)
    if fn is None and key not in _fns:
        found = _library()
        fn = _fns[key] = make(*found) if found else None
    return fn


def axpy(dtype):
    """``fn(n, alpha, x_ptr, incx, y_ptr, incy)``: y += alpha x (float32/float64), or None."""
    ch = np.dtype(dtype).char
    if ch not in "fd":
        return None

    def make(lib, prefix, suffix, int_t):
        fn = getattr(lib, f"{prefix}cblas_{_PREFIX[ch]}axpy{suffix}", None)
        if fn is not None:
            real_t = ctypes.c_float if ch == "f" else ctypes.c_double
            fn.restype = None
            fn.argtypes = (int_t, real_t, ctypes.c_void_p, int_t, ctypes.c_void_p, int_t)
        return fn
    return _get(("axpy", ch), make)



def sgemm_address():
    """The address of NumPy's OpenBLAS ``cblas_sgemm`` where its integers are 64-bit (the
    signature compiled code calls: compiled/intrinsics.sgemm), else None."""
    def make(lib, prefix, suffix, int_t):
        fn = getattr(lib, f"{prefix}cblas_sgemm{suffix}", None)
        if fn is None or ctypes.sizeof(int_t) != 8:
            return None
        return ctypes.cast(fn, ctypes.c_void_p).value
    return _get(("sgemm address",), make)

def _lapack(name, ch):
    def make(lib, prefix, suffix, int_t):
        fn = getattr(lib, f"{prefix}{_PREFIX[ch]}{name}_{suffix}", None)
        if fn is not None:
            fn.restype = None
        return fn
    return _get((name, ch), make)


def lu_solve_inplace(a, b):
    """Solve ``A X = B`` for one square matrix, overwriting both buffers.

    ``a``: C-contiguous (n, n) copy of A (its memory is A^T in column-major order, which
    LAPACK factors as is; the solve then uses the transposed system); ``b``: Fortran-
    ordered (n, k) copy of B, overwritten by X. float32/64 and complex64/128. Returns
    LAPACK's info (> 0: U[info-1, info-1] is exactly zero, the matrix is singular), or
    None when the routines are unavailable (nothing was written)."""
    ch = a.dtype.char
    if ch not in _PREFIX:
        return None
    getrf, getrs = _lapack("getrf", ch), _lapack("getrs", ch)
    if getrf is None or getrs is None:
        return None
    int_t = _library()[3]
    n, k = a.shape[0], b.shape[1]
    ref = ctypes.byref
    N, K, info = int_t(n), int_t(k), int_t(0)
    ipiv = np.empty(max(n, 1), np.int64 if int_t is ctypes.c_int64 else np.int32)
    getrf(ref(N), ref(N), ctypes.c_void_p(a.ctypes.data), ref(N),
          ctypes.c_void_p(ipiv.ctypes.data), ref(info))
    if info.value != 0:
        return info.value
    getrs(ctypes.c_char_p(b"T"), ref(N), ref(K), ctypes.c_void_p(a.ctypes.data), ref(N),
          ctypes.c_void_p(ipiv.ctypes.data), ctypes.c_void_p(b.ctypes.data), ref(N),
          ref(info), ctypes.c_size_t(1))
    return info.value


# Note [one thread plan]: NumPy's OpenBLAS, once a GEMM woke its pool, keeps its helper
# threads spin-waiting for ~0.1 s (measured: 20 ms of CPU in every 20 ms sleep for 100 ms
# after a 512^3 GEMM at 2 threads; lowering the count afterwards does not stop them). On a
# small machine those spinners take the cores that onnxruntime's pool and ember's own pool
# (split.py) need next (CNN step 33 -> 24 ms with them held at one thread, load ~1). So once
# an onnxruntime session has run in the process (split.own_pools_ran: the convolutions),
# ember's own GEMMs run OpenBLAS at one thread and split the rows over
# ember's pool instead (split.matmul); the user's setting is restored after each call.
# Before that, OpenBLAS keeps its own threads: alone, its spinning hand-off beats ember's
# pool (MLP 3.2 ms vs 4.1 split over the pool; LSTM, whose per-step GEMMs in rnn_fused.py
# stay on OpenBLAS, 33 vs 43: the held GEMMs then fight those spinners); the Transformer and
# GPT cases, whose only other pool is ember's (GELU, layer norm), measured 1.04x and 1.07x
# held, so ember's pool alone does not switch. The switch is sticky, so a program's GEMMs
# take the same route in every run (same bits). Without onnxruntime, the first convolution
# by image chunks on ember's pool (Note [conv by image chunks] in nn_conv.py) flips the same
# switch: the CNN's step without the extras, 85-104 ms with OpenBLAS's threads beside
# ember's pool, 67-72 held (GPT's, with no convolution, stays faster unheld: 59-62 vs 63-73).

def _thread_fns():
    def make(lib, prefix, suffix, int_t):
        get = getattr(lib, f"{prefix}openblas_get_num_threads{suffix}", None)
        put = getattr(lib, f"{prefix}openblas_set_num_threads{suffix}", None)
        if get is None or put is None:
            return None
        get.restype, get.argtypes = ctypes.c_int, ()
        put.restype, put.argtypes = None, (ctypes.c_int,)
        return get, put
    return _get(("threads",), make)


def get_blas_threads():
    """Threads NumPy's OpenBLAS uses for a large call, or None where it cannot be reached."""
    fns = _thread_fns()
    return fns[0]() if fns else None


def set_blas_threads(n):
    """Set NumPy's OpenBLAS thread count (~0.7 us); returns whether it could."""
    fns = _thread_fns()
    if fns:
        fns[1](int(n))
    return bool(fns)


class one_thread:
    """``with one_thread(cond):`` runs the block with NumPy's OpenBLAS at one thread when
    ``cond`` (and OpenBLAS is reachable), restoring its count after."""
    __slots__ = ("cond", "prev")

    def __init__(self, cond=True):
        self.cond = cond
        self.prev = 1

    def __enter__(self):
        if self.cond:
            prev = get_blas_threads()
            if prev is not None and prev != 1:
                self.prev = prev
                set_blas_threads(1)
        return self

    def __exit__(self, *exc):
        if self.prev != 1:
            set_blas_threads(self.prev)
