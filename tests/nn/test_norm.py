"""Normalisation (functional and modules) against torch 2.13."""
import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F
from helpers import torch
from nla_compare import compare, gradcheck, pair

TF = torch.nn.functional
rng = np.random.default_rng(1)


@pytest.mark.parametrize("shape", [(4, 3), (4, 3, 5), (2, 3, 4, 2), (2, 3, 2, 2, 2)])
@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_functional(shape, training):
    x = rng.standard_normal(shape)
    w, b = rng.standard_normal(3), rng.standard_normal(3)
    rm, rv = rng.standard_normal(3), rng.uniform(0.5, 2, 3)
    er, tr = [pair(rm, False), pair(rv, False)], None
    tr = [er[0][1], er[1][1]]
    er = [er[0][0], er[1][0]]
    compare(lambda x, w, b: F.batch_norm(x, er[0], er[1], w, b, training, 0.3, 1e-3),
            lambda x, w, b: TF.batch_norm(x, tr[0], tr[1], w, b, training, 0.3, 1e-3),
            [x, w, b])
    # compare() ran once forward: the running stats got one update
    np.testing.assert_allclose(er[0].numpy(), tr[0].numpy(), atol=1e-12)
    np.testing.assert_allclose(er[1].numpy(), tr[1].numpy(), atol=1e-12)


def test_batch_norm_gradcheck():
    x, w, b = rng.standard_normal((3, 2, 2)), rng.standard_normal(2), rng.standard_normal(2)
    gradcheck(lambda x, w, b: F.batch_norm(x, None, None, w, b, True), [x, w, b])
    rm, rv = ember.tensor(rng.standard_normal(2)), ember.tensor(rng.uniform(1, 2, 2))
    gradcheck(lambda x, w, b: F.batch_norm(x, rm, rv, w, b, False), [x, w, b])


def test_batch_norm_single_value_error():
    with pytest.raises(ValueError, match="Expected more than 1 value per channel"):
        F.batch_norm(ember.randn(1, 3), None, None, training=True)


@pytest.mark.parametrize("cls,shape", [("BatchNorm1d", (5, 3)), ("BatchNorm1d", (5, 3, 4)),
                                       ("BatchNorm2d", (4, 3, 2, 3)),
                                       ("BatchNorm3d", (2, 3, 2, 2, 2))])
@pytest.mark.parametrize("kw", [{}, {"momentum": None}, {"affine": False},
                                {"track_running_stats": False}, {"momentum": 0.5,
                                                                  "eps": 1e-3}])
def test_batch_norm_modules(cls, shape, kw):
    em, tm = getattr(nn, cls)(3, **kw), getattr(torch.nn, cls)(3, **kw)
    assert repr(em) == repr(tm)
    if em.weight is not None:
        w, b = rng.standard_normal(3).astype(np.float32), rng.standard_normal(3).astype(np.float32)
        with ember.no_grad():
            em.weight.copy_(ember.tensor(w)); em.bias.copy_(ember.tensor(b))
        with torch.no_grad():
            tm.weight.copy_(torch.tensor(w)); tm.bias.copy_(torch.tensor(b))
    for step in range(4):
        x = rng.standard_normal(shape).astype(np.float32)
        e, t = pair(x, True)
        oe, ot = em(e), tm(t)
        np.testing.assert_allclose(oe.detach().numpy(), ot.detach().numpy(), atol=2e-5)
        g = rng.standard_normal(shape).astype(np.float32)
        oe.backward(ember.tensor(g)); ot.backward(torch.tensor(g))
        np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), atol=2e-5)
    if em.weight is not None:
        np.testing.assert_allclose(em.weight.grad.numpy(), tm.weight.grad.numpy(), atol=1e-4)
        np.testing.assert_allclose(em.bias.grad.numpy(), tm.bias.grad.numpy(), atol=1e-4)
    if em.track_running_stats:
        np.testing.assert_allclose(em.running_mean.numpy(), tm.running_mean.numpy(), atol=1e-5)
        np.testing.assert_allclose(em.running_var.numpy(), tm.running_var.numpy(), atol=1e-5)
        assert int(em.num_batches_tracked) == int(tm.num_batches_tracked)
        assert set(dict(em.state_dict())) == set(dict(tm.state_dict()))
    em.eval(); tm.eval()
    x = rng.standard_normal(shape).astype(np.float32)
    np.testing.assert_allclose(em(ember.tensor(x)).detach().numpy(),
                               tm(torch.tensor(x)).detach().numpy(), atol=2e-5)


def test_batch_norm_dim_error():
    with pytest.raises(ValueError, match="expected 4D input"):
        nn.BatchNorm2d(3)(ember.randn(2, 3))


@pytest.mark.parametrize("kw", [{}, {"elementwise_affine": False}, {"bias": False}])
def test_layer_norm(kw):
    x = rng.standard_normal((2, 3, 4))
    em, tm = nn.LayerNorm((3, 4), **kw).double(), torch.nn.LayerNorm((3, 4), **kw).double()
    assert repr(em) == repr(tm)
    w, b = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    compare(lambda x, w, b: F.layer_norm(x, (3, 4), w, b, 1e-4),
            lambda x, w, b: TF.layer_norm(x, (3, 4), w, b, 1e-4), [x, w, b])
    compare(lambda x: em(x), lambda x: tm(x), [x])
    gradcheck(lambda x, w, b: F.layer_norm(x, (4,), w, b), [x[:, :2], w[0], b[0]])
    np.testing.assert_allclose(ember.layer_norm(ember.tensor(x), [4]).numpy(),
                               torch.layer_norm(torch.tensor(x), [4]).numpy(), atol=1e-12)


def test_layer_norm_shape_error():
    with pytest.raises(RuntimeError, match="Given normalized_shape"):
        F.layer_norm(ember.randn(2, 3), (4,))


def test_group_norm():
    x = rng.standard_normal((2, 6, 3, 2))
    w, b = rng.standard_normal(6), rng.standard_normal(6)
    compare(lambda x, w, b: F.group_norm(x, 3, w, b),
            lambda x, w, b: TF.group_norm(x, 3, w, b), [x, w, b])
    gradcheck(lambda x, w, b: F.group_norm(x, 2, w, b), [x[:, :4, :2, :1], w[:4], b[:4]])
    em, tm = nn.GroupNorm(3, 6), torch.nn.GroupNorm(3, 6)
    assert repr(em) == repr(tm)
    with pytest.raises(RuntimeError, match="divisible by num_groups"):
        F.group_norm(ember.randn(2, 5, 3), 2)


@pytest.mark.parametrize("cls,shape", [("InstanceNorm1d", (2, 3, 5)),
                                       ("InstanceNorm2d", (2, 3, 2, 3)),
                                       ("InstanceNorm3d", (2, 3, 2, 2, 2))])
@pytest.mark.parametrize("kw", [{}, {"affine": True}, {"track_running_stats": True}])
def test_instance_norm(cls, shape, kw):
    em, tm = getattr(nn, cls)(3, **kw).double(), getattr(torch.nn, cls)(3, **kw).double()
    assert repr(em) == repr(tm)
    for _ in range(3):
        compare(lambda x: em(x), lambda x: tm(x), [rng.standard_normal(shape)])
    if em.track_running_stats:
        np.testing.assert_allclose(em.running_mean.numpy(), tm.running_mean.numpy(), atol=1e-12)
        np.testing.assert_allclose(em.running_var.numpy(), tm.running_var.numpy(), atol=1e-12)
        em.eval(); tm.eval()
        compare(lambda x: em(x), lambda x: tm(x), [rng.standard_normal(shape)])


def test_instance_norm_gradcheck():
    x, w, b = rng.standard_normal((2, 2, 3)), rng.standard_normal(2), rng.standard_normal(2)
    gradcheck(lambda x, w, b: F.instance_norm(x, weight=w, bias=b), [x, w, b])


def test_rms_norm():
    x, w = rng.standard_normal((2, 3, 4)), rng.standard_normal(4)
    compare(lambda x, w: F.rms_norm(x, (4,), w), lambda x, w: TF.rms_norm(x, (4,), w), [x, w])
    compare(lambda x: F.rms_norm(x, (3, 4), eps=1e-3), lambda x: TF.rms_norm(x, (3, 4), eps=1e-3),
            [x])
    gradcheck(lambda x, w: F.rms_norm(x, (4,), w), [x[:1], w])
    em, tm = nn.RMSNorm(4), torch.nn.RMSNorm(4)
    assert repr(em) == repr(tm)
    x32 = x.astype(np.float32)
    compare(lambda x: em(x), lambda x: tm(x), [x32], atol=1e-6, rtol=1e-5)


def test_local_response_norm():
    x = rng.standard_normal((2, 5, 3, 2))
    for size in (1, 2, 3, 4):
        compare(lambda x: F.local_response_norm(x, size, 0.1, 0.6, 1.5),
                lambda x: TF.local_response_norm(x, size, 0.1, 0.6, 1.5), [x])
    gradcheck(lambda x: F.local_response_norm(x, 3, 0.1), [x[:1, :, :1]])
    em, tm = nn.LocalResponseNorm(3), torch.nn.LocalResponseNorm(3)
    assert repr(em) == repr(tm)
    compare(lambda x: em(x), lambda x: tm(x), [x])


@pytest.mark.parametrize("p,dim", [(2.0, 1), (1.0, -1), (3.0, 0)])
def test_normalize(p, dim):
    x = rng.standard_normal((3, 4))
    compare(lambda x: F.normalize(x, p, dim), lambda x: TF.normalize(x, p, dim), [x])
    gradcheck(lambda x: F.normalize(x, p, dim), [x])


def test_torch_toplevel_norms():
    x = rng.standard_normal((2, 4, 3))
    e, t = pair(x, False)
    np.testing.assert_allclose(ember.group_norm(e, 2).numpy(), torch.group_norm(t, 2).numpy(),
                               atol=1e-12)
    np.testing.assert_allclose(
        ember.batch_norm(e, None, None, None, None, True, 0.1, 1e-5, False).numpy(),
        torch.batch_norm(t, None, None, None, None, True, 0.1, 1e-5, False).numpy(), atol=1e-12)
    np.testing.assert_allclose(
        ember.instance_norm(e, None, None, None, None, True, 0.1, 1e-5, False).numpy(),
        torch.instance_norm(t, None, None, None, None, True, 0.1, 1e-5, False).numpy(),
        atol=1e-12)
    np.testing.assert_allclose(ember.rms_norm(e, [3]).numpy(), torch.rms_norm(t, [3]).numpy(),
                               atol=1e-12)


def test_sync_batch_norm_is_batch_norm_on_cpu():
    em = nn.SyncBatchNorm(3)
    assert repr(em) == repr(torch.nn.SyncBatchNorm(3))


def test_batch_norm_empty_1d():
    e = F.batch_norm(ember.zeros(0), ember.zeros(0), ember.zeros(0), None, None, training=True)
    t = TF.batch_norm(torch.zeros(0), torch.zeros(0), torch.zeros(0), None, None, training=True)
    assert tuple(e.shape) == tuple(t.shape) == (0,)
    assert e.dtype == ember.float32


def test_batch_norm_backward_keeps_only_the_statistics_alive():
    # the record saves its mean/var outputs for the backward, not the normalised output
    import gc
    import weakref
    x = np.random.default_rng(5).standard_normal((6, 4, 3, 3)).astype(np.float32) * 2 + 5
    bn = ember.nn.BatchNorm2d(4)
    ex = ember.tensor(x, requires_grad=True)
    y = bn(ex)
    alive = weakref.ref(y)
    z = ember.relu(y)
    del y
    gc.collect()
    assert alive() is None
    z.sum().backward()
    tbn = torch.nn.BatchNorm2d(4)
    tx = torch.tensor(x, requires_grad=True)
    torch.relu(tbn(tx)).sum().backward()
    np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(bn.weight.grad.numpy(), tbn.weight.grad.numpy(), rtol=1e-4,
                               atol=1e-5)
