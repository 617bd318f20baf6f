"""nll_loss's sum and mean in torch's order (Note [nll cascade] in ember/_kernels/nn_norm.py):
the same log-probabilities give torch's loss bit for bit in every floating dtype, with class
weights and ignored rows, and the same gradient."""
import math

import numpy as np
import pytest
import torch

import ember
from ember._kernels.nn_norm import nll_cascade_sum

DTYPES = ["float32", "float64", "bfloat16", "float16"]


def _losses(lib, logp, target, weight, dtype):
    lp = lib.from_numpy(logp).to(getattr(lib, dtype)).requires_grad_()
    kw = {} if weight is None else {"weight": lib.from_numpy(weight).to(getattr(lib, dtype))}
    t = lib.from_numpy(target)
    F = lib.nn.functional
    total = F.nll_loss(lp, t, reduction="sum", **kw)
    mean = F.nll_loss(lp, t, **kw)
    mean.backward()
    return (total.double().item(), mean.double().item(),
            lp.grad.double().numpy())


def _same(a, b):
    return a == b or (math.isnan(a) and math.isnan(b))


def _check(x, target, weight, dtype):
    """Both libraries get torch's log-probabilities of ``x`` (their log_softmax bits
    differ): the same sum, mean and gradient, bit for bit."""
    logp = torch.nn.functional.log_softmax(
        torch.from_numpy(x).to(getattr(torch, dtype)), 1).double().numpy()
    want = _losses(torch, logp, target, weight, dtype)
    got = _losses(ember, logp, target, weight, dtype)
    assert _same(got[0], want[0]) and _same(got[1], want[1]), (got[:2], want[:2])
    np.testing.assert_array_equal(got[2], want[2])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [1, 5, 16, 17, 100, 257, 1000, 4097])
@pytest.mark.parametrize("ignored", [0.0, 0.3])
@pytest.mark.parametrize("weighted", [False, True])
def test_nll_loss_sum_and_mean_are_torchs_bits(dtype, n, ignored, weighted):
    rng = np.random.default_rng(n * 7 + int(weighted))
    x = rng.standard_normal((n, 10)).astype(np.float32) * 3
    target = rng.integers(0, 10, n)
    target[rng.random(n) < ignored] = -100
    weight = rng.random(10).astype(np.float32) + 0.5 if weighted else None
    _check(x, target, weight, dtype)


def test_half_precision_sum_does_not_stall():
    # a running bfloat16 sum of 1000 losses near 5 stops growing at a few thousand
    v = np.full(1000, 5.0625, np.float32)
    import ml_dtypes
    total = nll_cascade_sum(v.astype(ml_dtypes.bfloat16))
    want = torch.nn.functional.nll_loss(
        -torch.from_numpy(v).to(torch.bfloat16)[:, None], torch.zeros(1000, dtype=torch.long),
        reduction="sum")
    assert float(total) == want.float().item()
    assert abs(float(total) - 5062.5) < 40


def test_cross_entropy_reduces_its_rows_in_the_same_order():
    # the fused cross_entropy's rows reduced as nll_loss reduces them
    rng = np.random.default_rng(0)
    x = ember.from_numpy(rng.standard_normal((1000, 30)).astype(np.float32) * 3)
    t = rng.integers(0, 30, 1000)
    t[::7] = -100
    t = ember.from_numpy(t)
    F = ember.nn.functional
    rows = F.cross_entropy(x, t, reduction="none").numpy()
    kept = t.numpy() != -100
    assert F.cross_entropy(x, t, reduction="sum").item() == float(nll_cascade_sum(rows, kept))
    assert F.cross_entropy(x, t).item() == float(
        np.float32(nll_cascade_sum(rows, kept) / np.float32(kept.sum())))
    assert F.cross_entropy(x, t, reduction="sum").item() != float(np.add.reduce(rows))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(4, 5, 8, 8), (1, 5, 17), (3, 5, 2, 3, 4)])
@pytest.mark.parametrize("weighted", [False, True])
def test_nll_loss_over_maps_is_torchs_bits(dtype, shape, weighted):
    rng = np.random.default_rng(len(shape) + int(weighted))
    x = rng.standard_normal(shape).astype(np.float32)
    tshape = (shape[0],) + shape[2:]
    target = rng.integers(0, 5, tshape)
    target[rng.random(tshape) < 0.2] = -100
    weight = rng.random(5).astype(np.float32) + 0.5 if weighted else None
    _check(x, target, weight, dtype)
