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
