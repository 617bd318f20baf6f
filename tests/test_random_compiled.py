"""The compiled ``bernoulli_(p)`` pass (ember/_kernels/compiled/uniform.py) draws torch's masks,
the same as the NumPy path, for every float dtype and size around its threshold."""
import numpy as np
import pytest

import ember
from ember._kernels import compiled

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("shape", [(4095,), (4096,), (16, 64, 130), (7, 3, 1000)])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_bernoulli_scalar_matches_torch_on_both_paths(shape, dtype, monkeypatch):
    draws = {}
    for path in ("compiled", "numpy"):
        if path == "numpy":
            monkeypatch.setitem(compiled._state, "enabled", False)
        ember.manual_seed(11)
        first = ember.empty(shape, dtype=getattr(ember, dtype)).bernoulli_(0.37)
        second = ember.nn.functional.dropout(ember.ones(shape, dtype=getattr(ember, dtype)), 0.2)
        draws[path] = first.numpy(), second.numpy()
    torch.manual_seed(11)
    want = (torch.empty(shape, dtype=getattr(torch, dtype)).bernoulli_(0.37).numpy(),
            torch.nn.functional.dropout(torch.ones(shape, dtype=getattr(torch, dtype)), 0.2).numpy())
    for got in draws.values():
        for g, w in zip(got, want):
            assert g.dtype == w.dtype
            np.testing.assert_array_equal(g, w)
    assert 0.3 < want[0].mean() < 0.45


@pytest.mark.parametrize("n", [16, 100, 4095, 4096, 70001])
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_normal_transform_matches_torch_on_both_paths(n, dtype, monkeypatch):
    # the compiled Box-Muller (compiled/normal.py) and the NumPy one give torch's bits
    draws = {}
    for path in ("compiled", "numpy"):
        if path == "numpy":
            monkeypatch.setitem(compiled._state, "enabled", False)
        ember.manual_seed(5)
        draws[path] = ember.randn(n, dtype=getattr(ember, dtype)).numpy()
    torch.manual_seed(5)
    want = torch.randn(n, dtype=getattr(torch, dtype)).numpy()
    for got in draws.values():
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got.view(np.uint16 if dtype == "float16" else np.uint32),
                                      want.view(np.uint16 if dtype == "float16" else np.uint32))


def test_normal_transform_kernel_is_the_numpy_transform_on_edge_uniforms():
    from ember._kernels import random as R
    kernels = compiled.module("normal")
    if kernels is None:
        pytest.skip("numba is not installed")
    rng = np.random.default_rng(3)
    u = rng.random(16 * 500).astype(np.float32)
    u[:16] = [0, 2 ** -24, 0.5, 1 - 2 ** -24, 0.25, 0.75, 0.125, 1e-7,
              0, 0.5, 1 - 2 ** -24, 0.25, 0.75, 0.999, 1e-7, 0.3]
    d = u.reshape(-1, 16)
    one, minus_two, two_pi = R._BOX_MULLER[np.float32]
    radius = np.sqrt(minus_two * R._log_ps(one - d[:, :8]))
    sin, cos = R._sincos_ps(two_pi * d[:, 8:])
    want = np.concatenate([radius * cos, radius * sin], axis=1)
    got = np.empty_like(d)
    kernels.box_muller16(d, got)
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
