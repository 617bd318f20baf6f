"""quantized:: normalization, softmax and max-pool records, and torch.quantized_max_pool*d,
against torch's x86 engine."""
import numpy as np
import pytest
import torch

import ember
from tests.quantization.conftest import assert_same_q, to_ember
from tests.quantization.qops_util import random_q

QT = ["quint8", "qint8"]
TQ, EQ = torch.ops.quantized, ember.ops.quantized


def _out_qparams(rng, qtype):
    lo, hi = (0, 255) if qtype == "quint8" else (-128, 127)
    return float(rng.uniform(0.01, 0.1)), int(rng.integers(lo, hi))


def _affine(rng, n):
    w, b = torch.randn(n, generator=torch.Generator().manual_seed(int(rng.integers(1e6)))), \
        torch.randn(n, generator=torch.Generator().manual_seed(int(rng.integers(1e6))))
    return (w, b), (to_ember(w), to_ember(b))


@pytest.mark.parametrize("qtype", QT)
@pytest.mark.parametrize("shape,normalized", [((3, 70), [70]), ((2, 4, 33), [4, 33]),
                                              ((5, 7), [7])])
def test_layer_norm(qtype, shape, normalized):
    rng = np.random.default_rng(0)
    for affine in (True, False):
        t, e = random_q(rng, shape, qtype)
        (w, b), (ew, eb) = _affine(rng, normalized) if affine else ((None, None), (None, None))
        s, z = _out_qparams(rng, qtype)
        assert_same_q(EQ.layer_norm(e, normalized, ew, eb, 1e-5, s, z),
                      TQ.layer_norm(t, normalized, w, b, 1e-5, s, z))


@pytest.mark.parametrize("qtype", QT)
def test_group_and_instance_norm(qtype):
    rng = np.random.default_rng(1)
    for shape in ((2, 6, 5, 7), (1, 6, 40)):
        t, e = random_q(rng, shape, qtype)
        (w, b), (ew, eb) = _affine(rng, 6)
        s, z = _out_qparams(rng, qtype)
        assert_same_q(EQ.group_norm(e, 3, ew, eb, 1e-5, s, z),
                      TQ.group_norm(t, 3, w, b, 1e-5, s, z))
        assert_same_q(EQ.instance_norm(e, ew, eb, 1e-5, s, z),
                      TQ.instance_norm(t, w, b, 1e-5, s, z))


@pytest.mark.parametrize("qtype", QT)
@pytest.mark.parametrize("name,shape", [("batch_norm1d", (4, 5)), ("batch_norm1d", (2, 5, 9)),
                                        ("batch_norm2d", (2, 5, 4, 6)),
                                        ("batch_norm3d", (2, 5, 3, 4, 2)),
                                        ("batch_norm", (2, 5, 4, 6))])
@pytest.mark.parametrize("relu", [False, True])
def test_batch_norm(qtype, name, shape, relu):
    rng = np.random.default_rng(2)
    t, e = random_q(rng, shape, qtype)
    (w, b), (ew, eb) = _affine(rng, 5)
    mean, var = torch.randn(5), torch.rand(5) + 0.5
    s, z = _out_qparams(rng, qtype)
    f = name + ("_relu" if relu else "")
    assert_same_q(getattr(EQ, f)(e, ew, eb, to_ember(mean), to_ember(var), 1e-5, s, z),
                  getattr(TQ, f)(t, w, b, mean, var, 1e-5, s, z))


@pytest.mark.parametrize("qtype", QT)
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_softmax(qtype, dim):
    rng = np.random.default_rng(3)
    t, e = random_q(rng, (3, 5, 70), qtype)
    lo = 0 if qtype == "quint8" else -128
    for s, z in ((1 / 256, lo), (0.004, lo + 10)):
        assert_same_q(EQ.softmax(e, dim, s, z), TQ.softmax(t, dim, s, z))


@pytest.mark.parametrize("qtype", QT)
def test_max_pool_records(qtype):
    rng = np.random.default_rng(4)
    t, e = random_q(rng, (2, 3, 9, 10), qtype)
    for args in (([2, 2], [], [0, 0], [1, 1], False), ([3, 3], [2, 2], [1, 1], [1, 1], True),
                 ([3, 2], [1, 2], [1, 0], [2, 1], False)):
        assert_same_q(EQ.max_pool2d(e, *args), TQ.max_pool2d(t, *args))
    t1, e1 = random_q(rng, (2, 3, 11), qtype)
    assert_same_q(EQ.max_pool1d(e1, [3], [2], [1], [1], False),
                  TQ.max_pool1d(t1, [3], [2], [1], [1], False))
    assert_same_q(ember.quantized_max_pool2d(e, [3, 3], [2, 2], [1, 1]),
                  torch.quantized_max_pool2d(t, [3, 3], [2, 2], [1, 1]))
    assert_same_q(ember.quantized_max_pool1d(e1, [2]), torch.quantized_max_pool1d(t1, [2]))
    t3, e3 = random_q(rng, (1, 2, 5, 6, 7), qtype)
    assert_same_q(ember.quantized_max_pool3d(e3, [2, 2, 2]),
                  torch.quantized_max_pool3d(t3, [2, 2, 2]))


def test_torch_quantized_batch_norm():
    rng = np.random.default_rng(5)
    t, e = random_q(rng, (2, 5, 4, 6))
    (w, b), (ew, eb) = _affine(rng, 5)
    mean, var = torch.randn(5), torch.rand(5) + 0.5
    assert_same_q(ember.quantized_batch_norm(e, ew, eb, to_ember(mean), to_ember(var), 1e-5,
                                             0.05, 120),
                  torch.quantized_batch_norm(t, w, b, mean, var, 1e-5, 0.05, 120))
