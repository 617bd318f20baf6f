"""float32 tanh's and exp's compiled kernels (ember/_kernels/compiled/elementwise.py) against
NumPy in float64 (within 1 ulp of the correctly rounded result) and torch, special values,
signed zeros, in place, on the pool and off it, and the ops and layers that use them (LSTM,
GRU, sigmoid)."""
import numpy as np
import pytest

import ember
from ember._kernels import compiled, fast_elementwise

torch = pytest.importorskip("torch")


def _ulps(got, want):
    return np.abs(got.view(np.int32).astype(np.int64) - want.view(np.int32))


@pytest.mark.parametrize("scale", [0.05, 0.5, 3.0, 20.0])
def test_tanh_float32_within_one_ulp(scale):
    v = (np.random.default_rng(int(scale * 100)).standard_normal(100_000) * scale).astype(
        np.float32)
    got = ember.from_numpy(v).tanh().numpy()
    want = np.tanh(v.astype(np.float64)).astype(np.float32)
    assert _ulps(got, want).max() <= 1
    assert (_ulps(got, want) == 0).mean() > 0.7
    np.testing.assert_allclose(got, torch.from_numpy(v).tanh().numpy(), rtol=2.4e-7, atol=0)


def test_tanh_grid_and_special_values():
    grid = np.concatenate([np.linspace(-12, 12, 400_001), np.linspace(-0.7, 0.7, 100_001)])
    s = np.array([0.0, -0.0, 1e-30, -1e-40, 9.0, 9.1, 10.0, -10.5, 3e38, np.inf, -np.inf, np.nan],
                 np.float32)
    v = np.concatenate([grid.astype(np.float32), np.tile(s, 2000)])
    got = np.empty_like(v)
    assert fast_elementwise.tanh(v, got) is not None or compiled.module("elementwise") is None
    if compiled.module("elementwise") is None:
        pytest.skip("numba not installed")
    want = np.tanh(v.astype(np.float64)).astype(np.float32)
    ok = ~np.isnan(v)
    assert _ulps(got[ok], want[ok]).max() <= 1
    assert np.isnan(got[~ok]).all()
    tail = got[-12:]
    assert list(np.signbit(tail[:2])) == [False, True] and tail[2] == np.float32(1e-30)
    assert tail[6] == 1 and tail[7] == -1 and tail[9] == 1 and tail[10] == -1
    assert tail[4] == want[-8]            # tanh(9) rounds to 1 - 2^-24, not to 1


def test_tanh_in_place_and_pool_paths_agree(monkeypatch):
    v = (np.random.default_rng(1).standard_normal((300, 700)) * 2).astype(np.float32)
    pooled = fast_elementwise.tanh(v)
    if pooled is None:
        pytest.skip("numba not installed")
    inplace = v.copy()
    fast_elementwise.tanh(inplace, inplace)
    monkeypatch.setenv("EMBER_NO_BLAS_POOL", "1")
    from ember._kernels import blas_pool
    monkeypatch.setattr(blas_pool, "kernels", lambda: None)
    direct = fast_elementwise.tanh(v)
    assert np.array_equal(pooled, inplace) and np.array_equal(pooled, direct)


@pytest.mark.parametrize("compiled_on", [True, False])
def test_tanh_op_gradient_and_small_arrays(compiled_on, monkeypatch):
    if not compiled_on:
        monkeypatch.setitem(compiled._state, "enabled", False)
    x = ember.tensor(np.linspace(-4, 4, 40_000), dtype=ember.float32, requires_grad=True)
    y = x.tanh()
    y.sum().backward()
    t = np.tanh(np.linspace(-4, 4, 40_000))
    np.testing.assert_allclose(y.detach().numpy(), t, rtol=3e-7, atol=1e-7)
    np.testing.assert_allclose(x.grad.numpy(), 1 - t ** 2, rtol=1e-5, atol=1e-6)
    small = ember.tensor([-0.0, 0.5, -2.0])     # small: float64 rounded once, as torch's
    want = np.tanh(np.float64([-0.0, 0.5, -2.0])).astype(np.float32)
    np.testing.assert_array_equal(small.tanh().numpy(), want)
    np.testing.assert_array_equal(want, torch.tanh(torch.tensor([-0.0, 0.5, -2.0])).numpy())
    d = ember.tensor(np.linspace(-3, 3, 50_000))                  # float64 stays NumPy's
    np.testing.assert_array_equal(d.tanh().numpy(), np.tanh(np.linspace(-3, 3, 50_000)))


@pytest.mark.parametrize("cell", ["LSTM", "GRU"])
@pytest.mark.parametrize("compiled_on", [True, False])
def test_recurrent_layers_match_torch_with_either_tanh(cell, compiled_on, monkeypatch):
    if not compiled_on:
        monkeypatch.setitem(compiled._state, "enabled", False)
    ember.manual_seed(0)
    m = getattr(ember.nn, cell)(24, 48, batch_first=True)
    tm = getattr(torch.nn, cell)(24, 48, batch_first=True)
    with torch.no_grad():
        for name, p in m.named_parameters():
            getattr(tm, name).copy_(torch.from_numpy(p.detach().numpy()))
    x = np.random.default_rng(2).standard_normal((8, 30, 24)).astype(np.float32) * 2
    ex, tx = ember.from_numpy(x).requires_grad_(), torch.from_numpy(x).requires_grad_()
    eo, to = m(ex)[0], tm(tx)[0]
    np.testing.assert_allclose(eo.detach().numpy(), to.detach().numpy(), rtol=1e-5, atol=2e-6)
    (eo ** 2).sum().backward()
    (to ** 2).sum().backward()
    np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), rtol=1e-4, atol=2e-5)
    np.testing.assert_allclose(m.weight_hh_l0.grad.numpy(), tm.weight_hh_l0.grad.numpy(),
                               rtol=1e-4, atol=5e-5)


@pytest.mark.parametrize("scale", [0.01, 1.0, 10.0, 40.0])
def test_exp_float32_within_two_ulps(scale):
    v = (np.random.default_rng(int(scale * 10)).standard_normal(100_000) * scale).astype(
        np.float32)
    got = ember.from_numpy(v).exp().numpy()
    with np.errstate(over="ignore"):
        want = np.exp(v.astype(np.float64)).astype(np.float32)
        ref = torch.from_numpy(v).exp().numpy()
    fine = (v >= -87) & (v <= 88)                           # the kernel's range
    assert _ulps(got[fine], want[fine]).max() <= 2         # (NumPy's own float32 exp: 3)
    assert (_ulps(got[fine], want[fine]) == 0).mean() > 0.85
    assert _ulps(got[fine], ref[fine]).max() <= 2
    with np.errstate(over="ignore"):                        # overflow, subnormal results:
        np.testing.assert_array_equal(got[~fine], np.exp(v[~fine]))     # NumPy's exp


def test_exp_special_values_pool_and_in_place(monkeypatch):
    s = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 88.0, 88.5, 89.0, -87.0, -87.5, -100.0,
                  -104.0, 1e-30], np.float32)
    v = np.tile(s, 20_000)
    got = fast_elementwise.exp(v)
    if got is None:
        pytest.skip("numba not installed")
    with np.errstate(over="ignore"):
        want = np.exp(v)                  # NumPy's own exp for every value outside [-87, 88]
        ref = torch.from_numpy(v).exp().numpy()
    inside = (v >= -87) & (v <= 88)                   # the kernel's range: torch's values
    np.testing.assert_array_equal(got[inside], ref[inside])
    np.testing.assert_array_equal(got[~inside], want[~inside])     # else NumPy's exp
    from ember._kernels import blas_pool
    monkeypatch.setattr(blas_pool, "kernels", lambda: None)
    direct = fast_elementwise.exp(v)
    assert np.array_equal(direct, got, equal_nan=True)
    t = ember.from_numpy(v.copy())
    t.exp_()
    assert np.array_equal(t.numpy(), got, equal_nan=True)


@pytest.mark.parametrize("compiled_on", [True, False])
def test_exp_and_sigmoid_ops(compiled_on, monkeypatch):
    if not compiled_on:
        monkeypatch.setitem(compiled._state, "enabled", False)
    v = (np.random.default_rng(3).standard_normal(50_000) * 5).astype(np.float32)
    x = ember.from_numpy(v).requires_grad_()
    y = x.exp()
    y.sum().backward()
    np.testing.assert_allclose(y.detach().numpy(), torch.from_numpy(v).exp().numpy(), rtol=4e-7)
    np.testing.assert_array_equal(x.grad.numpy(), y.detach().numpy())
    np.testing.assert_allclose(ember.from_numpy(v).sigmoid().numpy(),
                               torch.from_numpy(v).sigmoid().numpy(), rtol=5e-7, atol=1e-30)
    b = ember.from_numpy(v).bfloat16().exp().float().numpy()
    tb = torch.from_numpy(v).bfloat16().exp().float().numpy()      # a bfloat16 ulp at most
    np.testing.assert_allclose(b, tb, rtol=2 ** -7)
    assert (b == tb).mean() > 0.99


def test_tanh_of_a_sum_in_one_pass():
    kernels = compiled.module("elementwise")
    if kernels is None:
        pytest.skip("numba not installed")
    rng = np.random.default_rng(4)
    a = (rng.standard_normal(5000) * 3).astype(np.float32)
    b = (rng.standard_normal(5000) * 3).astype(np.float32)
    want = np.tanh((a + b).astype(np.float64)).astype(np.float32)      # a + b rounded first
    for target in ("new", "a", "b"):
        x, y = a.copy(), b.copy()
        out = {"new": np.empty_like(a), "a": x, "b": y}[target]
        kernels.tanh_sum(x, y, out)
        assert _ulps(out, want).max() <= 1
