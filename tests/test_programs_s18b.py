"""Regressions of round 13b (session 18): vision and image-processing code as users write it
(interpolate, grid_sample / affine_grid, pooling, fold / unfold, pixel shuffle, padding,
channels-last pools and 3-d convolutions, torchvision's transforms and box losses), each
checked against torch."""
import math

import numpy as np
import pytest

import ember
from helpers import assert_same_outcome

torch = pytest.importorskip("torch")

_X = np.random.default_rng(0).standard_normal((2, 3, 8, 8)).astype(np.float32)
_X1 = np.random.default_rng(1).standard_normal((2, 3, 8)).astype(np.float32)
_X3 = np.random.default_rng(2).standard_normal((2, 3, 4, 4, 4)).astype(np.float32)


def _t(L, a, **kw):
    return L.tensor(a, **kw)


# ---------------------------------------------------------------- interpolate

@pytest.mark.parametrize("call", [
    lambda L: L.nn.functional.interpolate(_t(L, _X), size=(3, 3, 3)),
    lambda L: L.nn.functional.interpolate(_t(L, _X), size=[3, 3, 3]),
    lambda L: L.nn.functional.interpolate(_t(L, _X), scale_factor=(2.0, 2, 2)),
    lambda L: L.nn.functional.interpolate(_t(L, _X), size=[3.0, 4.0]),
    lambda L: L.nn.functional.interpolate(_t(L, _X), size=(3, 4.5)),
    lambda L: L.nn.functional.interpolate(_t(L, _X), size=4, recompute_scale_factor=True),
    lambda L: L.nn.functional.interpolate(_t(L, _X).long(), size=4),
    lambda L: L.nn.functional.interpolate(_t(L, _X1).int(), size=4, mode="nearest-exact"),
    lambda L: L.nn.functional.interpolate(_t(L, _X3).bool(), size=2),
    lambda L: L.nn.functional.interpolate(_t(L, _X).to(L.uint8), size=4, mode="area"),
    lambda L: L.nn.functional.interpolate(_t(L, _X3).long(), size=2, mode="area"),
    lambda L: L.nn.functional.interpolate(_t(L, _X).half(), size=4, mode="bilinear",
                                          antialias=True),
    lambda L: L.nn.functional.interpolate(_t(L, _X).bfloat16(), size=4, mode="bicubic",
                                          antialias=True),
    lambda L: L.nn.functional.interpolate(_t(L, _X).to(L.complex64), size=4),
    lambda L: L.nn.functional.interpolate(_t(L, _X).to(L.complex64), size=4, mode="bilinear"),
    lambda L: L.nn.functional.interpolate(_t(L, _X).to(L.complex64), size=4, mode="bicubic"),
    lambda L: L.nn.functional.interpolate(_t(L, _X1).to(L.complex64), size=4, mode="linear"),
])
def test_interpolate_refusals_are_torchs(call):
    assert_same_outcome(call)


def test_interpolate_uint8_nearest_still_runs_and_area_names_the_pool():
    for L in (torch, ember):
        y = L.nn.functional.interpolate((_t(L, _X) * 10).abs().to(L.uint8), size=5)
        assert y.dtype == L.uint8 and tuple(y.shape) == (2, 3, 5, 5)
    names = []
    for L in (torch, ember):
        got = []
        for shape, size in (((1, 2, 6), 4), ((1, 2, 6, 6), 4), ((1, 2, 6, 6, 6), 4),
                            ((1, 2, 6, 6), 1)):
            x = L.ones(shape, requires_grad=True)
            got.append(L.nn.functional.interpolate(x, size=size, mode="area").grad_fn.name())
        names.append(got)
    assert names[0] == names[1] == ["SqueezeBackward1", "AdaptiveAvgPool2DBackward0",
                                    "AdaptiveAvgPool3DBackward0", "MeanBackward1"]


# ---------------------------------------------------------------- grid_sample / affine_grid

@pytest.mark.parametrize("call", [
    lambda L: L.nn.functional.grid_sample(_t(L, _X), L.zeros(2, 4, 4, 2, dtype=L.float64),
                                          align_corners=False),
    lambda L: L.nn.functional.grid_sample(_t(L, _X).double(), L.zeros(2, 4, 4, 2),
                                          align_corners=False),
    lambda L: L.nn.functional.grid_sample(_t(L, _X)[0], L.zeros(2, 4, 4, 2), align_corners=False),
    lambda L: L.nn.functional.grid_sample(_t(L, _X)[0], L.zeros(3, 4, 4, 2), align_corners=False),
    lambda L: L.nn.functional.grid_sample(_t(L, _X), L.zeros(2, 4, 4, 2, 1), align_corners=False),
    lambda L: L.nn.functional.grid_sample(_t(L, _X), L.zeros(3, 4, 4, 3), align_corners=False),
    lambda L: L.nn.functional.grid_sample(_t(L, _X).long(), L.zeros(2, 4, 4, 2).long(),
                                          align_corners=False),
    lambda L: L.nn.functional.grid_sample(_t(L, _X3).long(), L.zeros(2, 1, 1, 1, 3).long(),
                                          align_corners=False),
    lambda L: L.nn.functional.grid_sample(_t(L, _X)[:, :, :0], L.zeros(2, 4, 4, 2),
                                          align_corners=False),
    lambda L: L.nn.functional.affine_grid(L.zeros(2, 2, 3), (3, 3, 4, 4), align_corners=False),
    lambda L: L.nn.functional.affine_grid(L.zeros(2, 3, 4), (1, 3, 4, 4, 4), align_corners=False),
    lambda L: L.nn.functional.affine_grid(L.zeros(2, 1, 3), (2, 3, 4, 4), align_corners=False),
    lambda L: L.nn.functional.affine_grid(L.zeros(2, 2, 3), L.Size([2, 3, 4, 4, 4]),
                                          align_corners=False),
    lambda L: L.nn.functional.affine_grid(L.zeros(2, 3), [2, 3, 4, 4], align_corners=False),
])
def test_grid_sample_and_affine_grid_checks_are_torchs(call):
    assert_same_outcome(call)


def test_grid_sample_of_empty_batch_or_grid():
    for L in (torch, ember):
        x = _t(L, _X)
        assert tuple(L.nn.functional.grid_sample(x[:0], L.zeros(0, 4, 4, 2),
                                                 align_corners=False).shape) == (0, 3, 4, 4)
        assert tuple(L.nn.functional.grid_sample(x, L.zeros(2, 0, 4, 2),
                                                 align_corners=False).shape) == (2, 3, 0, 4)


# ---------------------------------------------------------------- pooling

_POOL_DTYPES = ["int8", "int16", "int32", "int64", "uint8", "bool", "complex64"]


@pytest.mark.parametrize("dt", _POOL_DTYPES)
@pytest.mark.parametrize("call", [
    lambda L, d: L.nn.functional.avg_pool1d(L.ones(1, 2, 6, dtype=d), 2),
    lambda L, d: L.nn.functional.avg_pool2d(L.ones(1, 2, 6, 6, dtype=d), 2),
    lambda L, d: L.nn.functional.avg_pool3d(L.ones(1, 2, 6, 6, 6, dtype=d), 2),
    lambda L, d: L.nn.functional.max_pool1d(L.ones(1, 2, 6, dtype=d), 2),
    lambda L, d: L.nn.functional.max_pool1d(L.ones(1, 2, 6, dtype=d), 2, return_indices=True),
    lambda L, d: L.nn.functional.max_pool2d(L.ones(1, 2, 6, 6, dtype=d), 2),
    lambda L, d: L.nn.functional.max_pool3d(L.ones(1, 2, 6, 6, 6, dtype=d), 2),
    lambda L, d: L.nn.functional.adaptive_avg_pool1d(L.ones(1, 2, 5, dtype=d), 2),
    lambda L, d: L.nn.functional.adaptive_avg_pool2d(L.ones(1, 2, 5, 5, dtype=d), 2),
    lambda L, d: L.nn.functional.adaptive_avg_pool3d(L.ones(1, 2, 5, 5, 5, dtype=d), 2),
    lambda L, d: L.nn.functional.adaptive_max_pool1d(L.ones(1, 2, 5, dtype=d), 2),
    lambda L, d: L.nn.functional.adaptive_max_pool2d(L.ones(1, 2, 5, 5, dtype=d), 2),
    lambda L, d: L.nn.functional.adaptive_max_pool3d(L.ones(1, 2, 5, 5, 5, dtype=d), 2),
    lambda L, d: L.nn.functional.lp_pool2d(L.ones(1, 2, 6, 6, dtype=d), 2, 2),
])
def test_pool_dtypes_as_torchs_kernels(call, dt):
    assert_same_outcome(lambda L: call(L, getattr(L, dt)), raises=False)


@pytest.mark.parametrize("call", [
    # dilation (after the padding checks), 1-d texts, with and without indices
    lambda L: L.nn.functional.max_pool1d(_t(L, _X1), 2, dilation=0),
    lambda L: L.nn.functional.max_pool1d(_t(L, _X1), 2, dilation=0, return_indices=True),
    lambda L: L.nn.functional.max_pool2d(_t(L, _X), 2, dilation=(1, 0)),
    lambda L: L.nn.functional.max_pool3d(_t(L, _X3), 2, dilation=-1),
    lambda L: L.nn.functional.max_pool2d(_t(L, _X), 2, padding=-1, dilation=0),
    lambda L: L.nn.functional.max_pool2d(_t(L, _X), 2, padding=2, dilation=0),
    lambda L: L.nn.functional.max_pool1d(_t(L, _X1), 2, padding=-1),
    lambda L: L.nn.functional.max_pool1d(_t(L, _X1), 2, stride=0, return_indices=True),
    # argument lengths
    lambda L: L.nn.functional.max_pool1d(_t(L, _X1), (2, 2)),
    lambda L: L.nn.functional.max_pool1d(_t(L, _X1), 2, (2, 2)),
    lambda L: L.nn.functional.max_pool1d(_t(L, _X1), 2, 2, (0, 0)),
    lambda L: L.nn.functional.max_pool1d(_t(L, _X1), 2, 2, 0, (1, 1)),
    lambda L: L.nn.functional.max_pool1d(_t(L, _X1), (2, 2), return_indices=True),
    lambda L: L.nn.functional.avg_pool1d(_t(L, _X1), 2, (1, 1)),
    lambda L: L.nn.functional.max_pool2d(_t(L, _X), (2, 2, 2)),
    lambda L: L.nn.functional.max_pool2d(_t(L, _X), ()),
    lambda L: L.nn.functional.max_pool3d(_t(L, _X3), 2, (1, 1)),
    lambda L: L.nn.functional.max_pool3d(_t(L, _X3), 2, 2, 0, (1, 1)),
    lambda L: L.nn.functional.avg_pool2d(_t(L, _X), 2, 2, (0, 0, 0)),
    lambda L: L.nn.functional.avg_pool3d(_t(L, _X3), (2, 2)),
    lambda L: L.nn.functional.avg_pool3d(_t(L, _X3), 2, (2, 2)),
    lambda L: L.nn.functional.avg_pool3d(_t(L, _X3), 2, 2, (0, 0)),
    # empty non-batch dimensions
    lambda L: L.nn.functional.max_pool1d(_t(L, _X1)[:, :0], 2),
    lambda L: L.nn.functional.max_pool1d(_t(L, _X1)[:, :, :0], 2, return_indices=True),
    lambda L: L.nn.functional.avg_pool1d(_t(L, _X1)[:, :, :0], 2),
    lambda L: L.nn.functional.max_pool2d(_t(L, _X)[:, :, :0], 2),
    lambda L: L.nn.functional.avg_pool2d(_t(L, _X)[:, :0], 2),
    lambda L: L.nn.functional.max_pool3d(_t(L, _X3)[:, :, :, :0], 2),
    lambda L: L.nn.functional.avg_pool3d(_t(L, _X3)[:, :, :0], 2),
    # divisor_override
    lambda L: L.nn.functional.avg_pool2d(_t(L, _X), 2, divisor_override=0),
    lambda L: L.nn.functional.avg_pool3d(_t(L, _X3)[:, :, :0], 2, divisor_override=0),
    # adaptive output sizes
    lambda L: L.nn.functional.adaptive_avg_pool1d(_t(L, _X1), (2, 2)),
    lambda L: L.nn.functional.adaptive_max_pool1d(_t(L, _X1), ()),
    lambda L: L.nn.functional.adaptive_avg_pool2d(_t(L, _X), (2,)),
    lambda L: L.nn.functional.adaptive_avg_pool3d(_t(L, _X3), (2, 2)),
    lambda L: L.nn.functional.adaptive_max_pool2d(_t(L, _X), (2, 3, 4)),
    lambda L: L.nn.functional.adaptive_max_pool3d(_t(L, _X3), (2,)),
    lambda L: L.nn.functional.adaptive_avg_pool1d(_t(L, _X1), -1),
    lambda L: L.nn.functional.adaptive_avg_pool2d(_t(L, _X), (-1, None)),
    lambda L: L.nn.functional.adaptive_avg_pool3d(_t(L, _X3), (2, 2, -2)),
    lambda L: L.nn.functional.adaptive_max_pool1d(_t(L, _X1), -2),
    lambda L: L.nn.functional.adaptive_max_pool2d(_t(L, _X), (2, -2)),
    # unpooling ranks
    lambda L: L.nn.functional.max_unpool1d(_t(L, _X1)[0, 0], _t(L, _X1)[0, 0].long(), 2),
    lambda L: L.nn.functional.max_unpool2d(_t(L, _X)[0, 0], _t(L, _X)[0, 0].long(), 2),
    lambda L: L.nn.functional.max_unpool3d(_t(L, _X3)[None, None], _t(L, _X3)[None, None].long(),
                                           2),
    # fractional max pooling
    lambda L: L.nn.functional.fractional_max_pool2d(_t(L, _X), 2, output_size=(9, 4)),
    lambda L: L.nn.functional.fractional_max_pool3d(_t(L, _X3), 2, output_size=(4, 4, 3)),
])
def test_pool_argument_errors_are_torchs(call):
    assert_same_outcome(call)


def test_lp_pool_of_infinite_norm_is_the_max_of_magnitudes():
    res = []
    for L in (torch, ember):
        out = []
        for fn, a in ((L.nn.functional.lp_pool1d, _X1[:, :, :7]),
                      (L.nn.functional.lp_pool2d, _X[:, :, :7, :7]),
                      (L.nn.functional.lp_pool3d, _X3)):
            x = _t(L, a, requires_grad=True)
            y = fn(x, float("inf"), 2, ceil_mode=True)
            y.sum().backward()
            out.append((y.grad_fn.name(), y.detach().numpy(), x.grad.numpy()))
        res.append(out)
    for (n1, y1, g1), (n2, y2, g2) in zip(*res):
        assert n1 == n2
        np.testing.assert_array_equal(y1, y2)
        np.testing.assert_array_equal(g1, g2)


@pytest.mark.parametrize("call", [
    lambda L, x: L.nn.functional.adaptive_avg_pool2d(x, 1),
    lambda L, x: L.nn.functional.adaptive_avg_pool2d(x, 3),
    lambda L, x: L.nn.functional.avg_pool2d(x, 3, 2, 1),
    lambda L, x: L.nn.functional.max_unpool2d(*L.nn.functional.max_pool2d(
        x, 2, return_indices=True), 2),
    lambda L, x: L.nn.functional.interpolate(x, size=3, mode="area"),
])
def test_pools_keep_channels_last(call):
    strides = []
    for L in (torch, ember):
        x = _t(L, _X).to(memory_format=L.channels_last)
        strides.append(call(L, x).stride())
    assert strides[0] == strides[1]


def test_3d_pools_and_single_sample_convolutions_answer_as_torch():
    for make in (lambda L, x: L.nn.functional.avg_pool3d(x, 2),
                 lambda L, x: L.nn.functional.adaptive_max_pool3d(x, 2),
                 lambda L, x: L.nn.functional.conv3d(x[:1], L.ones(4, 3, 2, 2, 2)),
                 lambda L, x: L.nn.functional.conv_transpose3d(x[:1], L.ones(3, 2, 2, 2, 2)),
                 lambda L, x: L.nn.functional.conv3d(x, L.ones(4, 3, 2, 2, 2)),
                 lambda L, x: L.nn.functional.conv3d(x[:1], L.ones(3, 1, 2, 2, 2), groups=3)):
        got = [make(L, _t(L, _X3).to(memory_format=L.channels_last_3d)).stride()
               for L in (torch, ember)]
        assert got[0] == got[1]


# ---------------------------------------------------------------- fold / unfold, shuffles, pad

@pytest.mark.parametrize("call", [
    lambda L: L.nn.functional.fold(L.ones(2, 12, 16), (5, 5), 0),
    lambda L: L.nn.functional.fold(L.ones(2, 12, 16), (5, 5), 2, stride=0),
    lambda L: L.nn.functional.fold(L.ones(2, 12, 16), (5, 5), 2, padding=-1),
    lambda L: L.nn.functional.fold(L.ones(2, 12, 16), (5, 5), 2, dilation=0),
    lambda L: L.nn.functional.fold(L.ones(2, 12, 16), (5, 5), 2, stride=0, dilation=0),
    lambda L: L.nn.functional.fold(L.ones(2, 12, 16), (5, 5, 5), 2),
    lambda L: L.nn.functional.fold(L.ones(2, 12, 16), (5, 5), (2, 2, 2)),
    lambda L: L.nn.functional.fold(L.ones(2, 12, 16), (5, 5), 2, padding=(1, 1, 1)),
    lambda L: L.nn.functional.fold(L.ones(2, 2, 12, 16), (5, 5), 2),
    lambda L: L.nn.functional.fold(L.ones(12), (5, 5), 2),
    lambda L: L.nn.functional.fold(L.ones(2, 12, 16).long(), (5, 5), 2),
    lambda L: L.nn.functional.fold(L.ones(2, 12, 15).long(), (5, 5), 2),
    lambda L: L.nn.functional.unfold(_t(L, _X).long(), 2),
    lambda L: L.nn.functional.pixel_shuffle(L.ones(1, 4, 2, 2), 0),
    lambda L: L.nn.functional.pixel_shuffle(L.ones(1, 4, 2, 2), -2),
    lambda L: L.nn.functional.pixel_shuffle(L.ones(1, 4, 2, 2), 2.0),
    lambda L: L.nn.functional.pixel_shuffle(L.ones(1, 4, 2, 2), True),
    lambda L: L.nn.functional.pixel_unshuffle(L.ones(1, 1, 4, 4), 0),
    lambda L: L.nn.functional.pixel_unshuffle(L.ones(1, 1, 4, 4), -1),
    lambda L: L.nn.functional.pixel_shuffle(L.ones(4, 4), 0),
    lambda L: L.nn.functional.pad(L.ones(2, 2), (1.5, 1)),
    lambda L: L.nn.functional.pad(L.ones(2, 2), ["a", 1]),
    lambda L: L.nn.functional.pad(L.ones(1, 1, 3, 4), (0, 0, 3, 3), mode="reflect"),
    lambda L: L.nn.functional.pad(L.ones(1, 1, 2, 3, 4), (0, 0, 0, 0, 2, 2), mode="reflect"),
])
def test_fold_shuffle_pad_checks_are_torchs(call):
    assert_same_outcome(call)


def test_fold_unfold_of_bool_and_shuffle_of_a_tensor_factor():
    for L in (torch, ember):
        assert L.nn.functional.unfold(_t(L, _X).bool(), 2).dtype == L.bool
        assert L.nn.functional.fold(L.ones(2, 12, 16).bool(), (5, 5), 2).dtype == L.bool
        y = L.nn.functional.pixel_shuffle(L.ones(1, 4, 2, 2), L.tensor(2))
        assert tuple(y.shape) == (1, 1, 4, 4) and y.grad_fn is None
        x = L.ones(1, 4, 2, 2, requires_grad=True)
        assert L.nn.functional.pixel_shuffle(x, 2).grad_fn.name() == "PixelShuffleBackward0"
        c = L.nn.functional.pad(L.ones(1, 1, 3, 3, requires_grad=True), (1, 1, 1, 1),
                                mode="circular")
        assert c.grad_fn.name() == "torch::autograd::CopySlices"


# ---------------------------------------------------------------- torchvision

def _vision(L):
    if L is ember:
        import ember.vision as tv
        return tv
    import sys
    import types
    # torchvision's C++ extension does not load next to torch 2.13; its Python parts do
    sys.modules.setdefault("torchvision._meta_registrations",
                           types.ModuleType("torchvision._meta_registrations"))
    try:
        import torchvision as tv
        import torchvision.transforms.functional  # noqa: F401
        import torchvision.ops  # noqa: F401
    except Exception as e:           # pragma: no cover
        pytest.skip(f"torchvision unusable: {e}")
    return tv


@pytest.mark.parametrize("call", [
    lambda tv, L: tv.transforms.functional.crop(L.rand(5), 0, 0, 2, 2),
    lambda tv, L: tv.transforms.functional.hflip(L.rand(5)),
    lambda tv, L: tv.transforms.functional.adjust_brightness(L.rand(5), 1.2),
    lambda tv, L: tv.transforms.functional.normalize(L.rand(5), [0.5], [0.5]),
    lambda tv, L: tv.transforms.functional.erase(L.rand(5), 0, 0, 1, 1, 0),
    lambda tv, L: tv.transforms.functional.rgb_to_grayscale(L.rand(5)),
    lambda tv, L: tv.transforms.functional.resize(L.rand(3, 4, 4), (1, 2, 3)),
    lambda tv, L: tv.transforms.functional.resize(L.rand(3, 4, 4), []),
])
def test_transforms_checks_are_torchvisions(call):
    got = []
    for L in (torch, ember):
        tv = _vision(L)
        try:
            call(tv, L)
            got.append("OK")
        except Exception as e:
            got.append((type(e).__name__, str(e)))
    assert got[0] != "OK" and got[0] == got[1]


_B1 = np.array([[1.0, 2.0, 7.5, 9.0], [0.0, 0.0, 4.0, 3.0], [3.0, 1.0, 5.0, 8.0],
                [2.0, 2.0, 2.5, 6.0]], dtype=np.float32)
_B2 = np.array([[0.5, 2.5, 6.0, 9.5], [1.0, 1.0, 3.0, 5.0], [6.0, 6.0, 9.0, 9.0],
                [2.0, 1.0, 4.0, 5.0]], dtype=np.float32)


@pytest.mark.parametrize("name", ["generalized_box_iou_loss", "distance_box_iou_loss",
                                  "complete_box_iou_loss"])
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_box_iou_losses_match_torchvision(name, reduction):
    res = []
    for L in (torch, ember):
        fn = getattr(_vision(L).ops, name)
        b = _t(L, _B2, requires_grad=True)
        loss = fn(_t(L, _B1), b, reduction=reduction)
        loss.sum().backward()
        res.append((loss.detach().numpy(), b.grad.numpy()))
    np.testing.assert_allclose(res[1][0], res[0][0], rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(res[1][1], res[0][1], rtol=1e-5, atol=1e-7)


def test_box_iou_losses_edge_cases():
    for name in ("generalized_box_iou_loss", "distance_box_iou_loss", "complete_box_iou_loss"):
        got = []
        for L in (torch, ember):
            fn = getattr(_vision(L).ops, name)
            empty = fn(L.zeros(0, 4), L.zeros(0, 4), reduction="mean")
            ints = fn(L.tensor([[0, 0, 4, 4]]), L.tensor([[1, 1, 5, 6]]))
            try:
                fn(_t(L, _B1), _t(L, _B2), reduction="avg")
                err = None
            except ValueError as e:
                err = str(e)
            got.append((float(empty), tuple(empty.shape), ints.dtype == L.float32,
                        round(float(ints), 6), err))
        assert got[0] == got[1]
        assert not math.isnan(got[1][0])


# ---------------------------------------------------------------- float32 linear resizes

@pytest.mark.parametrize("L_in, size, ac, C", [(23, 10, False, 3), (23, 47, True, 4),
                                                (500, 5000, True, 2), (5000, 777, False, 1),
                                                (7, 16, False, 16)])
def test_linear_1d_float32_bit_for_bit(L_in, size, ac, C):
    a = np.random.default_rng(L_in + size).random((2, C, L_in), dtype=np.float32)
    got = [L.nn.functional.interpolate(_t(L, a), size=size, mode="linear",
                                       align_corners=ac).numpy() for L in (torch, ember)]
    np.testing.assert_array_equal(got[1], got[0])


@pytest.mark.parametrize("N, C, S, size, cl", [
    (1, 3, (37, 41), (74, 82), False), (1, 1, (37, 41), (64, 65), False),
    (1, 1, (37, 41), (64, 64), False), (2, 3, (37, 41), (100, 41), False),
    (1, 3, (37, 41), (74, 82), True), (2, 3, (37, 41), (80, 70), True),
    (2, 4, (20, 20), (70, 70), True), (4, 4, (8, 8), (16, 16), False)])
@pytest.mark.parametrize("ac", [False, True])
def test_bilinear_float32_bit_for_bit_on_larger_outputs(N, C, S, size, cl, ac):
    a = np.random.default_rng(sum(size)).random((N, C) + S, dtype=np.float32)
    got = []
    for L in (torch, ember):
        x = _t(L, a)
        if cl:
            x = x.to(memory_format=L.channels_last)
        got.append(L.nn.functional.interpolate(x, size=size, mode="bilinear",
                                               align_corners=ac).numpy())
    np.testing.assert_array_equal(got[1], got[0])


# ---------------------------------------------------------------- warnings

def test_affine_grid_unit_size_warning_and_zero_size():
    import warnings
    for L in (torch, ember):
        th = L.zeros(2, 2, 3)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            L.nn.functional.affine_grid(th, (2, 3, 1, 4), align_corners=True)
            L.nn.functional.affine_grid(th, (2, 3, 4, 4), align_corners=True)
            L.nn.functional.affine_grid(th, (2, 3, 1, 4), align_corners=False)
        assert [str(m.message)[:40] for m in w] == \
            ["Since version 1.3.0, affine_grid behavior has changed"[:40]]
        assert w[0].filename == __file__
    for size in [(2, 3, 0, 4), (3, 3, 0, 4), (3, 3, 1, 4)]:
        assert_same_outcome(lambda L: L.nn.functional.affine_grid(L.zeros(2, 2, 3), size,
                                                                  align_corners=True))


def test_same_padding_copy_warning_once():
    import warnings
    from ember import _runtime_flags
    _runtime_flags._warned.discard("conv same padding copy")
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        x = ember.ones(1, 2, 6, 6)
        ember.nn.functional.conv2d(x, ember.ones(2, 2, 3, 3), padding="same", dilation=2)
        assert not w                          # no copy needed: no warning
        ember.nn.functional.conv2d(x, ember.ones(2, 2, 2, 3), padding="same")
        ember.nn.Conv1d(2, 2, 4, padding="same")(ember.ones(1, 2, 6))
    assert [str(m.message) for m in w] == [
        "Using padding='same' with even kernel lengths and odd dilation may require a "
        "zero-padded copy of the input be created"]
    assert w[0].filename == __file__


@pytest.mark.parametrize("S, kw", [((3, 4, 5), dict(size=(5, 7, 9))),
                                   ((3, 4, 5), dict(size=(2, 3, 3), align_corners=True)),
                                   ((6, 6, 6), dict(scale_factor=(2, 1.5, 0.7))),
                                   ((4, 5, 6), dict(size=(20, 20, 20), align_corners=True))])
def test_trilinear_float32_bit_for_bit_and_its_gradient(S, kw):
    a = np.random.default_rng(len(kw)).random((2, 3) + S, dtype=np.float32)
    got = []
    for L in (torch, ember):
        x = _t(L, a, requires_grad=True)
        y = L.nn.functional.interpolate(x, mode="trilinear", **kw)
        y.backward(L.ones_like(y))
        with L.no_grad():
            plain = L.nn.functional.interpolate(_t(L, a), mode="trilinear", **kw)
        got.append((y.detach().numpy(), plain.numpy(), x.grad.numpy(), y.grad_fn.name()))
    np.testing.assert_array_equal(got[1][0], got[0][0])
    np.testing.assert_array_equal(got[1][1], got[0][1])
    np.testing.assert_allclose(got[1][2], got[0][2], rtol=1e-5, atol=1e-6)  # (summation order)
    assert got[1][3] == got[0][3]
