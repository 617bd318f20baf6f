"""Note [activation gradients] (ember/_ops/elementwise.py): tanh's and sigmoid's backward as
ops of their own, bit for bit torch's ``aten::tanh_backward`` / ``aten::sigmoid_backward``
on the same inputs; the composites still serve double backward."""
import numpy as np
import pytest

import ember
from ember._ops import elementwise as E

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_kernels_are_torchs_bits(dtype):
    tdt = getattr(torch, dtype)
    gen = torch.Generator().manual_seed(0)
    y = torch.cat([torch.rand(50000, generator=gen, dtype=tdt) * 2 - 1,
                   torch.tensor([0.0, 1.0, -1.0, -0.0, 0.9999999, float("nan")], dtype=tdt)])
    g = torch.randn(y.numel(), generator=gen, dtype=tdt)
    want = torch.ops.aten.tanh_backward(g, y).numpy()
    np.testing.assert_array_equal(E._tanh_backward_kernel(g.numpy(), y.numpy()), want)
    s = y.abs()
    want = torch.ops.aten.sigmoid_backward(g, s).numpy()
    np.testing.assert_array_equal(E._sigmoid_backward_kernel(g.numpy(), s.numpy()), want)
    zero_d = E._tanh_backward_kernel(np.asarray(g.numpy()[0]), np.asarray(y.numpy()[0]))
    assert np.shape(zero_d) == ()


@pytest.mark.parametrize("fn", ["tanh", "sigmoid"])
def test_backward_records_the_fused_op_and_matches_torch(fn):
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(4, 5, generator=gen, requires_grad=True)
    getattr(torch, fn)(x).backward(torch.ones(4, 5))
    e = ember.tensor(x.detach().numpy(), requires_grad=True)
    y = getattr(ember, fn)(e)
    with ember.autograd.profiler.profile() as prof:
        y.backward(ember.ones(4, 5))
    assert f"aten::{fn}_backward" in [ev.name for ev in prof.function_events]
    # same formula on ember's own outputs (its forward may differ from torch's by an ulp)
    want = getattr(torch.ops.aten, f"{fn}_backward")(torch.ones(4, 5),
                                                    torch.from_numpy(y.detach().numpy()))
    np.testing.assert_array_equal(e.grad.numpy(), want.numpy())
    np.testing.assert_allclose(e.grad.numpy(), x.grad.numpy(), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("fn", ["tanh", "sigmoid"])
def test_double_backward_through_the_composite(fn):
    x = ember.randn(6, dtype=ember.float64, requires_grad=True)
    assert ember.autograd.gradcheck(getattr(ember, fn), (x,))
    assert ember.autograd.gradgradcheck(getattr(ember, fn), (x,))
    g, = ember.autograd.grad(getattr(ember, fn)(x).sum(), x, create_graph=True)
    assert g.grad_fn is not None
