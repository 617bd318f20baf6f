"""pad, interpolate, shuffles, fold/unfold, distances and their modules vs torch."""
import sys, os
import numpy as np
import pytest
import torch

import ember
import ember.nn.functional as F
import torch.nn.functional as TF
sys.path.insert(0, os.path.dirname(__file__))
from _cmp import compare  # noqa: E402

rng = np.random.default_rng(2)


@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
@pytest.mark.parametrize("pad,shape", [((1, 2), (2, 3, 4)), ((1, 2, 2, 1), (2, 3, 4, 5)),
                                       ((1, 0, 2, 1, 1, 1), (1, 2, 3, 4, 5)),
                                       ((2, 1), (3, 5))], ids=str)
def test_pad(mode, pad, shape):
    x = rng.standard_normal(shape)
    compare(lambda x: F.pad(x, pad, mode), lambda x: TF.pad(x, pad, mode), [x])


def test_pad_constant_negative_value():
    x = rng.standard_normal((2, 3, 4, 5))
    compare(lambda x: F.pad(x, (-1, 2, 0, -2), value=3.0),
            lambda x: TF.pad(x, (-1, 2, 0, -2), value=3.0), [x])


INTERP = []
for _mode, _n in [("nearest", 1), ("nearest", 2), ("nearest", 3), ("nearest-exact", 2),
                  ("linear", 1), ("bilinear", 2), ("bicubic", 2), ("trilinear", 3),
                  ("area", 2)]:
    for _kw in [dict(size=(7, 3, 5)[:_n]), dict(scale_factor=2), dict(scale_factor=1.7),
                dict(scale_factor=0.6, recompute_scale_factor=True)]:
        for _ac in ([None] if _mode in ("nearest", "nearest-exact", "area") else [False, True]):
            INTERP.append((_mode, _n, _kw, _ac))


@pytest.mark.parametrize("mode,n,kw,ac", INTERP, ids=str)
def test_interpolate(mode, n, kw, ac):
    x = rng.standard_normal((2, 3) + (5, 6, 4)[:n])
    compare(lambda x: F.interpolate(x, mode=mode, align_corners=ac, **kw),
            lambda x: TF.interpolate(x, mode=mode, align_corners=ac, **kw), [x], atol=1e-12)


def test_interpolate_float32():
    x = rng.standard_normal((2, 3, 5, 5)).astype(np.float32)
    for mode in ("nearest", "bilinear"):
        compare(lambda x: F.interpolate(x, scale_factor=1.7, mode=mode),
                lambda x: TF.interpolate(x, scale_factor=1.7, mode=mode), [x], atol=1e-5)


@pytest.mark.parametrize("case", [
    ("pixel_shuffle", (2, 8, 3, 4), (2,)), ("pixel_unshuffle", (2, 2, 4, 6), (2,)),
    ("channel_shuffle", (2, 6, 3, 4), (3,)),
    ("unfold", (2, 3, 6, 7), ((2, 3), (1, 2), 1, (2, 1))),
    ("fold", (2, 12, 18), ((5, 6), (2, 3), 1, 1, (2, 1))),
    ("unfold", (3, 6, 7), (2,)), ("fold", (12, 20), ((5, 6), 2))], ids=str)
def test_reshuffles(case):
    name, shape, args = case
    x = rng.standard_normal(shape)
    compare(lambda x: getattr(F, name)(x, *args), lambda x: getattr(TF, name)(x, *args), [x])


@pytest.mark.parametrize("kw", [{}, dict(p=1.0, keepdim=True), dict(p=3.0, eps=0.1)], ids=str)
def test_distances(kw):
    a, b = rng.standard_normal((4, 5)), rng.standard_normal((4, 5))
    compare(lambda a, b: F.pairwise_distance(a, b, **kw),
            lambda a, b: TF.pairwise_distance(a, b, **kw), [a, b])
    compare(lambda a, b: F.cosine_similarity(a, b, dim=-1),
            lambda a, b: TF.cosine_similarity(a, b, dim=-1), [a, b])


def test_gradcheck():
    x = ember.tensor(rng.standard_normal((1, 2, 3, 4)), requires_grad=True)
    for f in [lambda x: F.pad(x, (1, 2, 1, 0), "reflect"),
              lambda x: F.interpolate(x, scale_factor=1.5, mode="bicubic"),
              lambda x: F.interpolate(x, size=(5, 3), mode="bilinear", align_corners=True),
              lambda x: F.fold(F.unfold(x, 2), (3, 4), 2),
              lambda x: F.pixel_shuffle(x.reshape(1, 4, 2, 3), 2)]:
        assert ember.autograd.gradcheck(f, (x,))
        assert ember.autograd.gradgradcheck(f, (x,))


MODS = [("Upsample", (), dict(scale_factor=2, mode="bilinear")),
        ("Upsample", ((4, 5),), {}), ("UpsamplingNearest2d", (), dict(scale_factor=2)),
        ("UpsamplingBilinear2d", (), dict(size=(5, 7))),
        ("ZeroPad2d", ((1, 2, 0, 1),), {}), ("ConstantPad1d", (2, 3.5), {}),
        ("ConstantPad3d", (1, 0.0), {}), ("ReflectionPad1d", (2,), {}),
        ("ReflectionPad2d", ((1, 2, 2, 1),), {}), ("ReplicationPad2d", (2,), {}),
        ("ReplicationPad3d", (1,), {}), ("CircularPad2d", (1,), {}), ("ZeroPad1d", (1,), {}),
        ("PixelShuffle", (2,), {}), ("PixelUnshuffle", (2,), {}), ("ChannelShuffle", (2,), {}),
        ("Unfold", (2,), dict(stride=2)), ("Fold", ((4, 6), 2), dict(stride=2)),
        ("CosineSimilarity", (), {}), ("PairwiseDistance", (), dict(p=1.0))]


@pytest.mark.parametrize("name,args,kw", MODS, ids=lambda v: str(v))
def test_module_repr_and_forward(name, args, kw):
    em, tm = getattr(ember.nn, name)(*args, **kw), getattr(torch.nn, name)(*args, **kw)
    assert repr(em) == repr(tm)
    shape = {"ConstantPad1d": (2, 4, 6), "ReflectionPad1d": (2, 4, 6), "ZeroPad1d": (2, 4, 6),
             "ConstantPad3d": (1, 2, 3, 4, 5), "ReplicationPad3d": (1, 2, 3, 4, 5),
             "Fold": (2, 16, 6), "PairwiseDistance": (4, 6),
             "CosineSimilarity": (4, 6)}.get(name, (2, 4, 4, 6))
    x = rng.standard_normal(shape)
    if name in ("CosineSimilarity", "PairwiseDistance"):
        y = rng.standard_normal(shape)
        ye, yt = em(ember.tensor(x), ember.tensor(y)), tm(torch.tensor(x), torch.tensor(y))
    else:
        ye, yt = em(ember.tensor(x)), tm(torch.tensor(x))
    np.testing.assert_allclose(ye.numpy(), yt.numpy(), atol=1e-12)


def test_unfold_empty_batch():
    e = F.unfold(ember.zeros(0, 1, 5, 5), 2, 1, 0, 1)
    t = TF.unfold(torch.zeros(0, 1, 5, 5), 2, 1, 0, 1)
    assert tuple(e.shape) == tuple(t.shape) == (0, 4, 16)


@pytest.mark.parametrize("nd", [2, 3])
@pytest.mark.parametrize("mode", [0, 1, 2])
@pytest.mark.parametrize("padding", [0, 1, 2])
@pytest.mark.parametrize("align", [False, True])
def test_aten_grid_samplers_match_torch(nd, mode, padding, align):
    if nd == 3 and mode == 2:
        pytest.skip("bicubic is 2-D only (in torch too)")
    x = rng.standard_normal((2, 3) + (5,) * nd)
    g = rng.uniform(-1.2, 1.2, (2,) + (4,) * nd + (nd,))
    name = f"grid_sampler_{nd}d"
    e = getattr(ember, name)(ember.tensor(x), ember.tensor(g), mode, padding, align)
    t = getattr(torch, name)(torch.tensor(x), torch.tensor(g), mode, padding, align)
    np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-10, atol=1e-10)
    e2 = ember.grid_sampler(ember.tensor(x), ember.tensor(g), mode, padding, align)
    np.testing.assert_allclose(e2.numpy(), t.numpy(), rtol=1e-10, atol=1e-10)


def test_aten_grid_sampler_rejects_bad_modes_and_ranks():
    x, g = ember.zeros(1, 1, 3, 3), ember.zeros(1, 2, 2, 2)
    with pytest.raises(RuntimeError, match="interpolation_mode"):
        ember.grid_sampler_2d(x, g, 3, 0, False)
    with pytest.raises(RuntimeError, match="expected 5D input"):
        ember.grid_sampler_3d(x, g, 0, 0, False)
