"""nn.functional.linear_cross_entropy and nn.LinearCrossEntropyOptions against torch: the
reference path (options=None) and the chunked record (_linear_cross_entropy_chunked)."""
import dataclasses
import warnings

import numpy as np
import pytest
import torch

import ember

F = ember.nn.functional
TF = torch.nn.functional
TOL = {np.float32: dict(rtol=2e-5, atol=2e-6), np.float64: dict(rtol=1e-10, atol=1e-12)}


def _data(rng, N, D, C, dt, out_features=(), probs=False):
    x = rng.standard_normal((N, D) if N else (D,)).astype(dt)
    w = rng.standard_normal((C,) + out_features + (D,)).astype(dt)
    b = rng.standard_normal((C,) + out_features).astype(dt)
    cw = rng.uniform(0.5, 2.0, C).astype(dt)
    if probs:
        shape = ((N, C) if N else (C,)) + out_features
        t = rng.random(shape).astype(dt)
        t /= t.sum(axis=1 if N else 0, keepdims=True)
    else:
        t = rng.integers(0, C, ((N,) if N else ()) + out_features)
        if N > 2:
            t[1] = 2                            # ignore_index=2 hits at least one row
    return x, w, b, cw, t


def _run(lib, x, w, b, cw, t, *, bias, cweight, options=None, grad_scale=1.7, **kw):
    """Loss and gradients (input, weight, bias) of ``lib``'s linear_cross_entropy."""
    X = lib.tensor(x, requires_grad=True)
    W = lib.tensor(w, requires_grad=True)
    B = lib.tensor(b, requires_grad=True) if bias else None
    loss = lib.nn.functional.linear_cross_entropy(
        X, W, lib.tensor(t), linear_bias=B, weight=lib.tensor(cw) if cweight else None,
        options=options, **kw)
    (loss * grad_scale).sum().backward()
    return [loss.detach().numpy(), X.grad.numpy(), W.grad.numpy()] + \
        ([B.grad.numpy()] if bias else [])


def _compare(x, w, b, cw, t, dt, *, chunk=None, chunked=False, **kw):
    exp = _run(torch, x, w, b, cw, t, **kw)
    eopt = ember.nn.LinearCrossEntropyOptions(batch_chunk_size=chunk) if chunked else None
    got = _run(ember, x, w, b, cw, t, options=eopt, **kw)
    assert len(got) == len(exp)
    for g, e in zip(got, exp):
        assert g.shape == e.shape and g.dtype == e.dtype
        np.testing.assert_allclose(g, e, **TOL[dt])


@pytest.mark.parametrize("chunked", [False, True], ids=["reference", "chunked"])
@pytest.mark.parametrize("dt", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("cweight", [False, True], ids=["", "cw"])
@pytest.mark.parametrize("ignore_index", [None, 2, -100])
@pytest.mark.parametrize("bias", [False, True], ids=["", "bias"])
def test_index_targets(chunked, dt, reduction, cweight, ignore_index, bias):
    rng = np.random.default_rng(0)
    x, w, b, cw, t = _data(rng, 11, 6, 9, dt)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")          # reduction='none' falls back
        _compare(x, w, b, cw, t, dt, chunk=4, chunked=chunked, bias=bias, cweight=cweight,
                 reduction=reduction, ignore_index=ignore_index)


@pytest.mark.parametrize("dt", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("cweight", [False, True], ids=["", "cw"])
def test_label_smoothing_reference(dt, reduction, cweight):
    rng = np.random.default_rng(1)
    x, w, b, cw, t = _data(rng, 10, 5, 7, dt)
    _compare(x, w, b, cw, t, dt, bias=True, cweight=cweight, reduction=reduction,
             ignore_index=2, label_smoothing=0.15)


@pytest.mark.parametrize("chunk", [None, 1, 2, 3, 5, 7, 13, 14, 100])
@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_chunk_sizes(chunk, reduction):
    """Chunk sizes that divide N = 14 and ones that do not, one row, larger than N."""
    rng = np.random.default_rng(2)
    x, w, b, cw, t = _data(rng, 14, 4, 6, np.float64)
    _compare(x, w, b, cw, t, np.float64, chunk=chunk, chunked=True, bias=True,
             cweight=True, reduction=reduction, ignore_index=2)


def test_default_chunk_many_classes():
    """batch_chunk_size=None with many classes: more than one default-sized chunk."""
    rng = np.random.default_rng(3)
    x, w, b, cw, t = _data(rng, 300, 8, 4000, np.float64)     # 300 rows > 4 MB / (4000*8)
    _compare(x, w, b, cw, t, np.float64, chunked=True, bias=True, cweight=False)


@pytest.mark.parametrize("chunked", [False, True], ids=["reference", "chunked"])
@pytest.mark.parametrize("dt", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_unbatched_input(chunked, dt, reduction):
    rng = np.random.default_rng(4)
    x, w, b, cw, t = _data(rng, 0, 5, 6, dt)
    _compare(x, w, b, cw, t, dt, chunked=chunked, bias=True, cweight=True,
             reduction=reduction)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("dt", [np.float32, np.float64], ids=["f32", "f64"])
def test_kdim_weights(reduction, dt):
    rng = np.random.default_rng(5)
    x, w, b, cw, t = _data(rng, 6, 4, 5, dt, out_features=(3, 2))
    _compare(x, w, b, cw, t, dt, bias=True, cweight=True, reduction=reduction,
             ignore_index=2, label_smoothing=0.1)
    with pytest.warns(UserWarning, match="``options`` ignored; chunked path needs"):
        _compare(x, w, b, cw, t, dt, chunked=True, bias=True, cweight=True,
                 reduction=reduction)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("shape", [(0, ()), (7, ()), (5, (3,))], ids=["1d", "2d", "kdim"])
def test_probability_targets(reduction, shape):
    rng = np.random.default_rng(6)
    N, out = shape
    x, w, b, cw, t = _data(rng, N, 4, 6, np.float64, out_features=out, probs=True)
    _compare(x, w, b, cw, t, np.float64, bias=True, cweight=True, reduction=reduction,
             label_smoothing=0.2)
    with pytest.warns(UserWarning, match="``options`` ignored; chunked path needs"):
        _compare(x, w, b, cw, t, np.float64, chunked=True, bias=False, cweight=False,
                 reduction=reduction)


@pytest.mark.parametrize("kw, match", [(dict(label_smoothing=0.1), "label_smoothing=0.1")])
def test_fallback_warning(kw, match):       # (reduction='none' is chunked, as in torch)
    rng = np.random.default_rng(7)
    x, w, b, cw, t = _data(rng, 5, 3, 4, np.float64)
    with pytest.warns(UserWarning, match=match):
        F.linear_cross_entropy(ember.tensor(x), ember.tensor(w), ember.tensor(t),
                               options=ember.nn.LinearCrossEntropyOptions(), **kw)
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # supported settings: no warning
        F.linear_cross_entropy(ember.tensor(x), ember.tensor(w), ember.tensor(t),
                               options=ember.nn.LinearCrossEntropyOptions())


def test_reference_gradcheck():
    rng = np.random.default_rng(8)
    x, w, b, cw, t = _data(rng, 5, 3, 4, np.float64)
    X, W, B = (ember.tensor(a, requires_grad=True) for a in (x, w, b))
    T, CW = ember.tensor(t), ember.tensor(cw)

    def f(x_, w_, b_):
        return F.linear_cross_entropy(x_, w_, T, linear_bias=b_, weight=CW, ignore_index=2,
                                      label_smoothing=0.1)
    assert ember.autograd.gradcheck(f, (X, W, B))
    assert ember.autograd.gradgradcheck(f, (X, W, B))
    xk, wk, bk, _, tk = _data(rng, 4, 3, 3, np.float64, out_features=(2,))
    Tk = ember.tensor(tk)

    def fk(x_, w_, b_):
        return F.linear_cross_entropy(x_, w_, Tk, linear_bias=b_, reduction="none")
    assert ember.autograd.gradcheck(fk, tuple(ember.tensor(a, requires_grad=True)
                                              for a in (xk, wk, bk)))


def test_reference_forward_ad_and_vmap():
    rng = np.random.default_rng(9)
    x, w, b, cw, t = _data(rng, 5, 3, 4, np.float64)
    v = rng.standard_normal(x.shape)
    T, W, B = ember.tensor(t), ember.tensor(w), ember.tensor(b)
    _, jv = ember.func.jvp(lambda a: F.linear_cross_entropy(a, W, T, linear_bias=B),
                           (ember.tensor(x),), (ember.tensor(v),))
    TT, TW, TB = torch.tensor(t), torch.tensor(w), torch.tensor(b)
    _, tjv = torch.func.jvp(lambda a: TF.linear_cross_entropy(a, TW, TT, linear_bias=TB),
                            (torch.tensor(x),), (torch.tensor(v),))
    np.testing.assert_allclose(jv.numpy(), tjv.numpy(), rtol=1e-10, atol=1e-12)
    xs = rng.standard_normal((3, 5, 3))
    got = ember.func.vmap(lambda a: F.linear_cross_entropy(a, W, T, linear_bias=B))(
        ember.tensor(xs))
    exp = torch.func.vmap(lambda a: TF.linear_cross_entropy(a, TW, TT, linear_bias=TB))(
        torch.tensor(xs))
    np.testing.assert_allclose(got.numpy(), exp.numpy(), rtol=1e-10, atol=1e-12)


def test_chunked_no_double_backward():
    rng = np.random.default_rng(10)
    x, w, b, cw, t = _data(rng, 5, 3, 4, np.float64)
    X, W = ember.tensor(x, requires_grad=True), ember.tensor(w, requires_grad=True)
    loss = F.linear_cross_entropy(X, W, ember.tensor(t),
                                  options=ember.nn.LinearCrossEntropyOptions())
    with pytest.raises(RuntimeError, match="double backward"):
        ember.autograd.grad(loss, (X, W), create_graph=True)


def test_chunked_retain_graph_and_no_grad():
    rng = np.random.default_rng(11)
    x, w, b, cw, t = _data(rng, 6, 3, 4, np.float64)
    opts = ember.nn.LinearCrossEntropyOptions(batch_chunk_size=4)
    X, W = ember.tensor(x, requires_grad=True), ember.tensor(w, requires_grad=True)
    loss = F.linear_cross_entropy(X, W, ember.tensor(t), options=opts)
    loss.backward(retain_graph=True)
    g1 = W.grad.clone()
    loss.backward()
    np.testing.assert_allclose(W.grad.numpy(), 2 * g1.numpy())
    with ember.no_grad():
        l2 = F.linear_cross_entropy(X, W, ember.tensor(t), options=opts)
    assert not l2.requires_grad
    np.testing.assert_allclose(l2.numpy(), loss.detach().numpy())
    # only the weight requires grad
    W2 = ember.tensor(w, requires_grad=True)
    F.linear_cross_entropy(ember.tensor(x), W2, ember.tensor(t), options=opts).backward()
    np.testing.assert_allclose(W2.grad.numpy(), g1.numpy())


def _errors(lib):
    rng = np.random.default_rng(12)
    x, w, b, cw, t = _data(rng, 5, 4, 7, np.float32)
    T = lib.tensor
    X, W, Tt = T(x), T(w), T(t)
    return {
        "input 3-D": ((T(rng.standard_normal((2, 5, 4)).astype(np.float32)), W, Tt), {}),
        "input 0-D": ((T(np.float32(1.0)), W, Tt), {}),
        "weight 1-D": ((X, T(w[0]), Tt), {}),
        "in_features": ((X, T(w[:, :3]), Tt), {}),
        "kdim unbatched": ((X[0], T(rng.standard_normal((7, 3, 4)).astype(np.float32)),
                            T(np.int64(1))), {}),
        "batch size": ((X, W, T(t[:4])), {}),
        "float index target": ((X, W, T(rng.random(5).astype(np.float32))), {}),
        "int32 target": ((X, W, T(t.astype(np.int32))), {}),
        "out of bounds": ((X, W, T(np.array([0, 1, 2, 3, 9]))), {}),
        "reduction": ((X, W, Tt), dict(reduction="foo")),
        "label smoothing": ((X, W, Tt), dict(label_smoothing=1.5)),
        "probs + ignore_index": ((X, W, T(rng.random((5, 7)).astype(np.float32))),
                                 dict(ignore_index=3)),
        "bias shape": ((X, W, Tt), dict(linear_bias=T(b[:6]))),
        "class weight shape": ((X, W, Tt), dict(weight=T(cw[:6]))),
        "dtype": ((X, T(w.astype(np.float64)), Tt), {}),
    }


@pytest.mark.parametrize("chunked", [False, True], ids=["reference", "chunked"])
def test_errors(chunked):
    te, ee = _errors(torch), _errors(ember)
    # torch's chunked path raises other classes for these two; ember keeps the reference's
    differ = {"batch size", "out of bounds", "class weight shape"} if chunked else set()
    for name in te:
        (targs, tkw), (eargs, ekw) = te[name], ee[name]
        with pytest.raises(Exception) as t_exc, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            TF.linear_cross_entropy(*targs, **tkw, options=torch.nn.LinearCrossEntropyOptions()
                                    if chunked else None)
        with pytest.raises(Exception) as e_exc, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            F.linear_cross_entropy(*eargs, **ekw, options=ember.nn.LinearCrossEntropyOptions()
                                   if chunked else None)
        if name not in differ:
            assert e_exc.type is t_exc.type, (name, e_exc.value, t_exc.value)


@pytest.mark.parametrize("kw", [
    {}, dict(batch_chunk_size=0), dict(batch_chunk_size=-3), dict(batch_chunk_size=2.0),
    dict(batch_chunk_size=8), dict(chunking_method=None), dict(chunking_method="foo"),
    dict(chunking_method="aspect_ratio"), dict(chunking_method="aspect_ratio:4"),
    dict(chunking_method="aspect_ratio:0"), dict(chunking_method="aspect_ratio:x"),
    dict(acc_policy="accurate"), dict(acc_policy="compact"), dict(acc_policy="fast"),
    dict(acc_dtype="float64"), dict(allow_retain_graph=True)])
def test_options_validation(kw):
    try:
        t = torch.nn.LinearCrossEntropyOptions(**kw)
    except Exception as e:
        with pytest.raises(type(e)) as info:
            ember.nn.LinearCrossEntropyOptions(**kw)
        assert str(info.value) == str(e)
    else:
        assert repr(ember.nn.LinearCrossEntropyOptions(**kw)) == repr(t)


def test_options_dtypes_and_frozen():
    O = ember.nn.LinearCrossEntropyOptions
    assert O(acc_dtype=ember.float64).acc_dtype is ember.float64
    with pytest.raises(ValueError, match="acc_dtype"):
        O(acc_dtype=ember.int64)
    o = O(batch_chunk_size=3)
    with pytest.raises(dataclasses.FrozenInstanceError):
        o.batch_chunk_size = 4
    assert o == O(batch_chunk_size=3) and hash(o) == hash(O(batch_chunk_size=3))
    assert "LinearCrossEntropyOptions" in ember.nn.__all__
    with pytest.raises(TypeError):
        F.linear_cross_entropy(ember.randn(2, 3), ember.randn(4, 3), ember.tensor([0, 1]),
                               options=3)


def test_chunked_acc_dtype():
    rng = np.random.default_rng(13)
    x, w, b, cw, t = _data(rng, 9, 5, 6, np.float32)
    exp = _run(torch, x.astype(np.float64), w.astype(np.float64), b.astype(np.float64), cw, t,
               bias=True, cweight=False)
    got = _run(ember, x, w, b, cw, t, bias=True, cweight=False,
               options=ember.nn.LinearCrossEntropyOptions(acc_dtype=ember.float64,
                                                          batch_chunk_size=2))
    for g, e in zip(got, exp):
        assert g.dtype == np.float32
        np.testing.assert_allclose(g, e, rtol=1e-6, atol=1e-7)
