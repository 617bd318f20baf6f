"""One-step recurrent cells as single records (kernels in ember/_kernels/rnn_cell.py).

``_lstm_cell``, ``_gru_cell``, ``_rnn_tanh_cell``, ``_rnn_relu_cell``: what
ember.nn.LSTMCell / GRUCell / RNNCell run for float32 / float64 operands outside dispatch
modes (``fusable``), where the composite (``_step`` in ember/nn/modules/rnn.py) costs
a dozen records and as many graph nodes per step. LSTM and GRU return a byte workspace
(the activated gates) for their backward, which is one more record, ``_*_cell_backward``,
two GEMMs per side and one pass over the gates. Under create_graph (double backward) the
backward rules write the same formulas in ember ops on recomputed gates, so the gradient
is differentiable again; forward-mode AD, vmap, tracing and ONNX export run inside a
dispatch mode and never see these records (they get the composite).
"""
from __future__ import annotations

import numpy as np

import ember
from ember._kernels import rnn_cell as K
from ember._ops.registry import OpDef
from ember._state import state
from ember.autograd.grad_mode import is_grad_enabled

_F32, _F64 = np.dtype(np.float32), np.dtype(np.float64)
_ARGS = ("Tensor weight_ih, Tensor weight_hh, Tensor? bias_ih=None, Tensor? bias_hh=None")
_SAVES = ("input", "hx", "weight_ih", "weight_hh", "bias_ih", "bias_hh")

lstm_cell = OpDef(
    f"_lstm_cell(Tensor input, Tensor hx, Tensor cx, {_ARGS}) "
    "-> (Tensor hy, Tensor cy, Tensor workspace)",
    K.lstm_cell, promote=None, saves=_SAVES + ("cx", "workspace"),
    grad_name="MulBackward0")        # torch's CPU node of h = o * tanh(c) (c: rnn_nodes)

lstm_cell_backward = OpDef(
    "_lstm_cell_backward(Tensor? grad_hy, Tensor? grad_cy, Tensor input, Tensor hx, "
    "Tensor cx, Tensor weight_ih, Tensor weight_hh, Tensor workspace, bool[] output_mask) "
    "-> (Tensor grad_input, Tensor grad_hx, Tensor grad_cx, Tensor grad_weight_ih, "
    "Tensor grad_weight_hh, Tensor grad_bias)",
    K.lstm_cell_backward, promote=None, differentiable=False)

gru_cell = OpDef(
    f"_gru_cell(Tensor input, Tensor hx, {_ARGS}) -> (Tensor hy, Tensor workspace)",
    K.gru_cell, promote=None, saves=_SAVES + ("workspace",),
    grad_name="AddBackward0")        # torch's CPU node of h = n + z * (h - n)

gru_cell_backward = OpDef(
    "_gru_cell_backward(Tensor grad_hy, Tensor input, Tensor hx, Tensor weight_ih, "
    "Tensor weight_hh, Tensor workspace, bool[] output_mask) -> (Tensor grad_input, "
    "Tensor grad_hx, Tensor grad_weight_ih, Tensor grad_weight_hh, Tensor grad_bias_ih, "
    "Tensor grad_bias_hh)",
    K.gru_cell_backward, promote=None, differentiable=False)


def _rnn_kernel(relu):
    def kernel(x, hx, w_ih, w_hh, b_ih=None, b_hh=None):
        return K.rnn_cell(x, hx, w_ih, w_hh, b_ih, b_hh, relu)
    return kernel


rnn_tanh_cell = OpDef(f"_rnn_tanh_cell(Tensor input, Tensor hx, {_ARGS}) -> Tensor",
                      _rnn_kernel(False), promote=None, saves=_SAVES + ("result",),
                      grad_name="TanhBackward0")           # torch's node for the cell's h
rnn_relu_cell = OpDef(f"_rnn_relu_cell(Tensor input, Tensor hx, {_ARGS}) -> Tensor",
                      _rnn_kernel(True), promote=None, saves=_SAVES + ("result",),
                      grad_name="ReluBackward0")

rnn_cell_backward = OpDef(
    "_rnn_cell_backward(Tensor grad_hy, Tensor input, Tensor hx, Tensor weight_ih, "
    "Tensor weight_hh, Tensor hy, bool relu, bool[] output_mask) -> (Tensor grad_input, "
    "Tensor grad_hx, Tensor grad_weight_ih, Tensor grad_weight_hh, Tensor grad_bias)",
    K.rnn_cell_backward, promote=None, differentiable=False)


def fusable(*tensors):
    """May a cell record run on these operands (None for an absent bias)? float32 /
    float64 of one dtype, and no dispatch mode but the profiler's (vmap, forward-mode AD,
    tracing, ONNX export and autocast see the composite's ops)."""
    if state.modes and not _only_profiler(state.modes):
        return False
    dt = tensors[0]._data.dtype
    if dt != _F32 and dt != _F64:
        return False
    for t in tensors:
        if t is not None and t._data.dtype != dt:
            return False
    return True


def _only_profiler(modes):
    from ember.autograd.profiler import _ProfilerMode
    return all(type(m) is _ProfilerMode for m in modes)


# ---------------------------------------------------------------- differentiable forms
def _pre(x, hx, w_ih, w_hh, b_ih, b_hh):
    """x W_ih^T + b_ih and h W_hh^T + b_hh, in ember ops."""
    gi = ember.mm(x, w_ih.t()) if b_ih is None else ember.addmm(b_ih, x, w_ih.t())
    gh = ember.mm(hx, w_hh.t()) if b_hh is None else ember.addmm(b_hh, hx, w_hh.t())
    return gi, gh


def _grads(d_in, d_hid, x, hx, w_ih, w_hh):
    """(grad x, grad h part, grad W_ih, grad W_hh, grad b_ih, grad b_hh) from the
    pre-activation gradients of both sides (B, G*H), in ember ops."""
    return (ember.mm(d_in, w_ih), ember.mm(d_hid, w_hh), ember.mm(d_in.t(), x),
            ember.mm(d_hid.t(), hx), d_in.sum(0), d_hid.sum(0))


def _lstm_differentiable(g_h, g_c, x, hx, cx, w_ih, w_hh, b_ih, b_hh):
    gi, gh = _pre(x, hx, w_ih, w_hh, b_ih, b_hh)
    i, f, g, o = (gi + gh).chunk(4, 1)
    i, f, g, o = ember.sigmoid(i), ember.sigmoid(f), ember.tanh(g), ember.sigmoid(o)
    tc = ember.tanh(f * cx + i * g)
    dc = ember.zeros_like(cx) if g_c is None else g_c
    if g_h is None:
        do = ember.zeros_like(o)
    else:
        dc = dc + g_h * o * (1 - tc * tc)
        do = g_h * tc
    d = ember.cat([dc * g * i * (1 - i), dc * cx * f * (1 - f), dc * i * (1 - g * g),
                   do * o * (1 - o)], 1)
    gx, gh_, gwi, gwh, gb, _ = _grads(d, d, x, hx, w_ih, w_hh)
    return gx, gh_, dc * f, gwi, gwh, gb, gb


def _gru_differentiable(g_h, x, hx, w_ih, w_hh, b_ih, b_hh):
    gi, gh = _pre(x, hx, w_ih, w_hh, b_ih, b_hh)
    i_r, i_z, i_n = gi.chunk(3, 1)
    h_r, h_z, h_n = gh.chunk(3, 1)
    r, z = ember.sigmoid(i_r + h_r), ember.sigmoid(i_z + h_z)
    n = ember.tanh(i_n + r * h_n)
    dn = g_h * (1 - z) * (1 - n * n)
    dr = dn * h_n * r * (1 - r)
    dz = g_h * (hx - n) * z * (1 - z)
    gx, gh_, gwi, gwh, gbi, gbh = _grads(ember.cat([dr, dz, dn], 1),
                                         ember.cat([dr, dz, dn * r], 1), x, hx, w_ih, w_hh)
    return gx, gh_ + g_h * z, gwi, gwh, gbi, gbh


def _rnn_differentiable(g_h, hy, x, hx, w_ih, w_hh, b_ih, b_hh, relu):
    if relu:
        d = g_h.masked_fill(hy.detach() <= 0, 0.0)
    else:                       # h' recomputed, so that its gradient reaches the inputs
        gi, gh = _pre(x, hx, w_ih, w_hh, b_ih, b_hh)
        hy = ember.tanh(gi + gh)
        d = g_h * (1 - hy * hy)
    gx, gh_, gwi, gwh, gb, _ = _grads(d, d, x, hx, w_ih, w_hh)
    return gx, gh_, gwi, gwh, gb, gb


def _pick(grads, needs):
    return tuple(g if n else None for g, n in zip(grads, needs))


# ------------------------------------------------------------------------ backwards
@lstm_cell.def_backward
def _(ctx, grads, input, hx, cx, weight_ih, weight_hh, bias_ih, bias_hh):
    n = ctx.needs_input_grad
    g_h, g_c = grads[0], grads[1]
    if g_h is None and g_c is None or not any(n):
        return (None,) * 7
    if is_grad_enabled():
        return _pick(_lstm_differentiable(g_h, g_c, input, hx, cx, weight_ih, weight_hh,
                                          bias_ih, bias_hh), n)
    mask = [bool(n[0]), bool(n[1]), bool(n[2]), bool(n[3] or n[4]), bool(n[5] or n[6])]
    gx, gh, gc, gwi, gwh, gb = lstm_cell_backward(g_h, g_c, input, hx, cx, weight_ih,
                                                  weight_hh, ctx.result[2], mask)
    return _pick((gx, gh, gc, gwi, gwh, gb, gb), n)


@gru_cell.def_backward
def _(ctx, grads, input, hx, weight_ih, weight_hh, bias_ih, bias_hh):
    n = ctx.needs_input_grad
    g_h = grads[0]
    if g_h is None or not any(n):
        return (None,) * 6
    if is_grad_enabled():
        return _pick(_gru_differentiable(g_h, input, hx, weight_ih, weight_hh, bias_ih,
                                         bias_hh), n)
    mask = [bool(n[0]), bool(n[1]), bool(n[2] or n[3]), bool(n[4] or n[5])]
    return _pick(gru_cell_backward(g_h, input, hx, weight_ih, weight_hh, ctx.result[1],
                                   mask), n)


def _rnn_backward(relu):
    def backward(ctx, g, input, hx, weight_ih, weight_hh, bias_ih, bias_hh):
        n = ctx.needs_input_grad
        if g is None or not any(n):
            return (None,) * 6
        hy = ctx.result
        if is_grad_enabled():
            return _pick(_rnn_differentiable(g, hy, input, hx, weight_ih, weight_hh,
                                             bias_ih, bias_hh, relu), n)
        mask = [bool(n[0]), bool(n[1]), bool(n[2] or n[3]), bool(n[4] or n[5])]
        gx, gh, gwi, gwh, gb = rnn_cell_backward(g, input, hx, weight_ih, weight_hh, hy,
                                                 relu, mask)
        return _pick((gx, gh, gwi, gwh, gb, gb), n)
    return backward


rnn_tanh_cell.def_backward(_rnn_backward(False))
rnn_relu_cell.def_backward(_rnn_backward(True))
