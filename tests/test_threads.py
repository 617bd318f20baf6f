"""ember.set_num_threads / get_num_threads (and the inter-op pair) like torch's."""
import subprocess
import sys

import numpy as np
import pytest

import ember


def _run(code):
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


def test_set_num_threads_limits_blas_and_fft_workers():
    pytest.importorskip("threadpoolctl")
    out = _run("import ember, numpy, threadpoolctl\n"
               "from ember._kernels import fft_large\n"
               "ember.set_num_threads(1)\n"
               "info = threadpoolctl.threadpool_info()\n"
               "blas = [d['num_threads'] for d in info if d['user_api'] == 'blas']\n"
               "print(ember.get_num_threads(), fft_large.num_workers(), len(blas) >= 2, "
               "set(blas))")
    assert out == "1 1 True {1}"


def test_defaults_and_errors_like_torch():
    torch = pytest.importorskip("torch")
    assert ember.get_num_threads() >= 1 and ember.get_num_interop_threads() >= 1
    for arg, msg in ((0, "expects a positive integer"), (1.5, "expects an int, but got float")):
        for lib in (ember, torch):
            with pytest.raises(RuntimeError, match=msg):
                lib.set_num_threads(arg)


def test_interop_threads_set_once():
    out = _run("import ember\n"
               "ember.set_num_interop_threads(3)\n"
               "print(ember.get_num_interop_threads())\n"
               "try:\n    ember.set_num_interop_threads(2)\nexcept RuntimeError:\n"
               "    print('refused')")
    assert out.split() == ["3", "refused"]


def test_without_threadpoolctl_warns_naming_the_extra():
    out = _run("import sys, warnings\n"
               "sys.modules['threadpoolctl'] = None\n"
               "import ember\n"
               "with warnings.catch_warnings(record=True) as w:\n"
               "    warnings.simplefilter('always')\n"
               "    ember.set_num_threads(1)\n"
               "from ember._kernels import numpy_blas\n"
               "print(ember.get_num_threads(), 'ember[threads]' in str(w[0].message), "
               "numpy_blas.get_blas_threads() in (1, None))")
    assert out == "1 True True"      # NumPy's OpenBLAS is set directly, without threadpoolctl


# Note [one thread plan]: ember's GEMMs hold NumPy's OpenBLAS at one thread and split rows
# over ember's own pool; the bits must not depend on the thread count.

@pytest.fixture
def restore_threads(monkeypatch):
    from ember._kernels import split
    from ember._threads import _settings
    monkeypatch.setattr(split, "_own_pools_ran", [True])     # the held, split route
    saved = _settings["threads"]
    yield
    _settings["threads"] = saved


@pytest.mark.parametrize("shape", [(256, 784, 512), (300, 129, 257), (4096, 27, 64),
                                   (33, 1000, 700), (1000, 1000, 10)])
@pytest.mark.parametrize("b_transposed", [False, True])
def test_split_matmul_bits_equal_at_any_thread_count(shape, b_transposed, restore_threads):
    from ember._kernels import numpy_blas, split
    from ember._threads import _settings
    if numpy_blas.get_blas_threads() is None:
        pytest.skip("NumPy's OpenBLAS is not reachable")
    m, k, n = shape
    rng = np.random.default_rng(0)
    a = rng.standard_normal((m, k), np.float32)
    b = rng.standard_normal((n, k), np.float32).T if b_transposed else \
        rng.standard_normal((k, n), np.float32)
    _settings["threads"] = 1                # (ember's own GEMM where it runs: Note [own GEMM])
    ref = split.matmul(a, b)
    for t in (2, 3, 4):
        _settings["threads"] = t
        assert np.array_equal(split.matmul(a, b), ref), t
    np.testing.assert_allclose(ref, a.astype(np.float64) @ b.astype(np.float64),
                               rtol=1e-4, atol=1e-3)


def test_split_matmul_batched_and_folded(restore_threads):
    from ember._kernels import numpy_blas, split
    from ember._threads import _settings
    rng = np.random.default_rng(1)
    a3, b3 = rng.standard_normal((8, 128, 64), np.float32), \
        rng.standard_normal((8, 64, 128), np.float32)
    af, w = rng.standard_normal((4, 100, 256), np.float32), \
        rng.standard_normal((256, 300), np.float32)
    _settings["threads"] = 1
    refs = split.matmul(a3, b3), split.matmul(af, w)
    np.testing.assert_allclose(refs[1], af.astype(np.float64) @ w, rtol=1e-4, atol=1e-3)
    for t in (2, 3):
        _settings["threads"] = t
        assert np.array_equal(split.matmul(a3, b3), refs[0])
        assert np.array_equal(split.matmul(af, w), refs[1])


def test_blas_thread_count_restored_after_ember_calls(restore_threads):
    from ember._kernels import fast_elementwise, numpy_blas, split
    before = numpy_blas.get_blas_threads()
    if before is None:
        pytest.skip("NumPy's OpenBLAS is not reachable")
    numpy_blas.set_blas_threads(2)
    try:
        a = np.ones((300, 300), np.float32)
        assert np.array_equal(split.matmul(a, a), np.full((300, 300), 300, np.float32))
        y = np.zeros(20000, np.float32)
        assert fast_elementwise.axpy_(y, np.ones(20000, np.float32), 2.0)
        assert (y == 2).all()
        assert numpy_blas.get_blas_threads() == 2
    finally:
        numpy_blas.set_blas_threads(before)


def test_one_thread_runs_gemm_on_the_callers_thread(monkeypatch, restore_threads):
    from ember._kernels import split
    ember.set_num_threads(1)
    monkeypatch.setattr(split, "pool", lambda: pytest.fail("the pool ran at one thread"))
    a = np.ones((1024, 1024), np.float32)
    assert split.matmul(a, a)[0, 0] == 1024
    x = ember.ones(1024, 1024)
    assert (x @ x)[5, 5].item() == 1024 and ember.mm(x, x)[1, 2].item() == 1024



def test_blas_held_only_once_onnxruntime_ran(monkeypatch):
    from ember._kernels import numpy_blas, own_gemm, split
    if numpy_blas.get_blas_threads() is None:
        pytest.skip("NumPy's OpenBLAS is not reachable")
    calls = []
    real_set = numpy_blas.set_blas_threads
    monkeypatch.setattr(numpy_blas, "set_blas_threads", lambda n: calls.append(n) or real_set(n))
    monkeypatch.setattr(numpy_blas, "get_blas_threads", lambda: 2)
    monkeypatch.setattr(split, "_own_pools_ran", [False])
    monkeypatch.setattr(own_gemm, "kernels", lambda: None)    # OpenBLAS's GEMM
    a = np.ones((300, 300), np.float32)
    split.matmul(a, a)
    assert calls == []                       # OpenBLAS keeps its own threads
    split.own_pools_ran()
    split.matmul(a, a)
    assert calls == [1, 2]                   # held at one thread, then restored


# Note [concurrent conv backward]: the NumPy convolutions (small images, 1x1 kernels) split
# their GEMMs over ember's pool and run the two gradients side by side; the bits must not
# depend on the thread count.
@pytest.mark.parametrize("shape", [(2, 512, 32, 7, 3, 1), (4, 64, 128, 14, 1, 2),
                                   (2, 128, 128, 16, 3, 1), (3, 32, 48, 9, 3, 2)])
def test_numpy_conv_paths_bits_equal_at_any_thread_count(shape, restore_threads):
    from ember._kernels import nn_conv
    from ember._threads import _settings
    N, C, O, H, k, s = shape
    rng = np.random.default_rng(sum(shape))
    x = rng.standard_normal((N, C, H, H), np.float32)
    w = (rng.standard_normal((O, C, k, k)) / np.sqrt(C * k * k)).astype(np.float32)
    p = k // 2
    Ho = (H + 2 * p - k) // s + 1
    gy = rng.standard_normal((N, O, Ho, Ho), np.float32)
    results = []
    for t in (1, 2, 3):
        _settings["threads"] = t
        y = nn_conv.conv_forward(x, w, [s, s], [p, p], [1, 1], 1)
        gi, gw, _ = nn_conv.conv_backward(gy, x, w, [s, s], [p, p], [1, 1], 1, (1, 1, 0))
        results.append((y, gi, gw))
    for got in results[1:]:
        for a, b in zip(got, results[0]):
            assert np.array_equal(a, b)
    torch = pytest.importorskip("torch")
    xt, wt = torch.from_numpy(x).double().requires_grad_(), torch.from_numpy(w).double()
    wt.requires_grad_()
    yt = torch.nn.functional.conv2d(xt, wt, stride=s, padding=p)
    yt.backward(torch.from_numpy(gy).double())
    for a, b in zip(results[0], (yt.detach(), xt.grad, wt.grad)):
        np.testing.assert_allclose(a, b.numpy(), rtol=1e-3, atol=2e-4)



@pytest.mark.parametrize("case", [((8, 64, 112, 112), 3, 2, 1, 1, False),
                                  ((4, 33, 41, 37), 2, 2, 0, 1, True),
                                  ((2, 40, 30, 30), 3, 1, 1, 2, False),
                                  ((3, 20, 9, 30, 30), 2, 2, 1, 1, True)])
def test_max_pool_planes_split_over_threads(case, restore_threads, monkeypatch):
    """Large max pools split their planes over ember's threads: same values and indices
    at any thread count (NaN windows included), and torch's."""
    from ember._kernels import split
    from ember._threads import _settings
    monkeypatch.setattr(split, "MIN_SPLIT_ELEMENTS", 1 << 12)
    parts = []
    real_run_parts = split._run_parts
    monkeypatch.setattr(split, "_run_parts", lambda fn, rows, t, align=1:
                        parts.append(t) or real_run_parts(fn, rows, t, align))
    shape, k, s, p, d, ceil = case
    x = np.random.default_rng(len(shape)).standard_normal(shape).astype(np.float32)
    x.reshape(-1)[::997] = np.nan
    nd = len(shape) - 2
    results = []
    for t in (1, 2, 3):
        _settings["threads"] = t
        fn = ember.nn.functional.max_pool2d if nd == 2 else ember.nn.functional.max_pool3d
        v, i = fn(ember.tensor(x), k, s, p, d, ceil_mode=ceil, return_indices=True)
        results.append((v.numpy(), i.numpy()))
    assert parts == [2, 3]
    for v, i in results[1:]:
        np.testing.assert_array_equal(v, results[0][0])
        np.testing.assert_array_equal(i, results[0][1])
    torch = pytest.importorskip("torch")
    fn = torch.nn.functional.max_pool2d if nd == 2 else torch.nn.functional.max_pool3d
    tv, ti = fn(torch.from_numpy(x), k, s, p, d, ceil_mode=ceil, return_indices=True)
    np.testing.assert_array_equal(results[0][0], tv.numpy())
    np.testing.assert_array_equal(results[0][1], ti.numpy())


@pytest.mark.parametrize("env", [{"OMP_NUM_THREADS": "1"}, {"OMP_NUM_THREADS": "abc"},
                                 {"OMP_NUM_THREADS": "2", "MKL_NUM_THREADS": "1"},
                                 {"MKL_NUM_THREADS": "0", "OMP_NUM_THREADS": "1,2"}])
def test_default_threads_follow_the_environment_as_torch(env):
    """torch starts its pool at MKL_NUM_THREADS, else OMP_NUM_THREADS, else the CPUs (at
    most the CPUs); a program run with OMP_NUM_THREADS=1 runs ember on one thread too."""
    import os
    code = "import {0}; print({0}.get_num_threads())"
    clean = {k: v for k, v in os.environ.items()
             if k not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")}

    def run(lib):
        r = subprocess.run([sys.executable, "-c", code.format(lib)], capture_output=True,
                           text=True, timeout=120, env={**clean, **env})
        assert r.returncode == 0, r.stderr
        return int(r.stdout.split()[-1])
    from ember._threads import _cpus
    expected = {"1": 1, "abc": _cpus()}.get(env.get("OMP_NUM_THREADS"), 1)
    assert run("ember") == expected
    pytest.importorskip("torch")
    assert run("torch") == expected


def test_relu_and_its_backward_split_over_threads_bit_for_bit(restore_threads, monkeypatch):
    """ReLU's forward and threshold_backward cut large arrays into ranges over ember's
    threads: the same bits at any thread count (NaN and infinities included), torch's."""
    from ember._kernels import split
    from ember._threads import _settings
    monkeypatch.setattr(split, "MIN_SPLIT_ELEMENTS", 1 << 10)
    rng = np.random.default_rng(3)
    x = rng.standard_normal((7, 33, 29)).astype(np.float32)
    g = rng.standard_normal(x.shape).astype(np.float32)
    x.reshape(-1)[::101] = np.nan
    g.reshape(-1)[::37] = np.inf
    xt = ember.tensor(x, requires_grad=True)
    results = []
    for t in (1, 2, 3):
        _settings["threads"] = t
        xt.grad = None
        y = ember.relu(xt)
        y.backward(ember.tensor(g))
        results.append((y.detach().numpy().view(np.int32).copy(),
                        xt.grad.numpy().view(np.int32).copy()))
    for y, gx in results[1:]:
        np.testing.assert_array_equal(y, results[0][0])
        np.testing.assert_array_equal(gx, results[0][1])
    torch = pytest.importorskip("torch")
    tx = torch.tensor(x, requires_grad=True)
    ty = torch.relu(tx)
    ty.backward(torch.tensor(g))
    np.testing.assert_array_equal(ty.detach().numpy().view(np.int32), results[0][0])
    np.testing.assert_array_equal(tx.grad.numpy().view(np.int32), results[0][1])
