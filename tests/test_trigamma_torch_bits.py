"""polygamma(1, x) (trigamma) through the op records uses torch's recurrence and series
(Note [torch's trigamma] in ember/_kernels/special.py): torch's bits on nearly every value,
float32 and float64, and torch's reflection below 1/2."""
import numpy as np
import pytest
import torch

import ember


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("lo, hi", [(0.5, 30.0), (-6.0, 0.5)])
def test_polygamma_1_matches_torch_bits(dtype, lo, hi):
    x = np.random.default_rng(7).uniform(lo, hi, 4000).astype(dtype)
    want = torch.polygamma(1, torch.from_numpy(x)).numpy()
    for got in (ember.polygamma(1, ember.from_numpy(x)).numpy(),
                ember.from_numpy(x).polygamma(1).numpy(),
                ember.special.polygamma(1, ember.from_numpy(x)).numpy()):
        assert got.dtype == want.dtype
        same = np.mean(got == want)
        assert same >= (0.995 if lo >= 0.5 else 0.98), same
        np.testing.assert_allclose(got, want, rtol=1e-5 if dtype == np.float32 else 1e-12)


def test_polygamma_1_poles_and_half_precision():
    x = torch.tensor([0.0, -1.0, -2.0, 1.0, 2.5])
    got = ember.polygamma(1, ember.tensor(x.tolist())).numpy()
    want = torch.polygamma(1, x).numpy()
    np.testing.assert_array_equal(np.isinf(got), np.isinf(want))
    np.testing.assert_allclose(got[np.isfinite(want)], want[np.isfinite(want)], rtol=1e-6)
    h = ember.polygamma(1, ember.tensor([0.75, 3.0], dtype=ember.float16))
    assert h.dtype == ember.float16
    np.testing.assert_allclose(h.float().numpy(), torch.polygamma(
        1, torch.tensor([0.75, 3.0], dtype=torch.float16)).float().numpy(), rtol=1e-3)
