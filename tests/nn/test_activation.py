"""Activations (ember.nn.functional / ember.nn) against torch 2.13."""
import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F
from helpers import torch
from nla_compare import compare, gradcheck, pair

TF = torch.nn.functional
rng = np.random.default_rng(0)
X = rng.uniform(-4, 4, (3, 4, 6))

CASES = [
    ("relu", {}), ("relu6", {}), ("elu", {}), ("elu", {"alpha": 0.5}), ("selu", {}),
    ("celu", {"alpha": 1.5}), ("leaky_relu", {"negative_slope": 0.2}),
    ("hardtanh", {"min_val": -2.0, "max_val": 1.5}), ("gelu", {}),
    ("gelu", {"approximate": "tanh"}), ("silu", {}), ("mish", {}), ("sigmoid", {}),
    ("tanh", {}), ("hardsigmoid", {}), ("hardswish", {}), ("hardshrink", {"lambd": 0.7}),
    ("softshrink", {"lambd": 0.7}), ("tanhshrink", {}), ("softplus", {}),
    ("softplus", {"beta": 2.0, "threshold": 3.0}), ("softsign", {}), ("logsigmoid", {}),
    ("threshold", {"threshold": 0.5, "value": -1.0}), ("glu", {}), ("glu", {"dim": 1}),
    ("softmax", {"dim": 1}), ("log_softmax", {"dim": -1}), ("softmin", {"dim": 0}),
    ("rrelu", {}),
]


@pytest.mark.parametrize("name,kw", CASES, ids=[f"{n}-{k}" for n, k in CASES])
def test_functional_matches_torch(name, kw):
    x = X
    compare(getattr(F, name), getattr(TF, name), [x], kw)


@pytest.mark.parametrize("name,kw", CASES, ids=[f"{n}-{k}" for n, k in CASES])
def test_gradcheck(name, kw):
    x = rng.uniform(-3, 3, (2, 4))
    x[np.abs(x) < 0.05] = 0.3            # away from kinks
    x[np.abs(np.abs(x) - 0.7) < 0.05] = 1.1
    x[np.abs(x - 0.5) < 0.05] = 0.8
    gradcheck(lambda t: getattr(F, name)(t, **kw), [x],
              gradgrad=name not in ("hardtanh",))


@pytest.mark.parametrize("name", ["relu", "elu", "selu", "celu", "leaky_relu", "hardtanh",
                                  "relu6", "threshold", "rrelu", "silu", "mish", "hardswish",
                                  "hardsigmoid"])
def test_inplace(name):
    kw = {"threshold": 0.1, "value": 2.0} if name == "threshold" else {}
    e, t = pair(X, False)
    r = getattr(F, name)(e, inplace=True, **kw)
    rt = getattr(TF, name)(t, inplace=True, **kw)
    assert r is e
    np.testing.assert_allclose(e.numpy(), t.numpy(), atol=1e-12)


@pytest.mark.parametrize("name", ["relu_", "elu_", "leaky_relu_", "hardtanh_", "rrelu_",
                                  "celu_", "selu_"])
def test_functional_underscore(name):
    e, t = pair(X, False)
    getattr(F, name)(e)
    getattr(TF, name)(t)
    np.testing.assert_allclose(e.numpy(), t.numpy(), atol=1e-12)


def test_threshold_underscore():
    e, t = pair(X, False)
    F.threshold_(e, 0.5, 3.0)
    TF.threshold_(t, 0.5, 3.0)
    np.testing.assert_allclose(e.numpy(), t.numpy())


def test_prelu():
    x = rng.uniform(-2, 2, (2, 3, 4))
    for w in (np.array([0.25]), rng.uniform(0, 1, 3)):
        compare(F.prelu, TF.prelu, [x, w])
        gradcheck(F.prelu, [x, w])
    with pytest.raises(RuntimeError, match="Mismatch of parameter numbers"):
        F.prelu(ember.tensor(x), ember.ones(4, dtype=ember.float64))


def test_rrelu_training_range():
    ember.manual_seed(0)
    x = -ember.ones(1000, dtype=ember.float64)
    y = F.rrelu(x, 0.1, 0.3, training=True)
    assert float(y.max()) <= -0.1 and float(y.min()) >= -0.3


def test_glu_odd_error():
    with pytest.raises(RuntimeError, match="Halving dimension must be even"):
        F.glu(ember.randn(3, 5))


def test_softmax_implicit_dim_warns():
    with pytest.warns(UserWarning, match="Implicit dimension choice for softmax"):
        F.softmax(ember.randn(2, 3))


def test_torch_toplevel():
    e, t = pair(X, False)
    for name in ("selu", "celu", "hardshrink"):
        np.testing.assert_allclose(getattr(ember, name)(e).numpy(),
                                   getattr(torch, name)(t).numpy(), atol=1e-12)
    np.testing.assert_allclose(ember.threshold(e, 0.1, 2.0).numpy(),
                               torch.threshold(t, 0.1, 2.0).numpy())
    np.testing.assert_allclose(e.hardshrink(0.3).numpy(), t.hardshrink(0.3).numpy())
    w = np.array([0.3])
    np.testing.assert_allclose(ember.prelu(e, ember.tensor(w)).numpy(),
                               torch.prelu(t, torch.tensor(w)).numpy())


MODULES = [
    ("ReLU", ()), ("ReLU6", ()), ("LeakyReLU", (0.2,)), ("ELU", (0.7,)), ("SELU", ()),
    ("CELU", (1.3,)), ("GELU", ("tanh",)), ("SiLU", ()), ("Mish", ()), ("Sigmoid", ()),
    ("Tanh", ()), ("Hardtanh", (-0.5, 0.5)), ("Hardsigmoid", ()), ("Hardswish", ()),
    ("Hardshrink", (0.3,)), ("Softshrink", (0.3,)), ("Tanhshrink", ()), ("Softplus", (2, 5)),
    ("Softsign", ()), ("LogSigmoid", ()), ("Threshold", (0.1, 20)), ("GLU", ()),
    ("Softmax", (1,)), ("LogSoftmax", (1,)), ("Softmin", (1,)), ("Softmax2d", ()),
    ("RReLU", ()), ("Identity", ()) if False else ("ReLU", (True,)),
]


@pytest.mark.parametrize("name,args", MODULES, ids=[m[0] + str(m[1]) for m in MODULES])
def test_modules(name, args):
    em, tm = getattr(nn, name)(*args), getattr(torch.nn, name)(*args)
    assert repr(em) == repr(tm)
    em.eval()
    tm.eval()
    x = rng.uniform(-3, 3, (2, 4, 3, 2))
    e, t = pair(x, False)
    np.testing.assert_allclose(em(e).numpy(), tm(t).numpy(), atol=1e-12)


def test_prelu_module():
    em, tm = nn.PReLU(3, 0.1), torch.nn.PReLU(3, 0.1)
    assert repr(em) == repr(tm)
    x = rng.uniform(-3, 3, (2, 3, 4)).astype(np.float32)
    e, t = pair(x, True)
    oe, ot = em(e), tm(t)
    np.testing.assert_allclose(oe.detach().numpy(), ot.detach().numpy(), atol=1e-6)
    oe.sum().backward()
    ot.sum().backward()
    np.testing.assert_allclose(em.weight.grad.numpy(), tm.weight.grad.numpy(), atol=1e-5)
    np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), atol=1e-6)
