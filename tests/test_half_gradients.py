"""Half-type gradients of tanh and sigmoid as torch's CPU kernels compute them: float32 from
the half values, rounded once (tanh for float16 and bfloat16, sigmoid for bfloat16); the
float16 sigmoid gradient rounds each step, as torch's does."""
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
