"""Dynamically quantized recurrences: torch's ``quantized::*_cell_dynamic`` cells, the
``make_quantized_cell_params_*`` records and ``aten::quantized_lstm`` / ``quantized_gru``
(what ``ember.ao.nn.quantized.dynamic.LSTM``/``GRU`` and the cells call).

Every matrix product is a dynamic linear (``ember.ops.quantized.linear_dynamic``: the input
quantized to quint8 on the fly, int8 weights, float32 out) or its float16 form
(``linear_dynamic_fp16``); the gates' elementwise maths is float32 as in the float modules.
What torch's x86 engine does, found by composing ``torch.ops.quantized.linear_dynamic``
calls and comparing with its modules' outputs bit for bit:

- the dynamic linears run with the cell params' ``reduce_range`` (the modules make them with
  True: the input onto [0, 127]); the cell ops always use True;
- a layer quantizes its whole input sequence at once (one linear over all (T*B) rows, one
  scale), then each step quantizes the hidden state (live rows only) on its own;
- the bias sits inside the packed weights; the cells' ``bias_ih``/``bias_hh`` arguments are
  not read again;
- LSTM: ``gates = x W_ih + h W_hh`` (each linear with its bias), chunks i, f, g, o,
  ``c' = sigmoid(f) * c + sigmoid(i) * tanh(g)``, ``h' = sigmoid(o) * tanh(c')``;
  GRU: chunks r, z, n of both linears, ``r = sigmoid(x_r + h_r)``, ``z = sigmoid(x_z + h_z)``,
  ``n = tanh(x_n + r * h_n)``, ``h' = (h - n) * z + n``; RNN: ``act(x W_ih + h W_hh)``.

The products and sums are then the same float32 operations as torch's; ``sigmoid`` and
``tanh`` are ember's (torch's vectorized ones differ in the last bit now and then, which the
next step's quantization of ``h`` can carry on)."""
from __future__ import annotations

import ember
from ember._ops.quantized import defop
from ember._ops.registry import public
from ember._tensor import Tensor

_QUANTIZED = None


def _qops():
    """``ember.ops.quantized`` (imported late: ember.ops needs the registry filled)."""
    global _QUANTIZED
    if _QUANTIZED is None:
        from ember.ops import quantized
        _QUANTIZED = quantized
    return _QUANTIZED


class CellParams:
    """torch's ``CellParamsBase`` for quantized recurrences: one layer and direction's packed
    ``w_ih`` (G*H, in) and ``w_hh`` (G*H, H) with their biases. ``kind`` is
    ``'quantized_dynamic'`` (int8 weights, packed by ``linear_prepack``) or
    ``'quantized_fp16'`` (``linear_prepack_fp16``). torch pickles it as a ScriptObject of
    class :attr:`TORCHBIND_NAME` with the state :meth:`__getstate__` returns."""
    TORCHBIND_NAME = "__torch__.torch.classes.rnn.CellParamsBase"

    def __init__(self, kind, w_ih, w_hh, b_ih=None, b_hh=None, reduce_range=False):
        if kind not in ("quantized_dynamic", "quantized_fp16"):
            raise NotImplementedError(f"quantized cell params of kind {kind!r}")
        self.kind = kind
        self.w_ih, self.w_hh = w_ih, w_hh
        self.b_ih, self.b_hh = b_ih, b_hh
        self.reduce_range = bool(reduce_range)

    def linear(self, x, packed):
        """x (N, K) -> (N, G*H) float32 through one packed weight (its bias included)."""
        if self.kind == "quantized_fp16":
            return _qops().linear_dynamic_fp16(x, packed)
        return _qops().linear_dynamic(x, packed, self.reduce_range)

    def linear_ih(self, x):
        return self.linear(x, self.w_ih)

    def linear_hh(self, h):
        return self.linear(h, self.w_hh)

    def unpack(self):
        """((w_ih, b_ih), (w_hh, b_hh)) as the packed weights hold them."""
        return self.w_ih.unpack(), self.w_hh.unpack()

    def __getstate__(self):
        """torch's layout: (kind, tensors, doubles, longs, packed weights)."""
        if self.kind == "quantized_fp16":
            return ("quantized_fp16", [], [], [], [self.w_ih, self.w_hh])
        return ("quantized_dynamic", [self.b_ih, self.b_hh], [], [int(self.reduce_range)],
                [self.w_ih, self.w_hh])

    def __setstate__(self, state):
        kind, tensors, _, longs, packed = state
        biases = tensors if tensors else [None, None]
        self.__init__(kind, packed[0], packed[1], biases[0], biases[1],
                      bool(longs[0]) if longs else False)

    def __repr__(self):
        return f"CellParams({self.kind})"


make_quantized_cell_params_dynamic = defop(
    "quantized::make_quantized_cell_params_dynamic(Any w_ih, Any w_hh, Tensor bias_ih, "
    "Tensor bias_hh, bool reduce_range=False) -> Any",
    composite=lambda w_ih, w_hh, bias_ih, bias_hh, reduce_range=False:
    CellParams("quantized_dynamic", w_ih, w_hh, bias_ih, bias_hh, reduce_range),
    function=False, method=False, out=False, differentiable=False)
make_quantized_cell_params_fp16 = defop(
    "quantized::make_quantized_cell_params_fp16(Any w_ih, Any w_hh) -> Any",
    composite=lambda w_ih, w_hh: CellParams("quantized_fp16", w_ih, w_hh),
    function=False, method=False, out=False, differentiable=False)


# ------------------------------------------------------------------ one step
# The gates' activations, looked up at each call (tests put torch's in their place to check
# that everything else is torch's bit for bit).
def _sigmoid(x):
    return ember.sigmoid(x)


def _tanh(x):
    return ember.tanh(x)


def _lstm_gates(gates, c):
    """gates (B, 4H) -> the next (h, c)."""
    i, f, g, o = gates.chunk(4, 1)
    c = _sigmoid(f) * c + _sigmoid(i) * _tanh(g)
    return _sigmoid(o) * _tanh(c), c


def _gru_gates(xg, hg, h):
    """input and hidden projections (B, 3H) -> the next h."""
    x_r, x_z, x_n = xg.chunk(3, 1)
    h_r, h_z, h_n = hg.chunk(3, 1)
    reset = _sigmoid(x_r + h_r)
    update = _sigmoid(x_z + h_z)
    cand = _tanh(x_n + reset * h_n)
    return (h - cand) * update + cand


def _step(mode, params, xg, h, c):
    """One step from the input projection ``xg`` (B, G*H): the next (h, c)."""
    hg = params.linear_hh(h)
    if mode == "LSTM":
        return _lstm_gates(xg + hg, c)
    if mode == "GRU":
        return _gru_gates(xg, hg, h), None
    pre = xg + hg
    return (ember.relu(pre) if mode == "RNN_RELU" else _tanh(pre)), None


def _cell(mode, input, hx, w_ih, w_hh):
    """A cell op: input (B, in), hx (B, H) (LSTM: [h, c]) -> the next state. Float16
    packed weights (``linear_prepack_fp16``) run through ``linear_dynamic_fp16``; no checks
    beyond the linears' own, as torch's ops."""
    lstm = mode == "LSTM"
    states = list(hx) if lstm else [hx]
    kind = "quantized_fp16" if getattr(w_ih, "fp16", False) else "quantized_dynamic"
    params = CellParams(kind, w_ih, w_hh, reduce_range=True)
    h, c = _step(mode, params, params.linear_ih(input), states[0], states[1] if lstm else None)
    return (h, c) if lstm else h


quantized_lstm_cell_dynamic = defop(
    "quantized::quantized_lstm_cell_dynamic(Tensor input, Tensor[] hx, Any w_ih, Any w_hh, "
    "Tensor? bias_ih, Tensor? bias_hh) -> (Tensor, Tensor)",
    composite=lambda input, hx, w_ih, w_hh, bias_ih, bias_hh:
    _cell("LSTM", input, hx, w_ih, w_hh),
    function=False, method=False, out=False, differentiable=False)


def _cell_record(mode, name):
    return defop(f"quantized::{name}(Tensor input, Tensor hx, Any w_ih, Any w_hh, Tensor? b_ih, "
                 f"Tensor? b_hh) -> Tensor",
                 composite=lambda input, hx, w_ih, w_hh, b_ih, b_hh:
                 _cell(mode, input, hx, w_ih, w_hh),
                 function=False, method=False, out=False, differentiable=False)


quantized_gru_cell_dynamic = _cell_record("GRU", "quantized_gru_cell_dynamic")
quantized_rnn_relu_cell_dynamic = _cell_record("RNN_RELU", "quantized_rnn_relu_cell_dynamic")
quantized_rnn_tanh_cell_dynamic = _cell_record("RNN_TANH", "quantized_rnn_tanh_cell_dynamic")


# ------------------------------------------------------------------ whole layers
def _scan(mode, params, xg, steps, h0, c0, reverse):
    """One layer and direction over time-major rows. xg: (N, G*H) input projections,
    ``steps``: rows per time step (non-increasing, a packed batch's ``batch_sizes``);
    h0, c0: (B, H) with B = steps[0]. Returns the outputs (N, H) and the final h, c (B, H)."""
    order = range(len(steps) - 1, -1, -1) if reverse else range(len(steps))
    xs = xg.split(steps, 0)
    first = steps[order[0]]
    h = h0.narrow(0, 0, first)
    c = None if c0 is None else c0.narrow(0, 0, first)
    ended = []                 # final states of sequences that stop early (forward)
    outs = [None] * len(steps)
    for t in order:
        live, want = h.shape[0], steps[t]
        if want < live:        # the last live - want sequences have ended
            ended.append((h.narrow(0, want, live - want),
                          None if c is None else c.narrow(0, want, live - want)))
            h = h.narrow(0, 0, want)
            c = None if c is None else c.narrow(0, 0, want)
        elif want > live:      # reverse: longer sequences start here
            h = ember.cat([h, h0.narrow(0, live, want - live)], 0)
            if c is not None:
                c = ember.cat([c, c0.narrow(0, live, want - live)], 0)
        h, c = _step(mode, params, xs[t], h, c)
        outs[t] = h
    if ended:                  # later endings hold lower batch indices
        h = ember.cat([h] + [e[0] for e in reversed(ended)], 0)
        if c is not None:
            c = ember.cat([c] + [e[1] for e in reversed(ended)], 0)
    return ember.cat(outs, 0), h, c


def _layers(mode, x, steps, h0, c0, params, num_layers, dropout, train, bidirectional):
    """The stacked layers over time-major rows x (N, in): (output rows, h_n, c_n or None)."""
    if not steps or not steps[0]:
        raise RuntimeError("Expected sequence length to be larger than 0 in RNN")
    dirs = 2 if bidirectional else 1
    if len(params) != num_layers * dirs:
        raise RuntimeError(f"quantized_{mode.lower()}: expected {num_layers * dirs} cell "
                           f"params, got {len(params)}")
    hs, cs = [], []
    for layer in range(num_layers):
        outs = []
        for d in range(dirs):
            k = layer * dirs + d
            p = params[k]
            out, h, c = _scan(mode, p, p.linear_ih(x), steps, h0[k],
                              None if c0 is None else c0[k], d == 1)
            outs.append(out)
            hs.append(h)
            cs.append(c)
        x = outs[0] if dirs == 1 else ember.cat(outs, 1)
        if dropout and train and layer < num_layers - 1:
            x = ember.nn.functional.dropout(x, dropout, True)
    return x, ember.stack(hs, 0), (ember.stack(cs, 0) if c0 is not None else None)


def _padded(mode, input, h0, c0, params, num_layers, dropout, train, bidirectional,
            batch_first):
    """A padded (T, B, in) (batch_first: (B, T, in)) input: (output, h_n, c_n)."""
    if input.dim() != 3:
        raise RuntimeError(f"input must have 3 dimensions, got {input.dim()}")
    if batch_first:
        input = input.transpose(0, 1)
    T, B = input.shape[0], input.shape[1]
    x, h, c = _layers(mode, input.reshape(T * B, input.shape[2]), [B] * T, h0, c0, params,
                      num_layers, dropout, train, bidirectional)
    x = x.reshape(T, B, x.shape[-1])
    return (x.transpose(0, 1) if batch_first else x), h, c


def _packed(mode, data, batch_sizes, h0, c0, params, num_layers, dropout, train,
            bidirectional):
    """A packed input's rows (N, in) and ``batch_sizes`` (T,): (output rows, h_n, c_n)."""
    steps = [int(n) for n in batch_sizes.tolist()]
    return _layers(mode, data, steps, h0, c0, params, num_layers, dropout, train,
                   bidirectional)


def _check_lstm_call(has_biases, use_dynamic):
    if not has_biases:
        raise RuntimeError("quantized LSTM requires biases")
    if not use_dynamic:
        raise NotImplementedError("quantized_lstm: only dynamic quantization (use_dynamic=True) "
                                  "is implemented")


def _lstm_input(input, hx, params, has_biases, num_layers, dropout, train, bidirectional,
                batch_first, dtype=None, use_dynamic=False):
    _check_lstm_call(has_biases, use_dynamic)
    return _padded("LSTM", input, hx[0], hx[1], params, num_layers, dropout, train,
                   bidirectional, batch_first)


def _lstm_data(data, batch_sizes, hx, params, has_biases, num_layers, dropout, train,
               bidirectional, dtype=None, use_dynamic=False):
    _check_lstm_call(has_biases, use_dynamic)
    return _packed("LSTM", data, batch_sizes, hx[0], hx[1], params, num_layers, dropout, train,
                   bidirectional)


_RNN_FLAGS = "bool has_biases, int num_layers, float dropout, bool train, bool bidirectional"
quantized_lstm_input = defop(
    f"quantized_lstm.input(Tensor input, Tensor[] hx, Any params, {_RNN_FLAGS}, "
    "bool batch_first, *, ScalarType? dtype=None, bool use_dynamic=False) "
    "-> (Tensor, Tensor, Tensor)", composite=_lstm_input,
    function=False, method=False, out=False, differentiable=False)
quantized_lstm_data = defop(
    f"quantized_lstm.data(Tensor data, Tensor batch_sizes, Tensor[] hx, Any params, "
    f"{_RNN_FLAGS}, *, ScalarType? dtype=None, bool use_dynamic=False) "
    "-> (Tensor, Tensor, Tensor)", composite=_lstm_data,
    function=False, method=False, out=False, differentiable=False)
quantized_gru_input = defop(
    f"quantized_gru.input(Tensor input, Tensor hx, Any params, {_RNN_FLAGS}, "
    "bool batch_first) -> (Tensor, Tensor)",
    composite=lambda input, hx, params, has_biases, num_layers, dropout, train, bidirectional,
    batch_first: _padded("GRU", input, hx, None, params, num_layers, dropout, train,
                         bidirectional, batch_first)[:2],
    function=False, method=False, out=False, differentiable=False)
quantized_gru_data = defop(
    f"quantized_gru.data(Tensor data, Tensor batch_sizes, Tensor hx, Any params, "
    f"{_RNN_FLAGS}) -> (Tensor, Tensor)",
    composite=lambda data, batch_sizes, hx, params, has_biases, num_layers, dropout, train,
    bidirectional: _packed("GRU", data, batch_sizes, hx, None, params, num_layers, dropout,
                           train, bidirectional)[:2],
    function=False, method=False, out=False, differentiable=False)


def _is_packed_call(args, kwargs):
    """Whether a ``quantized_lstm``/``quantized_gru`` call is the ``.data`` overload's: its
    second argument is ``batch_sizes`` and its third the hidden state, not the params."""
    if "batch_sizes" in kwargs:
        return True
    if len(args) < 3 or not isinstance(args[1], Tensor):
        return False
    third = args[2]
    return not (isinstance(third, (list, tuple)) and third and isinstance(third[0], CellParams))


def _front(name, by_input, by_data):
    """``ember.quantized_lstm``/``quantized_gru`` (torch's functions): picks the overload."""
    def front(*args, **kwargs):
        return (by_data if _is_packed_call(args, kwargs) else by_input)(*args, **kwargs)
    front.__name__ = front.__qualname__ = name
    public(name)(front)
    return front


_front("quantized_lstm", quantized_lstm_input, quantized_lstm_data)
_front("quantized_gru", quantized_gru_input, quantized_gru_data)
