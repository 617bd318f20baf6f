"""ATen ops on quantized tensors (torch.sigmoid(qx), F.hardtanh(qx), qx.max(1), qx == qy,
qx.fill_(v)...) against torch's x86 engine: same integers and parameters, same refusals."""
import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import ember
import ember.nn.functional as EF
from tests.quantization.conftest import assert_same_q, to_ember
from tests.quantization.qops_util import SIZES, random_q

QT = ["quint8", "qint8"]

UNARY = {
    "sigmoid": lambda T, F, x: T.sigmoid(x),
    "tanh": lambda T, F, x: T.tanh(x),
    "hardsigmoid": lambda T, F, x: F.hardsigmoid(x),
    "gelu": lambda T, F, x: F.gelu(x),
    "gelu_tanh": lambda T, F, x: F.gelu(x, approximate="tanh"),
    "hardtanh": lambda T, F, x: F.hardtanh(x, -0.5, 0.7),
    "relu6": lambda T, F, x: F.relu6(x),
    "leaky_relu": lambda T, F, x: F.leaky_relu(x, 0.1),
    "threshold": lambda T, F, x: F.threshold(x, 0.13, 0.37),
    "clamp": lambda T, F, x: T.clamp(x, -0.5, 0.7),
    "clamp_min": lambda T, F, x: T.clamp(x, min=-0.25),
    "clamp_max": lambda T, F, x: T.clamp(x, max=0.25),
    "relu": lambda T, F, x: F.relu(x),
}


@pytest.mark.parametrize("qtype", QT)
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary(name, qtype, n):
    f = UNARY[name]
    rng = np.random.default_rng(n)
    for _ in range(4):
        t, e = random_q(rng, (n,), qtype)
        assert_same_q(f(ember, EF, e), f(torch, TF, t))


@pytest.mark.parametrize("name", ["hardtanh", "relu6", "leaky_relu", "hardsigmoid"])
def test_inplace(name):
    rng = np.random.default_rng(0)
    t, e = random_q(rng, (3, 50))
    f = {"hardtanh": lambda F, x: F.hardtanh(x, -0.5, 0.5, inplace=True),
         "relu6": lambda F, x: F.relu6(x, inplace=True),
         "leaky_relu": lambda F, x: F.leaky_relu(x, 0.2, inplace=True),
         "hardsigmoid": lambda F, x: F.hardsigmoid(x, inplace=True)}[name]
    r = f(EF, e)
    w = f(TF, t)
    assert r is e
    assert_same_q(e, t)
    assert_same_q(r, w)


@pytest.mark.parametrize("name,call", [
    ("sigmoid.out", lambda T, F, x: x.sigmoid_()), ("tanh.out", lambda T, F, x: x.tanh_()),
    ("elu.out", lambda T, F, x: F.elu(x)), ("elu.out", lambda T, F, x: F.selu(x)),
    ("hardswish", lambda T, F, x: F.hardswish(x)),
    ("_softmax.out", lambda T, F, x: F.softmax(x, 0)),
    ("threshold.out", lambda T, F, x: F.threshold(x, 0.1, 0.2, inplace=True)),
    ("zero_", lambda T, F, x: x.zero_()),
    ("upsample_nearest1d.out", lambda T, F, x: F.interpolate(x[None, None], scale_factor=2)),
])
def test_refusals(name, call):
    rng = np.random.default_rng(1)
    t, e = random_q(rng, (8,))
    with pytest.raises(NotImplementedError, match=f"'aten::{name}'"):
        call(torch, TF, t)
    with pytest.raises(NotImplementedError, match=f"'aten::{name}'"):
        call(ember, EF, e)


def test_clamp_refusals():
    rng = np.random.default_rng(2)
    t, e = random_q(rng, (8,))
    for T, x in ((torch, t), (ember, e)):
        with pytest.raises(RuntimeError, match="promoteTypes with quantized numbers"):
            x.clone().clamp_(0.1, 0.2)
        with pytest.raises(RuntimeError, match="promoteTypes with quantized numbers"):
            x.clamp_max(0.2)
        with pytest.raises(RuntimeError, match="promoteTypes with quantized numbers"):
            T.clamp_min(x, 0.2)


def test_per_channel_refused():
    x = ember.quantize_per_channel(ember.randn(2, 3), ember.tensor([0.1, 0.2]),
                                   ember.tensor([0, 0]), 0, ember.quint8)
    with pytest.raises(RuntimeError, match="kPerTensorAffine"):
        ember.sigmoid(x)
    with pytest.raises(RuntimeError, match="kPerTensorAffine"):
        EF.hardtanh(x)


@pytest.mark.parametrize("qtype", QT)
def test_comparisons(qtype):
    rng = np.random.default_rng(3)
    t, e = random_q(rng, (200,), qtype, scale=0.1)
    t2, e2 = random_q(rng, (200,), qtype, scale=0.2)
    f = torch.randn(200)
    for op in ("eq", "ne", "lt", "le", "gt", "ge"):
        for other_t, other_e in ((t2, e2), (t, e), (0.5, 0.5), (f, to_ember(f))):
            want = getattr(torch, op)(t, other_t).numpy()
            np.testing.assert_array_equal(getattr(ember, op)(e, other_e).numpy(), want)


@pytest.mark.parametrize("qtype", QT)
def test_order_ops(qtype):
    rng = np.random.default_rng(4)
    t, e = random_q(rng, (4, 37), qtype)
    assert_same_q(e.max(), t.max())
    assert_same_q(e.min(), t.min())
    for dim in (0, 1, -1):
        for keepdim in (False, True):
            (ev, ei), (tv, ti) = e.max(dim, keepdim), t.max(dim, keepdim)
            assert_same_q(ev, tv)
            np.testing.assert_array_equal(ei.numpy(), ti.numpy())
            (ev, ei), (tv, ti) = ember.min(e, dim, keepdim), torch.min(t, dim, keepdim)
            assert_same_q(ev, tv)
            np.testing.assert_array_equal(ei.numpy(), ti.numpy())
    # sort: distinct integers per row (torch's order of ties is unspecified)
    rows = np.stack([rng.permutation(256)[:37] for _ in range(4)])
    ints = rows.astype(np.uint8) if qtype == "quint8" else (rows - 128).astype(np.int8)
    t = torch._make_per_tensor_quantized_tensor(torch.from_numpy(ints), 0.1, 3)
    e = to_ember(t)
    for descending in (False, True):
        (ev, ei), (tv, ti) = e.sort(1, descending), t.sort(1, descending)
        assert_same_q(ev, tv)
        np.testing.assert_array_equal(ei.numpy(), ti.numpy())
        np.testing.assert_array_equal(e.argsort(1, descending).numpy(),
                                      t.argsort(1, descending).numpy())
    # topk: distinct integers, so the order is defined
    perm = rng.permutation(256)[:50].astype(np.uint8 if qtype == "quint8" else np.int16)
    ints = (perm if qtype == "quint8" else perm - 128).astype(np.uint8 if qtype == "quint8"
                                                              else np.int8)
    t = torch._make_per_tensor_quantized_tensor(torch.from_numpy(ints), 0.1, 3)
    e = to_ember(t)
    for largest in (True, False):
        (ev, ei), (tv, ti) = e.topk(7, largest=largest), t.topk(7, largest=largest)
        assert_same_q(ev, tv)
        np.testing.assert_array_equal(ei.numpy(), ti.numpy())


@pytest.mark.parametrize("qtype", QT)
def test_writes(qtype):
    rng = np.random.default_rng(5)
    t, e = random_q(rng, (3, 40), qtype, scale=0.1)
    assert_same_q(e.clone().fill_(0.37), t.clone().fill_(0.37))
    assert_same_q(e.clone().fill_(0.25), t.clone().fill_(0.25))
    mask = rng.random((3, 40)) < 0.5
    assert_same_q(e.masked_fill(ember.from_numpy(mask), 0.25),
                  t.masked_fill(torch.from_numpy(mask), 0.25))
    r = e.clone()
    r.masked_fill_(ember.from_numpy(mask), -0.35)
    w = t.clone()
    w.masked_fill_(torch.from_numpy(mask), -0.35)
    assert_same_q(r, w)
    src = (rng.standard_normal((3, 40)) * 3).astype(np.float32)
    assert_same_q(e.clone().copy_(ember.from_numpy(src)), t.clone().copy_(torch.from_numpy(src)))
    t2, e2 = random_q(rng, (3, 40), qtype, scale=0.3)
    assert_same_q(e.clone().copy_(e2), t.clone().copy_(t2))
    idx = np.array([0, 2])
    vals = rng.standard_normal((2, 40)).astype(np.float32)
    assert_same_q(e.clone().index_put_((ember.from_numpy(idx),), ember.from_numpy(vals)),
                  t.clone().index_put_((torch.from_numpy(idx),), torch.from_numpy(vals)))
    r, w = e.clone(), t.clone()
    r[1] = 0.45
    w[1] = 0.45
    assert_same_q(r, w)
    with pytest.raises(RuntimeError, match="should not be quantized"):
        e.clone().index_put_((ember.from_numpy(idx),), e[:2])


@pytest.mark.parametrize("qtype", QT)
def test_stack_pad_std_mean(qtype):
    rng = np.random.default_rng(6)
    t, e = random_q(rng, (2, 3, 5, 6), qtype, scale=0.1)
    t2, e2 = random_q(rng, (2, 3, 5, 6), qtype, scale=0.3)
    assert_same_q(ember.stack([e, e2], 1), torch.stack([t, t2], 1))
    assert_same_q(EF.pad(e, (1, 2, 0, 1), value=0.55), TF.pad(t, (1, 2, 0, 1), value=0.55))
    assert_same_q(e.std(1), t.std(1))
    for dims in ((2, 3), (3,), (1, 2, 3), None):
        w = t.mean(dims) if dims else t.mean()
        r = e.mean(dims) if dims else e.mean()
        assert_same_q(r, w)
    assert_same_q(e.mean((2, 3), keepdim=True), t.mean((2, 3), keepdim=True))


def test_to_refusals():
    rng = np.random.default_rng(7)
    t, e = random_q(rng, (4,))
    for x in (t, e):
        with pytest.raises(RuntimeError, match="requires quantized dtype"):
            x.to(x.dequantize().dtype)
    assert_same_q(e.to(ember.quint8), t.to(torch.quint8))


@pytest.mark.parametrize("qtype", QT)
def test_rearrangements(qtype):
    """Shuffles, reflection padding and eval-mode dropout move integers: parameters kept."""
    rng = np.random.default_rng(8)
    t, e = random_q(rng, (2, 8, 4, 6), qtype)
    assert_same_q(EF.pixel_shuffle(e, 2), TF.pixel_shuffle(t, 2))
    assert_same_q(EF.pixel_unshuffle(e, 2), TF.pixel_unshuffle(t, 2))
    assert_same_q(ember.native_channel_shuffle(e, 4), torch.native_channel_shuffle(t, 4))
    if qtype == "quint8":
        assert_same_q(EF.channel_shuffle(e, 2), TF.channel_shuffle(t, 2))
    assert_same_q(EF.pad(e, (1, 2, 2, 1), mode="reflect"), TF.pad(t, (1, 2, 2, 1), mode="reflect"))
    assert_same_q(EF.dropout(e, 0.3, training=False), TF.dropout(t, 0.3, training=False))


QINT32_EXACT = {
    "hardsigmoid": lambda T, F, Q, x: F.hardsigmoid(x),
    "hardtanh": lambda T, F, Q, x: F.hardtanh(x, -5, 7),
    "leaky_relu": lambda T, F, Q, x: F.leaky_relu(x, 0.1),
    "gelu": lambda T, F, Q, x: F.gelu(x),
    "clamp": lambda T, F, Q, x: T.clamp(x, -5, 7),
    "max_pool2d": lambda T, F, Q, x: F.max_pool2d(x.reshape(1, -1, 10, 10), 2),
    "avg_pool2d": lambda T, F, Q, x: F.avg_pool2d(x.reshape(1, -1, 10, 10), 2),
    "adaptive_avg_pool2d": lambda T, F, Q, x: F.adaptive_avg_pool2d(x.reshape(1, -1, 10, 10), 3),
    "mean": lambda T, F, Q, x: x.reshape(1, -1, 10, 10).mean((2, 3)),
    "bilinear": lambda T, F, Q, x: F.interpolate(x.reshape(1, -1, 10, 10), scale_factor=1.5,
                                                 mode="bilinear"),
    "add": lambda T, F, Q, x: Q.add(x, x, 0.3, 5),
    "mul": lambda T, F, Q, x: Q.mul(x, x, 30.0, 5),
    "q_sigmoid": lambda T, F, Q, x: Q.sigmoid(x, 0.001, 0),
    "cat": lambda T, F, Q, x: Q.cat([x, x], 0, 0.3, 2),
    "layer_norm": lambda T, F, Q, x: Q.layer_norm(x.reshape(-1, 100), [100], None, None, 1e-5,
                                                  0.01, 0),
    "add_scalar": lambda T, F, Q, x: Q.add_scalar(x, 3.3),
    "mul_scalar": lambda T, F, Q, x: Q.mul_scalar(x, -2.5),
    "relu6": lambda T, F, Q, x: Q.relu6(x),
    "hardswish": lambda T, F, Q, x: Q.hardswish(x, 0.2, 4),
    "elu": lambda T, F, Q, x: Q.elu(x, 0.2, 4),
}


@pytest.mark.parametrize("name", sorted(QINT32_EXACT))
def test_qint32(name):
    """qint32 tensors: 16 lanes a vector; saturation at the int32 range."""
    f = QINT32_EXACT[name]
    rng = np.random.default_rng(9)
    for n in (700, 1000):
        t, e = random_q(rng, (n,), "qint32", scale=0.01)
        assert_same_q(f(ember, EF, ember.ops.quantized, e), f(torch, TF, torch.ops.quantized, t))


@pytest.mark.parametrize("name", ["sigmoid", "tanh"])
def test_qint32_fixed_range_within_float32(name):
    """qint32 sigmoid/tanh resolve 2**-32: they show the last-bit differences of torch's
    float32 exp (SLEEF) and NumPy's, so they agree to float32 precision, not bit for bit."""
    rng = np.random.default_rng(10)
    t, e = random_q(rng, (1000,), "qint32", scale=0.01)
    r, w = getattr(ember, name)(e), getattr(torch, name)(t)
    assert r.q_scale() == w.q_scale() and r.q_zero_point() == w.q_zero_point()
    np.testing.assert_allclose(r.int_repr().numpy().astype(np.float64),
                               w.int_repr().numpy().astype(np.float64), rtol=1e-6, atol=2)


@pytest.mark.parametrize("module", [
    "Hardsigmoid()", "ReLU6()", "LeakyReLU(0.2)", "MaxPool2d(2)", "AvgPool2d(3, 2, 1)",
    "AdaptiveAvgPool2d(1)", "Upsample(scale_factor=2)", "Upsample(size=(9, 9), mode='bilinear')",
    "Dropout()", "Hardtanh(-0.5, 0.5)", "Flatten()", "Sigmoid()", "Tanh()", "GELU()",
    "Threshold(0.1, 0.3)", "PixelShuffle(2)", "ChannelShuffle(2)"])
def test_float_modules_on_quantized_tensors(module):
    """torch.nn modules a quantized model keeps (activations, pools, resampling)."""
    rng = np.random.default_rng(11)
    t, e = random_q(rng, (2, 8, 7, 7))
    tm = eval("torch.nn." + module).eval()
    em = eval("ember.nn." + module).eval()
    assert_same_q(em(e), tm(t))
