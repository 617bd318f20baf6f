"""ATen's internal ops (ember/_ops/aten.py) and the ``ember.ops.aten`` namespace, against
``torch.ops.aten``: values, result dtypes and float64 gradients."""
import numpy as np
import pytest

import ember
from helpers import torch

pytestmark = pytest.mark.skipif(torch is None, reason="needs torch as the oracle")


def _pair(a, requires_grad=False):
    t = torch.tensor(a, requires_grad=requires_grad)
    e = ember.tensor(a, requires_grad=requires_grad)
    return t, e


def _close(e, t, tol=1e-10):
    assert str(e.dtype) == str(t.dtype)
    np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=tol, atol=tol)


def _grads_agree(t_out, e_out, t_ins, e_ins, rng):
    v = rng.standard_normal(tuple(t_out.shape))
    tg = torch.autograd.grad(t_out, t_ins, torch.tensor(v))
    eg = ember.autograd.grad(e_out, e_ins, ember.tensor(v))
    for a, b in zip(eg, tg):
        _close(a, b)


def test_namespace_resolves_records():
    aten = ember.ops.aten
    assert aten.add.Tensor is ember._ops.registry.OPS["add.Tensor"]
    assert aten.native_dropout_backward.default.name == "native_dropout_backward"
    assert sorted(aten._native_batch_norm_legit.overloads()) == ["default", "no_stats"]
    with pytest.raises(AttributeError):
        aten.no_such_op_anywhere
    with pytest.raises(AttributeError):
        aten.add.no_such_overload
    x = ember.arange(10.)
    assert aten.slice.Tensor(x, 0, 2, 8, 3).tolist() == [2.0, 5.0]
    assert aten.slice(x, 0, 2, 8, 3).tolist() == [2.0, 5.0]     # the packet binds an overload


def test_slice_is_a_view_with_a_gradient():
    rng = np.random.default_rng(0)
    t, e = _pair(rng.standard_normal((4, 6)), True)
    for args in [(1, 1, -1, 2), (0, -100, 100, 3), (1, 5, 2, 1)]:
        r, s = torch.ops.aten.slice.Tensor(t, *args), ember.ops.aten.slice.Tensor(e, *args)
        _close(s, r)
        if r.numel():
            _grads_agree(r, s, (t,), (e,), rng)
    v = ember.ops.aten.slice.Tensor(e.detach(), 1, 0, 6, 2)
    assert v._base is not None
    with pytest.raises(RuntimeError, match="slice step must be positive"):
        ember.ops.aten.slice.Tensor(e, 0, 0, 2, 0)


@pytest.mark.parametrize("name", ["_softmax_backward_data", "_log_softmax_backward_data"])
def test_softmax_backward_data_and_its_gradient(name):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 5))
    y = torch.softmax(torch.tensor(x), 1)
    if name.startswith("_log"):
        y = y.log()
    (tg, eg), (ty, ey) = _pair(rng.standard_normal((3, 5)), True), _pair(y.numpy(), True)
    r = getattr(torch, name)(tg, ty, 1, torch.float64)
    s = getattr(ember, name)(eg, ey, 1, ember.float64)
    _close(s, r)
    _grads_agree(r, s, (tg, ty), (eg, ey), rng)


def test_native_dropout_backward():
    rng = np.random.default_rng(2)
    (tg, eg), (tm, em) = _pair(rng.standard_normal((4, 5)), True), _pair(rng.random((4, 5)) < .5)
    r = torch.ops.aten.native_dropout_backward(tg, tm, 2.0)
    s = ember.ops.aten.native_dropout_backward(eg, em, 2.0)
    _close(s, r)
    _grads_agree(r, s, (tg,), (eg,), rng)
    ti, ei = _pair(np.arange(4))
    _close(ember.ops.aten.native_dropout_backward(ei, em[0, :4], 2.0),
           torch.ops.aten.native_dropout_backward(ti, tm[0, :4], 2.0))


def test_max_pool2d_with_indices_backward():
    rng = np.random.default_rng(3)
    t, e = _pair(rng.standard_normal((2, 3, 7, 6)), True)
    args = ([3, 2], [2, 2], [1, 0], [1, 1], True)
    to, ti = torch.ops.aten.max_pool2d_with_indices(t, *args)
    eo, ei = ember.nn.functional.max_pool2d(e, *args[:4], ceil_mode=True, return_indices=True)
    (tg, eg) = _pair(rng.standard_normal(tuple(to.shape)), True)
    r = torch.ops.aten.max_pool2d_with_indices_backward(tg, t, *args, ti)
    s = ember.ops.aten.max_pool2d_with_indices_backward(eg, e, *args, ei)
    _close(s, r)
    _grads_agree(r, s, (tg, t), (eg, e), rng)


def test_batch_norm_variants():
    rng = np.random.default_rng(4)
    x, w, b = rng.standard_normal((4, 3, 5)), rng.standard_normal(3), rng.standard_normal(3)
    (tx, ex), (tw, ew), (tb, eb) = _pair(x, True), _pair(w, True), _pair(b, True)
    trm, erm = _pair(np.zeros(3))
    trv, erv = _pair(np.ones(3))
    r = torch._native_batch_norm_legit(tx, tw, tb, trm, trv, True, 0.1, 1e-5)
    s = ember._native_batch_norm_legit(ex, ew, eb, erm, erv, True, 0.1, 1e-5)
    for a, c in zip(s, r):
        _close(a, c)
    _close(erm, trm)
    _close(erv, trv)
    _grads_agree(r[0], s[0], (tx, tw, tb), (ex, ew, eb), rng)
    r = torch._native_batch_norm_legit(tx, tw, tb, True, 0.1, 1e-5)
    s = ember._native_batch_norm_legit(ex, ew, eb, True, 0.1, 1e-5)
    for a, c in zip(s, r):
        _close(a, c)
    r = torch.ops.aten._batch_norm_with_update(tx, tw, tb, trm, trv, 0.1, 1e-5)
    s = ember.ops.aten._batch_norm_with_update(ex, ew, eb, erm, erv, 0.1, 1e-5)
    assert len(s) == 4 and tuple(s[3].shape) == (0,) and s[3].dtype == ember.uint8
    for a, c in zip(s[:3], r[:3]):
        _close(a, c)
    _close(erm, trm)


def test_upsample_bilinear2d_aa():
    rng = np.random.default_rng(5)
    t, e = _pair(rng.standard_normal((2, 3, 10, 12)), True)
    for args in [([4, 5], False), ([4, 5], True), ([4, 5], False, 0.5, 0.4)]:
        r = torch.ops.aten._upsample_bilinear2d_aa(t, *args)
        s = ember.ops.aten._upsample_bilinear2d_aa(e, *args)
        _close(s, r)
        _grads_agree(r, s, (t,), (e,), rng)
    r = torch.ops.aten._upsample_bilinear2d_aa.vec(t, None, False, [0.5, 0.75])
    s = ember.ops.aten._upsample_bilinear2d_aa.vec(e, None, False, [0.5, 0.75])
    _close(s, r)


def test_segment_reduce_values_gradients_and_offsets():
    data = np.array([[1., 3., 3.5, 2., 0., 5.], [4., 4.5, 1., 2., 2.5, 7.]])
    lengths = np.array([[2, 0, 4], [3, 3, 0]])
    rng = np.random.default_rng(6)
    for reduce in ("max", "min", "sum", "prod", "mean", "amax", "amin"):
        for kw in ({}, {"initial": 2.0}):
            (t, e), (tl, el) = _pair(data, True), _pair(lengths)
            r = torch.segment_reduce(t, reduce, lengths=tl, axis=1, **kw)
            s = ember.segment_reduce(e, reduce, lengths=el, axis=1, **kw)
            _close(s, r)
            if kw:
                _grads_agree(r, s, (t,), (e,), rng)
    offsets = np.array([1, 3, 6])                   # element 0 belongs to no segment
    (t, e), (to, eo) = _pair(data[0], True), _pair(offsets)
    _close(ember._segment_reduce(e, "sum", offsets=eo), torch.segment_reduce(t, "sum", offsets=to))


@pytest.mark.parametrize("initial", [None, 2.0, 4.0, 5.0])
def test_segment_reduce_max_ties_share_the_gradient(initial):
    """Tied maxima share it; ``initial`` takes it only when strictly larger. (torch's
    batched backward, lengths of two dimensions, gives each tie all of it; not followed.)"""
    (t, e), (tl, el) = _pair(np.array([4., 4., 1., 3.]), True), _pair(np.array([3, 1]))
    r = torch.segment_reduce(t, "max", lengths=tl, initial=initial)
    s = ember.segment_reduce(e, "max", lengths=el, initial=initial)
    _close(s, r)
    _grads_agree(r, s, (t,), (e,), np.random.default_rng(7))


def test_gelu_backward_values_and_its_gradient():
    """aten.gelu_backward (exact GELU's derivative times the incoming gradient): values in
    float64 and float32, and its own gradient (the double backward of gelu)."""
    rng = np.random.default_rng(5)
    (tg, eg), (tx, ex) = _pair(rng.standard_normal((4, 6)), True), \
        _pair(rng.uniform(-5, 5, (4, 6)), True)
    r = torch.ops.aten.gelu_backward(tg, tx)
    s = ember.ops.aten.gelu_backward(eg, ex)
    _close(s, r)
    _grads_agree(r, s, (tg, tx), (eg, ex), rng)
    r32 = torch.ops.aten.gelu_backward(tg.detach().float(), tx.detach().float())
    s32 = ember.ops.aten.gelu_backward(eg.detach().float(), ex.detach().float())
    assert s32.dtype == ember.float32
    np.testing.assert_allclose(s32.numpy(), r32.numpy(), rtol=1e-5, atol=1e-6)
