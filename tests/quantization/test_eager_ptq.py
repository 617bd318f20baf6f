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
    np.testing.assert_array_equal(eo.int_repr().numpy(), to.int_repr().numpy())


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
