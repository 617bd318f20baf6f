"""Observers: the ranges they keep and the qparams they compute equal torch's."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")
import torch.ao.quantization.observer as TO  # noqa: E402

import ember  # noqa: E402
import ember.ao.quantization.observer as EO  # noqa: E402

CONFIGS = [
    ("MinMaxObserver", {}),
    ("MinMaxObserver", dict(dtype="qint8", qscheme="per_tensor_symmetric")),
    ("MinMaxObserver", dict(quant_min=0, quant_max=127)),
    ("MinMaxObserver", dict(reduce_range=True)),
    ("MinMaxObserver", dict(qscheme="per_tensor_symmetric", quant_min=0, quant_max=100)),
    ("MinMaxObserver", dict(dtype="qint32")),
    ("MovingAverageMinMaxObserver", {}),
    ("MovingAverageMinMaxObserver", dict(dtype="qint8", qscheme="per_tensor_symmetric",
                                         averaging_constant=0.3)),
    ("PerChannelMinMaxObserver", dict(ch_axis=1)),
    ("PerChannelMinMaxObserver", dict(dtype="qint8", qscheme="per_channel_symmetric")),
    ("PerChannelMinMaxObserver", dict(qscheme="per_channel_affine_float_qparams")),
    ("MovingAveragePerChannelMinMaxObserver", dict(ch_axis=2)),
    ("MovingAveragePerChannelMinMaxObserver", dict(dtype="qint8",
                                                   qscheme="per_channel_symmetric")),
]


def _kwargs(kw, mod):
    return {k: (getattr(mod, v) if isinstance(v, str) else v) for k, v in kw.items()}


@pytest.mark.parametrize("name,kw", CONFIGS)
def test_qparams_equal_torch(name, kw):
    rng = np.random.default_rng(0)
    for trial in range(6):
        t = getattr(TO, name)(**_kwargs(kw, torch))
        e = getattr(EO, name)(**_kwargs(kw, ember))
        for _ in range(3):
            x = (rng.standard_normal((4, 5, 3)) * rng.uniform(0.01, 10) +
                 rng.uniform(-3, 3)).astype(np.float32)
            if trial == 0:
                x = np.abs(x)                       # all positive: zero stays in the range
            assert t(torch.from_numpy(x)) is not None
            e(ember.from_numpy(x))
        (ts, tz), (es, ez) = t.calculate_qparams(), e.calculate_qparams()
        np.testing.assert_array_equal(es.numpy(), ts.numpy())
        np.testing.assert_array_equal(ez.numpy(), tz.numpy())
        assert str(ez.dtype) == str(tz.dtype) and str(es.dtype) == str(ts.dtype)
        np.testing.assert_array_equal(e.min_val.numpy(), t.min_val.numpy())
        np.testing.assert_array_equal(e.max_val.numpy(), t.max_val.numpy())
    assert repr(e) == repr(t)
    assert list(e.state_dict()) == list(t.state_dict())
    assert (e.quant_min, e.quant_max) == (t.quant_min, t.quant_max)


@pytest.mark.parametrize("name", ["MinMaxObserver", "PerChannelMinMaxObserver"])
def test_unobserved_defaults(name):
    with pytest.warns(UserWarning, match="must run observer"):
        s, z = getattr(EO, name)().calculate_qparams()
    assert s.tolist() == [1.0] and z.tolist() == [0] and z.dtype is ember.int64
    assert repr(getattr(EO, name)()) == repr(getattr(TO, name)())


def test_per_channel_state_dict_round_trip():
    e = EO.PerChannelMinMaxObserver(ch_axis=1)
    e(ember.randn(2, 3, 4))
    fresh = EO.PerChannelMinMaxObserver(ch_axis=1)
    fresh.load_state_dict(e.state_dict())
    assert repr(fresh) == repr(e)
    np.testing.assert_array_equal(fresh.calculate_qparams()[0].numpy(),
                                  e.calculate_qparams()[0].numpy())


def test_defaults_and_with_args():
    for name in ["default_observer", "default_weight_observer",
                 "default_per_channel_weight_observer", "default_dynamic_quant_observer",
                 "default_float_qparams_observer", "weight_observer_range_neg_127_to_127"]:
        t, e = getattr(TO, name)(), getattr(EO, name)()
        assert repr(e) == repr(t)
        assert (str(e.dtype), getattr(e, "quant_min", None)) == \
            (str(t.dtype), getattr(t, "quant_min", None))
    assert repr(EO.default_observer) == repr(TO.default_observer).replace("torch.ao", "ember.ao")
    a, b = EO.default_observer(), EO.default_observer()
    assert a is not b


def test_placeholder_noop_recording():
    assert repr(EO.PlaceholderObserver()) == repr(TO.PlaceholderObserver())
    assert repr(EO.default_dynamic_quant_observer()) == repr(TO.default_dynamic_quant_observer())
    rec = EO.RecordingObserver()
    x = ember.randn(3)
    assert rec(x) is x and len(rec.get_tensor_value()) == 1
    assert EO.NoopObserver().dtype is ember.float16
    with pytest.raises(Exception, match="should not be called"):
        EO.PlaceholderObserver().calculate_qparams()


def test_bad_arguments():
    with pytest.raises(NotImplementedError, match="per_tensor_symmetric"):
        EO.MinMaxObserver(qscheme=ember.per_channel_affine)
    with pytest.raises(NotImplementedError, match="Cannot reduce range"):
        EO.MinMaxObserver(qscheme=ember.per_tensor_symmetric, reduce_range=True)
    with pytest.raises(AssertionError, match="data type"):
        EO.MinMaxObserver(dtype=ember.float32)


@pytest.mark.parametrize("kw", [{}, dict(reduce_range=True),
                                dict(dtype="qint8", qscheme="per_tensor_symmetric"),
                                dict(quant_min=0, quant_max=127)])
@pytest.mark.parametrize("batches", [1, 3])
def test_histogram_observer(kw, batches):
    rng = np.random.default_rng(batches)
    t = TO.HistogramObserver(**_kwargs(kw, torch))
    e = EO.HistogramObserver(**_kwargs(kw, ember))
    for _ in range(batches):
        x = (rng.standard_normal((8, 50)) * rng.uniform(0.5, 3) +
             rng.uniform(-1, 1)).astype(np.float32)
        t(torch.from_numpy(x))
        e(ember.from_numpy(x))
    (ts, tz), (es, ez) = t.calculate_qparams(), e.calculate_qparams()
    np.testing.assert_array_equal(es.numpy(), ts.numpy())
    np.testing.assert_array_equal(ez.numpy(), tz.numpy())
    # the histograms hold the same mass; bins may differ where ember's histc puts a value
    # on a bin edge differently from torch's (see the helper report)
    assert float(e.histogram.sum()) == float(t.histogram.sum())
    np.testing.assert_allclose(e.histogram.numpy(), t.histogram.numpy(), atol=1.0)
    assert repr(e) == repr(t)
    assert list(e.state_dict()) == list(t.state_dict())


def _norm(text):
    """torch's reprs with torch.ao -> ember.ao and module classes by name only."""
    import re
    text = text.replace("torch.ao.", "ember.ao.")
    text = re.sub(r"<class '(torch|ember)\.nn\.modules\.[a-z_]+\.(\w+)'>", r"<class 'nn.\2'>",
                  text)
    return re.sub(r"<(built-in method|function) (\w+)[^>]*>", r"<fn \2>", text)


def test_qconfigs_equal_torch():
    import torch.ao.quantization.qconfig as TQ
    import ember.ao.quantization.qconfig as EQ
    names = [n for n in TQ.__all__ if n.startswith(("default", "float", "per_channel"))]
    assert len(names) > 15
    for n in names:
        assert _norm(repr(getattr(TQ, n))) == _norm(repr(getattr(EQ, n))), n
    for backend in ["x86", "fbgemm", "qnnpack", "onednn"]:
        assert _norm(repr(TQ.get_default_qconfig(backend))) == \
            _norm(repr(EQ.get_default_qconfig(backend)))
        for version in (0, 1):
            assert _norm(repr(TQ.get_default_qat_qconfig(backend, version))) == \
                _norm(repr(EQ.get_default_qat_qconfig(backend, version)))
    with pytest.raises(AssertionError, match="not supported"):
        EQ.get_default_qconfig("foo")
    with pytest.raises(ValueError, match="observer instance"):
        EQ.QConfig(activation=EO.MinMaxObserver(), weight=EO.MinMaxObserver)
    assert EQ.qconfig_equals(EQ.get_default_qconfig(), EQ.get_default_qconfig())
    assert not EQ.qconfig_equals(EQ.get_default_qconfig(), EQ.default_qconfig)


def test_qconfig_mappings_equal_torch():
    import torch.ao.quantization.qconfig_mapping as TM
    import ember.ao.quantization.qconfig_mapping as EM
    for backend in ["x86", "qnnpack", "onednn"]:
        for f in ["get_default_qconfig_mapping", "get_default_qat_qconfig_mapping"]:
            assert _norm(repr(getattr(TM, f)(backend))) == _norm(repr(getattr(EM, f)(backend)))
    q = EM.QConfigMapping().set_global(None).set_object_type(ember.nn.Linear, None) \
        .set_module_name("fc", None).set_module_name_regex("a.*", None) \
        .set_module_name_object_type_order("x", ember.nn.Linear, 0, None)
    assert EM.QConfigMapping.from_dict(q.to_dict()).to_dict() == q.to_dict()
    assert repr(EM.QConfigMapping()) == repr(TM.QConfigMapping())


def test_histogram_bins_equal_torch():
    rng = np.random.default_rng(11)
    for _ in range(10):
        t, e = TO.HistogramObserver(reduce_range=True), EO.HistogramObserver(reduce_range=True)
        for _ in range(3):
            x = (rng.standard_normal((16, 64)) * rng.uniform(0.5, 3) +
                 rng.uniform(-1, 1)).astype(np.float32)
            t(torch.from_numpy(x))
            e(ember.from_numpy(x))
        np.testing.assert_array_equal(e.histogram.numpy(), t.histogram.numpy())


def test_affine_quantization_descriptions():
    shapes = [(4, 8), (2, 4, 8)]
    for shape in shapes:
        for name, args in [("PerTensor", ()), ("PerAxis", (1,)), ("PerRow", ()),
                           ("PerToken", ())]:
            assert EO.get_block_size(shape, getattr(EO, name)(*args)) == \
                TO.get_block_size(shape, getattr(TO, name)(*args))
    assert EO.get_block_size((4, 8), EO.PerGroup(4)) == TO.get_block_size((4, 8), TO.PerGroup(4))
    with pytest.raises(ValueError, match="Unsupported Granularity"):
        EO.get_block_size((4, 8), EO.PerBlock((2, 2)))
    assert repr(EO.PerBlock((2, 2))) == repr(TO.PerBlock((2, 2)))
    assert [m.name for m in EO.MappingType] == [m.name for m in TO.MappingType]
    assert [m.name for m in EO.ZeroPointDomain] == [m.name for m in TO.ZeroPointDomain]

    class Obs(EO.AffineQuantizedObserverBase):
        def forward(self, x):
            return x

        def calculate_qparams(self):
            return None
    o = Obs(EO.MappingType.ASYMMETRIC, ember.uint8, EO.PerTensor())
    assert o.preserve_zero and o.zero_point_domain is EO.ZeroPointDomain.INT
    with pytest.raises(AssertionError, match="granularity is None"):
        Obs(EO.MappingType.ASYMMETRIC, ember.uint8, None)
