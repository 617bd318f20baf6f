"""Regressions found by differential fuzzing of normalisation, activations and attention
against torch 2.13 (values, gradients and exception classes)."""
import numpy as np
import pytest

import ember
import ember.nn.functional as F
from helpers import torch

TF = torch.nn.functional
rng = np.random.default_rng(7)


def _pair(a, requires_grad=False):
    e = ember.from_numpy(a.copy())
    t = torch.from_numpy(a.copy())
    if requires_grad:
        e.requires_grad_(True)
        t.requires_grad_(True)
    return e, t


def _raises_like(fe, ft):
    with pytest.raises(Exception) as te:
        ft()
    with pytest.raises(type(te.value)):
        fe()


# ----------------------------------------------------------------------- batch norm

@pytest.mark.parametrize("which", ["mean", "var", "both"])
def test_batch_norm_eval_needs_running_stats(which):
    x = rng.standard_normal((3, 2, 2))
    rm, rv = np.zeros(2), np.ones(2)
    args = {"mean": (None, rv), "var": (rm, None), "both": (None, None)}[which]

    def call(lib, Fn):
        r = [None if a is None else lib.from_numpy(a.copy()) for a in args]
        return lambda: Fn.batch_norm(lib.from_numpy(x.copy()), r[0], r[1], training=False)
    _raises_like(call(ember, F), call(torch, TF))


@pytest.mark.parametrize("which", ["mean", "var"])
def test_batch_norm_training_one_running_stat(which):
    x = rng.standard_normal((3, 2, 2))
    args = (np.zeros(2), None) if which == "mean" else (None, np.ones(2))

    def call(lib, Fn):
        r = [None if a is None else lib.from_numpy(a.copy()) for a in args]
        return lambda: Fn.batch_norm(lib.from_numpy(x.copy()), r[0], r[1], training=True)
    _raises_like(call(ember, F), call(torch, TF))
    with pytest.raises(ValueError):
        call(ember, F)()


@pytest.mark.parametrize("training,eps", [(True, 0.0), (True, -1.0), (False, -1.0)])
def test_batch_norm_eps_checked(training, eps):
    x = rng.standard_normal((3, 2))
    with pytest.raises(ValueError):
        F.batch_norm(ember.from_numpy(x), ember.zeros(2, dtype=ember.float64),
                     ember.ones(2, dtype=ember.float64), training=training, eps=eps)
    with pytest.raises(ValueError):
        TF.batch_norm(torch.from_numpy(x), torch.zeros(2, dtype=torch.float64),
                      torch.ones(2, dtype=torch.float64), training=training, eps=eps)


def test_batch_norm_1d_input_training_index_error():
    x = rng.standard_normal(4)
    _raises_like(lambda: F.batch_norm(ember.from_numpy(x), None, None, training=True),
                 lambda: TF.batch_norm(torch.from_numpy(x), None, None, training=True))
    with pytest.raises(IndexError):
        F.batch_norm(ember.from_numpy(x), None, None, training=True)


@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_empty_batch_backward(training):
    x = np.zeros((0, 3, 4))
    (xe, xt) = _pair(x, True)
    we, wt = _pair(rng.standard_normal(3), True)
    rme, rmt = _pair(np.zeros(3))
    rve, rvt = _pair(np.ones(3))
    oe = F.batch_norm(xe, rme, rve, we, None, training)
    ot = TF.batch_norm(xt, rmt, rvt, wt, None, training)
    assert tuple(oe.shape) == tuple(ot.shape)
    oe.sum().backward()
    ot.sum().backward()
    assert tuple(xe.grad.shape) == (0, 3, 4)
    np.testing.assert_allclose(we.grad.numpy(), wt.grad.numpy())


@pytest.mark.parametrize("dtype", ["int64", "int32", "bool"])
@pytest.mark.parametrize("fn", ["batch_norm", "instance_norm", "layer_norm", "group_norm",
                                "rms_norm"])
def test_norms_reject_integer_input(fn, dtype):
    x = (rng.standard_normal((2, 2, 3)) > 0).astype(dtype)
    calls = {
        "batch_norm": lambda Fn, t: Fn.batch_norm(t, None, None, training=True),
        "instance_norm": lambda Fn, t: Fn.instance_norm(t),
        "layer_norm": lambda Fn, t: Fn.layer_norm(t, [3]),
        "group_norm": lambda Fn, t: Fn.group_norm(t, 1),
        "rms_norm": lambda Fn, t: Fn.rms_norm(t, [3]),
    }
    _raises_like(lambda: calls[fn](F, ember.from_numpy(x.copy())),
                 lambda: calls[fn](TF, torch.from_numpy(x.copy())))
    with pytest.raises(NotImplementedError):
        calls[fn](F, ember.from_numpy(x.copy()))


def test_layer_norm_empty_normalized_shape():
    x = rng.standard_normal((2, 3))
    _raises_like(lambda: F.layer_norm(ember.from_numpy(x), []),
                 lambda: TF.layer_norm(torch.from_numpy(x), []))


# -------------------------------------------------------------- instance / group norm

def test_instance_norm_no_input_stats_needs_running_stats():
    x = rng.standard_normal((2, 3, 4))
    _raises_like(lambda: F.instance_norm(ember.from_numpy(x), use_input_stats=False),
                 lambda: TF.instance_norm(torch.from_numpy(x), use_input_stats=False))


def test_instance_norm_one_running_stat():
    x = rng.standard_normal((2, 3, 4))
    _raises_like(lambda: F.instance_norm(ember.from_numpy(x), ember.zeros(3, dtype=ember.float64)),
                 lambda: TF.instance_norm(torch.from_numpy(x), torch.zeros(3, dtype=torch.float64)))
    with pytest.raises(ValueError):
        F.instance_norm(ember.from_numpy(x), None, ember.ones(3, dtype=ember.float64))


@pytest.mark.parametrize("shape,groups", [((1, 3), 3), ((1, 2, 1), 2), ((1, 1, 1, 1), 1)])
def test_group_norm_one_value_per_group(shape, groups):
    x = rng.standard_normal(shape)
    _raises_like(lambda: nn_mod(ember, groups, shape[1])(ember.from_numpy(x)),
                 lambda: nn_mod(torch, groups, shape[1])(torch.from_numpy(x)))
    with pytest.raises(ValueError):
        F.group_norm(ember.from_numpy(x), groups)


def nn_mod(lib, groups, channels):
    return lib.nn.GroupNorm(groups, channels).double()


@pytest.mark.parametrize("fn", ["group_norm", "instance_norm"])
def test_group_instance_norm_empty_batch(fn):
    x = np.zeros((0, 4, 3))
    xe, xt = _pair(x, True)
    call = (lambda Fn, t: Fn.group_norm(t, 2)) if fn == "group_norm" else (
        lambda Fn, t: Fn.instance_norm(t))
    oe, ot = call(F, xe), call(TF, xt)
    assert tuple(oe.shape) == tuple(ot.shape) == (0, 4, 3)
    oe.sum().backward()
    assert tuple(xe.grad.shape) == (0, 4, 3)


# ----------------------------------------------------------------------- activations

_INPLACE = [
    ("elu", (0.7,)), ("selu", ()), ("celu", (0.8,)), ("leaky_relu", (0.2,)),
    ("rrelu", (0.1, 0.3, False)), ("threshold", (0.1, -2.0)), ("hardsigmoid", ()),
    ("hardswish", ()), ("mish", ()), ("hardtanh", (-0.5, 0.7)), ("relu6", ()),
]


@pytest.mark.parametrize("name,args", _INPLACE)
def test_inplace_activation_autograd(name, args):
    x = rng.standard_normal((3, 4)) * 3
    g = rng.standard_normal((4, 3))
    res = []
    for lib, Fn in ((ember, F), (torch, TF)):
        xx = lib.from_numpy(x.copy()).requires_grad_(True)
        y = xx * 1.5
        out = getattr(Fn, name)(y.t(), *args, inplace=True)
        (out * lib.from_numpy(g.copy())).sum().backward()
        res.append((out.detach().numpy(), y.detach().numpy(), xx.grad.numpy()))
    for a, b in zip(*res):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-12)


_CORNERS = np.array([-6.0, -3.0, -1.0, -0.5, 0.0, 0.5, 1.0, 3.0, 6.0, np.nan])


@pytest.mark.parametrize("name,args", [("hardtanh", ()), ("hardtanh", (-0.5, 0.5)),
                                       ("relu6", ()), ("hardsigmoid", ()),
                                       ("hardswish", ()), ("logsigmoid", ())])
def test_activation_grad_at_corners(name, args):
    res = []
    for lib, Fn in ((ember, F), (torch, TF)):
        x = lib.from_numpy(_CORNERS.copy()).requires_grad_(True)
        y = getattr(Fn, name)(x, *args)
        y.sum().backward()
        res.append((y.detach().numpy(), x.grad.numpy()))
    np.testing.assert_allclose(res[0][0], res[1][0], rtol=1e-6, atol=1e-12)
    np.testing.assert_allclose(res[0][1], res[1][1], rtol=1e-6, atol=1e-12)


@pytest.mark.parametrize("name", ["hardtanh", "relu6"])
def test_hardtanh_module_inplace_grad_at_limits(name):
    res = []
    for lib in (ember, torch):
        x = lib.from_numpy(_CORNERS.copy()).requires_grad_(True)
        m = lib.nn.Hardtanh(inplace=True) if name == "hardtanh" else lib.nn.ReLU6(True)
        m(x * 1).sum().backward()
        res.append(x.grad.numpy())
    np.testing.assert_allclose(res[0], res[1])


def test_prelu_1d_input_many_parameters():
    x, w = rng.standard_normal(3), np.full(3, 0.25)
    _raises_like(lambda: F.prelu(ember.from_numpy(x), ember.from_numpy(w)),
                 lambda: TF.prelu(torch.from_numpy(x), torch.from_numpy(w)))
    _raises_like(lambda: ember.nn.PReLU(3).double()(ember.from_numpy(x)),
                 lambda: torch.nn.PReLU(3).double()(torch.from_numpy(x)))


@pytest.mark.parametrize("name,args", [
    ("elu", ()), ("selu", ()), ("celu", ()), ("leaky_relu", ()), ("rrelu", ()), ("mish", ()),
    ("logsigmoid", ()), ("softplus", ()), ("hardswish", ()), ("hardsigmoid", ()),
    ("hardshrink", ()), ("softshrink", ()), ("glu", (1,))])
def test_activation_rejects_integer_input(name, args):
    x = rng.integers(-3, 3, (2, 4))
    _raises_like(lambda: getattr(F, name)(ember.from_numpy(x.copy()), *args),
                 lambda: getattr(TF, name)(torch.from_numpy(x.copy()), *args))
    with pytest.raises(NotImplementedError):
        getattr(F, name)(ember.from_numpy(x.copy()), *args)


def test_rrelu_lower_above_upper():
    x = rng.standard_normal((2, 3))
    for training in (False, True):
        _raises_like(lambda: F.rrelu(ember.from_numpy(x), 0.5, 0.2, training),
                     lambda: TF.rrelu(torch.from_numpy(x), 0.5, 0.2, training))


# ------------------------------------------------------------------------- attention

def test_sdpa_attn_mask_with_is_causal():
    q = rng.standard_normal((2, 3, 4))
    m = np.zeros((3, 3))
    _raises_like(lambda: F.scaled_dot_product_attention(
                     *[ember.from_numpy(q)] * 3, attn_mask=ember.from_numpy(m), is_causal=True),
                 lambda: TF.scaled_dot_product_attention(
                     *[torch.from_numpy(q)] * 3, attn_mask=torch.from_numpy(m), is_causal=True))


@pytest.mark.parametrize("qdt,mdt", [("float64", "int64"), ("float64", "int32"),
                                     ("float32", "float64")])
def test_sdpa_attn_mask_dtype_checked(qdt, mdt):
    q = rng.standard_normal((2, 3, 4)).astype(qdt)
    m = np.zeros((3, 3), dtype=mdt)
    _raises_like(lambda: F.scaled_dot_product_attention(
                     *[ember.from_numpy(q)] * 3, attn_mask=ember.from_numpy(m)),
                 lambda: TF.scaled_dot_product_attention(
                     *[torch.from_numpy(q)] * 3, attn_mask=torch.from_numpy(m)))


def test_sdpa_float32_mask_on_double_query_still_allowed():
    q = rng.standard_normal((2, 3, 4))
    m = rng.standard_normal((3, 3)).astype(np.float32)
    e = F.scaled_dot_product_attention(*[ember.from_numpy(q)] * 3, attn_mask=ember.from_numpy(m))
    t = TF.scaled_dot_product_attention(*[torch.from_numpy(q)] * 3, attn_mask=torch.from_numpy(m))
    assert str(e.dtype) == str(t.dtype)
    np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-6)


def test_embedding_bag_empty_bags_of_a_2d_input_raise_like_torch():
    w = np.ones((4, 3), np.float32)
    with pytest.raises(RuntimeError):
        torch.nn.functional.embedding_bag(torch.zeros((2, 0), dtype=torch.long),
                                          torch.from_numpy(w))
    with pytest.raises(RuntimeError, match="step must be nonzero"):
        ember.nn.functional.embedding_bag(ember.zeros((2, 0), dtype=ember.long),
                                          ember.from_numpy(w))
