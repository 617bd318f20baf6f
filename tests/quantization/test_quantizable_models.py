"""ember.vision.models.quantization against torchvision.models.quantization: structure,
state_dict keys, float outputs, fusion, and eager post-training quantization."""
import sys
import os

import numpy as np
import pytest

import ember
from tests.quantization.conftest import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from helpers import import_torchvision  # noqa: E402

import ember.vision.models.quantization as EQ  # noqa: E402

NAMES = ["resnet18", "resnet50", "mobilenet_v2", "mobilenet_v3_large"]


@pytest.fixture(scope="module")
def TQ():
    import_torchvision()
    import torchvision.models.quantization as tq
    return tq


def _pair(TQ, name, **kw):
    """The torchvision model and the ember one carrying its weights."""
    torch.manual_seed(0)
    t = getattr(TQ, name)(**kw)
    e = getattr(EQ, name)(**kw)
    e.load_state_dict({k: ember.from_numpy(v.detach().numpy().copy())
                       for k, v in t.state_dict().items()})
    return t, e


@pytest.mark.parametrize("name", NAMES)
def test_structure_and_state_dict_keys(TQ, name):
    t, e = getattr(TQ, name)(), getattr(EQ, name)()
    assert str(e) == str(t)
    assert list(e.state_dict()) == list(t.state_dict())
    assert type(e).__name__ == type(t).__name__


@pytest.mark.parametrize("name", ["resnet18", "mobilenet_v2", "mobilenet_v3_large"])
def test_float_forward_matches(TQ, name):
    t, e = _pair(TQ, name, num_classes=10)
    t.eval(), e.eval()
    x = np.random.default_rng(0).standard_normal((2, 3, 32, 32)).astype(np.float32)
    with torch.no_grad():
        want = t(torch.from_numpy(x)).numpy()
    got = e(ember.from_numpy(x)).detach().numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_pretrained_weights_refused():
    for build, enum in ((EQ.resnet18, EQ.ResNet18_QuantizedWeights),
                        (EQ.mobilenet_v2, EQ.MobileNet_V2_QuantizedWeights)):
        with pytest.raises(RuntimeError, match="downloads"):
            build(weights=enum.DEFAULT, quantize=True)
        with pytest.raises(RuntimeError, match="downloads"):
            build(pretrained=True)
    assert [w.name for w in EQ.ResNet50_QuantizedWeights] == ["IMAGENET1K_FBGEMM_V1",
                                                              "IMAGENET1K_FBGEMM_V2"]
    assert EQ.MobileNet_V3_Large_QuantizedWeights.DEFAULT.name == "IMAGENET1K_QNNPACK_V1"


def test_relus_replaced_and_residual_sums_quantizable():
    m = EQ.resnet18()
    relus = [mod for mod in m.modules() if type(mod) is ember.nn.ReLU]
    assert relus and not any(r.inplace for r in relus)
    assert type(m.layer1[0].add_relu).__name__ == "FloatFunctional"
    v2 = EQ.mobilenet_v2()
    assert not any(type(mod) is ember.nn.ReLU6 for mod in v2.modules())


@pytest.mark.parametrize("name,is_qat", [(n, q) for n in NAMES for q in (False, True)
                                          if not (n == "resnet50" and q)])
def test_fuse_model_as_torchvision(TQ, name, is_qat):
    t, e = _pair(TQ, name, num_classes=10)
    for m in (t, e):
        m.train(is_qat)
        m.fuse_model(is_qat=is_qat)
    assert str(e) == str(t)
    assert list(e.state_dict()) == list(t.state_dict())
    if not is_qat and name != "resnet50":       # folded BN: the same float function
        x = np.random.default_rng(1).standard_normal((1, 3, 32, 32)).astype(np.float32)
        with torch.no_grad():
            want = t(torch.from_numpy(x)).numpy()
        np.testing.assert_allclose(e(ember.from_numpy(x)).detach().numpy(), want,
                                   rtol=1e-4, atol=1e-4)


def _mask_qparams(text):
    """A converted model's repr without its observed scales/zero points (they depend on
    float activations, which differ from torch's in the last bits)."""
    import re
    text = re.sub(r"tensor\(\[[^]]*\]\)", "T", text)
    return re.sub(r"(scale|zero_point)=[-0-9.e]+", r"\1=*", text)


@pytest.mark.parametrize("name,kw", [("resnet18", {}),
                                     ("mobilenet_v2", {"width_mult": 0.5})])
def test_eager_ptq_of_quantize_false_model(TQ, name, kw):
    t, e = _pair(TQ, name, num_classes=10, **kw)
    g = torch.Generator().manual_seed(1)
    stats = {k: v for k, v in t.state_dict().items() if "running" in k}
    for k, v in stats.items():     # BN statistics worth folding, the same in both
        v.copy_(torch.randn(v.shape, generator=g).abs() * 0.2 + (0.5 if "var" in k else 0))
    e.load_state_dict({k: ember.from_numpy(v.numpy().copy()) for k, v in t.state_dict().items()})
    rng = np.random.default_rng(0)
    calib = [rng.random((2, 3, 16, 16), dtype=np.float32)]
    for lib, m in ((torch, t), (ember, e)):
        lib.backends.quantized.engine = "x86"
        m.eval()
        m.fuse_model()
        tq = lib.ao.quantization       # min/max observers: the histogram one is slow here
        m.qconfig = tq.QConfig(activation=tq.default_observer,
                               weight=tq.default_per_channel_weight_observer)
        tq.prepare(m, inplace=True)
        with lib.no_grad():
            for b in calib:
                m(lib.from_numpy(b))
        lib.ao.quantization.convert(m, inplace=True)
    assert _mask_qparams(str(e)) == _mask_qparams(str(t))
    assert type(e.fc if hasattr(e, "fc") else e.classifier[1]).__name__ == "Linear"
    x = rng.random((2, 3, 16, 16), dtype=np.float32)
    with torch.no_grad():
        want = t(torch.from_numpy(x)).numpy()
    got = e(ember.from_numpy(x)).numpy()
    out_scale = (t.fc if hasattr(t, "fc") else t.classifier[1]).scale
    # the observers saw float activations equal to torch's up to rounding: the int8
    # outputs agree to a few quanta of the output scale
    np.testing.assert_allclose(got, want, atol=4 * out_scale)


@pytest.mark.parametrize("name,kw,engine", [("resnet18", {}, "fbgemm"),
                                            ("mobilenet_v2", {"width_mult": 0.25}, "qnnpack")])
def test_quantize_true_follows_torchvision(TQ, name, kw, engine, monkeypatch):
    """quantize=True: torchvision's qconfig for the engine, one random batch observed (the
    same batch in both libraries here), converted."""
    x = np.random.default_rng(3).random((1, 3, 32, 32), dtype=np.float32)
    monkeypatch.setattr(torch, "rand", lambda *a, **k: torch.from_numpy(x.copy()))
    monkeypatch.setattr(ember, "rand", lambda *a, **k: ember.from_numpy(x.copy()))
    torch.manual_seed(0)
    t = getattr(TQ, name)(num_classes=10, **kw)
    sd = {k: ember.from_numpy(v.detach().numpy().copy()) for k, v in t.state_dict().items()}
    t = getattr(TQ, name)(num_classes=10, quantize=False, **kw)
    t.load_state_dict({k: torch.from_numpy(v.numpy().copy()) for k, v in sd.items()})
    e = getattr(EQ, name)(num_classes=10, **kw)
    e.load_state_dict(sd)
    from torchvision.models.quantization.utils import quantize_model as tv_quantize
    tv_quantize(t, engine)
    EQ.utils.quantize_model(e, engine)
    assert ember.backends.quantized.engine == torch.backends.quantized.engine == engine
    assert _mask_qparams(str(e)) == _mask_qparams(str(t))
    assert e.quant.scale.item() == t.quant.scale.item()
    last = (lambda m: m.fc if hasattr(m, "fc") else m.classifier[1])
    assert str(last(e).weight().qscheme()) == str(last(t).weight().qscheme())
    # the builder itself goes the same way
    built = getattr(EQ, name)(num_classes=10, quantize=True, **kw)
    assert _mask_qparams(str(built)) == _mask_qparams(str(t))


def test_mobilenet_v3_quantize_true_takes_torchvisions_qat_path(TQ):
    """quantize=True on MobileNetV3: fused for QAT, qnnpack QAT qconfig, converted without
    calibration (the stubs keep the fake quantizers' initial scale 1.0), as torchvision."""
    t = TQ.mobilenet_v3_large(quantize=True, num_classes=10)
    e = EQ.mobilenet_v3_large(quantize=True, num_classes=10)
    assert _mask_qparams(str(e)) == _mask_qparams(str(t))
    assert e.quant.scale.item() == t.quant.scale.item() == 1.0
    assert not e.training
    x = np.random.default_rng(0).random((1, 3, 32, 32), dtype=np.float32)
    assert tuple(e(ember.from_numpy(x)).shape) == (1, 10)
