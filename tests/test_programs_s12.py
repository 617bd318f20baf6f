"""Regressions found diffing everyday programs (round 7, session 12: classic training loops,
tensor idioms, printing, nn.utils, the module API, dtype promotion, autocast and complex
programs) run under torch and under ``python -m ember.run``; each checked against torch."""
import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def _np(t):
    return t.detach().numpy()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("n", [4096, 5000, 20000, 100003, (1 << 20) + 77])
def test_in_place_add_and_sub_with_alpha_round_once_on_blas_sizes(dtype, n):
    # from 4096 contiguous elements ``p.add_(g, alpha=-lr)`` goes to BLAS axpy, whose scalar
    # tail (the end of each thread's range) multiplies and adds: a few elements in a
    # thousand an ulp from torch's fused multiply-add (Note [axpy rounds once])
    rng = np.random.default_rng(n)
    y = rng.standard_normal(n).astype(dtype)
    x = (rng.standard_normal(n) * 3).astype(dtype)
    for alpha in (-0.0137, 0.37, 3):
        for name in ("add_", "sub_"):
            got = getattr(ember.tensor(y), name)(ember.tensor(x), alpha=alpha)
            want = getattr(torch.tensor(y), name)(torch.tensor(x), alpha=alpha)
            np.testing.assert_array_equal(_np(got), _np(want))


def test_in_place_add_with_alpha_keeps_blas_edge_cases():
    # alpha 0 with an infinite operand is NaN (BLAS would skip it); views and overlaps
    for lib in (ember, torch):
        y = lib.ones(5000)
        x = lib.ones(5000)
        x[3] = float("inf")
        y.add_(x, alpha=0.0)
        assert bool(y[3].isnan()) and float(y[0]) == 1.0
    y, x = np.random.default_rng(0).standard_normal((2, 9000)).astype(np.float32)
    got, want = ember.tensor(y), torch.tensor(y)
    got[::2].add_(ember.tensor(x)[::2], alpha=0.3)
    want[::2].add_(torch.tensor(x)[::2], alpha=0.3)
    np.testing.assert_array_equal(_np(got), _np(want))
