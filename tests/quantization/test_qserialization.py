"""Quantized tensors in torch's checkpoint format: ember.save -> torch.load and back."""
import io
import pickletools
import zipfile

import numpy as np
import pytest

import ember
from tests.quantization.conftest import assert_same_q, torch

_X = np.random.default_rng(0).standard_normal((4, 6)).astype(np.float32)


def _q(m, kind):
    """The same quantized tensor built by torch (m=torch) or ember (m=ember)."""
    x = m.from_numpy(_X.copy())
    if kind == "quint8":
        return m.quantize_per_tensor(x, 0.1, 3, m.quint8)
    if kind == "qint8":
        return m.quantize_per_tensor(x, 0.05, -3, m.qint8)
    if kind == "qint32":
        return m.quantize_per_tensor(x, 0.01, 7, m.qint32)
    if kind == "quint4x2":
        return m.quantize_per_tensor(x + 2, 0.3, 1, m.quint4x2)
    if kind == "per_channel0":
        return m.quantize_per_channel(x, m.from_numpy(np.array([0.1, 0.2, 0.3, 0.05])),
                                      m.from_numpy(np.array([1, 2, -3, 0])), 0, m.qint8)
    if kind == "per_channel1":
        return m.quantize_per_channel(x, m.from_numpy(np.linspace(0.01, 0.3, 6)),
                                      m.from_numpy(np.arange(6)), 1, m.quint8)
    if kind == "float_qparams":
        return m.quantize_per_channel(
            x, m.from_numpy(np.array([0.1, 0.2, 0.3, 0.05], np.float32)),
            m.from_numpy(np.array([0.5, 1.5, 0.0, 2.0], np.float32)), 0, m.quint8)
    if kind == "strided":
        return m.quantize_per_tensor(x, 0.1, 3, m.quint8)[1:3, ::2]
    raise AssertionError(kind)


KINDS = ["quint8", "qint8", "qint32", "quint4x2", "per_channel0", "per_channel1",
         "float_qparams", "strided"]


def _assert_same_float_qparams(e, t):
    assert str(e.qscheme()) == str(t.qscheme()) == "torch.per_channel_affine_float_qparams"
    np.testing.assert_array_equal(e.q_per_channel_scales().numpy().astype(np.float32),
                                  t.q_per_channel_scales().numpy())
    np.testing.assert_array_equal(e.q_per_channel_zero_points().numpy().astype(np.float32),
                                  t.q_per_channel_zero_points().numpy())
    np.testing.assert_array_equal(e.int_repr().numpy(), t.int_repr().numpy())


def _same(e, t):
    if t.qscheme() == torch.per_channel_affine_float_qparams:
        _assert_same_float_qparams(e, t)
    else:
        assert_same_q(e, t)


@pytest.mark.parametrize("kind", KINDS)
def test_ember_writes_torch_reads(kind):
    e, t = _q(ember, kind), _q(torch, kind)
    buf = io.BytesIO()
    ember.save(e, buf)
    buf.seek(0)
    r = torch.load(buf)         # weights_only=True: only torch's allowed globals
    _same(e, r)
    _same(e, t)
    if kind != "quint4x2":
        assert r.stride() == e.stride() and r.storage_offset() == e.storage_offset()


@pytest.mark.parametrize("kind", KINDS)
def test_torch_writes_ember_reads(kind):
    e, t = _q(ember, kind), _q(torch, kind)
    buf = io.BytesIO()
    torch.save(t, buf)
    buf.seek(0)
    r = ember.load(buf)
    assert r.is_quantized
    _same(r, t)
    np.testing.assert_array_equal(r.dequantize().numpy(), e.dequantize().numpy())


def _globals(data):
    """The GLOBAL names in a checkpoint's data.pkl, in order."""
    z = zipfile.ZipFile(io.BytesIO(data))
    pkl = z.read([n for n in z.namelist() if n.endswith("/data.pkl")][0])
    return [arg for op, arg, _ in pickletools.genops(pkl) if op.name == "GLOBAL"]


@pytest.mark.parametrize("kind", ["quint8", "per_channel0", "float_qparams", "quint4x2"])
def test_same_pickle_globals_as_torch(kind):
    eb, tb = io.BytesIO(), io.BytesIO()
    ember.save(_q(ember, kind), eb)
    torch.save(_q(torch, kind), tb)
    assert _globals(eb.getvalue()) == _globals(tb.getvalue())


def test_state_dict_mix_dtype_qscheme_and_shared_storage():
    q = _q(ember, "quint8")
    obj = {"q": q, "row": q[1], "w": _q(ember, "qint8"),
           "f": ember.ones(3), "dtype": ember.qint8, "scheme": ember.per_channel_affine,
           "pc": _q(ember, "per_channel1")}
    buf = io.BytesIO()
    ember.save(obj, buf)
    z = zipfile.ZipFile(io.BytesIO(buf.getvalue()))
    assert len([n for n in z.namelist() if "/data/" in n]) == 6   # q and row share one
    assert [op.name for op, _, _ in pickletools.genops(z.read("archive/data.pkl"))
            ].count("BINPERSID") == 7
    buf.seek(0)
    r = torch.load(buf)
    assert r["dtype"] is torch.qint8 and r["scheme"] is torch.per_channel_affine
    for k in ("q", "row", "w", "pc"):
        _same(obj[k], r[k])
    assert r["row"].untyped_storage().data_ptr() == r["q"].untyped_storage().data_ptr()
    buf.seek(0)
    back = ember.load(buf)
    assert back["dtype"] is ember.qint8 and back["scheme"] is ember.per_channel_affine
    for k in ("q", "row", "w", "pc"):
        _same(back[k], r[k])


def test_torch_quantized_linear_state_dict_loads_in_ember():
    import torch.ao.nn.quantized as nnq
    m = torch.nn.Sequential(nnq.Linear(3, 2), nnq.Conv2d(2, 2, 3))
    buf = io.BytesIO()
    torch.save(m.state_dict(), buf)
    buf.seek(0)
    sd = ember.load(buf)
    tsd = m.state_dict()
    assert list(sd) == list(tsd)
    w, b = sd["0._packed_params._packed_params"]
    tw, tb = tsd["0._packed_params._packed_params"]
    _same(w, tw)
    np.testing.assert_array_equal(b.numpy(), tb.numpy())
    _same(sd["1.weight"], tsd["1.weight"])
    assert sd["0._packed_params.dtype"] is ember.qint8
    assert sd._metadata["0._packed_params"] == tsd._metadata["0._packed_params"]


def test_unsupported_scheme_and_bad_storage_refused():
    from ember import serialization
    from ember._ops import quantized as Q
    q = _q(ember, "quint8")
    Q.qparams(q).qscheme = ember.per_tensor_symmetric
    with pytest.raises(NotImplementedError, match="per_tensor_symmetric"):
        ember.save(q, io.BytesIO())
    with pytest.raises(RuntimeError, match="quantized storage"):
        serialization._rebuild_qtensor(ember.ones(2).untyped_storage(), 0, (2,), (1,),
                                       (ember.per_tensor_affine, 1.0, 0), False, None)


def _packed(m):
    """Linear (per tensor, per channel) and conv 1d/2d/3d packed parameters built by ``m``."""
    rng = np.random.default_rng(5)

    def q(shape, per_channel=False):
        x = m.from_numpy(rng.standard_normal(shape).astype(np.float32))
        if per_channel:
            n = shape[0]
            return m.quantize_per_channel(x, m.from_numpy(np.linspace(0.02, 0.1, n)),
                                          m.from_numpy(np.zeros(n, np.int64)), 0, m.qint8)
        return m.quantize_per_tensor(x, 0.05, 0, m.qint8)

    bias = m.from_numpy(rng.standard_normal(4).astype(np.float32))
    P = m.ops.quantized
    return {"linear": P.linear_prepack(q((4, 3)), bias),
            "linear_pc": P.linear_prepack(q((4, 3), True), None),
            "conv1d": P.conv1d_prepack(q((4, 2, 3)), bias, [2], [1], [1], 1),
            "conv2d": P.conv2d_prepack(q((4, 2, 3, 3), True), None, [2, 3], [1, 0], [1, 2], 2),
            "conv3d": P.conv3d_prepack(q((4, 2, 3, 3, 3)), bias, [1, 2, 3], [0, 1, 0],
                                       [1, 1, 1], 1)}


def _same_packed(e, t):
    ew, eb = e.unpack()
    tw, tb = t.unpack()
    _same(ew, tw)
    assert (eb is None) == (tb is None)
    if tb is not None:
        np.testing.assert_array_equal(eb.numpy(), tb.numpy())
    if hasattr(t, "stride"):
        for attr in ("stride", "padding", "dilation", "output_padding", "groups", "transpose"):
            assert getattr(e, attr)() == getattr(t, attr)(), attr


def test_packed_params_as_torch_script_objects_both_ways():
    e, t = _packed(ember), _packed(torch)
    buf = io.BytesIO()
    ember.save(e, buf)
    assert "torch ScriptObject" in _globals(buf.getvalue())
    buf.seek(0)
    with pytest.raises(Exception, match="ScriptObject"):
        torch.load(buf)              # torch too refuses them under weights_only
    buf.seek(0)
    r = torch.load(buf, weights_only=False)
    for k in t:
        _same_packed(r[k], t[k])
        assert str(r[k]._type()) == str(t[k]._type())
    tb = io.BytesIO()
    torch.save(t, tb)
    tb.seek(0)
    with pytest.raises(Exception, match="ScriptObject"):
        ember.load(tb)
    tb.seek(0)
    back = ember.load(tb, weights_only=False)
    for k in t:
        assert type(back[k]) is type(e[k])
        _same_packed(back[k], t[k])
