"""torch.masked reductions and normalizations (ember/masked) against torch 2.13."""
import numpy as np
import pytest
import torch

import ember

rng = np.random.default_rng(5)


@pytest.fixture(autouse=True)
def _fresh_rng():
    """Each test draws the same numbers whatever ran before it (xdist reorders tests)."""
    global rng
    rng = np.random.default_rng(5)


def _pair(a):
    return ember.tensor(a), torch.tensor(a)


def _close(e, t, tol=1e-10):
    np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=tol, atol=tol,
                               equal_nan=True)


X = rng.standard_normal((3, 4, 5))
MASK = rng.random((3, 4, 5)) > 0.4
MASK[0, 1, :] = False                       # a fully masked-out slice along dim -1
ROWMASK = rng.random((4, 5)) > 0.3          # broadcast over dim 0

REDUCTIONS = ["sum", "prod", "amax", "amin", "mean", "norm", "var", "std", "logsumexp"]


@pytest.mark.parametrize("name", REDUCTIONS)
@pytest.mark.parametrize("dim", [None, -1, (0, 2)])
@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("mask", [MASK, ROWMASK, None], ids=["full", "broadcast", "none"])
def test_reductions_match_torch(name, dim, keepdim, mask):
    (ex, tx) = _pair(X)
    kw = {"keepdim": keepdim}
    if mask is not None:
        kw_e, kw_t = dict(kw, mask=ember.tensor(mask)), dict(kw, mask=torch.tensor(mask))
    else:
        kw_e, kw_t = kw, kw
    args = (2.0, dim) if name == "norm" else (dim,)           # norm(input, ord, dim)
    _close(getattr(ember.masked, name)(ex, *args, **kw_e),
           getattr(torch.masked, name)(tx, *args, **kw_t))


@pytest.mark.parametrize("name", ["argmax", "argmin", "median"])
def test_single_dim_reductions_match_torch(name):
    (ex, tx) = _pair(X)
    e = getattr(ember.masked, name)(ex, -1, mask=ember.tensor(MASK))
    t = getattr(torch.masked, name)(tx, -1, mask=torch.tensor(MASK))
    _close(e, t)
    assert e.dtype == ember.float64           # like torch, indices come back as input dtype


@pytest.mark.parametrize("name", ["softmax", "log_softmax", "softmin", "cumsum", "cumprod"])
@pytest.mark.parametrize("dim", [0, -1])
def test_normalizations_match_torch(name, dim):
    (ex, tx) = _pair(X)
    e = getattr(ember.masked, name)(ex, dim, mask=ember.tensor(MASK))
    t = getattr(torch.masked, name)(tx, dim, mask=torch.tensor(MASK))
    _close(e, t)


def test_normalize_and_logaddexp_match_torch():
    (ex, tx) = _pair(X)
    _close(ember.masked.normalize(ex, 2.0, -1, mask=ember.tensor(MASK)),
           torch.masked.normalize(tx, 2.0, -1, mask=torch.tensor(MASK)))
    Y = rng.standard_normal(X.shape)
    (ey, ty) = _pair(Y)
    m2 = rng.random(X.shape) > 0.5
    _close(ember.masked.logaddexp(ex, ey, input_mask=ember.tensor(MASK),
                                  other_mask=ember.tensor(m2)),
           torch.masked.logaddexp(tx, ty, input_mask=torch.tensor(MASK),
                                  other_mask=torch.tensor(m2)))


def test_integer_inputs_promote_like_torch():
    a = rng.integers(-5, 5, (4, 6)).astype(np.int32)
    m = rng.random((4, 6)) > 0.5
    ea, ta = _pair(a)
    for name in ("sum", "prod", "amax", "amin"):
        e = getattr(ember.masked, name)(ea, 1, mask=ember.tensor(m))
        t = getattr(torch.masked, name)(ta, 1, mask=torch.tensor(m))
        assert str(e.dtype) == str(t.dtype)
        np.testing.assert_array_equal(e.numpy(), t.numpy())
    _close(ember.masked.var(ea, 1, mask=ember.tensor(m)),
           torch.masked.var(ta, 1, mask=torch.tensor(m)), 1e-6)


def test_gradients_reach_only_kept_elements():
    for name, args in (("sum", (-1,)), ("mean", (-1,)), ("softmax", (-1,)), ("var", (-1,)),
                       ("amax", (-1,)), ("norm", (2.0, -1))):
        ex = ember.tensor(X, requires_grad=True)
        tx = torch.tensor(X, requires_grad=True)
        e = getattr(ember.masked, name)(ex, *args, mask=ember.tensor(MASK))
        t = getattr(torch.masked, name)(tx, *args, mask=torch.tensor(MASK))
        g = rng.standard_normal(tuple(t.shape))
        keep = np.isfinite(t.detach().numpy())
        g = np.where(keep, g, 0.0)
        e.backward(ember.tensor(g))
        t.backward(torch.tensor(g))
        _close(ex.grad, tx.grad, 1e-9)
        partly_kept = MASK.any(axis=-1, keepdims=True) & ~MASK   # a fully masked slice
        assert (ex.grad.numpy()[partly_kept] == 0).all()          # may be NaN, as in torch


def test_errors_match_torch():
    ei, ti = _pair(np.arange(6).reshape(2, 3))
    for kw in ({}, {"dtype": (ember.int32, torch.int32)}):
        ke = {k: v[0] for k, v in kw.items()}
        kt = {k: v[1] for k, v in kw.items()}
        with pytest.raises(ValueError) as te:
            torch.masked.mean(ti, **kt)
        with pytest.raises(ValueError) as ee:
            ember.masked.mean(ei, **ke)
        assert str(ee.value) == str(te.value)
    with pytest.raises(ValueError, match="fully masked out rows"):
        ember.masked.median(ei, 1, mask=ember.tensor([[True, True, True], [False] * 3]))
    ex = ember.tensor(X)
    with pytest.raises(RuntimeError, match="appears multiple times"):
        ember.masked.sum(ex, (1, 1))
    with pytest.raises(IndexError, match="Dimension out of range"):
        ember.masked.sum(ex, 3)
    with pytest.raises(IndexError, match="dimensionality higher"):
        ember.masked.sum(ember.tensor(X[0]), mask=ember.tensor(MASK))
