"""A gradient computed with create_graph through ReLU-like activations depends on their
input in torch (its fused backward kernels take it), with zero derivative: a gradient
penalty's backward gives the biases before them zero gradients (not none), ReLU's input a
zero .grad, and the double-backward nodes torch's names."""
import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def _penalty(lib, act):
    lib.manual_seed(0)
    nn = lib.nn
    D = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), act(nn), nn.MaxPool2d(2), nn.Flatten(),
                      nn.Linear(64, 1))
    if lib is torch:
        D.load_state_dict({k: torch.from_numpy(v.copy()) for k, v in _penalty.sd.items()})
    else:
        _penalty.sd = {k: v.detach().numpy().copy() for k, v in D.state_dict().items()}
    x = lib.tensor(np.random.default_rng(0).standard_normal((4, 3, 8, 8)).astype(np.float32),
                   requires_grad=True)
    g, = lib.autograd.grad(D(x).sum(), x, create_graph=True)
    gp = ((g.flatten(1).norm(2, dim=1) - 1) ** 2).mean()
    gp.backward()
    return gp.item(), [None if p.grad is None else p.grad.numpy().copy() for p in D.parameters()]


@pytest.mark.parametrize("act", [lambda nn: nn.LeakyReLU(0.2), lambda nn: nn.ReLU(),
                                 lambda nn: nn.Hardtanh(), lambda nn: nn.ReLU6(),
                                 lambda nn: nn.ELU()])
def test_gradient_penalty_parameter_grads_as_torch(act):
    e_gp, e_grads = _penalty(ember, act)
    t_gp, t_grads = _penalty(torch, act)
    assert abs(e_gp - t_gp) < 1e-5 * max(1.0, abs(t_gp))
    for e, t in zip(e_grads, t_grads):
        assert (e is None) == (t is None)
        if t is not None:
            np.testing.assert_allclose(e, t, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("name", ["relu", "leaky_relu", "hardtanh", "relu6", "threshold",
                                  "smooth_l1_loss"])
def test_double_backward_reaches_the_input(name):
    x_np = np.random.default_rng(1).standard_normal((2, 3, 4))
    res = []
    for lib in (ember, torch):
        F = lib.nn.functional
        fn = {"relu": F.relu, "leaky_relu": lambda t: F.leaky_relu(t, 0.1),
              "hardtanh": F.hardtanh, "relu6": F.relu6,
              "threshold": lambda t: F.threshold(t, 0.1, 20.0),
              "smooth_l1_loss": lambda t: F.smooth_l1_loss(t, lib.zeros_like(t))}[name]
        x = lib.tensor(x_np, requires_grad=True)
        y = fn(x)
        g, = lib.autograd.grad((y * 1.3).sum(), x, create_graph=True)
        (g * lib.arange(g.numel(), dtype=g.dtype).reshape(g.shape)).sum().backward()
        res.append((g.requires_grad, type(g.grad_fn).__name__, x.grad.numpy()))
    (er, en, eg), (tr, tn, tg) = res
    assert er == tr and en == tn
    np.testing.assert_allclose(eg, tg, rtol=1e-10, atol=1e-12)
