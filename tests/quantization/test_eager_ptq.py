"""Eager post-training quantization against torch: the same float model and calibration
data give equal observer qparams, equal converted modules (reprs) and equal output integers;
quantize_dynamic of Linear likewise."""
import re

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import torch.ao.quantization as TQ  # noqa: E402

import ember  # noqa: E402
import ember.ao.quantization as EQ  # noqa: E402


def _model(lib, Q):
    nn = lib.nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.quant = Q.QuantStub()
            self.conv = nn.Conv2d(3, 8, 3, padding=1)
            self.bn = nn.BatchNorm2d(8)
            self.relu = nn.ReLU()
            self.flat = nn.Flatten()
            self.fc = nn.Linear(8 * 6 * 6, 10)
            self.dequant = Q.DeQuantStub()

        def forward(self, x):
            x = self.relu(self.bn(self.conv(self.quant(x))))
            return self.dequant(self.fc(self.flat(x)))
    return Net()


def _pair():
    torch.manual_seed(0)
    t = _model(torch, TQ)
    with torch.no_grad():
        t.bn.running_mean.uniform_(-0.5, 0.5)
        t.bn.running_var.uniform_(0.5, 2)
        t.bn.weight.uniform_(0.5, 2)
        t.bn.bias.uniform_(-0.5, 0.5)
    e = _model(ember, EQ)
    e.load_state_dict({k: ember.from_numpy(v.detach().numpy().copy())
                       for k, v in t.state_dict().items()})
    return t.eval(), e.eval()


def _to_torch_names(text):
    return text.replace("ember.", "torch.")


@pytest.mark.parametrize("qconfig", ["default", "x86", "qnnpack"])
def test_static_ptq_equals_torch(qconfig):
    t, e = _pair()
    if qconfig == "default":
        t.qconfig, e.qconfig = TQ.default_qconfig, EQ.default_qconfig
    else:
        t.qconfig, e.qconfig = TQ.get_default_qconfig(qconfig), EQ.get_default_qconfig(qconfig)
    t = TQ.fuse_modules(t, [["conv", "bn", "relu"]])
    e = EQ.fuse_modules(e, [["conv", "bn", "relu"]])
    tp, ep = TQ.prepare(t), EQ.prepare(e)
    assert _to_torch_names(repr(ep)) == repr(tp)
    rng = np.random.default_rng(1)
    for _ in range(3):
        x = rng.standard_normal((4, 3, 6, 6)).astype(np.float32)
        np.testing.assert_allclose(ep(ember.from_numpy(x)).detach().numpy(),
                                   tp(torch.from_numpy(x)).detach().numpy(), atol=1e-5)
    observers = 0
    for (tn, tm), (en, em) in zip(tp.named_modules(), ep.named_modules()):
        assert tn == en
        if tn.endswith("activation_post_process"):
            observers += 1
            (ts, tz), (es, ez) = tm.calculate_qparams(), em.calculate_qparams()
            if tn.startswith("quant."):         # observes the input itself: bit for bit
                np.testing.assert_array_equal(es.numpy(), ts.numpy())
            else:   # observes float conv/linear outputs, which may differ from torch's by ulps
                np.testing.assert_allclose(es.numpy(), ts.numpy(), rtol=1e-6)
            np.testing.assert_array_equal(ez.numpy(), tz.numpy())
    assert observers == 3
    # with the same observer state, conversion gives the same quantized model bit for bit
    ep.load_state_dict({k: ember.from_numpy(v.numpy().copy())
                        for k, v in tp.state_dict().items()})
    tq, eq = TQ.convert(tp), EQ.convert(ep)
    assert repr(eq) == repr(tq)
    assert not hasattr(eq.fc, "qconfig") and not hasattr(eq, "qconfig")
    tq.dequant, eq.dequant = torch.nn.Identity(), ember.nn.Identity()
    x = rng.standard_normal((4, 3, 6, 6)).astype(np.float32)
    to, eo = tq(torch.from_numpy(x)), eq(ember.from_numpy(x))
    assert eo.q_scale() == to.q_scale() and eo.q_zero_point() == to.q_zero_point()
    got, want = eo.int_repr().numpy(), to.int_repr().numpy()
    if qconfig == "qnnpack" and _x86_kernels_saturate():
        # torch's products saturate here (ember's are exact): a few outputs differ a little
        diff = np.abs(got.astype(int) - want.astype(int))
        assert diff.max() <= 8 and (diff == 0).mean() >= 0.85
    else:
        np.testing.assert_array_equal(got, want)


def _x86_kernels_saturate():
    """torch's x86 quantized GEMMs on a CPU without VNNI (AVX2 only) add uint8 x int8
    products pairwise into saturating int16 sums (vpmaddubsw); with activations of the full
    0..255 range (qnnpack's qconfig does not reduce it) some sums clip, so torch's outputs
    there differ from the exact products ember computes. With VNNI they are exact."""
    try:
        from numpy._core._multiarray_umath import __cpu_features__ as f
    except ImportError:
        return False
    return not (f.get("AVX512VNNI") or f.get("AVXVNNI"))


def test_quantize_api_and_quant_wrapper():
    t, e = _pair()
    tw, ew = TQ.QuantWrapper(t.fc), EQ.QuantWrapper(e.fc)
    tw.qconfig, ew.qconfig = TQ.default_qconfig, EQ.default_qconfig
    data = np.random.default_rng(2).standard_normal((6, 288)).astype(np.float32)

    def calibrate(lib):
        def run(model, x):
            model(lib.from_numpy(x))
        return run
    tq = TQ.quantize(tw, calibrate(torch), [data])
    eq = EQ.quantize(ew, calibrate(ember), [data])
    # the observed float Linear outputs (ember's and torch's float GEMMs) may differ by ulps,
    # so the output scale may too: same structure, outputs within one quantization step
    number = re.compile(r"\d+\.\d+")
    assert number.sub("#", repr(eq)) == number.sub("#", repr(tq))
    np.testing.assert_allclose(eq(ember.from_numpy(data)).numpy(),
                               tq(torch.from_numpy(data)).numpy(),
                               atol=1.01 * tq.module.scale)
    assert isinstance(ew.module, ember.nn.Linear)       # quantize copies by default


@pytest.mark.parametrize("spec", ["default", "set", "dict"])
def test_quantize_dynamic_linear_equals_torch(spec):
    torch.manual_seed(3)
    t = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
    e = ember.nn.Sequential(ember.nn.Linear(16, 32), ember.nn.ReLU(), ember.nn.Linear(32, 4))
    e.load_state_dict({k: ember.from_numpy(v.detach().numpy().copy())
                       for k, v in t.state_dict().items()})
    if spec == "default":
        tq, eq = TQ.quantize_dynamic(t), EQ.quantize_dynamic(e)
    elif spec == "set":
        tq = TQ.quantize_dynamic(t, {torch.nn.Linear}, dtype=torch.qint8)
        eq = EQ.quantize_dynamic(e, {ember.nn.Linear}, dtype=ember.qint8)
    else:
        tq = TQ.quantize_dynamic(t, {"0": TQ.default_dynamic_qconfig})
        eq = EQ.quantize_dynamic(e, {"0": EQ.default_dynamic_qconfig})
    assert repr(eq) == repr(tq)
    assert isinstance(e[0], ember.nn.Linear)            # not in place by default
    x = np.random.default_rng(4).standard_normal((5, 16)).astype(np.float32)
    eo, to = eq(ember.from_numpy(x)), tq(torch.from_numpy(x))
    assert eo.requires_grad == to.requires_grad       # float layers left (spec "dict") train
    if spec == "dict":          # the last layer stays float: float GEMMs agree to ulps
        np.testing.assert_allclose(eo.detach().numpy(), to.detach().numpy(), rtol=1e-5,
                                   atol=1e-6)
    else:
        np.testing.assert_array_equal(eo.detach().numpy(), to.detach().numpy())


def test_quantize_dynamic_errors():
    with pytest.raises(ValueError, match="Don't know how to quantize"):
        EQ.quantize_dynamic(ember.nn.Linear(2, 2), dtype=ember.int32)


def test_propagate_qconfig_and_prepare_warning():
    _, e = _pair()
    EQ.propagate_qconfig_(e, {ember.nn.Linear: EQ.default_qconfig, "conv": None})
    assert e.fc.qconfig is EQ.default_qconfig and e.conv.qconfig is None and e.qconfig is None
    _, e = _pair()
    with pytest.warns(UserWarning, match="None of the submodule got qconfig"):
        EQ.prepare(e)


def test_user_hooks_survive_convert():
    _, e = _pair()
    e.qconfig = EQ.default_qconfig
    seen = []
    e.fc.register_forward_hook(lambda m, i, o: seen.append(type(o.dtype).__name__))
    p = EQ.prepare(e)
    p(ember.randn(2, 3, 6, 6))
    q = EQ.convert(p)
    q(ember.randn(2, 3, 6, 6))
    assert len(seen) == 2 and len(q.fc._forward_hooks) == 1


def test_module_mappings():
    m = EQ.get_default_static_quant_module_mappings()
    assert m[ember.nn.Linear] is ember.ao.nn.quantized.Linear
    assert m[EQ.QuantStub] is ember.ao.nn.quantized.Quantize
    assert m[ember.ao.nn.intrinsic.ConvReLU2d] is ember.ao.nn.intrinsic.quantized.ConvReLU2d
    assert EQ.get_default_qat_module_mappings()[ember.nn.Linear] is ember.ao.nn.qat.Linear
    d = EQ.get_default_dynamic_quant_module_mappings()
    assert d[ember.nn.Linear] is ember.ao.nn.quantized.dynamic.Linear
    assert EQ.get_static_quant_module_class(ember.nn.Conv2d) is ember.ao.nn.quantized.Conv2d
    with pytest.raises(AssertionError, match="does not have a corresponding"):
        EQ.get_static_quant_module_class(ember.nn.Tanh)


def _qmodules(lib):
    nnq = lib.ao.nn.quantized
    P = lib.nn.Parameter
    w = lib.from_numpy(np.linspace(0.5, 1.5, 4, dtype=np.float32))
    b = lib.from_numpy(np.linspace(-0.2, 0.3, 4, dtype=np.float32))
    bn = nnq.BatchNorm2d(4)
    with lib.no_grad():
        bn.weight.copy_(w)
        bn.bias.copy_(b)
        bn.running_mean.copy_(b * 2)
        bn.running_var.copy_(w)
    bn.scale, bn.zero_point = lib.tensor(0.05), lib.tensor(60)
    return {"ReLU6": nnq.ReLU6(), "Hardswish": nnq.Hardswish(0.03, 40),
            "ELU": nnq.ELU(0.04, 70, 0.5), "LeakyReLU": nnq.LeakyReLU(0.03, 30, 0.2),
            "Sigmoid": nnq.Sigmoid(1 / 256, 0), "Softmax": nnq.Softmax(1, 1 / 256, 0),
            "BatchNorm2d": bn, "Dropout": nnq.Dropout(0.3),
            "LayerNorm": nnq.LayerNorm([4, 5, 5], P(lib.ones(4, 5, 5)), P(lib.zeros(4, 5, 5)),
                                       0.04, 64),
            "GroupNorm": nnq.GroupNorm(2, 4, P(w.clone()), P(b.clone()), 0.04, 64),
            "InstanceNorm2d": nnq.InstanceNorm2d(4, P(w.clone()), P(b.clone()), 0.04, 64)}


@pytest.mark.parametrize("name", ["ReLU6", "Hardswish", "ELU", "LeakyReLU", "Sigmoid",
                                  "Softmax", "BatchNorm2d", "Dropout", "LayerNorm",
                                  "GroupNorm", "InstanceNorm2d"])
def test_quantized_modules_equal_torch(name):
    from tests.quantization.conftest import to_ember, assert_same_q
    t, e = _qmodules(torch)[name], _qmodules(ember)[name]
    assert repr(e) == repr(t)
    assert list(e.state_dict()) == list(t.state_dict())
    x = np.random.default_rng(5).standard_normal((2, 4, 5, 5)).astype(np.float32) * 3
    tx = torch.quantize_per_tensor(torch.from_numpy(x), 0.05, 64, torch.quint8)
    assert_same_q(e(to_ember(tx)), t(tx))


def test_functional_modules_equal_torch():
    from tests.quantization.conftest import to_ember, assert_same_q
    import torch.ao.nn.quantized as tnnq
    import ember.ao.nn.quantized as ennq
    rng = np.random.default_rng(6)
    a = torch.quantize_per_tensor(torch.from_numpy(rng.standard_normal((3, 4)).astype(
        np.float32)), 0.02, 128, torch.quint8)
    b = torch.quantize_per_tensor(torch.from_numpy(rng.standard_normal((3, 4)).astype(
        np.float32)), 0.03, 120, torch.quint8)
    tq, eq = tnnq.QFunctional(), ennq.QFunctional()
    tq.scale, tq.zero_point, eq.scale, eq.zero_point = 0.04, 100, 0.04, 100
    assert repr(eq) == repr(tq)
    assert_same_q(eq.add(to_ember(a), to_ember(b)), tq.add(a, b))
    assert_same_q(eq.add_relu(to_ember(a), to_ember(b)), tq.add_relu(a, b))
    assert_same_q(eq.mul(to_ember(a), to_ember(b)), tq.mul(a, b))
    assert_same_q(eq.cat([to_ember(a), to_ember(b)], 1), tq.cat([a, b], 1))
    assert_same_q(eq.add_scalar(to_ember(a), 0.5), tq.add_scalar(a, 0.5))
    assert_same_q(eq.mul_scalar(to_ember(a), 0.5), tq.mul_scalar(a, 0.5))
    ff = ennq.FloatFunctional()
    with pytest.raises(RuntimeError, match="not intended to use the 'forward'"):
        ff(ember.ones(1))
    fresh_e, fresh_t = ennq.QFunctional(), tnnq.QFunctional()
    fresh_e.load_state_dict(eq.state_dict())
    fresh_t.load_state_dict(tq.state_dict())
    assert (fresh_e.scale, fresh_e.zero_point) == (fresh_t.scale, fresh_t.zero_point)


def test_float_functional_through_eager_flow():
    """A FloatFunctional add observed in prepare becomes a QFunctional in convert."""
    def net(lib, Q):
        class Net(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.quant = Q.QuantStub()
                self.ff = lib.ao.nn.quantized.FloatFunctional()
                self.dequant = Q.DeQuantStub()

            def forward(self, x):
                x = self.quant(x)
                return self.dequant(self.ff.add(x, x))
        m = Net().eval()
        m.qconfig = Q.default_qconfig
        return m
    x = np.random.default_rng(7).standard_normal((4, 5)).astype(np.float32)
    results = []
    for lib, Q in ((torch, TQ), (ember, EQ)):
        p = Q.prepare(net(lib, Q))
        p(lib.from_numpy(x))
        q = Q.convert(p)
        results.append((repr(q), q(lib.from_numpy(x)).numpy()))
    assert results[0][0] == results[1][0]
    np.testing.assert_array_equal(results[1][1], results[0][1])


def test_alias_paths_are_the_same_objects():
    import ember.nn.quantized as nq
    import ember.nn.quantized.dynamic as nqd
    import ember.nn.intrinsic.qat as niq
    import ember.quantization.quantize_fx  # noqa: F401  (torch keeps this path too)
    assert ember.quantization.QuantStub is EQ.QuantStub
    assert ember.quantization.observer.MinMaxObserver is EQ.MinMaxObserver
    assert nq.Linear is ember.ao.nn.quantized.Linear
    assert nqd.Linear is ember.ao.nn.quantized.dynamic.Linear
    assert niq.ConvBnReLU2d is ember.ao.nn.intrinsic.qat.ConvBnReLU2d
    assert ember.nn.qat.Linear is ember.ao.nn.qat.Linear
    assert ember.nn.intrinsic.LinearReLU is ember.ao.nn.intrinsic.LinearReLU


@pytest.mark.parametrize("dtype", ["qint8", "float16"])
def test_quantize_dynamic_recurrent_equals_torch(dtype):
    torch.manual_seed(0)
    t = torch.nn.ModuleDict({"lstm": torch.nn.LSTM(4, 8, 2), "gru": torch.nn.GRU(4, 8),
                             "cell": torch.nn.LSTMCell(4, 8), "fc": torch.nn.Linear(8, 3)})
    e = ember.nn.ModuleDict({"lstm": ember.nn.LSTM(4, 8, 2), "gru": ember.nn.GRU(4, 8),
                             "cell": ember.nn.LSTMCell(4, 8), "fc": ember.nn.Linear(8, 3)})
    e.load_state_dict({k: ember.from_numpy(v.detach().clone().numpy())
                       for k, v in t.state_dict().items()})
    tq = TQ.quantize_dynamic(t, dtype=getattr(torch, dtype))
    eq = EQ.quantize_dynamic(e, dtype=getattr(ember, dtype))
    assert repr(eq) == repr(tq)
    x = np.random.default_rng(0).standard_normal((5, 2, 4)).astype(np.float32)
    # the recurrent kernels' own exactness is tested with them; here: the flow wires them
    np.testing.assert_allclose(eq["lstm"](ember.from_numpy(x))[0].detach().numpy(),
                               tq["lstm"](torch.from_numpy(x))[0].detach().numpy(), atol=1e-5)


def test_observer_state_dict_round_trip():
    _, e = _pair()
    e.qconfig = EQ.default_qconfig
    p = EQ.prepare(EQ.fuse_modules(e, [["conv", "bn", "relu"]]))
    p(ember.randn(2, 3, 6, 6))
    obs = EQ.get_observer_state_dict(p)
    assert sorted(obs) == sorted(k for k in p.state_dict() if "activation_post_process" in k)
    _, e2 = _pair()
    e2.qconfig = EQ.default_qconfig
    p2 = EQ.prepare(EQ.fuse_modules(e2, [["conv", "bn", "relu"]]))
    EQ.load_observer_state_dict(p2, obs)
    for a, b in zip(p.modules(), p2.modules()):
        if isinstance(a, EQ.ObserverBase):
            np.testing.assert_array_equal(b.calculate_qparams()[0].numpy(),
                                          a.calculate_qparams()[0].numpy())


def test_reference_convert_and_add_quant_dequant():
    t, e = _pair()
    t.qconfig, e.qconfig = TQ.default_qconfig, EQ.default_qconfig
    tp, ep = TQ.prepare(t), EQ.prepare(e)
    x = np.random.default_rng(0).standard_normal((2, 3, 6, 6)).astype(np.float32)
    tp(torch.from_numpy(x))
    ep(ember.from_numpy(x))
    ep.load_state_dict({k: ember.from_numpy(v.clone().numpy()) for k, v in tp.state_dict().items()})
    assert repr(EQ.convert(ep, is_reference=True)) == repr(TQ.convert(tp, is_reference=True))
    models = []
    for lib, Q in ((torch, TQ), (ember, EQ)):
        m = lib.nn.Sequential(lib.nn.Linear(2, 2),
                              lib.nn.Sequential(lib.nn.ReLU(), lib.nn.Linear(2, 2)))
        m[0].qconfig = m[1][1].qconfig = Q.default_qconfig
        models.append(repr(Q.add_quant_dequant(m)))
    assert models[1] == models[0]
