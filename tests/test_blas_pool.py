"""Compiled kernels on NumPy's OpenBLAS threads (ember/_kernels/blas_pool.py, Note [one pool]):
the same values as the single-threaded kernels and the NumPy paths, the same bits at any
thread count, and the NumPy/ember-pool routes when the pool is off."""
import numpy as np
import pytest

import ember
from ember._kernels import blas_pool, nn_activation, nn_fused, nn_norm
from ember._kernels import attention as attention_kernels

pytest.importorskip("numba")
pool = blas_pool.kernels()
pytestmark = pytest.mark.skipif(pool is None, reason="OpenBLAS's pool is not usable here")


@pytest.fixture(autouse=True)
def free_mode():
    """The pool serves only until onnxruntime's pool runs (sticky for the process); an
    earlier test in this worker may have run it, so each test starts before that point."""
    from ember._kernels import split
    saved = split._own_pools_ran[0]
    split._own_pools_ran[0] = False
    yield
    split._own_pools_ran[0] = saved


@pytest.fixture
def threads():
    """Set ember's thread count for one test (restored after)."""
    from ember._threads import _settings
    saved = _settings["threads"]
    yield lambda n: ember.set_num_threads(n)
    _settings["threads"] = saved


@pytest.fixture
def no_pool(monkeypatch):
    monkeypatch.setitem(blas_pool._state, "ok", False)


def test_probe_parts_cover_the_range_once():
    for n, t in ((1, 2), (7, 2), (1001, 2), (64, 1)):
        out = np.full(n, -1, np.int64)
        blas_pool._call(blas_pool._state["fn"], pool.probe.address,
                        blas_pool.context(out, n), n, t)
        np.testing.assert_array_equal(out, np.arange(n))


def test_gelu_pool_equals_the_one_thread_kernel(threads, no_pool):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((16, 64, 512)).astype(np.float32) * 4
    g = rng.standard_normal(x.shape).astype(np.float32)
    ref = (nn_activation.gelu_exact(x), nn_activation.gelu_backward(g, x),
           nn_activation.gelu_train(x))
    blas_pool._state["ok"] = True
    for n in (1, 2):
        threads(n)
        got = (nn_activation.gelu_exact(x), nn_activation.gelu_backward(g, x),
               nn_activation.gelu_train(x))
        for a, b in zip(got[:2] + got[2], ref[:2] + ref[2]):
            np.testing.assert_array_equal(a, b)


def test_gelu_values_against_scipy():
    from scipy.special import erf
    x = np.linspace(-10, 10, 200001).astype(np.float32)
    want = 0.5 * x.astype(np.float64) * (1 + erf(x.astype(np.float64) / np.sqrt(2)))
    np.testing.assert_allclose(nn_activation.gelu_exact(x), want, rtol=2e-6, atol=5e-7)  # A&S 7.1.26: |error| < 4.2e-7


def test_layer_norm_pool_matches_numpy_and_any_thread_count(threads, monkeypatch):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((1000, 96)).astype(np.float32) * 3 + 1
    w = rng.standard_normal(96).astype(np.float32)
    b = rng.standard_normal(96).astype(np.float32)
    g = rng.standard_normal(x.shape).astype(np.float32)
    got = {}
    for n in (1, 2):
        threads(n)
        got[n] = (nn_norm.layer_norm(x, (96,), w, b, 1e-5),
                  *nn_norm.layer_norm_backward(g, x, (96,), w, 1e-5))
    for a, b2 in zip(got[1], got[2]):
        np.testing.assert_array_equal(a, b2)
    # float64 reference
    xd, gd = x.astype(np.float64), g.astype(np.float64)
    mean, var = xd.mean(1, keepdims=True), xd.var(1, keepdims=True)
    xhat = (xd - mean) / np.sqrt(var + 1e-5)
    np.testing.assert_allclose(got[2][0], xhat * w + b, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got[2][2], (gd * xhat).sum(0), rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(got[2][3], gd.sum(0), rtol=1e-5, atol=1e-4)
    gy = gd * w
    gx = (gy - gy.mean(1, keepdims=True) - xhat * (gy * xhat).mean(1, keepdims=True)) / \
        np.sqrt(var + 1e-5)
    np.testing.assert_allclose(got[2][1], gx, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("causal", [False, True])
def test_attention_rows_on_the_pool_equal_the_ember_pool(causal, no_pool):
    rng = np.random.default_rng(2)
    q, k, v = (rng.standard_normal((4, 4, 64, 32)).astype(np.float32) for _ in range(3))
    go = rng.standard_normal((4, 4, 64, 32)).astype(np.float32)
    ref_out, ref_p = attention_kernels.sdpa_forward(q, k, v, None, causal, 0.2)
    ref_grads = attention_kernels.sdpa_backward(go, None, q, k, v, ref_p, 0.2, None,
                                                (True, True, True, False))
    blas_pool._state["ok"] = True
    out, p = attention_kernels.sdpa_forward(q, k, v, None, causal, 0.2)
    grads = attention_kernels.sdpa_backward(go, None, q, k, v, p, 0.2, None,
                                            (True, True, True, False))
    np.testing.assert_array_equal(out, ref_out)
    np.testing.assert_array_equal(p, ref_p)
    for a, b in zip(grads[:3], ref_grads[:3]):
        np.testing.assert_array_equal(a, b)


def test_cross_entropy_pool_against_float64(threads):
    rng = np.random.default_rng(3)
    x = (rng.standard_normal((300, 1000)) * 5).astype(np.float32)
    t = rng.integers(0, 1000, 300)
    xd = x.astype(np.float64)
    lse = np.log(np.exp(xd - xd.max(1, keepdims=True)).sum(1)) + xd.max(1)
    want = (lse - xd[np.arange(300), t]).mean()
    soft = np.exp(xd - lse[:, None]) / 300
    soft[np.arange(300), t] -= 1 / 300
    for n in (1, 2):
        threads(n)
        loss, got_lse, ws = nn_fused.cross_entropy(x, t)
        np.testing.assert_allclose(loss, want, rtol=1e-6)
        np.testing.assert_allclose(got_lse, lse, rtol=1e-6)
        grad = nn_fused.cross_entropy_backward(np.float32(1), np.float32(0), x, t, got_lse,
                                               1, -100, ws)
        np.testing.assert_allclose(grad, soft, rtol=1e-5, atol=1e-9)


def test_cross_entropy_rows_with_infinities_take_the_numpy_path():
    x = np.zeros((3, 4), np.float32)
    x[1, 2] = np.inf
    x[2, 0] = np.nan
    loss, lse, ws = nn_fused.cross_entropy(x, np.array([0, 1, 2]), 0)
    assert np.isnan(loss[1]) and np.isnan(loss[2])
    np.testing.assert_allclose(loss[0], np.log(4), rtol=1e-6)


def test_pool_off_by_environment(monkeypatch):
    monkeypatch.setenv("EMBER_NO_BLAS_POOL", "1")
    assert blas_pool._setup() is None


def test_training_step_same_with_and_without_the_pool(monkeypatch):
    """A GPT-style block's loss and gradients agree (float32 rounding) pool on and off."""
    torch_like = ember

    def run():
        torch_like.manual_seed(0)
        nn = torch_like.nn
        m = nn.Sequential(nn.LayerNorm(64), nn.Linear(64, 256), nn.GELU(), nn.Linear(256, 50))
        x = torch_like.randn(128, 64)
        y = torch_like.randint(0, 50, (128,))
        loss = nn.functional.cross_entropy(m(x), y)
        loss.backward()
        return [loss.detach().numpy()] + [p.grad.numpy() for p in m.parameters()]
    on = run()
    monkeypatch.setitem(blas_pool._state, "ok", False)
    off = run()
    for a, b in zip(on, off):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_relu_add_and_relu_grad_on_the_pool_equal_numpy(threads):
    from ember._kernels import elementwise, fast_elementwise
    rng = np.random.default_rng(4)
    x = rng.standard_normal((8, 64, 32, 32)).astype(np.float32)
    x.reshape(-1)[:6] = [-0.0, 0.0, np.nan, -np.inf, np.inf, -1e-45]
    y = rng.standard_normal(x.shape).astype(np.float32)
    for n in (1, 2):
        threads(n)
        r = fast_elementwise.pooled_relu(x)
        assert r is not None
        np.testing.assert_array_equal(r, np.where(x < 0, np.float32(0), x))
        assert np.signbit(r.reshape(-1)[0])                  # -0.0 kept, as torch's relu
        s = fast_elementwise.pooled_add(x, y)
        np.testing.assert_array_equal(s, np.add(x, y))
        t = elementwise.threshold_backward(y, x, 0.0)
        np.testing.assert_array_equal(t, np.where(x <= 0, np.float32(0), y))
    # small, broadcasting or float64 operands keep NumPy's route
    assert fast_elementwise.pooled_add(x, y[:1]) is None
    assert fast_elementwise.pooled_add(x[:1], y[:1]) is None
    assert fast_elementwise.pooled_relu(x.astype(np.float64)) is None


def test_relu_matches_torch_on_signed_zero():
    torch = pytest.importorskip("torch")
    vals = [-0.0, 0.0, float("nan"), -1.0, 2.0] * 40000
    np.testing.assert_array_equal(ember.relu(ember.tensor(vals)).numpy().view(np.int32),
                                  torch.relu(torch.tensor(vals)).numpy().view(np.int32))


def test_pool_not_used_once_onnxruntime_ran(monkeypatch):
    from ember._kernels import split
    split._own_pools_ran[0] = True          # (free_mode restores it)
    assert blas_pool.kernels() is None


def test_add_splits_over_embers_threads_once_onnxruntime_ran(monkeypatch, threads):
    from ember._kernels import fast_elementwise, split
    split._own_pools_ran[0] = True          # (free_mode restores it)
    rng = np.random.default_rng(5)
    for dt in (np.float32, np.float64):
        a = rng.standard_normal((3, 300, 301)).astype(dt)
        b = rng.standard_normal((3, 300, 301)).astype(dt)
        for n in (1, 2):
            threads(n)
            np.testing.assert_array_equal(fast_elementwise.pooled_add(a, b), a + b)
    assert fast_elementwise.pooled_add(a, b[:1]) is None


@pytest.mark.parametrize("log", [False, True])
def test_softmax_last_dim_on_the_pool_against_float64_and_torch(log, threads):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(6)
    x = (rng.standard_normal((300, 500)) * 4).astype(np.float32)
    x[3, ::7] = -np.inf                                   # masked positions stay exact zeros
    g = rng.standard_normal(x.shape).astype(np.float32)
    tx = torch.tensor(x, requires_grad=True)
    ty = (torch.log_softmax if log else torch.softmax)(tx, -1)
    ty.backward(torch.tensor(g))
    for n in (1, 2):
        threads(n)
        ex = ember.tensor(x, requires_grad=True)
        ey = (ember.log_softmax if log else ember.softmax)(ex, -1)
        ey.backward(ember.tensor(g))
        np.testing.assert_allclose(ey.detach().numpy(), ty.detach().numpy(), rtol=2e-6,
                                   atol=2e-6 if log else 2e-7)   # (x - max) - lse rounds
        np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), rtol=1e-5, atol=5e-6)
    from ember._kernels import fast_elementwise
    assert fast_elementwise.pooled_softmax(x, log) is not None      # the pool served it


def test_softmax_rows_with_nan_or_inf_match_torch():
    torch = pytest.importorskip("torch")
    x = np.zeros((400, 400), np.float32)
    x[1, 5] = np.nan
    x[2, 7] = np.inf
    x[3] = -np.inf
    for name in ("softmax", "log_softmax"):
        want = getattr(torch, name)(torch.tensor(x), -1).numpy()
        got = getattr(ember, name)(ember.tensor(x), -1).numpy()
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        np.testing.assert_allclose(got[~np.isnan(got)], want[~np.isnan(want)], rtol=1e-6)


def test_pool_from_several_python_threads_at_once():
    import threading
    rng = np.random.default_rng(7)
    xs = [rng.standard_normal(1 << 18).astype(np.float32) for _ in range(4)]
    want = [nn_activation.gelu_exact(x) for x in xs]
    errors = []

    def work(i):
        try:
            for _ in range(20):
                np.testing.assert_array_equal(nn_activation.gelu_exact(xs[i]), want[i])
        except Exception as e:          # (reported below)
            errors.append(e)
    ts = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(60)
    assert not errors and not any(t.is_alive() for t in ts)


def test_pool_in_a_forked_child():
    import multiprocessing as mp
    if "fork" not in mp.get_all_start_methods():
        pytest.skip("no fork")
    x = np.random.default_rng(8).standard_normal(1 << 18).astype(np.float32)
    want = nn_activation.gelu_exact(x)            # the parent's pool has run
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    p = ctx.Process(target=_gelu_into_queue, args=(x, q))
    p.start()
    try:
        got = q.get(timeout=60)
        p.join(60)
    finally:
        if p.is_alive():
            p.kill()
    np.testing.assert_array_equal(got, want)
    assert p.exitcode == 0


def _gelu_into_queue(x, q):
    q.put(nn_activation.gelu_exact(x))


def test_linear_bias_on_the_pool_equals_numpy(threads, monkeypatch):
    from ember._kernels import blas as blas_kernels, split
    rng = np.random.default_rng(9)
    x = rng.standard_normal((1024, 128)).astype(np.float32)
    w = rng.standard_normal((384, 128)).astype(np.float32)
    b = rng.standard_normal(384).astype(np.float32)
    want = x @ w.T
    want += b
    for held in (False, True):
        split._own_pools_ran[0] = held      # (free_mode restores it)
        for n in (1, 2):
            threads(n)
            np.testing.assert_allclose(blas_kernels.linear(x, w, b), want, rtol=1e-5,
                                       atol=1e-4)
            got = np.zeros((1024, 384), np.float32)
            from ember._kernels.fast_elementwise import add_bias_
            assert add_bias_(got, b)
            np.testing.assert_array_equal(got, np.broadcast_to(b, got.shape))


def test_column_sums_on_the_pool(threads):
    from ember._kernels import fast_elementwise
    rng = np.random.default_rng(10)
    a = rng.standard_normal((1000, 384)).astype(np.float32)
    want = a.astype(np.float64).sum(0)
    got = {}
    for n in (1, 2):
        threads(n)
        got[n] = fast_elementwise.pooled_column_sums(a)
        np.testing.assert_allclose(got[n], want, rtol=1e-5, atol=1e-4)
    np.testing.assert_array_equal(got[1], got[2])
    t = ember.tensor(a)          # (sum(0) itself adds in torch's order: test_torch_sum_order)
    np.testing.assert_allclose(t.sum(0).numpy(), got[2], rtol=1e-5, atol=1e-4)
    assert t.sum(0, keepdim=True).shape == (1, 384) and t.sum(-2).shape == (384,)


def test_full_sum_on_the_pool(threads):
    """A large float32 sum: torch's per-thread chunks on the pool, the same bits as the
    NumPy emulation of torch's order at that thread count (Note [torch's summation order]),
    through sum() with dim=None, all dims and keepdim; small and non-float32 sums: None."""
    from ember._kernels import compiled, fast_elementwise, torch_sum
    rng = np.random.default_rng(11)
    for a in (rng.standard_normal((1 << 20) + 37).astype(np.float32),
              rng.random((1100, 1000)).astype(np.float32) * 3):
        exact = a.astype(np.float64).sum()
        got = {}
        for n in (1, 2):
            threads(n)
            got[n] = fast_elementwise.pooled_sum(a)
            compiled.disable()
            try:
                want = torch_sum.torch_sum(a, None, n)
            finally:
                compiled.enable()
            assert got[n].tobytes() == want.tobytes()
        assert got[1].dtype == np.float32 and got[1].shape == ()
        assert abs(float(got[2]) - exact) <= 1e-5 * abs(exact)
        t = ember.tensor(a)
        assert t.sum().numpy().tobytes() == got[2].tobytes()
        dims = tuple(range(a.ndim))
        np.testing.assert_array_equal(t.sum(dims, keepdim=True).numpy(),
                                      got[2].reshape((1,) * a.ndim))
    ones = ember.ones(1 << 25)
    assert ones.sum().item() == float(1 << 25)       # (float32 running sums would stall)
    small = rng.standard_normal(1000).astype(np.float32)
    assert fast_elementwise.pooled_sum(small) is None
    assert fast_elementwise.pooled_sum(small.astype(np.float64).repeat(2000)) is None


def test_compiled_context_words(monkeypatch):
    """blas_pool.context's compiled packer writes the Python loop's words: array addresses,
    float64 bits of Python and NumPy floats, ints and bools as themselves."""
    a, b = np.zeros(3, np.float32), np.ones((2, 2))
    values = (a, b, 1024, np.int64(-7), True, 1e-5, np.float32(0.5), -2.0)
    compiled = blas_pool.context(*values)
    monkeypatch.setitem(blas_pool._state, "ok", False)
    python = blas_pool.context(*values)
    assert compiled.dtype == python.dtype == np.int64
    np.testing.assert_array_equal(compiled, python)
    assert compiled[0] == a.ctypes.data and compiled[2] == 1024 and compiled[4] == 1
    assert compiled[5:6].view(np.float64)[0] == 1e-5
