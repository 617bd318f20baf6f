"""NumPy float32 training batch norm by rows (sample, channel) over ember's threads
(ember/_kernels/nn_norm.py): the forward bit for bit with torch (Note [float32 batch-norm
statistics]), the backward the same bits as the general path, any thread count."""
import numpy as np
import pytest

import ember
from ember._kernels import nn_norm

torch = pytest.importorskip("torch")

SHAPES = [(16, 8, 28, 28), (3, 5, 7, 2), (2, 3, 40000), (4, 2, 3, 3, 2), (1, 1, 1, 3)]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("affine", [True, False])
def test_forward_bit_for_bit_with_torch(shape, affine):
    rng = np.random.default_rng(len(shape))
    x = (rng.standard_normal(shape) * 3 + 2).astype(np.float32)
    w = rng.standard_normal(shape[1]).astype(np.float32) if affine else None
    b = rng.standard_normal(shape[1]).astype(np.float32) if affine else None
    y, mean, var = nn_norm._batch_norm_f32(x, w, b, 1e-5)
    t = [None if a is None else torch.tensor(a) for a in (x, w, b)]
    want = torch.nn.functional.batch_norm(t[0], None, None, t[1], t[2], training=True)
    np.testing.assert_array_equal(y, want.numpy())
    np.testing.assert_array_equal(mean, t[0].transpose(0, 1).reshape(shape[1], -1).double()
                                  .mean(1).float().numpy())
    # the strided form (non-contiguous inputs) computes the same
    for a, s in zip((y, mean, var), nn_norm._batch_norm_f32_strided(x, w, b, 1e-5)):
        np.testing.assert_array_equal(a, s)


@pytest.mark.parametrize("shape", SHAPES[:4])
def test_backward_rows_match_general_path_at_any_thread_count(shape, monkeypatch):
    rng = np.random.default_rng(sum(shape))
    x = (rng.standard_normal(shape) * 2 - 1).astype(np.float32)
    g = rng.standard_normal(shape).astype(np.float32)
    w = rng.standard_normal(shape[1]).astype(np.float32)
    _, mean, var = nn_norm._batch_norm_f32(x, w, None, 1e-5)
    with monkeypatch.context() as m:
        m.setattr(nn_norm, "_rows_f32", lambda *a: False)
        m.setattr(nn_norm, "_compiled", lambda *a: None)
        want = nn_norm.batch_norm_backward(g, x, w, mean, var, True, 1e-5)
    old = ember.get_num_threads()
    try:
        for n in (1, 2, 3):
            ember.set_num_threads(n)
            got = nn_norm._batch_norm_backward_f32(g, x, w, mean, var, 1e-5)
            for a, b in zip(got, want):
                assert a.dtype == b.dtype == np.float32
                np.testing.assert_array_equal(a, b)
    finally:
        ember.set_num_threads(old)


def test_channels_last_and_module_without_compiled_kernels(monkeypatch):
    """The module's training step with the compiled kernels off, channels-last input
    included: values and gradients against torch."""
    from ember._kernels import compiled
    monkeypatch.setitem(compiled._state, "enabled", False)
    rng = np.random.default_rng(5)
    x = rng.standard_normal((6, 4, 9, 9)).astype(np.float32)
    g = rng.standard_normal(x.shape).astype(np.float32)
    res = []
    for lib in (torch, ember):
        lib.manual_seed(0)
        bn = lib.nn.BatchNorm2d(4)
        xx = lib.tensor(x).contiguous(memory_format=lib.channels_last).requires_grad_()
        y = bn(xx)
        y.backward(lib.tensor(g))
        res.append([y.detach().numpy(), xx.grad.numpy(), bn.weight.grad.numpy(),
                    bn.running_var.numpy()])
    for a, b in zip(*res):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
