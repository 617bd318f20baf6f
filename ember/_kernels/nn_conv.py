"""NumPy kernels for convolution and pooling (im2col onto BLAS, vectorised window gathers);
float32 max pooling's backward runs a compiled kernel (ember/_kernels/compiled/norm_pool.py)
with the ``fast`` extra.

float32 convolutions and transposed convolutions (so also a convolution's input gradient)
run on onnxruntime instead when it is installed (ember/_kernels/ort_conv.py); the weight
gradient stays here (onnxruntime's swapped-axes ``Conv`` measured 1.4-2x slower)."""
from __future__ import annotations

import math
import threading
from collections import deque

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ember._kernels import numpy_blas, ort_conv, own_gemm, split


def _fmt(shape):
    return "[" + ", ".join(str(s) for s in shape) + "]"


def _windows(xp, ksize, stride, dilation, out_size):
    """View of ``xp`` (N, C, *S) as (N, C, *out, *k) windows (no copy)."""
    n = len(ksize)
    st = xp.strides
    shape = tuple(xp.shape[:2]) + tuple(out_size) + tuple(ksize)
    strides = st[:2] + tuple(st[2 + i] * stride[i] for i in range(n)) + \
        tuple(st[2 + i] * dilation[i] for i in range(n))
    return as_strided(xp, shape, strides, writeable=False)


def _padded(x, padding, extra=None, fill=0):
    """Zero(``fill``)-padded copy of ``x`` (N, C, *S); ``extra`` adds trailing rows."""
    n = len(padding)
    extra = extra or [0] * n
    if not any(padding) and not any(extra):
        return x
    shape = tuple(x.shape[:2]) + tuple(x.shape[2 + i] + 2 * padding[i] + extra[i]
                                       for i in range(n))
    buf = np.empty(shape, dtype=x.dtype) if fill is None else np.full(shape, fill, x.dtype)
    buf[(slice(None), slice(None)) + tuple(slice(padding[i], padding[i] + x.shape[2 + i])
                                          for i in range(n))] = x
    return buf


def _cols(x, ksize, stride, padding, dilation, groups, out_size, hi=None):
    """im2col: (groups, Cg*K, N*P), C-contiguous, rows ordered (c, *k) like the weight.

    One copy of a strided window view whose innermost axis walks the output positions (the
    copy streams rows of the input); one large GEMM per group then needs no further copy
    (the layout for large weight matrices, see ``_use_big_gemm``)."""
    n = len(ksize)
    N, C = x.shape[:2]
    P, Kp = math.prod(out_size), math.prod(ksize)
    xp = _pad_lohi(x, padding, hi if hi is not None else padding)
    st = xp.strides
    shape = (C,) + tuple(ksize) + (N,) + tuple(out_size)
    strides = (st[1],) + tuple(st[2 + i] * dilation[i] for i in range(n)) + (st[0],) + \
        tuple(st[2 + i] * stride[i] for i in range(n))
    win = as_strided(xp, shape, strides, writeable=False)
    cols = _scratch("cols", shape, x.dtype)
    _copy_split(cols, win)
    return cols.reshape(groups, (C // groups) * Kp, N * P)


def _copy_split(dst, src):
    """``np.copyto(dst, src)`` over ember's threads in ranges of the leading axis (or the
    next one when it is too short to share out, as a 3-channel image's): NumPy's copy
    releases the GIL. ResNet-18's stem im2col (59 MB) 12 -> ~6 ms at 2 threads."""
    axis = 0 if dst.shape[0] >= 2 * split.threads() or dst.ndim == 1 else 1

    def part(lo, hi):
        index = (slice(lo, hi),) if axis == 0 else (slice(None), slice(lo, hi))
        np.copyto(dst[index], src[index])
    split.run_rows(part, dst.shape[axis], dst.size)


def _chan_first(a, groups):
    """(N, C, *S) -> (groups, C/groups, N*P) contiguous (one copy)."""
    N, C = a.shape[:2]
    P = int(np.prod(a.shape[2:]))
    out = np.empty((C, N, P), a.dtype)
    _copy_split(out, a.reshape(N, C, P).transpose(1, 0, 2))
    return out.reshape(groups, C // groups, N * P)


def _batch_first(a, N, size):
    """(C, N*P) -> (N, C, *size) contiguous (one copy)."""
    C = a.shape[0]
    P = int(np.prod(size))
    return np.ascontiguousarray(a.reshape(C, N, P).transpose(1, 0, 2)).reshape(
        (N, C) + tuple(size))


def conv_out_size(in_size, ksize, stride, padding, dilation):
    return [(in_size[i] + 2 * padding[i] - dilation[i] * (ksize[i] - 1) - 1) // stride[i] + 1
            for i in range(len(ksize))]


def check_conv(x, w, stride, padding, dilation, groups, transposed):
    n = w.ndim - 2
    if x.ndim != n + 2:
        raise RuntimeError(f"Expected {n + 1}D (unbatched) or {n + 2}D (batched) input to "
                           f"conv{n}d, but got input of size: {_fmt(x.shape)}")
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    if any(s <= 0 for s in stride):
        raise RuntimeError("non-positive stride is not supported")
    if any(p < 0 for p in padding):
        raise RuntimeError("negative padding is not supported")
    if any(d <= 0 for d in dilation):
        raise RuntimeError("dilation should be greater than zero")
    if w.shape[0] == 0 or (transposed and w.shape[1] == 0):
        raise RuntimeError(f"Given groups={groups}, expected weight to be at least 1 at "
                           f"dimension {0 if w.shape[0] == 0 else 1}, but got weight of size "
                           f"{_fmt(w.shape)} instead")
    if not transposed:
        if w.shape[0] % groups:
            raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by "
                               f"{groups} at dimension 0, but got weight of size "
                               f"{_fmt(w.shape)} instead")
        if x.shape[1] != w.shape[1] * groups:
            raise RuntimeError(f"Given groups={groups}, weight of size {_fmt(w.shape)}, expected "
                               f"input{_fmt(x.shape)} to have {w.shape[1] * groups} channels, "
                               f"but got {x.shape[1]} channels instead")
        padded = [x.shape[2 + i] + 2 * padding[i] for i in range(n)]
        eff = [dilation[i] * (w.shape[2 + i] - 1) + 1 for i in range(n)]
        if any(p < k for p, k in zip(padded, eff)):
            raise RuntimeError(
                "Calculated padded input size per channel: (" + " x ".join(map(str, padded)) +
                "). Kernel size: (" + " x ".join(map(str, eff)) +
                "). Kernel size can't be greater than actual input size")
    else:
        if x.shape[1] != w.shape[0]:
            raise RuntimeError(f"Given transposed=1, weight of size {_fmt(w.shape)}, expected "
                               f"input{_fmt(x.shape)} to have {w.shape[0]} channels, but got "
                               f"{x.shape[1]} channels instead")
        if w.shape[0] % groups:
            raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by "
                               f"{groups} at dimension 0, but got weight of size "
                               f"{_fmt(w.shape)} instead")


# Note [conv scratch]: im2col columns and padded inputs are temporaries of one kernel call,
# often tens of MB. A fresh array of that size costs its page faults on every call (the
# allocator hands big blocks back to the OS), about as much as the copy itself; so each
# thread keeps one buffer per use and reuses it. Only temporaries that the kernel drops
# before returning live there.
# Below ~16 MB the allocator reuses freed blocks by itself (measured: no gain there).
# Above 48 MiB a buffer is not kept: ResNet's 7x7 stem im2col (56 MiB, its weight gradient)
# stayed resident between steps and into the next step's peak; a fresh one measured the
# same (12.2-12.7 vs 12.6-14.7 ms for that copy, 1 thread, loaded host).
_scratch_local = threading.local()
_SCRATCH_MIN_BYTES = 1 << 24
_SCRATCH_MAX_BYTES = 48 << 20


def _scratch(slot, shape, dtype, zero=False):
    """A ``shape``/``dtype`` array (uninitialised, or zeros) on this thread's buffer
    ``slot`` when it is large, else a fresh one."""
    dtype = np.dtype(dtype)
    n = 1
    for s in shape:
        n *= s
    nbytes = n * dtype.itemsize
    if not _SCRATCH_MIN_BYTES <= nbytes <= _SCRATCH_MAX_BYTES:
        return np.zeros(shape, dtype) if zero else np.empty(shape, dtype)
    pool = _scratch_local.__dict__.setdefault("pool", {})
    buf = pool.get(slot)
    if buf is None or buf.nbytes < nbytes:
        buf = pool[slot] = np.empty(max(nbytes, 64), np.uint8)
    out = buf[:nbytes].view(dtype).reshape(shape)
    if zero:
        out.fill(0)
    return out


# Note [GEMM depth]: BLAS accumulates each dot product of a GEMM in one float32 register,
# so its rounding error grows with the depth (the shared axis). Measured against float64 on
# ResNet-18 shapes, a float32 im2col convolution of depth 9C reached 1.4-1.6x torch's error
# (rms; torch's stays flat in C), and Winograd's per-position GEMMs (depth C, amplified by
# the output transform) 1.5-2.6x. ``summed_matmul`` sums the product over blocks of the
# depth instead: a few extra adds of the (small) output per block, same GEMM work.
_IM2COL_DEPTH = 576     # 64 channels x 3x3: 1.2-1.4x torch's error, deep enough for BLAS


def summed_matmul(a, b, depth, out=None, slot="gemm_part"):
    """``a @ b`` (stacked, broadcasting like np.matmul) with the shared axis summed in
    blocks of ``depth`` (Note [GEMM depth]); ``out``: where to write it. On ember's GEMM
    where it serves (Note [own GEMM]), else NumPy's, rows of ``a`` split over ember's
    threads once onnxruntime's pool runs (``split.gemm_rows``)."""
    K = a.shape[-1]
    if out is None:
        lead = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
        out = np.empty(lead + (a.shape[-2], b.shape[-1]), np.result_type(a, b))
    if own_gemm.wanted(a, b) and out.shape[:-1] == a.shape[:-1] and out.flags.c_contiguous:
        return own_gemm.matmul(a, b, out, depth=min(depth, own_gemm.SUM_DEPTH))

    def rows(lo, hi):
        o, ar = out[..., lo:hi, :], a[..., lo:hi, :]
        np.matmul(ar[..., :depth], b[..., :depth, :], out=o)
        if K > depth:
            part = _scratch(slot, o.shape, o.dtype)
            for k in range(depth, K, depth):
                np.matmul(ar[..., k:k + depth], b[..., k:k + depth, :], out=part)
                o += part
    split.gemm_rows(rows, a.shape[-2], a.shape[-2] * b.shape[-1] * min(K, depth),
                    out.dtype)
    return out


def _pad_lohi(x, lo, hi):
    """Zero-padded copy of ``x`` (N, C, *S) with ``lo``/``hi`` rows before/after each
    spatial dim (``x`` itself when nothing is added); a scratch buffer (Note [conv
    scratch]), valid until the next padding in this thread."""
    n = len(lo)
    if not any(lo) and not any(hi):
        return x
    shape = tuple(x.shape[:2]) + tuple(x.shape[2 + i] + lo[i] + hi[i] for i in range(n))
    buf = _scratch("pad", shape, x.dtype)
    inner = tuple(slice(lo[i], lo[i] + x.shape[2 + i]) for i in range(n))
    buf[(slice(None), slice(None)) + inner] = x
    _zero_border(buf, lo, hi)
    return buf


def _zero_border(buf, lo, hi):
    """Zero the ``lo``/``hi`` border slabs of ``buf`` (N, C, *S), leaving the inside as it
    is: a full zero fill first costs a pass over the whole buffer (and, for a fresh one,
    its page faults before the copy: 2.5 ms a step in the CNN's profile)."""
    n = len(lo)
    for i in range(n):
        head = (slice(None), slice(None)) + (slice(None),) * i
        if lo[i]:
            buf[head + (slice(0, lo[i]),)] = 0
        if hi[i]:
            buf[head + (slice(buf.shape[2 + i] - hi[i], None),)] = 0


def _cols_n(x, ksize, stride, padding, dilation, out_size, hi=None):
    """im2col, batch first: (N, C*K, P) C-contiguous, rows ordered (c, *k) like the weight.
    A 1x1 kernel without padding needs no window copy at all (strides by slicing)."""
    n = len(ksize)
    N, C = x.shape[:2]
    P, Kp = math.prod(out_size), math.prod(ksize)
    if Kp == 1 and not any(padding) and not (hi and any(hi)):
        if all(s == 1 for s in stride) and tuple(out_size) == tuple(x.shape[2:]):
            return np.ascontiguousarray(x).reshape(N, C, P)
        sl = tuple(slice(0, (out_size[i] - 1) * stride[i] + 1, stride[i]) for i in range(n))
        return np.ascontiguousarray(x[(slice(None), slice(None)) + sl]).reshape(N, C, P)
    xp = _pad_lohi(x, padding, hi if hi is not None else padding)
    st = xp.strides
    shape = (N, C) + tuple(ksize) + tuple(out_size)
    strides = (st[0], st[1]) + tuple(st[2 + i] * dilation[i] for i in range(n)) + \
        tuple(st[2 + i] * stride[i] for i in range(n))
    cols = _scratch("cols", shape, x.dtype)
    np.copyto(cols, as_strided(xp, shape, strides, writeable=False))
    return cols.reshape(N, C * Kp, P)


def _gemm_n(wr, cols, N, groups, bias=None):
    """(groups, Og, CgK) x (N, groups*CgK, P) -> (N, groups*Og, P) batched, no transposes;
    ``bias`` (groups*Og,) added in place."""
    g, Og, CgK = wr.shape
    P = cols.shape[-1]
    out = np.empty((N, g, Og, P), dtype=np.result_type(wr, cols))
    summed_matmul(wr, cols.reshape(N, g, CgK, P), _IM2COL_DEPTH, out=out)
    if bias is not None:
        out += bias.reshape(g, Og, 1).astype(out.dtype, copy=False)
    return out.reshape(N, g * Og, P)


def _use_big_gemm(N, O, CK):
    """One big (O, CK) x (CK, N*P) GEMM plus a transposing copy, or N batched GEMMs?
    Batched (no transposes) wins for small weight matrices, where a threaded BLAS call
    per image is cheap; large weights are faster as a single GEMM (measured)."""
    return N > 1 and O * CK > _BIG_GEMM_MIN


_BIG_GEMM_MIN = 16384


def _conv_cols_gemm(x, wr, ksize, stride, lo, hi, dilation, out_size, bias=None):
    """Convolution as im2col + GEMM: x (N, C, *S), wr (g, Og, Cg*K) -> (N, g*Og, *out),
    ``lo``/``hi``: zero padding before/after; ``bias`` fused into the final copy/add."""
    N = x.shape[0]
    g, Og, CgK = wr.shape
    Cout = g * Og
    P = int(np.prod(out_size))
    if g == 1 and _chunked(x, Cout, CgK, P):
        return _conv_chunks(x, wr, ksize, stride, lo, hi, dilation, out_size, bias)
    if _use_big_gemm(N, Cout, CgK):
        cols = _cols(x, ksize, stride, lo, dilation, g, out_size, hi)      # g, CgK, N*P
        out = summed_matmul(wr, cols, _IM2COL_DEPTH).reshape(Cout, N, P).transpose(1, 0, 2)
        res = np.empty((N, Cout, P), out.dtype)
        if bias is not None:
            np.add(out, np.reshape(bias, (1, Cout, 1)).astype(out.dtype, copy=False), out=res)
        else:
            np.copyto(res, out)
        return res.reshape((N, Cout) + tuple(out_size))
    cols = _cols_n(x, ksize, stride, lo, dilation, out_size, hi)
    b = None if bias is None else np.asarray(bias)
    return _gemm_n(wr, cols, N, g, b).reshape((N, Cout) + tuple(out_size))


# Note [conv by image chunks]: without a compiled engine (onnxruntime's convolutions,
# ember's GEMM), im2col + one GEMM over the whole batch streams the columns through memory:
# the CNN's 32->64 layer (14x14, batch 64) copied 14 MB of columns (3.3 ms) for a 4.5 ms
# GEMM, then transposed the result. By chunks of images whose columns fit the L2 cache, each
# of ember's threads copies a chunk's columns and runs a one-thread GEMM on them while they
# are cached, writing the (N, O, P) output in place (that layer 9-12 -> 6.3 ms; torch 6.5-7).
# The weight gradient sums one product per chunk, the chunks fixed by the shape alone and
# summed in order, so no result depends on the thread count.
_CHUNK_FLOATS = 1 << 18         # columns of a chunk (1 MiB of float32)
_CHUNK_MIN_MACS = 1 << 22       # smaller convolutions: one GEMM on the caller's thread
# smaller images stay one GEMM: ResNet's 512x7x7 layer as 8 products (512, 4608) @ (4608, 49)
# took 20-24 ms against 19-20 for one over the batch
_CHUNK_MIN_PIXELS = 128
# shallow columns stay on the per-image products: the CNN's 1->32 layer (depth 9) 4-6 ms
# forward and backward against 6-7.5 by chunks
_CHUNK_MIN_DEPTH = 64
# an image's columns above this many chunks go by blocks of output rows, each at least this
# many columns wide (ResNet's stem 43 -> 34 ms forward; its 256x14x14 layer, 1.8 MB of
# columns an image, ran 16 -> 45 ms as blocks of 8 rows: thin GEMMs)
_CHUNK_ROWS_ABOVE = 4
_CHUNK_MIN_COLUMNS = 256


def _chunked(x, O, CK, P):
    """Whether a dense convolution (or its weight gradient) of x (N, C, *S), O output
    channels, depth CK and P output positions runs by image chunks."""
    return x.dtype == np.float32 and P >= _CHUNK_MIN_PIXELS and CK >= _CHUNK_MIN_DEPTH and \
        x.shape[0] * O * CK * P >= _CHUNK_MIN_MACS and own_gemm.kernels() is None


def _window_view(x, ksize, stride, lo, hi, dilation, out_size):
    """x zero-padded by ``lo``/``hi``, as a (N, C, *k, *out) view of its windows."""
    n = len(ksize)
    xp = _pad_lohi(x, lo, hi)
    st = xp.strides
    shape = tuple(x.shape[:2]) + tuple(ksize) + tuple(out_size)
    strides = st[:2] + tuple(st[2 + i] * dilation[i] for i in range(n)) + \
        tuple(st[2 + i] * stride[i] for i in range(n))
    return as_strided(xp, shape, strides, writeable=False)


def _chunk_parts(fn, chunks):
    """``fn(lo, hi)`` over ranges of [0, chunks) on ember's threads, OpenBLAS at one; from
    now on ember's GEMMs keep OpenBLAS at one thread too (Note [one thread plan])."""
    split.own_pools_ran()
    t = min(split.threads(), chunks)
    with numpy_blas.one_thread():
        if t <= 1:
            fn(0, chunks)
        else:
            split._run_parts(fn, chunks, t)


def _depth_matmul(a, b, out, depth):
    """out = a @ b with the shared axis summed in blocks of ``depth`` (Note [GEMM depth])."""
    K = a.shape[-1]
    np.matmul(a[..., :depth], b[..., :depth, :], out=out)
    if K > depth:
        part = np.empty(out.shape, out.dtype)
        for k in range(depth, K, depth):
            np.matmul(a[..., k:k + depth], b[..., k:k + depth, :], out=part)
            out += part


def _chunk_tasks(N, CK, out_size):
    """The chunks of a convolution's columns, fixed by the shape: (first image, images,
    first output row, end row): several whole images when one image's columns (CK, P) fit
    ``_CHUNK_FLOATS``, else blocks of output rows (the first spatial axis) of one image."""
    P = math.prod(out_size)
    per = max(1, _CHUNK_FLOATS // (CK * P))
    if CK * P <= _CHUNK_ROWS_ABOVE * _CHUNK_FLOATS:
        return [(i, min(per, N - i), 0, out_size[0]) for i in range(0, N, per)]
    width = P // out_size[0]
    rows = max(_CHUNK_FLOATS // (CK * width), -(-_CHUNK_MIN_COLUMNS // width))
    return [(i, 1, r, min(r + rows, out_size[0])) for i in range(N)
            for r in range(0, out_size[0], rows)]


def _conv_chunks(x, wr, ksize, stride, lo, hi, dilation, out_size, bias=None):
    """``_conv_cols_gemm`` of one group by chunks (Note [conv by image chunks])."""
    N = x.shape[0]
    O, CK = wr.shape[1:]
    win = _window_view(x, ksize, stride, lo, hi, dilation, out_size)
    row = 2 + len(ksize)                           # the window view's first output axis
    w2 = wr[0]
    out = np.empty((N, O) + tuple(out_size), np.float32)
    tasks = _chunk_tasks(N, CK, out_size)
    b = None if bias is None else np.asarray(bias, np.float32).reshape(
        (O,) + (1,) * len(out_size))

    def part(t0, t1):
        for i, m, r0, r1 in tasks[t0:t1]:
            src = win[i:i + m]
            if r1 - r0 < out_size[0]:
                src = src[(slice(None),) * row + (slice(r0, r1),)]
            cols = np.empty(src.shape, np.float32)
            np.copyto(cols, src)
            o = out[i:i + m, :, r0:r1]
            res = o if o.flags.c_contiguous else np.empty(o.shape, np.float32)
            _depth_matmul(w2, cols.reshape(m, CK, -1), res.reshape(m, O, -1),
                          _IM2COL_DEPTH)
            if b is not None:
                res += b
            if res is not o:
                np.copyto(o, res)
    _chunk_parts(part, len(tasks))
    return out


def _weight_grad_chunks(x, gy, ksize, stride, padding, dilation, out_size):
    """d<gy, conv(x, w)>/dw (O, C*K) of one group by chunks (Note [conv by image chunks]):
    per chunk one GEMM (O, m*P') @ (m*P', C*K), the chunks' sums added in order."""
    N, C = x.shape[:2]
    O = gy.shape[1]
    n = len(ksize)
    win = _window_view(x, ksize, stride, padding, padding, dilation, out_size)
    CK = C * math.prod(ksize)
    tasks = _chunk_tasks(N, CK, out_size)
    sums = np.empty((len(tasks), O, CK), np.float32)
    # (C, *k, m, *out) and (O, m, *out): the chunk's columns and gradient, batch inside
    cols_order = tuple(range(1, 2 + n)) + (0,) + tuple(range(2 + n, 2 + 2 * n))
    gy_order = (1, 0) + tuple(range(2, 2 + n))

    def part(t0, t1):
        for j in range(t0, t1):
            i, m, r0, r1 = tasks[j]
            src, g = win[i:i + m], gy[i:i + m]
            if r1 - r0 < out_size[0]:
                src = src[(slice(None),) * (2 + n) + (slice(r0, r1),)]
                g = g[:, :, r0:r1]
            cols = np.empty(tuple(src.shape[a] for a in cols_order), np.float32)
            np.copyto(cols, src.transpose(cols_order))
            gc = np.empty(tuple(g.shape[a] for a in gy_order), np.float32)
            np.copyto(gc, g.transpose(gy_order))
            np.matmul(gc.reshape(O, -1), cols.reshape(CK, -1).T, out=sums[j])
    _chunk_parts(part, len(tasks))
    return np.add.reduce(sums, axis=0)


def _transpose_chunks(x, w, ksize, stride, padding, dilation, out_size):
    """A transposed convolution of one group (a strided convolution's input gradient) by
    image chunks (Note [conv by image chunks]): per chunk the columns W^T x (m, C*K, P)
    and their col2im scatter, both while cached. x (N, O, *in), w (O, C, *k)."""
    N, O = x.shape[:2]
    C = w.shape[1]
    in_size = tuple(x.shape[2:])
    P = math.prod(in_size)
    CK = C * math.prod(ksize)
    wt = w.reshape(O, CK).T
    xr = np.ascontiguousarray(x).reshape(N, O, P)
    out = np.empty((N, C) + tuple(out_size), np.float32)
    per = max(1, _CHUNK_FLOATS // (CK * P))

    def part(c0, c1):
        for i in range(c0 * per, min(N, c1 * per), per):
            m = min(per, N - i)
            cols = np.empty((m, CK, P), np.float32)
            _depth_matmul(wt, xr[i:i + m], cols, _IM2COL_DEPTH)
            out[i:i + m] = _col2im(cols.reshape((m, C) + tuple(ksize) + in_size), m, C,
                                   ksize, in_size, stride, dilation, padding, out_size)
    _chunk_parts(part, -(-N // per))
    return out


def _winograd_ok(x, ksize, stride, dilation, groups, C, O, op="forward"):
    """A 3x3 stride-1 undilated dense 2-D float convolution on a shape where Winograd
    (ember/_kernels/winograd.py) beats im2col + GEMM."""
    if ksize != (3, 3) or groups != 1 or x.dtype.char not in "fd" or \
            any(s != 1 for s in stride) or any(d != 1 for d in dilation):
        return False
    from ember._kernels.winograd import use_winograd
    N, _, H, W = x.shape
    return use_winograd(N, C, O, H, W, op)


def conv_forward(x, w, stride, padding, dilation, groups, bias=None):
    Cout = w.shape[0]
    ksize = tuple(w.shape[2:])
    out_size = conv_out_size(x.shape[2:], ksize, stride, padding, dilation)
    dt = np.result_type(x, w)
    x = x.astype(dt, copy=False)
    if ort_conv.available(x, w, groups):        # faster on every shape measured
        return ort_conv.forward(x, w, stride, padding, dilation, groups, bias)
    if _winograd_ok(x, ksize, stride, dilation, groups, x.shape[1], Cout):
        from ember._kernels.winograd import conv2d_3x3
        b = None if bias is None else np.asarray(bias)
        return conv2d_3x3(x, w.astype(dt, copy=False), padding, padding, b)
    wr = w.astype(dt, copy=False).reshape(groups, Cout // groups, -1)   # g, Og, Cg*K
    return _conv_cols_gemm(x, wr, ksize, stride, padding, padding, dilation, out_size, bias)


def _col2im(cols, N, C, ksize, in_size, stride, dilation, padding, out_size, nfirst=True):
    """Scatter-add (N, C, *K, *I) (``nfirst``) or (C, *K, N, *I) columns into the
    (N, C, *out) image (cropping padding)."""
    n = len(ksize)
    full = [max(out_size[i] + 2 * padding[i],
                dilation[i] * (ksize[i] - 1) + (in_size[i] - 1) * stride[i] + 1)
            for i in range(n)]
    buf = np.zeros((N, C) + tuple(full), dtype=cols.dtype)
    for kpos in np.ndindex(*ksize):
        sl = tuple(slice(kpos[i] * dilation[i], kpos[i] * dilation[i] +
                         (in_size[i] - 1) * stride[i] + 1, stride[i]) for i in range(n))
        if nfirst:
            buf[(slice(None), slice(None)) + sl] += cols[(slice(None), slice(None)) + kpos]
        else:
            buf[(slice(None), slice(None)) + sl] += cols[(slice(None),) + kpos].swapaxes(0, 1)
    crop = tuple(slice(padding[i], padding[i] + out_size[i]) for i in range(n))
    out = buf[(slice(None), slice(None)) + crop]
    return out if out.shape == buf.shape else np.ascontiguousarray(out)


def conv_transpose_forward(x, w, stride, padding, dilation, groups, output_padding,
                           threads=None):
    """Transposed convolution (also a convolution's input gradient); ``threads``: for
    onnxruntime's kernel (default ember's count)."""
    n = w.ndim - 2
    N, Cin = x.shape[:2]
    in_size = x.shape[2:]
    ksize = tuple(w.shape[2:])
    Cg_in = Cin // groups
    Cg_out = w.shape[1]
    Cout = Cg_out * groups
    out_size = [(in_size[i] - 1) * stride[i] - 2 * padding[i] + dilation[i] * (ksize[i] - 1)
                + output_padding[i] + 1 for i in range(n)]
    if any(o <= 0 for o in out_size):
        raise RuntimeError(f"Given input size per channel: ({' x '.join(map(str, in_size))}). "
                           f"Calculated output size per channel: "
                           f"({' x '.join(map(str, out_size))}). Output size is too small")
    P = int(np.prod(in_size))
    K = int(np.prod(ksize))
    dt = np.result_type(x, w)
    x = x.astype(dt, copy=False)
    w = w.astype(dt, copy=False)
    if ort_conv.available(x, w, groups, out_size) and \
            all(o < s for o, s in zip(output_padding, stride)):
        # the input gradient: faster where measured (onnxruntime wants output_padding < stride)
        return ort_conv.transpose(x, w, stride, padding, dilation, groups, output_padding,
                                  threads)
    lo = [dilation[i] * (ksize[i] - 1) - padding[i] for i in range(n)]
    if all(s == 1 for s in stride) and all(v >= 0 for v in lo) and Cg_in <= 2 * Cg_out:
        # stride 1: a plain convolution of the zero-padded input with the flipped kernel,
        # in/out channels swapped per group (no col2im scatter; im2col copies scale with
        # the input channels, col2im adds with the output channels)
        hi = [lo[i] + output_padding[i] for i in range(n)]
        wf = w.reshape((groups, Cg_in, Cg_out) + ksize).swapaxes(1, 2)
        wf = wf[(Ellipsis,) + (slice(None, None, -1),) * n]
        if _winograd_ok(x, ksize, stride, dilation, groups, Cin, Cout):
            from ember._kernels.winograd import conv2d_3x3
            return conv2d_3x3(x, np.ascontiguousarray(wf[0]), lo, hi)
        wr = np.ascontiguousarray(wf).reshape(groups, Cg_out, Cg_in * K)
        return _conv_cols_gemm(x, wr, ksize, [1] * n, lo, hi, dilation, out_size)
    if groups == 1 and _chunked(x, Cout * K, Cin, P):
        return _transpose_chunks(x, w, ksize, stride, padding, dilation, out_size)
    wr = w.reshape(groups, Cg_in, Cg_out * K).transpose(0, 2, 1)       # g, Cg_out*K, Cg_in
    if _use_big_gemm(N, Cout * K, Cg_in):
        xr = _chan_first(x, groups)                                     # g, Cg_in, N*P
        cols = split.matmul(wr, xr)                                     # g, Cg_out*K, N*P
        cols = cols.reshape((Cout,) + ksize + (N,) + tuple(in_size))
        return _col2im(cols, N, Cout, ksize, in_size, stride, dilation, padding, out_size,
                       nfirst=False)
    xr = np.ascontiguousarray(x).reshape(N, groups, Cg_in, P)
    cols = split.matmul(wr, xr)                                         # N, g, Cg_out*K, P
    if K == 1 and all(s == 1 for s in stride) and not any(padding) and \
            tuple(out_size) == tuple(in_size):
        return cols.reshape((N, Cout) + tuple(out_size))
    cols = cols.reshape((N, Cout) + ksize + tuple(in_size))
    return _col2im(cols, N, Cout, ksize, in_size, stride, dilation, padding, out_size)


def _shared_group_weight(x, w, groups):
    """The one group's weight when every group of a grouped convolution holds the same
    weights bit for bit (jacrev under vmap: a shared weight's alias expanded per sample,
    the samples in the groups), else None. The groups then fold into the batch: one
    ungrouped convolution of (N * groups) images, a reshape of x away (2x faster than the
    grouped one through onnxruntime on the NTK benchmark's layers)."""
    if groups < 2 or type(x) is not np.ndarray or type(w) is not np.ndarray or \
            not x.flags.c_contiguous or x.shape[0] == 0:
        return None
    blocks = w.reshape(groups, -1)
    return w[:w.shape[0] // groups] if (blocks == blocks[:1]).all() else None


def convolution(x, w, bias, stride, padding, dilation, transposed, output_padding, groups):
    n = w.ndim - 2
    stride, padding, dilation, output_padding = (_expand(v, n) for v in
                                                 (stride, padding, dilation, output_padding))
    check_conv(x, w, stride, padding, dilation, groups, transposed)
    cout = w.shape[1] * groups if transposed else w.shape[0]
    if bias is not None and np.shape(bias) != (cout,):
        raise RuntimeError(f"Given {'transposed=1, ' if transposed else ''}weight of size "
                           f"{_fmt(w.shape)}, expected bias to be 1-dimensional with {cout} "
                           f"elements, but got bias of size {_fmt(np.shape(bias))} instead")
    w0 = _shared_group_weight(x, w, groups)
    if w0 is not None:
        N, G = x.shape[0], groups
        out = convolution(x.reshape((N * G, x.shape[1] // G) + x.shape[2:]), w0, None,
                          stride, padding, dilation, transposed, output_padding, 1)
        out = out.reshape((N, -1) + out.shape[2:])
        if bias is not None:
            out += np.reshape(bias, (1, -1) + (1,) * n).astype(out.dtype, copy=False)
        return out
    dt = np.result_type(x, w)
    if transposed:
        out = conv_transpose_forward(x, w, stride, padding, dilation, groups, output_padding)
        if bias is not None:
            out += np.reshape(bias, (1, -1) + (1,) * n).astype(out.dtype, copy=False)
    else:
        out = conv_forward(x, w, stride, padding, dilation, groups, bias)
    return out.astype(dt, copy=False)


def conv_weight_grad(x, gy, weight_size, stride, padding, dilation, groups, threads=None,
                     on_ort=False):
    """d<gy, conv(x, w)>/dw: (Cout, Cin/g, *k). ``threads``: for onnxruntime's GEMM;
    ``on_ort``: take it wherever it can run (see ``_wgrad_on_ort``)."""
    n = len(weight_size) - 2
    stride, padding, dilation = (_expand(v, n) for v in (stride, padding, dilation))
    N = x.shape[0]
    Cout = weight_size[0]
    ksize = tuple(weight_size[2:])
    out_size = gy.shape[2:]
    P = int(np.prod(out_size))
    dt = np.result_type(x, gy)
    x = x.astype(dt, copy=False)
    gy = gy.astype(dt, copy=False)
    Og = Cout // groups
    CgK = int(np.prod(weight_size[1:]))
    if _wgrad_on_ort(x, Cout, CgK, ksize, stride, dilation, groups, on_ort):
        # im2col (CK, N*P) and gy as (O, N*P), one MLAS GEMM reading the columns transposed
        cols = _cols(x, ksize, stride, padding, dilation, 1, out_size)[0]
        gw = ort_conv.gemm_nt(_chan_first(gy, 1)[0], cols, threads)
        return gw.reshape(tuple(weight_size))
    winograd = len(ksize) == 2 and x.shape[2:] == out_size and \
        _winograd_ok(x, ksize, stride, dilation, groups, x.shape[1], Cout, "weight_grad")
    # by chunks where measured faster than Winograd's: ResNet's 64x56x56 27-29 vs 60-66 ms,
    # 128x28x28 22-25 vs 28; not 256x14x14 (23-25 vs 16-17)
    if groups == 1 and _chunked(x, Cout, CgK, P) and \
            not (winograd and min(x.shape[1], Cout) >= 256):
        gw = _weight_grad_chunks(x, gy, ksize, stride, padding, dilation, out_size)
        return gw.reshape(tuple(weight_size))
    if winograd:
        from ember._kernels.winograd import conv2d_3x3_weight_grad
        return conv2d_3x3_weight_grad(x, gy, padding, padding)
    if N * Cout * CgK <= _WG_BATCHED_MAX and not _use_big_gemm(N, Cout, CgK):
        # batched per-image products (N, g, Og, CgK), then summed over the batch
        cols = _cols_n(x, ksize, stride, padding, dilation, out_size)
        gyr = np.ascontiguousarray(gy).reshape(N, groups, Og, P)
        prod = split.matmul(gyr, cols.reshape(N, groups, CgK, P).transpose(0, 1, 3, 2))
        gw = np.add.reduce(prod, axis=0)
    else:
        cols = _cols(x, ksize, stride, padding, dilation, groups, out_size)   # g, CgK, N*P
        gyr = _chan_first(gy, groups)                                       # g, Og, N*P
        gw = split.matmul(gyr, cols.transpose(0, 2, 1))                     # g, Og, CgK
    return gw.reshape(tuple(weight_size)).astype(dt, copy=False)


_WG_BATCHED_MAX = 1 << 21


def _wgrad_on_ort(x, O, CK, ksize, stride, dilation, groups, force=False):
    """Whether the weight gradient runs as im2col + onnxruntime GEMM: dense float32 with the
    extra, ``force``d (the concurrent backward: no OpenBLAS threads beside onnxruntime's), or
    where it was measured faster (one thread, loaded 2-core host: MLAS's sgemm 1.05-1.2x
    OpenBLAS's on ResNet's and the CNN's long-depth products, and it does not spin, where
    OpenBLAS's two threads collapsed 2-5x under load); not for shallow columns (CK < 64:
    the CNN's 1->32 layer 1.17 vs 0.46 ms on NumPy's per-image products), nor where Winograd
    runs from 128 channels (ResNet's 128x28x28 17.8 vs 21.3 ms, 256x14x14 13.6 vs 19.1), nor
    images under 64 pixels, whose other convolutions stay on NumPy (ResNet's 512x7x7 backward
    took 40 ms with the GEMM on onnxruntime after OpenBLAS's input gradient, 28.5 ms all on
    NumPy: OpenBLAS's spinning threads meet onnxruntime's)."""
    if groups != 1 or x.size == 0 or not ort_conv.gemm_available(x):
        return False
    if force and own_gemm.kernels() is None:
        return True             # (with ember's GEMM the shapes decide, at any thread count)
    if CK < 64 or math.prod(x.shape[2:]) < ort_conv._MIN_PIXELS:
        return False
    C = x.shape[1]
    return not (len(ksize) == 2 and min(C, O) >= 128 and
                _winograd_ok(x, tuple(ksize), stride, dilation, groups, C, O, "weight_grad"))


# Note [concurrent conv backward]: a convolution's input and weight gradients are
# independent. With two or more threads, once onnxruntime's pool runs (non-spinning MLAS
# pools; NumPy's OpenBLAS held at one thread, Note [one thread plan]), ``conv_backward``
# runs the input gradient on a helper thread and the weight gradient (im2col copy + GEMM)
# on the caller's, each on half of the threads (``split.share``): the NumPy im2col copy,
# one-threaded by itself, then overlaps with the other half's work, and neither kernel
# pays for splitting small products. Layers NumPy serves (images under 64 pixels, 1x1
# kernels) take the same route with one-threaded GEMMs: ResNet's 512x7x7 backward ran on
# one core before (OpenBLAS held) or beside spinning OpenBLAS threads. Each result is
# computed exactly as it would be alone (MLAS never splits a summed axis; a block of rows
# of a one-threaded GEMM is the same computation), so the bits do not depend on the overlap.

def conv_backward(gy, x, w, stride, padding, dilation, groups, output_mask):
    """(grad_input, grad_weight, grad_bias) of ``conv(x, w) + b`` given ``gy``; the ones
    ``output_mask`` leaves out are empty arrays. Concurrent where it pays (Note [concurrent
    conv backward])."""
    n = w.ndim - 2
    stride, padding, dilation = (_expand(v, n) for v in (stride, padding, dilation))
    need_i, need_w, need_b = (bool(m) for m in output_mask)
    ksize = w.shape[2:]
    op = [x.shape[2 + i] - ((gy.shape[2 + i] - 1) * stride[i] - 2 * padding[i]
                            + dilation[i] * (ksize[i] - 1) + 1) for i in range(n)]
    dt = np.result_type(x, w, gy)
    empty = np.zeros(0, dt)

    def grad_input(threads=None):
        gi = conv_transpose_forward(gy, w, stride, padding, dilation, groups, op, threads)
        return gi.astype(dt, copy=False)

    def grad_weight(threads=None):
        return conv_weight_grad(x, gy, w.shape, stride, padding, dilation, groups,
                                threads, threads is not None).astype(dt, copy=False)
    T = split.threads()
    if need_i and need_w and T >= 2 and _concurrent(x, gy, w, dt, groups):
        gi, gw = _side_by_side(grad_input, x.astype(dt, copy=False), gy.astype(dt, copy=False),
                               w.shape, stride, padding, dilation, T)
        gw = gw.astype(dt, copy=False)
    else:
        gi = grad_input() if need_i else empty
        gw = grad_weight() if need_w else empty
    gb = _bias_grad(gy).astype(dt, copy=False) if need_b else empty
    return gi, gw, gb


# the weight gradient's GEMM is shared out in blocks of at least this many rows
_WG_BLOCK_ROWS = 16


def _side_by_side(grad_input, x, gy, weight_size, stride, padding, dilation, T):
    """(grad_input, grad_weight) of a dense float32 convolution, the input gradient on a
    helper thread beside the weight gradient (Note [concurrent conv backward]). The weight
    gradient is im2col + a GEMM over blocks of its rows (output channels), which both
    threads take from a shared queue: the caller from the front once its im2col is copied,
    the helper from the back when its input gradient is done, so neither idles."""
    O, ksize = weight_size[0], tuple(weight_size[2:])
    step = max(_WG_BLOCK_ROWS, -(-O // 4))
    blocks = deque((o, min(o + step, O)) for o in range(0, O, step))
    ready = threading.Event()
    work = {}

    def gemm_blocks(take, n):
        while "gw" in work:
            try:
                o0, o1 = take()
            except IndexError:
                return
            work["gw"][o0:o1] = ort_conv.gemm_nt(work["gy"][o0:o1], work["cols"], n)

    def helper(n):
        with split.share(n):
            gi = grad_input(n)
        ready.wait()
        gemm_blocks(blocks.pop, n)
        return gi
    with numpy_blas.one_thread():
        job = split.pool().submit(helper, T // 2)
        try:
            with split.share(T - T // 2):
                cols = _cols(x, ksize, stride, padding, dilation, 1, gy.shape[2:])[0]
                work.update(cols=cols, gy=_chan_first(gy, 1)[0],
                            gw=np.empty((O, cols.shape[0]), np.float32))
                ready.set()
                gemm_blocks(blocks.popleft, T - T // 2)
        finally:
            ready.set()             # the helper never waits on a failed im2col
            gi = job.result()
    return gi, work["gw"].reshape(tuple(weight_size))


# a backward below this many multiply-adds (input gradient alone) is not worth a hand-off
_CONCURRENT_MIN_MACS = 1 << 22


def _concurrent(x, gy, w, dt, groups):
    """Whether this convolution's backward runs its two gradients side by side (Note
    [concurrent conv backward]): float32, once onnxruntime's pool runs in the process (its
    input gradient is onnxruntime's, or NumPy's GEMMs held at one thread like the rest of
    the plan), and large enough."""
    return dt == np.float32 and groups == 1 and split._own_pools_ran[0] and \
        gy.size * (w.size // max(w.shape[0], 1)) >= _CONCURRENT_MIN_MACS and \
        ort_conv.gemm_available(x.astype(dt, copy=False)) and \
        not ort_conv.available(x.astype(dt, copy=False), w.astype(dt, copy=False), groups)


# Where the input gradient runs on onnxruntime (images of 64 pixels and more, kernels
# larger than 1x1; NCHWc at stride 1), both gradients one after the other on all the
# threads beat the side-by-side halves: ResNet-18's layers at 2 threads, batch 8, ms
# (side by side -> in turn, torch): 64x56x56 33.0 -> 25.7 (19.3), 128x28x28 23.5 -> 21.2
# (17.2), 256x14x14 22.9 -> 18.5 (17.4), 64->128/2 17.8 -> 14.7 (12.5), 256->512/2
# 16.1 -> 13.6 (12.6), 128->256/2 11.6 -> 12.4 (9.8). The NumPy-served layers keep the
# halves (512x7x7: 23.7 side by side, 34.7 in turn; 1x1 kernels likewise).


def _bias_grad(gy):
    """Sum of ``gy`` (N, C, *S) over every dim but 1. float32: the spatial sums as one GEMV
    with a ones vector (BLAS's SIMD lanes; NumPy's float32 reduction over (0, 2) took 0.28
    vs 0.09 ms on the CNN's 64x32x28x28, 1 thread), then the batch summed pairwise."""
    g3 = gy.reshape(gy.shape[0], gy.shape[1], -1)
    if gy.dtype == np.float32 and gy.flags.c_contiguous and g3.shape[2] > 1:
        per_row = split.matmul(g3, np.ones(g3.shape[2], np.float32))
        return np.add.reduce(per_row, axis=0)
    return np.add.reduce(g3, axis=(0, 2))


def _expand(v, n):
    v = list(v) if isinstance(v, (list, tuple)) else [v]
    return v * n if len(v) == 1 and n != 1 else v


# -------------------------------------------------------------------- padding


def constant_pad_nd(x, pad, value=0):
    pad = list(pad)
    if len(pad) % 2:
        raise RuntimeError("Length of pad must be even but instead it equals " + str(len(pad)))
    nd = len(pad) // 2
    if nd > x.ndim:
        raise RuntimeError(f"Padding length should be less than or equal to two times the input "
                           f"dimension but got padding length {len(pad)} and input of dimension "
                           f"{x.ndim}")
    widths = [(0, 0)] * x.ndim
    crop = [slice(None)] * x.ndim
    for i in range(nd):
        d = x.ndim - 1 - i
        lo, hi = pad[2 * i], pad[2 * i + 1]
        size = x.shape[d] + lo + hi
        if size < 0 or x.shape[d] + min(lo, 0) + min(hi, 0) < 0:
            raise RuntimeError(f"The input size {x.shape[d]}, plus negative padding {lo} and "
                               f"{hi} resulted in a negative output size, which is invalid. "
                               f"Check dimension {d} of your input.")
        widths[d] = (max(lo, 0), max(hi, 0))
        crop[d] = slice(max(-lo, 0), x.shape[d] - max(-hi, 0))
    y = x[tuple(crop)]
    if any(w != (0, 0) for w in widths):
        return np.pad(y, widths, constant_values=value)
    return y.copy()


# -------------------------------------------------------------------- pooling


def pool_out_size(L, k, s, p, d, ceil_mode):
    num = L + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil_mode else 0)
    out = num // s + 1
    if ceil_mode and (out - 1) * s >= L + p:
        out -= 1
    return out


def _window_max(x, specs):
    """Max over windows given per spatial dim ``(pos (O, K), valid (O, K))``.

    Returns (values, indices): indices are flat into the trailing spatial dims."""
    nd = len(specs)
    lead = x.shape[:x.ndim - nd]
    S = x.shape[x.ndim - nd:]
    idx = []
    mask = True
    flat = 0
    sp_strides = [int(np.prod(S[i + 1:])) for i in range(nd)]
    for i, (pos, valid) in enumerate(specs):
        shp = [1] * (2 * nd)
        shp[2 * i], shp[2 * i + 1] = pos.shape
        idx.append(pos.reshape(shp))
        mask = mask & valid.reshape(shp)
        flat = flat + pos.reshape(shp) * sp_strides[i]
    g = x[(Ellipsis,) + tuple(idx)]                         # lead, O0, K0, O1, K1 ...
    if x.dtype.kind == "f":
        low = -np.inf
    elif x.dtype.kind == "b":
        low = False
    else:
        low = np.iinfo(x.dtype).min
    g = np.where(mask, g, low)
    flat = np.broadcast_to(flat, g.shape[len(lead):])
    perm = [2 * i for i in range(nd)] + [2 * i + 1 for i in range(nd)]
    L = len(lead)
    g = g.transpose(tuple(range(L)) + tuple(L + p for p in perm))
    O = g.shape[L:L + nd]
    g = g.reshape(lead + O + (-1,))
    flat = flat.transpose(perm).reshape(O + (-1,))
    am = np.argmax(g, axis=-1)
    if x.dtype.kind == "f":
        nan = np.isnan(g)
        if nan.any():
            # torch keeps updating on every NaN: a window's last NaN wins
            last = nan.shape[-1] - 1 - np.argmax(nan[..., ::-1], axis=-1)
            am = np.where(nan.any(-1), last, am)
    vals = np.take_along_axis(g, am[..., None], -1)[..., 0]
    ind = np.take_along_axis(np.broadcast_to(flat, g.shape), am[..., None], -1)[..., 0]
    return np.ascontiguousarray(vals), ind.astype(np.int64)


def _low(dt):
    if dt.kind == "f" or dt.kind == "V":          # "V": ml_dtypes' bfloat16
        return -np.inf
    if dt.kind == "b":
        return False
    return np.iinfo(dt).min


def _padded_phase(x, L, key, stride, lo, size, fill):
    """Phase ``key`` of ``x`` (*lead, *S; ``L`` lead dims) as if padded with ``fill`` to
    ``size`` (``lo`` before each spatial dim): the elements key[i], key[i] + stride[i] ...
    of each padded dim, contiguous, copied straight from ``x`` with only the border filled
    (no padded copy first: ResNet's 3x3/2 stem pool 12 -> 5 ms for its phases)."""
    nd = len(key)
    S = x.shape[L:]
    shape, inner, src = [], [], []
    for i in range(nd):
        s, a, p = stride[i], key[i], lo[i]
        n = -(-(size[i] - a) // s)
        t0 = min(n, max(0, -(-(p - a) // s)))               # first t with a + t s - p >= 0
        t1 = min(n, max(t0, -(-(S[i] + p - a) // s)))       # past the last one inside x
        start = a + t0 * s - p
        shape.append(n)
        inner.append(slice(t0, t1))
        src.append(slice(start, start + (t1 - t0 - 1) * s + 1, s) if t1 > t0 else slice(0, 0))
    out = np.empty(x.shape[:L] + tuple(shape), x.dtype)
    lead = (slice(None),) * L
    out[lead + tuple(inner)] = x[lead + tuple(src)]
    for i in range(nd):
        head = lead + (slice(None),) * i
        if inner[i].start:
            out[head + (slice(0, inner[i].start),)] = fill
        if inner[i].stop < shape[i]:
            out[head + (slice(inner[i].stop, None),)] = fill
    return out


def _pool_view(xp, L, kpos, stride, dilation, O, phases, phase_of=None):
    """The (*lead, *O) elements at kernel position ``kpos`` of every window of ``xp``.

    With a stride above 1 the direct view steps over memory (every other float for stride
    2) and each pass over it is several times slower than over contiguous rows; so ``xp``
    is split once into its stride phases (``phases`` caches them: phase p of a dim holds
    the elements p, p + s, p + 2s ...; ``phase_of(key)`` builds one), and a kernel
    position becomes a plain sub-block of one phase."""
    nd = len(kpos)
    if all(s == 1 for s in stride):
        return xp[(slice(None),) * L + tuple(
            slice(kpos[i] * dilation[i], kpos[i] * dilation[i] + O[i]) for i in range(nd))]
    pos = [kpos[i] * dilation[i] for i in range(nd)]
    key = tuple(pos[i] % stride[i] for i in range(nd))
    arr = phases.get(key)
    if arr is None:
        arr = phases[key] = phase_of(key) if phase_of is not None else np.ascontiguousarray(
            xp[(slice(None),) * L + tuple(slice(key[i], None, stride[i]) for i in range(nd))])
    return arr[(slice(None),) * L + tuple(
        slice(pos[i] // stride[i], pos[i] // stride[i] + O[i]) for i in range(nd))]


def max_pool(x, kernel_size, stride, padding, dilation, ceil_mode):
    """Max pooling of ``x`` (*lead, *S) over its last ``len(kernel_size)`` dims: values and
    flat spatial indices (*lead, *O). Large float inputs split their planes (the lead
    dims) over ember's threads: NumPy's passes release the GIL, and every plane is pooled
    alone, so the result does not depend on the split."""
    nd = len(kernel_size)
    lead = x.shape[:x.ndim - nd]
    rows = math.prod(lead)
    S = x.shape[x.ndim - nd:]
    O = tuple(pool_out_size(S[i], kernel_size[i], stride[i], padding[i], dilation[i],
                            ceil_mode) for i in range(nd))
    if x.dtype.kind != "f" or split.threads() <= 1 or any(o <= 0 for o in O):
        return _max_pool_planes(x, kernel_size, stride, padding, dilation, ceil_mode)
    planes = x.reshape((rows,) + S)
    vals, idx = np.empty((rows,) + O, x.dtype), np.empty((rows,) + O, np.int64)

    def run(lo, hi):
        vals[lo:hi], idx[lo:hi] = _max_pool_planes(planes[lo:hi], kernel_size, stride,
                                                   padding, dilation, ceil_mode)
    split.run_rows(run, rows, x.size)
    return vals.reshape(lead + O), idx.reshape(lead + O)


def _max_pool_planes(x, kernel_size, stride, padding, dilation, ceil_mode):
    """Max over windows: a running ``np.maximum`` over the kernel positions (one view of the
    low-padded input per position, see ``_pool_view``), then each window's first position
    holding the maximum, found by walking the positions backwards with SIMD compares (no
    ``where``). Indices are flat into the spatial dims; ties keep the first, NaN wins (the
    last NaN of a window), padding never wins (like torch's CPU kernel)."""
    nd = len(kernel_size)
    lead = x.shape[:x.ndim - nd]
    S = x.shape[x.ndim - nd:]
    O = [pool_out_size(S[i], kernel_size[i], stride[i], padding[i], dilation[i], ceil_mode)
         for i in range(nd)]
    if any(o <= 0 for o in O) or x.size == 0:
        return (np.zeros(lead + tuple(max(o, 0) for o in O), x.dtype),
                np.zeros(lead + tuple(max(o, 0) for o in O), np.int64))
    sp = [int(np.prod(S[i + 1:])) for i in range(nd)]
    extra = [max(0, (O[i] - 1) * stride[i] + dilation[i] * (kernel_size[i] - 1) + 1
                 - (S[i] + 2 * padding[i])) for i in range(nd)]
    padded = any(padding) or any(extra)
    L = len(lead)
    phase_of = None
    if padded and any(s > 1 for s in stride):
        # strided: the phases come straight from x (``_padded_phase``), no padded copy
        xp = x
        size = [S[i] + 2 * padding[i] + extra[i] for i in range(nd)]
        phase_of = lambda key: _padded_phase(x, L, key, stride, padding, size,  # noqa: E731
                                             _low(x.dtype))
    else:
        x3 = x.reshape((-1, 1) + tuple(S))
        xp = _padded(x3, padding, extra, fill=_low(x.dtype)) if padded else x3
        xp = xp.reshape(lead + xp.shape[2:])
    kpositions = list(np.ndindex(*kernel_size))
    views, offsets, valid = [], [], []
    starts = [np.arange(O[i]) * stride[i] - padding[i] for i in range(nd)]
    phases = {}
    for kpos in kpositions:
        views.append(_pool_view(xp, L, kpos, stride, dilation, O, phases, phase_of))
        offsets.append(sum(kpos[i] * dilation[i] * sp[i] for i in range(nd)))
        ok = None                       # outputs whose window has this position in padding
        if padded:
            for i in range(nd):
                pos = starts[i] + kpos[i] * dilation[i]
                inside = (pos >= 0) & (pos < S[i])
                if not inside.all():
                    shp = [1] * nd
                    shp[i] = O[i]
                    m = inside.reshape(shp)
                    ok = m if ok is None else ok & m
        valid.append(ok)
    vals = views[0].copy()
    for v in views[1:]:
        np.maximum(vals, v, out=vals)
    has_nan = x.dtype.kind == "f" and bool(np.isnan(vals).any())
    K = len(views)
    kdt = np.uint8 if K < 256 else np.int32
    # kidx: the first position k with views[k] == vals (and inside the input), found going
    # backwards: kidx -= eq * (kidx - k), all lanes in place
    kidx = np.full(vals.shape, K, kdt)
    step = np.empty(vals.shape, kdt)
    for k in range(K - 1, -1, -1):
        eq = np.equal(views[k], vals)
        if valid[k] is not None:
            eq &= valid[k]
        np.subtract(kidx, kdt(k), out=step)
        np.multiply(step, eq, out=step)
        np.subtract(kidx, step, out=kidx)
    if has_nan:
        # a window holding NaN takes its last NaN (torch keeps updating on every NaN):
        # kidx += isnan * (k - kidx), exact in modular integer arithmetic
        for k in range(K):
            nan = np.isnan(views[k])
            if valid[k] is not None:
                nan &= valid[k]
            np.subtract(kdt(k), kidx, out=step)
            np.multiply(step, nan, out=step)
            np.add(kidx, step, out=kidx)
    base = 0
    for i in range(nd):
        shp = [1] * nd
        shp[i] = O[i]
        base = base + (starts[i] * sp[i]).reshape(shp)
    idx = np.take(np.asarray(offsets, np.int64), kidx, mode="clip")
    idx += base
    if padded and any(dilation[i] > 1 for i in range(nd)):
        # with dilation a window can lie in the padding only (kidx == K): torch gives -inf
        # and the flat position of the window's first tap at or past 0 in every dim
        empty = kidx == K
        if empty.any():
            first = 0
            for i in range(nd):
                shp = [1] * nd
                shp[i] = O[i]
                st = starts[i]
                st = np.where(st < 0, st + (-st + dilation[i] - 1) // dilation[i] * dilation[i],
                              st)
                first = first + (st * sp[i]).reshape(shp)
            idx = np.where(empty, np.broadcast_to(first, idx.shape), idx)
    return vals, idx


def max_pool_backward(grad, indices, input_size, nd, overlap):
    """Scatter ``grad`` (*lead, *O) to the flat spatial ``indices`` (same shape) of an input
    of ``input_size`` (*lead, *S), S its ``nd`` trailing dims. ``overlap``: windows may
    share a maximum, so contributions accumulate."""
    shape = tuple(input_size)
    g = np.asarray(grad)
    lead = shape[:len(shape) - nd]
    rows = int(np.prod(lead))
    size = int(np.prod(shape[len(lead):]))
    g2 = g.reshape(rows, -1)
    if g.dtype == np.float32 and g.size:
        from ember._kernels.compiled import norm_pool_kernels
        kern = norm_pool_kernels()
        if kern is not None:
            g2 = np.ascontiguousarray(g2)
            i2 = np.ascontiguousarray(np.asarray(indices).reshape(rows, -1), np.int64)
            out = np.zeros((rows, size), g.dtype)
            bad = split.run_rows(lambda r0, r1: kern.max_pool_backward(g2, i2, r0, r1, out),
                                 rows, out.size + g.size)
            if any(bad):
                raise IndexError(f"max_pool_backward: index out of range for an input of "
                                 f"size {list(shape)}")
            return out.reshape(shape)
    gidx = np.asarray(indices).reshape(rows, -1) + (np.arange(rows) * size)[:, None]
    if overlap:
        out = np.bincount(gidx.ravel(), weights=g2.ravel(), minlength=rows * size)
        return out.astype(g.dtype, copy=False).reshape(shape)
    out = np.zeros(rows * size, dtype=g.dtype)
    out[gidx.ravel()] = g2.ravel()
    return out.reshape(shape)


def _window_slices(lead_ndim, kpos, stride, out):
    """Index of the elements at kernel position ``kpos`` of every window (strided view)."""
    return (slice(None),) * lead_ndim + tuple(
        slice(kpos[i], kpos[i] + (out[i] - 1) * stride[i] + 1, stride[i])
        for i in range(len(kpos)))


def avg_pool_exact(x, kernel_size, stride):
    """Mean over windows lying inside ``x`` (*lead, *S) -> (*lead, *O), no padding: the sum
    of one strided view per kernel position, divided by the window size."""
    nd = len(kernel_size)
    S = x.shape[x.ndim - nd:]
    out = [(S[i] - kernel_size[i]) // stride[i] + 1 for i in range(nd)]
    L = x.ndim - nd
    positions = list(np.ndindex(*kernel_size))
    acc = np.array(x[_window_slices(L, positions[0], stride, out)], copy=True)
    for kpos in positions[1:]:
        acc += x[_window_slices(L, kpos, stride, out)]
    acc /= acc.dtype.type(len(positions))
    return acc


def avg_pool_exact_backward(g, input_size, kernel_size, stride):
    """Gradient of ``avg_pool_exact``: each window's gradient / window size, added back onto
    the window's elements (assigned when windows do not overlap)."""
    nd = len(kernel_size)
    L = len(input_size) - nd
    out = g.shape[L:]
    positions = list(np.ndindex(*kernel_size))
    share = g / g.dtype.type(len(positions))
    overlap = any(kernel_size[i] > stride[i] for i in range(nd))
    gx = np.zeros(tuple(input_size), g.dtype)
    for kpos in positions:
        sl = _window_slices(L, kpos, stride, out)
        if overlap:
            gx[sl] += share
        else:
            gx[sl] = share
    return gx


def adaptive_ranges(L, O):
    i = np.arange(O)
    start = (i * L) // O
    end = -((-(i + 1) * L) // O)
    return start, end


def adaptive_max_pool(x, output_size):
    nd = len(output_size)
    if x.size == 0 or 0 in output_size:
        shape = x.shape[:x.ndim - nd] + tuple(output_size)
        return np.zeros(shape, x.dtype), np.zeros(shape, np.int64)
    specs = []
    for i in range(nd):
        L = x.shape[x.ndim - nd + i]
        start, end = adaptive_ranges(L, output_size[i])
        K = int((end - start).max()) if output_size[i] else 1
        pos = start[:, None] + np.arange(K)[None, :]
        valid = pos < end[:, None]
        specs.append((np.clip(pos, 0, max(L - 1, 0)), valid))
    return _window_max(x, specs)
