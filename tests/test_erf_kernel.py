"""float32 erf's compiled kernel (ember/_kernels/compiled/erf.py) against SciPy in float64
(correctly rounded but for rare 1-ulp cases) and torch, special values included."""
import numpy as np
import pytest
import scipy.special as sp

import ember
from ember._kernels import compiled

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("scale", [0.3, 2.0, 6.0])
def test_erf_float32_within_one_ulp_of_correct_rounding(scale):
    v = (np.random.default_rng(int(scale * 10)).standard_normal(200_000) * scale).astype(np.float32)
    got = ember.from_numpy(v).erf().numpy()
    want = sp.erf(v.astype(np.float64)).astype(np.float32)
    ulps = np.abs(got.view(np.int32).astype(np.int64) - want.view(np.int32))
    assert ulps.max() <= 1 and (ulps == 0).mean() > 0.9999
    np.testing.assert_allclose(got, torch.from_numpy(v).erf().numpy(), rtol=2e-7, atol=1e-38)


@pytest.mark.parametrize("compiled_on", [True, False])
def test_erf_special_values_and_gradient(compiled_on, monkeypatch):
    if not compiled_on:
        monkeypatch.setitem(compiled._state, "enabled", False)
    s = np.array([0.0, -0.0, 1e-30, 0.5, 1.0, -1.0, 3.99999, 4.0, -4.0, 10.0, np.inf, -np.inf,
                  np.nan, 1e-40] * 400, np.float32)
    got = ember.from_numpy(s).erf().numpy()
    want = torch.from_numpy(s).erf().numpy()
    np.testing.assert_allclose(got, want, rtol=2e-7, atol=1e-45)
    assert np.signbit(got[1]) and np.isnan(got[12])
    x = ember.tensor(np.linspace(-3, 3, 5000), dtype=ember.float32, requires_grad=True)
    x.erf().sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 / np.sqrt(np.pi) * np.exp(-x.detach().numpy() ** 2),
                               rtol=1e-5, atol=1e-7)
