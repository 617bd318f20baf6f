"""Kernels of the fused normalisation and loss records (see ember/_ops/nn_norm.py and
ember/_ops/nn_loss.py). NumPy, except float32 training batch norm, which runs compiled
kernels (ember/_kernels/compiled/norm_pool.py, split over channels and threads) when the
``fast`` extra is installed."""
import math

import numpy as np

from ember._kernels import blas_pool, split, torch_sum


def _acc(a):
    """Accumulation dtype: float32 for half types, the input's otherwise."""
    return np.float32 if a.dtype.itemsize < 4 else a.dtype


# -------------------------------------------------------------------- batch norm

def _channel_shape(x):
    return (1, x.shape[1]) + (1,) * (x.ndim - 2)


def _chan_sum(a):
    """Per-channel sum over every dim but 1 (contiguous inner reduction first)."""
    if a.ndim == 2:
        return np.add.reduce(a, axis=0)
    if a.flags.c_contiguous:
        a = a.reshape(a.shape[:2] + (int(np.prod(a.shape[2:])),))
        return np.add.reduce(np.add.reduce(a, axis=2), axis=0)
    return np.add.reduce(a, axis=(0,) + tuple(range(2, a.ndim)))


def _chan_dot(a, b):
    """Per-channel sum of a * b over every dim but 1 (no temporary of the full size)."""
    if a.ndim == 2:
        return np.einsum("nc,nc->c", a, b)
    if a.flags.c_contiguous and b.flags.c_contiguous:
        a3 = a.reshape(a.shape[:2] + (int(np.prod(a.shape[2:])),))
        b3 = b.reshape(a3.shape)
        return np.add.reduce(np.einsum("ncp,ncp->nc", a3, b3), axis=0)
    return _chan_sum(a * b)


def _compiled(x, *others):
    """The compiled batch-norm kernels when they serve ``x`` (and the arrays ``others``, of
    its shape): float32, C-contiguous, non-empty (NumPy's path otherwise)."""
    if x.dtype != np.float32 or x.ndim < 2 or x.size == 0 or not x.flags.c_contiguous:
        return None
    for a in others:
        if not isinstance(a, np.ndarray) or a.dtype != np.float32 or a.shape != x.shape or \
                not a.flags.c_contiguous:
            return None
    from ember._kernels.compiled import norm_pool_kernels
    return norm_pool_kernels()


def _per_channel(v, C, fill):
    return np.full(C, fill, np.float32) if v is None else \
        np.ascontiguousarray(np.asarray(v).reshape(C), np.float32)


def _batch_norm_compiled(kern, x, weight, bias, eps):
    """Training batch norm in one kernel call per channel range (split over threads)."""
    C = x.shape[1]
    x3 = x.reshape(x.shape[0], C, -1)
    y = np.empty_like(x3)
    mean, var = np.empty(C, np.float32), np.empty(C, np.float32)
    w, b = _per_channel(weight, C, 1), _per_channel(bias, C, 0)
    split.run_rows(lambda c0, c1: kern.bn_forward(x3, w, b, float(eps), c0, c1, y, mean, var),
                   C, x.size)
    return y.reshape(x.shape), mean, var


# Note [float32 batch-norm statistics]: torch's float32 training batch norm of an input
# with a spatial size above 1, by experiment (bit for bit on every channel and element
# tried, shapes (1, 3, 8) to (4, 2, 3, 3, 2)): the mean is the float64 sum of the channel
# over the count, rounded; the variance's sum adds, in float64, the float32 squares of the
# float32 differences from that mean, and the variance is that sum rounded to float32 over
# the count in float32; invstd = 1 / sqrt(var + eps) in double, rounded; the output is
# fma(x, a, fma(-mean, a, bias)) with a = invstd * weight in float32 (an fma of float32
# operands is the double product, exact, plus the addend, rounded once); the running
# variance is fma(momentum, unbiased, (1 - momentum) * running) in float32 (in
# ember/nn/functional/_norm.py). (N, C) inputs (and (N, C, 1)) take another path in torch,
# with row chunks, not matched. The compiled kernel (norm_pool.bn_forward, float32 training
# with the ``fast`` extra) rounds the same way, with a true fma; the form below serves
# float32 training otherwise.
def _batch_norm_f32(x, weight, bias, eps):
    if not x.flags.c_contiguous:
        return _batch_norm_f32_strided(x, weight, bias, eps)
    N, C = x.shape[:2]
    rows = x.reshape(N * C, -1)                    # one row per (sample, channel)
    M = x.size // C
    sums = np.empty(N * C)
    d = np.empty(rows.shape, np.float32)

    def row_sums(src):                             # float64 sums, cast as they are read
        return lambda lo, hi: np.add.reduce(src[lo:hi], axis=1, dtype=np.float64,
                                            out=sums[lo:hi])
    split.run_rows(row_sums(rows), N * C, x.size)
    mean = (np.add.reduce(sums.reshape(N, C), axis=0) / M).astype(np.float32)
    mean_rows = np.tile(mean, N)[:, None]

    def squares(lo, hi):
        np.subtract(rows[lo:hi], mean_rows[lo:hi], out=d[lo:hi])
        np.multiply(d[lo:hi], d[lo:hi], out=d[lo:hi])
        np.add.reduce(d[lo:hi], axis=1, dtype=np.float64, out=sums[lo:hi])
    with np.errstate(over="ignore"):
        split.run_rows(squares, N * C, x.size)
    var = np.add.reduce(sums.reshape(N, C), axis=0).astype(np.float32) / np.float32(M)
    invstd = (1.0 / np.sqrt(var.astype(np.float64) + eps)).astype(np.float32)
    a = invstd if weight is None else invstd * np.asarray(weight, np.float32).reshape(C)
    a64 = a.astype(np.float64)
    b64 = np.zeros(C) if bias is None else np.asarray(bias, np.float32).reshape(C).astype(
        np.float64)
    shift = (b64 - mean.astype(np.float64) * a64).astype(np.float32).astype(np.float64)
    a_rows, shift_rows = np.tile(a64, N)[:, None], np.tile(shift, N)[:, None]
    block = max(1, _BN_BLOCK // max(rows.shape[1], 1))

    def normalize(lo, hi):                         # x a + shift in float64, by blocks of
        tmp = np.empty((min(block, hi - lo), rows.shape[1]))      # rows the cache keeps
        for r in range(lo, hi, block):
            e = min(r + block, hi)
            t = tmp[:e - r]
            np.multiply(rows[r:e], a_rows[r:e], out=t)
            t += shift_rows[r:e]
            d[r:e] = t
    split.run_rows(normalize, N * C, x.size)
    return d.reshape(x.shape), mean, var


_BN_BLOCK = 1 << 15     # float64 values of ``normalize``'s temporary (256 KiB)


def _batch_norm_f32_strided(x, weight, bias, eps):
    cs = _channel_shape(x)
    C = x.shape[1]
    M = x.size // C
    x64 = x.astype(np.float64)
    mean = (_chan_sum(x64) / M).astype(np.float32)
    d = np.subtract(x, mean.reshape(cs))
    np.multiply(d, d, out=d)
    var = _chan_sum(d.astype(np.float64)).astype(np.float32) / np.float32(M)
    invstd = (1.0 / np.sqrt(var.astype(np.float64) + eps)).astype(np.float32)
    a = invstd if weight is None else invstd * np.asarray(weight, np.float32).reshape(C)
    a64 = a.astype(np.float64)
    b64 = np.zeros(C) if bias is None else np.asarray(bias, np.float32).reshape(C).astype(
        np.float64)
    shift = (b64 - mean.astype(np.float64) * a64).astype(np.float32)
    np.multiply(x64, a64.reshape(cs), out=x64)
    x64 += shift.astype(np.float64).reshape(cs)
    return x64.astype(np.float32), mean, var


def batch_norm(x, weight, bias, running_mean, running_var, training, momentum, eps):
    """Returns (output, batch mean, biased batch variance); in eval mode the statistics
    are the running ones. y = x * scale + shift with per-channel scale/shift."""
    if training:
        kern = _compiled(x)
        if kern is not None:
            return _batch_norm_compiled(kern, x, weight, bias, eps)
        if x.dtype == np.float32 and x.ndim > 2 and x.size and \
                x.size // (x.shape[0] * x.shape[1]) > 1:
            return _batch_norm_f32(x, weight, bias, eps)
    cs = _channel_shape(x)
    acc = _acc(x)
    xa = x.astype(acc, copy=False)
    if training:
        M = x.size // x.shape[1] if x.shape[1] else 0
        mean = _chan_sum(xa) / max(M, 1) if M else np.full(x.shape[1], np.nan, acc)
        xc = np.subtract(xa, mean.reshape(cs).astype(acc, copy=False))
        var = _chan_dot(xc, xc) / max(M, 1) if M else mean.copy()
    else:
        mean = np.asarray(running_mean, dtype=acc)
        var = np.asarray(running_var, dtype=acc)
        xc = None
    invstd = 1.0 / np.sqrt(var + eps)
    scale = invstd if weight is None else invstd * np.asarray(weight, dtype=acc)
    if xc is not None:
        y = xc
        y *= scale.reshape(cs).astype(acc, copy=False)
        if bias is not None:
            y += np.asarray(bias, dtype=acc).reshape(cs)
    else:
        shift = -mean * scale
        if bias is not None:
            shift = shift + np.asarray(bias, dtype=acc)
        y = np.multiply(xa, scale.reshape(cs).astype(acc, copy=False))
        y += shift.reshape(cs).astype(acc, copy=False)
    return (np.ascontiguousarray(y, dtype=x.dtype), mean.astype(x.dtype),
            var.astype(x.dtype))


def batch_norm_backward(g, x, weight, mean, var, training, eps):
    """(grad_input, grad_weight, grad_bias) of batch norm; ``mean``/``var``: the running
    statistics (eval), or None to use the batch's (training).

    Training: gx = a (g - mean(g) - xc k) with a = weight * invstd and
    k = invstd^2 mean(g xc), computed in place on the one fresh buffer xc = x - mean."""
    if training and mean is not None:
        kern = _compiled(x, g)
        if kern is not None:
            C = x.shape[1]
            x3, g3 = x.reshape(x.shape[0], C, -1), g.reshape(x.shape[0], C, -1)
            gx = np.empty_like(x3)
            gw, gb = np.empty(C, np.float32), np.empty(C, np.float32)
            m, v = _per_channel(mean, C, 0), _per_channel(var, C, 1)
            w = _per_channel(weight, C, 1)
            split.run_rows(lambda c0, c1: kern.bn_backward(g3, x3, m, v, w, float(eps), c0,
                                                           c1, gx, gw, gb), C, x.size)
            return gx.reshape(x.shape), gw, gb
    if training and mean is not None and _rows_f32(x, g):
        return _batch_norm_backward_f32(g, x, weight, mean, var, eps)
    cs = _channel_shape(x)
    acc = _acc(x)
    xa = x.astype(acc, copy=False)
    ga = np.broadcast_to(np.asarray(g), x.shape).astype(acc, copy=False)
    M = x.size // x.shape[1] if x.shape[1] else 0
    if not M:                                             # empty batch: nothing flows back
        z = np.zeros(x.shape[1], x.dtype)
        return np.zeros(x.shape, x.dtype), z, z.copy()
    if mean is None:                                      # training: batch statistics
        mean = _chan_sum(xa) / max(M, 1)
        xc = np.subtract(xa, mean.reshape(cs).astype(acc, copy=False))
        var = _chan_dot(xc, xc) / max(M, 1)
    else:
        mean = np.asarray(mean, dtype=acc)
        xc = np.subtract(xa, mean.reshape(cs))
    invstd = (1.0 / np.sqrt(np.asarray(var, dtype=acc) + eps)).astype(acc)
    w = np.ones_like(invstd) if weight is None else np.asarray(weight, dtype=acc)
    sum_g = _chan_sum(ga)
    dot = _chan_dot(ga, xc)                               # sum(g * (x - mean))
    gw = dot * invstd
    a = (w * invstd).astype(acc)
    if training and M:
        k = (invstd * invstd * dot / M).astype(acc)
        gx = xc
        gx *= (-k).reshape(cs)
        gx += ga
        gx -= (sum_g / M).astype(acc).reshape(cs)
        gx *= a.reshape(cs)
    else:
        gx = np.multiply(ga, a.reshape(cs))
    # half inputs: the parameter gradients stay float32 sums (rounded to the parameters'
    # dtype by the engine, once); torch's channels-last bfloat16 kernel rounds the bias's
    # to bfloat16 on the way
    if acc is not x.dtype and x.dtype.name == "bfloat16" and x.ndim > 2 and \
            not x.flags.c_contiguous and np.moveaxis(x, 1, -1).flags.c_contiguous:
        sum_g = sum_g.astype(x.dtype).astype(acc)
    return (gx.astype(x.dtype, copy=False), gw.astype(acc), sum_g.astype(acc))


def _rows_f32(x, *others):
    """Whether float32 ``x`` and ``others`` (its shape) are C-contiguous with a spatial size:
    the NumPy kernels below then run by rows (sample, channel) over ember's threads."""
    return x.dtype == np.float32 and x.ndim > 2 and x.size > 0 and x.flags.c_contiguous \
        and all(isinstance(a, np.ndarray) and a.dtype == np.float32 and a.shape == x.shape
                and a.flags.c_contiguous for a in others)


def _batch_norm_backward_f32(g, x, weight, mean, var, eps):
    """Training ``batch_norm_backward`` of C-contiguous float32 arrays by rows (sample,
    channel) over ember's threads: the same operations as the general path, so the same
    bits, each pass over a block of rows while it is in the cache."""
    N, C = x.shape[:2]
    rows, grows = x.reshape(N * C, -1), g.reshape(N * C, -1)
    M = x.size // C
    mean = np.asarray(mean, np.float32).reshape(C)
    invstd = (1.0 / np.sqrt(np.asarray(var, np.float32) + np.float32(eps))).astype(
        np.float32).reshape(C)
    w = np.ones_like(invstd) if weight is None else np.asarray(weight, np.float32).reshape(C)
    gx = np.empty(rows.shape, np.float32)
    sum_rows, dot_rows = np.empty(N * C, np.float32), np.empty(N * C, np.float32)
    mean_rows = np.tile(mean, N)[:, None]

    def sums(lo, hi):                              # xc = x - mean (kept in gx), the sums
        np.subtract(rows[lo:hi], mean_rows[lo:hi], out=gx[lo:hi])
        np.add.reduce(grows[lo:hi], axis=1, out=sum_rows[lo:hi])
        np.einsum("rp,rp->r", grows[lo:hi], gx[lo:hi], out=dot_rows[lo:hi])
    split.run_rows(sums, N * C, x.size)
    sum_g = np.add.reduce(sum_rows.reshape(N, C), axis=0)
    dot = np.add.reduce(dot_rows.reshape(N, C), axis=0)
    gw = dot * invstd
    a = w * invstd
    k = invstd * invstd * dot / M
    k_rows, m_rows = np.tile(-k, N)[:, None], np.tile(sum_g / M, N)[:, None]
    a_rows = np.tile(a, N)[:, None]

    def grad_input(lo, hi):
        out = gx[lo:hi]
        out *= k_rows[lo:hi]
        out += grows[lo:hi]
        out -= m_rows[lo:hi]
        out *= a_rows[lo:hi]
    split.run_rows(grad_input, N * C, x.size)
    return gx.reshape(x.shape), gw.astype(np.float32), sum_g.astype(np.float32)


# -------------------------------------------------------------------- layer norm

def layer_norm(x, normalized_shape, weight, bias, eps):
    k = len(normalized_shape)
    if tuple(x.shape[x.ndim - k:]) != tuple(normalized_shape) or x.ndim < k:
        raise RuntimeError(
            f"Given normalized_shape={list(normalized_shape)}, expected input with shape "
            f"[*, {', '.join(str(s) for s in normalized_shape)}], but got input of size"
            f"[{', '.join(str(s) for s in x.shape)}]")
    if not x.size:
        return np.zeros(x.shape, x.dtype)
    fast = _ln_compiled(x, weight, bias)
    if fast is not None:
        x2, w, b = _ln_rows(x, k, weight, bias)
        y = np.empty_like(x2)
        pool = _ln_pool() if x2.size >= 2 * _LN_GRAIN else None    # (else one thread)
        R, C = x2.shape
        if pool is None or not blas_pool.run(pool.layer_norm_forward, blas_pool.context(
                x2, w, b, y, R, C, float(eps)), R, max(1, _LN_GRAIN // max(C, 1))):
            fast.forward(x2, w, b, float(eps), y)
        return y.reshape(x.shape)
    y, _ = _ln_normalize(x, k, eps)               # y is a fresh (rows, N) buffer
    if weight is not None:
        y *= np.reshape(weight, -1)
    if bias is not None:
        y += np.reshape(bias, -1)
    return np.ascontiguousarray(y.reshape(x.shape), dtype=x.dtype)


def _ln_compiled(x, *others):
    """The compiled layer-norm kernels (ember/_kernels/compiled/layer_norm.py) when they
    apply: float32 ``x`` and float32 (or absent) ``others``, numba installed and the
    compiled kernels switched on; else None."""
    if x.dtype != np.float32:
        return None
    for o in others:
        if o is not None and getattr(o, "dtype", None) != np.float32:
            return None
    from ember._kernels import compiled
    return compiled.module("layer_norm")


# layer norm on OpenBLAS's threads (Note [one pool] in blas_pool.py): at least this many
# elements per thread, and the backward's weight/bias gradient partial sums per this many rows
_LN_GRAIN = 1 << 15
_LN_BLOCK = 32


def _ln_pool():
    """The pool's cfuncs (compiled/pool.py) when the layer-norm kernels may run there."""
    return blas_pool.kernels()


def _ln_rows(x, k, weight, bias):
    """x as contiguous (rows, N), and weight and bias as contiguous (N,) (ones and zeros when
    absent) for the compiled kernels."""
    n = math.prod(x.shape[x.ndim - k:])
    x2 = np.ascontiguousarray(x).reshape(-1, n)
    w = np.ones(n, np.float32) if weight is None else np.ascontiguousarray(weight).reshape(n)
    b = np.zeros(n, np.float32) if bias is None else np.ascontiguousarray(bias).reshape(n)
    return x2, w, b


def _ln_normalize(x, k, eps):
    """x as (rows, N) rows over the last ``k`` dims, normalised: (x - mean) * rstd as a fresh
    array, and rstd = 1 / sqrt(var + eps) as (rows, 1)."""
    n = math.prod(x.shape[x.ndim - k:])
    xa = x.astype(_acc(x), copy=False).reshape(-1, n)
    y = np.subtract(xa, xa.mean(axis=1, keepdims=True))
    rstd = np.einsum("ij,ij->i", y, y).reshape(-1, 1)
    rstd /= n
    rstd += eps
    np.sqrt(rstd, out=rstd)
    np.reciprocal(rstd, out=rstd)
    y *= rstd
    return y, rstd


def layer_norm_backward(g, x, normalized_shape, weight, eps, need_input=True,
                        need_weight=True, need_bias=True):
    """Gradients of layer_norm w.r.t. (input, weight, bias), the statistics recomputed from
    ``x``: gx = rstd (gy - mean(gy) - xhat mean(gy xhat)) with gy = g * weight."""
    k = len(normalized_shape)
    dt = x.dtype
    wshape = tuple(normalized_shape)
    if not x.size:
        zw = np.zeros(wshape, dt)
        return np.zeros(x.shape, dt), zw, zw.copy()
    n = math.prod(wshape)
    fast = _ln_compiled(x, weight, g)
    if fast is not None:
        x2, w, _ = _ln_rows(x, k, weight, None)
        g2 = np.ascontiguousarray(np.broadcast_to(g, x.shape)).reshape(x2.shape)
        gx = np.empty_like(x2)
        R = x2.shape[0]
        pool = _ln_pool() if x2.size >= 2 * _LN_GRAIN else None
        if pool is not None:        # fixed row blocks, partial sums added in block order
            blocks = -(-R // _LN_BLOCK)
            gwp, gbp = np.zeros((blocks, n), np.float32), np.zeros((blocks, n), np.float32)
            blas_pool.run(pool.layer_norm_backward, blas_pool.context(
                g2, x2, w, gx, gwp, gbp, R, n, float(eps), _LN_BLOCK), blocks,
                max(1, _LN_GRAIN // max(n * _LN_BLOCK, 1)))
            gw, gb = np.add.reduce(gwp, 0, np.float64), np.add.reduce(gbp, 0, np.float64)
        else:
            gw, gb = np.zeros(n), np.zeros(n)
            fast.backward(g2, x2, w, float(eps), gx, gw, gb)
        zero = np.zeros(wshape, dt)
        return (gx.reshape(x.shape) if need_input else np.zeros(x.shape, dt),
                gw.astype(dt).reshape(wshape) if need_weight and weight is not None else zero,
                gb.astype(dt).reshape(wshape) if need_bias else zero.copy())
    xhat, rstd = _ln_normalize(x, k, eps)
    g2 = np.broadcast_to(g, x.shape).astype(xhat.dtype, copy=False).reshape(-1, n)
    gw = gb = None
    if need_weight and weight is not None:
        gw = np.einsum("ij,ij->j", g2, xhat).reshape(wshape).astype(dt)
    if need_bias:
        gb = g2.sum(axis=0).reshape(wshape).astype(dt)
    gx = None
    if need_input:
        gy = np.multiply(g2, np.reshape(weight, -1)) if weight is not None else \
            np.array(g2, copy=True)
        m2 = np.einsum("ij,ij->i", gy, xhat).reshape(-1, 1)
        m2 /= n
        gy -= gy.mean(axis=1, keepdims=True)
        xhat *= m2                                  # xhat mean(gy xhat)
        gy -= xhat
        gy *= rstd
        gx = np.ascontiguousarray(gy.reshape(x.shape), dtype=dt)
    if gx is None:
        gx = np.zeros(x.shape, dt)
    if gw is None:
        gw = np.zeros(wshape, dt)
    if gb is None:
        gb = np.zeros(wshape, dt)
    return gx, gw, gb


# -------------------------------------------------------------------- nll loss

_RED = {0: "none", 1: "mean", 2: "sum"}


def _nll_prep(x, target, weight, ignore_index):
    """Flattened (M, C) view of ``x`` with class dim last, flat targets, their weights
    (zero where ignored) and the safe target indices."""
    if x.ndim == 1:
        x2 = x.reshape(1, -1)
    else:
        x2 = np.moveaxis(x, 1, -1).reshape(-1, x.shape[1])
    C = x2.shape[1]
    t = np.asarray(target).reshape(-1).astype(np.int64)
    mask = t != ignore_index
    bad = mask & ((t < 0) | (t >= C))
    if bad.any():
        raise IndexError(f"Target {t[bad][0]} is out of bounds.")
    ts = np.where(mask, t, 0)
    w = np.ones(C, dtype=x.dtype) if weight is None else np.asarray(weight, dtype=x.dtype)
    tw = np.where(mask, w[ts] if C else 0, 0).astype(x.dtype)
    return x2, ts, tw


# Note [nll cascade]: torch's CPU nll_loss adds the losses of its rows (the targets flattened
# in (N, d1, ...) order) in the input's dtype into 8 partial sums, one per level: a row goes
# into level 0, and at a row whose index i is a multiple of S = 2**p (p = max(4, ceil(log2 n)
# // 8)), level j then moves into level j + 1 for as long as i is a multiple of S**(j + 1)
# (row 0 climbs to the top); ignored rows add nothing and move nothing. The total is level 0
# plus level 1 plus ... in that order; the mean divides it by the count of rows kept, or by
# the weights' total summed the same way. (Found by experiment: every sum, mean and gradient
# of float32/64, float16 and bfloat16 batches of 1 to 100000 rows and of (N, C, d...) maps,
# with weights and ignored rows, as torch's.) So a loss printed in full is torch's bit for
# bit, and a half-precision sum does not stall as a running sum does (bfloat16, 1000 rows:
# 5056, not 3744).

_NLL_LEVELS = 8


def _running_sum(start, a):
    """start + a[0] + a[1] + ... rounded at each step in a's dtype."""
    if not a.size:
        return start
    if start:                                   # (a start of 0 adds exactly)
        a = a.copy()
        a[0] = start + a[0]
    return np.add.accumulate(a)[-1]


def nll_cascade_sum(v, kept=None):
    """Note [nll cascade]: the total of per-row values ``v`` (n,) in their dtype; ``kept``
    (n,) bool marks the rows not ignored (their values are zero in ``v``)."""
    dt = v.dtype
    zero = dt.type(0)
    n = v.size
    if not n:
        return zero
    top = v[0] if kept is None or kept[0] else zero      # row 0 climbs to the top level
    S = 1 << max(4, (n - 1).bit_length() // _NLL_LEVELS)
    if n <= S:                                  # no row moves a level: rows 1.. then row 0
        return _running_sum(zero, v[1:]) + top
    a = v[1:]                                   # the level's addends, rows 1..n-1
    total = zero
    if kept is None or kept.all():              # every chunk moves up: no flags to follow
        for _ in range(_NLL_LEVELS - 1):
            K = a.size // S
            if not K:
                break
            sums = np.add.accumulate(a[:K * S].reshape(K, S), axis=1)[:, -1]
            total = total + _running_sum(zero, a[K * S:])
            a = sums
        else:
            return total + _running_sum(top, a)
        return (total + _running_sum(zero, a)) + top
    f = kept[1:]
    for _ in range(_NLL_LEVELS - 1):
        K = a.size // S
        if not K:
            total = total + _running_sum(zero, a)
            a = a[:0]
            break
        grid = a[:K * S].reshape(K, S)
        sums = np.add.accumulate(grid, axis=1)[:, -1]       # each chunk from zero
        ends = f[S - 1:K * S:S]                              # its last row moves it up
        if not ends.all():
            for k in np.flatnonzero(~ends[:-1]) + 1:         # a chunk after one that did
                sums[k] = _running_sum(sums[k - 1], grid[k])     # not move continues it
        total = total + _running_sum(zero if ends[-1] else sums[-1], a[K * S:])
        a = sums if ends.all() else np.where(ends, sums, zero).astype(dt)
        f = ends
    return total + _running_sum(top, a)         # (levels left empty add zeros)


def _nll_total_weight(tw, kept, weight):
    """The mean's divisor: the count of rows kept, or (with class weights) their weights'
    cascade sum (Note [nll cascade])."""
    if weight is None:
        return tw.dtype.type(np.count_nonzero(kept))
    return nll_cascade_sum(tw, kept)


def nll_loss(x, target, weight, reduction, ignore_index):
    x2, ts, tw = _nll_prep(x, target, weight, ignore_index)
    picked = x2[np.arange(x2.shape[0]), ts] if x2.shape[1] else np.zeros(len(ts), x.dtype)
    losses = -picked * tw
    if reduction == 0:
        return np.array(losses.reshape(np.shape(target)), dtype=x.dtype)
    kept = np.asarray(target).reshape(-1) != ignore_index
    total = nll_cascade_sum(losses.astype(x.dtype, copy=False), kept)
    weight_total = _nll_total_weight(tw, kept, weight)
    if reduction == 2:
        return np.asarray(total, dtype=x.dtype)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.asarray(total / weight_total, dtype=x.dtype)


def nll_loss_backward(grad, target, weight, shape, reduction, ignore_index):
    """Dense gradient of nll_loss with respect to its input (linear in ``grad``)."""
    grad = np.asarray(grad)
    dt = grad.dtype
    z = np.zeros(tuple(shape), dtype=dt)
    x2 = z.reshape(1, -1) if z.ndim == 1 else np.moveaxis(z, 1, -1).reshape(-1, shape[1])
    _, ts, tw = _nll_prep(x2, target, weight, ignore_index)
    if reduction == 0:
        g = grad.reshape(-1)
    elif reduction == 2:
        g = np.broadcast_to(grad, tw.shape)
    else:
        total = _nll_total_weight(tw, np.asarray(target).reshape(-1) != ignore_index, weight)
        with np.errstate(divide="ignore", invalid="ignore"):
            g = np.broadcast_to(grad / total, tw.shape)
    out = np.zeros_like(x2)
    if out.shape[1]:
        with np.errstate(invalid="ignore"):     # every target ignored: 0, not 0 * inf
            out[np.arange(out.shape[0]), ts] = np.where(tw != 0, -g * tw, 0)
    if len(shape) == 1:
        return out.reshape(shape)
    moved = out.reshape((shape[0],) + tuple(shape[2:]) + (shape[1],))
    return np.ascontiguousarray(np.moveaxis(moved, -1, 1))


# -------------------------------------------------------------------- CTC loss

def _ctc_targets(targets, target_lengths, N):
    tl = np.asarray(target_lengths, dtype=np.int64).reshape(-1)
    t = np.asarray(targets).astype(np.int64)
    S = int(tl.max()) if tl.size else 0
    padded = np.zeros((N, max(S, 1)), dtype=np.int64)
    if t.ndim == 1:
        offs = np.concatenate([[0], np.cumsum(tl)[:-1]])
        for n in range(N):        # ragged unpacking (cheap: no per-element work)
            padded[n, :tl[n]] = t[offs[n]:offs[n] + tl[n]]
    else:
        padded[:, :min(S, t.shape[1])] = t[:, :S]
    return padded, tl, S


def _ctc_setup(log_probs, targets, input_lengths, target_lengths, blank):
    lp = log_probs if log_probs.ndim == 3 else log_probs[:, None, :]
    T, N, C = lp.shape
    il = np.asarray(input_lengths, dtype=np.int64).reshape(-1)
    tgt, tl, S = _ctc_targets(targets, target_lengths, N)
    if (il > T).any():
        raise RuntimeError(f"Expected input_lengths to have value at most {T}, but got value "
                           f"{int(il.max())} (while checking arguments for ctc_loss_cpu)")
    L = 2 * S + 1
    ext = np.full((N, L), blank, dtype=np.int64)          # l' = blank, l1, blank, l2 ...
    ext[:, 1::2] = tgt[:, :S]
    s_idx = np.arange(L)
    valid = s_idx[None, :] < (2 * tl[:, None] + 1)
    # the skip transition s-2 -> s is allowed for labels differing from the one two back
    skip = np.zeros((N, L), dtype=bool)
    skip[:, 2:] = (ext[:, 2:] != blank) & (ext[:, 2:] != ext[:, :-2])
    lpe = np.take_along_axis(lp.astype(np.float64), np.broadcast_to(ext[None], (T, N, L)),
                             axis=2)                      # (T, N, L)
    return lp, T, N, C, il, tl, L, ext, valid, skip, lpe


def _lse(*xs):
    m = np.maximum.reduce(xs)
    ms = np.where(np.isfinite(m), m, 0)
    with np.errstate(divide="ignore"):
        return ms + np.log(sum(np.exp(x - ms) for x in xs))


def _ctc_alpha(T, N, L, il, tl, valid, skip, lpe):
    ninf = -np.inf
    alpha = np.full((T, N, L), ninf)
    if T == 0:
        return alpha
    a0 = np.full((N, L), ninf)
    a0[:, 0] = lpe[0, :, 0]
    if L > 1:
        a0[:, 1] = np.where(tl > 0, lpe[0, :, 1], ninf)
    alpha[0] = a0
    for t in range(1, T):
        prev = alpha[t - 1]
        p1, p2 = np.full((N, L), ninf), np.full((N, L), ninf)    # (slices: L may be 1)
        p1[:, 1:], p2[:, 2:] = prev[:, :-1], prev[:, :-2]
        p2 = np.where(skip, p2, ninf)
        cur = _lse(prev, p1, p2) + lpe[t]
        cur = np.where(valid, cur, ninf)
        alpha[t] = np.where((t < il)[:, None], cur, prev)   # frozen past the input length
    return alpha


def _ctc_nll(alpha, N, il, tl):
    n = np.arange(N)
    last = alpha[np.maximum(il - 1, 0), n]                 # (N, L)
    e1 = last[n, 2 * tl]
    e2 = np.where(tl > 0, last[n, np.maximum(2 * tl - 1, 0)], -np.inf)
    ll = _lse(e1, e2)
    ll = np.where(il > 0, ll, np.where(tl == 0, 0.0, -np.inf))
    return -ll


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank, zero_infinity):
    lp, T, N, C, il, tl, L, ext, valid, skip, lpe = _ctc_setup(
        log_probs, targets, input_lengths, target_lengths, blank)
    alpha = _ctc_alpha(T, N, L, il, tl, valid, skip, lpe)
    nll = _ctc_nll(alpha, N, il, tl)
    if zero_infinity:
        nll = np.where(np.isinf(nll), 0.0, nll)
    nll = nll.astype(log_probs.dtype)
    return nll if log_probs.ndim == 3 else nll.reshape(())


def ctc_loss_backward(grad, log_probs, targets, input_lengths, target_lengths, blank,
                      zero_infinity):
    """torch's gradient: exp(lp) - posterior occupancy, scaled by ``grad`` (the gradient with
    respect to the logits of a log_softmax, as torch's kernel computes it)."""
    lp, T, N, C, il, tl, L, ext, valid, skip, lpe = _ctc_setup(
        log_probs, targets, input_lengths, target_lengths, blank)
    ninf = -np.inf
    alpha = _ctc_alpha(T, N, L, il, tl, valid, skip, lpe)
    nll = _ctc_nll(alpha, N, il, tl)
    beta = np.full((T, N, L), ninf)
    n = np.arange(N)
    skip_next = np.zeros((N, L), dtype=bool)            # s -> s+2 allowed
    skip_next[:, :-2] = skip[:, 2:]
    for t in range(T - 1, -1, -1):
        init = np.full((N, L), ninf)
        init[n, 2 * tl] = lpe[t, n, 2 * tl]
        has = tl > 0
        init[n[has], 2 * tl[has] - 1] = lpe[t, n[has], 2 * tl[has] - 1]
        if t + 1 < T:
            nxt = beta[t + 1]
            n1, n2 = np.full((N, L), ninf), np.full((N, L), ninf)
            n1[:, :-1], n2[:, :-2] = nxt[:, 1:], nxt[:, 2:]
            n2 = np.where(skip_next, n2, ninf)
            rec = _lse(nxt, n1, n2) + lpe[t]
        else:
            rec = np.full((N, L), ninf)
        cur = np.where((t == il - 1)[:, None], init, rec)
        cur = np.where((t < il - 1)[:, None], rec, cur)
        cur = np.where((t >= il)[:, None], ninf, cur)
        beta[t] = np.where(valid, cur, ninf)
    ab = alpha + beta                                     # (T, N, L)
    # log sum over s with ext[s] == c
    lcab = np.full((T, N, C), ninf)
    m = np.max(np.where(np.isfinite(ab), ab, ninf), axis=2, keepdims=True)
    ms = np.where(np.isfinite(m), m, 0)
    acc = np.zeros((T, N, C))
    with np.errstate(invalid="ignore", over="ignore"):
        e = np.exp(ab - ms)
    idx = np.broadcast_to(ext[None], (T, N, L))
    np.add.at(acc, (np.arange(T)[:, None, None], n[None, :, None], idx), e)
    with np.errstate(divide="ignore"):
        lcab = np.log(acc) + ms
    lp64 = lp.astype(np.float64)
    g = np.asarray(grad, dtype=np.float64).reshape(-1)
    g = np.broadcast_to(g, (N,))
    with np.errstate(invalid="ignore", over="ignore"):
        res = (np.exp(lp64) - np.exp(lcab + nll[None, :, None] - lp64)) * g[None, :, None]
    res = np.where((np.arange(T)[:, None] < il[None, :])[:, :, None], res, 0.0)
    if zero_infinity:
        res = np.where(np.isinf(nll)[None, :, None], 0.0, res)
    res = res.astype(log_probs.dtype)
    return res if log_probs.ndim == 3 else res[:, 0, :]


def mse_loss(x, t, reduction=1):
    """Squared error ``(x - t) ** 2`` over the broadcast shape, reduced (torch's enum: 0
    none, 1 mean, 2 sum)."""
    d = np.asarray(np.subtract(x, t))      # (0-d operands give a NumPy scalar)
    np.multiply(d, d, out=d)
    if reduction == 0:
        return d
    s = torch_sum.reduce_sum(d, None, False)   # float32/64 in torch's order, else None
    if s is None:
        return np.asarray(d.mean() if reduction == 1 else d.sum(), dtype=d.dtype)
    return s if reduction != 1 else np.asarray(np.true_divide(s, d.size), d.dtype)


def binary_cross_entropy(x, t):
    """Unreduced -(t log x + (1 - t) log(1 - x)), each log clamped at -100 (torch's)."""
    x, t = np.asarray(x), np.asarray(t)
    with np.errstate(divide="ignore"):
        lx = np.maximum(np.log(x), -100)
        l1x = np.maximum(np.log(1 - x), -100)
    return np.asarray(-(t * lx + (1 - t) * l1x), dtype=x.dtype)
