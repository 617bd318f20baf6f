"""Average pooling without padding (the `_avg_pool` record pair) against torch: values,
gradients, double backward, vmap; the padded/ceil/divisor cases keep the composite."""
import numpy as np
import pytest
import torch

import ember
import ember.nn.functional as F

CASES = [  # (input shape, kernel, stride)
    ((2, 3, 8, 8), 2, None), ((2, 3, 9, 7), 3, 2), ((1, 2, 10, 10), (3, 2), (1, 2)),
    ((3, 8, 8), 2, 1), ((2, 4, 12), 4, 3), ((1, 2, 6, 6, 6), 2, 2)]


def _fn(lib, nd):
    return getattr(lib.nn.functional, f"avg_pool{nd}d")


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape,k,s", CASES)
def test_values_and_gradients_match_torch(shape, k, s, dtype):
    nd = {(3, 8, 8): 2, (2, 4, 12): 1}.get(shape, len(shape) - 2)     # unbatched cases
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape).astype(dtype)
    ex, tx = ember.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    ey, ty = _fn(ember, nd)(ex, k, s), _fn(torch, nd)(tx, k, s)
    assert "avg_pool" in ey.grad_fn.op.name                 # the record pair, named as torch
    assert ey.grad_fn.name() == ty.grad_fn.name()         # (1-d: SqueezeBackward1)
    tol = 1e-6 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(ey.detach().numpy(), ty.detach().numpy(), rtol=tol, atol=tol)
    g = rng.standard_normal(ty.shape).astype(dtype)
    ey.backward(ember.tensor(g))
    ty.backward(torch.tensor(g))
    np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), rtol=tol, atol=tol)


@pytest.mark.parametrize("shape,k,s", CASES[:3])
def test_gradcheck_and_gradgradcheck(shape, k, s):
    x = ember.tensor(np.random.default_rng(1).standard_normal(shape), requires_grad=True)
    f = lambda t: F.avg_pool2d(t, k, s)
    assert ember.autograd.gradcheck(f, (x,))
    assert ember.autograd.gradgradcheck(f, (x,))


def test_vmap_matches_loop_without_fallback():
    from ember.func import vmap, grad
    from ember.func import _vmap as V
    x = ember.tensor(np.random.default_rng(2).standard_normal((4, 3, 8, 8)))
    V.FALLBACK_COUNTS.clear()
    got = vmap(lambda t: F.avg_pool2d(t, 2))(x)
    want = ember.stack([F.avg_pool2d(x[i], 2) for i in range(4)])
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12)
    gg = vmap(grad(lambda t: F.avg_pool2d(t, 3, 2).square().sum()))(x)
    gw = ember.stack([grad(lambda t: F.avg_pool2d(t, 3, 2).square().sum())(x[i])
                      for i in range(4)])
    np.testing.assert_allclose(gg.numpy(), gw.numpy(), rtol=1e-12)
    assert not V.FALLBACK_COUNTS


@pytest.mark.parametrize("kw", [dict(padding=1), dict(ceil_mode=True), dict(divisor_override=3),
                                dict(padding=1, count_include_pad=False)])
def test_other_cases_still_match_torch(kw):
    x = np.random.default_rng(3).standard_normal((2, 3, 7, 7)).astype(np.float32)
    got = F.avg_pool2d(ember.tensor(x), 3, 2, **kw).numpy()
    want = torch.nn.functional.avg_pool2d(torch.tensor(x), 3, 2, **kw).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
