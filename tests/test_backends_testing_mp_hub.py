"""ember.backends, ember.testing (assert_close / make_tensor), ember.multiprocessing (spawn)
and ember.hub, compared with torch 2.13 where the behaviour is observable."""
from __future__ import annotations

import os
import pickle
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import ember
import ember.backends
import ember.backends.cudnn
import ember.hub
import ember.multiprocessing
import ember.testing

# torch is imported lazily: spawned children import this module to find their targets


def _torch():
    return pytest.importorskip("torch")


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# ---------------------------------------------------------------- backends

def test_cudnn_defaults_match_torch():
    torch = _torch()
    import torch.backends.cudnn as tc
    ec = ember.backends.cudnn
    for name in ("enabled", "benchmark", "deterministic", "allow_tf32", "benchmark_limit"):
        assert getattr(ec, name) == getattr(tc, name), name
    assert ec.is_available() is tc.is_available() is False
    assert ec.version() is None and tc.version() is None
    assert ec.is_acceptable(ember.zeros(1)) is False


def test_cudnn_flags_settable_and_context_manager():
    c = ember.backends.cudnn
    old = c.benchmark
    try:
        c.benchmark = True
        assert ember.backends.cudnn.benchmark is True
        with c.flags(enabled=False, benchmark=False, deterministic=True):
            assert (c.enabled, c.benchmark, c.deterministic) == (False, False, True)
        assert (c.enabled, c.benchmark, c.deterministic) == (True, True, False)
        with pytest.raises(KeyError):
            with c.flags(enabled=False):
                raise KeyError("x")
        assert c.enabled is True             # restored after an exception too
    finally:
        c.benchmark = old


def test_other_backend_defaults_match_torch():
    torch = _torch()
    eb = ember.backends
    tb = torch.backends
    for name in ("allow_tf32", "allow_fp16_reduced_precision_reduction",
                 "allow_bf16_reduced_precision_reduction"):
        assert getattr(eb.cuda.matmul, name) == getattr(tb.cuda.matmul, name), name
    for name in ("flash_sdp_enabled", "mem_efficient_sdp_enabled", "math_sdp_enabled",
                 "cudnn_sdp_enabled", "is_built"):
        assert getattr(eb.cuda, name)() == getattr(tb.cuda, name)(), name
    assert eb.mps.is_available() is tb.mps.is_available() is False
    assert eb.mps.is_built() is tb.mps.is_built() is False
    assert eb.opt_einsum.is_available() == tb.opt_einsum.is_available()
    assert eb.opt_einsum.enabled == tb.opt_einsum.enabled
    assert eb.opt_einsum.strategy == tb.opt_einsum.strategy
    assert eb.mkldnn.enabled == tb.mkldnn.enabled
    assert eb.mkldnn.deterministic == tb.mkldnn.deterministic
    for mod in (eb.mkldnn, eb.mkl, eb.openmp):
        assert isinstance(mod.is_available(), bool)
    assert eb.cpu.get_cpu_capability() in ("AVX512", "AVX2", "DEFAULT", "SVE256")


def test_cuda_matmul_and_sdp_flags_recorded():
    cuda = ember.backends.cuda
    cuda.matmul.allow_tf32 = True
    try:
        assert cuda.matmul.allow_tf32 is True
    finally:
        cuda.matmul.allow_tf32 = False
    with pytest.raises(AttributeError):
        cuda.matmul.no_such_flag = 1
    with pytest.warns(FutureWarning):
        with cuda.sdp_kernel(enable_flash=False, enable_math=True,
                             enable_mem_efficient=False):
            assert not cuda.flash_sdp_enabled() and not cuda.mem_efficient_sdp_enabled()
            assert cuda.math_sdp_enabled()
    assert cuda.flash_sdp_enabled() and cuda.mem_efficient_sdp_enabled()
    cuda.enable_flash_sdp(False)
    try:
        assert cuda.flash_sdp_enabled() is False
    finally:
        cuda.enable_flash_sdp(True)


def test_opt_einsum_and_mkldnn_flags():
    oe = ember.backends.opt_einsum
    if not oe.is_available():
        assert oe.get_opt_einsum() is None
        with pytest.raises(ValueError):
            oe.set_flags(True)
    m = ember.backends.mkldnn
    with m.flags(enabled=False):
        assert m.enabled is False
    assert m.enabled is True


# ---------------------------------------------------------------- assert_close

def _cases(T):
    t = T.tensor
    nan, inf = float("nan"), float("inf")
    return [
        (t([1., 2., 3.]), t([1., 2.5, 3.1]), {}),
        (t([1., 2., 3.]), t([1., 2., 3.]).double(), {}),
        (t([1, 2, 3]), t([1, 2, 4]), {}),
        (t([[1., 2.], [3., 4.]]), t([[1., 2.], [3., 5.]]), {}),
        (t([1., nan]), t([1., nan]), {}),
        (t([1., nan]), t([1., nan]), dict(equal_nan=True)),
        (t([1., 2.]), t([1., 2., 3.]), {}),
        (1.0, 1.0 + 1e-8, {}), (1.0, 1.1, {}), (1, 2, {}), (1, 1.0, {}), (1.0, 1, {}),
        (1, 1.0, dict(check_dtype=False)),
        (np.array([1., 2.]), np.array([1., 2.1]), {}),
        (np.array([1., 2.], dtype=np.float32), np.array([1., 2.00001], dtype=np.float32), {}),
        ([t(1.), t(2.)], [t(1.), t(2.5)], {}),
        ({"a": t(1.)}, {"a": t(1.5)}, {}),
        ({"a": t(1.)}, {"b": t(1.5)}, {}),
        ({"a": 1, "c": 2}, {"b": 1, "c": 2}, {}),
        ([1, 2], [1, 2, 3], {}),
        (t(True), t(False), {}),
        (t([1., 2.]), t([1., 2.]).double(), dict(check_dtype=False)),
        (t([1., 2.]), t([1., 2.1]), dict(msg="custom")),
        (t([1., 2.]), t([1., 2.1]), dict(msg=lambda m: "X" + m)),
        ([t([1.]), t([1., 2.])], [t([1.]), t([1., 2.1])], dict(msg=lambda m: "X" + m)),
        (t([1., 2.]), t([1., 2.1]), dict(rtol=0.1)),
        (t([1., 2.]), t([1., 2.1]), dict(atol=0.1)),
        (t([1., 2.]), t([1., 2.1]), dict(rtol=0.1, atol=0)),
        (t([1. + 1j]), t([1. + 2j]), {}),
        (t([1., 2.]).half(), t([1., 2.001]).half(), {}),
        (t([1., 2.]).half(), t([1., 2.01]).half(), {}),
        (t([0., 2.]), t([1e-6, 2.]), {}),
        (t([0.]), t([1.]), {}),
        (T.ones(2, 3).t(), T.ones(3, 2), dict(check_stride=True)),
        (T.ones(2, 3).t(), T.ones(3, 2), {}),
        (t([1., 2.], requires_grad=True), t([1., 2.]), {}),
        ((1, 2), (1, 2), {}),
        (t([1, 2]), t([1, 5]), dict(atol=3, rtol=0)),
        (t([1, 2]), t([1, 6]), dict(atol=3, rtol=0)),
        (t([[1., 2., 3.], [4., 5., 6.]]), t([[1., 2., 3.], [4., 9., 7.]]), {}),
        ([[t([1.])]], [[t([2.])]], {}),
        (t([True, False]), t([True, True]), {}),
        (t([1, 2]), t([1, 2.5]).float(), dict(check_dtype=False)),
        (t([0, 3]), t([0, 5]), {}),
        (t([1., inf]), t([1., inf]), {}), (t([1., inf]), t([1., -inf]), {}),
        (t([1, 2], dtype=T.uint8), t([3, 2], dtype=T.uint8), {}),
        (t([1., 2.], dtype=T.bfloat16), t([1., 2.01], dtype=T.bfloat16), {}),
        (t([1., 2.], dtype=T.bfloat16), t([1., 2.1], dtype=T.bfloat16), {}),
        (1 + 1j, 1 + 1.5j, {}), ([1., 2.], (1., 2.5), {}),
        (np.array([1, 2]), np.array([1, 3]), {}),
        (nan, nan, {}), (nan, nan, dict(equal_nan=True)),
        (None, None, {}), (None, 1, {}), (True, False, {}), (True, True, {}),
        (inf, inf, {}), (inf, -inf, {}), (0.0, 1e-300, {}),
        (t([1., 2.]), t([1., 3.]), dict(atol=1, rtol=None)),
        ([t([1.])], [t([1.])], dict(rtol=1)),
        (T.zeros(0), T.zeros(0), {}), (T.zeros(0), T.zeros(1), {}),
        (t([[1., 2.]]), t([[1., 2.]]).expand(1, 2), {}),
        ({"x": [t(1.), {"y": t([1., 2.])}]}, {"x": [t(1.), {"y": t([1., 2.5])}]}, {}),
        ({1: t(1.), 0: t(2.)}, {0: t(2.5), 1: t(1.)}, {}),
        (t([1e-8]), t([0.]), {}), (t([1e-4]), t([0.]), {}),
        (t([1.0, 1.0 + 1.2e-6]), t([1., 1.]), {}),
        (t([1.0, 1.0 + 1e-6]).double(), t([1., 1.]).double(), {}),
        (t([5, -3]), t([-3, 5]), {}),
        (t(3), t(4), {}), (t(3.), t(3.), {}), (t(3.), t(3.5), {}),
        (np.float32(1.0), np.float32(1.5), {}), (np.float64(1.0), 1.0, {}),
        (t([1., 2.]), t([1., 2.]).to(T.float16), dict(check_dtype=False)),
        (t([1., 2.0005]), t([1., 2.]).to(T.float16), dict(check_dtype=False)),
        (t([1., 2.]), t([1., 2.2]), dict(rtol=0.05, atol=0.05)),
        (t([[1., 2.], [3., 4.]]), t([[1.1, 2.], [3., 4.4]]), dict(rtol=0.05, atol=0.05)),
        (t([1., 2.]), np.array([1., 2.]), {}),
        (t([1., 2.]), [1., 2.], {}),
        (t(1.), 1.0, {}),
        ([1, "a"], [1, "a"], dict(msg="m")),
        (t([1, 2]), t([1., 2.]), dict(msg="m")),
    ]


def _outcome(assert_close, a, b, kw):
    try:
        assert_close(a, b, **kw)
        return "PASS"
    except Exception as e:   # normalise the tensor class names of both libraries
        text = str(e).replace("<class 'torch.Tensor'>", "<Tensor>")
        text = text.replace("<class 'ember._tensor.Tensor'>", "<Tensor>")
        return f"{type(e).__name__}: {text}"


_N_CASES = len(_cases(ember))


@pytest.mark.parametrize("i", range(_N_CASES))
def test_assert_close_matches_torch(i):
    torch = _torch()
    import torch.testing
    a, b, kw = _cases(ember)[i]
    ta, tb, tkw = _cases(torch)[i]
    assert _outcome(ember.testing.assert_close, a, b, kw) == \
        _outcome(torch.testing.assert_close, ta, tb, tkw)


def test_assert_close_message_layout():
    with pytest.raises(AssertionError) as info:
        ember.testing.assert_close(ember.tensor([[1., 2.], [3., 4.]]),
                                   ember.tensor([[1., 2.], [3.5, 4.]]))
    lines = str(info.value).splitlines()
    assert lines[0] == "Tensor-likes are not close!"
    assert lines[2] == "Mismatched elements: 1 / 4 (25.0%)"
    assert lines[3].startswith("Greatest absolute difference: 0.5 at index (1, 0)")
    assert lines[4].startswith("Greatest relative difference: ")
    assert "at index (1, 0) (up to 1.3e-06 allowed)" in lines[4]
    # passes within tolerance, and mismatching dtypes pass with check_dtype=False
    ember.testing.assert_close(ember.tensor([1.0]), ember.tensor([1.0 + 1e-7]))
    ember.testing.assert_close(ember.tensor([1, 2]), ember.tensor([1., 2.]),
                               check_dtype=False)


def test_assert_allclose_deprecated_alias():
    with pytest.warns(FutureWarning):
        ember.testing.assert_allclose(ember.tensor([1., 2.]), [1., 2.])
    with pytest.warns(FutureWarning), pytest.raises(AssertionError):
        ember.testing.assert_allclose(ember.tensor([1., 2.]), [1., 2.5])


# ---------------------------------------------------------------- make_tensor

@pytest.mark.parametrize("name", ["bool", "uint8", "int8", "int16", "int32", "int64",
                                  "float16", "bfloat16", "float32", "float64",
                                  "complex64", "complex128"])
def test_make_tensor_default_ranges_match_torch(name):
    torch = _torch()
    from torch.testing import make_tensor as tmake
    edt, tdt = getattr(ember, name), getattr(torch, name)
    x = ember.testing.make_tensor(4000, dtype=edt, device="cpu")
    y = tmake(4000, dtype=tdt, device="cpu")
    assert x.dtype is edt and x.shape == (4000,) and x.is_contiguous()
    if edt.is_complex:
        xs, ys = [x.real, x.imag], [y.real, y.imag]
    else:
        xs, ys = [x.to(ember.float64)], [y.to(torch.float64)]
    for xe, yt in zip(xs, ys):
        lo, hi = xe.min().item(), xe.max().item()
        tlo, thi = yt.min().item(), yt.max().item()
        if edt.is_floating_point or edt.is_complex:
            assert -9 <= lo < -8 and 8 < hi <= 9 and -9 <= tlo and thi <= 9
        else:                                 # integers hit their exact bounds
            assert (lo, hi) == (tlo, thi)


def test_make_tensor_options():
    mk = ember.testing.make_tensor
    x = mk(3, 4, dtype=ember.float32, device="cpu", low=-1, high=1, noncontiguous=True,
           requires_grad=True)
    assert x.shape == (3, 4) and not x.is_contiguous() and x.requires_grad and x.is_leaf
    assert -1 <= x.min().item() and x.max().item() < 1
    y = mk((200,), dtype=ember.int64, device="cpu", low=-1, high=2, exclude_zero=True)
    assert set(y.tolist()) == {-1, 1}
    z = mk(200, dtype=ember.float32, device="cpu", low=0, high=1e-30, exclude_zero=True)
    assert (z != 0).all().item()
    assert mk(2, 3, 4, 5, dtype=ember.float32, device="cpu",
              memory_format=ember.channels_last).stride() == (60, 1, 15, 3)
    assert mk((), dtype=ember.float64, device="cpu").shape == ()
    b = mk(500, dtype=ember.bool, device="cpu")
    assert 0 < b.sum().item() < 500
    u = mk(1000, dtype=ember.uint8, device="cpu", low=-5, high=300)   # clamped to uint8
    assert u.min().item() >= 0 and u.max().item() > 200


@pytest.mark.parametrize("kw", [dict(low=2, high=1), dict(low=float("nan")),
                                dict(noncontiguous=True, memory_format="cl"),
                                dict(requires_grad=True, dtype="int64")])
def test_make_tensor_errors_match_torch(kw):
    torch = _torch()
    from torch.testing import make_tensor as tmake

    def call(lib, fn):
        k = dict(kw)
        if k.get("memory_format") == "cl":
            k["memory_format"] = lib.channels_last
        k["dtype"] = getattr(lib, k.pop("dtype", "float32"))
        try:
            fn(2, 3, 4, 5, device="cpu", **k)
        except Exception as e:
            return type(e)
        return None

    expected = call(torch, tmake)
    assert expected is not None
    assert call(ember, ember.testing.make_tensor) is expected


# ---------------------------------------------------------------- multiprocessing

def _mp_record(i, out_dir, scale):
    t = ember.arange(3, dtype=ember.float32) * scale + i
    with open(os.path.join(out_dir, f"{i}.pkl"), "wb") as f:
        pickle.dump(t.tolist(), f)


def _mp_fail(i, bad):
    if i == bad:
        raise ValueError(f"rank {i} failed")


def _mp_exit(i):
    if i == 1:
        os._exit(3)


def test_multiprocessing_reexports_and_sharing_strategy():
    torch = _torch()
    import torch.multiprocessing as tmp
    mp = ember.multiprocessing
    for name in ("Process", "Queue", "Pool", "get_context", "set_start_method",
                 "get_start_method", "cpu_count", "Manager", "Event", "Lock", "SimpleQueue"):
        assert hasattr(mp, name), name
    assert mp.cpu_count() == tmp.cpu_count()
    assert mp.get_all_sharing_strategies() == tmp.get_all_sharing_strategies()
    assert mp.get_sharing_strategy() == tmp.get_sharing_strategy()
    old = mp.get_sharing_strategy()
    mp.set_sharing_strategy("file_system")
    assert mp.get_sharing_strategy() == "file_system"
    mp.set_sharing_strategy(old)
    with pytest.raises(AssertionError):
        mp.set_sharing_strategy("nope")


def test_spawn_runs_fn_with_index_and_args(tmp_path):
    assert ember.multiprocessing.spawn(_mp_record, args=(str(tmp_path), 2.0), nprocs=2) \
        is None
    got = {}
    for i in range(2):
        with open(tmp_path / f"{i}.pkl", "rb") as f:
            got[i] = pickle.load(f)
    assert got == {0: [0.0, 2.0, 4.0], 1: [1.0, 3.0, 5.0]}


def test_spawn_reraises_child_exception_with_traceback():
    mp = ember.multiprocessing
    with pytest.raises(mp.ProcessRaisedException) as info:
        mp.spawn(_mp_fail, args=(1,), nprocs=2)
    e = info.value
    assert isinstance(e, mp.ProcessException) and e.error_index == 1
    text = str(e)
    assert text.startswith("\n\n-- Process 1 terminated with the following error:\n"
                           "Traceback (most recent call last):")
    assert "in _mp_fail" in text and text.rstrip().endswith("ValueError: rank 1 failed")


def test_spawn_exit_code_and_join_false():
    mp = ember.multiprocessing
    # fork keeps these fast; spawn itself is covered above and below
    with pytest.raises(mp.ProcessExitedException) as info:
        mp.start_processes(_mp_exit, nprocs=2, start_method="fork")
    assert info.value.exit_code == 3 and info.value.error_index == 1
    assert "process 1 terminated with exit code 3" in str(info.value)
    ctx = mp.start_processes(_mp_fail, args=(-1,), nprocs=2, join=False,
                             start_method="fork")
    assert isinstance(ctx, mp.ProcessContext) and len(ctx.pids()) == 2
    while not ctx.join():
        pass
    assert all(p.exitcode == 0 for p in ctx.processes)


def test_spawn_under_ember_run(tmp_path):
    # the expected line is what `python spawn_script.py` prints with torch 2.13
    script = tmp_path / "spawn_script.py"
    script.write_text(textwrap.dedent("""
        import torch
        import torch.multiprocessing as mp

        def work(rank, n):
            x = torch.arange(n, dtype=torch.float64) * (rank + 1)
            if rank == 1:
                raise RuntimeError("bad rank %d sum %.1f" % (rank, x.sum().item()))

        if __name__ == "__main__":
            try:
                mp.spawn(work, args=(4,), nprocs=2)
            except mp.ProcessRaisedException as e:
                print(type(e).__name__, e.error_index, str(e).strip().splitlines()[-1])
    """))
    env = dict(os.environ)
    env["PYTHONPATH"] = ROOT
    r = subprocess.run([sys.executable, "-m", "ember.run", str(script)], capture_output=True,
                       text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "ProcessRaisedException 1 RuntimeError: bad rank 1 sum 12.0\n"


# ---------------------------------------------------------------- hub

_HUBCONF = '''
dependencies = ["numpy"]
import ember

def tiny_linear(out_features=2, bias=True):
    """A tiny Linear(3, out_features) entrypoint."""
    return ember.nn.Linear(3, out_features, bias=bias)

def _private():
    pass

CONSTANT = 3
'''


def test_hub_local_load_list_help(tmp_path):
    (tmp_path / "hubconf.py").write_text(_HUBCONF)
    hub = ember.hub
    m = hub.load(str(tmp_path), "tiny_linear", 4, source="local", bias=False)
    assert isinstance(m, ember.nn.Linear) and m.weight.shape == (4, 3) and m.bias is None
    assert hub.list(str(tmp_path), source="local") == ["tiny_linear"]
    assert hub.help(str(tmp_path), "tiny_linear", source="local") == \
        "A tiny Linear(3, out_features) entrypoint."
    with pytest.raises(RuntimeError, match="Cannot find callable nope in hubconf"):
        hub.load(str(tmp_path), "nope", source="local")
    with pytest.raises(ValueError, match="Unknown source"):
        hub.load(str(tmp_path), "tiny_linear", source="ftp")
    (tmp_path / "hubconf.py").write_text('dependencies = ["no_such_pkg_xyz"]\n')
    with pytest.raises(RuntimeError, match="Missing dependencies: no_such_pkg_xyz"):
        hub.load(str(tmp_path), "tiny_linear", source="local")


def test_hub_github_and_urls_raise_clear_error(tmp_path):
    hub = ember.hub
    with pytest.raises(RuntimeError, match="ember downloads nothing"):
        hub.load("pytorch/vision", "resnet18")
    with pytest.raises(RuntimeError, match="ember downloads nothing"):
        hub.list("pytorch/vision")
    with pytest.raises(RuntimeError, match="ember downloads nothing"):
        hub.load_state_dict_from_url("https://example.com/w/model-abc123.pth",
                                     model_dir=str(tmp_path))
    with pytest.raises(RuntimeError, match="ember downloads nothing"):
        hub.download_url_to_file("https://example.com/x", str(tmp_path / "x"))


def test_hub_dirs_and_cached_state_dict(tmp_path, monkeypatch):
    hub = ember.hub
    monkeypatch.setattr(hub, "_hub_dir", None)
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "th"))
    assert hub.get_dir() == str(tmp_path / "th" / "hub")
    hub.set_dir(tmp_path / "hubdir")
    assert hub.get_dir() == str(tmp_path / "hubdir")
    ckpt = tmp_path / "hubdir" / "checkpoints"
    ckpt.mkdir(parents=True)
    sd = {"w": ember.arange(6.).reshape(2, 3), "b": ember.tensor([1, 2])}
    ember.save(sd, str(ckpt / "net-0123abcd.pth"))
    got = hub.load_state_dict_from_url("https://example.com/models/net-0123abcd.pth")
    assert set(got) == {"w", "b"}
    ember.testing.assert_close(got["w"], sd["w"])
    ember.testing.assert_close(got["b"], sd["b"])
    got2 = hub.load_state_dict_from_url("https://example.com/other.bin",
                                        file_name="net-0123abcd.pth", weights_only=True)
    assert got2["w"].tolist() == sd["w"].tolist()
