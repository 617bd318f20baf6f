"""The compiled (numba) float32 GELU kernels against float64 torch and the NumPy path:
value, gradient and the training pair, on the tails where the exponential underflows."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("numba")

from ember._kernels import nn_activation as K          # noqa: E402
from ember._kernels.compiled import gelu as G          # noqa: E402

_EDGES = [-100, -20, -13.5, -13.2, -13.1, -10, -1e-30, -0.0, 0, 1e-30, 5, 13.2, 20, 100]


def _x():
    x = np.concatenate([np.linspace(-14, 14, 20001), _EDGES, [np.nan]])
    return x.astype(np.float32)


def _exact(x):
    t = torch.from_numpy(x).double()
    return (torch.nn.functional.gelu(t).numpy(),
            torch.ops.aten.gelu_backward(torch.ones_like(t), t).numpy())


def test_compiled_gelu_value_and_derivative_against_float64():
    x = _x()
    value, deriv = _exact(x)
    out, factor = np.empty_like(x), np.empty_like(x)
    G.gelu_train(x, out, factor)
    np.testing.assert_allclose(out, value, rtol=0, atol=5e-7, equal_nan=True)
    np.testing.assert_allclose(factor, deriv, rtol=0, atol=5e-7, equal_nan=True)
    only = np.empty_like(x)
    G.gelu(x, only)
    np.testing.assert_array_equal(only, out)
    grad = np.linspace(-2, 2, x.size).astype(np.float32)
    G.gelu_backward(x, grad, only)
    np.testing.assert_array_equal(only, factor * grad)
    assert np.signbit(out[x < -13.2]).all() and (out[x < -13.2] == 0).all()  # -0.0 as torch


def test_compiled_gelu_matches_numpy_path_and_uses_it():
    x = _x()[:-1]
    value, factor = np.empty_like(x), np.empty_like(x)
    G.gelu_train(x, value, factor)
    with np.errstate(all="ignore"):
        cdf, gauss = K._cdf_and_gauss(x)
    np.testing.assert_allclose(value, cdf * x, rtol=1e-6, atol=3e-7)
    if K._compiled() is not None:
        got, got_factor = K.gelu_train(x[:20000].reshape(4, 5000))
        np.testing.assert_array_equal(got.reshape(-1), value[:20000])
        np.testing.assert_array_equal(got_factor.reshape(-1), factor[:20000])
