"""Faster routes for a few hot elementwise updates where NumPy's general loops are slow.

- ``axpy_``: ``y += alpha * x`` in one pass through BLAS (NumPy's own OpenBLAS, Note
  [NumPy's own BLAS] in ``numpy_blas``). NumPy needs a temporary and two
  passes (multiply, then add): 3.7x slower on a 512x784 float32 weight. The optimizers'
  update ``p.add_(g, alpha=-lr)`` is this operation.
- ``maximum_scalar``: ``np.maximum(a, s)`` against a zero-stride scalar runs NumPy's
  non-SIMD loop (2.5x slower than against an array operand), so the scalar is given as a
  read-only array of the operand's shape, sliced from one cached buffer per (dtype, value).
  Large arrays are cut into ranges over ember's threads (``split.run_rows``; NumPy's loops
  release the GIL), as ``threshold_backward`` in elementwise.py: ReLU's pair.
"""
from __future__ import annotations

import math
import threading

import numpy as np

from ember._kernels import compiled as _compiled, numpy_blas, split

_AXPY_MIN = 4096               # below this, BLAS's call overhead outweighs the saved pass
_AXPY_THREADED = 10000         # OpenBLAS's axpy wakes its pool from here on (n > 10000)


def axpy_(y, x, alpha):
    """``y += alpha * x`` in place through BLAS when it applies: float32/float64 arrays of
    one shape and dtype, both C-contiguous and not overlapping, ``alpha`` finite and
    non-zero (BLAS skips ``alpha == 0``, where NumPy would turn an infinite ``x`` into
    NaN). Returns whether it did the update."""
    if type(x) is not np.ndarray or x.dtype != y.dtype or y.dtype.char not in "fd" or \
            x.shape != y.shape or not _AXPY_MIN <= y.size < 2 ** 31 or \
            not (x.flags.c_contiguous and y.flags.c_contiguous and y.flags.writeable):
        return False
    if isinstance(alpha, (complex, np.complexfloating)):
        return False
    a = float(alpha)
    if a == 0.0 or not math.isfinite(a) or np.may_share_memory(x, y):
        return False
    fn = numpy_blas.axpy(y.dtype)
    if fn is None:
        return False
    with numpy_blas.one_thread(y.size >= _AXPY_THREADED and split._own_pools_ran[0]):
        # (Note [one thread plan])
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
        return np.maximum(np.asarray(value, a.dtype), a)     # (ties keep a's -0.0, as torch)
    s = _scalar_buffer(a.dtype, value)
    out = np.empty(a.shape, a.dtype)
    af, of = a.reshape(-1), out.reshape(-1)
    if af.size < split.MIN_SPLIT_ELEMENTS:                  # one call, no split
        np.maximum(s[:af.size], af, out=of)
        return out

    def part(lo, hi):
        for i in range(lo, hi, _SCALAR_CHUNK):
            j = min(i + _SCALAR_CHUNK, hi)
            np.maximum(s[:j - i], af[i:j], out=of[i:j])     # (ties keep a's -0.0)
    split.run_rows(part, af.size, af.size)      # large arrays over ember's threads
    return out


# ------------------------------------------------ a + alpha * b, one rounding

SCALED_MIN = 1 << 12           # elements; below this, numba is not loaded for the update
SCALED_POOL_MIN = 1 << 20      # elements; below, one thread (a pool's wake-up costs more)
_scaled_alphas: dict = {}      # (dtype char, alpha) -> alpha as a NumPy scalar of the dtype


def add_scaled(a, b, alpha, out=None):
    """``a + alpha * b`` rounded once (a fused multiply-add, torch's add/sub with ``alpha``;
    ``alpha`` a real number, rounded to the dtype first) for float32/float64 C-contiguous
    arrays of one shape and dtype, into ``out`` (which may be ``a`` or ``b``) or a new array;
    large float32 arrays on OpenBLAS's threads. None where it does not apply: other
    dtypes or layouts, ``out`` overlapping ``b`` otherwise, numba missing (or not loaded yet
    for fewer than ``SCALED_MIN`` elements)."""
    if type(a) is not np.ndarray or type(b) is not np.ndarray or a.dtype != b.dtype or \
            a.shape != b.shape or not (a.flags.c_contiguous and b.flags.c_contiguous):
        return None
    kernels = _compiled.module("elementwise") if a.size >= SCALED_MIN else \
        _compiled.loaded("elementwise")
    if kernels is None or a.dtype.char not in "fd":
        return None
    if out is None:
        out = np.empty(a.shape, a.dtype)
    elif out is not b and (out.base is not None or b.base is not None) and \
            np.may_share_memory(out, b) or out is not a and (
                out.shape != a.shape or out.dtype != a.dtype or not out.flags.c_contiguous or
                not out.flags.writeable or np.may_share_memory(out, a)):
        return None             # (a partial overlap: the vector loop would read what it wrote)
    key = (a.dtype.char, alpha)
    s = _scaled_alphas.get(key)
    if s is None:
        s = a.dtype.type(alpha)
        if len(_scaled_alphas) < 64 and alpha:            # (0.0 == -0.0: not kept)
            _scaled_alphas[key] = s
    if a.size >= SCALED_POOL_MIN and s.dtype.char == "f":
        from ember._kernels import blas_pool
        pool = blas_pool.kernels()
        if pool is not None and blas_pool.run(
                pool.add_scaled, blas_pool.context(a, b, out, a.size, float(s)), a.size,
                _POOL_GRAIN):
            return out
    if out is a:
        kernels.add_scaled_(a if a.ndim == 1 else a.reshape(-1),
                            b if b.ndim == 1 else b.reshape(-1), s)
    elif a.ndim == 1:
        kernels.add_scaled(a, b, s, out)
    else:
        kernels.add_scaled(a.reshape(-1), b.reshape(-1), s, out.reshape(-1))
    return out


def fma(x, y, z):
    """``x * y + z`` rounded once by the compiled kernels (addcmul's and lerp's fused
    multiply-add) where they apply: ``y`` and ``z`` float32/float64 C-contiguous arrays of one
    shape and dtype and ``x`` one more or a number (``add_scaled``); else None."""
    if type(x) is not np.ndarray or x.ndim == 0 and z.ndim:
        if type(x) is np.ndarray:
            if x.dtype != z.dtype:
                return None
            x = x.item()
        return add_scaled(z, y, x)
    if type(y) is not np.ndarray or type(z) is not np.ndarray or not \
            x.dtype == y.dtype == z.dtype or not x.shape == y.shape == z.shape or \
            x.dtype.char not in "fd" or \
            not (x.flags.c_contiguous and y.flags.c_contiguous and z.flags.c_contiguous):
        return None
    kernels = _compiled.module("elementwise") if x.size >= SCALED_MIN else \
        _compiled.loaded("elementwise")
    if kernels is None:
        return None
    out = np.empty(x.shape, x.dtype)
    kernels.fma_arrays(x.reshape(-1), y.reshape(-1), z.reshape(-1), out.reshape(-1))
    return out


# ------------------------------------------------ large passes on OpenBLAS's threads

POOL_MIN = 1 << 17             # elements; below this a pass stays on the caller's thread
_POOL_GRAIN = 1 << 15          # elements per thread at least


def _pooled(name, inputs, extra=()):
    """A new float32 array (``inputs[0]``'s shape) from the compiled kernel ``name`` of
    compiled/pool.py over flat parts on OpenBLAS's threads (Note [one pool] in
    blas_pool.py), or None where it does not apply: not all float32 C-contiguous arrays
    of one shape, fewer than ``POOL_MIN`` elements, or the pool not in use. Kernels of
    ``_SPLIT_KERNELS`` also run from ``COMPILED_MIN`` elements, on the caller's thread."""
    a = inputs[0]
    small = a.size < POOL_MIN
    if small and (a.size < COMPILED_MIN or name not in _SPLIT_KERNELS) or \
            a.dtype != np.float32 or not a.flags.c_contiguous:
        return None
    for b in inputs[1:]:
        if type(b) is not np.ndarray or b.shape != a.shape or b.dtype != np.float32 or \
                not b.flags.c_contiguous:
            return None
    if small:
        return _split_compiled(name, inputs, extra)
    from ember._kernels import blas_pool
    pool = blas_pool.kernels()
    if pool is None:
        return _split_compiled(name, inputs, extra) if split._own_pools_ran[0] else None
    out = np.empty(a.shape, np.float32)
    ctx = blas_pool.context(*inputs, out, a.size, *extra)
    blas_pool.run(getattr(pool, name), ctx, a.size, _POOL_GRAIN)
    return out


# pool kernels whose compiled/elementwise.py pass takes (*inputs, *float32 scalars, out);
# from COMPILED_MIN elements they replace NumPy's passes on the caller's thread too (the
# MLP's (128, 512) ReLU gradient: 41 -> 14 us, its ReLU 21 -> 11 us)
_SPLIT_KERNELS = frozenset({"relu", "threshold_backward"})
COMPILED_MIN = 1 << 12


def _split_compiled(name, inputs, extra):
    """``_pooled``'s result for arrays under ``POOL_MIN`` elements or once onnxruntime's pool
    ran (the conv nets hold OpenBLAS's pool asleep: Note [one thread plan]): the same
    compiled pass over ranges on ember's threads (one range below ``split``'s minimum), or
    None. ReLU's gradient of (64, 32, 28, 28) 1.1 -> 0.55 ms against NumPy's mask,
    subtract and AND there, the same bits."""
    kernels = _compiled.module("elementwise") if name in _SPLIT_KERNELS else None
    if kernels is None:
        return None
    kernel = getattr(kernels, name)
    out = np.empty(inputs[0].shape, np.float32)
    flat = [a.reshape(-1) for a in inputs] + [out.reshape(-1)]
    scalars = tuple(np.float32(v) for v in extra)

    def part(lo, hi):
        kernel(*(a[lo:hi] for a in flat[:-1]), *scalars, flat[-1][lo:hi])
    split.run_rows(part, out.size, out.size)
    return out


def _float32_scalar(a, b):
    """``b`` as a float (the float32 NumPy computes ``a op b`` with) where ``b`` is a Python
    number and the result of a float32 ``a`` with it is float32 (NEP 50: the number is
    weak), else None."""
    if type(b) not in (float, int, bool) or a.dtype != np.float32:
        return None
    v = float(np.float32(b)) if abs(b) < 3e38 else None
    return v if v is not None and math.isfinite(v) else None


def _pooled_scalar(name, a, b):
    """``a op b`` for a large float32 C-contiguous ``a`` and a Python number ``b`` by the
    pool's ``name`` kernel, or None."""
    s = _float32_scalar(a, b)
    if s is None:
        return None
    return _pooled(name, (a,), (s,))


def pooled_mul(a, b):
    """``a * b`` of a large float32 array and a same-shape float32 array or a number, on
    OpenBLAS's threads (the same bits as NumPy's multiply), or None."""
    if type(a) is not np.ndarray or a.size < POOL_MIN or split._own_pools_ran[0]:
        return None
    if type(b) is np.ndarray:
        return _pooled("mul", (a, b))
    return _pooled_scalar("mul_scalar", a, b)


def pooled_add(a, b):
    """``a + b`` of two large float32 arrays of one shape (or a float32 array and a number)
    on OpenBLAS's threads, or, once onnxruntime's pool ran (Note [one thread plan]), NumPy's
    add over ranges on ember's threads; None where neither applies (other dtypes or shapes,
    small arrays)."""
    if type(a) is not np.ndarray or a.size < POOL_MIN:
        return None
    if not split._own_pools_ran[0]:
        if type(b) is not np.ndarray:
            return _pooled_scalar("add_scalar", a, b)
        return _pooled("add", (a, b))
    if type(b) is not np.ndarray or b.shape != a.shape or a.dtype != b.dtype or \
            a.dtype.char not in "fd" or not (a.flags.c_contiguous and b.flags.c_contiguous):
        return None
    out = np.empty(a.shape, a.dtype)
    af, bf, of = a.reshape(-1), b.reshape(-1), out.reshape(-1)
    split.run_rows(lambda lo, hi: np.add(af[lo:hi], bf[lo:hi], out=of[lo:hi]), of.size,
                   of.size)
    return out


def pooled_relu(a):
    """relu of a large float32 array on OpenBLAS's threads (-0.0 and NaN kept), or None."""
    return _pooled("relu", (a,)) if type(a) is np.ndarray else None


TANH_MIN = 1 << 14             # elements; below this NumPy's tanh (and no numba to load)
_TANH_GRAIN = 1 << 13


def _flat_kernels(a, min_size):
    """(compiled/elementwise.py, the pool's cfuncs or None) for a float32 C-contiguous array
    of ``min_size`` elements or more (the pool from two threads' worth), else None."""
    if type(a) is not np.ndarray or a.dtype != np.float32 or a.size < min_size or \
            not a.flags.c_contiguous:
        return None
    from ember._kernels import blas_pool, compiled
    kernels = compiled.module("elementwise")
    if kernels is None:
        return None
    return kernels, (blas_pool.kernels() if a.size >= 2 * _TANH_GRAIN else None)


def tanh(a, out=None, min_size=TANH_MIN):
    """tanh of a float32 C-contiguous array (into ``out``, which may be ``a``) by the
    compiled kernel (compiled/elementwise.py: vectorised, within 1 ulp; NumPy's float32
    tanh is a scalar loop where the CPU lacks AVX-512), on OpenBLAS's threads where the
    pool is in use; None where it does not apply (other dtypes or layouts, fewer than
    ``min_size`` elements, numba missing or switched off)."""
    found = _flat_kernels(a, min_size)
    if found is None:
        return None
    kernels, pool = found
    if out is None:
        out = np.empty(a.shape, np.float32)
    from ember._kernels import blas_pool
    if pool is None or not blas_pool.run(pool.tanh, blas_pool.context(a, out, a.size), a.size,
                                         _TANH_GRAIN):
        kernels.tanh(a.reshape(-1), out.reshape(-1))
    return out


def exp(a):
    """exp of a float32 C-contiguous array of ``TANH_MIN`` elements or more by the compiled
    kernel (compiled/elementwise.py: within 1 ulp, where NumPy's float32 exp is up to 3),
    on OpenBLAS's threads where the pool is in use; arguments outside [-87, 88] (overflow,
    subnormal results, NaN) by NumPy's. None where it does not apply."""
    found = _flat_kernels(a, TANH_MIN)
    if found is None:
        return None
    kernels, pool = found
    out = np.empty(a.shape, np.float32)
    if pool is not None:
        from ember._kernels import blas_pool
        outside = np.zeros(1, np.uint8)
        blas_pool.run(pool.exp, blas_pool.context(a, out, outside, a.size), a.size,
                      _TANH_GRAIN)
        outside = outside[0]
    else:
        outside = kernels.exp(a.reshape(-1), out.reshape(-1))
    if outside:
        rest = ~((a >= -87) & (a <= 88))
        out[rest] = np.exp(a[rest])
    return out


def pooled_threshold_backward(g, x, threshold):
    """``0 if x <= threshold else g`` for large float32 arrays, or None."""
    if type(g) is not np.ndarray or type(x) is not np.ndarray:
        return None
    return _pooled("threshold_backward", (g, x), (float(threshold),))


def _rows_of(a, *others):
    """(R, C) views of float32 C-contiguous arrays of one shape (softmax over the last dim),
    or None."""
    if type(a) is not np.ndarray or a.dtype != np.float32 or a.ndim < 1 or \
            a.size < POOL_MIN or not a.flags.c_contiguous or not a.shape[-1]:
        return None
    for b in others:
        if type(b) is not np.ndarray or b.shape != a.shape or b.dtype != np.float32 or \
                not b.flags.c_contiguous:
            return None
    return [x.reshape(-1, a.shape[-1]) for x in (a, *others)]


def pooled_softmax(x, log):
    """softmax (log_softmax when ``log``) of a large float32 array over its last dim, as
    one compiled row kernel on OpenBLAS's threads; None where that does not apply (a row
    holding NaN, +inf or only -inf included: NumPy's passes give torch's NaNs there)."""
    rows = _rows_of(x)
    if rows is None:
        return None
    from ember._kernels import blas_pool
    pool = blas_pool.kernels()
    if pool is None:
        return None
    (x2,) = rows
    R, C = x2.shape
    y, bad = np.empty((R, C), np.float32), np.zeros(R, np.uint8)
    blas_pool.run(pool.softmax_last, blas_pool.context(x2, y, bad, R, C, int(log)), R,
                  max(1, _POOL_GRAIN // C))
    return None if bad.any() else y.reshape(x.shape)


def pooled_softmax_backward(g, y, log):
    """The gradient of softmax (log_softmax when ``log``) over the last dim from its output
    ``y``, large float32 arrays, on OpenBLAS's threads; None where that does not apply."""
    rows = _rows_of(y, g)
    if rows is None:
        return None
    from ember._kernels import blas_pool
    pool = blas_pool.kernels()
    if pool is None:
        return None
    y2, g2 = rows
    R, C = y2.shape
    out = np.empty((R, C), np.float32)
    grain = max(1, _POOL_GRAIN // C)
    if not log:
        blas_pool.run(pool.softmax_grad, blas_pool.context(g2, y2, out, R, C), R, grain)
        return out.reshape(y.shape)
    bad = np.zeros(R, np.uint8)
    blas_pool.run(pool.log_softmax_grad, blas_pool.context(g2, y2, out, bad, R, C), R, grain)
    return None if bad.any() else out.reshape(y.shape)


def add_bias_(out, b):
    """``out += b`` in place for a large float32 (R, C) ``out`` and a bias b (C,): on
    OpenBLAS's threads (a linear's bias after its GEMM), or over ember's threads once
    onnxruntime's pool ran. Returns whether it did the update (else the caller adds)."""
    if type(out) is not np.ndarray or out.size < POOL_MIN or out.ndim != 2 or \
            out.dtype != np.float32 or not out.flags.c_contiguous or type(b) is not np.ndarray \
            or b.dtype != np.float32 or b.shape != out.shape[1:] or not b.flags.c_contiguous:
        return False
    R, C = out.shape
    from ember._kernels import blas_pool
    pool = blas_pool.kernels()
    if pool is not None:
        return blas_pool.run(pool.add_rows, blas_pool.context(out, b, R, C), R,
                             max(1, _POOL_GRAIN // max(C, 1)))
    split.run_rows(lambda lo, hi: np.add(out[lo:hi], b, out=out[lo:hi]), R, out.size)
    return True


SUM_MIN = 1 << 20              # elements; below this NumPy's pairwise sum on the caller's thread


def pooled_sum(a):
    """The sum of all of a large float32 C-contiguous array, as a float32 0-d array, in
    torch's order (Note [torch's summation order] in torch_sum.py: torch's per-thread chunks,
    so the bits follow the thread count as torch's do), the chunks summed on OpenBLAS's
    threads; None where that does not apply."""
    if type(a) is not np.ndarray or a.dtype != np.float32 or a.size < SUM_MIN or \
            not a.flags.c_contiguous:
        return None
    from ember._kernels import blas_pool, torch_sum
    if blas_pool.kernels() is None:
        return None
    return np.asarray(torch_sum.full(a.reshape(-1), torch_sum._threads()), np.float32)


_SUM_BLOCK = 64                # rows per partial column sum


def pooled_column_sums(a):
    """``a.sum(0)`` of a large float32 (R, C) array on OpenBLAS's threads: fixed blocks of
    rows summed in row order, the blocks' sums added in block order (the same bits at any
    thread count); None where that does not apply."""
    if type(a) is not np.ndarray or a.ndim != 2 or a.size < POOL_MIN or \
            a.dtype != np.float32 or not a.flags.c_contiguous:
        return None
    from ember._kernels import blas_pool
    pool = blas_pool.kernels()
    if pool is None:
        return None
    R, C = a.shape
    blocks = -(-R // _SUM_BLOCK)
    parts = np.empty((blocks, C), np.float32)
    blas_pool.run(pool.column_sums, blas_pool.context(a, parts, R, C, _SUM_BLOCK), blocks,
                  max(1, _POOL_GRAIN // (C * _SUM_BLOCK)))
    return np.add.reduce(parts, axis=0)
