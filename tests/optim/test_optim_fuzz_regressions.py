"""Regressions found by differential fuzzing of ember.optim against torch.optim (the oracle)."""
import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(7)
GRADS = [RNG.standard_normal(3) for _ in range(10)]


def _run(lib, name, groups_fn, grads_fn, steps, **kwargs):
    params, groups = groups_fn(lib)
    opt = getattr(lib.optim, name)(groups, **kwargs)
    out = []
    for k in range(steps):
        grads_fn(lib, opt, params, k)
        opt.step()
        out.append([p.detach().numpy().copy() for p in params])
    return opt, params, out


def _assert_same(a, b):
    for xs, ys in zip(a, b):
        for x, y in zip(xs, ys):
            np.testing.assert_allclose(y, x, rtol=1e-10, atol=1e-12)


def test_adagrad_groups_start_sum_at_constructor_initial_accumulator_value():
    # torch fills every group's ``sum`` with the constructor's value, even when a group
    # overrides initial_accumulator_value
    def groups(lib):
        a = lib.tensor(np.ones(3), requires_grad=True)
        b = lib.tensor(np.arange(3.0), requires_grad=True)
        return [a, b], [{"params": [a]}, {"params": [b], "initial_accumulator_value": 0.0}]

    def grads(lib, opt, params, k):
        for p in params:
            p.grad = lib.tensor(GRADS[k])

    t_opt, _, t = _run(torch, "Adagrad", groups, grads, 6, lr=0.1,
                       initial_accumulator_value=0.5)
    e_opt, _, e = _run(ember, "Adagrad", groups, grads, 6, lr=0.1,
                       initial_accumulator_value=0.5)
    _assert_same(t, e)
    np.testing.assert_allclose(e_opt.state_dict()["state"][1]["sum"].numpy(),
                               t_opt.state_dict()["state"][1]["sum"].numpy(), rtol=1e-12)


def test_adagrad_complex_initial_accumulator_fills_both_parts():
    init = np.array([1 + 2j, 3 - 1j])
    res = []
    for lib in (torch, ember):
        p = lib.tensor(init.copy(), requires_grad=True)
        opt = lib.optim.Adagrad([p], lr=0.1, initial_accumulator_value=0.5)
        res.append(opt.state[p]["sum"].numpy().copy())
        p.grad = lib.tensor(np.array([1 + 1j, 2j]))
        opt.step()
        res.append(p.detach().numpy().copy())
    np.testing.assert_allclose(res[2], res[0])
    np.testing.assert_allclose(res[3], res[1], rtol=1e-12)


def test_adagrad_add_param_group_creates_state_lazily():
    def groups(lib):
        a = lib.tensor(np.ones(3), requires_grad=True)
        b = lib.tensor(np.arange(3.0), requires_grad=True)
        return [a, b], [a]

    def grads(lib, opt, params, k):
        if k == 2:
            opt.add_param_group({"params": [params[1]], "lr": 0.3,
                                 "initial_accumulator_value": 2.0})
        params[0].grad = lib.tensor(GRADS[k])
        if k >= 2:
            params[1].grad = lib.tensor(GRADS[-k])

    t_opt, _, t = _run(torch, "Adagrad", groups, grads, 6, lr=0.1,
                       initial_accumulator_value=0.25)
    e_opt, _, e = _run(ember, "Adagrad", groups, grads, 6, lr=0.1,
                       initial_accumulator_value=0.25)
    _assert_same(t, e)
    ts, es = t_opt.state_dict()["state"][1], e_opt.state_dict()["state"][1]
    assert float(es["step"]) == float(ts["step"]) == 4.0
    np.testing.assert_allclose(es["sum"].numpy(), ts["sum"].numpy(), rtol=1e-12)


def test_sgd_accepts_nan_hyper_parameters_like_torch():
    # SGD only rejects values below zero; NaN compares False and passes (as in torch)
    for kw in ({"lr": float("nan")}, {"lr": 0.1, "momentum": float("nan")},
               {"lr": 0.1, "weight_decay": float("nan")}):
        res = []
        for lib in (torch, ember):
            p = lib.tensor(np.ones(3), requires_grad=True)
            opt = lib.optim.SGD([p], **kw)
            p.grad = lib.tensor(np.ones(3))
            opt.step()
            res.append(p.detach().numpy())
        np.testing.assert_array_equal(res[1], res[0])
    for lib in (torch, ember):
        with pytest.raises(ValueError, match="Invalid learning rate: -1"):
            lib.optim.SGD([lib.ones(1, requires_grad=True)], lr=-1)


@pytest.mark.parametrize("name", ["Adam", "AdamW", "Adamax", "NAdam", "RAdam", "SparseAdam"])
def test_one_element_betas_raise_index_error(name):
    for lib in (torch, ember):
        with pytest.raises(IndexError):
            getattr(lib.optim, name)([lib.ones(2, requires_grad=True)], betas=(0.9,))


@pytest.mark.parametrize("name", ["Adamax", "NAdam", "RAdam"])
@pytest.mark.parametrize("both", [True, False])
def test_tensor_betas_trajectory(name, both):
    res = []
    for lib in (torch, ember):
        p = lib.tensor(np.ones(3), requires_grad=True)
        betas = (lib.tensor(0.8), lib.tensor(0.9) if both else 0.95)
        opt = getattr(lib.optim, name)([p], lr=0.05, betas=betas)
        traj = []
        for g in GRADS:
            p.grad = lib.tensor(g)
            opt.step()
            traj.append(p.detach().numpy().copy())
        res.append(np.array(traj))
    # torch does the beta arithmetic in the betas' float32; ember in float64
    np.testing.assert_allclose(res[1], res[0], rtol=1e-6)


@pytest.fixture
def float64_default():
    torch.set_default_dtype(torch.float64)
    ember.set_default_dtype(ember.float64)
    yield
    torch.set_default_dtype(torch.float32)
    ember.set_default_dtype(ember.float32)


@pytest.mark.parametrize("name,kwargs", [
    ("Adam", {"lr": 0.1}), ("AdamW", {"lr": 0.1}), ("Adagrad", {"lr": 0.1, "lr_decay": 0.1}),
    ("Adadelta", {}), ("NAdam", {"weight_decay": 0.1}), ("RAdam", {"weight_decay": 0.1}),
])
def test_differentiable_step_backpropagates(name, kwargs, float64_default):
    # the update used to modify (in place) tensors that autograd had saved
    res = []
    for lib in (torch, ember):
        leaf = lib.tensor(np.array([1.0, -2.0, 0.5]), requires_grad=True)
        w = lib.tensor(np.array([0.3, 0.2, -0.1]), requires_grad=True)
        p = leaf.clone()
        opt = getattr(lib.optim, name)([p], differentiable=True, **kwargs)
        for g in GRADS[:3]:
            p.grad = lib.tensor(g) * w
            opt.step()
        (p * p).sum().backward()
        res.append([p.detach().numpy().copy(), leaf.grad.numpy().copy(), w.grad.numpy().copy()])
    for x, y in zip(*res):
        np.testing.assert_allclose(y, x, rtol=1e-10, atol=1e-12)
