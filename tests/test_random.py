"""Random numbers: generators, seeding and state, reproducibility, torch-compatible streams,
output dtypes, and the distributions' moments (fixed seeds, generous but failing-capable
tolerances)."""
from __future__ import annotations

import math
import pickle

import numpy as np
import pytest

import ember
from helpers import torch

needs_torch = pytest.mark.skipif(torch is None, reason="needs torch as the oracle")

# every random op as a call taking (module, generator-kwargs)
OPS = {
    "rand": lambda m, **g: m.rand(3, 4, **g),
    "rand_f64": lambda m, **g: m.rand(5, dtype=m.float64, **g),
    "rand_c64": lambda m, **g: m.rand(4, dtype=m.complex64, **g),
    "randn_small": lambda m, **g: m.randn(5, **g),
    "randn_big": lambda m, **g: m.randn(37, **g),
    "randn_f64": lambda m, **g: m.randn(3, 7, dtype=m.float64, **g),
    "randn_c128": lambda m, **g: m.randn(6, dtype=m.complex128, **g),
    "randint": lambda m, **g: m.randint(0, 10, (7,), **g),
    "randint_high": lambda m, **g: m.randint(5, (2, 3), **g),
    "randint_big": lambda m, **g: m.randint(-2 ** 40, 2 ** 40, (4,), **g),
    "randint_f32": lambda m, **g: m.randint(3, 9, (5,), dtype=m.float32, **g),
    "randperm": lambda m, **g: m.randperm(10, **g),
    "randperm_big": lambda m, **g: m.randperm(300, **g),
    "normal_tt": lambda m, **g: m.normal(m.zeros(3), m.ones(3) * 2, **g),
    "normal_tf": lambda m, **g: m.normal(m.ones(3), 3.0, **g),
    "normal_ft": lambda m, **g: m.normal(1.0, m.ones(3), **g),
    "normal_ff": lambda m, **g: m.normal(1.0, 2.0, (2, 3), **g),
    "normal_ff_big": lambda m, **g: m.normal(1.0, 2.0, (20,), dtype=m.float64, **g),
    "bernoulli": lambda m, **g: m.bernoulli(m.full((20,), 0.3), **g),
    "bernoulli_f64": lambda m, **g: m.bernoulli(m.full((20,), 0.3, dtype=m.float64), **g),
    "bernoulli_t": lambda m, **g: m.zeros(4, 5).bernoulli_(m.full((5,), 0.5), **g),
    "uniform_": lambda m, **g: m.zeros(5).uniform_(-2, 3, **g),
    "uniform_f64": lambda m, **g: m.zeros(5, dtype=m.float64).uniform_(-2, 3, **g),
    "uniform_noncontig": lambda m, **g: m.zeros(4, 5).transpose(0, 1).uniform_(**g),
    "normal_": lambda m, **g: m.zeros(40, dtype=m.float64).normal_(2, 3, **g),
    "normal_noncontig": lambda m, **g: m.zeros(5, 4).transpose(0, 1).normal_(**g),
    "random_": lambda m, **g: m.zeros(6).random_(**g),
    "random_int64": lambda m, **g: m.zeros(6, dtype=m.int64).random_(**g),
    "random_to": lambda m, **g: m.zeros(6, dtype=m.int32).random_(10, **g),
    "random_from_to": lambda m, **g: m.zeros(6, dtype=m.int16).random_(-5, 5, **g),
    "random_from": lambda m, **g: m.zeros(6, dtype=m.int32).random_(1, None, **g),
    "random_bool": lambda m, **g: m.zeros(6, dtype=m.bool).random_(**g),
    "rand_like": lambda m, **g: m.rand_like(m.zeros(3, 4), **g),
    "rand_like_T": lambda m, **g: m.rand_like(m.zeros(3, 4).transpose(0, 1), **g),
    "randint_like": lambda m, **g: m.randint_like(m.zeros(3, 4), 3, 10, **g),
}
# draws through NumPy's algorithms (reproducible, but not torch's numbers)
EMBER_ONLY = {
    "multinomial": lambda m, **g: m.multinomial(m.tensor([0.1, 0.2, 0.7]), 2, **g),
    "multinomial_repl": lambda m, **g: m.multinomial(m.ones(3, 4), 6, True, **g),
    "poisson": lambda m, **g: m.poisson(m.full((5,), 3.0), **g),
    "exponential_": lambda m, **g: m.zeros(5).exponential_(2.0, **g),
    "geometric_": lambda m, **g: m.zeros(5).geometric_(0.3, **g),
    "log_normal_": lambda m, **g: m.zeros(5).log_normal_(**g),
    "cauchy_": lambda m, **g: m.zeros(5).cauchy_(**g),
    "bernoulli_p": lambda m, **g: m.zeros(8).bernoulli_(0.4, **g),
    "randn_like": lambda m, **g: m.randn_like(m.zeros(3, 4), **g),
}
ALL_OPS = {**OPS, **EMBER_ONLY}
# float32 tensors of 16+ elements: torch uses vectorised sin/cos/log (last-bit differences)
APPROX = {"randn_big", "normal_tt", "normal_tf", "normal_ft", "normal_ff", "randn_c128",
          "randn_like"}


def _np(t):
    t = t.detach()
    if t.dtype in (ember.bfloat16,) or (torch is not None and t.dtype is torch.bfloat16):
        t = t.float()
    return t.numpy()


# ------------------------------------------------------------------------------ reproducibility

@pytest.mark.parametrize("name", list(ALL_OPS))
def test_same_seed_same_numbers(name):
    f = ALL_OPS[name]
    ember.manual_seed(1234)
    a = _np(f(ember))
    b = _np(f(ember))
    ember.manual_seed(1234)
    np.testing.assert_array_equal(_np(f(ember)), a)
    np.testing.assert_array_equal(_np(f(ember)), b)
    g = ember.Generator().manual_seed(99)
    c = _np(f(ember, generator=g))
    g.manual_seed(99)
    np.testing.assert_array_equal(_np(f(ember, generator=g)), c)


@pytest.mark.parametrize("name", list(ALL_OPS))
def test_generators_are_independent(name):
    f = ALL_OPS[name]
    g1 = ember.Generator().manual_seed(7)
    g2 = ember.Generator().manual_seed(7)
    ember.manual_seed(0)
    x1 = _np(f(ember, generator=g1))
    state_default = ember.get_rng_state()
    _np(f(ember, generator=g1))                 # advances g1 only
    x2 = _np(f(ember, generator=g2))
    np.testing.assert_array_equal(x1, x2)
    assert np.array_equal(ember.get_rng_state().numpy(), state_default.numpy())
    y = _np(f(ember))                            # the default generator moves
    assert not np.array_equal(ember.get_rng_state().numpy(), state_default.numpy()) or y.size == 0


def test_different_seeds_differ():
    ember.manual_seed(1)
    a = ember.rand(100)
    ember.manual_seed(2)
    b = ember.rand(100)
    assert not np.array_equal(a.numpy(), b.numpy())
    c = ember.rand(100)
    assert not np.array_equal(b.numpy(), c.numpy())


# ------------------------------------------------------------------------------ torch streams

@needs_torch
@pytest.mark.parametrize("name", list(OPS))
def test_same_numbers_as_torch(name):
    f = OPS[name]
    ember.manual_seed(123)
    torch.manual_seed(123)
    for _ in range(2):                            # the second draw checks the stream position
        e, t = f(ember), f(torch)
        assert repr(e.dtype) == repr(t.dtype) and tuple(e.shape) == tuple(t.shape)
        if name in APPROX:
            np.testing.assert_allclose(_np(e), t.numpy(), rtol=1e-6, atol=1e-6)
        else:
            np.testing.assert_array_equal(_np(e), _np(t))
    g, tg = ember.Generator().manual_seed(5), torch.Generator().manual_seed(5)
    e, t = f(ember, generator=g), f(torch, generator=tg)
    if name in APPROX:
        np.testing.assert_allclose(_np(e), t.numpy(), rtol=1e-6, atol=1e-6)
    else:
        np.testing.assert_array_equal(_np(e), _np(t))


@needs_torch
def test_half_precision_streams():
    for dt in ("float16", "bfloat16"):
        for f in [lambda m: m.rand(7, 3, dtype=getattr(m, dt)),
                  lambda m: m.randn(5, dtype=getattr(m, dt)),
                  lambda m: m.randn(32, dtype=getattr(m, dt))]:
            ember.manual_seed(3)
            torch.manual_seed(3)
            np.testing.assert_array_equal(_np(f(ember)), _np(f(torch)))


@needs_torch
def test_state_layout_matches_torch():
    for seed in (0, 9, 2 ** 40 + 7, -5):
        ember.manual_seed(seed)
        torch.manual_seed(seed)
        assert ember.initial_seed() == torch.initial_seed()
        np.testing.assert_array_equal(ember.get_rng_state().numpy(),
                                      torch.get_rng_state().numpy())
        ember.randn(3, dtype=ember.float64)       # leaves a cached normal in the state
        torch.randn(3, dtype=torch.float64)
        np.testing.assert_array_equal(ember.get_rng_state().numpy(),
                                      torch.get_rng_state().numpy())
        ember.rand(624 * 3 + 5)
        torch.rand(624 * 3 + 5)
        np.testing.assert_array_equal(ember.get_rng_state().numpy(),
                                      torch.get_rng_state().numpy())


@needs_torch
def test_state_moves_between_ember_and_torch():
    for seed in range(5):
        torch.manual_seed(seed)
        torch.randn(1, dtype=torch.float64)
        ember.set_rng_state(ember.from_numpy(torch.get_rng_state().numpy().copy()))
        np.testing.assert_array_equal(ember.randn(7, dtype=ember.float64).numpy(),
                                      torch.randn(7, dtype=torch.float64).numpy())
        np.testing.assert_array_equal(ember.rand(9).numpy(), torch.rand(9).numpy())
    ember.manual_seed(77)
    ember.rand(10)
    torch.set_rng_state(torch.from_numpy(ember.get_rng_state().numpy().copy()))
    np.testing.assert_array_equal(ember.randint(0, 100, (20,)).numpy(),
                                  torch.randint(0, 100, (20,)).numpy())


# ------------------------------------------------------------------------------ Generator API

def test_generator_api():
    g = ember.Generator()
    assert g.device == ember.device("cpu")
    assert g.initial_seed() == 67280421310721
    assert g.manual_seed(42) is g and g.initial_seed() == 42
    assert g.manual_seed(-1).initial_seed() == 2 ** 64 - 1
    s = g.seed()
    assert isinstance(s, int) and 0 <= s < 2 ** 64 and g.initial_seed() == s
    g.manual_seed(3)
    state = g.get_state()
    assert state.dtype is ember.uint8 and state.shape == (5056,)
    a = ember.rand(5, generator=g)
    assert g.set_state(state) is g
    np.testing.assert_array_equal(ember.rand(5, generator=g).numpy(), a.numpy())
    c = g.clone_state()
    np.testing.assert_array_equal(ember.rand(3, generator=c).numpy(),
                                  ember.rand(3, generator=g).numpy())
    p = pickle.loads(pickle.dumps(g))
    np.testing.assert_array_equal(ember.rand(3, generator=p).numpy(),
                                  ember.rand(3, generator=g).numpy())
    assert isinstance(ember.default_generator, ember.Generator)
    assert ember.random.default_generator is ember.default_generator


def test_generator_errors():
    g = ember.Generator()
    with pytest.raises(RuntimeError, match="manual_seed expected a long, but got str"):
        g.manual_seed("a")
    with pytest.raises(RuntimeError, match="manual_seed expected a long, but got float"):
        g.manual_seed(1.5)
    with pytest.raises(ValueError, match="Overflow when unpacking long long"):
        ember.manual_seed(2 ** 64)
    with pytest.raises(TypeError, match="RNG state must be a torch.ByteTensor"):
        g.set_state(ember.zeros(5056))
    with pytest.raises(TypeError, match="expected a torch.ByteTensor, but got list"):
        g.set_state([1])
    with pytest.raises(RuntimeError, match="found the input RNG state size to be 3"):
        g.set_state(ember.zeros(3, dtype=ember.uint8))
    with pytest.raises(RuntimeError, match="Invalid mt19937 state"):
        g.set_state(ember.zeros(5056, dtype=ember.uint8))
    with pytest.raises(RuntimeError, match="no backend for device 'cuda'"):
        ember.Generator("cuda")
    with pytest.raises(TypeError, match="generator"):
        ember.rand(2, generator=1)


def test_module_level_seeding():
    assert ember.manual_seed(5) is ember.default_generator
    assert ember.initial_seed() == 5
    assert ember.manual_seed(1.9).initial_seed() == 1       # int() like torch
    s = ember.seed()
    assert ember.initial_seed() == s
    ember.manual_seed(11)
    st = ember.get_rng_state()
    a = ember.randn(4)
    ember.set_rng_state(st)
    np.testing.assert_array_equal(ember.randn(4).numpy(), a.numpy())
    ember.random.set_rng_state(st)
    np.testing.assert_array_equal(ember.random.get_rng_state().numpy(), st.numpy())


def test_fork_rng():
    ember.manual_seed(3)
    before = ember.get_rng_state().numpy().copy()
    with ember.random.fork_rng():
        ember.rand(10)
        assert not np.array_equal(ember.get_rng_state().numpy(), before)
    np.testing.assert_array_equal(ember.get_rng_state().numpy(), before)
    with ember.random.fork_rng(enabled=False):
        ember.rand(1)
    assert not np.array_equal(ember.get_rng_state().numpy(), before)
    with ember.random.fork_rng(devices=[]):
        ember.rand(1)
    with pytest.raises(RuntimeError, match="no backend"):
        with ember.random.fork_rng(devices=[0]):
            pass


# ------------------------------------------------------------------------------ dtypes, options

@needs_torch
def test_output_dtypes_like_torch():
    calls = [lambda m: m.rand(2), lambda m: m.randn(2, dtype=m.float64),
             lambda m: m.randint(3, (2,)), lambda m: m.randint(3, (2,), dtype=m.float32),
             lambda m: m.randperm(3), lambda m: m.randperm(3, dtype=m.float64),
             lambda m: m.normal(0.0, 1.0, (2,)), lambda m: m.normal(m.zeros(2, dtype=m.float64),
                                                                    m.ones(2)),
             lambda m: m.normal(m.zeros(2, dtype=m.float64), 1.0),
             lambda m: m.normal(2.0, m.ones(2, dtype=m.float64)),
             lambda m: m.bernoulli(m.full((2,), 0.5, dtype=m.float64)),
             lambda m: m.zeros(2, dtype=m.int64).bernoulli_(0.5),
             lambda m: m.multinomial(m.ones(3), 2), lambda m: m.poisson(m.ones(2)),
             lambda m: m.rand_like(m.zeros(2, dtype=m.float64)),
             lambda m: m.randint_like(m.zeros(2), 5), lambda m: m.randn(2, dtype=m.complex64),
             lambda m: m.zeros(3, dtype=m.int64).geometric_(0.5)]
    for f in calls:
        e, t = f(ember), f(torch)
        assert repr(e.dtype) == repr(t.dtype) and tuple(e.shape) == tuple(t.shape)
    ember.set_default_dtype(ember.float64)
    torch.set_default_dtype(torch.float64)
    try:
        for f in calls[:1] + [lambda m: m.normal(0.0, 1.0, (2,)), lambda m: m.randn(3)]:
            assert repr(f(ember).dtype) == repr(f(torch).dtype)
    finally:
        ember.set_default_dtype(ember.float32)
        torch.set_default_dtype(torch.float32)


def test_factory_options():
    x = ember.rand(2, 3, requires_grad=True)
    assert x.requires_grad and x.is_leaf
    out = ember.empty(0, dtype=ember.float64)
    r = ember.randn(4, out=out)
    assert r is out and out.shape == (4,) and out.dtype is ember.float64
    assert ember.rand(size=(2, 2)).shape == (2, 2)
    assert ember.randint(low=2, high=5, size=(3,)).min() >= 2
    with pytest.raises(RuntimeError, match="Only Tensors of floating point"):
        ember.randint(3, (2,), requires_grad=True)
    lk = ember.rand_like(ember.zeros(3, 4).transpose(0, 1))
    assert lk.stride() == (1, 4)
    assert ember.randn_like(ember.zeros(2), dtype=ember.float64).dtype is ember.float64
    with pytest.raises(TypeError, match="must be Tensor, not list"):
        ember.rand_like([1.0])


def test_randperm_is_permutation():
    for n in (0, 1, 2, 17, 1000, 50000):
        p = ember.randperm(n)
        assert sorted(p.tolist()) == list(range(n))
        assert p.dtype is ember.int64


# ------------------------------------------------------------------------------ gradients

@needs_torch
def test_sampling_gradients_are_zero():
    for f in [lambda m, a, b: m.normal(a, b), lambda m, a, b: m.normal(a, 2.0),
              lambda m, a, b: m.normal(1.0, b), lambda m, a, b: m.bernoulli(a.sigmoid()
                                                                            if False else a),
              lambda m, a, b: m.poisson(a), lambda m, a, b: (a * 2).uniform_(),
              lambda m, a, b: (a * 2).normal_(), lambda m, a, b: (a * 2).exponential_(),
              lambda m, a, b: (a * 2).bernoulli_(0.5), lambda m, a, b: (a * 2).random_(5),
              lambda m, a, b: (a * 2).cauchy_(), lambda m, a, b: (a * 2).log_normal_(),
              lambda m, a, b: (a * 2).geometric_(0.5)]:
        ea = ember.full((3,), 0.5, requires_grad=True)
        eb = ember.ones(3, requires_grad=True)
        ta = torch.full((3,), 0.5, requires_grad=True)
        tb = torch.ones(3, requires_grad=True)
        eo, to = f(ember, ea, eb), f(torch, ta, tb)
        assert type(eo.grad_fn).__name__ == type(to.grad_fn).__name__
        eo.sum().backward()
        to.sum().backward()
        for e, t in ((ea, ta), (eb, tb)):
            assert (e.grad is None) == (t.grad is None)
            if t.grad is not None:
                np.testing.assert_array_equal(e.grad.numpy(), t.grad.numpy())


def test_inplace_on_leaf_requiring_grad():
    x = ember.zeros(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        x.uniform_()
    with ember.no_grad():
        x.uniform_()
    assert x._version == 1


# ------------------------------------------------------------------------------ moments

N = 200_000


def _z(sample_mean, mean, std, n):
    """How many standard errors the sample mean is from the true mean."""
    return abs(sample_mean - mean) / (std / math.sqrt(n))


@pytest.fixture
def gen():
    return ember.Generator().manual_seed(20240601)


def test_uniform_moments(gen):
    for dt in (ember.float32, ember.float64):
        x = ember.rand(N, generator=gen, dtype=dt).numpy().astype(np.float64)
        assert x.min() >= 0 and x.max() < 1
        assert _z(x.mean(), 0.5, math.sqrt(1 / 12), N) < 5
        assert abs(x.var() - 1 / 12) < 0.01 * (1 / 12) * 3
    y = ember.empty(N).uniform_(-2, 6, generator=gen).numpy()
    assert y.min() >= -2 and y.max() < 6
    assert _z(y.mean(), 2.0, 8 / math.sqrt(12), N) < 5
    hist = np.histogram(y, bins=16, range=(-2, 6))[0]
    expected = N / 16
    chi2 = ((hist - expected) ** 2 / expected).sum()
    assert chi2 < 50          # 15 degrees of freedom: P(chi2 > 50) ~ 1e-5


@pytest.mark.parametrize("size", [7, 16, 37, N])
def test_normal_moments(gen, size):
    reps = max(1, N // size)
    x = np.concatenate([ember.randn(size, generator=gen).numpy() for _ in range(min(reps, 400))])
    n = x.size
    assert _z(x.mean(), 0.0, 1.0, n) < 5
    assert abs(x.std() - 1.0) < 5 * math.sqrt(0.5 / n) + 1e-3
    assert abs(np.mean(x ** 4) - 3.0) < 0.15             # kurtosis of a normal
    y = ember.empty(N, dtype=ember.float64).normal_(3, 2, generator=gen).numpy()
    assert _z(y.mean(), 3.0, 2.0, N) < 5 and abs(y.std() - 2.0) < 0.02


def test_normal_overloads_moments(gen):
    mean = ember.tensor([-5.0, 0.0, 10.0]).expand(N // 4, 3)
    std = ember.tensor([1.0, 2.0, 0.5])
    x = ember.normal(mean, std, generator=gen).numpy()
    np.testing.assert_allclose(x.mean(0), [-5, 0, 10], atol=0.05)
    np.testing.assert_allclose(x.std(0), [1, 2, 0.5], rtol=0.02)
    y = ember.normal(2.0, 3.0, (N,), generator=gen).numpy()
    assert _z(y.mean(), 2.0, 3.0, N) < 5 and abs(y.std() - 3) < 0.05
    z = ember.normal(ember.full((N,), 1.0), 0.5, generator=gen).numpy()
    assert _z(z.mean(), 1.0, 0.5, N) < 5
    w = ember.normal(-1.0, ember.full((N,), 2.0), generator=gen).numpy()
    assert _z(w.mean(), -1.0, 2.0, N) < 5 and abs(w.std() - 2) < 0.03
    c = ember.randn(N, dtype=ember.complex64, generator=gen).numpy()
    assert abs(np.mean(np.abs(c) ** 2) - 1.0) < 0.02      # E|z|^2 = 1
    assert abs(c.real.std() - math.sqrt(0.5)) < 0.01


def test_randint_uniform(gen):
    x = ember.randint(-3, 7, (N,), generator=gen).numpy()
    assert x.min() == -3 and x.max() == 6
    counts = np.bincount(x + 3, minlength=10)
    expected = N / 10
    assert ((counts - expected) ** 2 / expected).sum() < 40    # 9 dof
    y = ember.empty(N, dtype=ember.int64).random_(0, 5, generator=gen).numpy()
    assert set(np.unique(y)) == {0, 1, 2, 3, 4}
    b = ember.empty(N, dtype=ember.bool).random_(generator=gen).numpy()
    assert abs(b.mean() - 0.5) < 0.01
    u = ember.empty(N, dtype=ember.uint8).random_(generator=gen).numpy()
    assert u.min() == 0 and u.max() == 255
    f = ember.empty(N).random_(generator=gen).numpy()
    assert f.min() >= 0 and f.max() <= 2 ** 24 and f.mean() > 2 ** 22
    big = ember.randint(0, 2 ** 40, (N,), generator=gen).numpy()
    assert _z(big.mean(), 2 ** 39, 2 ** 40 / math.sqrt(12), N) < 5


def test_randperm_uniform(gen):
    firsts = np.array([ember.randperm(5, generator=gen)[0].item() for _ in range(5000)])
    counts = np.bincount(firsts, minlength=5)
    assert ((counts - 1000) ** 2 / 1000).sum() < 25


def test_bernoulli_moments(gen):
    p = ember.tensor([0.1, 0.5, 0.9, 0.0, 1.0]).expand(N // 5, 5).contiguous()
    x = ember.bernoulli(p, generator=gen).numpy()
    np.testing.assert_allclose(x.mean(0), [0.1, 0.5, 0.9, 0.0, 1.0], atol=0.01)
    assert x[:, 3].sum() == 0 and x[:, 4].min() == 1
    y = ember.zeros(N).bernoulli_(0.3, generator=gen).numpy()
    assert _z(y.mean(), 0.3, math.sqrt(0.21), N) < 5
    z = ember.zeros(N // 4, 4).bernoulli_(ember.tensor([0.2, 0.4, 0.6, 0.8]),
                                          generator=gen).numpy()
    np.testing.assert_allclose(z.mean(0), [0.2, 0.4, 0.6, 0.8], atol=0.015)
    w = ember.bernoulli(ember.zeros(N), 0.7, generator=gen).numpy()
    assert abs(w.mean() - 0.7) < 0.01


def test_multinomial_frequencies(gen):
    probs = ember.tensor([0.1, 0.2, 0.3, 0.4])
    x = ember.multinomial(probs, N, replacement=True, generator=gen).numpy()
    np.testing.assert_allclose(np.bincount(x, minlength=4) / N, [0.1, 0.2, 0.3, 0.4],
                               atol=0.01)
    # without replacement: distinct indices; first draws follow the probabilities
    draws = ember.multinomial(probs.expand(20000, 4).contiguous(), 2, generator=gen).numpy()
    assert (draws[:, 0] != draws[:, 1]).all()
    np.testing.assert_allclose(np.bincount(draws[:, 0], minlength=4) / 20000,
                               [0.1, 0.2, 0.3, 0.4], atol=0.015)
    allk = ember.multinomial(probs, 4, generator=gen)
    assert sorted(allk.tolist()) == [0, 1, 2, 3]
    zeros = ember.multinomial(ember.tensor([0.0, 1.0, 0.0]), 1, generator=gen)
    assert zeros.tolist() == [1]
    rows = ember.multinomial(ember.tensor([[1.0, 0.0], [0.0, 1.0]]), 3, True, generator=gen)
    assert rows.tolist() == [[0, 0, 0], [1, 1, 1]]
    unnorm = ember.multinomial(ember.tensor([2.0, 6.0]), N, True, generator=gen).numpy()
    assert abs(unnorm.mean() - 0.75) < 0.01


def test_poisson_moments(gen):
    for lam in (0.5, 4.0, 30.0):
        x = ember.poisson(ember.full((N,), lam), generator=gen).numpy()
        assert (x >= 0).all() and (x == np.round(x)).all()
        assert _z(x.mean(), lam, math.sqrt(lam), N) < 5
        assert abs(x.var() - lam) < 0.05 * lam
    assert ember.poisson(ember.zeros(10), generator=gen).sum().item() == 0


def test_exponential_geometric_lognormal_cauchy(gen):
    e = ember.empty(N, dtype=ember.float64).exponential_(2.0, generator=gen).numpy()
    assert e.min() >= 0 and _z(e.mean(), 0.5, 0.5, N) < 5
    g = ember.empty(N).geometric_(0.25, generator=gen).numpy()
    assert g.min() >= 1 and (g == np.round(g)).all()
    assert _z(g.mean(), 4.0, math.sqrt(0.75) / 0.25, N) < 5
    ln = ember.empty(N, dtype=ember.float64).log_normal_(0.5, 0.25, generator=gen).numpy()
    assert _z(np.log(ln).mean(), 0.5, 0.25, N) < 5 and abs(np.log(ln).std() - 0.25) < 0.005
    c = ember.empty(N, dtype=ember.float64).cauchy_(1.0, 2.0, generator=gen).numpy()
    q1, med, q3 = np.percentile(c, [25, 50, 75])
    assert abs(med - 1.0) < 0.05 and abs((q3 - q1) / 2 - 2.0) < 0.1     # IQR/2 = sigma


def test_distribution_checks_can_fail(gen):
    """The moment checks above detect a wrong distribution."""
    x = ember.rand(N, generator=gen).numpy() * 1.02
    assert _z(x.mean(), 0.5, math.sqrt(1 / 12), N) > 5
    y = ember.randn(N, generator=gen).numpy() * 1.02
    assert abs(y.std() - 1.0) > 5 * math.sqrt(0.5 / N) + 1e-3


@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16"])
@pytest.mark.parametrize("weights", [[0.1, 0.2, 0.3, 0.4], [[1, 0, 3, 0.5], [0, 0, 2, 1]],
                                     [5, 0, 0, 1e-3]])
def test_multinomial_with_replacement_follows_torchs_stream(dtype, weights):
    """Same seed, same draws as torch (cumulative sums in the input's precision, one double
    uniform per sample), and the global stream stays in step afterwards."""
    ember.manual_seed(3)
    torch.manual_seed(3)
    e = ember.multinomial(ember.tensor(weights, dtype=getattr(ember, dtype)), 50, True)
    t = torch.multinomial(torch.tensor(weights, dtype=getattr(torch, dtype)), 50, True)
    np.testing.assert_array_equal(e.numpy(), t.numpy())
    np.testing.assert_array_equal(ember.rand(3).numpy(), torch.rand(3).numpy())


def test_weighted_random_sampler_matches_torch_for_a_seeded_generator():
    w = [0.1, 0.9, 0.4, 0.3, 0.0, 2.0]
    g, gt = ember.Generator().manual_seed(7), torch.Generator().manual_seed(7)
    e = list(ember.utils.data.WeightedRandomSampler(w, 40, generator=g))
    t = list(torch.utils.data.WeightedRandomSampler(w, 40, generator=gt))
    assert e == t


@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16", "float16"])
@pytest.mark.parametrize("lambd", [1.0, 2.5])
def test_exponential_follows_torchs_stream(dtype, lambd):
    ember.manual_seed(1)
    torch.manual_seed(1)
    e = ember.empty(4000, dtype=getattr(ember, dtype)).exponential_(lambd)
    t = torch.empty(4000, dtype=getattr(torch, dtype)).exponential_(lambd)
    np.testing.assert_array_equal(e.float().numpy(), t.float().numpy())
    np.testing.assert_array_equal(ember.rand(3).numpy(), torch.rand(3).numpy())


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("weights,n", [([0.2, 0.3, 0.5], 2), ([[1.0, 2, 3, 4, 5], [5, 1, 1, 1, 1]], 3),
                                       ([0.1] * 10, 1)])
def test_multinomial_without_replacement_follows_torchs_stream(seed, weights, n):
    ember.manual_seed(seed)
    torch.manual_seed(seed)
    e = ember.multinomial(ember.tensor(weights), n, False)
    t = torch.multinomial(torch.tensor(weights), n, False)
    np.testing.assert_array_equal(e.numpy(), t.numpy())


@pytest.mark.parametrize("layout", ["expanded", "transposed"])
def test_functional_bernoulli_draws_in_a_contiguous_result_like_torch(layout):
    p = np.random.default_rng(0).random((4, 3))
    def make(lib, arr):
        t = lib.tensor(arr)
        return t[0].expand(5, 3) if layout == "expanded" else t.t()
    ember.manual_seed(2)
    torch.manual_seed(2)
    e = ember.bernoulli(make(ember, p))
    t = torch.bernoulli(make(torch, p))
    assert e.is_contiguous() and t.is_contiguous()
    np.testing.assert_array_equal(e.numpy(), t.numpy())


def test_randint_into_floats_beyond_their_integers_warns_as_torch():
    # torch 2.13: a bound past +-2^digits of a float dtype warns (an error only beyond the
    # type's range); the draws themselves still come from the same stream
    import warnings
    for dt in ("float32", "float64", "bfloat16"):
        msgs, vals = [], []
        for lib in (ember, torch):
            lib.manual_seed(0)
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                t = lib.randint(-(1 << 60), 0, (3,), dtype=getattr(lib, dt))
            msgs.append([str(x.message).split(" (Triggered internally")[0] for x in w
                         if "out of bounds" in str(x.message)])
            vals.append(t.float().tolist())
        assert msgs[0] == msgs[1] and len(msgs[0]) == 1
        assert vals[0] == vals[1]
    for lib in (ember, torch):
        with pytest.raises(RuntimeError, match="to - 1 is out of bounds for c10::Half"):
            lib.randint(0, 1 << 60, (2,), dtype=lib.float16)
    for dt in ("float32", "float64", "int64", "int32"):      # the copy-free paths
        ember.manual_seed(3)
        torch.manual_seed(3)
        a, b = ember.rand(5, 3, dtype=getattr(ember, dt)) if dt[0] == "f" else \
            ember.randint(0, 9, (5, 3), dtype=getattr(ember, dt)), \
            torch.rand(5, 3, dtype=getattr(torch, dt)) if dt[0] == "f" else \
            torch.randint(0, 9, (5, 3), dtype=getattr(torch, dt))
        assert a.dtype == getattr(ember, dt) and a.shape == (5, 3)
        np.testing.assert_array_equal(a.numpy(), b.numpy())
