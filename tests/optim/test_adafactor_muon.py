"""optim.Adafactor, optim.Muon and optim.swap_in_optimizer_params_and_state vs torch 2.13."""
import copy
import inspect

import numpy as np
import pytest

import ember
import ember.optim as eoptim

torch = pytest.importorskip("torch")


def _pair(shapes, dtype, seed):
    r = np.random.default_rng(seed)
    init = [r.standard_normal(s).astype(dtype) for s in shapes]
    return ([torch.tensor(a, requires_grad=True) for a in init],
            [ember.tensor(a, requires_grad=True) for a in init])


def _run(name, shapes, kwargs, steps=6, dtype=np.float32, seed=0):
    """Step torch's and ember's optimizer on the same gradients; return both."""
    tp, ep = _pair(shapes, dtype, seed)
    topt, eopt = getattr(torch.optim, name)(tp, **kwargs), getattr(eoptim, name)(ep, **kwargs)
    r = np.random.default_rng(seed + 1)
    for k in range(steps):
        for a, b in zip(tp, ep):
            g = (r.standard_normal(a.shape) * (k + 1)).astype(dtype)
            a.grad, b.grad = torch.tensor(g), ember.tensor(g)
        topt.step()
        eopt.step()
    return tp, ep, topt, eopt


def _close(t, e, tol):
    np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=tol, atol=tol)


def _same_state(topt, eopt, tol):
    ts, es = topt.state_dict(), eopt.state_dict()
    assert ts["param_groups"] == es["param_groups"]
    assert ts["state"].keys() == es["state"].keys()
    for i in ts["state"]:
        assert list(ts["state"][i]) == list(es["state"][i])
        for key, value in ts["state"][i].items():
            assert tuple(value.shape) == tuple(es["state"][i][key].shape), key
            _close(value, es["state"][i][key], tol)


# ---- Adafactor --------------------------------------------------------------------------

def _names_and_defaults(f):
    return [(n, p.default, p.kind) for n, p in inspect.signature(f).parameters.items()]


def test_adafactor_signature_matches_torch():
    assert _names_and_defaults(eoptim.Adafactor) == _names_and_defaults(torch.optim.Adafactor)


@pytest.mark.parametrize("kwargs", [
    {}, {"weight_decay": 0.1, "lr": 0.05}, {"maximize": True, "d": 2.0},
    {"eps": (1e-3, 1e-2), "beta2_decay": -0.5}, {"lr": 0.3}])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_adafactor_trajectory_1d_2d_3d(kwargs, dtype):
    tp, ep, topt, eopt = _run("Adafactor", [(), (5,), (3, 4), (2, 3, 4)], kwargs, dtype=dtype)
    tol = 2e-6 if dtype == np.float32 else 1e-12
    for t, e in zip(tp, ep):
        _close(t, e, tol)
    _same_state(topt, eopt, tol)
    assert set(eopt.state[ep[2]]) == {"step", "row_var", "col_var"}
    assert set(eopt.state[ep[1]]) == {"step", "variance"}
    assert eopt.state[ep[3]]["row_var"].shape == (2, 3, 1)
    assert eopt.state[ep[3]]["col_var"].shape == (2, 1, 4)
    assert eopt.state[ep[0]]["step"].item() == 6


def test_adafactor_state_dict_round_trip_continues_like_torch():
    tp, ep, topt, eopt = _run("Adafactor", [(4,), (3, 5)], {"weight_decay": 0.01}, steps=3)
    ep2 = [ember.tensor(p.detach().numpy(), requires_grad=True) for p in ep]
    eopt2 = eoptim.Adafactor(ep2, weight_decay=0.01)
    eopt2.load_state_dict(copy.deepcopy(eopt.state_dict()))
    for a, b, c in zip(tp, ep, ep2):
        g = np.full(a.shape, 0.25, np.float32)
        a.grad, b.grad, c.grad = torch.tensor(g), ember.tensor(g), ember.tensor(g)
    topt.step()
    eopt.step()
    eopt2.step()
    for t, e, e2 in zip(tp, ep, ep2):
        _close(t, e, 2e-6)
        _close(e, e2, 0)
    assert eopt2.state[ep2[0]]["step"].item() == 4


@pytest.mark.parametrize("kwargs", [
    {"lr": -1.0}, {"beta2_decay": 0.1}, {"eps": (-1.0, 1e-3)}, {"eps": (None, -1.0)},
    {"d": 0.5}, {"weight_decay": -1.0}])
def test_adafactor_bad_arguments_raise_like_torch(kwargs):
    with pytest.raises(ValueError) as t_err:
        torch.optim.Adafactor([torch.zeros(2, requires_grad=True)], **kwargs)
    with pytest.raises(ValueError) as e_err:
        eoptim.Adafactor([ember.zeros(2, requires_grad=True)], **kwargs)
    assert str(e_err.value) == str(t_err.value)


def test_adafactor_tensor_lr_and_complex_are_checked():
    with pytest.raises(ValueError, match="1-element"):
        eoptim.Adafactor([ember.zeros(2, requires_grad=True)], lr=ember.tensor([1.0, 2.0]))
    p = ember.zeros(2, 2, dtype=ember.complex64, requires_grad=True)
    p.grad = ember.ones_like(p)
    with pytest.raises(RuntimeError, match="complex"):
        eoptim.Adafactor([p]).step()


# ---- Muon ---------------------------------------------------------------------------------

def test_muon_signature_matches_torch():
    assert _names_and_defaults(eoptim.Muon) == _names_and_defaults(torch.optim.Muon)


@pytest.mark.parametrize("shape", [(3, 4), (5, 2), (6, 6)])
@pytest.mark.parametrize("kwargs", [
    {}, {"nesterov": False}, {"adjust_lr_fn": "match_rms_adamw", "lr": 0.02},
    {"momentum": 0.5, "weight_decay": 0.0, "ns_steps": 3}, {"lr": 0.1, "adjust_lr_fn": "original"},
    {"ns_coefficients": (2.0, -1.5, 0.5), "eps": 1e-3}])
def test_muon_trajectory_matches_torch(shape, kwargs):
    tp, ep, topt, eopt = _run("Muon", [shape], kwargs, steps=4)
    _close(tp[0], ep[0], 1e-6)
    _same_state(topt, eopt, 1e-6)


@pytest.mark.parametrize("name", ["Adafactor", "Muon"])
def test_tensor_lr_matches_torch(name):
    tp, ep, topt, eopt = _run(name, [(3, 4)], {}, steps=0)
    topt = getattr(torch.optim, name)(tp, lr=torch.tensor(0.05))
    eopt = getattr(eoptim, name)(ep, lr=ember.tensor(0.05))
    r = np.random.default_rng(5)
    for _ in range(3):
        g = r.standard_normal((3, 4)).astype(np.float32)
        tp[0].grad, ep[0].grad = torch.tensor(g), ember.tensor(g)
        topt.step()
        eopt.step()
    _close(tp[0], ep[0], 1e-6)


def test_muon_state_dict_round_trip_continues_like_torch():
    tp, ep, topt, eopt = _run("Muon", [(4, 3)], {"lr": 0.02}, steps=2)
    ep2 = [ember.tensor(ep[0].detach().numpy(), requires_grad=True)]
    eopt2 = eoptim.Muon(ep2, lr=0.02)
    eopt2.load_state_dict(copy.deepcopy(eopt.state_dict()))
    g = np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3)
    tp[0].grad, ep[0].grad, ep2[0].grad = torch.tensor(g), ember.tensor(g), ember.tensor(g)
    for opt in (topt, eopt, eopt2):
        opt.step()
    _close(tp[0], ep[0], 1e-6)
    _close(ep[0], ep2[0], 0)


def test_muon_float64_params_orthogonalise_in_bfloat16_like_torch():
    tp, ep, topt, eopt = _run("Muon", [(4, 3)], {"lr": 1.0, "weight_decay": 0.0},
                              steps=2, dtype=np.float64)
    _close(tp[0], ep[0], 1e-12)
    assert ep[0].dtype == ember.float64


def test_muon_update_is_nearly_orthogonal():
    from ember.optim.muon import newton_schulz
    m = ember.tensor(np.random.default_rng(3).standard_normal((4, 7)), dtype=ember.float32)
    o = newton_schulz(m, (3.4445, -4.775, 2.0315), 5, 1e-7).float()
    s = np.linalg.svd(o.numpy(), compute_uv=False)
    assert np.all((s > 0.6) & (s < 1.25)), s


@pytest.mark.parametrize("shape", [(5,), (2, 3, 4)])
def test_muon_rejects_non_2d_params_like_torch(shape):
    with pytest.raises(ValueError) as t_err:
        torch.optim.Muon([torch.zeros(shape, requires_grad=True)])
    with pytest.raises(ValueError) as e_err:
        eoptim.Muon([ember.zeros(shape, requires_grad=True)])
    assert str(e_err.value) == str(t_err.value)


@pytest.mark.parametrize("kwargs", [{"lr": -1.0}, {"weight_decay": -1.0}, {"momentum": -1.0},
                                    {"adjust_lr_fn": "foo"}])
def test_muon_bad_arguments_raise_like_torch(kwargs):
    with pytest.raises(ValueError) as t_err:
        torch.optim.Muon([torch.zeros(2, 2, requires_grad=True)], **kwargs)
    with pytest.raises(ValueError) as e_err:
        eoptim.Muon([ember.zeros(2, 2, requires_grad=True)], **kwargs)
    assert str(e_err.value) == str(t_err.value)


def test_muon_checks_groups_added_later_at_step():
    p = ember.zeros(2, 2, requires_grad=True)
    opt = eoptim.Muon([p])
    q = ember.zeros(3, requires_grad=True)
    opt.add_param_group({"params": [q]})          # accepted, as in torch
    q.grad = ember.ones(3)
    with pytest.raises(ValueError, match="2D"):
        opt.step()


# ---- swap_in_optimizer_params_and_state ---------------------------------------------------

def _swap_run(lib):
    """Step SGD once on a model, then once inside the swap on copies; report what changed."""
    lib.manual_seed(0)
    w = lib.tensor([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]], requires_grad=True)
    b = lib.tensor([0.1, -0.2], requires_grad=True)
    opt = lib.optim.SGD([w, b], lr=0.1, momentum=0.9)
    w.grad, b.grad = lib.ones_like(w), lib.ones_like(b)
    opt.step()
    new = {"weight": w.detach().clone().requires_grad_(), "bias": b.detach().clone()}
    for p in new.values():
        p.grad = lib.full_like(p, 0.5)
    osd = copy.deepcopy(opt.state_dict())
    osd["param_groups"][0]["lr"] = 1.0
    live_w = w.detach().clone()
    with lib.optim.swap_in_optimizer_params_and_state(opt, new, osd) as got:
        assert got is None
        assert opt.param_groups[0]["params"][0] is new["weight"]
        assert opt.state[new["weight"]]["momentum_buffer"] is osd["state"][0]["momentum_buffer"]
        assert opt.param_groups[0]["lr"] == 1.0
        opt.step()
        opt.state[new["bias"]]["extra"] = 1
    assert opt.param_groups[0]["params"][0] is w and opt.param_groups[0]["lr"] == 0.1
    assert bool((w == live_w).all())
    assert "extra" not in osd["state"][1] and osd["param_groups"][0]["lr"] == 1.0
    return (new["weight"].detach().numpy().copy(), osd["state"][0]["momentum_buffer"].numpy(),
            opt.state[w]["momentum_buffer"].numpy())


def test_swap_in_optimizer_params_and_state_matches_torch():
    for t, e in zip(_swap_run(torch), _swap_run(ember)):
        np.testing.assert_allclose(e, t, rtol=1e-6)


def test_swap_in_errors_and_restore_on_exception():
    for lib in (torch, ember):
        p = lib.zeros(2, requires_grad=True)
        opt = lib.optim.SGD([p], lr=0.1, momentum=0.9)
        osd = opt.state_dict()
        with pytest.raises(RuntimeError, match="initialized optimizer state"):
            with lib.optim.swap_in_optimizer_params_and_state(opt, {"p": p}, osd):
                pass
        p.grad = lib.ones(2)
        opt.step()
        osd = opt.state_dict()
        with pytest.raises(RuntimeError, match="ordering"):
            with lib.optim.swap_in_optimizer_params_and_state(opt, {}, osd):
                pass
        with pytest.raises(RuntimeError, match="list of param-group dicts"):
            with lib.optim.swap_in_optimizer_params_and_state(opt, {"p": p}, {"state": {}}):
                pass
        with pytest.raises(KeyError):
            with lib.optim.swap_in_optimizer_params_and_state(opt, {"p": p.detach()}, osd):
                raise KeyError("x")
        assert opt.param_groups[0]["params"][0] is p
