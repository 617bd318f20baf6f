"""Fused kernels for recurrent layers and embeddings (records in ember/_ops/nn_fused.py).

The LSTM layer kernel runs a whole sequence in one call: per time step one GEMM of the
hidden state and the gate nonlinearities in place, no per-step dispatch, all in a gate-major
(4H, B) layout so each gate is one contiguous block. It keeps the activated gates, the cell
states and their tanh in a byte workspace (like a reserve buffer) so the backward kernel
needs no recomputation; the backward folds the recurrent weight gradient into one GEMM over
all time steps.
"""
from __future__ import annotations

import numpy as np

from ember._kernels.elementwise import quiet

def _check_lstm(xw, h0, c0, w_hh, batch_first):
    for name, a in (("input", xw), ("hx", h0), ("cx", c0), ("weight_hh", w_hh)):
        if not isinstance(a, np.ndarray):
            raise TypeError(f"_lstm_layer(): argument '{name}' must be a Tensor")
    if xw.ndim != 3 or h0.ndim != 2 or c0.ndim != 2 or w_hh.ndim != 2:
        raise RuntimeError("_lstm_layer(): expected input (T, B, 4H) or (B, T, 4H), hx and cx "
                           "(B, H) and weight_hh (4H, H)")
    B, T, G = xw.shape if batch_first else (xw.shape[1], xw.shape[0], xw.shape[2])
    H = w_hh.shape[1]
    if G != 4 * H or w_hh.shape[0] != G or h0.shape != (B, H) or c0.shape != (B, H):
        raise RuntimeError(f"_lstm_layer(): inconsistent shapes: input {list(xw.shape)}, hx "
                           f"{list(h0.shape)}, cx {list(c0.shape)}, weight_hh "
                           f"{list(w_hh.shape)}")
    dt = xw.dtype
    if h0.dtype != dt or c0.dtype != dt or w_hh.dtype != dt or dt.kind != "f":
        raise RuntimeError(f"_lstm_layer(): expected floating tensors of one dtype, got "
                           f"{xw.dtype}, {h0.dtype}, {c0.dtype}, {w_hh.dtype}")
    return T, B, H


def _time_major(a, batch_first):
    return a.swapaxes(0, 1) if batch_first else a


def _split_ws(ws, T, B, H):
    """The workspace's activated gates (T, 4H, B), cell states c_t (T, H, B) and their
    tanh (T, H, B): gate-major, batch last, the layout of the GEMM W_hh h^T."""
    n, m = T * 4 * H * B, T * H * B
    return (ws[:n].reshape(T, 4 * H, B), ws[n:n + m].reshape(T, H, B),
            ws[n + m:].reshape(T, H, B))


def _gate_scale(H, dt):
    """Row scale of the pre-activations: 1/2 for i, f, o (sigmoid(x) = tanh(x/2)/2 + 1/2,
    and halving is exact in binary floating point), 1 for g."""
    s = np.full(4 * H, 0.5, dt)
    s[2 * H:3 * H] = 1
    return s


def lstm_layer(xw, h0, c0, w_hh, reverse=False, batch_first=False):
    """xw: (T, B, 4H) input projections (biases included), gates i, f, g, o, or (B, T, 4H)
    with ``batch_first``; h0, c0: (B, H); w_hh: (4H, H). Returns the output (T, B, H) or
    (B, T, H), h_n, c_n (B, H) and the workspace: uint8 bytes of the activated gates
    (T, 4H, B), the cell states (T, H, B) and their tanh (T, H, B).

    Each step works gate-major, (4H, B) with the batch last, which is the layout the GEMM
    W_hh h^T produces: every gate is one contiguous (H, B) block, and the states h, c are
    kept as (H, B) so the next GEMM takes h^T without a transpose. One tanh pass covers all
    four gates: the rows of i, f, o (of W_hh and of xw) are halved, and sigmoid(x) =
    tanh(x/2)/2 + 1/2."""
    T, B, H = _check_lstm(xw, h0, c0, w_hh, batch_first)
    dt = xw.dtype
    out = np.empty((B, T, H) if batch_first else (T, B, H), dt)
    out_t, xw_t = _time_major(out, batch_first), _time_major(xw, batch_first)
    ws = np.empty(T * B * 6 * H, dt)
    gates, cells, tcells = _split_ws(ws, T, B, H)
    scale = _gate_scale(H, dt)
    w = w_hh * scale[:, None]
    h = np.array(h0.T, dt, order="C")                    # (H, B)
    c = np.array(c0.T, dt, order="C")
    tmp = np.empty((H, B), dt)
    hw = np.empty((4 * H, B), dt)
    with np.errstate(over="ignore", under="ignore"):
        for t in (range(T - 1, -1, -1) if reverse else range(T)):
            pre = gates[t]
            np.multiply(xw_t[t], scale, out=pre.T)       # xw_t^T, rows scaled
            np.matmul(w, h, out=hw)
            pre += hw
            np.tanh(pre, out=pre)
            sg = pre[:2 * H]                             # i, f
            sg *= 0.5
            sg += 0.5
            sg = pre[3 * H:]                             # o
            sg *= 0.5
            sg += 0.5
            cn = cells[t]
            np.multiply(pre[H:2 * H], c, out=cn)         # f * c
            np.multiply(pre[:H], pre[2 * H:3 * H], out=tmp)   # i * g
            cn += tmp
            tc = tcells[t]
            np.tanh(cn, out=tc)
            np.multiply(pre[3 * H:], tc, out=h)          # h = o * tanh(c)
            np.copyto(out_t[t], h.T)
            c = cn
    return out, np.array(h.T, order="C"), np.array(c.T, order="C"), ws.view(np.uint8)


def lstm_layer_backward(grad_output, grad_hn, grad_cn, h0, c0, w_hh, output, workspace,
                        reverse=False, batch_first=False, need_weight=True):
    """Gradients of ``lstm_layer`` w.r.t. (xw, h0, c0, w_hh) given those of (output, h_n,
    c_n). Steps run gate-major like the forward ((4H, B) blocks, dh and dc as (H, B), dh
    propagated as W_hh^T d); each step's gradient is copied into ``dpre`` in the layout of
    xw. ``grad_weight`` is one GEMM over all steps: sum_t dpre_t^T h_{t-1}."""
    dt = output.dtype
    out_t = _time_major(output, batch_first)
    T, B, H = out_t.shape
    gates, cells, tcells = _split_ws(workspace.view(dt), T, B, H)
    dpre = np.empty((B, T, 4 * H) if batch_first else (T, B, 4 * H), dt)
    dpre_t = _time_major(dpre, batch_first)
    dh = np.array(np.broadcast_to(grad_hn, (B, H)).T, dtype=dt, order="C")   # (H, B)
    dc = np.array(np.broadcast_to(grad_cn, (B, H)).T, dtype=dt, order="C")
    c0t = c0.T
    go = None if grad_output is None else \
        _time_major(np.broadcast_to(grad_output, output.shape), batch_first)
    w_t = w_hh.T
    tmp = np.empty((H, B), dt)
    fac = np.empty((4 * H, B), dt)
    d = np.empty((4 * H, B), dt)
    for t in (range(T) if reverse else range(T - 1, -1, -1)):
        tp = t + 1 if reverse else t - 1
        c_prev = c0t if (tp < 0 or tp >= T) else cells[tp]
        gt, tc = gates[t], tcells[t]
        if go is not None:
            dh += go[t].T
        np.multiply(dh, tc, out=d[3 * H:])               # d o
        np.multiply(tc, tc, out=tmp)                      # dc += dh o (1 - tanh(c)^2)
        np.subtract(1, tmp, out=tmp)
        tmp *= gt[3 * H:]
        tmp *= dh
        dc += tmp
        np.multiply(dc, gt[2 * H:3 * H], out=d[:H])      # d i
        np.multiply(dc, c_prev, out=d[H:2 * H])           # d f
        np.multiply(dc, gt[:H], out=d[2 * H:3 * H])      # d g
        dc *= gt[H:2 * H]
        # through the nonlinearities: s (1 - s) for i, f, o; 1 - g^2 for g
        np.subtract(1, gt, out=fac)
        fac *= gt
        fg = fac[2 * H:3 * H]
        np.multiply(gt[2 * H:3 * H], gt[2 * H:3 * H], out=fg)
        np.subtract(1, fg, out=fg)
        d *= fac
        np.copyto(dpre_t[t], d.T)
        np.matmul(w_t, d, out=dh)
    if not need_weight or T == 0:
        grad_w = np.zeros(w_hh.shape, dt)
    else:
        # h_{t-1} of every step, laid out like the output: one GEMM for the whole sequence
        hprev = np.empty(output.shape, dt)
        hp_t = _time_major(hprev, batch_first)
        if reverse:
            hp_t[:T - 1] = out_t[1:]
            hp_t[T - 1] = h0
        else:
            hp_t[1:] = out_t[:-1]
            hp_t[0] = h0
        grad_w = np.matmul(dpre.reshape(T * B, 4 * H).T, hprev.reshape(T * B, H))
    return dpre, np.array(dh.T, order="C"), np.array(dc.T, order="C"), grad_w


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
    """Sum of the gradient rows per index -> (num_weights, D): rows sorted by index (stable,
    so each sum runs in the order of the rows) and reduced per run of equal indices."""
    D = grad.shape[-1]
    g = np.reshape(grad, (-1, D))
    idx = np.reshape(indices, -1)
    out = np.zeros((num_weights, D), g.dtype)
    if not idx.size:
        return out
    order = np.argsort(idx, kind="stable")
    si = idx[order]
    starts = np.flatnonzero(np.concatenate(([True], si[1:] != si[:-1])))
    out[si[starts]] = np.add.reduceat(g[order], starts, axis=0)
    return out


# ------------------------------------------------------------------------- cross entropy

def _ce_target(target, N, ignore_index):
    """(class index per row with ignored rows sent to 0, mask of kept rows or None when
    no row is ignored)."""
    t = np.asarray(target).reshape(-1)
    if not (t == ignore_index).any():
        return t, None
    valid = t != ignore_index
    return np.where(valid, t, 0), valid


_CE_BLOCK = 65536       # elements of the exponentials' buffer per block of rows


@quiet
def cross_entropy(x, target, reduction=1, ignore_index=-100):
    """Cross-entropy of logits x (N, C) against class indices (N,): per row
    logsumexp(x) - x[target], without materialising log_softmax. The exponentials for the
    sum run over blocks of rows in one small reused buffer. Returns (loss, lse (N,))."""
    if x.ndim != 2 or np.ndim(target) != 1 or x.shape[0] != np.shape(target)[0]:
        raise RuntimeError("_cross_entropy(): expected input (N, C) and target (N,)")
    N, C = x.shape
    dt = x.dtype
    if not C:
        m = np.zeros(N, dt)
        logs = np.full(N, -np.inf, dt)
    else:
        m = np.maximum.reduce(x, axis=1)
        if not np.isfinite(m).all():                  # rows of +-inf: shift by 0 instead
            m = np.where(np.isfinite(m), m, 0).astype(dt)
        if N * C <= _CE_BLOCK:
            b = np.subtract(x, m[:, None])
            np.exp(b, out=b)
            s = np.add.reduce(b, axis=1)
        else:
            s = np.empty(N, dt)
            rows = max(1, _CE_BLOCK // C)
            buf = np.empty((min(rows, N), C), dt)
            for i in range(0, N, rows):
                b = buf[:min(rows, N - i)]
                np.subtract(x[i:i + rows], m[i:i + rows, None], out=b)
                np.exp(b, out=b)
                np.add.reduce(b, axis=1, out=s[i:i + rows])
        logs = np.log(s)
    ts, valid = _ce_target(target, N, ignore_index)
    picked = x[np.arange(N), ts] if C else np.zeros(N, dt)
    losses = logs - (picked - m)                     # -((x_t - max) - log sum)
    if valid is not None:
        losses = np.where(valid, losses, dt.type(0))   # ignored rows: 0, NaN logits too
    lse = logs + m
    if reduction == 0:
        loss = losses.astype(dt, copy=False)
    elif reduction == 2:
        loss = np.asarray(np.add.reduce(losses, dtype=dt), dt)
    else:
        kept = N if valid is None else valid.sum()
        loss = np.asarray(np.add.reduce(losses, dtype=dt) / dt.type(kept), dt)
    return loss, lse.astype(dt, copy=False)


@quiet
def cross_entropy_backward(grad, grad_lse, x, target, lse, reduction=1, ignore_index=-100):
    """d/dx of ``cross_entropy``'s (loss, lse): softmax(x) (a + g_lse) - onehot(t) a, with
    a the per-row weight of the loss gradient (zero on ignored rows); one full-size buffer."""
    N, C = x.shape
    dt = x.dtype
    ts, valid = _ce_target(target, N, ignore_index)
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
    gl = np.asarray(grad_lse, dt)
    coef = a + gl if gl.ndim or gl != 0 else a
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
