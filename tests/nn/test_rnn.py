"""RNN / LSTM / GRU, their cells, and nn.utils.rnn packing vs torch 2.13 (identical weights)."""
import numpy as np
import pytest
import torch

import ember
from ember import nn
from ember.nn.utils import rnn as eru
from torch.nn.utils import rnn as tru

RS = np.random.RandomState(0)
TOL = dict(rtol=1e-4, atol=1e-5)


def _np(t):
    return t.detach().numpy()


def _pair(cls, *args, **kw):
    e = getattr(nn, cls)(*args, **kw)
    t = getattr(torch.nn, cls)(*args, **kw)
    assert [n for n, _ in e.named_parameters()] == [n for n, _ in t.named_parameters()]
    t.load_state_dict({k: torch.from_numpy(_np(v).copy()) for k, v in e.state_dict().items()})
    return e, t


def _leaf(x, lib):
    return (ember if lib == "e" else torch).from_numpy(x.copy()).requires_grad_(True)


def _flat(out):
    if isinstance(out, (tuple, list)):
        r = []
        for o in out:
            r += _flat(o)
        return r
    if hasattr(out, "batch_sizes") and hasattr(out, "data"):
        return [out.data]
    return [out]


def _check_grads(e, t, oe, ot, ie, it):
    fe, ft = _flat(oe), _flat(ot)
    assert len(fe) == len(ft)
    for a, b in zip(fe, ft):
        assert tuple(a.shape) == tuple(b.shape)
        np.testing.assert_allclose(_np(a), b.detach().numpy(), **TOL)
    gs = [RS.randn(*b.shape).astype(np.float32) for b in ft]
    le = sum((a * ember.from_numpy(g)).sum() for a, g in zip(fe, gs))
    lt = sum((b * torch.from_numpy(g)).sum() for b, g in zip(ft, gs))
    le.backward()
    lt.backward()
    for a, b in zip(ie, it):
        np.testing.assert_allclose(_np(a.grad), b.grad.numpy(), **TOL)
    for (n, pe), (_, pt) in zip(e.named_parameters(), t.named_parameters()):
        np.testing.assert_allclose(_np(pe.grad), pt.grad.numpy(), err_msg=n, **TOL)


CONFIGS = [
    dict(),
    dict(num_layers=2),
    dict(bidirectional=True),
    dict(num_layers=2, bidirectional=True, batch_first=True),
    dict(bias=False),
    dict(num_layers=3, dropout=0.5),        # eval mode -> no dropout
]


@pytest.mark.parametrize("cls", ["RNN", "LSTM", "GRU"])
@pytest.mark.parametrize("cfg", CONFIGS, ids=lambda c: ",".join(f"{k}={v}" for k, v in c.items()) or "default")
@pytest.mark.parametrize("with_h0", [False, True])
def test_recurrent_vs_torch(cls, cfg, with_h0):
    ember.manual_seed(0)
    e, t = _pair(cls, 5, 7, **cfg)
    if cfg.get("dropout"):
        e.eval()
        t.eval()
    assert repr(e) == repr(t)
    bf = cfg.get("batch_first", False)
    T, B = 6, 3
    x = RS.randn(*((B, T, 5) if bf else (T, B, 5))).astype(np.float32)
    ie, it = [_leaf(x, "e")], [_leaf(x, "t")]
    L = cfg.get("num_layers", 1) * (2 if cfg.get("bidirectional") else 1)
    he = ht = None
    if with_h0:
        h = RS.randn(L, B, 7).astype(np.float32)
        ie.append(_leaf(h, "e"))
        it.append(_leaf(h, "t"))
        if cls == "LSTM":
            c = RS.randn(L, B, 7).astype(np.float32)
            ie.append(_leaf(c, "e"))
            it.append(_leaf(c, "t"))
            he, ht = (ie[1], ie[2]), (it[1], it[2])
        else:
            he, ht = ie[1], it[1]
    oe, ot = e(ie[0], he), t(it[0], ht)
    _check_grads(e, t, oe, ot, ie, it)


@pytest.mark.parametrize("nonlin", ["tanh", "relu"])
def test_rnn_relu(nonlin):
    e, t = _pair("RNN", 4, 6, 2, nonlinearity=nonlin)
    assert repr(e) == repr(t)
    x = RS.randn(5, 2, 4).astype(np.float32)
    ie, it = [_leaf(x, "e")], [_leaf(x, "t")]
    _check_grads(e, t, e(ie[0]), t(it[0]), ie, it)


@pytest.mark.parametrize("cfg", [dict(), dict(num_layers=2, bidirectional=True),
                                 dict(bias=False, batch_first=True)])
@pytest.mark.filterwarnings("ignore:LSTM with projections")
def test_lstm_proj(cfg):
    e, t = _pair("LSTM", 5, 8, proj_size=3, **cfg)
    assert repr(e) == repr(t)
    bf = cfg.get("batch_first", False)
    x = RS.randn(*((2, 4, 5) if bf else (4, 2, 5))).astype(np.float32)
    L = cfg.get("num_layers", 1) * (2 if cfg.get("bidirectional") else 1)
    h = RS.randn(L, 2, 3).astype(np.float32)
    c = RS.randn(L, 2, 8).astype(np.float32)
    ie = [_leaf(a, "e") for a in (x, h, c)]
    it = [_leaf(a, "t") for a in (x, h, c)]
    oe, ot = e(ie[0], (ie[1], ie[2])), t(it[0], (it[1], it[2]))
    assert tuple(oe[1][0].shape) == (L, 2, 3) and tuple(oe[1][1].shape) == (L, 2, 8)
    _check_grads(e, t, oe, ot, ie, it)


@pytest.mark.parametrize("cls", ["RNN", "LSTM", "GRU"])
def test_unbatched(cls):
    e, t = _pair(cls, 3, 4, 2, bidirectional=True)
    x = RS.randn(5, 3).astype(np.float32)
    ie, it = [_leaf(x, "e")], [_leaf(x, "t")]
    h = RS.randn(4, 4).astype(np.float32)
    ie.append(_leaf(h, "e"))
    it.append(_leaf(h, "t"))
    if cls == "LSTM":
        ie.append(_leaf(h * 2, "e"))
        it.append(_leaf(h * 2, "t"))
        oe, ot = e(ie[0], (ie[1], ie[2])), t(it[0], (it[1], it[2]))
    else:
        oe, ot = e(ie[0], ie[1]), t(it[0], it[1])
    _check_grads(e, t, oe, ot, ie, it)


@pytest.mark.parametrize("cls", ["RNN", "LSTM", "GRU"])
@pytest.mark.parametrize("cfg", [dict(), dict(num_layers=2, bidirectional=True)])
@pytest.mark.parametrize("enforce_sorted", [True, False])
@pytest.mark.parametrize("with_h0", [False, True])
def test_packed(cls, cfg, enforce_sorted, with_h0):
    e, t = _pair(cls, 3, 5, **cfg)
    lengths = [6, 4, 4, 1] if enforce_sorted else [4, 6, 1, 4]
    x = RS.randn(6, 4, 3).astype(np.float32)
    ie, it = [_leaf(x, "e")], [_leaf(x, "t")]
    pe = eru.pack_padded_sequence(ie[0], lengths, enforce_sorted=enforce_sorted)
    pt = tru.pack_padded_sequence(it[0], lengths, enforce_sorted=enforce_sorted)
    L = cfg.get("num_layers", 1) * (2 if cfg.get("bidirectional") else 1)
    he = ht = None
    if with_h0:
        for _ in range(2 if cls == "LSTM" else 1):
            h = RS.randn(L, 4, 5).astype(np.float32)
            ie.append(_leaf(h, "e"))
            it.append(_leaf(h, "t"))
        he, ht = (tuple(ie[1:]), tuple(it[1:])) if cls == "LSTM" else (ie[1], it[1])
    oe, ot = e(pe, he), t(pt, ht)
    assert isinstance(oe[0], eru.PackedSequence)
    np.testing.assert_array_equal(oe[0].batch_sizes.numpy(), ot[0].batch_sizes.numpy())
    # padded view of the packed output too
    pade, lene = eru.pad_packed_sequence(oe[0], batch_first=True)
    padt, lent = tru.pad_packed_sequence(ot[0], batch_first=True)
    np.testing.assert_array_equal(lene.numpy(), lent.numpy())
    _check_grads(e, t, (pade, oe[1]), (padt, ot[1]), ie, it)


@pytest.mark.parametrize("cls,chunks", [("RNNCell", 1), ("LSTMCell", 4), ("GRUCell", 3)])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("batched", [True, False])
def test_cells(cls, chunks, bias, batched):
    e, t = _pair(cls, 4, 6, bias=bias)
    assert repr(e) == repr(t)
    assert tuple(e.weight_ih.shape) == (chunks * 6, 4)
    shp = (3, 4) if batched else (4,)
    hshp = (3, 6) if batched else (6,)
    x, h = RS.randn(*shp).astype(np.float32), RS.randn(*hshp).astype(np.float32)
    ie = [_leaf(x, "e"), _leaf(h, "e")]
    it = [_leaf(x, "t"), _leaf(h, "t")]
    if cls == "LSTMCell":
        ie.append(_leaf(h + 1, "e"))
        it.append(_leaf(h + 1, "t"))
        oe, ot = e(ie[0], (ie[1], ie[2])), t(it[0], (it[1], it[2]))
    else:
        oe, ot = e(ie[0], ie[1]), t(it[0], it[1])
    _check_grads(e, t, oe, ot, ie, it)
    # hx omitted
    ye, yt = e(ember.from_numpy(x)), t(torch.from_numpy(x))
    for a, b in zip(_flat(ye), _flat(yt)):
        np.testing.assert_allclose(_np(a), b.detach().numpy(), **TOL)


def test_rnn_cell_relu():
    e, t = _pair("RNNCell", 4, 6, nonlinearity="relu")
    assert repr(e) == repr(t)
    x = RS.randn(3, 4).astype(np.float32)
    np.testing.assert_allclose(_np(e(ember.from_numpy(x))), t(torch.from_numpy(x)).detach().numpy(), **TOL)


def test_parameter_names_init_and_all_weights():
    ember.manual_seed(0)
    e = nn.LSTM(10, 20, num_layers=2, bidirectional=True, proj_size=5)
    t = torch.nn.LSTM(10, 20, num_layers=2, bidirectional=True, proj_size=5)
    assert list(e.state_dict().keys()) == list(t.state_dict().keys())
    for (n, pe), (_, pt) in zip(e.named_parameters(), t.named_parameters()):
        assert tuple(pe.shape) == tuple(pt.shape), n
        assert np.abs(_np(pe)).max() <= 1 / np.sqrt(20)
    assert e._flat_weights_names == t._flat_weights_names
    assert [[tuple(w.shape) for w in ws] for ws in e.all_weights] == \
        [[tuple(w.shape) for w in ws] for ws in t.all_weights]
    assert e.all_weights[1][0] is e.weight_ih_l0_reverse
    e.flatten_parameters()
    g = nn.GRU(3, 4, bias=False)
    assert [n for n, _ in g.named_parameters()] == ["weight_ih_l0", "weight_hh_l0"]


def test_weight_reassignment_is_used():
    e = nn.GRU(3, 4)
    x = ember.randn(2, 1, 3)
    e.weight_hh_l0 = nn.Parameter(ember.zeros(12, 4))
    e.weight_ih_l0 = nn.Parameter(ember.zeros(12, 3))
    e.bias_ih_l0 = nn.Parameter(ember.zeros(12))
    e.bias_hh_l0 = nn.Parameter(ember.zeros(12))
    out, h = e(x)
    np.testing.assert_allclose(_np(out), 0.0)


def test_errors_match_torch():
    e, t = _pair("LSTM", 3, 4)
    cases = [
        lambda m, lib: m(lib.randn(2, 3, 4, 3)),
        lambda m, lib: m(lib.randn(5, 2, 2)),
        lambda m, lib: m(lib.randn(5, 2, 3), (lib.randn(1, 3, 4), lib.randn(1, 2, 4))),
        lambda m, lib: m(lib.randn(5, 2, 3), (lib.randn(2, 4), lib.randn(2, 4))),
        lambda m, lib: m(lib.randn(5, 2, 3, dtype=lib.float64)),
    ]
    for case in cases:
        with pytest.raises(Exception) as te:
            case(t, torch)
        with pytest.raises(type(te.value)) as ee:
            case(e, ember)
        assert str(ee.value) == str(te.value)
    for cls, kw in [("RNN", dict(proj_size=2)), ("LSTM", dict(proj_size=4)),
                    ("LSTM", dict(dropout=2.0)), ("RNN", dict(nonlinearity="gelu"))]:
        with pytest.raises(ValueError) as te:
            getattr(torch.nn, cls)(3, 4, **kw)
        with pytest.raises(ValueError) as ee:
            getattr(nn, cls)(3, 4, **kw)
        assert str(ee.value) == str(te.value)
    with pytest.warns(UserWarning, match="non-zero dropout expects num_layers greater than 1"):
        nn.GRU(3, 4, dropout=0.2)


def test_dropout_between_layers_training():
    ember.manual_seed(0)
    e = nn.LSTM(3, 8, num_layers=2, dropout=0.5)
    x = ember.randn(4, 2, 3)
    y1, _ = e(x)
    y2, _ = e(x)
    assert not np.allclose(_np(y1), _np(y2))
    e.eval()
    y3, _ = e(x)
    y4, _ = e(x)
    np.testing.assert_allclose(_np(y3), _np(y4))


def test_float64():
    e, t = _pair("GRU", 3, 4, num_layers=2, dtype=ember.float64) if False else (None, None)
    e = nn.GRU(3, 4, num_layers=2).double()
    t = torch.nn.GRU(3, 4, num_layers=2).double()
    t.load_state_dict({k: torch.from_numpy(_np(v).copy()) for k, v in e.state_dict().items()})
    x = RS.randn(5, 2, 3)
    ye, yt = e(ember.from_numpy(x)), t(torch.from_numpy(x))
    assert ye[0].dtype == ember.float64
    np.testing.assert_allclose(_np(ye[0]), yt[0].detach().numpy(), rtol=1e-10, atol=1e-12)


# ------------------------------------------------------------------------- nn.utils.rnn
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("enforce_sorted", [True, False])
def test_pack_pad_roundtrip(batch_first, enforce_sorted):
    lengths = [5, 3, 3, 2] if enforce_sorted else [3, 5, 2, 3]
    x = RS.randn(*((4, 5, 2) if batch_first else (5, 4, 2))).astype(np.float32)
    xe, xt = _leaf(x, "e"), _leaf(x, "t")
    pe = eru.pack_padded_sequence(xe, ember.tensor(lengths), batch_first, enforce_sorted)
    pt = tru.pack_padded_sequence(xt, torch.tensor(lengths), batch_first, enforce_sorted)
    np.testing.assert_allclose(_np(pe.data), pt.data.detach().numpy())
    for a, b in zip(pe[1:], pt[1:]):
        if b is None:
            assert a is None
        else:
            np.testing.assert_array_equal(a.numpy(), b.numpy())
            assert a.dtype == ember.int64
    for tl in (None, 7):
        ye, le = eru.pad_packed_sequence(pe, batch_first, -1.5, tl)
        yt, lt = tru.pad_packed_sequence(pt, batch_first, -1.5, tl)
        np.testing.assert_allclose(_np(ye), yt.detach().numpy())
        np.testing.assert_array_equal(le.numpy(), lt.numpy())
    g = RS.randn(*yt.shape).astype(np.float32)
    (ye * ember.from_numpy(g)).sum().backward()
    (yt * torch.from_numpy(g)).sum().backward()
    np.testing.assert_allclose(_np(xe.grad), xt.grad.numpy())
    with pytest.raises(ValueError, match="Expected total_length to be at least"):
        eru.pad_packed_sequence(pe, batch_first, total_length=2)


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("side", ["right", "left"])
def test_pad_sequence(batch_first, side):
    seqs = [RS.randn(n, 2, 3).astype(np.float32) for n in (2, 4, 1)]
    es = [_leaf(s, "e") for s in seqs]
    ts = [_leaf(s, "t") for s in seqs]
    ye = eru.pad_sequence(es, batch_first, 0.5, side)
    yt = tru.pad_sequence(ts, batch_first, 0.5, side)
    np.testing.assert_allclose(_np(ye), yt.detach().numpy())
    g = RS.randn(*yt.shape).astype(np.float32)
    (ye * ember.from_numpy(g)).sum().backward()
    (yt * torch.from_numpy(g)).sum().backward()
    for a, b in zip(es, ts):
        np.testing.assert_allclose(_np(a.grad), b.grad.numpy())


def test_pack_sequence_unpack_unpad():
    seqs = [RS.randn(n, 3).astype(np.float32) for n in (2, 5, 3)]
    pe = eru.pack_sequence([ember.from_numpy(s) for s in seqs], enforce_sorted=False)
    pt = tru.pack_sequence([torch.from_numpy(s) for s in seqs], enforce_sorted=False)
    np.testing.assert_allclose(_np(pe.data), pt.data.numpy())
    for a, b in zip(pe[1:], pt[1:]):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    for a, s in zip(eru.unpack_sequence(pe), seqs):
        np.testing.assert_allclose(_np(a), s)
    padded = eru.pad_sequence([ember.from_numpy(s) for s in seqs])
    for a, s in zip(eru.unpad_sequence(padded, ember.tensor([2, 5, 3])), seqs):
        np.testing.assert_allclose(_np(a), s)
    with pytest.raises(RuntimeError, match="must be sorted in decreasing order"):
        eru.pack_sequence([ember.from_numpy(s) for s in seqs])


def test_packing_errors_match_torch():
    x = RS.randn(4, 3, 2).astype(np.float32)
    cases = [
        lambda m, lib: m.pack_padded_sequence(lib.from_numpy(x), [4, 1, 2]),
        lambda m, lib: m.pack_padded_sequence(lib.from_numpy(x), [4, 0, 0]),
        lambda m, lib: m.pack_padded_sequence(lib.from_numpy(x), [4, 3]),
        lambda m, lib: m.pad_sequence([]),
        lambda m, lib: m.pad_sequence([lib.from_numpy(x[0])], padding_side="mid"),
    ]
    for case in cases:
        with pytest.raises(RuntimeError) as te:
            case(tru, torch)
        with pytest.raises(RuntimeError) as ee:
            case(eru, ember)
        assert str(ee.value) == str(te.value)


def test_packed_sequence_namedtuple():
    p = eru.PackedSequence(ember.randn(3, 2), ember.tensor([2, 1]))
    assert p.sorted_indices is None and p.unsorted_indices is None
    assert isinstance(p, tuple) and len(p) == 4
    q = p.double()
    assert q.data.dtype == ember.float64 and q.batch_sizes is p.batch_sizes
    assert repr(p).startswith("PackedSequence(data=tensor(")
    assert nn.utils.rnn.PackedSequence is eru.PackedSequence
