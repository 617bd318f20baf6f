"""ember.optim vs torch.optim (torch 2.13 is the oracle): trajectories, state dicts, API."""
import importlib
import copy
import warnings

import numpy as np
import pytest

import ember
import ember.optim as eoptim

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(1234)
A = RNG.standard_normal((5, 6))
B = RNG.standard_normal(5)
SHAPES = [(6,), (2, 3), ()]


def fake_grad(p, k):
    """A deterministic, nonlinear gradient of the current value (same in both libraries)."""
    p = np.asarray(p)
    flat = p.real.astype(np.float64).reshape(-1)
    v = np.resize(flat, 6)
    g = np.resize(A.T @ (A @ v - B), flat.size) + 0.3 * np.sin(3 * flat) + 0.05 * (k - 3)
    if np.iscomplexobj(p):
        im = p.imag.astype(np.float64).reshape(-1)
        g = g + 1j * (np.cos(2 * im) - 0.2 * flat)
    return g.reshape(p.shape).astype(p.dtype)


def make_params(dtype=np.float64, seed=0, cplx=False):
    r = np.random.default_rng(seed)
    out = []
    for s in SHAPES:
        a = r.standard_normal(s)
        if cplx:
            a = a + 1j * r.standard_normal(s)
        out.append(np.asarray(a, dtype=dtype))
    return out


def run_pair(name, kwargs, steps=8, dtype=np.float64, groups=False, cplx=False,
             skip_grad=None):
    init = make_params(dtype, cplx=cplx)
    tp = [torch.tensor(a.copy(), requires_grad=True) for a in init]
    ep = [ember.tensor(a.copy(), requires_grad=True) for a in init]
    if groups:
        tp_arg = [{"params": tp[:1]}, {"params": tp[1:], "lr": 0.03}]
        ep_arg = [{"params": ep[:1]}, {"params": ep[1:], "lr": 0.03}]
    else:
        tp_arg, ep_arg = tp, ep
    topt = getattr(torch.optim, name)(tp_arg, **kwargs)
    eopt = getattr(eoptim, name)(ep_arg, **kwargs)
    for k in range(steps):
        for i, (a, b) in enumerate(zip(tp, ep)):
            if skip_grad is not None and k == skip_grad and i == 1:
                a.grad = None
                b.grad = None
                continue
            a.grad = torch.tensor(fake_grad(a.detach().numpy(), k))
            b.grad = ember.tensor(fake_grad(b.detach().numpy(), k))
        topt.step()
        eopt.step()
        for a, b in zip(tp, ep):
            assert b.dtype == getattr(ember, str(a.dtype).split(".")[1])
            rtol = 1e-10 if dtype == np.float64 or dtype == np.complex128 else 1e-5
            np.testing.assert_allclose(b.detach().numpy(), a.detach().numpy(), rtol=rtol,
                                       atol=rtol)
    return topt, eopt, tp, ep


CASES = [
    ("SGD", {"lr": 0.05}),
    ("SGD", {"lr": 0.05, "momentum": 0.9}),
    ("SGD", {"lr": 0.05, "momentum": 0.9, "dampening": 0.3, "weight_decay": 0.1}),
    ("SGD", {"lr": 0.05, "momentum": 0.9, "nesterov": True, "maximize": True}),
    ("Adam", {}),
    ("Adam", {"lr": 0.05, "amsgrad": True}),
    ("Adam", {"lr": 0.05, "weight_decay": 0.1, "maximize": True}),
    ("Adam", {"lr": 0.05, "weight_decay": 0.1, "decoupled_weight_decay": True,
              "amsgrad": True}),
    ("Adam", {"lr": 0.05, "betas": (0.8, 0.9), "eps": 1e-4, "foreach": False}),
    ("AdamW", {"lr": 0.05}),
    ("AdamW", {"lr": 0.05, "amsgrad": True, "weight_decay": 0.2, "maximize": True}),
    ("Adagrad", {}),
    ("Adagrad", {"lr": 0.1, "lr_decay": 0.1, "weight_decay": 0.1,
                 "initial_accumulator_value": 0.5}),
    ("Adadelta", {}),
    ("Adadelta", {"lr": 0.5, "rho": 0.8, "weight_decay": 0.1, "maximize": True}),
    ("Adamax", {}),
    ("Adamax", {"lr": 0.05, "weight_decay": 0.1, "maximize": True}),
    ("NAdam", {}),
    ("NAdam", {"lr": 0.05, "weight_decay": 0.1, "momentum_decay": 0.01}),
    ("NAdam", {"lr": 0.05, "weight_decay": 0.1, "decoupled_weight_decay": True}),
    ("RAdam", {}),
    ("RAdam", {"lr": 0.05, "weight_decay": 0.1, "betas": (0.9, 0.6)}),
    ("RAdam", {"lr": 0.05, "weight_decay": 0.1, "decoupled_weight_decay": True,
               "betas": (0.9, 0.6)}),
    ("RMSprop", {}),
    ("RMSprop", {"lr": 0.01, "centered": True}),
    ("RMSprop", {"lr": 0.01, "momentum": 0.7, "weight_decay": 0.1, "centered": True}),
    ("RMSprop", {"lr": 0.01, "momentum": 0.7, "alpha": 0.9, "maximize": True}),
    ("Rprop", {}),
    ("Rprop", {"lr": 0.05, "etas": (0.3, 1.5), "step_sizes": (1e-3, 0.2), "maximize": True}),
    ("ASGD", {}),
    ("ASGD", {"lr": 0.05, "lambd": 0.01, "alpha": 0.5, "t0": 3, "weight_decay": 0.1}),
]


def _id(case):
    return case[0] + "-" + ",".join(f"{k}={v}" for k, v in case[1].items())


@pytest.mark.parametrize("case", CASES, ids=[_id(c) for c in CASES])
def test_trajectory_float64(case):
    run_pair(*case)


@pytest.mark.parametrize("case", CASES[::3], ids=[_id(c) for c in CASES[::3]])
def test_trajectory_float32(case):
    run_pair(*case, dtype=np.float32)


@pytest.mark.parametrize("case", CASES[::2], ids=[_id(c) for c in CASES[::2]])
def test_trajectory_groups_and_missing_grad(case):
    run_pair(*case, groups=True, skip_grad=2)


CPLX = [("SGD", {"lr": 0.05, "momentum": 0.9}), ("Adam", {"lr": 0.05, "amsgrad": True}),
        ("AdamW", {"lr": 0.05}), ("Adagrad", {"lr": 0.1}), ("Adadelta", {}),
        ("Adamax", {"lr": 0.05}), ("NAdam", {"lr": 0.05}), ("RAdam", {"lr": 0.05}),
        ("RMSprop", {"lr": 0.01, "centered": True, "momentum": 0.5}), ("Rprop", {}),
        ("ASGD", {"lr": 0.05, "t0": 2})]


@pytest.mark.parametrize("case", CPLX, ids=[_id(c) for c in CPLX])
def test_trajectory_complex(case):
    run_pair(*case, cplx=True, dtype=np.complex128)


def _assert_sd_equal(esd, tsd):
    assert list(esd) == list(tsd) == ["state", "param_groups"]
    assert len(esd["param_groups"]) == len(tsd["param_groups"])
    for eg, tg in zip(esd["param_groups"], tsd["param_groups"]):
        assert list(eg) == list(tg)
        for k in tg:
            if k == "betas":
                assert tuple(eg[k]) == tuple(tg[k])
            else:
                assert eg[k] == tg[k], k
    assert list(esd["state"]) == list(tsd["state"])
    for i in tsd["state"]:
        es, ts = esd["state"][i], tsd["state"][i]
        assert list(es) == list(ts)
        for k in ts:
            if isinstance(ts[k], torch.Tensor):
                assert isinstance(es[k], ember.Tensor), k
                assert str(es[k].dtype) == str(ts[k].dtype), k
                assert tuple(es[k].shape) == tuple(ts[k].shape), k
                np.testing.assert_allclose(es[k].numpy(), ts[k].numpy(), rtol=1e-10)
            else:
                assert es[k] == ts[k], k


@pytest.mark.parametrize("case", CASES[::2], ids=[_id(c) for c in CASES[::2]])
def test_state_dict_structure_and_roundtrip(case):
    name, kw = case
    topt, eopt, tp, ep = run_pair(name, kw, steps=4, groups=True)
    _assert_sd_equal(eopt.state_dict(), topt.state_dict())
    # load into a fresh optimizer over copies of the parameters, continue both
    ep2 = [ember.tensor(p.detach().numpy().copy(), requires_grad=True) for p in ep]
    eopt2 = getattr(eoptim, name)([{"params": ep2[:1]}, {"params": ep2[1:], "lr": 0.03}], **kw)
    eopt2.load_state_dict(copy.deepcopy(eopt.state_dict()))
    tp2 = [torch.tensor(p.detach().numpy().copy(), requires_grad=True) for p in tp]
    topt2 = getattr(torch.optim, name)([{"params": tp2[:1]}, {"params": tp2[1:], "lr": 0.03}],
                                       **kw)
    topt2.load_state_dict(copy.deepcopy(topt.state_dict()))
    _assert_sd_equal(eopt2.state_dict(), topt2.state_dict())
    topt = topt2
    tp = tp2
    for k in range(3):
        for a, b in zip(tp, ep2):
            a.grad = torch.tensor(fake_grad(a.detach().numpy(), k))
            b.grad = ember.tensor(fake_grad(b.detach().numpy(), k))
        topt.step()
        eopt2.step()
    for a, b in zip(tp, ep2):
        np.testing.assert_allclose(b.detach().numpy(), a.detach().numpy(), rtol=1e-10)


def test_state_dict_step_dtype_and_keys():
    p = ember.zeros(3, requires_grad=True)
    opt = eoptim.Adam([p])
    p.grad = ember.ones(3)
    opt.step()
    st = opt.state_dict()["state"][0]
    assert list(st) == ["step", "exp_avg", "exp_avg_sq"]
    assert st["step"].dtype == ember.float32 and st["step"].dim() == 0
    assert st["step"].item() == 1.0


def test_load_state_dict_errors():
    p, q = ember.zeros(2, requires_grad=True), ember.zeros(2, requires_grad=True)
    opt = eoptim.SGD([p, q], lr=0.1)
    sd = opt.state_dict()
    other = eoptim.SGD([{"params": [p]}, {"params": [q]}], lr=0.1)
    with pytest.raises(ValueError, match="different number of parameter groups"):
        other.load_state_dict(sd)
    third = eoptim.SGD([p], lr=0.1)
    with pytest.raises(ValueError, match="doesn't match the size of optimizer's group"):
        third.load_state_dict(sd)


def test_load_state_dict_changes_hyperparameters():
    p = ember.zeros(2, requires_grad=True)
    a = eoptim.SGD([p], lr=0.1, momentum=0.5)
    b = eoptim.SGD([p], lr=0.7)
    b.load_state_dict(a.state_dict())
    assert b.param_groups[0]["lr"] == 0.1 and b.param_groups[0]["momentum"] == 0.5
    assert b.param_groups[0]["params"][0] is p


def test_repr_matches_torch():
    for name, kw in [("SGD", {"lr": 0.1}), ("Adam", {}), ("AdamW", {"amsgrad": True}),
                     ("RMSprop", {}), ("LBFGS", {}), ("NAdam", {}), ("Rprop", {})]:
        e = getattr(eoptim, name)([ember.zeros(2, requires_grad=True)], **kw)
        t = getattr(torch.optim, name)([torch.zeros(2, requires_grad=True)], **kw)
        assert repr(e) == repr(t)


def test_defaults_match_torch():
    for name in ["SGD", "Adam", "AdamW", "Adagrad", "Adadelta", "Adamax", "NAdam", "RAdam",
                 "RMSprop", "Rprop", "ASGD", "LBFGS", "SparseAdam"]:
        e = getattr(eoptim, name)([ember.zeros(2, requires_grad=True)])
        t = getattr(torch.optim, name)([torch.zeros(2, requires_grad=True)])
        assert e.defaults == t.defaults, name
        eg = {k: v for k, v in e.param_groups[0].items() if k != "params"}
        tg = {k: v for k, v in t.param_groups[0].items() if k != "params"}
        assert eg == tg, name


def test_zero_grad():
    p = ember.ones(3, requires_grad=True)
    opt = eoptim.SGD([p], lr=0.1)
    (p * 2).sum().backward()
    opt.zero_grad(set_to_none=False)
    assert p.grad is not None and p.grad.sum().item() == 0
    opt.zero_grad()
    assert p.grad is None


def test_step_hooks():
    p = ember.ones(3, requires_grad=True)
    opt = eoptim.SGD([p], lr=0.1)
    calls = []
    h1 = opt.register_step_pre_hook(lambda o, a, k: calls.append(("pre", o is opt)))
    h2 = opt.register_step_post_hook(lambda o, a, k: calls.append(("post", o is opt)))
    g = eoptim.optimizer.register_optimizer_step_pre_hook(lambda o, a, k: calls.append("gpre"))
    p.grad = ember.ones(3)
    opt.step()
    assert calls == ["gpre", ("pre", True), ("post", True)]
    h1.remove()
    h2.remove()
    g.remove()
    opt.step()
    assert len(calls) == 3
    np.testing.assert_allclose(p.detach().numpy(), 0.8)

    def bad(o, a, k):
        return 5
    opt.register_step_pre_hook(bad)
    with pytest.raises(RuntimeError, match="must return None or a tuple"):
        opt.step()


def test_pre_hook_can_replace_closure():
    p = ember.ones(1, requires_grad=True)
    opt = eoptim.SGD([p], lr=0.1)
    opt.register_step_pre_hook(lambda o, a, k: ((o,), {"closure": lambda: 42.0}))
    p.grad = ember.ones(1)
    assert opt.step() == 42.0


def test_state_dict_hooks():
    p = ember.ones(1, requires_grad=True)
    opt = eoptim.SGD([p], lr=0.1)
    opt.register_state_dict_post_hook(lambda o, sd: {**sd, "extra": 1})
    assert opt.state_dict()["extra"] == 1
    seen = []
    opt.register_load_state_dict_pre_hook(lambda o, sd: seen.append("pre"))
    opt.register_load_state_dict_post_hook(lambda o: seen.append("post"))
    opt.load_state_dict(opt.state_dict())
    assert seen == ["pre", "post"]


def test_step_runs_under_no_grad_and_closure_with_grad():
    p = ember.ones(2, requires_grad=True)
    opt = eoptim.Adam([p], lr=0.1)
    seen = []

    def closure():
        seen.append(ember.is_grad_enabled())
        opt.zero_grad()
        loss = (p * p).sum()
        loss.backward()
        return loss
    loss = opt.step(closure)
    assert seen == [True]
    assert loss.item() == 2.0
    assert p.grad_fn is None and p.is_leaf


def test_add_param_group_and_errors():
    p, q = ember.zeros(2, requires_grad=True), ember.zeros(2, requires_grad=True)
    opt = eoptim.SGD([p], lr=0.1, momentum=0.9)
    opt.add_param_group({"params": q, "lr": 0.5})
    assert opt.param_groups[1]["lr"] == 0.5 and opt.param_groups[1]["momentum"] == 0.9
    with pytest.raises(ValueError, match="some parameters appear in more than one"):
        opt.add_param_group({"params": [p]})
    with pytest.raises(TypeError, match="param_group must be a dict"):
        opt.add_param_group([p])
    with pytest.raises(TypeError, match="ordered collections"):
        opt.add_param_group({"params": {ember.zeros(1, requires_grad=True)}})
    with pytest.raises(TypeError, match="optimizer can only optimize Tensors"):
        opt.add_param_group({"params": [1.0]})
    with pytest.raises(ValueError, match="can't optimize a non-leaf Tensor"):
        opt.add_param_group({"params": [p * 2]})
    with pytest.raises(ValueError, match="empty parameter list"):
        eoptim.SGD([], lr=0.1)
    with pytest.raises(TypeError, match="should be an iterable of Tensors or dicts"):
        eoptim.SGD(p, lr=0.1)
    with pytest.warns(UserWarning, match="duplicate parameters"):
        eoptim.SGD([p, p], lr=0.1)


def test_named_parameters():
    p, q = ember.zeros(2, requires_grad=True), ember.zeros(2, requires_grad=True)
    opt = eoptim.Adam([("a", p), ("b", q)])
    assert opt.param_groups[0]["param_names"] == ["a", "b"]
    assert opt.state_dict()["param_groups"][0]["param_names"] == ["a", "b"]
    with pytest.raises(ValueError, match="Some param names are missing"):
        eoptim.Adam([("a", p), q])


@pytest.mark.parametrize("name,kw,msg", [
    ("SGD", {"lr": -1}, "Invalid learning rate: -1"),
    ("SGD", {"lr": 0.1, "momentum": -1}, "Invalid momentum value: -1"),
    ("SGD", {"lr": 0.1, "nesterov": True}, "Nesterov momentum requires a momentum"),
    ("Adam", {"betas": (1.0, 0.9)}, "Invalid beta parameter at index 0: 1.0"),
    ("Adam", {"eps": -1}, "Invalid epsilon value: -1"),
    ("Adam", {"weight_decay": -1}, "Invalid weight_decay value: -1"),
    ("Adadelta", {"rho": 2}, "Invalid rho value: 2"),
    ("Rprop", {"etas": (1.5, 1.2)}, "Invalid eta values: 1.5, 1.2"),
    ("NAdam", {"momentum_decay": -1}, "Invalid momentum_decay value: -1"),
    ("Adagrad", {"lr_decay": -1}, "Invalid lr_decay value: -1"),
    ("RMSprop", {"alpha": -1}, "Invalid alpha value: -1"),
    ("SparseAdam", {"lr": 0}, "Invalid learning rate: 0"),
])
def test_constructor_errors_match_torch(name, kw, msg):
    with pytest.raises(ValueError) as te:
        getattr(torch.optim, name)([torch.zeros(2, requires_grad=True)], **kw)
    with pytest.raises(ValueError) as ee:
        getattr(eoptim, name)([ember.zeros(2, requires_grad=True)], **kw)
    assert str(ee.value) == str(te.value)
    assert msg in str(ee.value)


def test_fused_adam_as_torch():
    """``fused=True`` takes the fused record (ember/_ops/fused_optim.py), as torch's CPU path."""
    for lib, optim in ((ember, eoptim), (torch, torch.optim)):
        p = lib.zeros(2, requires_grad=True)
        opt = optim.Adam([p], lr=0.1, fused=True)
        p.grad = lib.tensor([1.0, -2.0])
        opt.step()
        with pytest.raises(RuntimeError, match="cannot be `True` together"):
            optim.Adam([p], fused=True, foreach=True)
        with pytest.raises(RuntimeError, match="does not support `differentiable`"):
            optim.Adam([p], fused=True, differentiable=True)
        np.testing.assert_allclose(p.detach().numpy(), [-0.1, 0.1], rtol=1e-6)


def test_sparse_adam_dense_grad_raises():
    p = ember.zeros(2, requires_grad=True)
    opt = eoptim.SparseAdam([p])
    p.grad = ember.ones(2)
    with pytest.raises(RuntimeError, match="SparseAdam does not support dense gradients"):
        opt.step()
    with pytest.raises(ValueError, match="SparseAdam does not support complex"):
        eoptim.SparseAdam([ember.zeros(2, dtype=ember.complex64, requires_grad=True)])


def test_adagrad_state_is_eager():
    p = ember.zeros(2, requires_grad=True)
    opt = eoptim.Adagrad([p], initial_accumulator_value=0.3)
    assert list(opt.state[p]) == ["step", "sum"]
    np.testing.assert_allclose(opt.state[p]["sum"].numpy(), 0.3)


def test_tensor_lr():
    init = make_params()
    tp = [torch.tensor(a, requires_grad=True) for a in init]
    ep = [ember.tensor(a, requires_grad=True) for a in init]
    topt = torch.optim.Adam(tp, lr=torch.tensor(0.05))
    eopt = eoptim.Adam(ep, lr=ember.tensor(0.05))
    for k in range(4):
        for a, b in zip(tp, ep):
            a.grad = torch.tensor(fake_grad(a.detach().numpy(), k))
            b.grad = ember.tensor(fake_grad(b.detach().numpy(), k))
        topt.step()
        eopt.step()
    for a, b in zip(tp, ep):
        np.testing.assert_allclose(b.detach().numpy(), a.detach().numpy(), rtol=1e-6)


def test_parameter_subclass():
    nn = importlib.import_module("ember.nn")
    w = nn.Parameter(ember.ones(3))
    opt = eoptim.SGD([w], lr=0.5)
    (w * w).sum().backward()
    opt.step()
    np.testing.assert_allclose(w.detach().numpy(), 0.0)


# ---- LBFGS --------------------------------------------------------------------------------

def _rosen(lib, x):
    return ((1 - x[:-1]) ** 2).sum() + 100 * ((x[1:] - x[:-1] ** 2) ** 2).sum()


@pytest.mark.parametrize("kw", [
    {},
    {"line_search_fn": "strong_wolfe"},
    {"lr": 0.5, "history_size": 3, "max_iter": 7},
    {"line_search_fn": "strong_wolfe", "history_size": 4, "max_iter": 10,
     "tolerance_change": 1e-12},
    {"max_iter": 5, "max_eval": 4},
])
def test_lbfgs_matches_torch(kw):
    x0 = np.array([-1.2, 1.0, 0.5, -0.3])
    xt = torch.tensor(x0, requires_grad=True)
    xe = ember.tensor(x0, requires_grad=True)
    topt = torch.optim.LBFGS([xt], **kw)
    eopt = eoptim.LBFGS([xe], **kw)

    def tclosure():
        topt.zero_grad()
        loss = _rosen(torch, xt)
        loss.backward()
        return loss

    def eclosure():
        eopt.zero_grad()
        loss = _rosen(ember, xe)
        loss.backward()
        return loss
    for _ in range(4):
        lt = topt.step(tclosure)
        le = eopt.step(eclosure)
        np.testing.assert_allclose(le.item(), lt.item(), rtol=1e-8, atol=1e-12)
        np.testing.assert_allclose(xe.detach().numpy(), xt.detach().numpy(), rtol=1e-7,
                                   atol=1e-10)
    ts, es = topt.state[xt], eopt.state[xe]
    assert es["func_evals"] == ts["func_evals"] and es["n_iter"] == ts["n_iter"]
    assert sorted(es) == sorted(ts)


def test_lbfgs_errors():
    p = ember.zeros(2, requires_grad=True)
    with pytest.raises(ValueError, match="doesn't support per-parameter options"):
        eoptim.LBFGS([{"params": [p]}, {"params": [ember.zeros(1, requires_grad=True)]}])
    opt = eoptim.LBFGS([p], line_search_fn="bogus")

    def closure():
        opt.zero_grad()
        loss = ((p - 1) ** 2).sum()
        loss.backward()
        return loss
    with pytest.raises(RuntimeError, match="only 'strong_wolfe' is supported"):
        opt.step(closure)


def test_functional_api_and_exports():
    for name in ["Adadelta", "Adagrad", "Adam", "AdamW", "SparseAdam", "Adamax", "ASGD",
                 "SGD", "RAdam", "Rprop", "RMSprop", "Optimizer", "NAdam", "LBFGS"]:
        assert hasattr(ember.optim, name)
    assert ember.optim.swa_utils.SWALR is not None
    from ember.optim.adam import adam  # noqa: F401
    from ember.optim.sgd import sgd  # noqa: F401
    assert issubclass(eoptim.AdamW, eoptim.Adam)


def test_updates_go_through_the_dispatcher():
    """The update is made of in-place ember ops, so modes (profiler, tracing) see it."""
    from ember._dispatch import Mode

    seen = []

    class Record(Mode):
        def __ember_dispatch__(self, op, args, kwargs):
            seen.append(str(getattr(op, "name", op)))
            return op(*args, **kwargs)

    p = ember.ones(3, requires_grad=True)
    opt = eoptim.Adam([p], lr=0.1, foreach=False)       # the op-by-op update
    p.grad = ember.ones(3)
    with Record():
        opt.step()
    text = " ".join(seen)
    for name in ("lerp_", "addcmul_", "addcdiv_", "sqrt"):
        assert name in text, (name, seen)
    seen.clear()
    with Record():
        eoptim.Adam([p], lr=0.1).step()                  # the fused record (one call)
    assert seen.count("_fused_adam_") == 1 and "lerp_.Scalar" not in seen
