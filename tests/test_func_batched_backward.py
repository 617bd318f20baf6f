"""jacrev runs its rows of the identity through one batched backward (the forward once):
results equal torch.func's, for convolutions (grouped, strided, dilated, with bias) whose
fused backward takes the ``_conv_backward`` batching rule, under an outer vmap too."""
import numpy as np
import pytest

import ember
from ember.func import FALLBACK_COUNTS

torch = pytest.importorskip("torch")

rng = np.random.default_rng(0)
W1 = rng.standard_normal((6, 2, 3, 3)).astype(np.float32)
B1 = rng.standard_normal(6).astype(np.float32)
W2 = rng.standard_normal((4, 3, 2, 2)).astype(np.float32)       # groups=2
X = rng.standard_normal((5, 2, 7, 7)).astype(np.float32)


def _f(lib):
    F = lib.nn.functional

    def f(p, xi):
        h = F.conv2d(xi.unsqueeze(0), p["w1"], p["b1"], padding=1, stride=2).tanh()
        h = F.conv2d(h, p["w2"], None, groups=2, dilation=2)
        return h.flatten(1)[0, :3] * xi.sum()
    return f


def _leaves(tree, out):
    if isinstance(tree, dict):
        for k in sorted(tree):
            _leaves(tree[k], out)
    elif isinstance(tree, (tuple, list)):
        for v in tree:
            _leaves(v, out)
    else:
        out.append(tree.detach().numpy())
    return out


@pytest.mark.parametrize("argnums", [0, 1, (0, 1)])
@pytest.mark.parametrize("outer_vmap", [True, False])
def test_jacrev_of_convolutions_matches_torch(argnums, outer_vmap):
    got = []
    for lib, fn in ((ember, ember.func), (torch, torch.func)):
        p = {"w1": lib.tensor(W1), "b1": lib.tensor(B1), "w2": lib.tensor(W2)}
        jac = fn.jacrev(_f(lib), argnums=argnums)
        x = lib.tensor(X)
        out = fn.vmap(jac, (None, 0))(p, x) if outer_vmap else jac(p, x[0])
        got.append(_leaves(out, []))
    for a, b in zip(*got):
        assert a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4)


def test_the_forward_runs_once_and_the_conv_backward_is_batched():
    calls = []
    FALLBACK_COUNTS.clear()

    def f(w, x):
        calls.append(1)
        return ember.nn.functional.conv2d(x, w).sum((0, 2, 3))       # 4 outputs

    w, x = ember.randn(4, 3, 3, 3), ember.randn(2, 3, 6, 6)
    jac = ember.func.jacrev(f)(w, x)
    assert len(calls) == 1 and "_conv_backward" not in FALLBACK_COUNTS
    ref = torch.func.jacrev(lambda w, x: torch.nn.functional.conv2d(x, w).sum((0, 2, 3)))(
        torch.from_numpy(w.numpy()), torch.from_numpy(x.numpy()))
    np.testing.assert_allclose(jac.numpy(), ref.numpy(), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("name", ["sum_to_size", "slice", "slice_ellipsis", "slice_none"])
def test_slicing_and_sum_to_size_batch_without_loops(name):
    fns = {"sum_to_size": lambda t: t.sum_to_size(3, 1), "slice": lambda t: t[1:, ::2],
           "slice_ellipsis": lambda t: t[..., 0], "slice_none": lambda t: t[None, 1]}
    f = fns[name]
    x = rng.standard_normal((4, 3, 5)).astype(np.float32)
    FALLBACK_COUNTS.clear()
    ev = ember.func.vmap(f)(ember.tensor(x))
    eg = ember.func.vmap(ember.func.grad(lambda t: (f(t) ** 2).sum()))(ember.tensor(x))
    assert not FALLBACK_COUNTS
    tv = torch.vmap(f)(torch.tensor(x))
    tg = torch.func.vmap(torch.func.grad(lambda t: (f(t) ** 2).sum()))(torch.tensor(x))
    np.testing.assert_allclose(ev.numpy(), tv.numpy(), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(eg.numpy(), tg.numpy(), rtol=1e-6, atol=1e-6)
