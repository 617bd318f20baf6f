"""Dynamically quantized LSTM/GRU and cells (ember.ao.nn.quantized.dynamic) against torch's.

The same float module is converted on both sides (``from_float`` with the same qconfig):
the quantized weights are compared bit for bit, then the outputs. Everything but the gates'
``sigmoid``/``tanh`` is torch's float32 arithmetic in torch's order, so with torch's two
activations put in place of ember's (fixture ``torch_activations``) the outputs are equal
bit for bit. With ember's own activations (which differ from torch's vectorized ones in the
last bit now and then) outputs agree to ``ATOL``.
"""
import warnings

import numpy as np
import pytest
import torch
import torch.ao.nn.quantized.dynamic as tqd
from torch.nn.utils.rnn import pack_padded_sequence as t_pack

import ember
import ember.ao.nn.quantized.dynamic as eqd
from ember._ops import quantized_rnn
from ember.nn.utils.rnn import pack_padded_sequence as e_pack
from tests.quantization.conftest import assert_same_q, to_ember

ATOL = 1e-6     # ember's sigmoid/tanh vs torch's: a few float32 ulps after the recurrence
QCONFIGS = ["default_dynamic_qconfig", "per_channel_dynamic_qconfig",
            "float16_dynamic_qconfig"]


@pytest.fixture
def torch_activations(monkeypatch):
    """The recurrences' sigmoid and tanh computed by torch (everything else stays ember's).
    torch's vectorized sigmoid rounds differently in its vector body and its scalar tail, so
    its result depends on the layout: its cells apply it to (B, H) chunks of the (B, G*H)
    gates, one row (inner loop) at a time, so here it runs on each row alone."""
    def wrap(name):
        def fn(x):
            t = torch.from_numpy(np.ascontiguousarray(x.numpy()))
            rows = t.reshape(-1, t.shape[-1])
            out = torch.stack([getattr(torch, name)(r) for r in rows]).reshape(t.shape)
            return ember.from_numpy(out.detach().numpy())
        return fn
    monkeypatch.setattr(quantized_rnn, "_sigmoid", wrap("sigmoid"))
    monkeypatch.setattr(quantized_rnn, "_tanh", wrap("tanh"))


def _e(t):
    return ember.from_numpy(t.detach().numpy().copy())


def _convert(cls_name, qconfig, *args, seed=0, **kwargs):
    """(torch dynamic module, ember dynamic module) converted from the same float module."""
    torch.manual_seed(seed)
    tf = getattr(torch.nn, cls_name)(*args, **kwargs)
    ef = getattr(ember.nn, cls_name)(*args, **kwargs)
    ef.load_state_dict({k: _e(v) for k, v in tf.state_dict().items()})
    tf.qconfig = getattr(torch.ao.quantization, qconfig)
    ef.qconfig = getattr(ember.ao.quantization, qconfig)
    tq = getattr(tqd, cls_name).from_float(tf)
    eq = getattr(eqd, cls_name).from_float(ef)
    return tq, eq


def _same_weights(eq, tq):
    ew, tw = eq._weight_bias(), tq._weight_bias()
    assert list(ew["weight"]) == list(tw["weight"]) and list(ew["bias"]) == list(tw["bias"])
    for k, t in tw["weight"].items():
        if t.is_quantized:
            assert_same_q(ew["weight"][k], t)
        else:
            np.testing.assert_array_equal(ew["weight"][k].numpy(), t.numpy())
    for k, t in tw["bias"].items():
        np.testing.assert_array_equal(ew["bias"][k].numpy(), t.detach().numpy())


def _assert_equal(e, t, exact):
    e, t = e.detach().numpy(), t.detach().numpy()
    if exact:
        np.testing.assert_array_equal(e, t)
    else:
        np.testing.assert_allclose(e, t, rtol=0, atol=ATOL)


LAYOUTS = [dict(), dict(num_layers=2, bidirectional=True, batch_first=True)]


def _run_layers(mode, qconfig, layout, exact, hidden=7):
    tq, eq = _convert(mode, qconfig, 5, hidden, **layout)
    _same_weights(eq, tq)
    dirs = 2 if layout.get("bidirectional") else 1
    rng = np.random.default_rng(1)
    x = rng.standard_normal((4, 3, 5)).astype(np.float32)
    h0 = rng.standard_normal((layout.get("num_layers", 1) * dirs, 4 if layout.get("batch_first")
                              else 3, hidden)).astype(np.float32)
    c0 = (h0 * 0.5).astype(np.float32)
    tx, ex = torch.from_numpy(x), ember.from_numpy(x)
    if mode == "LSTM":
        t_out, (t_h, t_c) = tq(tx, (torch.from_numpy(h0), torch.from_numpy(c0)))
        e_out, (e_h, e_c) = eq(ex, (ember.from_numpy(h0), ember.from_numpy(c0)))
        _assert_equal(e_c, t_c, exact)
    else:
        t_out, t_h = tq(tx, torch.from_numpy(h0))
        e_out, e_h = eq(ex, ember.from_numpy(h0))
    _assert_equal(e_out, t_out, exact)
    _assert_equal(e_h, t_h, exact)


@pytest.mark.parametrize("layout", LAYOUTS, ids=["1layer", "2bidir_bf"])
@pytest.mark.parametrize("qconfig", QCONFIGS)
@pytest.mark.parametrize("mode", ["LSTM", "GRU"])
def test_layers_bit_exact_with_torch_activations(mode, qconfig, layout, torch_activations):
    _run_layers(mode, qconfig, layout, exact=True)


@pytest.mark.parametrize("mode", ["LSTM", "GRU"])
def test_wide_layers_bit_exact_with_torch_activations(mode, torch_activations):
    # 40 hidden units: torch's gates run through its vector body and its scalar tail
    _run_layers(mode, "per_channel_dynamic_qconfig", LAYOUTS[1], exact=True, hidden=40)


@pytest.mark.parametrize("qconfig", QCONFIGS)
@pytest.mark.parametrize("mode", ["LSTM", "GRU"])
def test_layers_close_with_ember_activations(mode, qconfig):
    _run_layers(mode, qconfig, LAYOUTS[1], exact=False)


@pytest.mark.parametrize("bidirectional", [False, True])
@pytest.mark.parametrize("mode", ["LSTM", "GRU"])
def test_packed_sequence(mode, bidirectional, torch_activations):
    tq, eq = _convert(mode, "default_dynamic_qconfig", 4, 6, num_layers=2,
                      bidirectional=bidirectional)
    x = np.random.default_rng(2).standard_normal((5, 4, 4)).astype(np.float32)
    lengths = [3, 5, 1, 4]                                # unsorted: permutations as well
    tp = t_pack(torch.from_numpy(x), lengths, enforce_sorted=False)
    ep = e_pack(ember.from_numpy(x), lengths, enforce_sorted=False)
    h0 = np.random.default_rng(5).standard_normal((2 * (1 + bidirectional), 4, 6))
    h0 = h0.astype(np.float32)
    if mode == "LSTM":
        t_out, t_hidden = tq(tp, (torch.from_numpy(h0), torch.from_numpy(-h0)))
        e_out, e_hidden = eq(ep, (ember.from_numpy(h0), ember.from_numpy(-h0)))
    else:
        t_out, t_hidden = tq(tp, torch.from_numpy(h0))
        e_out, e_hidden = eq(ep, ember.from_numpy(h0))
    t_none, e_none = tq(tp)[0], eq(ep)[0]          # hx None: zeros
    np.testing.assert_array_equal(e_none.data.detach().numpy(), t_none.data.detach().numpy())
    assert isinstance(e_out, ember.nn.utils.rnn.PackedSequence)
    np.testing.assert_array_equal(e_out.data.detach().numpy(), t_out.data.detach().numpy())
    np.testing.assert_array_equal(e_out.batch_sizes.numpy(), t_out.batch_sizes.numpy())
    for e, t in zip(e_hidden if mode == "LSTM" else [e_hidden],
                    t_hidden if mode == "LSTM" else [t_hidden]):
        np.testing.assert_array_equal(e.detach().numpy(), t.detach().numpy())


CELLS = [("LSTMCell", {}), ("GRUCell", {}), ("RNNCell", {}),
         ("RNNCell", {"nonlinearity": "relu"})]


def _run_cell(name, kwargs, qconfig, exact):
    tq, eq = _convert(name, qconfig, 6, 9, **kwargs)
    _same_weights(eq, tq)
    rng = np.random.default_rng(3)
    x = rng.standard_normal((5, 6)).astype(np.float32)
    h = rng.standard_normal((5, 9)).astype(np.float32)
    if name == "LSTMCell":
        t = tq(torch.from_numpy(x), (torch.from_numpy(h), torch.from_numpy(-h)))
        e = eq(ember.from_numpy(x), (ember.from_numpy(h), ember.from_numpy(-h)))
        for a, b in zip(e, t):
            _assert_equal(a, b, exact)
        t0, e0 = tq(torch.from_numpy(x))[1], eq(ember.from_numpy(x))[1]     # hx None: zeros
    else:
        _assert_equal(eq(ember.from_numpy(x), ember.from_numpy(h)),
                      tq(torch.from_numpy(x), torch.from_numpy(h)), exact)
        t0, e0 = tq(torch.from_numpy(x)), eq(ember.from_numpy(x))
    _assert_equal(e0, t0, exact)


@pytest.mark.parametrize("qconfig", QCONFIGS)
@pytest.mark.parametrize("name,kwargs", CELLS, ids=["lstm", "gru", "tanh", "relu"])
def test_cells_bit_exact_with_torch_activations(name, kwargs, qconfig, torch_activations):
    _run_cell(name, kwargs, qconfig, exact=True)


@pytest.mark.parametrize("qconfig", QCONFIGS)
@pytest.mark.parametrize("name,kwargs", CELLS, ids=["lstm", "gru", "tanh", "relu"])
def test_cells_with_ember_activations(name, kwargs, qconfig):
    # the relu cell has no transcendental function: bit for bit with ember's own maths
    _run_cell(name, kwargs, qconfig, exact=kwargs.get("nonlinearity") == "relu")


def test_cell_ops_as_torch_ops(torch_activations):
    """``ember.ops.quantized.quantized_*_cell_dynamic`` on the same packed weights."""
    rng = np.random.default_rng(4)
    x = rng.standard_normal((3, 5)).astype(np.float32)
    h = rng.standard_normal((3, 4)).astype(np.float32)
    for gates, op in [(4, "quantized_lstm_cell_dynamic"), (3, "quantized_gru_cell_dynamic"),
                      (1, "quantized_rnn_tanh_cell_dynamic"),
                      (1, "quantized_rnn_relu_cell_dynamic")]:
        w_ih = rng.standard_normal((gates * 4, 5)).astype(np.float32)
        w_hh = rng.standard_normal((gates * 4, 4)).astype(np.float32)
        b = rng.standard_normal(gates * 4).astype(np.float32)
        tw = [torch.quantize_per_tensor(torch.from_numpy(w), 0.02, 0, torch.qint8)
              for w in (w_ih, w_hh)]
        tp = [torch.ops.quantized.linear_prepack(w, torch.from_numpy(b)) for w in tw]
        ep = [ember.ops.quantized.linear_prepack(to_ember(w), ember.from_numpy(b)) for w in tw]
        tb, eb = torch.from_numpy(b), ember.from_numpy(b)
        if gates == 4:
            t = getattr(torch.ops.quantized, op)(torch.from_numpy(x), [torch.from_numpy(h)] * 2,
                                                 *tp, tb, tb)
            e = getattr(ember.ops.quantized, op)(ember.from_numpy(x), [ember.from_numpy(h)] * 2,
                                                 *ep, eb, eb)
        else:
            t = [getattr(torch.ops.quantized, op)(torch.from_numpy(x), torch.from_numpy(h),
                                                  *tp, tb, tb)]
            e = [getattr(ember.ops.quantized, op)(ember.from_numpy(x), ember.from_numpy(h),
                                                  *ep, eb, eb)]
        for a, b_ in zip(e, t):
            np.testing.assert_array_equal(a.detach().numpy(), b_.detach().numpy())


# ------------------------------------------------------------------ module surface
@pytest.mark.parametrize("name,args,kwargs", [
    ("LSTM", (4, 5), {}),
    ("LSTM", (4, 5, 2), dict(bidirectional=True, dropout=0.25)),
    ("GRU", (4, 5), dict(num_layers=2, batch_first=True)),
    ("LSTM", (4, 5), dict(dtype="float16")),
    ("LSTMCell", (4, 5), {}), ("GRUCell", (4, 5), dict(bias=False)),
    ("RNNCell", (4, 5), dict(nonlinearity="relu")), ("RNNCell", (4, 5), dict(dtype="float16")),
])
def test_repr_state_dict_keys_and_attributes(name, args, kwargs):
    tk = {k: getattr(torch, v) if k == "dtype" else v for k, v in kwargs.items()}
    ek = {k: getattr(ember, v) if k == "dtype" else v for k, v in kwargs.items()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t, e = getattr(tqd, name)(*args, **tk), getattr(eqd, name)(*args, **ek)
    assert repr(e) == repr(t)
    assert list(e.state_dict()) == list(t.state_dict())
    assert e.training == t.training
    wt, we = t._weight_bias(), e._weight_bias()
    assert list(we["weight"]) == list(wt["weight"]) and list(we["bias"]) == list(wt["bias"])
    for k, v in wt["weight"].items():
        assert str(we["weight"][k].dtype) == str(v.dtype) and we["weight"][k].shape == v.shape
    assert list(e.get_weight()) == list(t.get_weight())


def test_state_dict_round_trip():
    _, eq = _convert("LSTM", "default_dynamic_qconfig", 3, 4, num_layers=2)
    fresh = eqd.LSTM(3, 4, num_layers=2)
    fresh.load_state_dict(eq.state_dict())
    x = ember.randn(2, 3, 3)
    np.testing.assert_array_equal(fresh(x)[0].detach().numpy(), eq(x)[0].detach().numpy())
    _, ec = _convert("GRUCell", "default_dynamic_qconfig", 3, 4)
    fresh = eqd.GRUCell(3, 4)
    fresh.load_state_dict(ec.state_dict())
    x = ember.randn(2, 3)
    np.testing.assert_array_equal(fresh(x).detach().numpy(), ec(x).detach().numpy())
    with pytest.raises(RuntimeError, match="Missing key"):
        eqd.LSTM(3, 4).load_state_dict({})


def _raises_like(t_call, e_call):
    with pytest.raises(Exception) as te:
        t_call()
    with pytest.raises(type(te.value)) as ee:
        e_call()
    assert str(ee.value) == str(te.value)


def test_forward_errors_as_torch():
    t, e = tqd.LSTM(4, 5), eqd.LSTM(4, 5)
    for shape in [(3, 4), (3, 2, 5), (2, 3, 3, 4)]:
        _raises_like(lambda: t(torch.zeros(shape)), lambda: e(ember.zeros(shape)))
    _raises_like(lambda: t(torch.zeros(3, 2, 4), (torch.zeros(1, 3, 5), torch.zeros(1, 2, 5))),
                 lambda: e(ember.zeros(3, 2, 4), (ember.zeros(1, 3, 5), ember.zeros(1, 2, 5))))
    _raises_like(lambda: t(torch.zeros(3, 2, 4).double()),
                 lambda: e(ember.zeros(3, 2, 4).double()))
    _raises_like(lambda: tqd.GRU(4, 5)(torch.zeros(3, 2, 4), torch.zeros(1, 3, 5)),
                 lambda: eqd.GRU(4, 5)(ember.zeros(3, 2, 4), ember.zeros(1, 3, 5)))
    _raises_like(lambda: tqd.GRU(4, 5)(torch.zeros(0, 3, 4)),
                 lambda: eqd.GRU(4, 5)(ember.zeros(0, 3, 4)))
    tc, ec = tqd.LSTMCell(4, 5), eqd.LSTMCell(4, 5)
    _raises_like(lambda: tc(torch.zeros(2, 3)), lambda: ec(ember.zeros(2, 3)))
    _raises_like(lambda: tc(torch.zeros(4)), lambda: ec(ember.zeros(4)))      # no unbatched
    _raises_like(lambda: tc(torch.zeros(2, 4), (torch.zeros(3, 5), torch.zeros(2, 5))),
                 lambda: ec(ember.zeros(2, 4), (ember.zeros(3, 5), ember.zeros(2, 5))))
    _raises_like(lambda: tc(torch.zeros(2, 4), (torch.zeros(2, 6), torch.zeros(2, 5))),
                 lambda: ec(ember.zeros(2, 4), (ember.zeros(2, 6), ember.zeros(2, 5))))
    _raises_like(lambda: tqd.GRUCell(4, 5)(torch.zeros(2, 4), torch.zeros(3, 5)),
                 lambda: eqd.GRUCell(4, 5)(ember.zeros(2, 4), ember.zeros(3, 5)))
    _raises_like(lambda: tqd.RNNCell(4, 5)(torch.zeros(2, 4), torch.zeros(2, 6)),
                 lambda: eqd.RNNCell(4, 5)(ember.zeros(2, 4), ember.zeros(2, 6)))


def test_from_float_errors_as_torch():
    tq, eq = torch.ao.quantization, ember.ao.quantization
    _raises_like(lambda: tqd.LSTM.from_float(torch.nn.Linear(3, 3)),
                 lambda: eqd.LSTM.from_float(ember.nn.Linear(3, 3)))
    _raises_like(lambda: tqd.LSTM.from_float(torch.nn.LSTM(3, 3)),
                 lambda: eqd.LSTM.from_float(ember.nn.LSTM(3, 3)))
    _raises_like(lambda: tqd.LSTMCell.from_float(torch.nn.Linear(3, 3)),
                 lambda: eqd.LSTMCell.from_float(ember.nn.Linear(3, 3)))
    t, e = torch.nn.RNNCell(3, 3, bias=False), ember.nn.RNNCell(3, 3, bias=False)
    t.qconfig, e.qconfig = tq.default_dynamic_qconfig, eq.default_dynamic_qconfig
    _raises_like(lambda: tqd.RNNCell.from_float(t), lambda: eqd.RNNCell.from_float(e))
    t, e = torch.nn.GRU(3, 3, bias=False), ember.nn.GRU(3, 3, bias=False)
    t.qconfig, e.qconfig = tq.default_dynamic_qconfig, eq.default_dynamic_qconfig
    _raises_like(lambda: tqd.GRU.from_float(t), lambda: eqd.GRU.from_float(e))
    # torch converts an LSTM with projections and fails at its first forward; ember refuses
    e = ember.nn.LSTM(4, 5, proj_size=2)
    e.qconfig = eq.default_dynamic_qconfig
    with pytest.raises(NotImplementedError, match="proj_size=2"):
        eqd.LSTM.from_float(e)
    with pytest.raises(NotImplementedError, match="quint8"):
        eqd.LSTM(3, 4, dtype=ember.quint8)


@pytest.mark.parametrize("fp16", [False, True])
def test_quantized_lstm_gru_functions(fp16, torch_activations):
    """``ember.quantized_lstm``/``quantized_gru`` (both overloads) on cell params made by
    ``make_quantized_cell_params_dynamic``/``_fp16``, as torch's functions."""
    rng = np.random.default_rng(6)
    x = rng.standard_normal((4, 2, 3)).astype(np.float32)
    h = rng.standard_normal((1, 2, 5)).astype(np.float32)
    for gates, t_fn, e_fn in [(4, torch.quantized_lstm, ember.quantized_lstm),
                              (3, torch.quantized_gru, ember.quantized_gru)]:
        ws = [rng.standard_normal((gates * 5, k)).astype(np.float32) * 0.3 for k in (3, 5)]
        bs = [rng.standard_normal(gates * 5).astype(np.float32) for _ in range(2)]
        if fp16:
            tp = [torch.ops.quantized.linear_prepack_fp16(torch.from_numpy(w), torch.from_numpy(b))
                  for w, b in zip(ws, bs)]
            ep = [ember.ops.quantized.linear_prepack_fp16(ember.from_numpy(w),
                                                          ember.from_numpy(b))
                  for w, b in zip(ws, bs)]
            t_params = [torch.ops.quantized.make_quantized_cell_params_fp16(*tp)]
            e_params = [ember.ops.quantized.make_quantized_cell_params_fp16(*ep)]
        else:
            tw = [torch.quantize_per_tensor(torch.from_numpy(w), 0.01, 0, torch.qint8)
                  for w in ws]
            tp = [torch.ops.quantized.linear_prepack(w, torch.from_numpy(b))
                  for w, b in zip(tw, bs)]
            ep = [ember.ops.quantized.linear_prepack(to_ember(w), ember.from_numpy(b))
                  for w, b in zip(tw, bs)]
            tb, eb = [torch.from_numpy(b) for b in bs], [ember.from_numpy(b) for b in bs]
            t_params = [torch.ops.quantized.make_quantized_cell_params_dynamic(*tp, *tb, True)]
            e_params = [ember.ops.quantized.make_quantized_cell_params_dynamic(*ep, *eb, True)]
        th, eh = torch.from_numpy(h), ember.from_numpy(h)
        t_hx, e_hx = ([th, th * 2], [eh, eh * 2]) if gates == 4 else (th, eh)
        kw = dict(dtype=torch.float16 if fp16 else torch.qint8, use_dynamic=True)
        ekw = dict(dtype=ember.float16 if fp16 else ember.qint8, use_dynamic=True)
        if gates == 3:
            kw, ekw = {}, {}
        t = t_fn(torch.from_numpy(x), t_hx, t_params, True, 1, 0.0, False, False, False, **kw)
        e = e_fn(ember.from_numpy(x), e_hx, e_params, True, 1, 0.0, False, False, False, **ekw)
        for a, b in zip(e, t):
            np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
        tp_ = t_pack(torch.from_numpy(x), [4, 2])
        ep_ = e_pack(ember.from_numpy(x), [4, 2])
        t = t_fn(tp_.data, tp_.batch_sizes, t_hx, t_params, True, 1, 0.0, False, False, **kw)
        e = e_fn(ep_.data, ep_.batch_sizes, e_hx, e_params, True, 1, 0.0, False, False, **ekw)
        for a, b in zip(e, t):
            np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())


# ------------------------------------------------------------------ quantize_dynamic
def _nets():
    """The same small LSTM -> GRUCell -> Linear model in torch and in ember."""
    def build(nn):
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.lstm = nn.LSTM(4, 8, 2, batch_first=True)
                self.gru = nn.GRUCell(8, 6)
                self.fc = nn.Linear(6, 3)

            def forward(self, x):
                y, _ = self.lstm(x)
                return self.fc(self.gru(y[:, -1]))
        return Net()
    torch.manual_seed(7)
    t, e = build(torch.nn), build(ember.nn)
    e.load_state_dict({k: _e(v) for k, v in t.state_dict().items()})
    return t, e


@pytest.mark.parametrize("spec", ["set_qint8", "all_float16", "dict_per_channel"])
def test_quantize_dynamic_rnn_model(spec, torch_activations):
    t, e = _nets()
    tq, eq = torch.ao.quantization, ember.ao.quantization
    if spec == "set_qint8":
        t_args = ({torch.nn.LSTM, torch.nn.Linear, torch.nn.GRUCell},)
        e_args = ({ember.nn.LSTM, ember.nn.Linear, ember.nn.GRUCell},)
        t_kw, e_kw = dict(dtype=torch.qint8), dict(dtype=ember.qint8)
    elif spec == "all_float16":
        t_args, e_args = (), ()
        t_kw, e_kw = dict(dtype=torch.float16), dict(dtype=ember.float16)
    else:
        t_args = ({torch.nn.LSTM: tq.per_channel_dynamic_qconfig,
                   "fc": tq.default_dynamic_qconfig},)
        e_args = ({ember.nn.LSTM: eq.per_channel_dynamic_qconfig,
                   "fc": eq.default_dynamic_qconfig},)
        t_kw, e_kw = {}, {}
    tm = tq.quantize_dynamic(t, *t_args, **t_kw)
    em = eq.quantize_dynamic(e, *e_args, **e_kw)
    assert repr(em) == repr(tm)
    assert list(em.state_dict()) == list(tm.state_dict())
    _same_weights(em.lstm, tm.lstm)
    x = np.random.default_rng(8).standard_normal((3, 5, 4)).astype(np.float32)
    np.testing.assert_array_equal(em(ember.from_numpy(x)).detach().numpy(),
                                  tm(torch.from_numpy(x)).detach().numpy())


@pytest.mark.parametrize("name,kwargs", CELLS, ids=["lstm", "gru", "tanh", "relu"])
def test_cells_without_bias(name, kwargs, torch_activations):
    """Constructed with bias=False (from_float refuses those): no bias in the packed weights."""
    torch.manual_seed(9)
    t = getattr(tqd, name)(6, 5, bias=False, **kwargs)
    e = getattr(eqd, name)(6, 5, bias=False, **kwargs)
    w = t._weight_bias()["weight"]
    e.set_weight_bias(to_ember(w["weight_ih"]), to_ember(w["weight_hh"]), None, None)
    assert e._weight_bias()["bias"] == {"bias_ih": None, "bias_hh": None}
    x = np.random.default_rng(10).standard_normal((3, 6)).astype(np.float32)
    t_out, e_out = t(torch.from_numpy(x)), e(ember.from_numpy(x))
    for a, b in zip(e_out if name == "LSTMCell" else [e_out],
                    t_out if name == "LSTMCell" else [t_out]):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())


def test_layers_without_bias_as_torch():
    # torch's LSTM refuses at its first forward; its GRU keeps (random) biases regardless
    _raises_like(lambda: tqd.LSTM(3, 4, bias=False)(torch.zeros(2, 1, 3)),
                 lambda: eqd.LSTM(3, 4, bias=False)(ember.zeros(2, 1, 3)))
    t, e = tqd.GRU(3, 4, bias=False), eqd.GRU(3, 4, bias=False)
    assert repr(e) == repr(t)
    assert [b.shape for b in e.get_bias().values()] == [tuple(b.shape)
                                                        for b in t.get_bias().values()]
    assert e(ember.zeros(2, 1, 3))[0].shape == (2, 1, 4)
