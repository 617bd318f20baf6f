"""Fused kernels for embeddings and cross entropy (records in ember/_ops/nn_fused.py); the
LSTM / GRU layer kernels are in ember/_kernels/rnn_fused.py.
"""
from __future__ import annotations

import numpy as np

from ember._kernels import compiled
from ember._kernels.elementwise import quiet
from ember._kernels.nn_norm import _NLL_LEVELS, nll_cascade_sum

# ------------------------------------------------------------------------- embedding

def embedding(weight, indices):
    """Rows of ``weight`` (V, D) at ``indices`` (any shape) -> (*indices.shape, D)."""
    if weight.ndim != 2:
        raise RuntimeError("'weight' must be 2-D")
    if indices.dtype.kind not in "iu":
        raise RuntimeError(f"Expected tensor for argument #1 'indices' to have one of the "
                           f"following scalar types: Long, Int; but got {indices.dtype} instead")
    return np.take(weight, indices, axis=0)


def embedding_backward(grad, indices, num_weights):
    """Sum of the gradient rows per index -> (num_weights, D) (``add_rows``)."""
    D = grad.shape[-1]
    out = np.zeros((num_weights, D), grad.dtype)
    add_rows(out, np.reshape(indices, -1), np.reshape(grad, (-1, D)))
    return out


def add_rows(out, idx, rows):
    """``out[idx[i]] += rows[i]`` for i in order (``np.add.at`` over whole rows, which NumPy
    runs element by element): out (V, *D), idx (n,), rows (n, *D). The rows are sorted by
    index (stable, so each index's rows keep their order). With few repeats per index the
    k-th rows of all indices are added in one scatter per k (distinct targets, in row order:
    each sum rounds as the sequential one does); with many, each run of equal indices is
    reduced at once (``reduceat``, whose cost grows with the number of runs instead) and
    then added."""
    n = idx.size
    if not n:
        return out
    if out.dtype.char in "fdFD" and out.flags.c_contiguous and n * out[0].size >= 4096:
        kernels = compiled.module("scatter")
        if kernels is not None:
            V = out.shape[0]
            kernels.add_rows(out.reshape(V, -1), np.ascontiguousarray(idx, np.int64),
                             np.ascontiguousarray(rows, out.dtype).reshape(n, -1))
            return out
    order = np.argsort(idx, kind="stable")
    si = idx[order]
    new = np.empty(n, np.bool_)
    new[0] = True
    np.not_equal(si[1:], si[:-1], out=new[1:])
    pos = np.arange(n)
    rank = pos - np.maximum.accumulate(np.where(new, pos, 0))   # k: the k-th row of its index
    counts = np.bincount(rank)                                   # rows per k
    if len(counts) * 5 > counts[0]:                              # many repeats: per run
        starts = np.flatnonzero(new)
        out[si[starts]] += np.add.reduceat(rows[order], starts, axis=0)
        return out
    by_k = np.argsort(rank, kind="stable")
    dst, src = si[by_k], rows[order[by_k]]
    a = 0
    for c in counts:
        out[dst[a:a + c]] += src[a:a + c]
        a += c
    return out


# ------------------------------------------------------------------------- cross entropy

def _ce_target(target, C, ignore_index):
    """(class index per row with ignored rows sent to 0, mask of kept rows or None when
    no row is ignored); a class index outside [0, C) is nll_loss's IndexError."""
    t = np.asarray(target).reshape(-1)
    if not (ignore_index in t.tolist() if t.size <= 64 else (t == ignore_index).any()):
        valid, ts = None, t
    else:
        valid = t != ignore_index
        ts = np.where(valid, t, 0)
    if ts.size and (ts.min() < 0 or ts.max() >= C):
        raise IndexError(f"Target {ts[(ts < 0) | (ts >= C)][0]} is out of bounds.")
    return ts, valid


@quiet
def cross_entropy(x, target, reduction=1, ignore_index=-100):
    """Cross-entropy of logits x (N, C) against class indices (N,): per row
    logsumexp(x) - x[target]. Returns (loss, lse (N,), workspace): the workspace holds, as
    bytes, e = exp(x - rowmax) (N, C) and its row sums s (N,), softmax(x) = e / s, for the
    backward (the buffer torch keeps as log_softmax's output), which so takes no
    exponentials."""
    if x.ndim != 2 or np.ndim(target) != 1 or x.shape[0] != np.shape(target)[0]:
        raise RuntimeError("_cross_entropy(): expected input (N, C) and target (N,)")
    if x.dtype == np.float32 and 0 < x.size < _POOLED_MIN:
        small = _cross_entropy_small(x, target, reduction, ignore_index)
        if small is not None:
            return small
    N, C = x.shape
    dt = x.dtype
    ws = np.empty(N * C + N, dt)
    e, s = ws[:N * C].reshape(N, C), ws[N * C:]
    if not C:
        m = np.zeros(N, dt)
        logs = np.full(N, -np.inf, dt)
    elif (m := _exp_rows_pooled(x, e, s)) is not None:
        finite = True
        logs = np.log(s)
    else:
        m = np.maximum.reduce(x, axis=1)
        total = float(np.add.reduce(m))
        finite = total - total == 0                   # no inf or NaN row (or a huge sum)
        if not finite and not (finite := bool(np.isfinite(m).all())):
            posinf = np.isposinf(m)                   # rows of +-inf: shift by 0 instead
            m = np.where(np.isfinite(m), m, 0).astype(dt)   # (log_softmax NaN there)
        np.subtract(x, m[:, None], out=e)
        np.exp(e, out=e)
        if C >= 64:
            np.matmul(e, np.ones(C, dt), out=s)       # row sums (a GEMV: 3x np.sum's speed)
        else:
            np.add.reduce(e, axis=1, out=s)
        logs = np.log(s)
    ts, valid = _ce_target(target, C, ignore_index)
    picked = x.reshape(-1)[np.arange(0, N * C, C) + ts] if C else np.zeros(N, dt)
    losses = logs - (picked - m)                     # -((x_t - max) - log sum)
    if C and not finite:
        losses[posinf] = np.nan
    if valid is not None:
        losses = np.where(valid, losses, dt.type(0))   # ignored rows: 0, NaN logits too
    lse = (logs + m).astype(dt, copy=False)
    if C and not finite:                              # e = exp(x - lse): NaN on +inf rows
        np.subtract(x, lse[:, None], out=e)
        np.exp(e, out=e)
        s[:] = 1
    if reduction == 0:
        loss = losses.astype(dt, copy=False)
    else:                                       # torch's order (Note [nll cascade])
        total = nll_cascade_sum(losses.astype(dt, copy=False), valid)
        if reduction == 2:
            loss = np.asarray(total, dt)
        else:
            kept = N if valid is None else np.count_nonzero(valid)
            loss = np.asarray(total / dt.type(kept), dt)
    return loss, lse, ws.view(np.uint8)


_POOLED_MIN = 1 << 15      # logits below this many elements stay on the caller's thread


def _small_rows(target):
    """The compiled row kernels (compiled/softmax.py) and ``target`` as contiguous int64;
    (None, None) where numba is not loaded or the target is of another dtype."""
    rows = compiled.module("softmax")
    t = np.asarray(target)
    if rows is None or t.dtype != np.int64:
        return None, None
    return rows, np.ascontiguousarray(t)


def _cross_entropy_small(x, target, reduction, ignore_index):
    """``cross_entropy`` of float32 logits under _POOLED_MIN elements in two compiled calls
    around NumPy's log (kept for its bits): the MLP's (128, 10) 44 -> 17 us on a loaded
    host (the backward, next, 24 -> 10 us). The same values and workspace as the NumPy
    path; None (nothing usable written) where a row holds NaN or an infinity, a target is
    out of range or numba is not loaded."""
    rows, t = _small_rows(target)
    if rows is None or not x.flags.c_contiguous:
        return None
    N, C = x.shape
    ws = np.empty(N * C + N, np.float32)
    e, s = ws[:N * C].reshape(N, C), ws[N * C:]
    m = np.empty(N, np.float32)
    if not rows.ce_rows(x, t, ignore_index, e, s, m):
        return None
    # own buffers: the per-row losses may be the user's result, lse stays with the graph
    losses, lse = np.empty(N, np.float32), np.empty(N, np.float32)
    total, kept = rows.ce_finish(np.log(s), x, t, m, ignore_index,
                                 1 << max(4, (N - 1).bit_length() // _NLL_LEVELS), losses, lse)
    if reduction:
        losses = np.asarray(np.float32(total) if reduction == 2 else
                            np.float32(total) / np.float32(kept))
    return losses, lse, ws.view(np.uint8)


_NO_ROWS = np.empty(0, np.float32)


def _cross_entropy_backward_small(grad, grad_lse, target, lse, reduction, ignore_index, ws,
                                  N, C):
    """``cross_entropy_backward`` from the forward's workspace of float32 logits under
    _POOLED_MIN elements, in one compiled call; None where it does not apply."""
    rows, t = _small_rows(target)
    if rows is None:
        return None
    g = np.asarray(grad, np.float32).reshape(-1)
    gl = _NO_ROWS if grad_lse is None else \
        np.ascontiguousarray(np.broadcast_to(np.asarray(grad_lse, np.float32), (N,)))
    ws = ws.view(np.float32)
    out = np.empty((N, C), np.float32)
    rows.ce_grad_rows(ws[:N * C].reshape(N, C), ws[N * C:], lse, t, ignore_index, reduction,
                      g, gl, out)
    return out


def _exp_rows_pooled(x, e, s):
    """Each row's max m (returned), e = exp(x - m) and s = sum(e) of float32 logits x (N, C)
    by the compiled row kernel, on OpenBLAS's threads (Note [one pool] in blas_pool.py) for
    large logits; None where numba is not loaded or a row holds a NaN or an infinity
    (nothing usable written)."""
    if x.dtype != np.float32 or not x.flags.c_contiguous:
        return None
    from ember._kernels import blas_pool, compiled
    pool = blas_pool.kernels() if x.size >= _POOLED_MIN else None
    N, C = x.shape
    m, bad = np.empty(N, np.float32), np.zeros(N, np.uint8)
    if pool is not None:
        blas_pool.run(pool.exp_rows, blas_pool.context(x, e, s, m, bad, N, C), N,
                      max(1, (1 << 15) // C))
    else:
        # one call on this thread (the MLP's (128, 10): the kernel 62 -> 47 us against
        # NumPy's max, subtract, exp and sum passes)
        rows = compiled.module("softmax")
        if rows is None:
            return None
        rows.exp_rows(x, e, s, m, bad)
    return None if bad.any() else m


def _scale_rows_pooled(e, f):
    """e * f[:, None] for float32 e (N, C), f (N,) on OpenBLAS's threads, or None."""
    from ember._kernels import blas_pool
    if e.dtype != np.float32 or f.dtype != np.float32 or e.size < _POOLED_MIN:
        return None
    pool = blas_pool.kernels()
    if pool is None:
        return None
    N, C = e.shape
    out = np.empty((N, C), np.float32)
    blas_pool.run(pool.scale_rows, blas_pool.context(e, f, out, N, C), N,
                  max(1, (1 << 15) // max(C, 1)))
    return out


@quiet
def cross_entropy_backward(grad, grad_lse, x, target, lse, reduction=1, ignore_index=-100,
                           workspace=None):
    """d/dx of ``cross_entropy``'s (loss, lse): softmax(x) (a + g_lse) - onehot(t) a, with
    a the per-row weight of the loss gradient (zero on ignored rows); softmax(x) from the
    forward's ``workspace`` (e / s) when given, else exp(x - lse)."""
    N, C = x.shape
    dt = x.dtype
    if workspace is not None and dt == np.float32 and 0 < x.size < _POOLED_MIN:
        small = _cross_entropy_backward_small(grad, grad_lse, target, lse, reduction,
                                              ignore_index, workspace, N, C)
        if small is not None:
            return small
    ts, valid = _ce_target(target, C, ignore_index)
    g = np.asarray(grad, dt)
    if reduction == 0:
        a = g.reshape(-1).astype(dt)
    elif reduction == 2:
        a = np.full(N, g, dt)
    else:
        kept = N if valid is None else valid.sum()
        a = np.full(N, g / dt.type(kept), dt)
    if valid is not None:
        a = np.where(valid, a, dt.type(0))      # no 0 * inf when every row is ignored
    gl = None if grad_lse is None else np.asarray(grad_lse, dt)
    coef = a if gl is None or not gl.ndim and gl == 0 else a + gl
    if workspace is not None:
        ws = workspace.view(dt)
        e, f = ws[:N * C].reshape(N, C), coef / ws[N * C:]
        out = _scale_rows_pooled(e, f.astype(dt, copy=False)) if N and C else None
        if out is None:
            out = np.multiply(e, f[:, None])
    else:
        out = np.subtract(x, np.reshape(lse, (N, 1)))
        np.exp(out, out=out)
        out *= coef[:, None]
    if C:
        out[np.arange(N), ts] -= a
        if np.isposinf(lse).any():                  # a row holding +inf: log_softmax is NaN
            out[np.isposinf(lse)] = np.nan
    return out


# ------------------------------------------------------------- linear + cross entropy

_LCE_CHUNK_BYTES = 4 << 20          # default: one chunk's logits take about 4 MB


def _lce_acc_dtype(dt, acc_dtype):
    if acc_dtype is not None:
        return np.dtype(getattr(acc_dtype, "np", acc_dtype))
    return np.dtype(np.float32) if dt.itemsize < 4 else dt


def linear_cross_entropy_chunked(x, w, target, bias=None, class_weight=None, reduction=1,
                                 ignore_index=-100, chunk_size=0, need_input=True,
                                 need_weight=True, need_bias=True, acc_dtype=None):
    """Cross entropy of the logits x w^T (+ bias) against class indices, reduced by sum
    (reduction=2) or weighted mean (1), walking the batch ``chunk_size`` rows at a time
    (0: a size keeping one chunk's logits near 4 MB). x: (N, D), w: (C, D), target: (N,),
    bias, class_weight: (C,). The full (N, C) logits never exist: per chunk the kernel takes
    the chunk's logits, their logsumexp, the loss rows and, in the same pass, the logits'
    gradient (softmax minus one-hot, times the row weight), folded at once into the
    gradients of x (rows of the chunk), w and bias. Returns the loss (a scalar) and a byte
    workspace holding grad_x (N*D), grad_w (C*D), grad_bias (C) in x's dtype (each part
    empty where its ``need_*`` flag is off), all for an upstream gradient of 1."""
    if x.ndim != 2 or w.ndim != 2 or np.ndim(target) != 1 or x.shape[1] != w.shape[1] \
            or np.shape(target)[0] != x.shape[0]:
        raise RuntimeError("_linear_cross_entropy_chunked(): expected input (N, D), "
                           "linear_weight (C, D) and target (N,)")
    N, D = x.shape
    C = w.shape[0]
    dt = x.dtype
    ad = _lce_acc_dtype(dt, acc_dtype)
    t = np.asarray(target).reshape(-1).astype(np.int64, copy=False)
    valid = t != ignore_index
    bad = valid & ((t < 0) | (t >= C))
    if bad.any():
        v = int(t[np.argmax(bad)])
        raise RuntimeError(f"index {v} is out of bounds for dimension 1 with size {C}")
    ts = np.where(valid, t, 0)
    if class_weight is None:
        rw = valid.astype(ad)
    else:
        rw = np.asarray(class_weight, ad)[ts] * valid
    if reduction == 1:                # weighted mean: fold 1 / sum(weights) into the rows
        with np.errstate(divide="ignore", invalid="ignore"):
            rw = rw / rw.sum(dtype=ad)
    need_bias = need_bias and bias is not None
    wa = w.astype(ad, copy=False)
    ba = None if bias is None else np.asarray(bias).astype(ad, copy=False)
    nx, nw, nb = (N * D if need_input else 0), (C * D if need_weight else 0), \
        (C if need_bias else 0)
    ws = np.zeros(nx + nw + nb, dt)
    gx = ws[:nx].reshape(N, D) if need_input else None
    gw = np.zeros((C, D), ad) if need_weight else None
    gb = np.zeros(C, ad) if need_bias else None
    grads = need_input or need_weight or need_bias
    rows = int(chunk_size) if chunk_size and chunk_size > 0 else \
        max(1, _LCE_CHUNK_BYTES // (max(C, 1) * ad.itemsize))
    rows = min(rows, max(N, 1))
    total = ad.type(0)
    buf = np.empty((rows, C), ad)
    with np.errstate(over="ignore", under="ignore", invalid="ignore", divide="ignore"):
        for i in range(0, N, rows):
            j = min(i + rows, N)
            n = j - i
            xc = x[i:j].astype(ad, copy=False)
            z = buf[:n]
            np.matmul(xc, wa.T, out=z)                       # the chunk's logits
            if ba is not None:
                z += ba
            r = np.arange(n)
            tc = ts[i:j]
            picked = z[r, tc]
            m = z.max(axis=1) if C else np.zeros(n, ad)
            m = np.where(np.isfinite(m), m, 0).astype(ad, copy=False)
            z -= m[:, None]
            np.exp(z, out=z)
            s = z.sum(axis=1)
            lse = np.log(s) + m
            rwc = rw[i:j]
            total += ((lse - picked) * rwc).sum(dtype=ad)
            if not grads or not C:
                continue
            z *= (rwc / s)[:, None]                          # softmax, weighted per row
            z[r, tc] -= rwc                                  # minus the weighted one-hot
            if need_input:
                gx[i:j] = z @ wa
            if need_weight:
                gw += z.T @ xc
            if need_bias:
                gb += z.sum(axis=0)
    if need_weight:
        ws[nx:nx + nw] = gw.reshape(-1)
    if need_bias:
        ws[nx + nw:] = gb
    return np.asarray(total, dt), ws.view(np.uint8)


def linear_cross_entropy_chunked_backward(grad, workspace, input_size, weight_size,
                                          bias_size=0, need_input=True, need_weight=True,
                                          need_bias=True, dtype=None):
    """The workspace's precomputed gradients scaled by the loss gradient ``grad``; the
    parts not computed come back empty."""
    dt = np.dtype(getattr(dtype, "np", dtype))
    ws = workspace.view(dt)
    nx = int(np.prod(input_size)) if need_input else 0
    nw = int(np.prod(weight_size)) if need_weight else 0
    nb = int(bias_size) if need_bias else 0
    g = np.asarray(grad, dt)
    gx = (ws[:nx] * g).reshape(input_size) if need_input else np.zeros(0, dt)
    gw = (ws[nx:nx + nw] * g).reshape(weight_size) if need_weight else np.zeros(0, dt)
    gb = ws[nx + nw:nx + nw + nb] * g if nb else np.zeros(0, dt)
    return gx.astype(dt, copy=False), gw.astype(dt, copy=False), gb.astype(dt, copy=False)
