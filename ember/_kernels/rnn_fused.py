"""Fused kernels for LSTM and GRU layers (records in ember/_ops/nn_fused.py).

A layer kernel runs one direction of one layer over a whole padded sequence in one call,
like torch's CPU path: the input projections of all steps are one batched GEMM, each step
then does one GEMM of the hidden state and the gate nonlinearities in place, and the
backward folds the weight gradients into one GEMM each over all steps. Packed batches run
padded with the batch size of each step (``_live``); LSTM's projection (proj_size) is one
more small GEMM per step.

Layout. Everything inside runs gate-major with the batch last: the projections are
(T, G, B), each step's gates a contiguous (G, B) block, the states h, c (H, B). That is the
layout of the GEMM W_hh h^T, which is faster here than h W_hh^T and needs no transposed
copies of the gates. The biases ride in that GEMM as an extra weight column against a row
of ones under h (cheaper than a pass over the projections). The gate rows are
reordered so the sigmoid gates come first (LSTM: i, f, o, g; GRU: r, z, n), and their rows
of the weights and biases halved: one tanh pass covers every gate, as
sigmoid(x) = tanh(x/2)/2 + 1/2 and halving is exact in binary floating point.

The forward keeps what its backward needs in a byte workspace (like a reserve buffer): the
activated gates (and the cell states for LSTM, h_n's pre-gate part for GRU). The backward
writes each step's gate gradients into a contiguous (T, G, B) buffer, copied once into a
(G, T*B) matrix from which the gradients of the input, both weights and the bias are one
GEMM each. With the ``fast`` extra the steps' arithmetic runs in numba kernels
(ember/_kernels/compiled/rnn.py) and float32 tanh passes in the vectorised compiled tanh
(compiled/elementwise.py; NumPy's is a scalar loop on CPUs without AVX-512: an LSTM
layer's forward at the benchmark's sizes 20.2 -> 14.7 ms on an AVX2 EPYC); the NumPy path
stays (EMBER_NO_NUMBA=1).
"""
from __future__ import annotations

import numpy as np


def _compiled():
    """The numba kernels (ember/_kernels/compiled/rnn.py) when the ``fast`` extra is
    installed and not switched off (``EMBER_NO_NUMBA=1``, compiled.disable()), else None."""
    from ember._kernels import compiled
    return compiled.module("rnn")


def _compiled_elementwise():
    from ember._kernels import compiled
    return compiled.module("elementwise")


def _check(name, gates, x, h0, c0, w_ih, w_hh, b_ih, b_hh, batch_first, w_hr=None):
    """(T, B, H, E) after checking the operands; with ``w_hr`` (P, H) the states h and
    w_hh's columns have size P."""
    args = (("input", x), ("hx", h0), ("cx", c0), ("weight_ih", w_ih), ("weight_hh", w_hh),
            ("weight_hr", w_hr))
    for arg, a in args:
        if a is not None and not isinstance(a, np.ndarray):
            raise TypeError(f"{name}(): argument '{arg}' must be a Tensor")
    if x.ndim != 3 or h0.ndim != 2 or w_ih.ndim != 2 or w_hh.ndim != 2 or \
            (c0 is not None and c0.ndim != 2) or (w_hr is not None and w_hr.ndim != 2):
        raise RuntimeError(f"{name}(): expected input (T, B, E) or (B, T, E), hidden states "
                           f"(B, H), weight_ih ({gates}H, E) and weight_hh ({gates}H, H)")
    B, T, E = x.shape if batch_first else (x.shape[1], x.shape[0], x.shape[2])
    H = w_hh.shape[0] // gates
    P = H if w_hr is None else w_hr.shape[0]
    ok = w_hh.shape == (gates * H, P) and w_ih.shape == (gates * H, E) and \
        h0.shape == (B, P) and (c0 is None or c0.shape == (B, H)) and \
        (w_hr is None or w_hr.shape == (P, H)) and \
        all(b is None or b.shape == (gates * H,) for b in (b_ih, b_hh))
    if not ok:
        shapes = ", ".join(f"{arg} {list(a.shape)}" for arg, a in args if a is not None)
        raise RuntimeError(f"{name}(): inconsistent shapes: {shapes}")
    dt = x.dtype
    if dt.kind != "f" or any(a is not None and a.dtype != dt
                             for a in (h0, c0, w_ih, w_hh, b_ih, b_hh, w_hr)):
        raise RuntimeError(f"{name}(): expected floating tensors of one dtype, got "
                           + ", ".join(str(a.dtype) for _, a in args if a is not None))
    return T, B, H, E


def _tanh(a, out):
    """out = tanh(a) for a step's C-contiguous gate block: float32 by the compiled kernel
    (compiled/elementwise.py: vectorised, within 1 ulp) on this thread (handing a step's
    block to the pool cost more than it saved), else NumPy's."""
    kernels = _compiled_elementwise() if a.dtype == np.float32 else None
    if kernels is None:
        np.tanh(a, out=out)
    else:
        kernels.tanh(a.reshape(-1), out.reshape(-1))


def _tanh_sum(a, b, out):
    """out = tanh(a + b) for a step's C-contiguous blocks: one compiled pass for float32
    (``_tanh``), else NumPy's add and tanh."""
    kernels = _compiled_elementwise() if a.dtype == np.float32 else None
    if kernels is None:
        np.add(a, b, out=out)
        np.tanh(out, out=out)
    else:
        kernels.tanh_sum(a.reshape(-1), b.reshape(-1), out.reshape(-1))


def _perm(H, gates):
    """Internal row order: LSTM (i, f, g, o) -> (i, f, o, g); GRU stays (r, z, n)."""
    r = np.arange(gates * H)
    return np.concatenate((r[:2 * H], r[3 * H:], r[2 * H:3 * H])) if gates == 4 else r


def _scale(H, gates, dt):
    """Row scale of the pre-activations: 1/2 on the sigmoid gates, 1 on the tanh one."""
    s = np.full(gates * H, 0.5, dt)
    s[(gates - 1) * H:] = 1
    return s


def _time_rows(a, batch_first):
    """(T, B, *) or (B, T, *) -> (T*B, *) time-major rows (a copy only for batch_first)."""
    if not batch_first:
        return np.ascontiguousarray(a).reshape(a.shape[0] * a.shape[1], a.shape[2])
    rows = np.empty((a.shape[1], a.shape[0], a.shape[2]), a.dtype)
    np.copyto(rows, a.swapaxes(0, 1))
    return rows.reshape(-1, a.shape[2])


def _time_major(a, batch_first):
    return a.swapaxes(0, 1) if batch_first else a


def _steps(T, reverse):
    return range(T - 1, -1, -1) if reverse else range(T)


def _step_projections(x, w_ih, perm, scale, batch_first):
    """The scaled input projections without bias, (T, G, B), each step's block contiguous.
    With numba: one GEMM, gate-major (G, T*B) (a batched GEMM of 35 products of 32 columns
    ran at two thirds of its speed), its first two axes then swapped by a compiled copy
    (0.3 ms for the LSTM benchmark's 4.6 MB): a step reading its rows T*B apart touched a
    page per row (an LSTM step's gate pass 102 vs 51 us). Without numba: the batched GEMM
    (NumPy's swap costs more than it saves; the strided steps of the one GEMM read by
    NumPy's passes ran 1-4% slower in the LSTM and GRU layers)."""
    w = w_ih[perm]
    w *= scale[:, None]
    nb = _compiled()
    if nb is None:
        return np.matmul(w, _time_major(x, batch_first).transpose(0, 2, 1))
    T, B = (x.shape[1], x.shape[0]) if batch_first else x.shape[:2]
    xg = _matmul(w, _time_rows(x, batch_first).T).reshape(w.shape[0], T, B)
    steps = np.empty((T, w.shape[0], B), xg.dtype)
    nb.swap_leading(xg, steps)
    return steps


def _recurrent(w_hh, bias, perm, scale, h0):
    """The scaled recurrent weights (G, H), with the bias (G,) (scaled; or None) as an
    extra column, and the state buffer (H, B), with a row of ones under it for that column:
    (weights, state buffer, state view)."""
    G, H = w_hh.shape
    B = h0.shape[0]
    dt = w_hh.dtype
    k = H if bias is None else H + 1
    w = np.empty((G, k), dt)
    np.multiply(w_hh[perm], scale[:, None], out=w[:, :H])
    hb = np.empty((k, B), dt)
    if bias is not None:
        np.multiply(bias[perm], scale, out=w[:, H])
        hb[H] = 1
    h = hb[:H]
    np.copyto(h, h0.T)
    return w, hb, h



def _own_gemm_for(w, B):
    """Do a layer's step products w @ h (h (K, B)) run on ember's GEMM?"""
    from ember._kernels import own_gemm
    return w.dtype == np.float32 and w.size * B >= own_gemm.MIN_MACS and \
        own_gemm.kernels() is not None


def _step_product(w, B):
    """``f(h, out)``: out = w @ h for a layer's steps (h (K, B)). float32 products large
    enough run on ember's GEMM with w packed once for all the steps (Note [own GEMM] in
    own_gemm.py: OpenBLAS packs w again at every call), others on NumPy's."""
    from ember._kernels import own_gemm
    if _own_gemm_for(w, B):
        wp, m = own_gemm.pack(w), w.shape[0]
        return lambda h, out: own_gemm.matmul_packed(wp, m, h, out)
    return lambda h, out: np.matmul(w, h, out=out)


def _matmul(a, b):
    """A layer-wide product (projections, weight gradients) on ember's GEMM dispatch."""
    from ember._kernels import split
    return split.matmul(a, b)


# Note [input in the step]: on ember's GEMM (Note [own GEMM]) a float32 LSTM layer makes its
# input projections part of each step's product: [W_hh | b | W_ih] @ [h; 1; x_t] (the
# weights packed once), instead of one product for all the steps beforehand, its (G, T, B)
# result swapped to (T, G, B) and read back step by step (4.6 MB each way for the
# benchmark's layer); the steps' gate kernels then add a zero block.

def _input_in_step(w, hb, x, w_ih, perm, scale, batch_first):
    """(weights (G, K + E), state buffer (K + E, B), its h rows, the inputs (T, E, B)) for
    Note [input in the step], from ``_recurrent``'s (G, K) weights and (K, B) buffer."""
    G, K = w.shape
    E, B, H = w_ih.shape[1], hb.shape[1], G // 4
    wc = np.empty((G, K + E), w.dtype)
    wc[:, :K] = w
    np.multiply(w_ih[perm], scale[:, None], out=wc[:, K:])
    hc = np.empty((K + E, B), w.dtype)
    hc[:K] = hb
    xs = np.ascontiguousarray(x.transpose(1, 2, 0) if batch_first else x.transpose(0, 2, 1))
    return wc, hc, hc[:H], xs


def _bias_sum(b_ih, b_hh):
    if b_ih is None:
        return b_hh
    return b_ih if b_hh is None else b_ih + b_hh


# ------------------------------------------------------------------------------ LSTM

def _lstm_ws(ws, T, B, H):
    """The workspace's activated gates (T, 4H, B) in internal order (i, f, o, g), cell
    states c_t (T, H, B) and their tanh (T, H, B)."""
    n, m = T * 4 * H * B, T * H * B
    return (ws[:n].reshape(T, 4 * H, B), ws[n:n + m].reshape(T, H, B),
            ws[n + m:n + 2 * m].reshape(T, H, B))


def _keep_output(ws, used, out_t):
    """Copy the time-major output (T, B, P) into the workspace after its first ``used``
    values: the backward reads it there, so the caller may change the returned output in
    place (as torch's workspace allows)."""
    ws[used:used + out_t.size].reshape(out_t.shape)[...] = out_t


def _kept_output(ws, used, T, B, P, batch_first):
    """The output ``_keep_output`` stored, in the layer's layout."""
    out_t = ws[used:used + T * B * P].reshape(T, B, P)
    return out_t.transpose(1, 0, 2) if batch_first else out_t



# Note [LSTM steps on the pool]: a float32 step's gate pass (forward ~51 us alone, ~100 in the
# layer; backward ~65) is elementwise over the hidden units, so it runs split over them on
# OpenBLAS's threads (blas_pool.run), which the step's GEMM has just left spinning: torch's
# oneDNN cell splits its gates over both cores likewise. One context row per step, built for
# the whole layer at once (addresses of that step's blocks). Any split gives the same bits.
_POOL_STEP_MIN = 4096            # hidden units x batch below this: the caller's thread


def _step_pool(dt, H, B):
    """blas_pool's kernels when an LSTM step of (H, B) should run on OpenBLAS's threads."""
    if dt != np.float32 or H * B < _POOL_STEP_MIN:
        return None
    from ember._kernels import blas_pool
    return blas_pool.kernels()


def _rows(a, T):
    """Addresses of a[t] for t < T (a: (T, ...) array), as int64 (T,)."""
    return a.ctypes.data + np.arange(T, dtype=np.int64) * a.strides[0]


def _chain(first, steps, cells):
    """Per step t the address of the previous step's cells (``first`` for the first step
    run), steps in run order."""
    prev = np.empty(len(steps), np.int64)
    addr = _rows(cells, cells.shape[0])
    last = first
    for t in steps:
        prev[t] = last
        last = addr[t]
    return prev


def _run_step(pool, kernel, ctx, H, B):
    from ember._kernels import blas_pool
    blas_pool.run(kernel, ctx, H, max(1, 2048 // B))


def lstm_layer(x, h0, c0, w_ih, w_hh, b_ih=None, b_hh=None, reverse=False,
               batch_first=False, batch_sizes=None, w_hr=None):
    """One LSTM layer, one direction. x: (T, B, E) or (B, T, E) with ``batch_first``;
    h0, c0: (B, H); w_ih: (4H, E), w_hh: (4H, H), gates i, f, g, o; b_ih, b_hh: (4H,) or
    None; batch_sizes: see ``_live``; w_hr: (P, H) projection of h (then h0 (B, P) and
    w_hh (4H, P)) or None. Returns the output (T, B, P) or (B, T, P), h_n (B, P), c_n
    (B, H) and the workspace (uint8 bytes, see ``_lstm_ws``)."""
    T, B, H, E = _check("_lstm_layer", 4, x, h0, c0, w_ih, w_hh, b_ih, b_hh, batch_first,
                        w_hr)
    P = w_hh.shape[1]
    dt = x.dtype
    perm, scale = _perm(H, 4), _scale(H, 4, dt)
    w, hb, h = _recurrent(w_hh, _bias_sum(b_ih, b_hh), perm, scale, h0)   # h: (P, B)
    nb = _compiled()
    fused = nb is not None and dt == np.float32 and w_hr is None
    xs = None
    if fused and batch_sizes is None and _own_gemm_for(w, B):   # Note [input in the step]
        w, hb, h, xs = _input_in_step(w, hb, x, w_ih, perm, scale, batch_first)
        xg = np.broadcast_to(np.zeros((4 * H, B), dt), (T, 4 * H, B))
    else:
        xg = _step_projections(x, w_ih, perm, scale, batch_first)       # (T, G, B)
    hf = None if w_hr is None else np.empty((H, B), dt)                  # o tanh(c)
    out = np.empty((B, T, P) if batch_first else (T, B, P), dt)
    out_t = _time_major(out, batch_first)
    ws = np.empty(T * B * (6 * H + P), dt)
    gates, cells, tcells = _lstm_ws(ws, T, B, H)
    c = np.array(c0.T, dt, order="C")
    tmp = np.empty((H, B), dt)
    hw = np.empty((4 * H, B), dt)
    pool = _step_pool(dt, H, B) if fused else None
    if pool is not None:                      # Note [LSTM steps on the pool]
        ctxs = np.empty((T, 11), np.int64)
        ctxs[:, 0], ctxs[:, 2] = _rows(xg, T), _rows(gates, T)
        ctxs[:, 3] = _chain(c.ctypes.data, _steps(T, reverse), cells)
        ctxs[:, 4], ctxs[:, 5], ctxs[:, 7] = _rows(cells, T), _rows(tcells, T), _rows(out_t, T)
        ctxs[:, 1], ctxs[:, 6] = hw.ctypes.data, h.ctypes.data
        ctxs[:, 8], ctxs[:, 9], ctxs[:, 10] = out_t.strides[1] // 4, H, B
    half = dt.type(0.5)
    product = _step_product(w, B)
    with np.errstate(over="ignore", under="ignore"):
        for t in _steps(T, reverse):
            L = _live(batch_sizes, t, B)
            keep = h[:, L:].copy() if L < B else None
            pre, cn, tc = gates[t], cells[t], tcells[t]
            if xs is not None:
                np.copyto(hb[hb.shape[0] - xs.shape[1]:], xs[t])
            product(hb, hw)
            if pool is not None:
                _run_step(pool, pool.lstm_forward, ctxs[t], H, B)
            elif fused:     # the step's passes in one call; lo, hi given: numba dispatches
                            # a call that leaves defaults out in Python (~30 us, not 0.3)
                nb.lstm_forward_step(xg[t], hw, pre, c, cn, tc, h, out_t[t], half, 0, -1)
            elif nb is not None:                         # float64, or with a projection
                _tanh_sum(xg[t], hw, pre)
                nb.lstm_cell_update(pre, c, cn, half, 0, -1)
                _tanh(cn, tc)
                if hf is None:
                    nb.lstm_output(pre, tc, h, out_t[t], 0, -1)
            else:                                        # no numba: NumPy's passes
                _tanh_sum(xg[t], hw, pre)
                sg = pre[:3 * H]                         # i, f, o: tanh(x/2)/2 + 1/2
                sg *= 0.5
                sg += 0.5
                np.multiply(pre[H:2 * H], c, out=cn)     # f * c
                np.multiply(pre[:H], pre[3 * H:], out=tmp)   # i * g
                cn += tmp
                _tanh(cn, tc)
                if hf is None:
                    np.multiply(pre[2 * H:3 * H], tc, out=h)     # h = o * tanh(c)
                    np.copyto(out_t[t], h.T)
            if hf is not None:                           # h = W_hr (o * tanh(c))
                np.multiply(pre[2 * H:3 * H], tc, out=hf)
                np.matmul(w_hr, hf, out=h)
                np.copyto(out_t[t], h.T)
            if keep is not None:                         # sequences not running keep h, c
                h[:, L:] = keep
                cn[:, L:] = c[:, L:]
                out_t[t][L:] = keep.T
            c = cn
    _keep_output(ws, T * B * 6 * H, out_t)
    return out, np.array(h.T, order="C"), np.array(c.T, order="C"), ws.view(np.uint8)


def _live(batch_sizes, t, B):
    """Sequences running at step t. Packed batches (``batch_sizes`` (T,), non-increasing,
    sorted by length) run the first batch_sizes[t] columns; the others keep their state
    (the last one of an ended sequence, h0/c0 before a reversed one starts), and the output
    there holds it; the backward sends no gradient through their gates."""
    return B if batch_sizes is None else int(batch_sizes[t])


def _grad_weights(dg, x, w_ih, hprev, perm, batch_first, need_input, need_weight,
                  need_bias):
    """From the gate gradients dg (G, T*B) (rows in the order ``perm`` of torch's): grad of
    the input (in the input's layout), of w_ih and, when ``hprev`` (T, B, H) is given,
    w_hh (rows in torch's order) and of the bias (None where not needed)."""
    from ember._kernels import own_gemm
    G = dg.shape[0]
    B, T = x.shape[:2] if batch_first else x.shape[1::-1]
    dt = dg.dtype
    gx = gwi = gwh = gb = None
    xr = _time_rows(x, batch_first) if need_weight else None
    # on ember's GEMM (Note [own GEMM]): the input gradient as (W_ih^T dg)^T, which packs the
    # small W_ih^T rather than dg^T, and dg packed once for both weight gradients
    own = own_gemm.wanted(dg, xr if xr is not None else w_ih.T)
    if need_input:
        if own and own_gemm.wanted(w_ih.T, dg):
            rows = _matmul(w_ih[perm].T, dg).T.reshape(T, B, -1)
        else:
            rows = _matmul(dg.T, w_ih[perm]).reshape(T, B, -1)
        gx = rows
        if batch_first or not rows.flags.c_contiguous:
            gx = np.empty((B, T, rows.shape[2]) if batch_first else rows.shape, dt)
            np.copyto(gx, rows.swapaxes(0, 1) if batch_first else rows)
    if need_weight:
        dgp = own_gemm.pack(dg) if own else None

        def by_dg(b):
            if dgp is None:
                return _matmul(dg, b)
            return own_gemm.matmul_packed(dgp, G, b, np.empty((G, b.shape[1]), dt))
        gwi = np.empty(w_ih.shape, dt)
        gwi[perm] = by_dg(xr)
        if hprev is not None:
            gwh = np.empty((G, hprev.shape[2]), dt)
            gwh[perm] = by_dg(hprev.reshape(T * B, -1))
    if need_bias:
        gb = np.empty(G, dt)
        gb[perm] = np.matmul(dg, np.ones(dg.shape[1], dt))
    return gx, gwi, gwh, gb


def _gate_major(dg3):
    """(T, G, B) -> (G, T*B)."""
    T, G, B = dg3.shape
    dg = np.empty((G, T, B), dg3.dtype)
    nb = _compiled()
    if nb is not None and dg3.flags.c_contiguous:
        nb.swap_leading(dg3, dg)
    else:
        np.copyto(dg, dg3.transpose(1, 0, 2))
    return dg.reshape(G, T * B)


def _hprev(output, h0, reverse, batch_first):
    """The state entering each step, time-major (T, B, H)."""
    out_t = _time_major(output, batch_first)
    T = out_t.shape[0]
    hp = np.empty(out_t.shape, output.dtype)
    if reverse:
        hp[:T - 1] = out_t[1:]
        hp[T - 1] = h0
    else:
        hp[1:] = out_t[:-1]
        hp[0] = h0
    return hp


def lstm_layer_backward(grad_output, grad_hn, grad_cn, x, h0, c0, w_ih, w_hh, output,
                        workspace, reverse=False, batch_first=False, need_input=True,
                        need_weight=True, need_bias=True, batch_sizes=None, w_hr=None):
    """Gradients of ``lstm_layer`` w.r.t. (x, h0, c0, w_ih, w_hh, bias, w_hr) given those of
    (output, h_n, c_n); the bias gradient is that of b_ih and of b_hh alike. Parts not
    asked for come back as zeros (w_hr's: empty without a projection). ``output`` None:
    the copy kept in the workspace."""
    H = w_hh.shape[0] // 4
    if output is None:
        T, B = x.shape[1::-1] if batch_first else x.shape[:2]
        output = _kept_output(workspace.view(x.dtype), T * B * 6 * H, T, B, w_hh.shape[1],
                              batch_first)
    dt = output.dtype
    out_t = _time_major(output, batch_first)
    T, B, P = out_t.shape
    z = np.zeros
    gwr = z((0, 0), dt) if w_hr is None else z(w_hr.shape, dt)
    if T == 0:
        return (z(x.shape, dt), np.array(np.broadcast_to(grad_hn, (B, P)), dt),
                np.array(np.broadcast_to(grad_cn, (B, H)), dt), z(w_ih.shape, dt),
                z(w_hh.shape, dt), z(4 * H, dt), gwr)
    gates, cells, tcells = _lstm_ws(workspace.view(dt), T, B, H)
    wt = np.ascontiguousarray(w_hh[_perm(H, 4)].T)       # (P, 4H): faster step GEMMs
    dg3 = np.empty((T, 4 * H, B), dt)       # per step contiguous, (G, T*B) after the loop
    dh = np.array(np.broadcast_to(grad_hn, (B, P)).T, dtype=dt, order="C")   # (P, B)
    dc = np.array(np.broadcast_to(grad_cn, (B, H)).T, dtype=dt, order="C")   # (H, B)
    c0t = c0.T
    go = None if grad_output is None else \
        _time_major(np.broadcast_to(grad_output, output.shape), batch_first)
    # with a projection: the gradient of o tanh(c) is W_hr^T dh, kept per step for dW_hr
    dhs3 = None if w_hr is None else np.empty((T, P, B), dt)
    dhf = dh if w_hr is None else np.empty((H, B), dt)
    tmp = np.empty((H, B), dt)
    fac = np.empty((4 * H, B), dt)
    d = np.empty((4 * H, B), dt)
    nb = _compiled()
    one, no_go = dt.type(1), np.zeros((0, 0), dt)
    pool = _step_pool(dt, H, B) if nb is not None and dhs3 is None else None
    if pool is not None:                      # Note [LSTM steps on the pool]
        if go is not None and (go.strides[2] != 4 or go.strides[1] < 4 * H or
                               go.strides[1] % 4 or go.strides[0] <= 0):
            go = np.ascontiguousarray(go)
        c0t = np.ascontiguousarray(c0t)
        ctxs = np.empty((T, 10), np.int64)
        ctxs[:, 0], ctxs[:, 3] = dh.ctypes.data, dc.ctypes.data
        ctxs[:, 1], ctxs[:, 2] = (0, H) if go is None else (_rows(go, T), go.strides[1] // 4)
        ctxs[:, 4], ctxs[:, 5], ctxs[:, 7] = _rows(gates, T), _rows(tcells, T), _rows(dg3, T)
        ctxs[:, 6] = _chain(c0t.ctypes.data, _steps(T, reverse), cells)
        ctxs[:, 8], ctxs[:, 9] = H, B
    product = _step_product(wt, B)
    for t in _steps(T, not reverse):
        tp = t + 1 if reverse else t - 1
        c_prev = c0t if (tp < 0 or tp >= T) else cells[tp]
        gt, tc = gates[t], tcells[t]
        L = _live(batch_sizes, t, B)
        dc_keep = dc[:, L:].copy() if L < B else None
        go_t = None if go is None else go[t]
        if dhs3 is not None:
            if go_t is not None:
                dh += go_t.T
                go_t = None
            np.copyto(dhs3[t], dh)
            if L < B:
                dhs3[t][:, L:] = 0
            np.matmul(w_hr.T, dh, out=dhf)
        if pool is not None:
            _run_step(pool, pool.lstm_backward, ctxs[t], H, B)
        elif nb is not None:
            nb.lstm_backward_step(dhf, no_go if go_t is None else go_t, dc, gt, tc, c_prev,
                                  dg3[t], one, 0, -1)
        else:
            if go_t is not None:
                dh += go_t.T
            np.multiply(dhf, tc, out=d[2 * H:3 * H])     # d o
            np.multiply(tc, tc, out=tmp)                  # dc += dh o (1 - tanh(c)^2)
            np.subtract(1, tmp, out=tmp)
            tmp *= gt[2 * H:3 * H]
            tmp *= dhf
            dc += tmp
            np.multiply(dc, gt[3 * H:], out=d[:H])       # d i = dc g
            np.multiply(dc, c_prev, out=d[H:2 * H])       # d f = dc c_{t-1}
            np.multiply(dc, gt[:H], out=d[3 * H:])        # d g = dc i
            dc *= gt[H:2 * H]
            # through the nonlinearities: s - s^2 for i, f, o; 1 - g^2 for g
            np.multiply(gt, gt, out=fac)
            np.subtract(gt[:3 * H], fac[:3 * H], out=fac[:3 * H])
            np.subtract(1, fac[3 * H:], out=fac[3 * H:])
            np.multiply(d, fac, out=dg3[t])
        if dc_keep is not None:                          # idle columns: straight through
            dh_keep = dh[:, L:].copy()
            dg3[t][:, L:] = 0
            dc[:, L:] = dc_keep
        product(dg3[t], dh)
        if dc_keep is not None:
            dh[:, L:] = dh_keep
    hprev = _hprev(output, h0, reverse, batch_first) if need_weight else None
    gx, gwi, gwh, gb = _grad_weights(_gate_major(dg3), x, w_ih, hprev,
                                     _perm(H, 4), batch_first, need_input, need_weight,
                                     need_bias)
    if dhs3 is not None and need_weight:                 # dW_hr = sum_t dh_t (o tanh c)_t^T
        hf3 = np.multiply(gates[:, 2 * H:3 * H], tcells)
        gwr = np.matmul(_gate_major(dhs3), _gate_major(hf3).T)
    return (z(x.shape, dt) if gx is None else gx, np.array(dh.T, order="C"),
            np.array(dc.T, order="C"), z(w_ih.shape, dt) if gwi is None else gwi,
            z(w_hh.shape, dt) if gwh is None else gwh, z(4 * H, dt) if gb is None else gb,
            gwr)


# ------------------------------------------------------------------------------- GRU

def _gru_ws(ws, T, B, H):
    """The workspace's activated gates (T, 3H, B) (r, z, n) and the recurrent part of n's
    pre-activation, W_hn h_{t-1} + b_hn (T, H, B)."""
    n = T * 3 * H * B
    return ws[:n].reshape(T, 3 * H, B), ws[n:n + T * H * B].reshape(T, H, B)


def _gru_x_perm(H):
    """Rows of the input-side gradients (n, r, z) in torch's order (r, z, n)."""
    r = np.arange(3 * H)
    return np.concatenate((r[2 * H:], r[:2 * H]))


def gru_layer(x, h0, w_ih, w_hh, b_ih=None, b_hh=None, reverse=False, batch_first=False,
              batch_sizes=None):
    """One GRU layer, one direction. x: (T, B, E) or (B, T, E) with ``batch_first``;
    h0: (B, H); w_ih: (3H, E), w_hh: (3H, H), gates r, z, n; b_ih, b_hh: (3H,) or None;
    batch_sizes: see ``_live``.
    Returns the output (T, B, H) or (B, T, H), h_n (B, H) and the workspace (uint8 bytes,
    see ``_gru_ws``). n = tanh(x_n + r (W_hn h + b_hn)), h' = n + z (h - n)."""
    T, B, H, E = _check("_gru_layer", 3, x, h0, None, w_ih, w_hh, b_ih, b_hh, batch_first)
    dt = x.dtype
    perm, scale = _perm(H, 3), _scale(H, 3, dt)
    # the recurrent GEMM's bias column: b_ir + b_hr, b_iz + b_hz, and b_hn (inside r's
    # product); b_in is added to n's rows with r (W_hn h + b_hn)
    bias = None
    if b_ih is not None or b_hh is not None:
        bias = np.zeros(3 * H, dt) if b_hh is None else b_hh.copy()
        if b_ih is not None:
            bias[:2 * H] += b_ih[:2 * H]
    b_in = np.zeros((H, 1), dt) if b_ih is None else b_ih[2 * H:, None]
    xg = _step_projections(x, w_ih, perm, scale, batch_first)
    w, hb, h = _recurrent(w_hh, bias, perm, scale, h0)                    # h: (H, B)
    out = np.empty((B, T, H) if batch_first else (T, B, H), dt)
    out_t = _time_major(out, batch_first)
    ws = np.empty(T * B * 5 * H, dt)
    gates, hns = _gru_ws(ws, T, B, H)
    tmp = np.empty((H, B), dt)
    hw = np.empty((3 * H, B), dt)
    nb = _compiled()
    half = dt.type(0.5)
    product = _step_product(w, B)
    with np.errstate(over="ignore", under="ignore"):
        for t in _steps(T, reverse):
            L = _live(batch_sizes, t, B)
            keep = h[:, L:].copy() if L < B else None
            g, hn, xt = gates[t], hns[t], xg[t]
            product(hb, hw)
            _tanh_sum(xt[:2 * H], hw[:2 * H], g[:2 * H])
            if nb is not None:
                nb.gru_gates(g, hw, b_in, xt, hn, half)
                _tanh(g[2 * H:], g[2 * H:])
                nb.gru_output(g, h, out_t[t])
            else:
                rz = g[:2 * H]                           # r, z: tanh(x/2)/2 + 1/2
                rz *= 0.5
                rz += 0.5
                np.copyto(hn, hw[2 * H:])                # W_hn h + b_hn
                n = g[2 * H:]
                np.multiply(g[:H], hn, out=n)            # x_n + b_in + r (W_hn h + b_hn)
                n += xt[2 * H:]
                n += b_in
                _tanh(n, n)
                np.subtract(h, n, out=tmp)               # h' = n + z (h - n)
                tmp *= g[H:2 * H]
                np.add(n, tmp, out=h)
                np.copyto(out_t[t], h.T)
            if keep is not None:                         # sequences not running keep h
                h[:, L:] = keep
                out_t[t][L:] = keep.T
    _keep_output(ws, T * B * 4 * H, _time_major(out, batch_first))
    return out, np.array(h.T, order="C"), ws.view(np.uint8)


def gru_layer_backward(grad_output, grad_hn, x, h0, w_ih, w_hh, output, workspace,
                       reverse=False, batch_first=False, need_input=True, need_weight=True,
                       need_bias=True, batch_sizes=None):
    """Gradients of ``gru_layer`` w.r.t. (x, h0, w_ih, w_hh, b_ih, b_hh) given those of
    (output, h_n). Parts not asked for come back as zeros. ``output`` None: the copy kept
    in the workspace."""
    if output is None:
        T, B = x.shape[1::-1] if batch_first else x.shape[:2]
        H = w_hh.shape[1]
        output = _kept_output(workspace.view(x.dtype), T * B * 4 * H, T, B, H, batch_first)
    dt = output.dtype
    out_t = _time_major(output, batch_first)
    T, B, H = out_t.shape
    z = np.zeros
    if T == 0:
        return (z(x.shape, dt), np.array(np.broadcast_to(grad_hn, (B, H)), dt),
                z(w_ih.shape, dt), z(w_hh.shape, dt), z(3 * H, dt), z(3 * H, dt))
    gates, hns = _gru_ws(workspace.view(dt), T, B, H)
    wt = w_hh.T
    # per step rows: d n_pre, d r_pre, d z_pre, d (W_hn h + b_hn): the input side is rows
    # 0:3H (order n, r, z), the recurrent side rows H:4H (order r, z, n)
    dg3 = np.empty((T, 4 * H, B), dt)
    dh = np.array(np.broadcast_to(grad_hn, (B, H)).T, dtype=dt, order="C")   # (H, B)
    go = None if grad_output is None else \
        _time_major(np.broadcast_to(grad_output, output.shape), batch_first)
    h0t = h0.T
    dhz = np.empty((H, B), dt)
    tmp = np.empty((H, B), dt)
    nb = _compiled()
    one, no_go = dt.type(1), np.zeros((0, 0), dt)
    product = _step_product(wt, B)
    for t in _steps(T, not reverse):
        tp = t + 1 if reverse else t - 1
        hprev = h0t if (tp < 0 or tp >= T) else out_t[tp].T
        g, hn, d = gates[t], hns[t], dg3[t]
        if nb is not None:
            nb.gru_backward_step(dh, no_go if go is None else go[t], g, hn, hprev, d, dhz,
                                 one)
        else:
            r, zg, n = g[:H], g[H:2 * H], g[2 * H:]
            if go is not None:
                dh += go[t].T
            np.multiply(dh, zg, out=dhz)                  # straight through z
            dn = d[:H]
            np.subtract(1, zg, out=dn)                    # d n = dh (1 - z) (1 - n^2)
            dn *= dh
            np.multiply(n, n, out=tmp)
            np.subtract(1, tmp, out=tmp)
            dn *= tmp
            np.multiply(dn, hn, out=d[H:2 * H])           # d r = dn hn r (1 - r)
            np.multiply(r, r, out=tmp)
            np.subtract(r, tmp, out=tmp)
            d[H:2 * H] *= tmp
            np.subtract(hprev, n, out=d[2 * H:3 * H])     # d z = dh (h - n) z (1 - z)
            d[2 * H:3 * H] *= dh
            np.multiply(zg, zg, out=tmp)
            np.subtract(zg, tmp, out=tmp)
            d[2 * H:3 * H] *= tmp
            np.multiply(dn, r, out=d[3 * H:])             # d hn = dn r
        L = _live(batch_sizes, t, B)
        if L < B:                                         # idle columns: straight through
            dh_keep = dh[:, L:].copy()
            d[:, L:] = 0
        product(d[H:], dh)
        dh += dhz
        if L < B:
            dh[:, L:] = dh_keep
    dg = _gate_major(dg3)
    px = _gru_x_perm(H)
    gx, gwi, _, gbi = _grad_weights(dg[:3 * H], x, w_ih, None, px, batch_first, need_input,
                                    need_weight, need_bias)
    gwh = _matmul(dg[H:], _hprev(output, h0, reverse, batch_first).reshape(T * B, H)) \
        if need_weight else z(w_hh.shape, dt)
    gbh = np.matmul(dg[H:], np.ones(T * B, dt)) if need_bias else z(3 * H, dt)
    return (z(x.shape, dt) if gx is None else gx, np.array(dh.T, order="C"),
            z(w_ih.shape, dt) if gwi is None else gwi, gwh,
            z(3 * H, dt) if gbi is None else gbi, gbh)
