"""The compiled float32 batch-norm kernels (ember/_kernels/compiled/norm_pool.py, the
``fast`` extra) round the statistics and output as torch does (Note [float32 batch-norm
statistics] in ember/_kernels/nn_norm.py): outputs, running means and gradients of
torch's bits on inputs with a spatial size above 1."""
import numpy as np
import pytest
import torch

import ember
from ember._kernels import compiled


@pytest.fixture
def compiled_kernels():
    if compiled.norm_pool_kernels() is None:
        pytest.skip("numba is not installed")


@pytest.mark.parametrize("shape", [(1, 3, 8), (2, 3, 4), (8, 4, 5, 5), (3, 4, 100),
                                   (4, 2, 3, 3, 2), (16, 8, 14, 14)])
def test_compiled_batch_norm_training_bit_for_bit(shape, compiled_kernels):
    rng = np.random.default_rng(sum(shape) + 1)
    C = shape[1]
    for trial in range(4):
        x = (rng.standard_normal(shape) * rng.uniform(0.1, 10) + rng.uniform(-5, 5)).astype(
            np.float32)
        w = rng.standard_normal(C).astype(np.float32) if trial % 3 else None
        b = rng.standard_normal(C).astype(np.float32) if trial % 2 else None
        rm0 = rng.standard_normal(C).astype(np.float32)
        outs = []
        for L in (torch, ember):
            rm, rv = L.tensor(rm0), L.ones(C)
            y = L.nn.functional.batch_norm(
                L.tensor(x), rm, rv, None if w is None else L.tensor(w),
                None if b is None else L.tensor(b), training=True, momentum=0.1, eps=1e-5)
            outs.append((y.numpy(), rm.numpy(), rv.numpy()))
        (ty, trm, trv), (ey, erm, erv) = outs
        np.testing.assert_array_equal(ey, ty)
        np.testing.assert_array_equal(erm, trm)
        np.testing.assert_allclose(erv, trv, rtol=2e-7)


def test_compiled_batch_norm_backward_close_to_torch(compiled_kernels):
    rng = np.random.default_rng(5)
    x = (rng.standard_normal((16, 8, 14, 14)) * 2 + 1).astype(np.float32)
    g = rng.standard_normal(x.shape).astype(np.float32)
    grads = []
    for L in (torch, ember):
        bn = L.nn.BatchNorm2d(8)
        xt = L.tensor(x, requires_grad=True)
        bn(xt).backward(L.tensor(g))
        grads.append([xt.grad.numpy(), bn.weight.grad.numpy(), bn.bias.grad.numpy()])
    for e, t in zip(grads[1], grads[0]):
        np.testing.assert_allclose(e, t, rtol=1e-4, atol=1e-5)
