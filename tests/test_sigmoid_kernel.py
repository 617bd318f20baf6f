"""sigmoid's NumPy kernel (1 / (1 + exp(-x)), in place) against torch over the whole range,
every float dtype: saturation to 0 and 1, tails, half types rounded once."""
import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("dtype,tol", [("float32", 3e-7), ("float64", 1e-15), ("float16", 0),
                                       ("bfloat16", 0), ("complex64", 1e-6)])
def test_sigmoid_matches_torch(dtype, tol):
    x = np.concatenate([np.linspace(-120, 120, 4801), [-1e30, 1e30, 0.0]])
    if dtype.startswith("complex"):
        x = x[np.abs(x) < 20] * (1 + 0.25j)
    got = ember.tensor(x, dtype=getattr(ember, dtype)).sigmoid()
    want = torch.tensor(x, dtype=getattr(torch, dtype)).sigmoid()
    assert str(got.dtype) == str(want.dtype)
    wide = "complex128" if dtype.startswith("complex") else "float64"
    g = got.to(getattr(ember, wide)).numpy()
    w = want.to(getattr(torch, wide)).numpy()
    np.testing.assert_allclose(g, w, rtol=tol, atol=tol * 1e-30 if tol else 0)


def test_sigmoid_gradient_and_scalars():
    x = ember.tensor([-3.0, 0.5, 40.0], dtype=ember.float64, requires_grad=True)
    assert ember.autograd.gradcheck(ember.sigmoid, (x,))
    assert ember.tensor(-1000.0).sigmoid().item() == 0.0
    assert ember.tensor(1000.0).sigmoid().item() == 1.0
