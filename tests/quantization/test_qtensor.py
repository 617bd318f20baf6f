"""Quantized tensors: creation, parameters, views, printing, errors — against torch."""
import numpy as np
import pytest
import torch

import ember
from tests.quantization.conftest import assert_same_q, to_ember

QTYPES = ["quint8", "qint8", "qint32"]


@pytest.mark.parametrize("qtype", QTYPES)
@pytest.mark.parametrize("n", [7, 1000, 4099])
def test_quantize_per_tensor_bit_exact(qtype, n):
    rng = np.random.default_rng(n)
    for _ in range(20):
        x = (rng.standard_normal(n) * rng.uniform(0.1, 100)).astype(np.float32)
        scale = float(rng.uniform(1e-3, 2))
        zp = int(rng.integers(0, 128)) if qtype == "quint8" else int(rng.integers(-100, 100))
        t = torch.quantize_per_tensor(torch.from_numpy(x), scale, zp, getattr(torch, qtype))
        e = ember.quantize_per_tensor(ember.from_numpy(x), scale, zp, getattr(ember, qtype))
        assert_same_q(e, t)
        np.testing.assert_array_equal(e.dequantize().numpy(), t.dequantize().numpy())


@pytest.mark.parametrize("qtype", QTYPES)
@pytest.mark.parametrize("shape,axis", [((16, 300), 0), ((300, 16), 1), ((5, 7, 9), 1)])
def test_quantize_per_channel_bit_exact(qtype, shape, axis):
    rng = np.random.default_rng(axis)
    x = (rng.standard_normal(shape) * 30).astype(np.float32)
    c = shape[axis]
    scales = rng.uniform(1e-3, 2, c)
    zps = rng.integers(0, 100, c)
    t = torch.quantize_per_channel(torch.from_numpy(x), torch.from_numpy(scales),
                                   torch.from_numpy(zps), axis, getattr(torch, qtype))
    e = ember.quantize_per_channel(ember.from_numpy(x), ember.from_numpy(scales),
                                   ember.from_numpy(zps), axis, getattr(ember, qtype))
    assert_same_q(e, t)
    np.testing.assert_array_equal(e.dequantize().numpy(), t.dequantize().numpy())


@pytest.mark.parametrize("qtype", ["quint8", "qint8"])
@pytest.mark.parametrize("reduce_range", [False, True])
def test_quantize_per_tensor_dynamic_qparams(qtype, reduce_range):
    rng = np.random.default_rng(1)
    for _ in range(30):
        x = (rng.standard_normal(50) * rng.uniform(0.01, 10) + rng.uniform(-5, 5)).astype(np.float32)
        t = torch.quantize_per_tensor_dynamic(torch.from_numpy(x), getattr(torch, qtype), reduce_range)
        e = ember.quantize_per_tensor_dynamic(ember.from_numpy(x), getattr(ember, qtype), reduce_range)
        assert_same_q(e, t)


def test_quint4x2_packs_like_torch():
    x = torch.rand(4, 8)
    t = torch.quantize_per_tensor(x, 0.1, 0, torch.quint4x2)
    e = ember.quantize_per_tensor(to_ember(x), 0.1, 0, ember.quint4x2)
    np.testing.assert_array_equal(e.int_repr().numpy(), t.int_repr().numpy())
    assert e.shape == (4, 8) and e.int_repr().shape == (16,)


def test_repr_like_torch():
    x = torch.tensor([[0.1, -0.25, 1.0], [2.0, 0.0, -1.0]])
    t = torch.quantize_per_tensor(x, 0.1, 3, torch.quint8)
    e = ember.quantize_per_tensor(to_ember(x), 0.1, 3, ember.quint8)
    assert repr(e) == repr(t)
    tc = torch.quantize_per_channel(x, torch.tensor([0.1, 0.2], dtype=torch.float64),
                                    torch.tensor([0, 1]), 0, torch.qint8)
    ec = ember.quantize_per_channel(to_ember(x), ember.tensor([0.1, 0.2], dtype=ember.float64),
                                    ember.tensor([0, 1]), 0, ember.qint8)
    assert repr(ec) == repr(tc)


def test_views_and_copies_keep_quantization():
    x = torch.randn(4, 6)
    t = torch.quantize_per_tensor(x, 0.05, 10, torch.quint8)
    e = to_ember(t)
    for f in (lambda a: a.view(6, 4), lambda a: a.t(), lambda a: a[1], lambda a: a[:, 2:5],
              lambda a: a.reshape(-1), lambda a: a.clone(), lambda a: a.permute(1, 0),
              lambda a: a.unsqueeze(0), lambda a: a.flatten(), lambda a: a.detach(),
              lambda a: a.transpose(0, 1).contiguous(), lambda a: a.flip(0),
              lambda a: a.repeat(2, 1), lambda a: a.narrow(1, 1, 3)):
        assert_same_q(f(e), f(t))
    assert_same_q(ember.cat([e, e], 1), torch.cat([t, t], 1))
    assert_same_q(ember.relu(e), torch.relu(t))
    v = e.view(24)
    assert v._base is e


def test_refusals_like_torch():
    t = torch.quantize_per_tensor(torch.randn(3), 0.1, 3, torch.quint8)
    e = to_ember(t)
    for f in (lambda m, a: m.exp(a), lambda m, a: a + a, lambda m, a: a.abs()):
        with pytest.raises(NotImplementedError) as te:
            f(torch, t)
        with pytest.raises(NotImplementedError) as ee:
            f(ember, e)
        assert "with arguments from the 'QuantizedCPU' backend" in str(ee.value)
    with pytest.raises(RuntimeError, match="Quantize only works on Float Tensor, got Double"):
        ember.quantize_per_tensor(ember.zeros(2, dtype=ember.float64), 0.1, 0, ember.quint8)
    with pytest.raises(RuntimeError, match="only Tensors of floating point dtype"):
        e.requires_grad_()
    with pytest.raises(TypeError, match="Got unsupported ScalarType QUInt8"):
        e.numpy()
    pc = ember.quantize_per_channel(ember.randn(2, 3), ember.tensor([0.1, 0.2]),
                                    ember.tensor([0, 1]), 0, ember.qint8)
    with pytest.raises(RuntimeError, match="Setting strides is possible only on uniformly"):
        pc.t()
    with pytest.raises(RuntimeError, match="Only per-tensor quantization is supported in 'cat'"):
        ember.cat([pc, pc])


def test_quantized_add_bit_exact():
    rng = np.random.default_rng(3)
    for qtype in ("quint8", "qint8"):
        lo, hi = (0, 255) if qtype == "quint8" else (-128, 127)
        for n in (7, 1000, 4099):
            sa, sb, so = rng.uniform(0.01, 0.5, 3)
            za, zb, zo = (int(v) for v in rng.integers(lo, hi, 3))
            a = torch.quantize_per_tensor(torch.randn(n) * 5, sa, za, getattr(torch, qtype))
            b = torch.quantize_per_tensor(torch.randn(n) * 5, sb, zb, getattr(torch, qtype))
            for name in ("add", "add_relu"):
                t = getattr(torch.ops.quantized, name)(a, b, float(so), zo)
                e = getattr(ember.ops.quantized, name)(to_ember(a), to_ember(b), float(so), zo)
                assert_same_q(e, t)


def test_engine_setting():
    assert ember.backends.quantized.engine == "x86"
    ember.backends.quantized.engine = "fbgemm"
    assert ember.backends.quantized.engine == "fbgemm"
    with pytest.raises(RuntimeError, match="foo is not a valid value for quantized engine"):
        ember.backends.quantized.engine = "foo"
    assert sorted(ember.backends.quantized.supported_engines) == \
        sorted(torch.backends.quantized.supported_engines)


def test_factories_and_assert_close_like_torch():
    t = torch._empty_affine_quantized([2, 3], scale=0.5, zero_point=1, dtype=torch.quint8)
    e = ember._empty_affine_quantized([2, 3], scale=0.5, zero_point=1, dtype=ember.quint8)
    assert (e.q_scale(), e.q_zero_point(), e.shape, str(e.dtype)) == \
        (t.q_scale(), t.q_zero_point(), tuple(t.shape), str(t.dtype))
    pc = ember._empty_per_channel_affine_quantized([2, 3], scales=ember.tensor([1., 2.]),
                                                   zero_points=ember.tensor([0, 1]), axis=0,
                                                   dtype=ember.qint8)
    assert pc.qscheme() is ember.per_channel_affine and pc.q_per_channel_axis() == 0
    q = ember.quantize_per_tensor(ember.tensor([0.1, 0.5]), 0.1, 2, ember.qint8)
    assert ember.empty_like(q).q_scale() == 0.1
    for m, data in ((torch, torch.tensor([0.1, 0.5, -0.2])), (ember, ember.tensor([0.1, 0.5, -0.2]))):
        with pytest.raises(NotImplementedError, match="aten::zero_"):
            m.zeros(2, dtype=m.quint8)
        with pytest.raises(RuntimeError, match="store_scalar: invalid type"):
            m.tensor([1, 2], dtype=m.quint8)
        with pytest.raises(RuntimeError, match="empty_strided not supported on quantized"):
            data.to(m.quint8)
    a = ember.quantize_per_tensor(ember.tensor([0.1, 0.5, -0.2]), 0.1, 2, ember.qint8)
    ember.testing.assert_close(a, a.clone())
    b = ember.quantize_per_tensor(ember.tensor([0.3, 0.5, -0.2]), 0.1, 2, ember.qint8)
    with pytest.raises(AssertionError, match="Quantized tensor-likes are not close"):
        ember.testing.assert_close(a, b)


def test_float_outputs_stay_connected_like_torch():
    """torch connects a quantized op's float output to inputs that require grad through a
    node that warns on backward and passes no gradient (WarnNotImplemented)."""
    results = []
    for m in (torch, ember):
        lin = m.nn.Linear(4, 3)
        q = m.ao.quantization.quantize_dynamic(m.nn.Sequential(lin), {m.nn.Linear},
                                               dtype=m.qint8)
        x = m.randn(2, 4, requires_grad=True)
        y = q(x)
        with pytest.warns(UserWarning, match="quantized::linear_dynamic: an autograd kernel "
                                             "was not registered"):
            y.sum().backward()
        with m.no_grad():
            z = q(x)
        results.append((y.requires_grad, x.grad is None, z.requires_grad))
    assert results[0] == results[1] == (True, True, False)


def test_parameter_of_quantized_tensor_keeps_qparams():
    import copy
    import pickle
    q = ember.quantize_per_tensor(ember.tensor([0.1, -0.4]), 0.1, 2, ember.qint8)
    p = ember.nn.Parameter(q, requires_grad=False)
    for r in (p, copy.deepcopy(p), pickle.loads(pickle.dumps(p))):
        assert r.is_quantized and r.q_scale() == 0.1 and r.q_zero_point() == 2
        np.testing.assert_array_equal(r.int_repr().numpy(), q.int_repr().numpy())
    with pytest.raises(RuntimeError, match="floating point and complex dtype can require"):
        ember.nn.Parameter(q)


@pytest.mark.parametrize("case", range(6))
def test_creation_errors_like_torch(case):
    def call(m):
        x = m.zeros(2, 3)
        return [lambda: m.quantize_per_tensor(x, 0.1, 300, m.quint8),
                lambda: m.quantize_per_tensor(x, 0.1, -1, m.quint8),
                lambda: m.quantize_per_channel(x, m.tensor([0.1, 0.2]), m.tensor([0, 300]), 0,
                                               m.quint8),
                lambda: m.quantize_per_channel(x, m.tensor([0.1, 0.2]), m.tensor([0, 1]), 2,
                                               m.quint8),
                lambda: m.quantize_per_channel(x, m.tensor([0.1]), m.tensor([0]), 0, m.quint8),
                lambda: m.quantize_per_channel(x, m.tensor([0.1, 0.2]), m.tensor([0]), 0,
                                               m.quint8)][case]()
    with pytest.raises(RuntimeError) as t:
        call(torch)
    with pytest.raises(RuntimeError) as e:
        call(ember)
    assert str(e.value) == str(t.value)


def test_float_qparams_and_type_names_like_torch():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 6)).astype(np.float32)
    s = (rng.random(4) * 0.1 + 0.01).astype(np.float32)
    z = (rng.standard_normal(4) * 3).astype(np.float32)
    for qtype in ("quint8", "quint4x2"):
        t = torch.quantize_per_channel(torch.from_numpy(x), torch.from_numpy(s),
                                       torch.from_numpy(z), 0, getattr(torch, qtype))
        e = ember.quantize_per_channel(ember.from_numpy(x), ember.from_numpy(s),
                                       ember.from_numpy(z), 0, getattr(ember, qtype))
        np.testing.assert_array_equal(e.int_repr().numpy(), t.int_repr().numpy())
        np.testing.assert_array_equal(e.dequantize().numpy(), t.dequantize().numpy())
        assert str(e.q_per_channel_scales().dtype) == str(t.q_per_channel_scales().dtype)
        assert str(e.q_per_channel_zero_points().dtype) == \
            str(t.q_per_channel_zero_points().dtype)
        assert repr(e) == repr(t)
    for qtype in ("quint8", "qint8", "qint32"):
        assert ember.quantize_per_tensor(ember.zeros(2), 0.1, 0, getattr(ember, qtype)).type() \
            == torch.quantize_per_tensor(torch.zeros(2), 0.1, 0, getattr(torch, qtype)).type()
    lin = ember.ao.quantization.quantize_dynamic(ember.nn.Sequential(ember.nn.Linear(4, 3)),
                                                 {ember.nn.Linear}, dtype=ember.qint8)
    y = lin(ember.randn(2, 4, requires_grad=True))
    assert repr(y).endswith("grad_fn=<WarnNotImplemented>)")


@pytest.mark.parametrize("index", range(9))
def test_per_channel_views_like_torch(index):
    """Selecting a channel gives its per-tensor parameters, slicing the channel axis keeps
    the sliced channels', other views shift the axis (torch's 1-d results say axis -1)."""
    x = torch.randn(3, 4)
    t = torch.quantize_per_channel(x, torch.tensor([0.1, 0.2, 0.3]), torch.tensor([0, 1, 2]),
                                   0, torch.qint8)
    e = to_ember(t)
    f = [lambda a: a[1], lambda a: a[1:], lambda a: a[None], lambda a: a.unsqueeze(1),
         lambda a: a[:, ::2], lambda a: a.select(0, 2), lambda a: a.narrow(0, 1, 2),
         lambda a: a[-1, 1:3], lambda a: a[..., 1:]][index]
    te, tt = f(e), f(t)
    if tt.qscheme() == torch.per_channel_affine and tt.dim() == 1:
        tt = torch._make_per_channel_quantized_tensor(
            tt.int_repr(), tt.q_per_channel_scales(), tt.q_per_channel_zero_points(), 0)
    assert_same_q(te, tt)
    np.testing.assert_array_equal(te.dequantize().numpy(), tt.dequantize().numpy())


@pytest.mark.parametrize("case", range(18))
def test_elementwise_refusals_like_torch(case):
    """Type promotion fails first with a float operand, output allocation with a number,
    else the missing kernel (named as torch names it)."""
    def call(m):
        q = m.quantize_per_tensor(m.zeros(2, 3), 0.1, 3, m.quint8)
        x = m.zeros(2, 3)
        return [lambda: q * 2.0, lambda: q + 1, lambda: q * 2, lambda: q + q, lambda: q * q,
                lambda: q - q, lambda: q / 2.0, lambda: q + x, lambda: x + q,
                lambda: m.nn.functional.linear(q, x), lambda: m.matmul(q, x.t()),
                lambda: q.exp(), lambda: q.neg(), lambda: m.sign(q), lambda: q / q,
                lambda: q.abs(), lambda: q > q, lambda: q == 0.5][case]()
    try:
        t = call(torch)
    except Exception as err:            # noqa: BLE001 (the oracle's outcome)
        with pytest.raises(type(err)) as e:
            call(ember)
        assert str(e.value)[:100] == str(err)[:100]
    else:
        assert str(call(ember).dtype) == str(t.dtype)


@pytest.mark.parametrize("case", range(8))
def test_float_modules_fed_quantized_input_fail_as_torch(case):
    """The common mistake (no DeQuantStub before a float layer) gives torch's error."""
    def call(m):
        q = m.quantize_per_tensor(m.zeros(2, 3), 0.1, 3, m.quint8)
        q3 = m.quantize_per_tensor(m.zeros(2, 3, 4), 0.1, 3, m.quint8)
        F = m.nn.functional
        return [lambda: m.nn.Linear(3, 4)(q), lambda: m.nn.Conv2d(1, 1, 1)(q.reshape(1, 1, 2, 3)),
                lambda: m.nn.BatchNorm1d(3)(q), lambda: F.layer_norm(q3, (4,)),
                lambda: F.group_norm(q3, 1), lambda: F.batch_norm(q3, m.zeros(3), m.ones(3)),
                lambda: F.linear(q, m.zeros(4, 3), m.zeros(4)),
                lambda: F.linear(q, m.zeros(4, 3))][case]()
    with pytest.raises(Exception) as t:
        call(torch)
    with pytest.raises(t.type) as e:
        call(ember)
    assert str(e.value)[:100] == str(t.value)[:100]
