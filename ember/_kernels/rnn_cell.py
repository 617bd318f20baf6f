"""Kernels of the one-step recurrent cells (records in ember/_ops/rnn_cell.py).

A cell step is two GEMMs and a few in-place NumPy ufunc calls over the gates. Inside, the
gates are gate-major with the batch last, (G*H, B), each gate a contiguous block of rows:
W_ih x^T is as fast as x W_ih^T in float64 and 1.5x faster in float32 (OpenBLAS's small
sgemm kernels), and the backward's weight gradients d x are plain GEMMs; the states
enter and leave batch-major (B, H) as transposed views. Sigmoids are tanh(x/2)/2 + 1/2
(LSTM: one tanh pass over every gate), as in ember/_kernels/rnn_fused.py. The forward keeps what its backward needs in a workspace of the operands' dtype
(returned to the record as bytes, so autograd never sends a gradient into it):

- LSTM: (5H, B) = activated gates i, f, g, o, then tanh(c').
- GRU: (4H, B) = r, z, n, then the hidden side of the candidate, h W_hn^T + b_hn.
- RNN: nothing; the output itself gives the activation's derivative.

Each backward returns, in the order of the record's inputs, the gradients of the
input, h, (c,) W_ih, W_hh and the bias(es); what ``need`` leaves out is an empty array.
"""
from __future__ import annotations

import numpy as np

from ember._kernels import numpy_blas, split

_EMPTY = {}


def _compiled():
    """The numba kernels (ember/_kernels/compiled/rnn_cell.py) when the ``fast`` extra is
    installed and not switched off, else None (the NumPy passes below run)."""
    from ember._kernels import compiled
    return compiled.module("rnn_cell")


def _empty(dt):
    """A (0,) / (0, 0) stand-in for an absent operand of a compiled kernel."""
    e = _EMPTY.get(dt)
    if e is None:
        e = _EMPTY[dt] = (np.empty((0,), dt), np.empty((0, 0), dt))
    return e



def _none(dt):
    """What a backward returns for a gradient it was not asked for."""
    return np.empty((0,), dt)


def _check(name, gates, x, hx, cx, w_ih, w_hh, b_ih, b_hh):
    """(B, H) after checking shapes and dtypes: x (B, E), hx (B, H), cx (B, H) or None,
    w_ih (G*H, E), w_hh (G*H, H), biases (G*H,) or None."""
    if x.ndim != 2 or hx.ndim != 2 or w_ih.ndim != 2 or w_hh.ndim != 2:
        raise RuntimeError(f"{name}(): expected input (B, E), hx (B, H), weight_ih "
                           f"({gates}H, E) and weight_hh ({gates}H, H), got input "
                           f"{list(x.shape)}, hx {list(hx.shape)}, weight_ih "
                           f"{list(w_ih.shape)}, weight_hh {list(w_hh.shape)}")
    B, E = x.shape
    H = w_hh.shape[1]
    G = gates * H
    ok = w_hh.shape[0] == G and w_ih.shape == (G, E) and hx.shape == (B, H) and \
        (cx is None or cx.shape == (B, H)) and (b_ih is None or b_ih.shape == (G,)) and \
        (b_hh is None or b_hh.shape == (G,))
    if not ok:
        named = (("input", x), ("hx", hx), ("cx", cx), ("weight_ih", w_ih),
                 ("weight_hh", w_hh), ("bias_ih", b_ih), ("bias_hh", b_hh))
        shapes = ", ".join(f"{n} {list(a.shape)}" for n, a in named if a is not None)
        raise RuntimeError(f"{name}(): inconsistent shapes: {shapes}")
    dt = x.dtype
    if dt.kind != "f" or hx.dtype != dt or w_ih.dtype != dt or w_hh.dtype != dt or \
            (cx is not None and cx.dtype != dt) or (b_ih is not None and b_ih.dtype != dt) \
            or (b_hh is not None and b_hh.dtype != dt):
        raise RuntimeError(f"{name}(): expected floating tensors of one dtype, got "
                           + ", ".join(str(a.dtype) for a in (x, hx, cx, w_ih, w_hh, b_ih,
                                                              b_hh) if a is not None))
    return B, H


# Note [cell GEMMs at one thread]: a cell's GEMMs are small (time_sequence_prediction:
# 204 x 51 x 97, 1M multiply-adds), above OpenBLAS's own one-thread limit (~262k) but far
# too small for its helper threads to pay: their hand-off and spin-wait between steps cost
# more than they save, the worse the busier the machine (LSTMCell B=97 H=51 at 2 threads,
# 2 cores under load ~4: 2.2-4.0 ms/step, held at one thread 0.58-1.2 ms/step; torch's
# pytorch/examples run at its default 2 threads was 6x slower than at 1 there too). So
# between those limits NumPy's OpenBLAS is held at one thread for the step's GEMMs
# (numpy_blas.one_thread, ~2 us); larger cells keep OpenBLAS's threads.
_HELD_MACS = (1 << 18, 1 << 24)


def _gemms_held(rows, k, B):
    """``with`` guard for a step's GEMMs of (rows, k) weights against a batch of B."""
    work = rows * k * B
    return numpy_blas.one_thread(_HELD_MACS[0] <= work < _HELD_MACS[1])


def _pre(x, w_ih, b_ih, h, w_hh, b_hh):
    """W_ih x^T + b_ih + W_hh h^T + b_hh, gate-major (G*H, B)."""
    with _gemms_held(w_hh.shape[0], max(w_ih.shape[1], w_hh.shape[1]), x.shape[0]):
        out = split.matmul(w_ih, x.T)
        out += split.matmul(w_hh, h.T)
    for b in (b_ih, b_hh):
        if b is not None:
            out += b[:, None]
    return out


def _gemm_grads(d_in, d_hid, x, h, w_ih, w_hh, need):
    """From the pre-activation gradients of the input side ``d_in`` and the hidden side
    ``d_hid`` (G*H, B): (grad x, grad h part, grad W_ih, grad W_hh); ``need``: (input, h,
    weights) flags."""
    none = _none(x.dtype)
    with _gemms_held(w_hh.shape[0], max(w_ih.shape[1], w_hh.shape[1]), x.shape[0]):
        gx = split.matmul(d_in.T, w_ih) if need[0] else none
        gh = split.matmul(d_hid.T, w_hh) if need[1] else none
        gwi = split.matmul(d_in, x) if need[2] else none
        gwh = split.matmul(d_hid, h) if need[2] else none
    return gx, gh, gwi, gwh


def _rows(a, n, H):
    """The first ``n`` row blocks of H rows of ``a``."""
    return tuple(a[k * H:(k + 1) * H] for k in range(n))


# ------------------------------------------------------------------------------ LSTM
def lstm_cell(x, hx, cx, w_ih, w_hh, b_ih=None, b_hh=None):
    """One LSTM step, gates i, f, g, o. Returns h' (B, H), c' (B, H), workspace (bytes of
    (5H, B): activated gates, tanh c')."""
    B, H = _check("_lstm_cell", 4, x, hx, cx, w_ih, w_hh, b_ih, b_hh)
    dt = x.dtype
    nb = _compiled()
    pre = _pre(x, w_ih, b_ih if nb is None else None, hx, w_hh, b_hh if nb is None else None)
    ws = np.empty((5 * H, B), dt)
    i, f, g, o, tc = _rows(ws, 5, H)
    hy, cy = np.empty((B, H), dt), np.empty((B, H), dt)
    half = dt.type(0.5)
    with np.errstate(over="ignore", under="ignore"):
        if nb is not None:
            nb.lstm_pre(pre, _bias_sum(b_ih, b_hh, dt), half)
            np.tanh(pre, out=ws[:4 * H])
            nb.lstm_state(ws, cx, cy, half)
        else:
            pre[:2 * H] *= half
            pre[3 * H:] *= half
            np.tanh(pre, out=ws[:4 * H])
            _sigmoid_from_tanh(ws[:2 * H])
            _sigmoid_from_tanh(o)
            np.multiply(f, cx.T, out=cy.T)
            np.multiply(i, g, out=tc)
            np.add(cy.T, tc, out=cy.T)
        np.tanh(cy.T, out=tc)
        np.multiply(o, tc, out=hy.T)
    return hy, cy, ws.view(np.uint8)


def _bias_sum(b_ih, b_hh, dt):
    if b_ih is None:
        return _empty(dt)[0] if b_hh is None else b_hh
    return b_ih if b_hh is None else b_ih + b_hh


def _sigmoid_from_tanh(t):
    """In place: tanh(x/2) -> sigmoid(x) = tanh(x/2)/2 + 1/2 (one vectorised tanh pass is
    far faster than an exp-based sigmoid)."""
    t *= 0.5
    t += 0.5


def lstm_cell_backward(grad_hy, grad_cy, x, hx, cx, w_ih, w_hh, workspace, need):
    """Gradients of (input, hx, cx, W_ih, W_hh, bias) of ``lstm_cell``; grad_hy, grad_cy
    (B, H) or None (zero); need: (input, hx, cx, weights, bias) flags."""
    B, H = cx.shape
    dt = x.dtype
    ws = workspace.view(dt).reshape(5 * H, B)
    d = np.empty((4 * H, B), dt)                   # d loss / d activated gate, then pre
    nb = _compiled()
    if nb is not None:
        e = _empty(dt)[1]
        gcx = np.empty((B, H), dt) if need[2] else e
        nb.lstm_grads(ws, cx, e if grad_hy is None else grad_hy,
                      e if grad_cy is None else grad_cy, d, gcx, dt.type(1))
        if not need[2]:
            gcx = _none(dt)
    else:
        gcx = _lstm_grads_numpy(grad_hy, grad_cy, cx, ws, d, need[2])
    gx, gh, gwi, gwh = _gemm_grads(d, d, x, hx, w_ih, w_hh, (need[0], need[1], need[3]))
    gb = d.sum(1) if need[4] else _none(dt)
    return gx, gh, gcx, gwi, gwh, gb


def _lstm_grads_numpy(grad_hy, grad_cy, cx, ws, d, want_cx):
    """``lstm_cell_backward``'s gate pass in NumPy: d (4H, B) gets the pre-activation
    gradients; returns c's gradient (or an empty array)."""
    H, B = cx.shape[1], cx.shape[0]
    dt = d.dtype
    gates, (i, f, g, o, tc) = ws[:4 * H], _rows(ws, 5, H)
    di, df, dg, do = _rows(d, 4, H)
    with np.errstate(over="ignore", under="ignore"):
        dc = np.zeros((H, B), dt) if grad_cy is None else np.array(grad_cy.T, dt)
        if grad_hy is not None:
            np.multiply(grad_hy.T, tc, out=do)
            np.multiply(tc, tc, out=di)             # dc += dh o (1 - tanh(c')^2)
            np.subtract(1, di, out=di)
            di *= o
            di *= grad_hy.T
            dc += di
        else:
            do[...] = 0
        np.multiply(dc, g, out=di)
        np.multiply(dc, cx.T, out=df)
        np.multiply(dc, i, out=dg)
        slope = np.subtract(1, gates)              # sigmoid' = s (1 - s)
        slope *= gates
        sg = slope[2 * H:3 * H]                    # tanh' = 1 - g^2
        np.multiply(g, g, out=sg)
        np.subtract(1, sg, out=sg)
        d *= slope
        return np.multiply(dc.T, f.T) if want_cx else _none(dt)


# ------------------------------------------------------------------------------- GRU
def gru_cell(x, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """One GRU step, gates r, z, n: n = tanh(x W_in^T + b_in + r (h W_hn^T + b_hn)),
    h' = n + z (h - n). Returns h' (B, H), workspace (bytes of (4H, B): r, z, n and
    h W_hn^T + b_hn)."""
    B, H = _check("_gru_cell", 3, x, hx, None, w_ih, w_hh, b_ih, b_hh)
    dt = x.dtype
    ws = np.empty((4 * H, B), dt)
    with _gemms_held(3 * H, max(w_ih.shape[1], H), B):
        gi = split.matmul(w_ih, x.T)
        split.matmul(w_hh, hx.T, out=ws[:3 * H])      # its n rows end up in the 4th block
    r, z, n, ghn = _rows(ws, 4, H)
    rz = ws[:2 * H]
    hy = np.empty((B, H), dt)
    half = dt.type(0.5)
    nb = _compiled()
    with np.errstate(over="ignore", under="ignore"):
        if nb is not None:
            e = _empty(dt)[0]
            nb.gru_pre(gi, ws, e if b_ih is None else b_ih, e if b_hh is None else b_hh, half)
            np.tanh(rz, out=rz)
            nb.gru_candidate(ws, gi, half)
            np.tanh(n, out=n)
            nb.gru_output(ws, hx, hy)
            return hy, ws.view(np.uint8)
        if b_ih is not None:
            gi += b_ih[:, None]
        if b_hh is not None:
            ws[:3 * H] += b_hh[:, None]
        ghn[...] = n
        rz += gi[:2 * H]
        rz *= half
        np.tanh(rz, out=rz)
        _sigmoid_from_tanh(rz)
        np.multiply(r, ghn, out=n)
        n += gi[2 * H:]
        np.tanh(n, out=n)
        np.subtract(hx.T, n, out=hy.T)
        np.multiply(hy.T, z, out=hy.T)
        np.add(hy.T, n, out=hy.T)
    return hy, ws.view(np.uint8)


def gru_cell_backward(grad_hy, x, hx, w_ih, w_hh, workspace, need):
    """Gradients of (input, hx, W_ih, W_hh, b_ih, b_hh) of ``gru_cell``; need: (input,
    hx, weights, bias) flags."""
    B, H = hx.shape
    dt = x.dtype
    d_in, d_hid = np.empty((3 * H, B), dt), np.empty((3 * H, B), dt)
    nb = _compiled()
    if nb is not None:
        dhz = np.empty((B, H), dt)
        nb.gru_grads(workspace.view(dt).reshape(4 * H, B), hx, grad_hy, d_in, d_hid, dhz,
                     dt.type(1))
    else:
        dhz = _gru_grads_numpy(grad_hy, hx, workspace.view(dt).reshape(4 * H, B), d_in,
                               d_hid)
    gx, gh, gwi, gwh = _gemm_grads(d_in, d_hid, x, hx, w_ih, w_hh,
                                   (need[0], need[1], need[2]))
    if need[1]:
        gh += dhz
    gbi, gbh = (d_in.sum(1), d_hid.sum(1)) if need[3] else (_none(dt), _none(dt))
    return gx, gh, gwi, gwh, gbi, gbh


def _gru_grads_numpy(grad_hy, hx, ws, d_in, d_hid):
    """``gru_cell_backward``'s gate pass in NumPy: fills d_in and d_hid (3H, B); returns
    dh z (B, H)."""
    B, H = hx.shape
    r, z, n, ghn = _rows(ws, 4, H)
    dr, dz, dn = _rows(d_in, 3, H)
    dh = grad_hy.T
    t = np.empty((H, B), d_in.dtype)
    with np.errstate(over="ignore", under="ignore"):
        np.subtract(1, z, out=dn)                  # d n = dh (1 - z) (1 - n^2)
        dn *= dh
        np.multiply(n, n, out=t)
        np.subtract(1, t, out=t)
        dn *= t
        np.subtract(hx.T, n, out=dz)               # d z = dh (h - n) z (1 - z)
        dz *= dh
        np.subtract(1, z, out=t)
        t *= z
        dz *= t
        np.multiply(dn, ghn, out=dr)               # d r = d n ghn r (1 - r)
        np.subtract(1, r, out=t)
        t *= r
        dr *= t
        d_hid[...] = d_in
        d_hid[2 * H:] *= r
        np.multiply(z, dh, out=t)
    return t.T


# ------------------------------------------------------------------------------- RNN
def rnn_cell(x, hx, w_ih, w_hh, b_ih=None, b_hh=None, relu=False):
    """One Elman step: h' = act(x W_ih^T + b_ih + h W_hh^T + b_hh), act tanh or relu."""
    B, H = _check("_rnn_relu_cell" if relu else "_rnn_tanh_cell", 1, x, hx, None, w_ih, w_hh,
                  b_ih, b_hh)
    pre = _pre(x, w_ih, b_ih, hx, w_hh, b_hh)
    hy = np.empty((B, H), x.dtype)
    if relu:
        np.maximum(pre, 0, out=hy.T)
    else:
        with np.errstate(over="ignore", under="ignore"):
            np.tanh(pre, out=hy.T)
    return hy


def rnn_cell_backward(grad_hy, x, hx, w_ih, w_hh, hy, relu, need):
    """Gradients of (input, hx, W_ih, W_hh, bias) of ``rnn_cell`` from its output hy;
    need: (input, hx, weights, bias) flags."""
    if relu:
        d = np.where(hy.T <= 0, 0, grad_hy.T).astype(x.dtype, copy=False)
    else:
        d = np.multiply(hy.T, hy.T)
        np.subtract(1, d, out=d)
        d *= grad_hy.T
    gx, gh, gwi, gwh = _gemm_grads(d, d, x, hx, w_ih, w_hh, (need[0], need[1], need[2]))
    gb = d.sum(1) if need[3] else _none(x.dtype)
    return gx, gh, gwi, gwh, gb
