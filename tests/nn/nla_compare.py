"""Helpers for the nn tests: run the same computation in ember and torch."""
import numpy as np

import ember
from helpers import torch


def pair(a, requires_grad=None):
    a = np.asarray(a)
    rg = a.dtype.kind == "f" if requires_grad is None else requires_grad
    e = ember.tensor(a.copy(), requires_grad=rg)
    t = torch.tensor(a.copy(), requires_grad=rg)
    return e, t


def conv(v, lib):
    if isinstance(v, np.ndarray):
        return ember.tensor(v.copy()) if lib == "e" else torch.tensor(v.copy())
    return v


def compare(efn, tfn, inputs, kwargs=None, atol=1e-10, rtol=1e-7, grad=True, seed=0):
    """Forward values, then gradients of a random cotangent, for every float input."""
    kwargs = kwargs or {}
    E, T = [], []
    for a in inputs:
        if isinstance(a, np.ndarray):
            e, t = pair(a, None if grad else False)
        else:
            e = t = a
        E.append(e)
        T.append(t)
    ekw = {k: conv(v, "e") for k, v in kwargs.items()}
    tkw = {k: conv(v, "t") for k, v in kwargs.items()}
    eo, to = efn(*E, **ekw), tfn(*T, **tkw)
    np.testing.assert_allclose(eo.detach().numpy(), to.detach().numpy(), atol=atol, rtol=rtol)
    assert tuple(eo.shape) == tuple(to.shape)
    assert str(eo.dtype) == str(to.dtype)
    if grad and to.requires_grad:
        g = np.random.default_rng(seed).standard_normal(tuple(to.shape))
        eo.backward(ember.tensor(g, dtype=eo.dtype))
        to.backward(torch.tensor(g, dtype=to.dtype))
        for e, t in zip(E, T):
            if isinstance(t, torch.Tensor) and t.requires_grad:
                assert (e.grad is None) == (t.grad is None)
                if t.grad is not None:
                    np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), atol=atol,
                                               rtol=rtol)
    return eo, to


def gradcheck(fn, inputs, gradgrad=True):
    """float64 gradcheck (and gradgradcheck) of ``fn`` at the float arrays in ``inputs``."""
    ts = [ember.tensor(a, requires_grad=True) if isinstance(a, np.ndarray) and a.dtype.kind == "f"
          else (ember.tensor(a) if isinstance(a, np.ndarray) else a) for a in inputs]
    diff = [t for t in ts if isinstance(t, ember.Tensor) and t.requires_grad]

    def f(*d):
        it = iter(d)
        args = [next(it) if isinstance(t, ember.Tensor) and t.requires_grad else t for t in ts]
        return fn(*args)
    assert ember.autograd.gradcheck(f, tuple(diff))
    if gradgrad:
        assert ember.autograd.gradgradcheck(f, tuple(diff))
