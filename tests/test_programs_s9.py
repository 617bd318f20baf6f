"""Regressions found diffing everyday PyTorch programs (round 4, session 9) run under torch
and under ``python -m ember.run``; each checked against torch."""
import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def _np(t):
    return t.detach().float().numpy() if t.is_floating_point() else t.detach().numpy()


def _func_results(lib):
    from_ = lib.func
    w = lib.tensor([1., 2.], requires_grad=True)
    x = lib.tensor([0.5, 0.3])
    out = {
        "grad": from_.grad(lambda x: (x * w).sin().sum())(x),
        "grad_free_of_w": from_.grad(lambda x: (x * x).sum() + w.sum())(x),
        "jacrev": from_.jacrev(lambda x: x * w)(x),
        "hessian": from_.hessian(lambda x: (x ** 3 * w).sum())(x),
        "vmap_grad": from_.vmap(from_.grad(lambda x: (x * w).sum()))(x.expand(3, 2)),
    }
    o, t = from_.jvp(lambda x: (x * w).sin(), (x,), (lib.ones(2),))
    out["jvp_out"], out["jvp_tangent"] = o, t
    out["vjp_out"] = from_.vjp(lambda x: x * x + w, x)[0]
    t.sum().backward()
    out["w.grad"] = w.grad
    return out


def test_func_transforms_stay_differentiable_wrt_closed_over_tensors():
    # a transform of a function closing over a tensor that requires grad (a module's
    # parameters) returns results with a graph to it, like torch; ember detached them
    # whenever the transform's own inputs did not require grad
    got, want = _func_results(ember), _func_results(torch)
    for k in want:
        assert got[k].requires_grad == want[k].requires_grad, k
        np.testing.assert_allclose(_np(got[k]), _np(want[k]), rtol=1e-5, atol=1e-6)
