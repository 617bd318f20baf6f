"""Shared helper: run an ember function and its torch twin on the same inputs, compare the
outputs and the gradients of every floating input."""
import numpy as np
import torch

import ember


def compare(fe, ft, arrays, atol=1e-7, rtol=1e-6, seed=0, check_indices=True):
    rng = np.random.default_rng(seed)
    es = [ember.tensor(a, requires_grad=True) if a is not None else None for a in arrays]
    ts = [torch.tensor(a, requires_grad=True) if a is not None else None for a in arrays]
    e, t = fe(*es), ft(*ts)
    e0 = e[0] if isinstance(e, tuple) else e
    t0 = t[0] if isinstance(t, tuple) else t
    assert tuple(e0.shape) == tuple(t0.shape)
    assert str(e0.dtype) == str(t0.dtype)
    np.testing.assert_allclose(e0.detach().numpy(), t0.detach().numpy(), atol=atol, rtol=rtol)
    if isinstance(e, tuple) and check_indices:
        np.testing.assert_array_equal(e[1].numpy(), t[1].numpy())
    go = rng.standard_normal(tuple(t0.shape)).astype(arrays[0].dtype)
    e0.backward(ember.tensor(go))
    t0.backward(torch.tensor(go))
    for a, b in zip(es, ts):
        if a is not None:
            np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), atol=atol, rtol=rtol)
