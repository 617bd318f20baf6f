"""Regressions found running pytorch/examples programs on ember (``python -m ember.run``),
each checked against torch."""
import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def _both(fn, *arrays, requires_grad=()):
    """``fn(lib, *tensors)`` under torch and ember; tensors listed in ``requires_grad`` track
    gradients. Returns (torch result, ember result, torch tensors, ember tensors)."""
    out = []
    for lib in (torch, ember):
        ts = [lib.tensor(a, requires_grad=i in requires_grad) for i, a in enumerate(arrays)]
        out.append((fn(lib, *ts), ts))
    return out[0][0], out[1][0], out[0][1], out[1][1]


def _close(t, e, **kw):
    np.testing.assert_allclose(e.detach().numpy() if hasattr(e, "detach") else e,
                               t.detach().numpy() if hasattr(t, "detach") else t, **kw)


def test_bce_gradient_finite_at_saturated_input():
    # siamese_network: sigmoid outputs of exactly 0/1 made BCELoss's gradient NaN
    x = np.array([1.0, 0.0, 0.5, 0.3, 1e-30], np.float32)
    t = np.array([0.0, 1.0, 1.0, 0.2, 0.5], np.float32)

    def run(lib, x, t):
        loss = lib.nn.BCELoss()(x, t)
        gx, gt = lib.autograd.grad(loss, (x, t))
        return loss, gx, gt
    (tl, tgx, tgt), (el, egx, egt), _, _ = _both(run, x, t, requires_grad=(0, 1))
    _close(tl, el, rtol=1e-6)
    _close(tgx, egx, rtol=1e-6)
    _close(tgt, egt, rtol=1e-6)          # +-inf where x is 0 or 1, as torch


def test_bce_double_backward_interior():
    x = np.array([0.2, 0.5, 0.7], np.float64)
    t = np.array([0.0, 1.0, 0.4], np.float64)
    w = np.array([1.0, 2.0, 0.5], np.float64)

    def run(lib, x, t, w):
        loss = lib.nn.functional.binary_cross_entropy(x, t, weight=w, reduction="sum")
        gx, = lib.autograd.grad(loss, x, create_graph=True)
        return lib.autograd.grad(gx.sum(), (x, t))
    (tx, tt), (ex, et), _, _ = _both(run, x, t, w, requires_grad=(0, 1))
    _close(tx, ex, rtol=1e-10)
    _close(tt, et, rtol=1e-10)
