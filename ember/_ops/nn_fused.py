"""Fused records behind nn layers whose composite form costs many small ops per call.

``_lstm_layer``: one LSTM layer, one direction, over a padded sequence (input projection and
recurrence of ember.nn.LSTM; kernels in ember/_kernels/rnn_fused.py). Like torch's CPU
path it returns a byte workspace (not differentiable) holding the activated gates and cell
states for its backward. Its backward rule calls the fused ``_lstm_layer_backward`` for a
plain backward; under create_graph (double backward, forward-mode AD) it recomputes the
layer in ember ops and backpropagates through time in ember ops, so it is differentiable
again.

``embedding``: rows of the weight at the indices; its backward ``_embedding_backward`` sums
the gradient rows per index (sorted runs, no scatter-add), and is linear in the gradient, so
its own VJP is ``embedding`` again.

``_cross_entropy``: logits (N, C) against class indices; returns the loss, each row's
logsumexp (differentiable too) and a byte workspace with softmax(x) for the backward (the
buffer torch keeps as log_softmax's output).
"""
from __future__ import annotations

from ember._kernels import nn_fused as K
from ember._kernels import rnn_fused as R
from ember._kernels.util import half_in_float32
from ember._ops.registry import OpDef
from ember.autograd.grad_mode import is_grad_enabled

lstm_layer = OpDef(
    "_lstm_layer(Tensor input, Tensor hx, Tensor cx, Tensor weight_ih, Tensor weight_hh, "
    "Tensor? bias_ih=None, Tensor? bias_hh=None, bool reverse=False, bool batch_first=False, "
    "Tensor? batch_sizes=None, Tensor? weight_hr=None) "
    "-> (Tensor output, Tensor h_n, Tensor c_n, Tensor workspace)",
    half_in_float32(R.lstm_layer), promote=None,
    saves=("input", "hx", "cx", "weight_ih", "weight_hh", "bias_ih", "bias_hh", "batch_sizes",
           "weight_hr", "workspace"),
    grad_name="MkldnnRnnLayerBackward0")          # as torch's CPU (oneDNN) LSTM node

lstm_layer_backward = OpDef(
    "_lstm_layer_backward(Tensor? grad_output, Tensor grad_hn, Tensor grad_cn, Tensor input, "
    "Tensor hx, Tensor cx, Tensor weight_ih, Tensor weight_hh, Tensor? output, "
    "Tensor workspace, bool reverse=False, bool batch_first=False, bool need_input=True, "
    "bool need_weight=True, bool need_bias=True, Tensor? batch_sizes=None, "
    "Tensor? weight_hr=None) -> (Tensor grad_input, Tensor grad_hx, Tensor grad_cx, "
    "Tensor grad_weight_ih, Tensor grad_weight_hh, Tensor grad_bias, Tensor grad_weight_hr)",
    half_in_float32(R.lstm_layer_backward), promote=None, differentiable=False)


def _time_major(x, batch_first):
    return x.transpose(0, 1) if batch_first else x


def _projection(x, w_ih, b_ih, b_hh):
    """x (T, B, E) @ w_ih^T plus both biases, in ember ops."""
    import ember
    xw = ember.matmul(x, w_ih.t())
    for b in (b_ih, b_hh):
        if b is not None:
            xw = xw + b
    return xw


def _masks(batch_sizes, T, B):
    """Per step, None when every sequence runs, else a (B, 1) bool tensor of the running
    ones (packed batches: the first batch_sizes[t]; the others keep their state)."""
    import numpy as np
    import ember
    if batch_sizes is None:
        return [None] * T
    sizes = batch_sizes.tolist()
    return [None if n >= B else ember.from_numpy((np.arange(B) < n)[:, None])
            for n in sizes]


def _keep(mask, new, old):
    import ember
    return new if mask is None else ember.where(mask, new, old)


def _lstm_recompute(xw, h0, c0, w_hh, reverse, masks, w_hr):
    """The recurrence in ember ops over time-major projections ``xw`` (T, B, 4H): per step
    (activated gates i, f, g, o; c; h; o tanh(c))."""
    import ember
    T = xw.shape[0]
    w_t = w_hh.t()
    h, c = h0, c0
    steps = [None] * T
    for t in _order(T, reverse):
        i, f, g, o = ember.addmm(xw[t], h, w_t).chunk(4, 1)
        i, f, g, o = ember.sigmoid(i), ember.sigmoid(f), ember.tanh(g), ember.sigmoid(o)
        c = _keep(masks[t], f * c + i * g, c)
        hf = o * ember.tanh(c)
        h = _keep(masks[t], hf if w_hr is None else ember.mm(hf, w_hr.t()), h)
        steps[t] = (i, f, g, o, c, h, hf)
    return steps


def _order(T, reverse):
    return range(T - 1, -1, -1) if reverse else range(T)


def _input_grads(dpre, x, w_ih, h_prev, H, n, bias_at):
    """From the pre-activation gradients per step (lists over time of (B, G)): the
    gradients of x (time-major), w_ih, w_hh, and the biases (at ``bias_at`` of ``n``), in
    ember ops. ``h_prev``: the states entering each step (list over time)."""
    import ember
    d = ember.stack(dpre, 0)                             # (T, B, G)
    G = d.shape[-1]
    rows = d.reshape(-1, G)
    gx = ember.matmul(d, w_ih) if n[0] else None
    gwi = ember.mm(rows.t(), x.reshape(-1, x.shape[-1])) if n[3] else None
    gwh = ember.mm(rows.t(), ember.stack(h_prev, 0).reshape(-1, H)) if n[4] else None
    gb = rows.sum(0) if any(n[i] for i in bias_at) else None
    return gx, gwi, gwh, tuple(gb if n[i] else None for i in bias_at)


def _lstm_bptt(grads, x, h0, c0, w_ih, w_hh, b_ih, b_hh, reverse, batch_first, batch_sizes,
               w_hr, n):
    """Backpropagation through time in ember ops (differentiable): the gradients of
    (input, hx, cx, weight_ih, weight_hh, bias_ih, bias_hh, weight_hr)."""
    g_out, g_hn, g_cn = grads[0], grads[1], grads[2]
    x = _time_major(x, batch_first)
    T = x.shape[0]
    masks = _masks(batch_sizes, T, x.shape[1])
    steps = _lstm_recompute(_projection(x, w_ih, b_ih, b_hh), h0, c0, w_hh, reverse, masks,
                            w_hr)
    if g_out is not None:
        g_out = _time_major(g_out, batch_first)
    import ember
    dh = g_hn if g_hn is not None else ember.zeros_like(h0)
    dc = g_cn if g_cn is not None else ember.zeros_like(c0)
    dpres, hprev, dhs = [None] * T, [None] * T, [None] * T
    for t in _order(T, not reverse):
        tp = t + 1 if reverse else t - 1
        first = tp < 0 or tp >= T
        c_prev = c0 if first else steps[tp][4]
        hprev[t] = h0 if first else steps[tp][5]
        i, f, g, o, c, _, _ = steps[t]
        if g_out is not None:
            dh = dh + g_out[t]
        dh_in, dc_in, m = dh, dc, masks[t]
        if w_hr is not None:                             # through the projection
            dhs[t] = dh if m is None else dh * m
            dh = ember.mm(dh, w_hr)
        tc = ember.tanh(c)
        do = dh * tc
        dc = dc + dh * o * (1 - tc * tc)
        di, dg, df = dc * g, dc * i, dc * c_prev
        dpre = ember.cat([di * i * (1 - i), df * f * (1 - f), dg * (1 - g * g),
                          do * o * (1 - o)], 1)
        if m is not None:                                # idle sequences: straight through
            dpre = dpre * m
        dc = _keep(m, dc * f, dc_in)
        dh = _keep(m, ember.mm(dpre, w_hh), dh_in)
        dpres[t] = dpre
    gx, gwi, gwh, gbs = _input_grads(dpres, x, w_ih, hprev, w_hh.shape[1], n, (5, 6))
    if gx is not None:
        gx = _time_major(gx, batch_first)
    gwr = None
    if w_hr is not None and n[10]:
        P, H = w_hr.shape
        gwr = ember.mm(ember.stack(dhs, 0).reshape(-1, P).t(),
                       ember.stack([s_[6] for s_ in steps], 0).reshape(-1, H))
    return (gx, dh if n[1] else None, dc if n[2] else None, gwi, gwh) + gbs + (gwr,)


@lstm_layer.def_backward
def _(ctx, grads, input, hx, cx, weight_ih, weight_hh, bias_ih, bias_hh, reverse,
      batch_first, batch_sizes, weight_hr):
    n = ctx.needs_input_grad
    if is_grad_enabled():
        g = _lstm_bptt(grads, input, hx, cx, weight_ih, weight_hh, bias_ih, bias_hh,
                       reverse, batch_first, batch_sizes, weight_hr, n)
        return g[:7] + (None, None, None, g[7])
    ws = ctx.result[3]          # holds a copy of the output (free to change in place)
    need_bias = bool(n[5] or n[6])
    gx, gh, gc, gwi, gwh, gb, gwr = lstm_layer_backward(
        grads[0], grads[1], grads[2], input, hx, cx, weight_ih, weight_hh, None, ws, reverse,
        batch_first, bool(n[0]), bool(n[3] or n[4] or n[10]), need_bias, batch_sizes,
        weight_hr)
    return (gx if n[0] else None, gh if n[1] else None, gc if n[2] else None,
            gwi if n[3] else None, gwh if n[4] else None, gb if n[5] else None,
            gb if n[6] else None, None, None, None, gwr if n[10] else None)


gru_layer = OpDef(
    "_gru_layer(Tensor input, Tensor hx, Tensor weight_ih, Tensor weight_hh, "
    "Tensor? bias_ih=None, Tensor? bias_hh=None, bool reverse=False, bool batch_first=False, "
    "Tensor? batch_sizes=None) -> (Tensor output, Tensor h_n, Tensor workspace)",
    half_in_float32(R.gru_layer), promote=None,
    saves=("input", "hx", "weight_ih", "weight_hh", "bias_ih", "bias_hh", "batch_sizes",
           "workspace"),
    grad_name="GruLayerBackward0")

gru_layer_backward = OpDef(
    "_gru_layer_backward(Tensor? grad_output, Tensor grad_hn, Tensor input, Tensor hx, "
    "Tensor weight_ih, Tensor weight_hh, Tensor? output, Tensor workspace, "
    "bool reverse=False, bool batch_first=False, bool need_input=True, "
    "bool need_weight=True, bool need_bias=True, Tensor? batch_sizes=None) -> "
    "(Tensor grad_input, Tensor grad_hx, Tensor grad_weight_ih, Tensor grad_weight_hh, "
    "Tensor grad_bias_ih, Tensor grad_bias_hh)",
    half_in_float32(R.gru_layer_backward), promote=None, differentiable=False)


def _gru_bptt(grads, x, h0, w_ih, w_hh, b_ih, b_hh, reverse, batch_first, batch_sizes, n):
    """The GRU layer recomputed and backpropagated through time in ember ops
    (differentiable): the gradients of (input, hx, weight_ih, weight_hh, bias_ih,
    bias_hh)."""
    import ember
    g_out, g_hn = grads[0], grads[1]
    x = _time_major(x, batch_first)
    T, H = x.shape[0], w_hh.shape[1]
    masks = _masks(batch_sizes, T, x.shape[1])
    xw = _projection(x, w_ih, b_ih, None)
    w_t = w_hh.t()
    h, steps = h0, [None] * T
    for t in _order(T, reverse):
        hw = ember.matmul(h, w_t) if b_hh is None else ember.addmm(b_hh, h, w_t)
        x_r, x_z, x_n = xw[t].chunk(3, 1)
        h_r, h_z, h_n = hw.chunk(3, 1)
        r, z = ember.sigmoid(x_r + h_r), ember.sigmoid(x_z + h_z)
        nn = ember.tanh(x_n + r * h_n)
        steps[t] = (r, z, nn, h_n, h)
        h = _keep(masks[t], nn + z * (h - nn), h)
    if g_out is not None:
        g_out = _time_major(g_out, batch_first)
    dh = g_hn if g_hn is not None else ember.zeros_like(h0)
    dxs, dhs = [None] * T, [None] * T
    for t in _order(T, not reverse):
        r, z, nn, h_n, hp = steps[t]
        if g_out is not None:
            dh = dh + g_out[t]
        dn = dh * (1 - z) * (1 - nn * nn)
        dr = dn * h_n * r * (1 - r)
        dz = dh * (hp - nn) * z * (1 - z)
        dxs[t] = ember.cat([dr, dz, dn], 1)
        dhs[t] = ember.cat([dr, dz, dn * r], 1)
        m = masks[t]
        if m is not None:                                # idle sequences: straight through
            dxs[t], dhs[t] = dxs[t] * m, dhs[t] * m
        dh = _keep(m, dh * z + ember.mm(dhs[t], w_hh), dh)
    d = ember.stack(dxs, 0)                             # (T, B, 3H), input side
    rows, hrows = d.reshape(-1, 3 * H), ember.stack(dhs, 0).reshape(-1, 3 * H)
    hprev = ember.stack([s[4] for s in steps], 0).reshape(-1, H)
    return (_time_major(ember.matmul(d, w_ih), batch_first) if n[0] else None,
            dh if n[1] else None,
            ember.mm(rows.t(), x.reshape(-1, x.shape[-1])) if n[2] else None,
            ember.mm(hrows.t(), hprev) if n[3] else None,
            rows.sum(0) if n[4] else None, hrows.sum(0) if n[5] else None)


@gru_layer.def_backward
def _(ctx, grads, input, hx, weight_ih, weight_hh, bias_ih, bias_hh, reverse, batch_first,
      batch_sizes):
    n = ctx.needs_input_grad
    if is_grad_enabled():
        return _gru_bptt(grads, input, hx, weight_ih, weight_hh, bias_ih, bias_hh, reverse,
                         batch_first, batch_sizes, n) + (None, None, None)
    ws = ctx.result[2]          # holds a copy of the output (free to change in place)
    gx, gh, gwi, gwh, gbi, gbh = gru_layer_backward(
        grads[0], grads[1], input, hx, weight_ih, weight_hh, None, ws, reverse, batch_first,
        bool(n[0]), bool(n[2] or n[3]), bool(n[4] or n[5]), batch_sizes)
    return (gx if n[0] else None, gh if n[1] else None, gwi if n[2] else None,
            gwh if n[3] else None, gbi if n[4] else None, gbh if n[5] else None, None, None,
            None)


embedding = OpDef("embedding(Tensor weight, Tensor indices) -> Tensor", K.embedding,
                  promote=None, saves=("indices",), grad_name="EmbeddingBackward0")

embedding_backward = OpDef(
    "_embedding_backward(Tensor grad, Tensor indices, int num_weights) -> Tensor",
    K.embedding_backward, promote=None, saves=("indices",))


@embedding.def_backward
def _(ctx, g, weight, indices):
    if not ctx.needs_input_grad[0]:
        return None, None
    return embedding_backward(g, indices, ctx.shapes[0][0]), None


@embedding_backward.def_backward
def _(ctx, u, grad, indices, num_weights):
    # linear in ``grad``: the VJP is the row gather again
    return (embedding(u, indices) if ctx.needs_input_grad[0] else None), None, None


cross_entropy = OpDef(
    "_cross_entropy(Tensor input, Tensor target, int reduction=1, SymInt ignore_index=-100) "
    "-> (Tensor loss, Tensor lse, Tensor workspace)",
    K.cross_entropy, promote=None, autocast="fp32", saves=("input", "target", "lse", "workspace"),
    grad_name="NllLossBackward0", none_grads=True)

cross_entropy_backward = OpDef(
    "_cross_entropy_backward(Tensor grad, Tensor? grad_lse, Tensor input, Tensor target, "
    "Tensor lse, int reduction=1, SymInt ignore_index=-100, Tensor? workspace=None) "
    "-> Tensor",
    K.cross_entropy_backward, promote=None, differentiable=False)


@cross_entropy.def_backward
def _(ctx, grads, input, target, reduction, ignore_index):
    if not ctx.needs_input_grad[0]:
        return None, None, None, None
    import ember
    g, g_lse = grads[0], grads[1]                 # (None where no gradient flowed)
    _, lse, ws = ctx.result
    if g is None:
        g = ember.zeros((), dtype=input.dtype)
    if not is_grad_enabled():
        return (cross_entropy_backward(g, g_lse, input, target, lse, reduction, ignore_index,
                                       ws), None, None, None)
    # differentiable form (create_graph, forward-mode AD): softmax (a + g_lse) - onehot a
    N, C = input.shape
    valid = target != ignore_index
    safe = target.masked_fill(~valid, 0)
    vf = valid.to(input.dtype)
    if reduction == 0:
        a = g * vf
    elif reduction == 2:
        a = g.expand(N) * vf
    else:
        a = (g / vf.sum()).expand(N).masked_fill(~valid, 0.0)
    onehot = ember.nn.functional.one_hot(safe, C).to(input.dtype)
    p = ember.softmax(input, 1)
    coef = a if g_lse is None else a + g_lse
    return (p * coef.unsqueeze(1) - onehot * a.unsqueeze(1)), None, None, None


# ``_linear_cross_entropy_chunked``: linear + cross entropy (class indices, reduction sum or
# mean) over the batch in chunks, never holding the (N, C) logits. Like torch's chunked
# path it computes the gradients of input, weight and bias in the forward pass (for an
# upstream gradient of 1) and keeps them in a byte workspace; the backward only scales
# them. There is no differentiable form: double backward / forward-mode AD raise.
linear_cross_entropy_chunked = OpDef(
    "_linear_cross_entropy_chunked(Tensor input, Tensor linear_weight, Tensor target, "
    "Tensor? linear_bias=None, Tensor? weight=None, int reduction=1, "
    "SymInt ignore_index=-100, int chunk_size=0, bool need_input=True, "
    "bool need_weight=True, bool need_bias=True, ScalarType? acc_dtype=None) "
    "-> (Tensor loss, Tensor workspace)",
    K.linear_cross_entropy_chunked, promote=None, saves=("result",),
    grad_name="LinearCrossEntropyChunkedBackward0")

linear_cross_entropy_chunked_backward = OpDef(
    "_linear_cross_entropy_chunked_backward(Tensor grad, Tensor workspace, int[] input_size, "
    "int[] weight_size, int bias_size=0, bool need_input=True, bool need_weight=True, "
    "bool need_bias=True, ScalarType? dtype=None) "
    "-> (Tensor grad_input, Tensor grad_linear_weight, Tensor grad_linear_bias)",
    K.linear_cross_entropy_chunked_backward, promote=None, differentiable=False)


@linear_cross_entropy_chunked.def_backward
def _(ctx, grads, input, linear_weight, target, linear_bias, weight, reduction,
      ignore_index, chunk_size, need_input, need_weight, need_bias, acc_dtype):
    n = ctx.needs_input_grad
    nones = (None,) * 12
    if is_grad_enabled():
        raise RuntimeError(
            "linear_cross_entropy: the chunked path (options=LinearCrossEntropyOptions(...)) "
            "computes its gradients in the forward pass and has no differentiable backward; "
            "double backward (create_graph=True) and forward-mode AD need options=None")
    g = grads[0]
    if g is None or not (n[0] or n[1] or n[3]):
        return nones
    ws = ctx.result[1]
    bias_size = ctx.shapes[3][0] if (n[3] and ctx.shapes[3] is not None) else 0
    gi, gw, gb = linear_cross_entropy_chunked_backward(
        g, ws, list(ctx.shapes[0]), list(ctx.shapes[1]), bias_size, bool(n[0] and need_input),
        bool(n[1] and need_weight), bool(n[3] and need_bias), ctx.dtypes[0])
    return ((gi if n[0] and need_input else None), (gw if n[1] and need_weight else None),
            None, (gb if n[3] and need_bias else None)) + (None,) * 8
