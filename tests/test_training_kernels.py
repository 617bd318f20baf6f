"""Kernels the training benchmarks lean on, checked against torch: relu's gradient
(threshold_backward), the optimizers' in-place ``add_(g, alpha=)``, the linear record and
gradient layouts of linear layers."""
import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(5, 7), (64, 4096)])
def test_threshold_backward_matches_torch(dtype, shape):
    rng = np.random.default_rng(0)
    g = rng.standard_normal(shape).astype(dtype)
    x = rng.standard_normal(shape).astype(dtype)
    x.flat[:4] = [0.0, np.nan, -1.0, 2.0]
    g.flat[:4] = [1.0, 3.0, np.inf, np.nan]          # inf masked out, NaN passed through
    g.flat[-1], x.flat[-1] = np.nan, -3.0            # NaN masked out
    ops = ember._ops.elementwise
    got = ops.threshold_backward(ember.from_numpy(g), ember.from_numpy(x), 0).numpy()
    want = torch.ops.aten.threshold_backward(torch.from_numpy(g), torch.from_numpy(x),
                                             0).numpy()
    np.testing.assert_array_equal(got, want)


def test_relu_grad_and_double_grad_match_torch():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((6, 9))
    e = ember.tensor(a, requires_grad=True)
    t = torch.tensor(a, requires_grad=True)
    (ge,) = ember.autograd.grad((ember.relu(e) ** 2).sum(), e, create_graph=True)
    (gt,) = torch.autograd.grad((torch.relu(t) ** 2).sum(), t, create_graph=True)
    np.testing.assert_allclose(ge.detach().numpy(), gt.detach().numpy())
    (gge,) = ember.autograd.grad(ge.sum(), e)
    (ggt,) = torch.autograd.grad(gt.sum(), t)
    np.testing.assert_allclose(gge.numpy(), ggt.numpy())


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(10,), (300, 200)])
def test_add_alpha_inplace_matches_torch(dtype, shape):
    rng = np.random.default_rng(2)
    w, g = (rng.standard_normal(shape).astype(dtype) for _ in range(2))
    ew, tw = ember.tensor(w), torch.tensor(w)
    ew.add_(ember.tensor(g), alpha=-0.01)
    tw.add_(torch.tensor(g), alpha=-0.01)
    np.testing.assert_allclose(ew.numpy(), tw.numpy(), rtol=1e-6, atol=1e-7)
    ew.add_(ew, alpha=0.5)                       # operand is the destination itself
    tw.add_(tw, alpha=0.5)
    np.testing.assert_allclose(ew.numpy(), tw.numpy(), rtol=1e-6, atol=1e-7)


def test_add_alpha_inplace_overlapping_views():
    # torch refuses operands that partly overlap the written tensor (dense layouts)
    base = ember.arange(70000, dtype=ember.float32)
    with pytest.raises(RuntimeError, match="refer to a single memory location"):
        base[1:].add_(base[:-1], alpha=2)
    assert base[:3].tolist() == [0, 1, 2]
    t = torch.arange(10.)
    with pytest.raises(RuntimeError, match="refer to a single memory location"):
        t[1:].add_(t[:-1], alpha=2)


@pytest.mark.parametrize("in_shape", [(32, 40), (4, 8, 40)])
def test_linear_weight_grad_contiguous_and_equal(in_shape):
    rng = np.random.default_rng(3)
    x = rng.standard_normal(in_shape).astype(np.float32)
    em = ember.nn.Linear(40, 24)
    tm = torch.nn.Linear(40, 24)
    with torch.no_grad():
        tm.weight.copy_(torch.from_numpy(em.weight.detach().numpy()))
        tm.bias.copy_(torch.from_numpy(em.bias.detach().numpy()))
    em(ember.from_numpy(x)).square().sum().backward()
    tm(torch.from_numpy(x)).square().sum().backward()
    assert em.weight.grad.is_contiguous()
    assert em.weight.grad.stride() == tuple(tm.weight.grad.stride())
    np.testing.assert_allclose(em.weight.grad.numpy(), tm.weight.grad.numpy(), rtol=1e-5,
                               atol=1e-5)
    np.testing.assert_allclose(em.bias.grad.numpy(), tm.bias.grad.numpy(), rtol=1e-5,
                               atol=1e-5)


@pytest.mark.parametrize("x_shape", [(7,), (5, 7), (2, 3, 7)])
@pytest.mark.parametrize("with_bias", [True, False])
def test_linear_record_matches_torch_and_gradchecks(x_shape, with_bias):
    rng = np.random.default_rng(4)
    x, w, b = (rng.standard_normal(s) for s in (x_shape, (4, 7), (4,)))
    F, tF = ember.nn.functional, torch.nn.functional
    ea = [ember.tensor(a, requires_grad=True) for a in (x, w, b)]
    ta = [torch.tensor(a, requires_grad=True) for a in (x, w, b)]
    ey = F.linear(ea[0], ea[1], ea[2] if with_bias else None)
    ty = tF.linear(ta[0], ta[1], ta[2] if with_bias else None)
    np.testing.assert_allclose(ey.detach().numpy(), ty.detach().numpy(), rtol=1e-12)
    gy = rng.standard_normal(ty.shape)
    ey.backward(ember.tensor(gy))
    ty.backward(torch.tensor(gy))
    for e, t in zip(ea[:3 if with_bias else 2], ta):
        np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), rtol=1e-12)
    args = tuple(ea[:3] if with_bias else ea[:2])
    assert ember.autograd.gradcheck(F.linear, args)
    assert ember.autograd.gradgradcheck(F.linear, args)


def test_linear_complex_grad_matches_torch():
    rng = np.random.default_rng(5)
    x, w, b = (rng.standard_normal(s) + 1j * rng.standard_normal(s)
               for s in ((3, 5), (2, 5), (2,)))
    ea = [ember.tensor(a, requires_grad=True) for a in (x, w, b)]
    ta = [torch.tensor(a, requires_grad=True) for a in (x, w, b)]
    ember.nn.functional.linear(*ea).abs().sum().backward()
    torch.nn.functional.linear(*ta).abs().sum().backward()
    for e, t in zip(ea, ta):
        np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), rtol=1e-10)


def test_linear_errors_and_fallbacks():
    F = ember.nn.functional
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied \(6x3 "
                                           r"and 4x2\)"):
        F.linear(ember.randn(2, 3, 3), ember.randn(2, 4))
    # mixed dtypes and a broadcasting bias take torch's composite path: same errors/values
    with pytest.raises(RuntimeError):
        F.linear(ember.randn(2, 4), ember.randn(3, 4, dtype=ember.float64))
    with pytest.raises(NotImplementedError, match="addmm_impl_cpu_"):
        F.linear(ember.ones(2, 3, dtype=ember.bool), ember.ones(4, 3, dtype=ember.bool))
    x, w, b = np.ones((2, 4)), np.ones((3, 4)), np.ones((1,))
    np.testing.assert_allclose(F.linear(ember.tensor(x), ember.tensor(w), ember.tensor(b)),
                               torch.nn.functional.linear(*map(torch.tensor, (x, w, b))))


@pytest.mark.parametrize("batched", [(0, None, None), (None, 0, 0), (0, 0, None), (1, 0, 0)])
def test_linear_vmap_matches_loop(batched):
    rng = np.random.default_rng(6)
    shapes = {0: [(3, 5, 4), (3, 2, 4), (3, 2)], 1: [(5, 3, 4), (3, 2, 4), (3, 2)]}
    base = [(5, 4), (2, 4), (2,)]
    args = []
    for i, bd in enumerate(batched):
        shape = base[i] if bd is None else shapes[bd][i]
        args.append(ember.tensor(rng.standard_normal(shape)))
    from ember.func import vmap
    got = vmap(ember.nn.functional.linear, in_dims=batched)(*args)
    loop = []
    for k in range(3):
        a = [t if bd is None else t.select(bd, k) for t, bd in zip(args, batched)]
        loop.append(ember.nn.functional.linear(*a))
    np.testing.assert_allclose(got.numpy(), ember.stack(loop).numpy(), rtol=1e-12)


@pytest.mark.parametrize("shapes", [((5, 1), (1, 4)), ((3, 5, 1), (3, 1, 4)),
                                    ((2, 1, 5, 1), (3, 1, 4))])
def test_outer_product_matmul_matches_torch(shapes):
    """A contraction of length 1 is computed by a broadcast multiply: same values."""
    rng = np.random.default_rng(7)
    a, b = (rng.standard_normal(s).astype(np.float32) for s in shapes)
    np.testing.assert_allclose(ember.matmul(ember.tensor(a), ember.tensor(b)).numpy(),
                               torch.matmul(torch.tensor(a), torch.tensor(b)).numpy(),
                               rtol=1e-6)
    if len(shapes[0]) == 3 and len(shapes[1]) == 3:
        np.testing.assert_allclose(ember.bmm(ember.tensor(a), ember.tensor(b)).numpy(),
                                   torch.bmm(torch.tensor(a), torch.tensor(b)).numpy(),
                                   rtol=1e-6)


def test_linear_jvp_matches_torch_func():
    rng = np.random.default_rng(8)
    x, w, b = (rng.standard_normal(s) for s in ((3, 5), (4, 5), (4,)))
    tx, tw, tb = (rng.standard_normal(s) for s in ((3, 5), (4, 5), (4,)))
    from ember.func import jvp
    out, tan = jvp(ember.nn.functional.linear, tuple(map(ember.tensor, (x, w, b))),
                   tuple(map(ember.tensor, (tx, tw, tb))))
    tout, ttan = torch.func.jvp(torch.nn.functional.linear, tuple(map(torch.tensor, (x, w, b))),
                                tuple(map(torch.tensor, (tx, tw, tb))))
    np.testing.assert_allclose(out.numpy(), tout.numpy(), rtol=1e-12)
    np.testing.assert_allclose(tan.numpy(), ttan.numpy(), rtol=1e-12)
    fwAD = ember.autograd.forward_ad
    with fwAD.dual_level():
        d = ember.nn.functional.linear(fwAD.make_dual(ember.tensor(x), ember.tensor(tx)),
                                       ember.tensor(w), ember.tensor(b))
        np.testing.assert_allclose(fwAD.unpack_dual(d).tangent.numpy(), tx @ w.T, rtol=1e-12)


def test_threshold_backward_vmap_uses_its_rule():
    from ember.func import vmap
    from ember.func import _vmap as V
    rng = np.random.default_rng(9)
    g, x = (ember.tensor(rng.standard_normal((4, 6))) for _ in range(2))
    ops = ember._ops.elementwise
    V.FALLBACK_COUNTS.clear()
    got = vmap(lambda a, b: ops.threshold_backward(a, b, 0.1), in_dims=(0, 1))(g, x.t())
    want = ember.stack([ops.threshold_backward(g[i], x.t()[:, i], 0.1) for i in range(4)])
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    assert not V.FALLBACK_COUNTS


def test_bool_matmul_raises_like_torch():
    shapes = [((3,), (3,)), ((3, 3), (3,)), ((3,), (3, 3)), ((3, 3), (3, 3)),
              ((2, 3, 3), (2, 3, 3)), ((3, 1), (1, 2))]
    for sa, sb in shapes:
        msgs = []
        for lib in (ember, torch):
            with pytest.raises(NotImplementedError) as e:
                lib.matmul(lib.ones(sa, dtype=lib.bool), lib.ones(sb, dtype=lib.bool))
            msgs.append(str(e.value))
        assert msgs[0] == msgs[1], (sa, sb, msgs)


@pytest.mark.parametrize("nd,k,s,p,d,ceil", [
    (2, 3, 2, 1, 1, False), (2, 2, 2, 0, 1, False), (2, 3, 3, 1, 2, True),
    (2, (3, 2), (2, 3), (1, 0), (2, 1), True), (1, 4, 3, 2, 1, False), (3, 3, 2, 1, 1, True)])
def test_max_pool_stride_phases_match_torch(nd, k, s, p, d, ceil):
    """Strided max pooling reads stride phases (contiguous blocks): values and indices
    equal torch's, with ties, NaN and -inf in the input."""
    rng = np.random.default_rng(10)
    shape = (2, 3) + (11,) * nd
    x = rng.integers(-3, 4, shape).astype(np.float32)      # many ties
    flat = x.reshape(-1)
    flat[::17] = np.nan
    flat[5::23] = -np.inf
    fn = f"max_pool{nd}d"
    ev, ei = getattr(ember.nn.functional, fn)(ember.tensor(x), k, s, p, d, ceil_mode=ceil,
                                              return_indices=True)
    tv, ti = getattr(torch.nn.functional, fn)(torch.tensor(x), k, s, p, d, ceil_mode=ceil,
                                              return_indices=True)
    np.testing.assert_array_equal(ev.numpy(), tv.numpy())
    np.testing.assert_array_equal(ei.numpy(), ti.numpy())


def test_pooling_picks_the_last_nan_like_torch():
    x = np.array([[[[np.nan, 1, np.nan, 2], [3, np.nan, 4, 5]]]], dtype=np.float32)
    calls = [("max_pool2d", (2, 2)), ("adaptive_max_pool2d", ((1, 2),))]
    for name, args in calls:
        got = getattr(ember.nn.functional, name)(ember.tensor(x), *args, return_indices=True)
        want = getattr(torch.nn.functional, name)(torch.tensor(x), *args, return_indices=True)
        np.testing.assert_array_equal(got[1].numpy(), want[1].numpy())
    got = ember.nn.functional.adaptive_max_pool1d(ember.tensor(x[0]), 1, return_indices=True)
    want = torch.nn.functional.adaptive_max_pool1d(torch.tensor(x[0]), 1, return_indices=True)
    np.testing.assert_array_equal(got[1].numpy(), want[1].numpy())
