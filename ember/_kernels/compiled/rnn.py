"""numba kernels for the LSTM / GRU layer kernels (ember/_kernels/rnn_fused.py): one pass
over a time step's gates where NumPy needs a dozen. Only arithmetic is compiled here
(constants passed in the arrays' dtype, so float32 stays float32); the tanh passes are
compiled/elementwise.py's vectorised float32 tanh (numba's own would call libm per
element), called from ``lstm_forward_step`` for a float32 LSTM step in one call, else by
rnn_fused between these kernels. No fast-math here, so every product and sum rounds as
written. Imported only through rnn_fused._compiled().
"""
from __future__ import annotations

from numba import njit

from ember._kernels.compiled.elementwise import tanh as _tanh

_OPTS = dict(cache=True, nogil=True)


@njit(**_OPTS)
def lstm_cell_update(gates, c, cn, half, lo=0, hi=-1):
    """After the tanh pass over gates (4H, B) (rows i, f, o, g, the first three still
    tanh(x/2)): make them sigmoids, s/2 + 1/2, and cn = f c + i g (H, B), for the hidden
    units [lo, hi) (hi -1: to H). ``half``: 0.5 in the gates' dtype."""
    H, B = c.shape
    for j in range(lo, H if hi < 0 else hi):
        for b in range(B):
            i = gates[j, b] * half + half
            f = gates[H + j, b] * half + half
            gates[j, b] = i
            gates[H + j, b] = f
            gates[2 * H + j, b] = gates[2 * H + j, b] * half + half
            cn[j, b] = f * c[j, b] + i * gates[3 * H + j, b]


@njit(**_OPTS)
def lstm_output(gates, tc, h, out_t, lo=0, hi=-1):
    """h = o tanh(c) (H, B) for the hidden units [lo, hi), also written transposed into the
    output rows out_t (B, H)."""
    H, B = h.shape
    hi = H if hi < 0 else hi
    for j in range(lo, hi):
        for b in range(B):
            h[j, b] = gates[2 * H + j, b] * tc[j, b]
    for b in range(B):
        for j in range(lo, hi):
            out_t[b, j] = h[j, b]


@njit(**_OPTS)
def lstm_forward_step(xt, hw, gates, c, cn, tc, h, out_t, half, lo=0, hi=-1):
    """A step of a float32 layer after the recurrent GEMM, for the hidden units [lo, hi)
    (rows j, H + j, 2H + j, 3H + j of the gates; hi -1: to H): gates (4H, B) = the
    activations of xt + hw (xt (4H, B) the step's input projections; i, f, o as sigmoids
    through tanh(x/2), their rows of xt and hw prescaled by 1/2; g as tanh), cn = f c + i g,
    tc = tanh(cn), h = o tc (H, B), also written transposed into out_t (B, H). Every
    element is computed alone, so any split of the units over threads gives the same
    bits."""
    G, B = gates.shape
    H = G // 4
    hi = H if hi < 0 else hi
    n = (hi - lo) * B
    for q in range(4):
        r = q * H + lo
        for j in range(r, r + hi - lo):
            for b in range(B):
                gates[j, b] = xt[j, b] + hw[j, b]
        part = gates[r:r + hi - lo].reshape(n)
        _tanh(part, part)
    lstm_cell_update(gates, c, cn, half, lo, hi)
    _tanh(cn[lo:hi].reshape(n), tc[lo:hi].reshape(n))
    lstm_output(gates, tc, h, out_t, lo, hi)


@njit(**_OPTS)
def lstm_backward_step(dh, go_t, dc, gates, tc, c_prev, d, one, lo=0, hi=-1):
    """One step back for the hidden units [lo, hi) (hi -1: to H): dh (H, B) += go_t^T
    (go_t (B, H), or empty (0, 0)); the gate gradients d (4H, B) (rows i, f, o, g, w.r.t.
    the pre-activations) and dc (H, B) updated to the gradient of c_{t-1}. ``one``: 1 in
    the arrays' dtype."""
    H, B = dh.shape
    hi = H if hi < 0 else hi
    if go_t.shape[0]:
        for b in range(B):
            for j in range(lo, hi):
                dh[j, b] += go_t[b, j]
    for j in range(lo, hi):
        for b in range(B):
            i = gates[j, b]
            f = gates[H + j, b]
            o = gates[2 * H + j, b]
            g = gates[3 * H + j, b]
            t = tc[j, b]
            v = dh[j, b]
            dcv = dc[j, b] + v * o * (one - t * t)
            d[j, b] = dcv * g * (i - i * i)
            d[H + j, b] = dcv * c_prev[j, b] * (f - f * f)
            d[2 * H + j, b] = v * t * (o - o * o)
            d[3 * H + j, b] = dcv * i * (one - g * g)
            dc[j, b] = dcv * f


@njit(**_OPTS)
def swap_leading(src, dst):
    """dst (B, A, C) = src (A, B, C) with its first two axes swapped: the per-step gate
    gradients (T, G, B) as one (G, T*B) matrix for the weight GEMMs, the gate-major input
    projections (G, T, B) as contiguous steps. NumPy's copy of the swapped view walks rows
    of C elements (32 in the benchmark) at ~6x this loop's time."""
    A, B, C = src.shape
    for a in range(A):
        for b in range(B):
            for c in range(C):
                dst[b, a, c] = src[a, b, c]


@njit(**_OPTS)
def gru_gates(gates, hw, b_in, xt, hn, half):
    """After the tanh pass over r, z (rows 0:2H of gates (3H, B), still tanh(x/2)): make
    them sigmoids, keep hn = W_hn h + b_hn (hw's rows 2H:3H), and give the rows of n the
    pre-activation x_n + b_in + r hn (x_n: rows 2H:3H of xt, b_in (H, 1))."""
    H, B = hn.shape
    for j in range(H):
        for b in range(B):
            r = gates[j, b] * half + half
            gates[j, b] = r
            gates[H + j, b] = gates[H + j, b] * half + half
            v = hw[2 * H + j, b]
            hn[j, b] = v
            gates[2 * H + j, b] = r * v + xt[2 * H + j, b] + b_in[j, 0]


@njit(**_OPTS)
def gru_output(gates, h, out_t):
    """h' = n + z (h - n) (H, B) in place, also written transposed into out_t (B, H)."""
    H, B = h.shape
    for j in range(H):
        for b in range(B):
            n = gates[2 * H + j, b]
            h[j, b] = n + gates[H + j, b] * (h[j, b] - n)
    for b in range(B):
        for j in range(H):
            out_t[b, j] = h[j, b]


@njit(**_OPTS)
def gru_backward_step(dh, go_t, gates, hn, hprev, d, dhz, one):
    """One step back: dh (H, B) += go_t^T (go_t (B, H), or empty (0, 0)); d (4H, B) gets
    the gradients of n's, r's and z's pre-activations and of hn; dhz = dh z (the part of
    the previous state's gradient that skips the GEMM)."""
    H, B = dh.shape
    if go_t.shape[0]:
        for b in range(B):
            for j in range(H):
                dh[j, b] += go_t[b, j]
    for j in range(H):
        for b in range(B):
            r = gates[j, b]
            z = gates[H + j, b]
            n = gates[2 * H + j, b]
            v = dh[j, b]
            dhz[j, b] = v * z
            dn = (one - z) * v * (one - n * n)
            d[j, b] = dn
            d[H + j, b] = dn * hn[j, b] * (r - r * r)
            d[2 * H + j, b] = (hprev[j, b] - n) * v * (z - z * z)
            d[3 * H + j, b] = dn * r

