"""ember's own float32 GEMM (compiled/gemm.py), where it beats NumPy's OpenBLAS.

Note [own GEMM]: on the AVX-512 host of these benchmarks (AMD EPYC, Zen 5) NumPy's OpenBLAS
(0.3.31) takes the CPU for a Haswell and runs its AVX2 kernels: ~100 GFLOPS a core whatever
the shape, 2048^3 included, while torch's oneDNN LSTM runs at more than twice that. A 12 x 32 register tile
of fused multiply-adds written in LLVM IR (compiled/gemm.py) runs the LSTM's recurrent
product (1024 x 257) @ (257 x 32) at ~210 GFLOPS on one core, 128x784x512 at ~170, so
ember's float32 products take it when:

- numba is installed (the ``fast`` extra) and not switched off (``EMBER_NO_NUMBA=1``), the
  CPU has AVX-512 (on AVX2 the 24 accumulators would spill: OpenBLAS's Haswell kernel is
  left in place there), and ``EMBER_OWN_GEMM`` is not ``0``;
- the product is large enough (``MIN_MACS``: the call costs ~5 us) and deep enough
  (``MIN_DEPTH``, ``MIN_ROWS``).

A is packed into tiles of 12 rows (a copy of m x k); B and C are used in place when their
columns are contiguous. The tiles (or 32-column panels of C when there are few tiles) are
split over the threads: OpenBLAS's own pool (blas_pool) where it runs ember's kernels, else
ember's pool. Each element of C is one chain of fused multiply-adds in k order, so the
result's bits do not depend on the split or the thread count.
"""
from __future__ import annotations

import os

import numpy as np

MIN_MACS = 1 << 18
# shallow products (Winograd's 16x16 transforms over long rows) are loads and stores of C
# more than multiply-adds: OpenBLAS 215 us against 717 for (16, 16) @ (16, 50176)
MIN_DEPTH = 64
MIN_ROWS = 8
# Note [GEMM depth] (nn_conv.py) with this GEMM: its chains are single fused multiply-adds
# in k order, so blocks of 576 left the im2col convolutions at 1.9x torch's float32 error
# (tests/nn/test_winograd.py); blocks of 128 are within its 1.5x
SUM_DEPTH = 128
_state = {"usable": None}


def _host_has_avx512():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return "avx512f" in line.split(":", 1)[1].split()
    except OSError:
        pass
    return False


def kernels():
    """compiled/gemm.py when ember's GEMM is in use here, else None."""
    from ember._kernels import compiled
    if not compiled.switched_on():
        return None
    if _state["usable"] is None:
        _state["usable"] = os.environ.get("EMBER_OWN_GEMM", "") != "0" and _host_has_avx512()
    return compiled.module("gemm") if _state["usable"] else None


def wanted(a, b):
    """Whether ``a @ b`` should run here: float32, a (..., m, k) over a 2-D b, or a and b
    (g, m, k) and (g, k, n) with every product large enough."""
    if a.dtype.char != "f" or b.dtype.char != "f" or a.ndim < 2 or \
            a.shape[-1] < MIN_DEPTH or a.shape[-2] < MIN_ROWS:
        return False
    if b.ndim == 2:
        m = a.size // a.shape[-1] if a.shape[-1] else 0
        return m * b.size >= MIN_MACS and kernels() is not None
    # a batch whose b would need a transposing copy per entry stays on OpenBLAS (Winograd's
    # weight gradient, 16 x (128, 392) @ (392, 128): 20.6-23.2 against 17.5-18.0 ms)
    return a.ndim == b.ndim == 3 and a.shape[0] == b.shape[0] and _unit_columns(b[0]) and \
        a.shape[1] * b.shape[1] * b.shape[2] >= MIN_MACS and kernels() is not None


def pack(a):
    """A (m, k) in tiles of R rows, (ceil(m / R), k, R), for ``matmul_packed``."""
    g = kernels()
    m, k = a.shape
    out = np.empty((-(-m // g.R), k, g.R), np.float32)
    if a.strides[0] == 4 and a.strides[1] != 4:
        g.pack_a_t(a.T, out)                 # a transposed view: read its rows
    else:
        g.pack_a(a, out)
    return out


def matmul(a, b, out=None, depth=0):
    """``a @ b`` in float32: a (..., m, k) (leading dims folded into rows), b (k, n), or
    a batch of products (g, m, k) @ (g, k, n); into ``out`` ((..., m, n)) when given.
    ``depth`` > 0: k summed in blocks of that depth (Note [GEMM depth] in nn_conv.py)."""
    if b.ndim == 3:
        res = out if out is not None else np.empty(a.shape[:2] + b.shape[2:], np.float32)
        for i in range(a.shape[0]):
            matmul(a[i], b[i], res[i], depth)
        return res
    lead = a.shape[:-1]
    a2 = a.reshape(-1, a.shape[-1])
    res = out if out is not None else np.empty(lead + (b.shape[1],), np.float32)
    o2 = res.reshape(-1, b.shape[1])
    if out is not None and not np.shares_memory(o2, out):
        tmp = np.empty(o2.shape, np.float32)
        matmul_packed(pack(a2), a2.shape[0], b, tmp, depth=depth)
        np.copyto(out, tmp.reshape(out.shape))
        return out
    matmul_packed(pack(a2), a2.shape[0], b, o2, depth=depth)
    return res


def _unit_columns(x):
    return x.strides[1] == 4 and x.strides[0] % 4 == 0 and x.strides[0] >= 4 * x.shape[1]


def matmul_packed(ap, m, b, out, c_in=None, depth=0):
    """out (m, n) = A @ b (+ c_in (m, n)) for A packed by ``pack``; b (k, n) float32;
    ``depth``: see ``matmul``."""
    g = kernels()
    k, n = b.shape
    if m == 0 or n == 0:
        return out
    if k == 0:
        out[...] = 0 if c_in is None else c_in
        return out
    if not _unit_columns(b):
        b = np.ascontiguousarray(b)
    target = out if _unit_columns(out) else np.empty((m, n), np.float32)
    if c_in is not None and (c_in.shape != (m, n) or c_in.strides != target.strides):
        np.copyto(target, c_in)
        c_in = target
    ctx = (b.ctypes.data, b.strides[0] // 4, target.ctypes.data, target.strides[0] // 4,
           0 if c_in is None else c_in.ctypes.data, 0 if c_in is None else 1, depth)
    _run(g, ap, ctx, m, n, k)
    if target is not out:
        np.copyto(out, target)
    return out


def _run(g, ap, ctx, m, n, k):
    """The tiles over the threads (Note [own GEMM])."""
    from ember._kernels import blas_pool, split
    b, ldb, c, ldc, c_in, beta, depth = ctx
    tiles = ap.shape[0]
    t = min(split.threads(), max(1, m * n * k // (1 << 20)))
    if t <= 1:
        g.tiles(ap.ctypes.data, b, ldb, n, c_in, beta, c, ldc, m, k, 0, tiles, depth)
        return
    pool = blas_pool.kernels()
    if tiles >= 2 * t:
        if pool is not None:
            blas_pool.run(pool.gemm_tiles, np.array(
                (ap.ctypes.data, b, ldb, n, c_in, beta, c, ldc, m, k, depth), np.int64),
                tiles)
            return
        split._run_parts(lambda lo, hi: g.tiles(ap.ctypes.data, b, ldb, n, c_in, beta, c,
                                                ldc, m, k, lo, hi, depth), tiles, t)
        return
    panels = -(-n // 32)                     # few tiles: split C's columns (32 at a time)
    t = min(t, panels)
    if t <= 1:
        g.tiles(ap.ctypes.data, b, ldb, n, c_in, beta, c, ldc, m, k, 0, tiles, depth)
        return

    def part(lo, hi):
        c0, c1 = lo * 32, min(n, hi * 32)
        g.tiles(ap.ctypes.data, b + 4 * c0, ldb, c1 - c0, c_in + 4 * c0 if beta else 0, beta,
                c + 4 * c0, ldc, m, k, 0, tiles, depth)
    split._run_parts(part, panels, t)
