"""numba kernels for the one-step cells (ember/_kernels/rnn_cell.py): one pass over a
step's gates where NumPy needs a call per product. Gates are gate-major (G*H, B) in torch's
order (LSTM i, f, g, o; GRU r, z, n); the batch-major states (B, H) come in as they are
(any strides). Only arithmetic is compiled: the tanh passes stay NumPy's (vectorised),
constants come in the arrays' dtype (float32 stays float32), no fast-math. Imported only
through rnn_cell._compiled().
"""
from __future__ import annotations

from numba import njit

_OPTS = dict(cache=True, nogil=True)


@njit(**_OPTS)
def lstm_pre(pre, bias, half):
    """In place on the pre-activations (4H, B): add ``bias`` (4H,) (or nothing when it is
    empty) and halve the sigmoid gates' rows (i, f, o) for the tanh pass."""
    G, B = pre.shape
    H = G // 4
    with_bias = bias.shape[0] > 0
    for r in range(G):
        s = half + half if 2 * H <= r < 3 * H else half
        add = bias[r] if with_bias else half - half
        for b in range(B):
            pre[r, b] = (pre[r, b] + add) * s


@njit(**_OPTS)
def lstm_state(ws, cx, cy, half):
    """After the tanh pass (rows 0:4H of ws (5H, B), sigmoid rows still tanh(x/2)): make
    them sigmoids and write c' = f c + i g into cy (B, H); cx (B, H)."""
    B, H = cx.shape
    for j in range(H):
        for b in range(B):
            i = ws[j, b] * half + half
            f = ws[H + j, b] * half + half
            ws[j, b] = i
            ws[H + j, b] = f
            ws[3 * H + j, b] = ws[3 * H + j, b] * half + half
            cy[b, j] = f * cx[b, j] + i * ws[2 * H + j, b]


@njit(**_OPTS)
def lstm_grads(ws, cx, dh, dc, d, dcx, one):
    """The gradients of the pre-activations d (4H, B) and of c, dcx (B, H), from those of
    h' and c', dh and dc (B, H; either may be empty (0, 0): zero). ws: activated gates
    and tanh c' (5H, B); dcx empty: not wanted."""
    B, H = cx.shape
    with_h, with_c, want_c = dh.shape[0] > 0, dc.shape[0] > 0, dcx.shape[0] > 0
    for j in range(H):
        for b in range(B):
            i = ws[j, b]
            f = ws[H + j, b]
            g = ws[2 * H + j, b]
            o = ws[3 * H + j, b]
            t = ws[4 * H + j, b]
            v = dh[b, j] if with_h else one - one
            dct = dc[b, j] if with_c else one - one
            dct += v * o * (one - t * t)
            d[j, b] = dct * g * (i - i * i)
            d[H + j, b] = dct * cx[b, j] * (f - f * f)
            d[2 * H + j, b] = dct * i * (one - g * g)
            d[3 * H + j, b] = v * t * (o - o * o)
            if want_c:
                dcx[b, j] = dct * f


@njit(**_OPTS)
def gru_pre(gi, ws, b_ih, b_hh, half):
    """Before the tanh pass of r, z: rows 0:2H of ws (4H, B) (h W_hh^T so far) become
    (x W_i^T + b_i + h W_h^T + b_h) / 2; row block 3 keeps h W_hn^T + b_hn and gi's n rows
    get b_in. gi (3H, B): x W_ih^T; biases (3H,) or empty."""
    G, B = gi.shape
    H = G // 3
    with_i, with_h = b_ih.shape[0] > 0, b_hh.shape[0] > 0
    zero = half - half
    for r in range(2 * H):
        add = (b_ih[r] if with_i else zero) + (b_hh[r] if with_h else zero)
        for b in range(B):
            ws[r, b] = (ws[r, b] + gi[r, b] + add) * half
    for j in range(H):
        bh = b_hh[2 * H + j] if with_h else zero
        bi = b_ih[2 * H + j] if with_i else zero
        for b in range(B):
            ws[3 * H + j, b] = ws[2 * H + j, b] + bh
            gi[2 * H + j, b] += bi


@njit(**_OPTS)
def gru_candidate(ws, gi, half):
    """After the tanh pass of r, z (still tanh(x/2)): make them sigmoids and give the n
    rows of ws the candidate's pre-activation x W_in^T + b_in + r (h W_hn^T + b_hn)."""
    G, B = ws.shape
    H = G // 4
    for j in range(H):
        for b in range(B):
            r = ws[j, b] * half + half
            ws[j, b] = r
            ws[H + j, b] = ws[H + j, b] * half + half
            ws[2 * H + j, b] = gi[2 * H + j, b] + r * ws[3 * H + j, b]


@njit(**_OPTS)
def gru_output(ws, hx, hy):
    """h' = n + z (h - n) into hy (B, H)."""
    B, H = hx.shape
    for j in range(H):
        for b in range(B):
            n = ws[2 * H + j, b]
            hy[b, j] = n + ws[H + j, b] * (hx[b, j] - n)


@njit(**_OPTS)
def gru_grads(ws, hx, dh, d_in, d_hid, dhz, one):
    """From dh (B, H): the pre-activation gradients of the input side d_in and the hidden
    side d_hid (3H, B), and dhz = dh z (B, H), the part of h's gradient beside the GEMM."""
    B, H = hx.shape
    for j in range(H):
        for b in range(B):
            r = ws[j, b]
            z = ws[H + j, b]
            n = ws[2 * H + j, b]
            v = dh[b, j]
            dn = v * (one - z) * (one - n * n)
            dr = dn * ws[3 * H + j, b] * (r - r * r)
            dz = v * (hx[b, j] - n) * (z - z * z)
            d_in[j, b] = dr
            d_in[H + j, b] = dz
            d_in[2 * H + j, b] = dn
            d_hid[j, b] = dr
            d_hid[H + j, b] = dz
            d_hid[2 * H + j, b] = dn * r
            dhz[b, j] = v * z
