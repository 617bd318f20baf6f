"""ember.autograd.forward_ad against torch.autograd.forward_ad."""
import numpy as np
import pytest

import ember
import ember.autograd.forward_ad as fwAD

torch = pytest.importorskip("torch")
tfw = torch.autograd.forward_ad
R = np.random.default_rng(1)


def _run(mod, fwd, fn, x, t, extra):
    with fwd.dual_level():
        d = fwd.make_dual(mod.tensor(x), mod.tensor(t))
        out = fn(d, *[mod.tensor(e) for e in extra])
        p, tan = fwd.unpack_dual(out)
        return p.detach().numpy().copy(), None if tan is None else tan.detach().numpy().copy()


FNS = [
    lambda x: x.sin() * x.exp(),
    lambda x: (x @ x.T).tanh().sum(1),
    lambda x: x.softmax(-1).log(),
    lambda x: x.reshape(-1)[1:4] ** 3,
    lambda x: x.max(dim=1)[0] + x.mean(),
    lambda x: x.transpose(0, 1).cumsum(0),
]


@pytest.mark.parametrize("k", range(len(FNS)))
def test_jvp_matches_torch(k):
    x, t = R.standard_normal((3, 4)), R.standard_normal((3, 4))
    pe, te = _run(ember, fwAD, FNS[k], x, t, [])
    pt, tt = _run(torch, tfw, FNS[k], x, t, [])
    np.testing.assert_allclose(pe, pt, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(te, tt, rtol=1e-10, atol=1e-12)


def test_two_inputs_and_unpack():
    x, t, w = R.standard_normal((3, 4)), R.standard_normal((3, 4)), R.standard_normal((4, 2))
    f = lambda a, b: (a @ b).sigmoid()
    pe, te = _run(ember, fwAD, f, x, t, [w])
    pt, tt = _run(torch, tfw, f, x, t, [w])
    np.testing.assert_allclose(te, tt, rtol=1e-10)
    with fwAD.dual_level():
        y = ember.tensor(x)
        p, tan = fwAD.unpack_dual(y)
        assert tan is None
        d = fwAD.make_dual(y, ember.tensor(t))
        p, tan = fwAD.unpack_dual(d)
        np.testing.assert_array_equal(tan.numpy(), t)
        np.testing.assert_array_equal(p.numpy(), x)
    # tangents are gone after the level
    p, tan = fwAD.unpack_dual(d)
    assert tan is None


def test_inplace_propagates_tangent():
    x, t = R.standard_normal(3), R.standard_normal(3)
    with fwAD.dual_level():
        d = fwAD.make_dual(ember.tensor(x), ember.tensor(t))
        y = d.clone()
        y.mul_(2)
        np.testing.assert_allclose(fwAD.unpack_dual(y).tangent.numpy(), 2 * t)


def test_errors():
    with pytest.raises(RuntimeError):
        fwAD.make_dual(ember.ones(2), ember.ones(2))
    with fwAD.dual_level():
        with pytest.raises(RuntimeError, match="size"):
            fwAD.make_dual(ember.ones(2), ember.ones(3))


def test_backward_still_works_on_primal():
    x = ember.tensor(R.standard_normal(3)).requires_grad_()
    with fwAD.dual_level():
        d = fwAD.make_dual(x, ember.ones(3, dtype=ember.float64))
        out = (d.sin() * 2).sum()
        out.backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.cos(x.detach().numpy()))


def _custom_fn(lib):
    class MulSin(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, y, k):
            ctx.save_for_forward(x, y)
            ctx.save_for_backward(x, y)
            return x.sin() * y * k, x + y

        @staticmethod
        def backward(ctx, g1, g2):
            x, y = ctx.saved_tensors
            return g1 * x.cos() * y * 3 + g2, g1 * x.sin() * 3 + g2, None

        @staticmethod
        def jvp(ctx, tx, ty, tk):
            assert tk is None
            x, y = ctx.saved_tensors
            return (tx * x.cos() * y + ty * x.sin()) * 3, tx + ty
    return MulSin


@pytest.mark.parametrize("both", [False, True])
def test_autograd_function_jvp_matches_torch(both):
    x, y = R.standard_normal((3, 4)), R.standard_normal((3, 4))
    tx, ty = R.standard_normal((3, 4)), R.standard_normal((3, 4))
    res = []
    for lib, fwd in ((ember, fwAD), (torch, tfw)):
        F = _custom_fn(lib)
        with fwd.dual_level():
            a = fwd.make_dual(lib.tensor(x), lib.tensor(tx))
            b = fwd.make_dual(lib.tensor(y), lib.tensor(ty)) if both else lib.tensor(y)
            o1, o2 = F.apply(a, b, 3)
            o3 = (o1 * o2).exp()          # ordinary ops after the Function
            res.append([fwd.unpack_dual(o).tangent.detach().numpy().copy()
                        for o in (o1, o2, o3)])
    for e, t in zip(*res):
        np.testing.assert_allclose(e, t, rtol=1e-10, atol=1e-12)


def test_autograd_function_without_jvp_raises():
    class NoJvp(ember.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2
    with fwAD.dual_level():
        d = fwAD.make_dual(ember.ones(2, dtype=ember.float64), ember.ones(2, dtype=ember.float64))
        with pytest.raises(NotImplementedError, match="jvp"):
            NoJvp.apply(d)
        # no tangent on the inputs: jvp is not needed
        np.testing.assert_array_equal(NoJvp.apply(ember.ones(2)).numpy(), [2, 2])


def test_non_differentiable_ops_on_duals_give_no_tangent():
    with fwAD.dual_level():
        d = fwAD.make_dual(ember.tensor([1.0, -2.0]), ember.tensor([1.0, 1.0]))
        m = d > 0
        assert fwAD.unpack_dual(m).tangent is None
        out = ember.where(m, d, d * 3)
        np.testing.assert_allclose(fwAD.unpack_dual(out).tangent.numpy(), [1.0, 3.0])
