"""ember's extra ops (ember/_ops/extra.py, ember/nn/functional/_extra.py) against torch:
values, dtypes, gradients."""
import numpy as np
import pytest

import ember
from helpers import torch

pytestmark = pytest.mark.skipif(torch is None, reason="torch (the oracle) is not installed")

F = ember.nn.functional


def _np(t):
    return t.detach().numpy() if hasattr(t, "detach") else np.asarray(t)


def _close(a, b, tol=1e-6):
    a, b = _np(a), _np(b)
    assert a.shape == b.shape, (a.shape, b.shape)
    assert str(a.dtype) == str(b.dtype), (a.dtype, b.dtype)
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


def _pair(x, requires_grad=False):
    return (ember.tensor(x, requires_grad=requires_grad),
            torch.tensor(x, requires_grad=requires_grad))


def _check(fe, ft, arrays, grad=True, tol=1e-6, seed=0):
    """Compare fe(*ember tensors) with ft(*torch tensors): outputs and (float64) VJPs."""
    rng = np.random.default_rng(seed)
    pe = [ember.tensor(a, requires_grad=grad) for a in arrays]
    pt = [torch.tensor(a, requires_grad=grad) for a in arrays]
    oe, ot = fe(*pe), ft(*pt)
    oe = oe if isinstance(oe, (tuple, list)) else (oe,)
    ot = ot if isinstance(ot, (tuple, list)) else (ot,)
    assert len(oe) == len(ot)
    for a, b in zip(oe, ot):
        _close(a, b, tol)
    if not grad:
        return
    pairs = [(a, b) for a, b in zip(oe, ot) if b.requires_grad and b.numel()]
    cts = [rng.standard_normal(tuple(b.shape)) for _, b in pairs]
    ge = ember.autograd.grad([a for a, _ in pairs], pe, [ember.tensor(c) for c in cts],
                             allow_unused=True)
    gt = torch.autograd.grad([b for _, b in pairs], pt, [torch.tensor(c) for c in cts],
                             allow_unused=True)
    for a, b in zip(ge, gt):
        if b is None:
            assert a is None or not np.any(_np(a))
        else:
            _close(a, b, tol * 10)


RNG = np.random.default_rng(1234)


# -------------------------------------------------------------------- splits / rdiv

@pytest.mark.parametrize("name,arg", [("hsplit", 2), ("hsplit", [1, 3]), ("vsplit", 2),
                                      ("vsplit", [1]), ("dsplit", 2), ("dsplit", [1])])
def test_direction_splits(name, arg):
    x = RNG.standard_normal((4, 4, 4))
    _check(lambda t: getattr(ember, name)(t, arg), lambda t: getattr(torch, name)(t, arg), [x])
    _check(lambda t: getattr(t, name)(arg), lambda t: getattr(t, name)(arg), [x])


def test_direction_split_errors():
    with pytest.raises(RuntimeError, match="at least 2 dimension, but got a tensor with 1"):
        ember.vsplit(ember.ones(4), 2)
    with pytest.raises(RuntimeError, match="not divisible by the split_size 3"):
        ember.hsplit(ember.ones(4, 4), 3)


@pytest.mark.parametrize("name,arg", [("unsafe_split", 2), ("unsafe_chunk", 3)])
def test_unsafe(name, arg):
    x = RNG.standard_normal((5, 3))
    _check(lambda t: getattr(ember, name)(t, arg, 0), lambda t: getattr(torch, name)(t, arg, 0),
           [x])
    _check(lambda t: getattr(t, name)(arg, 1), lambda t: getattr(t, name)(arg, 1), [x])


def test_rdiv():
    x = RNG.uniform(1, 2, (3,))
    _check(lambda t: t.__rdiv__(2.0), lambda t: t.__rdiv__(2.0), [x])


# -------------------------------------------------------------------- unravel / factories

@pytest.mark.parametrize("shape", [(2, 3), (4,), (2, 1, 3), 5])
def test_unravel_index(shape):
    idx = np.array([0, 3, 5, -1, 2], np.int64)
    _check(lambda: ember.unravel_index(ember.tensor(idx), shape),
           lambda: torch.unravel_index(torch.tensor(idx), shape), [], grad=False)
    with pytest.raises(TypeError, match="integer dtype"):
        ember.unravel_index(ember.ones(2), (2,))


def test_scalar_tensor():
    for s, dt in [(3, None), (2.5, ember.float64), (True, ember.bool), (7, ember.int32)]:
        tdt = None if dt is None else getattr(torch, str(dt).split(".")[1])
        _close(ember.scalar_tensor(s, dtype=dt), torch.scalar_tensor(s, dtype=tdt))


def test_empty_permuted_and_nonzero_static():
    e, t = ember.empty_permuted((2, 3, 4), (0, 2, 1)), torch.empty_permuted((2, 3, 4), (0, 2, 1))
    assert e.shape == t.shape and e.stride() == t.stride() and e.dtype == ember.float32
    x = (RNG.random((3, 4)) < 0.5)
    for kw in ({"size": 2}, {"size": 15, "fill_value": -3}):
        _close(ember.nonzero_static(ember.tensor(x), **kw),
               torch.nonzero_static(torch.tensor(x), **kw))


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_chalf():
    """complex32 (ComplexHalf): tests/test_complex32.py covers the dtype."""
    e, t = ember.tensor([1.5, -2.25]).chalf(), torch.tensor([1.5, -2.25]).chalf()
    assert repr(e) == repr(t) and e.dtype is ember.complex32


# -------------------------------------------------------------------- resize_

def test_resize():
    e, t = _pair(np.arange(6.0, dtype=np.float32))
    e.resize_(2, 2)
    t.resize_(2, 2)
    _close(e, t)
    e2 = ember.arange(6.0)
    e2.resize_((2, 4))
    np.testing.assert_array_equal(_np(e2).reshape(-1)[:6], np.arange(6.0))
    assert e2.shape == (2, 4)
    e3 = ember.zeros(3)
    e3.resize_as_(ember.ones(1, 2))
    assert e3.shape == (1, 2)
    with pytest.raises(RuntimeError, match="cannot resize variables that require grad"):
        ember.ones(3, requires_grad=True).resize_(2)


# -------------------------------------------------------------------- as_strided_scatter

@pytest.mark.parametrize("size,stride,off", [((2,), (4,), 1), ((2, 2), (5, 1), 0),
                                             ((3, 2), (1, 3), None)])
def test_as_strided_scatter(size, stride, off):
    x = RNG.standard_normal((4, 5))[: 3 if size == (3, 2) else 4].copy()
    x = RNG.standard_normal((6,)) if size == (3, 2) else x
    src = RNG.standard_normal(size)
    # gradients follow torch's as_strided_scatter_backward (self's keeps the window only)
    _check(lambda a, b: ember.as_strided_scatter(a, b, size, stride, off),
           lambda a, b: torch.as_strided_scatter(a, b, size, stride, off), [x, src])


# -------------------------------------------------------------------- native norms

def test_native_layer_norm():
    x, w, b = RNG.standard_normal((2, 3, 4)), RNG.standard_normal(4), RNG.standard_normal(4)
    _check(lambda x, w, b: ember.native_layer_norm(x, [4], w, b, 1e-5),
           lambda x, w, b: torch.native_layer_norm(x, [4], w, b, 1e-5), [x, w, b])
    w2 = RNG.standard_normal((3, 4))
    _check(lambda x, w: ember.native_layer_norm(x, [3, 4], w, None, 1e-5),
           lambda x, w: torch.native_layer_norm(x, [3, 4], w, None, 1e-5), [x, w2])


def test_native_group_norm():
    x, w, b = RNG.standard_normal((2, 6, 5)), RNG.standard_normal(6), RNG.standard_normal(6)
    _check(lambda x, w, b: ember.native_group_norm(x, w, b, 2, 6, 5, 3, 1e-5),
           lambda x, w, b: torch.native_group_norm(x, w, b, 2, 6, 5, 3, 1e-5), [x, w, b])


@pytest.mark.parametrize("training", [True, False])
def test_native_batch_norm(training):
    x, w, b = RNG.standard_normal((4, 3, 5)), RNG.standard_normal(3), RNG.standard_normal(3)
    rm, rv = RNG.standard_normal(3), RNG.uniform(0.5, 2, 3)
    rme, rve, rmt, rvt = (ember.tensor(rm), ember.tensor(rv), torch.tensor(rm),
                          torch.tensor(rv))
    _check(lambda x, w, b: ember.native_batch_norm(x, w, b, rme, rve, training, 0.1, 1e-5),
           lambda x, w, b: torch.native_batch_norm(x, w, b, rmt, rvt, training, 0.1, 1e-5),
           [x, w, b])
    _close(rme, rmt)
    _close(rve, rvt)


# -------------------------------------------------------------------- histogramdd

@pytest.mark.parametrize("kw", [{"bins": 3}, {"bins": [2, 4]}, {"bins": [2, 3], "density": True},
                                {"bins": 4, "range": [-1.0, 1.0, -2.0, 0.5]}, {"bins": 3, "weight": True}])
def test_histogramdd(kw):
    x = RNG.standard_normal((20, 2)).astype(np.float32)
    kw = dict(kw)
    we = wt = None
    if kw.pop("weight", None):
        w = RNG.random(20).astype(np.float32)
        we, wt = ember.tensor(w), torch.tensor(w)
    he = ember.histogramdd(ember.tensor(x), weight=we, **kw)
    ht = torch.histogramdd(torch.tensor(x), weight=wt, **kw)
    _close(he.hist, ht.hist, 1e-5)
    for a, b in zip(he.bin_edges, ht.bin_edges):
        _close(a, b, 1e-6)
    edges = [torch.tensor([-3.0, 0.0, 3.0]), torch.tensor([-1.0, 1.0])]
    ht = torch.histogramdd(torch.tensor(x), bins=edges)
    he = ember.histogramdd(ember.tensor(x), bins=[ember.tensor(e.numpy()) for e in edges])
    _close(he.hist, ht.hist)
    bad = [torch.tensor([1.0, -1.0]), torch.tensor([-1.0, 1.0])]      # decreasing edges
    _close(ember.histogramdd(ember.tensor(x), bins=[ember.tensor(e.numpy()) for e in bad]).hist,
           torch.histogramdd(torch.tensor(x), bins=bad).hist)


# -------------------------------------------------------------------- nn.functional

@pytest.mark.parametrize("p", [0.0, 1.0, 2.0, 3.5, float("inf")])
def test_pdist(p):
    x = RNG.standard_normal((5, 3))
    _check(lambda t: F.pdist(t, p), lambda t: torch.nn.functional.pdist(t, p), [x],
           grad=p != 0)


@pytest.mark.parametrize("align", [False, True])
@pytest.mark.parametrize("size", [(2, 3, 4, 5), (2, 3, 2, 4, 5)])
def test_affine_grid(size, align):
    theta = RNG.standard_normal((2, 2, 3) if len(size) == 4 else (2, 3, 4))
    _check(lambda t: F.affine_grid(t, size, align),
           lambda t: torch.nn.functional.affine_grid(t, size, align), [theta])


_GS = [(nd, mode, pad, ac) for nd in (2, 3)
       for mode in (("bilinear", "nearest", "bicubic") if nd == 2 else ("bilinear", "nearest"))
       for pad in ("zeros", "border", "reflection") for ac in (False, True)]


@pytest.mark.parametrize("nd,mode,pad,align", _GS)
def test_grid_sample(nd, mode, pad, align):
    x = RNG.standard_normal((2, 3, 4, 5) if nd == 2 else (2, 2, 3, 4, 5))
    g = RNG.uniform(-1.3, 1.3, (2, 3, 4, 2) if nd == 2 else (2, 2, 3, 4, 3))
    _check(lambda a, b: F.grid_sample(a, b, mode, pad, align),
           lambda a, b: torch.nn.functional.grid_sample(a, b, mode, pad, align), [x, g])


def test_grid_sample_float32_and_errors():
    x = RNG.standard_normal((1, 2, 3, 3)).astype(np.float32)
    g = RNG.uniform(-1, 1, (1, 2, 2, 2)).astype(np.float32)
    _check(lambda a, b: F.grid_sample(a, b, align_corners=False),
           lambda a, b: torch.nn.functional.grid_sample(a, b, align_corners=False), [x, g],
           tol=1e-5)
    with pytest.raises(ValueError, match="expected mode"):
        F.grid_sample(ember.tensor(x), ember.tensor(g), mode="area")
    with pytest.raises(RuntimeError, match="bicubic interpolation only supports 4D"):
        F.grid_sample(ember.ones(1, 1, 2, 2, 2), ember.ones(1, 1, 1, 1, 3), mode="bicubic")
