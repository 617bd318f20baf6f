"""Output memory layout (strides) of ops on channels_last / channels_last_3d and other
non-contiguous inputs, against torch: elementwise ops of several operands follow the
operands' stride order (the first deciding), reductions / scans / softmax come out
contiguous, ``out=`` resized takes the result's layout, vision ops keep channels-last."""
import random

import numpy as np
import pytest

import ember
from ember._kernels.layout import empty_in_order, output_order

torch = pytest.importorskip("torch")


def _pair(shape, fmt=None, perm=None, seed=0, kind="float"):
    """The same values as a torch tensor and an ember tensor with the same strides."""
    g = torch.Generator().manual_seed(seed)
    t = torch.randn(shape, generator=g)
    if kind == "bool":
        t = t > 0
    if fmt is not None:
        t = t.contiguous(memory_format=getattr(torch, fmt))
    if perm is not None:
        t = t.permute(*perm)
    a = t.numpy()
    buf = np.empty(t.untyped_storage().nbytes() // t.element_size(), a.dtype)
    e = np.lib.stride_tricks.as_strided(buf, a.shape, a.strides)
    e[...] = a
    return t, ember.from_numpy(e)


def _check(t_out, e_out):
    """Same strides (on dimensions of size > 1, which decide the layout) and values."""
    if isinstance(t_out, (tuple, list)):
        for t, e in zip(t_out, e_out):
            _check(t, e)
        return
    assert tuple(e_out.shape) == tuple(t_out.shape)
    assert e_out.stride() == t_out.stride(), (e_out.stride(), t_out.stride())
    np.testing.assert_allclose(e_out.numpy().astype(np.float64),
                               t_out.detach().numpy().astype(np.float64), rtol=1e-5, atol=1e-5)


CL = "channels_last"

# ---------------------------------------------------------------- the ordering rule

def test_stride_order_matches_torch_on_random_layouts():
    rng = random.Random(1)
    checked = 0
    for _ in range(400):
        nd = rng.choice([2, 3, 4, 5])
        shape = [rng.choice([1, 2, 3]) for _ in range(nd)]
        ops = []
        for _k in range(rng.choice([2, 3])):
            s = [1 if rng.random() < 0.3 else n for n in shape]
            s = s[rng.randint(0, nd - 1):] if rng.random() < 0.2 else s
            perm = list(range(len(s)))
            rng.shuffle(perm)
            ops.append(torch.randn([s[p] for p in perm]).permute(*np.argsort(perm).tolist()))
        t = ops[0] + ops[1] if len(ops) == 2 else torch.addcmul(*ops)
        if list(t.shape) != shape:
            continue
        order = output_order(tuple(shape), [o.numpy() for o in ops])
        got = empty_in_order(tuple(shape), np.float32, order)
        assert tuple(s // 4 for s in got.strides) == t.stride(), (shape, order)
        checked += 1
    assert checked > 200


# ---------------------------------------------------------------- elementwise

BINARY = {
    "maximum": lambda m, a, b: m.maximum(a, b),
    "atan2": lambda m, a, b: m.atan2(a, b),
    "pow": lambda m, a, b: m.pow(a.abs(), b),
    "div": lambda m, a, b: m.div(a, b),
    "floor_divide": lambda m, a, b: m.floor_divide(a, b),
    "remainder": lambda m, a, b: m.remainder(a, b),
    "gt": lambda m, a, b: a > b,
    "le": lambda m, a, b: m.le(a, b),
    "hypot": lambda m, a, b: m.hypot(a, b),
    "rsub": lambda m, a, b: m.rsub(a, b),
    "lerp": lambda m, a, b: m.lerp(a, b, 0.3),
    "clamp": lambda m, a, b: m.clamp(a, b, b + 1),
    "addcmul": lambda m, a, b: m.addcmul(a, b, b, value=0.5),
    "where": lambda m, a, b: m.where(a > 0, a, b),
    "where_cond_first": lambda m, a, b: m.where(b > 0, b, a),
}


@pytest.mark.parametrize("name", sorted(BINARY))
@pytest.mark.parametrize("which", ["first", "second", "both", "broadcast"])
def test_elementwise_layout_follows_operands(name, which):
    fn = BINARY[name]
    ta, ea = _pair((2, 3, 4, 5), CL if which in ("first", "both", "broadcast") else None)
    shape_b = (3, 1, 1) if which == "broadcast" else (2, 3, 4, 5)
    tb, eb = _pair(shape_b, CL if which in ("second", "both") else None, seed=1)
    _check(fn(torch, ta, tb), fn(ember, ea, eb))


def test_elementwise_layout_channels_last_3d_and_permuted():
    ta, ea = _pair((2, 3, 2, 3, 4), "channels_last_3d")
    tb, eb = _pair((2, 3, 2, 3, 4), seed=1)
    _check(torch.maximum(ta, tb), ember.maximum(ea, eb))
    ta, ea = _pair((4, 3, 5), perm=(2, 0, 1))        # (5, 4, 3) with strides (1, 15, 5)
    tb, eb = _pair((5, 4, 3), seed=2)
    _check(torch.lt(ta, tb), ember.lt(ea, eb))
    _check(torch.lt(tb, ta), ember.lt(eb, ea))


def test_out_resized_takes_the_results_layout():
    tx, ex = _pair((2, 3, 4, 5), CL)
    t_out, e_out = torch.empty(0), ember.empty(0)
    torch.mul(tx, 2, out=t_out)
    ember.mul(ex, 2, out=e_out)
    _check(t_out, e_out)
    t_out, e_out = torch.empty(2, 3, 4, 5), ember.empty(2, 3, 4, 5)   # right shape: kept
    torch.exp(tx, out=t_out)
    ember.exp(ex, out=e_out)
    _check(t_out, e_out)


# ---------------------------------------------------------------- contiguous results

CONTIGUOUS = {
    "amax": lambda m, x: m.amax(x, 1, keepdim=True),
    "amax0": lambda m, x: x.amax(0, keepdim=True),
    "mean": lambda m, x: x.mean((2, 3), keepdim=True),
    "max_dim": lambda m, x: x.max(2, keepdim=True),
    "argmax": lambda m, x: x.argmax(1),
    "var": lambda m, x: x.var(0),
    "logsumexp": lambda m, x: x.logsumexp(1, keepdim=True),
    "norm": lambda m, x: m.linalg.vector_norm(x, dim=1),
    "all": lambda m, x: (x > 0).all(3),
    "cumsum": lambda m, x: x.cumsum(1),
    "cummax": lambda m, x: x.cummax(2),
    "softmax": lambda m, x: x.softmax(1),
    "log_softmax": lambda m, x: m.nn.functional.log_softmax(x, 3),
    "softmin": lambda m, x: m.nn.functional.softmin(x, 1),
}


@pytest.mark.parametrize("name", sorted(CONTIGUOUS))
def test_reductions_scans_softmax_are_contiguous(name):
    tx, ex = _pair((2, 3, 4, 5), CL)
    _check(CONTIGUOUS[name](torch, tx), CONTIGUOUS[name](ember, ex))


def test_softmax_backward_is_contiguous():
    tx, ex = _pair((2, 3, 4, 5), CL)
    tg, eg = _pair((2, 3, 4, 5), CL, seed=3)
    tx.requires_grad_(True)
    ex.requires_grad_(True)
    t_y, e_y = tx.softmax(1), ex.softmax(1)
    _check(torch.autograd.grad(t_y, tx, tg)[0], ember.autograd.grad(e_y, ex, eg)[0])


def test_sort_and_flip_follow_the_input_tril_and_masked_fill_are_contiguous():
    tx, ex = _pair((2, 3, 4, 5), CL)
    _check(tx.sort(1), ex.sort(1))
    _check(tx.argsort(2), ex.argsort(2))
    _check(tx.flip(2), ex.flip(2))
    _check(tx.tril(), ex.tril())
    tm, em = _pair((2, 3, 4, 5), CL, seed=4, kind="bool")
    _check(tx.masked_fill(tm, 0.5), ex.masked_fill(em, 0.5))


# ---------------------------------------------------------------- vision / nn functionals

F_KEEP = {
    "pad_constant": lambda F, x: F.pad(x, (1, 2, 0, 1), value=0.5),
    "pad_negative": lambda F, x: F.pad(x, (-1, 0, 0, -1)),
    "pad_reflect": lambda F, x: F.pad(x, (1, 1, 2, 1), mode="reflect"),
    "pad_replicate": lambda F, x: F.pad(x, (1, 2, 0, 1), mode="replicate"),
    "pad_circular": lambda F, x: F.pad(x, (1, 2, 0, 1), mode="circular"),   # contiguous
    "nearest": lambda F, x: F.interpolate(x, scale_factor=2),
    "nearest_exact": lambda F, x: F.interpolate(x, size=(7, 9), mode="nearest-exact"),
    "bilinear": lambda F, x: F.interpolate(x, size=(7, 9), mode="bilinear", align_corners=True),
    "bicubic": lambda F, x: F.interpolate(x, scale_factor=1.5, mode="bicubic"),
    "area": lambda F, x: F.interpolate(x, size=(2, 2), mode="area"),
    "pixel_shuffle": lambda F, x: F.pixel_shuffle(x, 2),
    "pixel_unshuffle": lambda F, x: F.pixel_unshuffle(x, 2),
    "channel_shuffle": lambda F, x: F.channel_shuffle(x, 2),
    "gelu": lambda F, x: F.gelu(x),
    "gelu_tanh": lambda F, x: F.gelu(x, approximate="tanh"),
    "group_norm": lambda F, x: F.group_norm(x, 2),
    "local_response_norm": lambda F, x: F.local_response_norm(x, 2),
    "unfold": lambda F, x: F.unfold(x, 2),                                   # contiguous
}


@pytest.mark.parametrize("name", sorted(F_KEEP))
def test_vision_functionals_keep_channels_last(name):
    tx, ex = _pair((2, 4, 4, 6), CL)
    _check(F_KEEP[name](torch.nn.functional, tx), F_KEEP[name](ember.nn.functional, ex))


@pytest.mark.parametrize("name", ["pad_constant", "pad_reflect", "pad_replicate", "nearest"])
def test_vision_functionals_keep_channels_last_3d(name):
    fn = {"pad_constant": lambda F, x: F.pad(x, (1, 1, 0, 1, 1, 0)),
          "pad_reflect": lambda F, x: F.pad(x, (1, 1, 1, 1, 1, 1), mode="reflect"),
          "pad_replicate": lambda F, x: F.pad(x, (1, 0, 1, 0, 0, 1), mode="replicate"),
          "nearest": lambda F, x: F.interpolate(x, scale_factor=2)}[name]
    tx, ex = _pair((2, 3, 3, 4, 5), "channels_last_3d")
    _check(fn(torch.nn.functional, tx), fn(ember.nn.functional, ex))


def test_sliced_channels_last_input_counts_as_channels_last():
    tx, ex = _pair((2, 4, 6, 7), CL)
    tx, ex = tx[:, :, :4, :6], ex[:, :, :4, :6]
    _check(torch.nn.functional.pixel_unshuffle(tx, 2), ember.nn.functional.pixel_unshuffle(ex, 2))
    _check(torch.nn.functional.pad(tx, (1, 1)), ember.nn.functional.pad(ex, (1, 1)))


@pytest.mark.parametrize("name", ["gelu", "group_norm", "bilinear", "pad_reflect"])
def test_vision_functionals_backward_values_and_leaf_grad_layout(name):
    tx, ex = _pair((2, 4, 4, 6), CL)
    tx.requires_grad_(True)
    ex.requires_grad_(True)
    t_y = F_KEEP[name](torch.nn.functional, tx)
    e_y = F_KEEP[name](ember.nn.functional, ex)
    tg, eg = _pair(tuple(t_y.shape), seed=5)
    t_y.backward(tg)
    e_y.backward(eg)
    _check(tx.grad, ex.grad)


def test_median_kthvalue_topk_mode_are_contiguous():
    tx, ex = _pair((2, 3, 4, 5), CL)
    for fn in (lambda x: x.median(1, keepdim=True), lambda x: x.kthvalue(2, 1),
               lambda x: x.topk(2, 1), lambda x: x.mode(1), lambda x: x.nanmedian(0)):
        _check(fn(tx), fn(ex))


def test_keeps_channels_last_by_rank():
    from ember._kernels.util import as_channels_last, keeps_channels_last
    kernel = keeps_channels_last(lambda x: np.ascontiguousarray(x * 2), ranks=(4,))
    x4, x5 = as_channels_last(np.ones((2, 3, 4, 5))), as_channels_last(np.ones((2, 3, 2, 4, 5)))
    assert kernel(x4).strides == x4.strides
    assert kernel(x5).flags.c_contiguous
    assert keeps_channels_last(lambda x: np.ascontiguousarray(x))(x5).strides == x5.strides


def test_relu_backward_keeps_channels_last():
    tx, ex = _pair((2, 3, 4, 5), CL)
    tg, eg = _pair((2, 3, 4, 5), CL, seed=6)
    _check(torch.ops.aten.threshold_backward(tg, tx, 0.0),
           ember.ops.aten.threshold_backward(eg, ex, 0.0))
    tg, eg = _pair((2, 3, 4, 5), seed=6)                 # mixed: contiguous result
    _check(torch.ops.aten.threshold_backward(tg, tx, 0.0),
           ember.ops.aten.threshold_backward(eg, ex, 0.0))


def test_clone_and_like_preserve_format_as_torch():
    tx, ex = _pair((2, 3, 4, 5), CL)
    views = [lambda x: x[:, :1].expand(2, 3, 4, 5), lambda x: x[:, :, ::2],
             lambda x: x.permute(0, 2, 1, 3)[:, ::2], lambda x: x[:, :1]]
    for view in views:
        _check(view(tx).clone(), view(ex).clone())
        assert ember.empty_like(view(ex)).stride() == torch.empty_like(view(tx)).stride()
        assert ember.zeros_like(view(ex)).stride() == torch.zeros_like(view(tx)).stride()


def test_cat_channels_last_when_every_input_suggests_it():
    tx, ex = _pair((2, 3, 4, 5), CL)
    ty, ey = _pair((2, 3, 4, 5), seed=1)
    _check(torch.cat([tx[:, :1], tx[:, 1:]], 1), ember.cat([ex[:, :1], ex[:, 1:]], 1))
    _check(torch.cat([tx, ty]), ember.cat([ex, ey]))
    _check(torch.cat([tx, tx], 3), ember.cat([ex, ex], 3))
    t1, e1 = _pair((2, 3, 1, 1), CL)
    _check(torch.cat([t1, t1], 1), ember.cat([e1, e1], 1))


def test_pow_of_a_number_logsigmoid_rrelu_contiguous_adaptive_max_pool_exact_strides():
    tx, ex = _pair((2, 3, 4, 5), CL)
    _check(2 ** tx, 2 ** ex)
    _check(tx ** 2, ex ** 2)
    tF, eF = torch.nn.functional, ember.nn.functional
    _check(tF.logsigmoid(tx), eF.logsigmoid(ex))
    _check(tF.rrelu(tx), eF.rrelu(ex))
    _check(tF.adaptive_max_pool2d(tx, 1), eF.adaptive_max_pool2d(ex, 1))


@pytest.mark.parametrize("fmt", [None, CL])
def test_advanced_indexing_layout_as_torch(fmt):
    tx, ex = _pair((3, 3, 4, 5), fmt)
    ti, ei = torch.tensor([0, 2]), ember.tensor([0, 2])
    tj, ej = torch.tensor([[1, 0], [3, 2]]), ember.tensor([[1, 0], [3, 2]])
    for fn in (lambda x, i, j: x[:, i], lambda x, i, j: x[:, :, i], lambda x, i, j: x[..., i],
               lambda x, i, j: x[i], lambda x, i, j: x[:, :, j], lambda x, i, j: x[i, :, i],
               lambda x, i, j: x[:, i, j.t()]):
        _check(fn(tx, ti, tj), fn(ex, ei, ej))
    assert ex[:, ei].view(3, -1).shape == (3, 40)        # torch's result views; NumPy's did not
