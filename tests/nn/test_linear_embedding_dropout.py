"""Linear / Bilinear / Embedding / EmbeddingBag / Dropout / Flatten / one_hot vs torch 2.13."""
import numpy as np
import pytest
import torch

import ember
from ember import nn
import ember.nn.functional as F

RS = np.random.RandomState(0)


def _np(t):
    return t.detach().numpy()


def _copy(e, t):
    with torch.no_grad():
        for (n1, p1), (n2, p2) in zip(e.named_parameters(), t.named_parameters()):
            assert n1 == n2
            p2.copy_(torch.from_numpy(_np(p1).copy()))


def _check(e, t, *inputs, grad_idx=(0,), rtol=1e-5, atol=1e-5):
    ie = [ember.from_numpy(x.copy()) for x in inputs]
    it = [torch.from_numpy(x.copy()) for x in inputs]
    for i in grad_idx:
        ie[i].requires_grad_(True)
        it[i].requires_grad_(True)
    ye, yt = e(*ie), t(*it)
    np.testing.assert_allclose(_np(ye), yt.detach().numpy(), rtol=rtol, atol=atol)
    g = RS.randn(*yt.shape).astype(np.float32)
    ye.backward(ember.from_numpy(g))
    yt.backward(torch.from_numpy(g))
    for i in grad_idx:
        np.testing.assert_allclose(_np(ie[i].grad), it[i].grad.numpy(), rtol=rtol, atol=atol)
    for (n, pe), (_, pt) in zip(e.named_parameters(), t.named_parameters()):
        if pt.grad is None:
            assert pe.grad is None
        else:
            np.testing.assert_allclose(_np(pe.grad), pt.grad.numpy(), rtol=rtol, atol=atol,
                                       err_msg=n)


@pytest.mark.parametrize("shape", [(5, 4), (2, 3, 4), (4,)])
@pytest.mark.parametrize("bias", [True, False])
def test_linear(shape, bias):
    e, t = nn.Linear(4, 3, bias=bias), torch.nn.Linear(4, 3, bias=bias)
    _copy(e, t)
    assert repr(e) == repr(t)
    _check(e, t, RS.randn(*shape).astype(np.float32))


def test_linear_init_bounds_and_2d_grad_fn():
    ember.manual_seed(0)
    e = nn.Linear(100, 50)
    bound = 1 / np.sqrt(100)
    w = _np(e.weight)
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.9 * bound
    assert abs(w.std() - bound / np.sqrt(3)) < 0.05 * bound
    assert np.abs(_np(e.bias)).max() <= bound
    y = e(ember.randn(3, 100))
    assert type(y.grad_fn).__name__ == "AddmmBackward0" or y.grad_fn.name() == "AddmmBackward0"


def test_identity_flatten_unflatten():
    x = RS.randn(2, 3, 4).astype(np.float32)
    for e, t in [(nn.Identity(), torch.nn.Identity()), (nn.Flatten(), torch.nn.Flatten()),
                 (nn.Flatten(0, 1), torch.nn.Flatten(0, 1)),
                 (nn.Unflatten(2, (2, 2)), torch.nn.Unflatten(2, (2, 2)))]:
        assert repr(e) == repr(t)
        _check(e, t, x)


def test_bilinear():
    e, t = nn.Bilinear(3, 4, 5), torch.nn.Bilinear(3, 4, 5)
    _copy(e, t)
    assert repr(e) == repr(t)
    _check(e, t, RS.randn(6, 3).astype(np.float32), RS.randn(6, 4).astype(np.float32),
           grad_idx=(0, 1))


@pytest.mark.parametrize("kw", [{}, {"padding_idx": 2}, {"padding_idx": -1},
                                {"scale_grad_by_freq": True}, {"max_norm": 1.0}])
def test_embedding(kw):
    e, t = nn.Embedding(10, 4, **kw), torch.nn.Embedding(10, 4, **kw)
    _copy(e, t)
    assert repr(e) == repr(t)
    idx = np.array([[1, 2, 2, 9], [0, 2, 4, 9]], dtype=np.int64)
    _check(e, t, idx, grad_idx=())
    if "max_norm" in kw:
        np.testing.assert_allclose(_np(e.weight), t.weight.detach().numpy(), rtol=1e-5)


def test_embedding_padding_row_zero_and_from_pretrained():
    e = nn.Embedding(5, 3, padding_idx=1)
    assert (_np(e.weight)[1] == 0).all()
    w = ember.arange(12.).reshape(4, 3)
    p = nn.Embedding.from_pretrained(w)
    assert not p.weight.requires_grad
    assert repr(p) == repr(torch.nn.Embedding.from_pretrained(torch.arange(12.).reshape(4, 3)))
    np.testing.assert_array_equal(_np(p(ember.tensor([3, 0]))), [[9, 10, 11], [0, 1, 2]])
    with pytest.raises(IndexError, match="index out of range in self"):
        p(ember.tensor([4]))


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_offsets(mode):
    e, t = nn.EmbeddingBag(10, 3, mode=mode), torch.nn.EmbeddingBag(10, 3, mode=mode)
    _copy(e, t)
    assert repr(e) == repr(t)
    inp = np.array([1, 2, 4, 5, 4, 3, 2, 9], dtype=np.int64)
    offs = np.array([0, 3, 3, 6], dtype=np.int64)      # includes an empty bag
    _check(e, t, inp, offs, grad_idx=())


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_2d_and_padding(mode):
    e = nn.EmbeddingBag(10, 3, mode=mode, padding_idx=2)
    t = torch.nn.EmbeddingBag(10, 3, mode=mode, padding_idx=2)
    _copy(e, t)
    inp = np.array([[1, 2, 4], [2, 2, 9], [5, 6, 7]], dtype=np.int64)
    _check(e, t, inp, grad_idx=())
    e2, t2 = nn.EmbeddingBag(10, 3, mode=mode), torch.nn.EmbeddingBag(10, 3, mode=mode)
    _copy(e2, t2)
    _check(e2, t2, inp, grad_idx=())


def test_embedding_bag_per_sample_weights_and_last_offset():
    e = nn.EmbeddingBag(10, 3, mode="sum", include_last_offset=True)
    t = torch.nn.EmbeddingBag(10, 3, mode="sum", include_last_offset=True)
    _copy(e, t)
    inp = np.array([1, 2, 4, 5, 4, 3], dtype=np.int64)
    offs = np.array([0, 2, 6], dtype=np.int64)
    psw = RS.rand(6).astype(np.float32)
    ye = e(ember.from_numpy(inp), ember.from_numpy(offs), per_sample_weights=ember.from_numpy(psw))
    yt = t(torch.from_numpy(inp), torch.from_numpy(offs), per_sample_weights=torch.from_numpy(psw))
    np.testing.assert_allclose(_np(ye), yt.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_dropout_statistics_and_scaling():
    ember.manual_seed(0)
    x = ember.ones(200, 500)
    d = nn.Dropout(0.3)
    assert repr(d) == repr(torch.nn.Dropout(0.3))
    y = _np(d(x))
    np.testing.assert_allclose(np.unique(y), [0.0, 1 / 0.7], rtol=1e-6)
    assert abs((y == 0).mean() - 0.3) < 0.01
    d.eval()
    assert d(x) is x
    assert (_np(F.dropout(x, 1.0)) == 0).all()
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, but got 1.5"):
        F.dropout(x, 1.5)
    xr = ember.ones(100, 100, requires_grad=True)
    yr = F.dropout(xr, 0.5)
    yr.sum().backward()
    np.testing.assert_array_equal(_np(xr.grad), _np(yr))


@pytest.mark.parametrize("cls,shape", [("Dropout1d", (8, 30, 5)), ("Dropout2d", (8, 30, 4, 4)),
                                       ("Dropout3d", (8, 30, 2, 2, 2))])
def test_feature_dropout_channelwise(cls, shape):
    ember.manual_seed(1)
    d = getattr(nn, cls)(0.5)
    assert repr(d) == repr(getattr(torch.nn, cls)(0.5))
    y = _np(d(ember.ones(*shape)))
    flat = y.reshape(shape[0], shape[1], -1)
    assert ((flat == flat[..., :1]).all())
    assert abs((flat[..., 0] == 0).mean() - 0.5) < 0.1
    # unbatched input for 1d/3d
    if cls != "Dropout2d":
        assert d(ember.ones(*shape[1:])).shape == shape[1:]
    with pytest.raises(RuntimeError, match="dropout1d: Expected 2D or 3D input"):
        F.dropout1d(ember.ones(1, 2, 3, 4))


@pytest.mark.parametrize("fn", ["alpha_dropout", "feature_alpha_dropout"])
def test_alpha_dropout_keeps_selu_statistics(fn):
    ember.manual_seed(0)
    x = ember.randn(100, 200, 4) if fn.startswith("feature") else ember.randn(200000)
    y = getattr(F, fn)(x, 0.2, training=True)
    a = _np(y)
    assert abs(a.mean()) < 0.05 and abs(a.std() - 1) < 0.05
    assert getattr(F, fn)(x, 0.2, training=False) is x
    assert repr(nn.AlphaDropout(0.2)) == repr(torch.nn.AlphaDropout(0.2))


def test_one_hot():
    x = np.array([[0, 3], [1, 2]], dtype=np.int64)
    np.testing.assert_array_equal(_np(F.one_hot(ember.from_numpy(x))),
                                  torch.nn.functional.one_hot(torch.from_numpy(x)).numpy())
    assert F.one_hot(ember.from_numpy(x), 6).shape == (2, 2, 6)
    assert F.one_hot(ember.from_numpy(x)).dtype == ember.int64
    with pytest.raises(RuntimeError, match="Class values must be smaller than num_classes."):
        F.one_hot(ember.from_numpy(x), 2)
    with pytest.raises(RuntimeError, match="one_hot is only applicable to index tensor"):
        F.one_hot(ember.ones(2))


def test_functional_linear_bilinear():
    x = RS.randn(3, 4).astype(np.float32)
    w = RS.randn(5, 4).astype(np.float32)
    b = RS.randn(5).astype(np.float32)
    np.testing.assert_allclose(
        _np(F.linear(ember.from_numpy(x), ember.from_numpy(w), ember.from_numpy(b))),
        torch.nn.functional.linear(torch.from_numpy(x), torch.from_numpy(w),
                                   torch.from_numpy(b)).numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("fn,shape,p", [("dropout", (3, 4, 5), 0.3), ("dropout", (7,), 0.5),
                                        ("dropout2d", (2, 3, 4, 4), 0.1),
                                        ("dropout1d", (2, 3, 6), 0.4)])
def test_seeded_dropout_drops_what_torch_drops(fn, shape, p):
    """Same seed, same mask and scaling as torch (bernoulli_(1 - p) / (1 - p))."""
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    ember.manual_seed(5)
    torch.manual_seed(5)
    e = getattr(ember.nn.functional, fn)(ember.tensor(x), p)
    t = getattr(torch.nn.functional, fn)(torch.tensor(x), p)
    np.testing.assert_array_equal(e.numpy(), t.numpy())
    np.testing.assert_array_equal(ember.rand(4).numpy(), torch.rand(4).numpy())


@pytest.mark.parametrize("cls", ["Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout",
                                 "FeatureAlphaDropout"])
def test_dropout_modules_validate_p_and_keep_eval_identity(cls):
    for p in (-0.1, 1.5):
        with pytest.raises(ValueError, match="between 0 and 1"):
            getattr(nn, cls)(p)
        with pytest.raises(ValueError, match="between 0 and 1"):
            getattr(torch.nn, cls)(p)
    m = getattr(nn, cls)(0.4, inplace=True).eval()
    assert m.__constants__ == getattr(torch.nn, cls).__constants__
    x = ember.randn(2, 3, 4) if cls == "Dropout1d" else ember.randn(2, 3, 4, 4)
    assert m(x) is x or np.array_equal(m(x).numpy(), x.numpy())
