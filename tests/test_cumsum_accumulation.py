"""cumsum accumulates as torch's CPU kernel (float32 in float64, half types in float32, each
prefix rounded once): bit for bit against torch on both paths, forward and backward."""
import numpy as np
import pytest

import ember
from ember._kernels import compiled

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("compiled_on", [True, False])
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "float64", "int32"])
@pytest.mark.parametrize("shape,dim", [((1 << 17,), 0), ((300, 400), 1), ((300, 400), 0),
                                       ((6, 50, 7), 1), ((5,), 0)])
def test_cumsum_bits_match_torch(shape, dim, dtype, compiled_on, monkeypatch):
    if not compiled_on:
        monkeypatch.setitem(compiled._state, "enabled", False)
    v = (np.random.default_rng(sum(shape)).standard_normal(shape) * 3).astype(np.float32)
    got = ember.from_numpy(v).to(getattr(ember, dtype)).cumsum(dim)
    want = torch.from_numpy(v).to(getattr(torch, dtype)).cumsum(dim)
    assert str(got.dtype) == str(want.dtype)
    np.testing.assert_array_equal(got.double().numpy(), want.double().numpy())


def test_cumsum_backward_bits_match_torch():
    rng = np.random.default_rng(7)
    v = rng.standard_normal((200, 3000)).astype(np.float32)
    g = rng.standard_normal((200, 3000)).astype(np.float32)
    e = ember.from_numpy(v).requires_grad_()
    t = torch.from_numpy(v).requires_grad_()
    ge = ember.autograd.grad(e.cumsum(1), e, ember.from_numpy(g))[0]
    gt = torch.autograd.grad(t.cumsum(1), t, torch.from_numpy(g))[0]
    np.testing.assert_array_equal(ge.numpy(), gt.numpy())


@pytest.mark.parametrize("op", ["cumprod", "logcumsumexp"])
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "float64"])
def test_other_scans_accumulate_as_torch(op, dtype):
    rng = np.random.default_rng(9)
    long = (1 + rng.standard_normal(3000) * 1e-3).astype(np.float32)
    rows = rng.standard_normal((40, 300)).astype(np.float32)
    for x, dim in ((long, 0), (rows, 1)):
        got = getattr(ember.from_numpy(x).to(getattr(ember, dtype)), op)(dim)
        want = getattr(torch.from_numpy(x).to(getattr(torch, dtype)), op)(dim)
        np.testing.assert_array_equal(got.double().numpy(), want.double().numpy())
