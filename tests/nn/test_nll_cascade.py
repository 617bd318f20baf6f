"""Cross entropy of small float32 logits on the compiled row kernels
(ember/_kernels/nn_fused.py ``_cross_entropy_small``, compiled/softmax.py): the row-by-row
nll cascade against the NumPy one (Note [nll cascade]), the small path's values and
gradients bit for bit against the NumPy path, and rows or targets it hands back."""
import numpy as np
import pytest

import ember
from ember._kernels import nn_fused, nn_norm
from helpers import compiled_kernels, torch

pytest.importorskip("numba")


@pytest.fixture
def numba_on():
    yield from compiled_kernels("numba")


def _S(n):
    return 1 << max(4, (n - 1).bit_length() // nn_norm._NLL_LEVELS)


@pytest.mark.parametrize("n", [1, 2, 15, 16, 17, 33, 256, 257, 4097, 70000])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("ignored", ["none", "some", "first", "multiples"])
def test_compiled_cascade_is_the_numpy_cascade(numba_on, n, dtype, ignored):
    from ember._kernels import compiled
    rows = compiled.module("softmax")
    rng = np.random.default_rng(n)
    v = (rng.standard_normal(n) * 3 + 1).astype(dtype)
    t = rng.integers(0, 5, n)
    if ignored == "some":
        t[rng.random(n) < 0.3] = -100
    elif ignored == "first":
        t[0] = -100
    elif ignored == "multiples":
        t[::_S(n)] = -100
    kept = t != -100
    v[~kept] = 0
    total, count = rows.nll_cascade(v, t, -100, _S(n))
    want = nn_norm.nll_cascade_sum(v, None if kept.all() else kept)
    assert count == kept.sum()
    assert dtype(total).tobytes() == np.asarray(want, dtype).tobytes()


def _both_paths(fn, monkeypatch):
    """fn() on the small compiled path, then with it switched off (the NumPy path)."""
    fast = fn()
    with monkeypatch.context() as m:
        m.setattr(nn_fused, "_cross_entropy_small", lambda *a: None)
        m.setattr(nn_fused, "_cross_entropy_backward_small", lambda *a: None)
        slow = fn()
    return fast, slow


@pytest.mark.parametrize("shape", [(1, 1), (128, 10), (3, 700), (1000, 7)])
@pytest.mark.parametrize("reduction", [0, 1, 2])
@pytest.mark.parametrize("ignore", [None, "some", "all"])
def test_small_path_bits_are_the_numpy_paths(numba_on, monkeypatch, shape, reduction, ignore):
    rng = np.random.default_rng(sum(shape) + reduction)
    x = (rng.standard_normal(shape) * 4).astype(np.float32)
    t = rng.integers(0, shape[1], shape[0])
    if ignore == "some":
        t[rng.random(shape[0]) < 0.4] = -1
    elif ignore == "all":
        t[:] = -1
    g = np.float32(0.75) if reduction else rng.standard_normal(shape[0]).astype(np.float32)
    g_lse = rng.standard_normal(shape[0]).astype(np.float32)

    def run():
        loss, lse, ws = nn_fused.cross_entropy(x, t, reduction, -1)
        grads = [nn_fused.cross_entropy_backward(g, gl, x, t, lse, reduction, -1, ws)
                 for gl in (None, np.float32(0), g_lse)]
        return [loss, lse, ws] + grads

    fast, slow = _both_paths(run, monkeypatch)
    for a, b in zip(fast, slow):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_array_equal(np.atleast_1d(a).view(np.uint8),
                                      np.atleast_1d(b).view(np.uint8))


@pytest.mark.parametrize("bad", ["nan", "inf", "-inf"])
def test_rows_the_small_path_hands_back_give_torchs_values(numba_on, bad):
    x = np.random.default_rng(1).standard_normal((6, 5)).astype(np.float32)
    x[2, 3] = float(bad)
    t = np.array([0, 1, 3, 3, 4, 2])
    for reduction in ("none", "mean"):
        xe, xt = ember.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
        le = ember.nn.functional.cross_entropy(xe, ember.tensor(t), reduction=reduction)
        lt = torch.nn.functional.cross_entropy(xt, torch.tensor(t), reduction=reduction)
        np.testing.assert_allclose(le.detach().numpy(), lt.detach().numpy(), rtol=1e-6)
        le.sum().backward()
        lt.sum().backward()
        np.testing.assert_allclose(xe.grad.numpy(), xt.grad.numpy(), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("target", [5, -2])
def test_out_of_range_targets_raise_as_torch(numba_on, target):
    x = np.zeros((4, 5), np.float32)
    t = np.array([0, target, 1, 2])
    with pytest.raises(Exception) as te:
        torch.nn.functional.cross_entropy(torch.tensor(x), torch.tensor(t))
    with pytest.raises(type(te.value)):
        ember.nn.functional.cross_entropy(ember.tensor(x), ember.tensor(t))
