"""ember.amp: autocast regions (dtype of every op vs torch's CPU autocast) and GradScaler
(scale trajectory and skipped steps vs torch's)."""
from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def dt(t):
    return str(t.dtype)


def _model_ops(lib, x, w1, b1, w2, b2, tgt, **ac):
    F = lib.nn.functional
    out = {}
    with lib.autocast("cpu", **ac):
        h = F.linear(x, w1, b1)
        out["linear1"] = h
        h = lib.relu(h)
        out["relu"] = h
        z = F.linear(h, w2, b2)
        out["linear2"] = z
        out["softmax"] = lib.softmax(z, -1)
        out["log_softmax"] = F.log_softmax(z, -1)
        out["cross_entropy"] = F.cross_entropy(z, tgt)
        out["nll"] = F.nll_loss(out["log_softmax"], tgt)
        out["mm"] = lib.mm(x, w1.t())
        out["add"] = h + out["mm"].float()
        out["cat"] = lib.cat([z, out["softmax"].float()])
        out["stack_f64"] = lib.stack([z, out["softmax"].double()])
        out["mm_f64"] = lib.mm(x.double(), w1.double().t())
        out["prod"] = z.prod()
        out["sum"] = z.sum()
        loss = out["cross_entropy"] + out["nll"]
    out["loss"] = loss
    return out


def _data():
    rng = np.random.default_rng(0)
    arrs = [rng.standard_normal(s).astype(np.float32) for s in [(5, 8), (16, 8), (16,),
                                                                 (3, 16), (3,)]]
    tgt = np.array([0, 2, 1, 1, 0])
    return arrs, tgt


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_model_dtypes_match_torch(dtype):
    arrs, tgt = _data()
    te = [ember.tensor(a, requires_grad=i > 0) for i, a in enumerate(arrs)]
    tt = [torch.tensor(a, requires_grad=i > 0) for i, a in enumerate(arrs)]
    oe = _model_ops(ember, *te, ember.tensor(tgt), dtype=getattr(ember, dtype))
    ot = _model_ops(torch, *tt, torch.tensor(tgt), dtype=getattr(torch, dtype))
    for k in ot:
        assert dt(oe[k]) == dt(ot[k]), k
        np.testing.assert_allclose(oe[k].detach().float().numpy(),
                                   ot[k].detach().float().numpy(), rtol=3e-2, atol=3e-2,
                                   err_msg=k)
    oe["loss"].backward()
    ot["loss"].backward()
    for a, b in zip(te[1:], tt[1:]):
        assert dt(a.grad) == dt(b.grad) == "torch.float32"
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=5e-2, atol=5e-2)


def test_default_dtype_and_state_queries():
    assert ember.get_autocast_dtype("cpu") == ember.bfloat16
    assert not ember.is_autocast_enabled("cpu")
    with ember.autocast("cpu"):
        assert ember.is_autocast_enabled("cpu") and ember.is_autocast_cpu_enabled()
        assert not ember.is_autocast_enabled()      # no argument: CUDA, as in torch
        with ember.autocast("cpu", dtype=ember.float16):
            assert ember.get_autocast_dtype("cpu") == ember.float16
            assert ember.mm(ember.ones(2, 2), ember.ones(2, 2)).dtype == ember.float16
            with ember.autocast("cpu", enabled=False):
                assert not ember.is_autocast_enabled("cpu")
                assert ember.mm(ember.ones(2, 2), ember.ones(2, 2)).dtype == ember.float32
            assert ember.mm(ember.ones(2, 2), ember.ones(2, 2)).dtype == ember.float16
        assert ember.mm(ember.ones(2, 2), ember.ones(2, 2)).dtype == ember.bfloat16
    assert not ember.is_autocast_enabled("cpu")
    assert ember.mm(ember.ones(2, 2), ember.ones(2, 2)).dtype == ember.float32
    from ember._state import state
    assert state.modes == ()


def test_decorator_and_aliases():
    @ember.autocast("cpu")
    def f(a):
        return ember.mm(a, a)

    assert f(ember.ones(2, 2)).dtype == ember.bfloat16
    assert ember.mm(ember.ones(2, 2), ember.ones(2, 2)).dtype == ember.float32

    with pytest.warns(FutureWarning, match="torch.amp.autocast"):
        @ember.cpu.amp.autocast()
        def g(a):
            return a @ a
    assert g(ember.ones(2, 2)).dtype == ember.bfloat16
    with ember.amp.autocast(device_type="cpu", dtype=ember.float16):
        assert (ember.ones(2, 2) @ ember.ones(2, 2)).dtype == ember.float16


def _warnings_of(fn):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        r = fn()
    return r, [(m.category.__name__, str(m.message)) for m in w]


AMP_CALLS = {
    "cuda.amp.autocast": lambda lib: lib.cuda.amp.autocast()._enabled,
    "autocast cuda": lambda lib: lib.autocast("cuda")._enabled,
    "amp.autocast cuda kw": lambda lib: lib.amp.autocast(device_type="cuda")._enabled,
    "cpu.amp.autocast": lambda lib: lib.cpu.amp.autocast()._enabled,
    "cuda.amp.GradScaler": lambda lib: lib.cuda.amp.GradScaler().is_enabled(),
    "cpu.amp.GradScaler": lambda lib: lib.cpu.amp.GradScaler().is_enabled(),
    "amp.GradScaler default": lambda lib: (lambda s: (s.is_enabled(), s.get_scale()))(
        lib.amp.GradScaler()),
    "cuda.amp.custom_fwd": lambda lib: callable(lib.cuda.amp.custom_fwd(lambda x: x)),
    "cuda.amp.custom_bwd": lambda lib: callable(lib.cuda.amp.custom_bwd(lambda x: x)),
}


@pytest.mark.parametrize("name", list(AMP_CALLS))
def test_gpu_amp_spellings_warn_and_disable_as_torch_without_cuda(name):
    assert _warnings_of(lambda: AMP_CALLS[name](ember)) == \
        _warnings_of(lambda: AMP_CALLS[name](torch))


def test_cuda_autocast_disabled_and_cuda_namespace():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with ember.cuda.amp.autocast():                  # a GPU program runs in float32
            assert ember.mm(ember.ones(2, 2), ember.ones(2, 2)).dtype == ember.float32
    with pytest.raises(TypeError, match="device_type"):
        ember.amp.custom_fwd(lambda x: x)
    with pytest.warns(FutureWarning):
        with ember.cuda.amp.autocast(enabled=False):
            assert ember.mm(ember.ones(2, 2), ember.ones(2, 2)).dtype == ember.float32
    assert ember.cuda.is_available() is False and ember.cuda.device_count() == 0
    with pytest.raises(RuntimeError):
        ember.autocast("tpu")


def test_unsupported_cpu_dtype_warns_and_disables():
    with pytest.warns(UserWarning):
        with ember.autocast("cpu", dtype=ember.float64):
            assert ember.mm(ember.ones(2, 2), ember.ones(2, 2)).dtype == ember.float32


def test_param_cast_cache_and_grad_dtype():
    w = ember.ones(3, 3, requires_grad=True)
    with ember.autocast("cpu"):
        y = ember.mm(w, w).sum() + ember.mm(w, ember.ones(3, 3)).sum()
        assert y.dtype == ember.bfloat16
    y.float().backward()
    assert w.grad.dtype == ember.float32
    np.testing.assert_allclose(w.grad.numpy(), 9.0)


# ------------------------------------------------------------------ GradScaler
def _scaler_run(lib, inf_steps, steps=12, growth_interval=3, grad_dtype="float32"):
    p = lib.tensor([1.0, -2.0, 3.0], requires_grad=True)
    opt = lib.optim.SGD([p], lr=0.1)
    sc = lib.amp.GradScaler("cpu", init_scale=2.0 ** 4, growth_factor=2.0,
                            backoff_factor=0.5, growth_interval=growth_interval)
    traj = []
    for i in range(steps):
        opt.zero_grad()
        loss = (p * p).sum() * (float("inf") if i in inf_steps else 1.0)
        sc.scale(loss).backward()
        if i % 4 == 1:
            sc.unscale_(opt)
            with pytest.raises(RuntimeError, match="already been called"):
                sc.unscale_(opt)
        sc.step(opt)
        with pytest.raises(RuntimeError, match="step\\(\\) has already been called"):
            sc.step(opt)
        before = sc.get_scale()
        sc.update()
        traj.append((before, sc.get_scale(), sc._get_growth_tracker(),
                     p.detach().numpy().copy().tolist()))
    return traj, sc


def test_grad_scaler_trajectory_matches_torch():
    infs = {2, 3, 9}
    te, se = _scaler_run(ember, infs)
    tt, st = _scaler_run(torch, infs)
    for a, b in zip(te, tt):
        assert a[:3] == b[:3]
        np.testing.assert_allclose(a[3], b[3], rtol=1e-6)
    assert se.state_dict() == st.state_dict()


def test_grad_scaler_update_new_scale_and_state_dict():
    se, st = ember.amp.GradScaler("cpu"), torch.amp.GradScaler("cpu")
    assert se.get_scale() == st.get_scale() == 65536.0
    assert se.state_dict() == st.state_dict()
    se.scale(ember.ones(())), st.scale(torch.ones(()))
    se.update(8.0), st.update(8.0)
    assert se.get_scale() == st.get_scale() == 8.0
    se.update(ember.tensor(4.0)), st.update(torch.tensor(4.0))
    assert se.get_scale() == 4.0
    s2 = ember.amp.GradScaler("cpu", init_scale=1.0)
    s2.load_state_dict(se.state_dict())
    assert s2.state_dict() == se.state_dict()
    s3 = pickle.loads(pickle.dumps(se))
    assert s3.get_scale() == 4.0 and s3._scale is None
    assert se.is_enabled()
    with pytest.raises(AssertionError, match="_scale is None"):
        ember.amp.GradScaler("cpu").update()


def test_grad_scaler_disabled_and_cuda():
    sd = ember.amp.GradScaler(enabled=False)
    x = ember.ones(2)
    assert sd.scale(x) is x and sd.get_scale() == 1.0 and sd.state_dict() == {}
    with pytest.raises(RuntimeError, match="empty"):
        ember.amp.GradScaler("cpu").load_state_dict({})
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        sc = ember.cuda.amp.GradScaler()
    assert not sc.is_enabled()
    p = ember.ones(2, requires_grad=True)
    opt = ember.optim.SGD([p], lr=1.0)
    sc.scale((p * 2).sum()).backward()
    sc.step(opt)
    sc.update()
    np.testing.assert_allclose(p.detach().numpy(), -1.0)


def test_grad_scaler_scales_iterables_and_rejects_fp16_grads():
    sc = ember.amp.GradScaler("cpu", init_scale=4.0)
    a, b = sc.scale([ember.ones(1), (ember.ones(1), ember.ones(1))])
    assert a.item() == 4.0 and b[1].item() == 4.0
    p = ember.ones(2, dtype=ember.float16, requires_grad=True)
    opt = ember.optim.SGD([p], lr=1.0)
    sc.scale(p.sum()).backward()
    with pytest.raises(ValueError, match="FP16"):
        sc.unscale_(opt)


@pytest.mark.parametrize("name,shapes", [("inner", [(4, 6), (5, 6)]),
                                         ("chain_matmul", [(4, 6), (6, 5), (5, 3)]),
                                         ("outer", [(4,), (5,)]), ("kron", [(2, 3), (3, 2)])])
def test_autocast_reaches_ops_inside_composites(name, shapes):
    """Note [composite parts]: a composite's matmul is autocast like torch's."""
    import torch
    rng = np.random.default_rng(0)
    args = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    with ember.autocast("cpu", dtype=ember.bfloat16):
        e = getattr(ember, name)(*map(ember.tensor, args))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        t = getattr(torch, name)(*map(torch.tensor, args))
    assert str(e.dtype) == str(t.dtype)
    np.testing.assert_allclose(e.float().numpy(), t.float().numpy(), rtol=2e-2, atol=2e-2)


def test_linear_under_autocast_casts_every_operand_as_torch():
    torch = pytest.importorskip("torch")
    for L in (torch, ember):
        L.manual_seed(0)
    out = {}
    for L in (torch, ember):
        x = L.tensor(np.linspace(-1, 1, 30, dtype=np.float32).reshape(2, 5, 3)).bfloat16()
        w = L.tensor(np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3))
        b = L.tensor(np.linspace(0, 1, 4, dtype=np.float32))
        with L.autocast("cpu", dtype=L.bfloat16):
            y = L.nn.functional.linear(x, w, b)
        out[L.__name__] = (str(y.dtype), y.float().numpy())
    assert out["torch"][0] == out["ember"][0] == "torch.bfloat16"
    np.testing.assert_array_equal(out["ember"][1], out["torch"][1])
