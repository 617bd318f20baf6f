"""nn.init vs torch 2.13: fan computations exactly, gains, distributions' statistics."""
import math

import numpy as np
import pytest
import torch

import ember
from ember.nn import init


SHAPES = [(3, 4), (8, 3, 5), (6, 2, 3, 3), (4, 2, 2, 3, 3)]


@pytest.mark.parametrize("shape", SHAPES)
def test_fan_in_fan_out(shape):
    assert init._calculate_fan_in_and_fan_out(ember.empty(*shape)) == \
        torch.nn.init._calculate_fan_in_and_fan_out(torch.empty(*shape))
    for mode in ("fan_in", "fan_out"):
        assert init._calculate_correct_fan(ember.empty(*shape), mode) == \
            torch.nn.init._calculate_correct_fan(torch.empty(*shape), mode)


def test_fan_errors():
    with pytest.raises(ValueError, match="Fan in and fan out can not be computed"):
        init._calculate_fan_in_and_fan_out(ember.empty(3))
    with pytest.raises(ValueError, match="Mode fan_avg not supported"):
        init.kaiming_uniform_(ember.empty(3, 3), mode="fan_avg")


@pytest.mark.parametrize("nl,param", [("linear", None), ("conv2d", None), ("sigmoid", None),
                                      ("tanh", None), ("relu", None), ("leaky_relu", None),
                                      ("leaky_relu", 0.2), ("selu", None),
                                      ("conv_transpose3d", None)])
def test_calculate_gain(nl, param):
    assert init.calculate_gain(nl, param) == torch.nn.init.calculate_gain(nl, param)


def test_calculate_gain_errors():
    for args in [("foo",), ("leaky_relu", "x")]:
        with pytest.raises(ValueError) as ee:
            init.calculate_gain(*args)
        with pytest.raises(ValueError) as et:
            torch.nn.init.calculate_gain(*args)
        assert str(ee.value) == str(et.value)


def _stats(t):
    a = t.detach().numpy().astype(np.float64)
    return a.mean(), a.std(), a.min(), a.max()


def test_uniform_normal_constant():
    ember.manual_seed(0)
    t = ember.empty(400, 500)
    init.uniform_(t, -2, 3)
    m, s, lo, hi = _stats(t)
    assert lo >= -2 and hi <= 3 and abs(m - 0.5) < 0.02 and abs(s - 5 / math.sqrt(12)) < 0.02
    init.normal_(t, 1.0, 0.5)
    m, s, _, _ = _stats(t)
    assert abs(m - 1) < 0.01 and abs(s - 0.5) < 0.01
    init.constant_(t, 0.3)
    assert (t.numpy() == np.float32(0.3)).all()
    init.ones_(t)
    assert (t.numpy() == 1).all()
    init.zeros_(t)
    assert (t.numpy() == 0).all()


@pytest.mark.parametrize("fn,kw,expect_std", [
    ("xavier_uniform_", {"gain": 2.0}, lambda fi, fo: 2.0 * math.sqrt(2.0 / (fi + fo))),
    ("xavier_normal_", {}, lambda fi, fo: math.sqrt(2.0 / (fi + fo))),
    ("kaiming_uniform_", {"a": math.sqrt(5)}, lambda fi, fo: math.sqrt(2 / 6) / math.sqrt(fi)),
    ("kaiming_normal_", {"mode": "fan_out", "nonlinearity": "relu"},
     lambda fi, fo: math.sqrt(2) / math.sqrt(fo)),
    ("kaiming_normal_", {"nonlinearity": "tanh"}, lambda fi, fo: 5 / 3 / math.sqrt(fi)),
])
def test_scaled_inits_std(fn, kw, expect_std):
    ember.manual_seed(0)
    t = ember.empty(300, 40, 3, 3)
    fi, fo = init._calculate_fan_in_and_fan_out(t)
    out = getattr(init, fn)(t, **kw)
    assert out is t
    m, s, lo, hi = _stats(t)
    std = expect_std(fi, fo)
    assert abs(m) < 0.01 * std * 10 and abs(s - std) < 0.01 * std
    if "uniform" in fn:
        assert max(-lo, hi) <= math.sqrt(3) * std * (1 + 1e-6)


def test_init_runs_under_no_grad_and_keeps_leaf():
    p = ember.nn.Parameter(ember.empty(5, 5))
    init.kaiming_uniform_(p)
    assert p.is_leaf and p.grad_fn is None and p.requires_grad


def test_trunc_normal():
    ember.manual_seed(0)
    t = ember.empty(300, 300)
    init.trunc_normal_(t, mean=0.0, std=1.0, a=-1.0, b=1.5)
    m, s, lo, hi = _stats(t)
    assert lo >= -1 and hi <= 1.5
    ref = torch.nn.init.trunc_normal_(torch.empty(1000, 1000), 0.0, 1.0, -1.0, 1.5).numpy()
    assert abs(m - ref.mean()) < 0.01 and abs(s - ref.std()) < 0.01
    init.trunc_normal_(t, std=0.02)            # narrow: p < 0.3 path? a=-2,b=2 -> wide
    assert abs(_stats(t)[1] - 0.02) < 0.001
    init.trunc_normal_(t, mean=0.0, std=1.0, a=2.0, b=3.0)     # rejection-sampling path
    m, s, lo, hi = _stats(t)
    ref = torch.nn.init.trunc_normal_(torch.empty(1000, 1000), 0.0, 1.0, 2.0, 3.0).numpy()
    assert lo >= 2 and hi <= 3 and abs(m - ref.mean()) < 0.01


def test_orthogonal():
    ember.manual_seed(0)
    for shape in [(20, 50), (50, 20), (10, 4, 3)]:
        t = ember.empty(*shape)
        init.orthogonal_(t, gain=2.0)
        w = t.numpy().reshape(shape[0], -1)
        if w.shape[0] <= w.shape[1]:
            np.testing.assert_allclose(w @ w.T, 4 * np.eye(w.shape[0]), atol=1e-4)
        else:
            np.testing.assert_allclose(w.T @ w, 4 * np.eye(w.shape[1]), atol=1e-4)
    with pytest.raises(ValueError, match="Only tensors with 2 or more dimensions"):
        init.orthogonal_(ember.empty(3))


def test_sparse():
    ember.manual_seed(0)
    t = ember.empty(10, 30)
    init.sparse_(t, 0.3, std=0.5)
    zeros_per_col = (t.numpy() == 0).sum(0)
    assert (zeros_per_col == math.ceil(0.3 * 10)).all()


def test_eye_dirac_match_torch():
    e, t = ember.empty(3, 5), torch.empty(3, 5)
    np.testing.assert_array_equal(init.eye_(e).numpy(), torch.nn.init.eye_(t).numpy())
    for shape, groups in [((4, 2, 3), 1), ((6, 3, 3, 3), 2), ((2, 2, 3, 3, 3), 1)]:
        e, t = ember.empty(*shape), torch.empty(*shape)
        np.testing.assert_array_equal(init.dirac_(e, groups).numpy(),
                                      torch.nn.init.dirac_(t, groups).numpy())
    with pytest.raises(ValueError, match="Only tensors with 2 dimensions are supported"):
        init.eye_(ember.empty(2, 2, 2))


def test_zero_element_warns():
    with pytest.warns(UserWarning, match="Initializing zero-element tensors is a no-op"):
        init.kaiming_normal_(ember.empty(0, 3))


def test_deprecated_aliases():
    with pytest.warns(FutureWarning, match="nn.init.normal` is now deprecated"):
        init.normal(ember.empty(2, 2))


def test_all_names_exist():
    for name in torch.nn.init.__all__:
        assert hasattr(init, name), name


SEEDED = [("uniform_", (4, 6), {"a": -2, "b": 3}), ("normal_", (4, 6), {"std": 2.0}),
          ("trunc_normal_", (50, 6), {"std": 1.0}), ("trunc_normal_", (50, 6), {"a": 2.5, "b": 4.0}),
          ("xavier_uniform_", (4, 6, 3), {"gain": 2.0}), ("xavier_normal_", (4, 6), {}),
          ("kaiming_uniform_", (5, 3, 2), {"a": 0.5}), ("kaiming_normal_", (5, 3), {"mode": "fan_out"}),
          ("orthogonal_", (3, 7), {"gain": 1.5}), ("orthogonal_", (6, 2, 2), {}),
          ("sparse_", (8, 5), {"sparsity": 0.4}), ("dirac_", (6, 4, 3, 3), {"groups": 2}),
          ("dirac_", (2, 5, 3), {})]


@pytest.mark.parametrize("name,shape,kw", SEEDED)
def test_seeded_inits_equal_torch(name, shape, kw):
    ember.manual_seed(5)
    torch.manual_seed(5)
    got = getattr(ember.nn.init, name)(ember.empty(*shape), **kw)
    want = getattr(torch.nn.init, name)(torch.empty(*shape), **kw)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)
