"""ember.ao.nn.quantized Linear/Conv*/ConvTranspose* and dynamic Linear against torch's:
from_float on the same observed float module, then reprs, state_dict keys, weights and
outputs (integers) equal."""
import numpy as np
import pytest

from tests.quantization.conftest import to_ember, assert_same_q

torch = pytest.importorskip("torch")
import ember  # noqa: E402
import ember.ao.nn.quantized as enq  # noqa: E402
import ember.ao.nn.quantized.dynamic as enqd  # noqa: E402
from ember.ao.quantization import qconfig as eqc  # noqa: E402
import torch.ao.nn.quantized as tnq  # noqa: E402
import torch.ao.nn.quantized.dynamic as tnqd  # noqa: E402
from torch.ao.quantization import qconfig as tqc  # noqa: E402


def _copy_params(tmod, emod):
    emod.load_state_dict({k: to_ember(v) for k, v in tmod.state_dict().items()})


def _observed(tmod, emod, qconfig_name, calib):
    """Attach the same qconfig and an activation observer calibrated on the same outputs
    (torch's, so that float GEMM rounding cannot differ) to both."""
    y = tmod(calib).detach()
    for mod, lib, out in ((tmod, tqc, y), (emod, eqc, to_ember(y))):
        mod.qconfig = getattr(lib, qconfig_name)
        mod.activation_post_process = mod.qconfig.activation()
        mod.activation_post_process(out)
    return tmod, emod


def _same_quantized(tq, eq, x):
    assert repr(eq) == repr(tq)
    assert list(eq.state_dict().keys()) == list(tq.state_dict().keys())
    assert_same_q(eq.weight(), tq.weight())
    assert_same_q(eq(to_ember(x)), tq(x))


@pytest.mark.parametrize("qconfig", ["default_qconfig", "default_per_channel_qconfig"])
def test_linear_from_float(qconfig):
    torch.manual_seed(0)
    tf = torch.nn.Linear(12, 7)
    ef = ember.nn.Linear(12, 7)
    _copy_params(tf, ef)
    calib = torch.randn(20, 12)
    _observed(tf, ef, qconfig, calib)
    tq, eq = tnq.Linear.from_float(tf), enq.Linear.from_float(ef)
    assert eq.scale == tq.scale and eq.zero_point == tq.zero_point
    x = torch.quantize_per_tensor(torch.randn(3, 5, 12), 0.04, 128, torch.quint8)
    _same_quantized(tq, eq, x)
    assert eq.bias().requires_grad == tq.bias().requires_grad
    np.testing.assert_array_equal(eq.bias().detach().numpy(), tq.bias().detach().numpy())


def test_linear_construct_state_dict_roundtrip():
    tq, eq = tnq.Linear(4, 3, bias_=False), enq.Linear(4, 3, bias_=False)
    assert repr(eq) == repr(tq) and eq.bias() is None
    assert list(eq.state_dict().keys()) == list(tq.state_dict().keys())
    assert eq.state_dict()._metadata == tq.state_dict()._metadata
    src = enq.Linear(4, 3)
    w = ember.quantize_per_tensor(ember.randn(3, 4), 0.05, 0, ember.qint8)
    src.set_weight_bias(w, ember.randn(3))
    src.scale, src.zero_point = 0.2, 7
    dst = enq.Linear(4, 3)
    dst.load_state_dict(src.state_dict())
    assert (dst.scale, dst.zero_point) == (float(np.float32(0.2)), 7)   # saved as float32
    assert ember.equal(dst.weight().int_repr(), src.weight().int_repr())
    assert ember.equal(dst.bias(), src.bias())
    with pytest.raises(RuntimeError, match="Unsupported dtype specified for quantized Linear"):
        enq.Linear(4, 3, dtype=ember.quint8)
    with pytest.raises(AssertionError, match="nnq.Linear.from_float only works for Linear"):
        enq.Linear.from_float(ember.nn.Conv2d(1, 1, 1))


@pytest.mark.parametrize("qconfig", ["default_dynamic_qconfig", "per_channel_dynamic_qconfig",
                                     "float16_dynamic_qconfig"])
def test_dynamic_linear_from_float(qconfig):
    torch.manual_seed(1)
    tf = torch.nn.Linear(9, 4)
    ef = ember.nn.Linear(9, 4)
    _copy_params(tf, ef)
    tf.qconfig, ef.qconfig = getattr(tqc, qconfig), getattr(eqc, qconfig)
    tq, eq = tnqd.Linear.from_float(tf), enqd.Linear.from_float(ef)
    assert repr(eq) == repr(tq)
    assert list(eq.state_dict().keys()) == list(tq.state_dict().keys())
    x = torch.randn(6, 9) * 2 + 0.5
    np.testing.assert_array_equal(eq(to_ember(x)).numpy(), tq(x).detach().numpy())
    dst = enqd.Linear(9, 4, dtype=eq._packed_params.dtype)
    dst.load_state_dict(eq.state_dict())
    np.testing.assert_array_equal(dst(to_ember(x)).numpy(), tq(x).detach().numpy())


CONVS = [("Conv1d", dict(kernel_size=3, stride=2, padding=1), 1),
         ("Conv2d", dict(kernel_size=3, padding=(1, 2), padding_mode="reflect"), 2),
         ("Conv2d", dict(kernel_size=3, padding=1, groups=2), 2),
         ("Conv2d", dict(kernel_size=(3, 2), dilation=2, bias=False), 2),
         ("Conv3d", dict(kernel_size=2, stride=(1, 2, 1)), 3)]


@pytest.mark.parametrize("name,kwargs,d", CONVS)
@pytest.mark.parametrize("qconfig", ["default_qconfig", "default_per_channel_qconfig"])
def test_conv_from_float(name, kwargs, d, qconfig):
    torch.manual_seed(2)
    tf = getattr(torch.nn, name)(4, 6, **kwargs)
    ef = getattr(ember.nn, name)(4, 6, **kwargs)
    _copy_params(tf, ef)
    calib = torch.randn(2, 4, *([7] * d))
    _observed(tf, ef, qconfig, calib)
    tq, eq = getattr(tnq, name).from_float(tf), getattr(enq, name).from_float(ef)
    x = torch.quantize_per_tensor(torch.randn(2, 4, *([7] * d)), 0.03, 120, torch.quint8)
    _same_quantized(tq, eq, x)
    dst = getattr(enq, name)(4, 6, **kwargs)
    dst.load_state_dict(eq.state_dict())
    assert repr(dst) == repr(tq)
    assert_same_q(dst(to_ember(x)), tq(x))


@pytest.mark.parametrize("engine", ["x86", "fbgemm"])
@pytest.mark.parametrize("d", [1, 2, 3])
def test_conv_transpose_from_float(d, engine):
    torch.backends.quantized.engine = ember.backends.quantized.engine = engine
    name = f"ConvTranspose{d}d"
    # output padding 0 takes the x86 engine's oneDNN route (channels mixed as torch does)
    kwargs = dict(kernel_size=3, stride=2, padding=1, output_padding=int(engine == "fbgemm"))
    tf = getattr(torch.nn, name)(4, 6, **kwargs)
    ef = getattr(ember.nn, name)(4, 6, **kwargs)
    _copy_params(tf, ef)
    calib = torch.randn(2, 4, *([5] * d))
    _observed(tf, ef, "default_qconfig", calib)
    tq, eq = getattr(tnq, name).from_float(tf), getattr(enq, name).from_float(ef)
    x = torch.quantize_per_tensor(torch.randn(2, 4, *([5] * d)), 0.03, 120, torch.quint8)
    _same_quantized(tq, eq, x)


def test_conv_construct():
    for name, kwargs in (("Conv2d", dict(stride=2, padding=1, groups=2)),
                         ("Conv3d", dict(dilation=2, bias=False)),
                         ("ConvTranspose2d", dict(stride=2, output_padding=1)),
                         ("Conv1d", {})):
        tq = getattr(tnq, name)(4, 6, 3, **kwargs)
        eq = getattr(enq, name)(4, 6, 3, **kwargs)
        assert repr(eq) == repr(tq)
        assert list(eq.state_dict().keys()) == list(tq.state_dict().keys())
        assert eq.weight().shape == tuple(tq.weight().shape)
    with pytest.raises(AssertionError, match="nnq.Conv2d.from_float only works for Conv2d"):
        enq.Conv2d.from_float(ember.nn.Linear(2, 2))
    with pytest.raises(ValueError, match="'padding_mode' circular is not supported by "
                                         "quantized convolution"):
        enq.Conv2d(2, 2, 3, padding_mode="circular")


def test_linear_from_reference():
    import torch.ao.nn.quantized.reference as tref
    import ember.ao.nn.quantized.reference as eref
    tf, ef = torch.nn.Linear(5, 4), ember.nn.Linear(5, 4)
    _copy_params(tf, ef)
    scales = torch.rand(4, dtype=torch.double) * 0.02 + 0.01
    qparams = dict(qscheme=torch.per_channel_affine, dtype=torch.qint8, scale=scales,
                   zero_point=torch.zeros(4, dtype=torch.long), axis=0)
    eparams = dict(qscheme=ember.per_channel_affine, dtype=ember.qint8,
                   scale=to_ember(scales), zero_point=ember.zeros(4, dtype=ember.long), axis=0)
    tq = tnq.Linear.from_reference(tref.Linear.from_float(tf, qparams), 0.1, 5)
    eq = enq.Linear.from_reference(eref.Linear.from_float(ef, eparams), 0.1, 5)
    x = torch.quantize_per_tensor(torch.randn(3, 5), 0.05, 60, torch.quint8)
    _same_quantized(tq, eq, x)


@pytest.mark.parametrize("name,d", [("Conv1d", 1), ("Conv2d", 2), ("Conv3d", 3),
                                    ("ConvTranspose2d", 2)])
def test_dynamic_conv_from_float(name, d):
    """Dynamic convolutions: float in and out; torch quantizes the input per call and
    requantizes the result with the input's own parameters (ember the same)."""
    torch.manual_seed(5)
    kwargs = dict(kernel_size=3, padding=1)
    tf, ef = getattr(torch.nn, name)(3, 4, **kwargs), getattr(ember.nn, name)(3, 4, **kwargs)
    _copy_params(tf, ef)
    tf.qconfig, ef.qconfig = tqc.default_dynamic_qconfig, eqc.default_dynamic_qconfig
    tq, eq = getattr(tnqd, name).from_float(tf), getattr(enqd, name).from_float(ef)
    assert repr(eq) == repr(tq)
    assert list(eq.state_dict().keys()) == list(tq.state_dict().keys())
    assert_same_q(eq.weight(), tq.weight())
    x = torch.randn(2, 3, *([6] * d)) * 2 + 0.3
    np.testing.assert_array_equal(eq(to_ember(x)).numpy(), tq(x).numpy())
