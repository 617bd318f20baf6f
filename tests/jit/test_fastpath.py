"""The array fast path (ember/jit/_fastpath.py): same results as the dispatcher path,
taken only when nothing needs the dispatcher, and left for the normal path otherwise."""
from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.nn as nn
from ember.jit import _fastpath


class LSTMLoop(nn.Module):
    def __init__(self, hidden=8):
        super().__init__()
        self.w_ih = nn.Parameter(ember.randn(4 * hidden, hidden) * 0.1)
        self.w_hh = nn.Parameter(ember.randn(4 * hidden, hidden) * 0.1)
        self.b = nn.Parameter(ember.zeros(4 * hidden))

    def forward(self, xs, h, c):
        for t in range(xs.size(0)):
            gates = ember.mm(xs[t], self.w_ih.t()) + ember.mm(h, self.w_hh.t()) + self.b
            i, f, g, o = gates.chunk(4, 1)
            c = ember.sigmoid(f) * c + ember.sigmoid(i) * ember.tanh(g)
            h = ember.sigmoid(o) * ember.tanh(c)
        return h, c


def _mlp():
    return nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Dropout(0.2), nn.Linear(16, 3)).eval()


def _args(dtype=ember.float32):
    g = np.random.RandomState(0)
    return (ember.tensor(g.randn(5, 2, 8), dtype=dtype), ember.zeros(2, 8, dtype=dtype),
            ember.zeros(2, 8, dtype=dtype))


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64])
def test_lstm_array_path_matches_eager(dtype):
    ember.manual_seed(0)
    m = LSTMLoop().to(dtype)
    s = ember.jit.script(m)
    fn = s._ct.methods["forward"]
    assert _fastpath.array_variant(fn, np.dtype(dtype.np if hasattr(dtype, "np") else
                                                 ember.empty(0, dtype=dtype).numpy().dtype))
    with ember.no_grad():
        h, c = s(*_args(dtype))
        he, ce = m(*_args(dtype))
    assert h.dtype == dtype
    np.testing.assert_allclose(h.numpy(), he.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(c.numpy(), ce.numpy(), rtol=1e-5, atol=1e-6)


def test_mlp_array_path_and_grad_path_agree():
    ember.manual_seed(0)
    m = _mlp()
    s = ember.jit.script(m)
    x = ember.randn(4, 6)
    with ember.no_grad():
        fast = s(x)
    slow = s(x)                            # parameters require grad: the dispatcher path
    assert slow.grad_fn is not None and fast.grad_fn is None
    np.testing.assert_allclose(fast.numpy(), slow.detach().numpy(), rtol=1e-6, atol=1e-6)
    slow.sum().backward()
    assert m[0].weight.grad is not None


def test_modes_take_the_dispatcher_path():
    m = _mlp()
    s = ember.jit.script(m)
    x = ember.randn(2, 6)
    with ember.no_grad(), ember.profiler.profile() as prof:
        s(x)
    names = {e.key for e in prof.key_averages()}
    assert any("linear" in n or "addmm" in n or "mm" in n for n in names)


def test_errors_come_from_the_normal_path():
    s = ember.jit.script(_mlp())
    with ember.no_grad(), pytest.raises(RuntimeError, match="cannot be multiplied"):
        s(ember.randn(2, 5))


def test_integer_inputs_are_not_specialized():
    def f(x, y):
        return x + y * 2
    s = ember.jit.script(f)
    a = ember.arange(4)
    with ember.no_grad():
        r = s(a, a)
    assert r.dtype == ember.int64 and r.tolist() == [0, 3, 6, 9]


def _mlp_fn(x, w):
    return (x @ w).relu().sum()


def test_vmap_grad_and_autocast_run_through_scripted_code():
    s = ember.jit.script(_mlp_fn)
    x, w = ember.randn(5, 3, 4), ember.randn(4, 2)
    assert ember.allclose(ember.func.vmap(s, in_dims=(0, None))(x, w),
                          ember.func.vmap(_mlp_fn, in_dims=(0, None))(x, w))
    assert ember.allclose(ember.func.grad(s)(x[0], w), ember.func.grad(_mlp_fn)(x[0], w))
    with ember.autocast("cpu", dtype=ember.bfloat16):
        y, y_eager = s(x[0], w), _mlp_fn(x[0], w)
    assert y.dtype == y_eager.dtype == ember.bfloat16
    assert ember.equal(y, y_eager)
