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
