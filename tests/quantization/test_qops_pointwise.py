"""quantized:: arithmetic and activation records against torch's x86 engine: the same
integers bit for bit, on random inputs whose output scale makes half-way ties happen."""
import numpy as np
import pytest
import torch

import ember
from tests.quantization.conftest import assert_same_q
from tests.quantization.qops_util import SIZES, random_q, tie_qparams

QT = ["quint8", "qint8"]
TQ, EQ = torch.ops.quantized, ember.ops.quantized


def _cases(seed, qtype, n, count=6):
    rng = np.random.default_rng(seed)
    for _ in range(count):
        t, e = random_q(rng, (n,), qtype)
        yield rng, t, e


@pytest.mark.parametrize("qtype", QT)
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("name", ["add", "add_relu", "mul", "mul_relu"])
def test_binary(name, qtype, n):
    for rng, ta, ea in _cases(n, qtype, n):
        tb, eb = random_q(rng, (n,), qtype, scale=ta.q_scale() * float(rng.choice([1, 0.5, 3])))
        s, z = tie_qparams(rng, ta.q_scale(), qtype)
        assert_same_q(getattr(EQ, name)(ea, eb, s, z), getattr(TQ, name)(ta, tb, s, z))


@pytest.mark.parametrize("name", ["add", "add_relu", "mul", "mul_relu"])
def test_binary_out(name):
    rng = np.random.default_rng(0)
    ta, ea = random_q(rng, (100,))
    tb, eb = random_q(rng, (100,))
    tout, eout = random_q(rng, (100,), scale=0.07, zero_point=100)
    r = getattr(EQ, name).out(ea, eb, eout)          # (ember: the out tensor positionally)
    assert r is eout
    assert_same_q(eout, getattr(TQ, name).out(ta, tb, out=tout))


@pytest.mark.parametrize("qtype", QT)
@pytest.mark.parametrize("name", ["add_scalar", "add_scalar_relu", "mul_scalar",
                                  "mul_scalar_relu"])
def test_scalar_in_range(name, qtype):
    """The zero point moves (add) or the scale scales (mul): integers exact."""
    rng = np.random.default_rng(1)
    for b in (0.37, -0.37, 1.0, 2, 0.0, -2.5, 3.75, -0.01):
        t, e = random_q(rng, (300,), qtype, scale=0.2, zero_point=0 if qtype == "qint8"
                        else 128)
        assert_same_q(getattr(EQ, name)(e, b), getattr(TQ, name)(t, b))
        assert_same_q(getattr(EQ, name).Tensor(e, ember.tensor(b)),
                      getattr(TQ, name).Tensor(t, torch.tensor(b)))


@pytest.mark.parametrize("qtype", QT)
def test_scalar_overloads(qtype):
    rng = np.random.default_rng(2)
    t, e = random_q(rng, (64,), qtype)
    assert_same_q(EQ.add.Scalar(e, 0.3), TQ.add.Scalar(t, 0.3))
    assert_same_q(EQ.mul.Scalar2(-1.5, e), TQ.mul.Scalar2(-1.5, t))
    assert_same_q(EQ.mul_relu(e, 2.0), TQ.mul_relu(t, 2.0))
    assert_same_q(EQ.add_relu(e, -0.2), TQ.add_relu(t, -0.2))


@pytest.mark.parametrize("qtype", QT)
@pytest.mark.parametrize("n", SIZES)
def test_add_scalar_out_of_range(qtype, n):
    """A number that pushes the zero point out of range: a new scale and zero point, the
    shifted integers requantized with a float32 multiplier."""
    rng = np.random.default_rng(3 + n)
    for b in (5.0, -40.0, 100.0, -7.3, 23.1, -60.0):
        t, e = random_q(rng, (n,), qtype)
        for name in ("add_scalar", "add_scalar_relu"):
            assert_same_q(getattr(EQ, name)(e, b), getattr(TQ, name)(t, b))


@pytest.mark.parametrize("qtype", QT)
@pytest.mark.parametrize("relu", [False, True])
def test_cat(qtype, relu):
    rng = np.random.default_rng(4)
    for _ in range(6):
        ta, ea = random_q(rng, (3, 70), qtype)
        tb, eb = random_q(rng, (5, 70), qtype, scale=ta.q_scale() * 3)
        s, z = tie_qparams(rng, ta.q_scale(), qtype)
        f = "cat_relu" if relu else "cat"
        assert_same_q(getattr(EQ, f)([ea, eb], 0, s, z), getattr(TQ, f)([ta, tb], 0, s, z))
        assert_same_q(getattr(EQ, f)([ea, ea], 1, None, None),
                      getattr(TQ, f)([ta, ta], 1, None, None))


ACTIVATIONS = {
    "sigmoid": lambda Q, x, s, z: Q.sigmoid(x, s, z),
    "leaky_relu": lambda Q, x, s, z: Q.leaky_relu(x, 0.1, False, s, z),
    "elu": lambda Q, x, s, z: Q.elu(x, s, z, 1.3),
    "elu_scaled": lambda Q, x, s, z: Q.elu(x, s, z, 0.7, 1.2, 0.9),
    "celu": lambda Q, x, s, z: Q.celu(x, s, z, 1.3),
}


@pytest.mark.parametrize("qtype", QT)
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activation(name, qtype, n):
    f = ACTIVATIONS[name]
    for rng, t, e in _cases(10 + n, qtype, n):
        s, z = tie_qparams(rng, t.q_scale(), qtype)
        assert_same_q(f(EQ, e, s, z), f(TQ, t, s, z))


@pytest.mark.parametrize("qtype", QT)
@pytest.mark.parametrize("n", SIZES)
def test_same_scale_activations(qtype, n):
    for rng, t, e in _cases(20 + n, qtype, n):
        assert_same_q(EQ.relu6(e), TQ.relu6(t))
        assert_same_q(EQ.threshold(e, 0.13, 0.37), TQ.threshold(t, 0.13, 0.37))
        assert_same_q(EQ.clamp(e, -0.5, 0.7), TQ.clamp(t, -0.5, 0.7))
        assert_same_q(EQ.clamp(e, None, 0.7), TQ.clamp(t, None, 0.7))
        assert_same_q(EQ.leaky_relu(e, 0.1, False, t.q_scale(), t.q_zero_point()),
                      TQ.leaky_relu(t, 0.1, False, t.q_scale(), t.q_zero_point()))


@pytest.mark.parametrize("qtype", QT)
@pytest.mark.parametrize("n", SIZES)
def test_hardswish(qtype, n):
    """Its vector body multiplies by float32(1.0 / scale) taken in float64: ties at x >= 3
    (where hardswish is x) show it."""
    for rng, t, e in _cases(30 + n, qtype, n):
        s, z = tie_qparams(rng, t.q_scale(), qtype)
        assert_same_q(EQ.hardswish(e, s, z), TQ.hardswish(t, s, z))


def test_relu6_inplace():
    rng = np.random.default_rng(5)
    t, e = random_q(rng, (50,))
    r = EQ.relu6(e, True)
    assert r is e
    assert_same_q(e, TQ.relu6(t, True))


def test_leaky_relu_inplace_ignored():
    rng = np.random.default_rng(7)
    t, e = random_q(rng, (70,))
    before = e.int_repr().numpy().copy()
    with pytest.warns(UserWarning, match="inplace=True is not supported"):
        r = EQ.leaky_relu(e, 0.1, True, 0.2, 3)
    assert r is not e
    np.testing.assert_array_equal(e.int_repr().numpy(), before)
    assert_same_q(r, TQ.leaky_relu(t, 0.1, True, 0.2, 3))


def test_dropout_is_identity_in_eval():
    rng = np.random.default_rng(6)
    t, e = random_q(rng, (50,))
    assert_same_q(EQ.dropout(e, 0.3, 4), TQ.dropout(t, 0.3, 4))


def test_errors():
    x = ember.randn(4)
    with pytest.raises(NotImplementedError, match="quantized::sigmoid"):
        EQ.sigmoid(x, 0.1, 0)
    pc = ember.quantize_per_channel(ember.randn(2, 3), ember.tensor([0.1, 0.2]),
                                    ember.tensor([0, 0]), 0, ember.quint8)
    with pytest.raises(RuntimeError, match="kPerTensorAffine"):
        EQ.relu6(pc)
    q = ember.quantize_per_tensor(ember.randn(4), 0.1, 0, ember.quint8)
    with pytest.raises(RuntimeError, match="same dtype"):
        EQ.mul(q, ember.quantize_per_tensor(ember.randn(4), 0.1, 0, ember.qint8), 0.1, 0)


@pytest.mark.parametrize("qtype", QT)
def test_channels_last_elementwise(qtype):
    """Elementwise kernels run in memory order: on a channels-last tensor the scalar tail is
    the last elements in memory."""
    rng = np.random.default_rng(50)
    for _ in range(6):
        ta, ea = random_q(rng, (2, 8, 5, 5), qtype)
        tb, eb = random_q(rng, (2, 8, 5, 5), qtype, scale=ta.q_scale() * 0.5)
        ta = ta.contiguous(memory_format=torch.channels_last)
        tb = tb.contiguous(memory_format=torch.channels_last)
        ea = ea.contiguous(memory_format=ember.channels_last)
        eb = eb.contiguous(memory_format=ember.channels_last)
        s, z = tie_qparams(rng, ta.q_scale(), qtype)
        r = EQ.add(ea, eb, s, z)
        assert_same_q(r, TQ.add(ta, tb, s, z))
        assert r.is_contiguous(memory_format=ember.channels_last)
        assert_same_q(EQ.leaky_relu(ea, 0.1, False, s, z), TQ.leaky_relu(ta, 0.1, False, s, z))


@pytest.mark.parametrize("qtype", QT)
def test_matmul(qtype):
    rng = np.random.default_rng(60)
    for shapes in (((5, 17), (17, 9)), ((2, 3, 8), (8, 4)), ((2, 3, 8), (2, 8, 4))):
        ta, ea = random_q(rng, shapes[0], qtype)
        tb, eb = random_q(rng, shapes[1], qtype)
        s = float(ta.q_scale() * tb.q_scale() * rng.uniform(5, 30))
        assert_same_q(EQ.matmul(ea, eb, s, 3), TQ.matmul(ta, tb, s, 3))
    with pytest.raises(RuntimeError, match="MatMul operands should have same data type"):
        EQ.matmul(ea, ember.randn(8, 4), 0.1, 0)


@pytest.mark.parametrize("qtype", QT)
def test_strided_input_walks_logical_order(qtype):
    """A transposed (neither contiguous nor channels-last) input gives a contiguous output,
    walked in logical order."""
    rng = np.random.default_rng(51)
    for _ in range(6):
        t, e = random_q(rng, (37, 29), qtype)
        s, z = tie_qparams(rng, t.q_scale(), qtype)
        r = EQ.leaky_relu(e.t(), 0.1, False, s, z)
        assert_same_q(r, TQ.leaky_relu(t.t(), 0.1, False, s, z))
        assert r.is_contiguous()
