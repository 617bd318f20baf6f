"""Samplers that follow torch's CPU generator stream: ``poisson``, ``binomial``,
``_standard_gamma``, ``_sample_dirichlet`` and the in-place ``cauchy_``, ``log_normal_`` and
``geometric_`` give torch's values for the same seed (bit for bit), and leave the generator
where torch leaves it (the next ``rand`` draws agree too)."""
from __future__ import annotations

import numpy as np
import pytest

import ember
from helpers import torch

pytestmark = pytest.mark.skipif(torch is None, reason="needs torch as the oracle")

SEEDS = (0, 1, 12345, 2 ** 40 + 7)


def _np(t):
    """A tensor (ember's or torch's) as a float64 NumPy array (half types through float32)."""
    if t.dtype in (getattr(ember, "bfloat16", None), getattr(torch, "bfloat16", None)):
        t = t.float()
    return np.asarray(t.numpy(), dtype=np.float64)


def _pair(dt):
    return getattr(ember, dt), getattr(torch, dt)


def _exact(a, b):
    a, b = _np(a), _np(b)
    assert a.shape == b.shape
    np.testing.assert_array_equal(a, b)


def _in_step(gen_e=None, gen_t=None):
    """The streams are still in step: the next draws (uniform and normal) agree."""
    ke = {} if gen_e is None else {"generator": gen_e}
    kt = {} if gen_t is None else {"generator": gen_t}
    assert ember.rand(3, **ke).tolist() == torch.rand(3, **kt).tolist()
    assert ember.randn(3, dtype=ember.float64, **ke).tolist() == \
        torch.randn(3, dtype=torch.float64, **kt).tolist()


def _seed(s):
    ember.manual_seed(s)
    torch.manual_seed(s)


def _values(rng, kind):
    if kind == "poisson":
        return np.concatenate([rng.exponential(4, 60), rng.exponential(200, 30),
                               [0.0, 1e-9, 9.999, 10.0, 1e5]])
    if kind == "gamma":
        return np.concatenate([rng.exponential(1.0, 60), rng.exponential(0.01, 20),
                               rng.exponential(50, 20), [1.0, 1e-20, 1e6]])
    raise AssertionError(kind)


# ------------------------------------------------------------------------------- poisson

@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("dt", ["float32", "float64", "float16", "bfloat16"])
def test_poisson_matches_torch(seed, dt):
    rates = _values(np.random.default_rng(seed % 1000), "poisson")
    if dt in ("float16", "bfloat16"):
        rates = np.minimum(rates, 3000.0)
    de, dtt = _pair(dt)
    _seed(seed)
    _exact(ember.poisson(ember.tensor(rates.tolist(), dtype=de)),
           torch.poisson(torch.tensor(rates.tolist(), dtype=dtt)))
    _in_step()


@pytest.mark.parametrize("shape", [(), (1,), (4, 5), (2, 3, 4)])
def test_poisson_shapes_and_layouts(shape):
    rng = np.random.default_rng(3)
    rates = rng.exponential(15, shape)
    _seed(5)
    _exact(ember.poisson(ember.tensor(rates)), torch.poisson(torch.tensor(rates)))
    if len(shape) >= 2:  # a transposed (non-contiguous) rate tensor: torch's iteration order
        _exact(ember.poisson(ember.tensor(rates).transpose(0, -1)),
               torch.poisson(torch.tensor(rates).transpose(0, -1)))
    _in_step()


def test_poisson_generator_and_infinite_rate():
    ge, gt = ember.Generator().manual_seed(11), torch.Generator().manual_seed(11)
    _exact(ember.poisson(ember.full((40,), 30.0), generator=ge),
           torch.poisson(torch.full((40,), 30.0), generator=gt))
    _in_step(ge, gt)
    _seed(2)  # an infinite rate: torch's int64 conversion of a non-finite value
    _exact(ember.poisson(ember.tensor([float("inf"), 3.0, float("inf")])),
           torch.poisson(torch.tensor([float("inf"), 3.0, float("inf")])))
    _in_step()


def test_poisson_errors():
    with pytest.raises(RuntimeError, match="non-negative"):
        ember.poisson(ember.tensor([1.0, -1.0]))
    with pytest.raises(RuntimeError, match="non-negative"):
        ember.poisson(ember.tensor([float("nan")]))


# --------------------------------------------------------------------------------- gamma

@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_standard_gamma_matches_torch(seed, dt):
    alpha = _values(np.random.default_rng(seed % 997), "gamma")
    de, dtt = _pair(dt)
    _seed(seed)
    _exact(ember._standard_gamma(ember.tensor(alpha.tolist(), dtype=de)),
           torch._standard_gamma(torch.tensor(alpha.tolist(), dtype=dtt)))
    _in_step()


def test_standard_gamma_odd_normal_cache_and_zero():
    # an odd number of normal draws leaves a cached normal in the generator: a later randn
    # (and a second gamma call) must pick it up as torch does; alpha 0 gives the dtype's tiny
    for dt in ("float32", "float64"):
        de, dtt = _pair(dt)
        _seed(9)
        for _ in range(3):
            _exact(ember._standard_gamma(ember.tensor([2.5, 0.0, 0.3], dtype=de)),
                   torch._standard_gamma(torch.tensor([2.5, 0.0, 0.3], dtype=dtt)))
        _in_step()


def test_standard_gamma_layout_and_generator():
    alpha = np.random.default_rng(4).exponential(2, (3, 4, 5))
    ge, gt = ember.Generator().manual_seed(21), torch.Generator().manual_seed(21)
    _exact(ember._standard_gamma(ember.tensor(alpha).permute(2, 0, 1), generator=ge),
           torch._standard_gamma(torch.tensor(alpha).permute(2, 0, 1), generator=gt))
    _in_step(ge, gt)


def test_standard_gamma_dtype_errors():
    for dt in ("float16", "bfloat16"):
        with pytest.raises(NotImplementedError, match="gamma_cpu"):
            ember._standard_gamma(ember.ones(3, dtype=getattr(ember, dt)))


def test_standard_gamma_statistics():
    ember.manual_seed(0)
    for a in (0.2, 1.0, 4.0):
        x = _np(ember._standard_gamma(ember.full((20000,), a, dtype=ember.float64)))
        assert abs(x.mean() - a) < 4 * np.sqrt(a / 20000)
        assert abs(x.var() / a - 1) < 0.1


# ----------------------------------------------------------------------------- dirichlet

@pytest.mark.parametrize("k", [1, 2, 3, 5, 8, 17, 64])
@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_sample_dirichlet_matches_torch(k, dt):
    alpha = np.random.default_rng(k).exponential(1.5, (3, k)) + 0.05
    de, dtt = _pair(dt)
    for seed in SEEDS[:2]:
        _seed(seed)
        _exact(ember._sample_dirichlet(ember.tensor(alpha.tolist(), dtype=de)),
               torch._sample_dirichlet(torch.tensor(alpha.tolist(), dtype=dtt)))
        _in_step()


# ------------------------------------------------------------------------------ binomial

def _binomial_params(rng):
    count = np.floor(np.concatenate([rng.exponential(20, 40), rng.exponential(2000, 20),
                                     [0, 1, 5, 1e6, -2, 7]]))
    count[-1] = 7.5  # a non-integer count
    prob = np.concatenate([rng.random(60), [0.5, 1.0, 0.0, 1e-7, 0.3, 0.999]])
    return count, prob


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_binomial_matches_torch(seed, dt):
    count, prob = _binomial_params(np.random.default_rng(seed % 991))
    de, dtt = _pair(dt)
    _seed(seed)
    _exact(ember.binomial(ember.tensor(count.tolist(), dtype=de),
                          ember.tensor(prob.tolist(), dtype=de)),
           torch.binomial(torch.tensor(count.tolist(), dtype=dtt),
                          torch.tensor(prob.tolist(), dtype=dtt)))
    _in_step()


@pytest.mark.parametrize("n,p", [(10, 0.3), (40, 0.25), (40, 0.75), (1000, 0.5), (3, 0.99)])
def test_binomial_regimes_and_broadcast(n, p):
    # inversion (n p < 10) and BTRS (n p >= 10), on both sides of p = 0.5; prob broadcast
    _seed(17)
    _exact(ember.binomial(ember.full((300,), float(n)), ember.tensor(p)),
           torch.binomial(torch.full((300,), float(n)), torch.tensor(p)))
    _in_step()


def test_binomial_statistics_and_errors():
    ember.manual_seed(1)
    x = _np(ember.binomial(ember.full((20000,), 50.0), ember.full((20000,), 0.3)))
    assert abs(x.mean() - 15) < 0.05 and abs(x.var() / 10.5 - 1) < 0.05
    assert x.min() >= 0 and x.max() <= 50 and np.all(x == np.floor(x))
    with pytest.raises(NotImplementedError, match="binomial_cpu"):
        ember.binomial(ember.ones(2, dtype=ember.float16), ember.ones(2, dtype=ember.float16))


# ------------------------------------------------------------------- in-place samplers

FLOATS = ["float32", "float64", "float16", "bfloat16"]


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("dt", FLOATS)
def test_cauchy_matches_torch(seed, dt):
    de, dtt = _pair(dt)
    _seed(seed)
    _exact(ember.empty(300, dtype=de).cauchy_(0.3, 1.7),
           torch.empty(300, dtype=dtt).cauchy_(0.3, 1.7))
    _exact(ember.empty(5, 7, dtype=de).t().cauchy_(), torch.empty(5, 7, dtype=dtt).t().cauchy_())
    _in_step()


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("dt", FLOATS)
def test_log_normal_matches_torch(seed, dt):
    de, dtt = _pair(dt)
    _seed(seed)
    # odd sizes: the cached second Box-Muller value carries over between calls
    _exact(ember.empty(301, dtype=de).log_normal_(0.37, 1.3),
           torch.empty(301, dtype=dtt).log_normal_(0.37, 1.3))
    _exact(ember.empty(3, 5, dtype=de).log_normal_(), torch.empty(3, 5, dtype=dtt).log_normal_())
    _in_step()


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("dt", FLOATS + ["int64", "int32", "int16", "uint8"])
def test_geometric_matches_torch(seed, dt):
    de, dtt = _pair(dt)
    _seed(seed)
    for p in (0.01, 0.3, 0.9):
        _exact(ember.empty(200, dtype=de).geometric_(p), torch.empty(200, dtype=dtt).geometric_(p))
    _in_step()


def test_inplace_generator_argument():
    ge, gt = ember.Generator().manual_seed(3), torch.Generator().manual_seed(3)
    _exact(ember.empty(50).cauchy_(generator=ge), torch.empty(50).cauchy_(generator=gt))
    _exact(ember.empty(51).log_normal_(generator=ge), torch.empty(51).log_normal_(generator=gt))
    _exact(ember.empty(50).geometric_(0.2, generator=ge),
           torch.empty(50).geometric_(0.2, generator=gt))
    _in_step(ge, gt)


def test_inplace_statistics():
    ember.manual_seed(0)
    g = _np(ember.empty(20000, dtype=ember.float64).geometric_(0.25))
    assert g.min() >= 1 and abs(g.mean() - 4) < 0.1
    ln = _np(ember.empty(20000, dtype=ember.float64).log_normal_(0.0, 0.5))
    assert abs(np.median(np.log(ln))) < 0.02 and abs(np.log(ln).std() - 0.5) < 0.01
    c = _np(ember.empty(20000, dtype=ember.float64).cauchy_(2.0, 3.0))
    assert abs(np.median(c) - 2.0) < 0.15
    assert abs(np.percentile(c, 75) - np.percentile(c, 25) - 6.0) < 0.3


def test_rare_rounding_paths():
    # float32 arithmetic where torch's kernels compute in float: log1pf in the inversion
    # (large geometric jumps), float32 ``count - k + 1`` in BTRS (non-integer counts); and
    # the half cast through float32 (double rounding shows up once in ~10^4 values)
    _seed(0)
    _exact(ember.binomial(ember.full((2000,), 3e4), ember.full((2000,), 3e-4)),
           torch.binomial(torch.full((2000,), 3e4), torch.full((2000,), 3e-4)))
    count = (np.random.default_rng(0).random(3000) * 900 + 100.3).astype(np.float32)
    _exact(ember.binomial(ember.tensor(count), ember.full((3000,), 0.37)),
           torch.binomial(torch.tensor(count), torch.full((3000,), 0.37)))
    _exact(ember.empty(60000, dtype=ember.float16).log_normal_(0.0, 3.0),
           torch.empty(60000, dtype=torch.float16).log_normal_(0.0, 3.0))
    _in_step()


# ------------------------------------------------------------------ gamma gradient

@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_standard_gamma_grad_matches_torch(dt):
    # all three branches: Taylor series (x < 0.8), Rice saddle point (alpha > 8, inside and
    # outside [0.9, 1.1] alpha), bivariate rational approximation
    rng = np.random.default_rng(0)
    alpha = np.concatenate([rng.exponential(1, 200), rng.exponential(30, 200) + 8,
                            [0.01, 8.0, 8.5, 100.0, 3.0]])
    x = np.concatenate([rng.exponential(1, 200) * alpha[:200], rng.gamma(alpha[200:400]),
                        [0.5, 9.0, 8.5, 100.0, 0.79]])
    de, dtt = _pair(dt)
    _exact(ember._standard_gamma_grad(ember.tensor(alpha, dtype=de), ember.tensor(x, dtype=de)),
           torch._standard_gamma_grad(torch.tensor(alpha, dtype=dtt), torch.tensor(x, dtype=dtt)))


@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_standard_gamma_backward_matches_torch(dt):
    de, dtt = _pair(dt)
    _seed(4)
    ae = ember.tensor([0.05, 0.5, 2.0, 9.0, 40.0], dtype=de, requires_grad=True)
    at = torch.tensor([0.05, 0.5, 2.0, 9.0, 40.0], dtype=dtt, requires_grad=True)
    se, st = ember._standard_gamma(ae), torch._standard_gamma(at)
    _exact(se.detach(), st.detach())
    (se * ember.arange(1, 6, dtype=de)).sum().backward()
    (st * torch.arange(1, 6, dtype=dtt)).sum().backward()
    _exact(ae.grad, at.grad)
    _in_step()
