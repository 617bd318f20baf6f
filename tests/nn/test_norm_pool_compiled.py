"""Compiled (numba) batch norm and max-pool backward (ember/_kernels/compiled/norm_pool.py)
against NumPy's path and torch: values and gradients, the thread split bit for bit, the
switch (``compiled.disable``)."""
import numpy as np
import pytest

import ember
from ember._kernels import compiled, nn_conv, nn_norm

torch = pytest.importorskip("torch")
pytest.importorskip("numba")


def _close(got, want):
    want = np.asarray(want, np.float64)
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5 * max(np.abs(want).max(), 1))


def _bn(lib, x, w, b, g):
    C = x.shape[1]
    xx, ww, bb = (lib.tensor(a, requires_grad=True) for a in (x, w, b))
    rm, rv = lib.zeros(C), lib.ones(C)
    y = lib.nn.functional.batch_norm(xx, rm, rv, ww, bb, training=True, momentum=0.3)
    y.backward(lib.tensor(g))
    return [t.detach().numpy() for t in (y, xx.grad, ww.grad, bb.grad, rm, rv)]


@pytest.mark.parametrize("shape", [(16, 5), (4, 3, 7), (6, 8, 9, 10), (2, 3, 4, 5, 6)])
def test_batch_norm_compiled_vs_numpy_vs_torch(shape):
    rng = np.random.default_rng(len(shape))
    x = (rng.standard_normal(shape) * 3 + 5).astype(np.float32)     # offset mean
    w, b = (rng.standard_normal(shape[1]).astype(np.float32) for _ in range(2))
    g = rng.standard_normal(shape).astype(np.float32)
    want = _bn(torch, x, w, b, g)
    calls = []
    real = compiled.norm_pool_kernels
    try:
        compiled.norm_pool_kernels = lambda: calls.append(1) or real()
        got = _bn(ember, x, w, b, g)
    finally:
        compiled.norm_pool_kernels = real
    assert len(calls) == 2                          # forward and backward compiled
    compiled.disable()
    try:
        numpy_path = _bn(ember, x, w, b, g)
    finally:
        compiled.enable()
    for a, n, t in zip(got, numpy_path, want):
        assert a.dtype == np.float32
        _close(a, t)
        _close(n, t)


def test_batch_norm_without_affine_and_split_bit_for_bit():
    """No weight/bias; the channel split over threads does not change a bit."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((8, 64, 24, 24)).astype(np.float32)
    g = rng.standard_normal(x.shape).astype(np.float32)
    old = ember.get_num_threads()
    outs = []
    try:
        for n in (1, 2, 3):
            ember.set_num_threads(n)
            y, m, v = nn_norm.batch_norm(x, None, None, None, None, True, 0.1, 1e-5)
            outs.append((y, m, v) + nn_norm.batch_norm_backward(g, x, None, m, v, True, 1e-5))
    finally:
        ember.set_num_threads(old)
    for other in outs[1:]:
        assert all(np.array_equal(a, b) for a, b in zip(outs[0], other))
    t = torch.tensor(x, requires_grad=True)
    ty = torch.nn.functional.batch_norm(t, None, None, training=True)
    ty.backward(torch.tensor(g))
    _close(outs[0][0], ty.detach().numpy())
    _close(outs[0][3], t.grad.numpy())


@pytest.mark.parametrize("k,s,p", [(2, 2, 0), (3, 2, 1), (3, 1, 1)])
def test_max_pool_backward_compiled_vs_torch(k, s, p):
    """Scatter of the gradient (overlapping windows accumulate), split over threads."""
    rng = np.random.default_rng(k + s)
    x = rng.standard_normal((4, 6, 15, 14)).astype(np.float32)
    x[0, 0, :3, :3] = 1.0                           # ties: the first position wins
    g = None
    res = []
    old = ember.get_num_threads()
    try:
        for lib, n in ((torch, 1), (ember, 1), (ember, 2)):
            if lib is ember:
                ember.set_num_threads(n)
            t = lib.tensor(x, requires_grad=True)
            y = lib.nn.functional.max_pool2d(t, k, s, p)
            g = rng.standard_normal(tuple(y.shape)).astype(np.float32) if g is None else g
            y.backward(lib.tensor(g))
            res.append(t.grad.numpy())
    finally:
        ember.set_num_threads(old)
    _close(res[1], res[0])
    assert np.array_equal(res[1], res[2])


def test_max_pool_backward_bad_index_raises():
    g = np.ones((1, 2, 2), np.float32)
    idx = np.array([[[0, 1], [2, 99]]])
    with pytest.raises(IndexError, match="max_pool_backward"):
        nn_conv.max_pool_backward(g, idx, (1, 3, 3), 2, False)


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="needs fork")
def test_split_pool_after_fork():
    """A forked child gets a pool of its own (the parent's threads do not exist there)."""
    import os
    from ember._kernels import split
    old = ember.get_num_threads()
    ember.set_num_threads(2)
    try:
        assert split.run_rows(lambda a, b: (a, b), 4, 1 << 20) == [(0, 2), (2, 4)]
        pid = os.fork()
        if pid == 0:                                # child: must not hang
            ok = split.run_rows(lambda a, b: (a, b), 4, 1 << 20) == [(0, 2), (2, 4)]
            os._exit(0 if ok else 1)
        import time
        deadline = time.monotonic() + 30
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done or time.monotonic() > deadline:
                break
            time.sleep(0.01)
        if not done:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
    finally:
        ember.set_num_threads(old)
    assert done, "the forked child hung on the parent's pool"
    assert os.waitstatus_to_exitcode(status) == 0
