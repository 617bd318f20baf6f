"""Half-type gradients of tanh, sigmoid and silu as torch's CPU kernels compute them: float32
from the half values, rounded once (tanh and silu for float16 and bfloat16, sigmoid for
bfloat16); the float16 sigmoid gradient rounds each step, as torch's does."""
import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("fn", ["tanh", "sigmoid"])
def test_half_gradient_bits(dtype, fn):
    rng = np.random.default_rng(0)
    x0 = rng.standard_normal(20000).astype(np.float32) * 3
    g0 = rng.standard_normal(20000).astype(np.float32)
    grads = []
    for lib in (ember, torch):
        x = lib.from_numpy(x0.copy()).to(getattr(lib, dtype)).requires_grad_(True)
        getattr(x, fn)().backward(lib.from_numpy(g0.copy()).to(getattr(lib, dtype)))
        grads.append(x.grad.float().numpy())
    np.testing.assert_array_equal(grads[0], grads[1])


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_silu_gradient(dtype):
    rng = np.random.default_rng(1)
    x0 = rng.standard_normal(20000).astype(np.float32) * 3
    g0 = rng.standard_normal(20000).astype(np.float32)
    grads = []
    for lib in (ember, torch):
        x = lib.from_numpy(x0.copy()).to(getattr(lib, dtype)).requires_grad_(True)
        lib.nn.functional.silu(x).backward(lib.from_numpy(g0.copy()).to(getattr(lib, dtype)))
        grads.append(x.grad.float().numpy())
    assert (grads[0] != grads[1]).sum() <= 8       # (float16: a few in 20000 an ulp apart;
                                                   # each op rounded: thousands)


def test_silu_double_backward_still_composes():
    x = ember.tensor([0.5, -1.0, 2.0], dtype=ember.bfloat16, requires_grad=True)
    g, = ember.autograd.grad(ember.nn.functional.silu(x).sum(), x, create_graph=True)
    gg, = ember.autograd.grad(g.sum(), x)
    t = torch.tensor([0.5, -1.0, 2.0], dtype=torch.bfloat16, requires_grad=True)
    tg, = torch.autograd.grad(torch.nn.functional.silu(t).sum(), t, create_graph=True)
    tgg, = torch.autograd.grad(tg.sum(), t)
    np.testing.assert_allclose(gg.float().numpy(), tgg.float().numpy(), rtol=0.02, atol=0.02)
