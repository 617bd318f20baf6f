"""Regressions found by differential fuzzing of convolution / pooling / vision ops vs torch."""
import sys, os
import numpy as np
import pytest

import ember
import ember.nn.functional as F
sys.path.insert(0, os.path.dirname(__file__))
from helpers import torch  # noqa: E402
from _cmp import compare  # noqa: E402

TF = torch.nn.functional
rng = np.random.default_rng(7)


def _raises_like(fe, ft):
    with pytest.raises(Exception) as te:
        ft(torch)
    with pytest.raises(type(te.value)):
        fe(ember)


# ---------------------------------------------------------------- max pooling


@pytest.mark.parametrize("shape,kw", [
    ((1, 2, 4, 5), dict(kernel_size=(2, 3), stride=3, padding=(1, 2), dilation=2)),
    ((1, 1, 6), dict(kernel_size=3, stride=3, padding=2, dilation=2)),
    ((1, 1, 5, 4, 4), dict(kernel_size=3, padding=(1, 2, 1), dilation=2)),
])
def test_max_pool_padding_bounded_by_kernel_not_dilated_kernel(shape, kw):
    n = len(shape) - 2
    x = rng.standard_normal(shape)
    _raises_like(lambda T: getattr(F, f"max_pool{n}d")(T.tensor(x), **kw),
                 lambda T: getattr(TF, f"max_pool{n}d")(T.tensor(x), **kw))


@pytest.mark.parametrize("shape,kw", [
    ((2, 2, 1), dict(kernel_size=2, stride=2, padding=1, dilation=2)),
    ((1, 2, 3, 3, 1), dict(kernel_size=(4, 2, 2), stride=(2, 1, 2), padding=(2, 0, 1),
                           dilation=(2, 1, 2))),
    ((1, 1, 3, 1), dict(kernel_size=2, stride=2, padding=1, dilation=2)),
])
def test_max_pool_window_only_in_padding(shape, kw):
    # a dilated window can cover padding only: torch gives -inf and its first tap's index
    n = len(shape) - 2
    x = rng.standard_normal(shape)
    ve, ie = getattr(F, f"max_pool{n}d")(ember.tensor(x), return_indices=True, **kw)
    vt, it = getattr(TF, f"max_pool{n}d")(torch.tensor(x), return_indices=True, **kw)
    np.testing.assert_array_equal(ve.numpy(), vt.numpy())
    np.testing.assert_array_equal(ie.numpy(), it.numpy())
    xe = ember.tensor(x, requires_grad=True)
    out = getattr(F, f"max_pool{n}d")(xe, **kw)
    finite = ember.tensor(np.isfinite(out.detach().numpy()).astype(x.dtype))
    (out.masked_fill(~ember.tensor(np.isfinite(out.detach().numpy())), 0) * finite).sum() \
        .backward()
    assert xe.grad.shape == xe.shape and np.isfinite(xe.grad.numpy()).all()


@pytest.mark.parametrize("fn", ["max_pool1d", "max_pool2d", "max_pool3d", "avg_pool1d",
                                "avg_pool2d", "avg_pool3d"])
def test_pool_negative_padding_raises(fn):
    n = int(fn[-2])
    x = rng.standard_normal((1, 1) + (5,) * n)
    _raises_like(lambda T: getattr(F, fn)(T.tensor(x), 2, padding=-1),
                 lambda T: getattr(TF, fn)(T.tensor(x), 2, padding=-1))


# ---------------------------------------------------------------- avg / lp pooling 3d


@pytest.mark.parametrize("shape,kw", [
    ((1, 3, 1, 4, 4), dict(kernel_size=(2, 2, 3), padding=(1, 0, 0))),
    ((1, 2, 3, 5, 3), dict(kernel_size=(2, 3, 4), stride=1, padding=(1, 1, 2))),
])
def test_avg_pool3d_input_smaller_than_kernel_raises(shape, kw):
    x = rng.standard_normal(shape)
    _raises_like(lambda T: F.avg_pool3d(T.tensor(x), **kw),
                 lambda T: TF.avg_pool3d(T.tensor(x), **kw))


def test_lp_pool3d_input_smaller_than_kernel_raises():
    x = np.abs(rng.standard_normal((2, 1, 3, 1, 3))) + 0.1
    _raises_like(lambda T: F.lp_pool3d(T.tensor(x), 2.0, (3, 2, 2), ceil_mode=True),
                 lambda T: TF.lp_pool3d(T.tensor(x), 2.0, (3, 2, 2), ceil_mode=True))


# ---------------------------------------------------------------- adaptive pooling


@pytest.mark.parametrize("fn,shape", [
    ("adaptive_max_pool2d", (1, 0, 3, 3)), ("adaptive_max_pool2d", (1, 1, 0, 3)),
    ("adaptive_max_pool1d", (1, 2, 0)), ("adaptive_max_pool1d", (1, 0, 2)),
    ("adaptive_max_pool3d", (1, 0, 1, 2, 2)), ("adaptive_avg_pool1d", (1, 2, 0)),
    ("adaptive_avg_pool3d", (1, 1, 1, 0, 3)),
])
def test_adaptive_pool_empty_non_batch_dim_raises(fn, shape):
    _raises_like(lambda T: getattr(F, fn)(T.ones(shape), 2),
                 lambda T: getattr(TF, fn)(T.ones(shape), 2))


@pytest.mark.parametrize("fn,shape,out", [
    ("adaptive_max_pool2d", (1, 3, 3), (2, 0)), ("adaptive_max_pool1d", (0, 1, 3), 2),
    ("adaptive_max_pool3d", (0, 1, 2, 2), 2), ("adaptive_avg_pool2d", (2, 0, 2, 2), 2),
])
def test_adaptive_pool_empty_results(fn, shape, out):
    x = rng.standard_normal(shape)
    e = getattr(F, fn)(ember.tensor(x), out)
    t = getattr(TF, fn)(torch.tensor(x), out)
    assert tuple(e.shape) == tuple(t.shape)


@pytest.mark.parametrize("fn", ["adaptive_avg_pool2d", "adaptive_max_pool2d"])
def test_adaptive_pool_negative_output_size_raises(fn):
    _raises_like(lambda T: getattr(F, fn)(T.ones(1, 3, 3), (2, -1)),
                 lambda T: getattr(TF, fn)(T.ones(1, 3, 3), (2, -1)))


# ---------------------------------------------------------------- max_unpool


@pytest.mark.parametrize("shape,k,s,p,osz", [
    ((2, 1, 7, 2), 2, 3, 1, None), ((1, 1, 2, 2, 4), 2, 3, 1, [2, 0, 5]),
    ((1, 1, 2), 2, 3, 1, [0]),
])
def test_max_unpool_empty_output(shape, k, s, p, osz):
    n = len(shape) - 2
    vt, it = getattr(TF, f"max_pool{n}d")(torch.tensor(rng.standard_normal(shape)), k, s, p,
                                          return_indices=True)
    t = getattr(TF, f"max_unpool{n}d")(vt, it, k, s, p, output_size=osz)
    e = getattr(F, f"max_unpool{n}d")(ember.tensor(vt.numpy()), ember.tensor(it.numpy()), k, s,
                                      p, output_size=osz)
    assert tuple(e.shape) == tuple(t.shape) and t.numel() == 0


# ---------------------------------------------------------------- fractional max pooling


def test_fractional_max_pool3d_pool_too_large_is_strict():
    x = rng.standard_normal((1, 1, 4, 4, 4))
    _raises_like(lambda T: F.fractional_max_pool3d(T.tensor(x), 2, output_size=3),
                 lambda T: TF.fractional_max_pool3d(T.tensor(x), 2, output_size=3))
    _raises_like(lambda T: F.fractional_max_pool3d(T.tensor(x), 1, output_size=4),
                 lambda T: TF.fractional_max_pool3d(T.tensor(x), 1, output_size=4))


@pytest.mark.parametrize("n,shape,kw", [
    (3, (1, 1, 3, 4, 4), dict(kernel_size=2, output_ratio=0.3)),
    (2, (1, 1, 3, 4), dict(kernel_size=2, output_size=(0, 2))),
    (2, (2, 3, 4), dict(kernel_size=2, output_ratio=(0.3, 0.3))),
])
def test_fractional_max_pool_empty_output(n, shape, kw):
    x = rng.standard_normal(shape)
    ve, ie = getattr(F, f"fractional_max_pool{n}d")(ember.tensor(x), return_indices=True, **kw)
    vt, it = getattr(TF, f"fractional_max_pool{n}d")(torch.tensor(x), return_indices=True,
                                                     **kw)
    assert tuple(ve.shape) == tuple(vt.shape) and tuple(ie.shape) == tuple(it.shape)
    assert str(ie.dtype) == str(it.dtype)


@pytest.mark.parametrize("n", [2, 3])
def test_fractional_max_pool_modules(n):
    shape = (2, 3) + (9, 8, 7)[:n]
    x = rng.standard_normal(shape)
    r = rng.random((2, 3, n))
    mt = getattr(torch.nn, f"FractionalMaxPool{n}d")(2, output_ratio=0.5, return_indices=True,
                                                      _random_samples=torch.tensor(r))
    me = getattr(ember.nn, f"FractionalMaxPool{n}d")(2, output_ratio=0.5, return_indices=True,
                                                      _random_samples=ember.tensor(r))
    assert repr(me) == repr(mt)
    assert me.kernel_size == mt.kernel_size and me.output_ratio == mt.output_ratio
    assert list(me.state_dict()) == list(mt.state_dict())
    (ve, ie), (vt, it) = me(ember.tensor(x)), mt(torch.tensor(x))
    np.testing.assert_allclose(ve.numpy(), vt.numpy())
    np.testing.assert_array_equal(ie.numpy(), it.numpy())
    for kw in [dict(), dict(output_ratio=1.5), dict(output_size=2, output_ratio=0.5)]:
        _raises_like(lambda T: getattr(T.nn, f"FractionalMaxPool{n}d")(2, **kw),
                     lambda T: getattr(T.nn, f"FractionalMaxPool{n}d")(2, **kw))


# ---------------------------------------------------------------- pad


@pytest.mark.parametrize("shape,pad", [((2, 1, 5, 1), (-2, 1)), ((2, 1, 1), (2, -2)),
                                       ((2, 1, 2), (-3, 3))])
def test_constant_pad_crop_past_the_input_raises(shape, pad):
    _raises_like(lambda T: F.pad(T.ones(shape), pad), lambda T: TF.pad(T.ones(shape), pad))


@pytest.mark.parametrize("mode,shape,pad", [
    ("reflect", (1, 1, 4), (-2, -2)), ("reflect", (1, 1, 4), (1, -5)),
    ("replicate", (1, 1, 4), (-3, -2)), ("replicate", (1, 2, 2, 1), (1, 0, -2, -1)),
    ("replicate", (1, 2, 5, 3, 5), (0, 1, -2, -2, 3, 3)), ("circular", (1, 1, 4), (-3, -2)),
    ("circular", (2, 1, 2, 2), (1, -2, -2, -2)),
])
def test_non_constant_pad_too_small_output_raises(mode, shape, pad):
    _raises_like(lambda T: F.pad(T.ones(shape), pad, mode=mode),
                 lambda T: TF.pad(T.ones(shape), pad, mode=mode))


@pytest.mark.parametrize("mode,shape,pad", [
    ("replicate", (1, 1, 2, 3), (-1, -2, 1, 2)), ("reflect", (2, 1, 3, 4), (-2, 2, -2, 0)),
    ("circular", (1, 1, 4), (-2, -2)),
])
def test_non_constant_pad_some_empty_dim_is_allowed(mode, shape, pad):
    # torch only refuses when every padded dim comes out empty (or one negative)
    e = F.pad(ember.ones(shape), pad, mode=mode)
    t = TF.pad(torch.ones(shape), pad, mode=mode)
    assert tuple(e.shape) == tuple(t.shape)


# ---------------------------------------------------------------- fold / interpolate


def test_fold_empty_blocks_raises():
    _raises_like(lambda T: F.fold(T.ones(2, 4, 0), (2, 2), 1),
                 lambda T: TF.fold(T.ones(2, 4, 0), (2, 2), 1))


@pytest.mark.parametrize("mode,shape,size", [
    ("nearest", (1, 1, 4), (0,)), ("nearest", (1, 1, 4, 4), (4, 0)),
    ("nearest-exact", (1, 1, 4, 4, 4), (4, 4, 0)), ("linear", (1, 1, 4), (0,)),
    ("bilinear", (1, 1, 4, 4), (4, 0)), ("bicubic", (1, 1, 4, 4), (0, 4)),
    ("trilinear", (1, 1, 4, 4, 4), (0, 4, 4)), ("bilinear", (1, 1, 0, 3), (2, 2)),
    ("area", (1, 1, 0, 3), (2, 2)),
])
def test_interpolate_empty_sizes_raise(mode, shape, size):
    _raises_like(lambda T: F.interpolate(T.ones(shape), size=size, mode=mode),
                 lambda T: TF.interpolate(T.ones(shape), size=size, mode=mode))


def test_interpolate_scale_factor_to_zero_raises():
    _raises_like(lambda T: F.interpolate(T.ones(2, 2, 4, 1), scale_factor=(0.7, 0.5),
                                         mode="bilinear", align_corners=True),
                 lambda T: TF.interpolate(T.ones(2, 2, 4, 1), scale_factor=(0.7, 0.5),
                                          mode="bilinear", align_corners=True))


@pytest.mark.parametrize("mode", ["bilinear", "bicubic", "lanczos"])
@pytest.mark.parametrize("kw", [
    dict(size=(3, 5)), dict(size=(9, 2)), dict(size=(4, 4), align_corners=True),
    dict(scale_factor=(0.5, 0.7)), dict(scale_factor=(0.4, 2.0), align_corners=True),
    dict(scale_factor=0.7, recompute_scale_factor=True), dict(scale_factor=(2.0, 1.5)),
    dict(size=(1, 1)),
], ids=str)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_interpolate_antialias(mode, kw, dtype):
    if mode == "lanczos" and kw.get("align_corners"):
        pytest.skip("lanczos refuses align_corners=True (tested below)")
    x = rng.standard_normal((2, 3, 7, 6)).astype(dtype)
    tol = 1e-10 if dtype == np.float64 else 1e-5
    compare(lambda x: F.interpolate(x, mode=mode, antialias=True, **kw),
            lambda x: TF.interpolate(x, mode=mode, antialias=True, **kw), [x], atol=tol,
            rtol=tol)


@pytest.mark.parametrize("mode,shape,kw", [
    ("nearest", (1, 1, 4, 4), dict(antialias=True)), ("area", (1, 1, 4, 4), dict(antialias=True)),
    ("bilinear", (1, 1, 4, 4, 4), dict(antialias=True)),
    ("lanczos", (1, 1, 4, 4), dict()), ("lanczos", (1, 1, 4, 4),
                                         dict(antialias=True, align_corners=True)),
    ("lanczos", (1, 1, 4), dict()),
])
def test_interpolate_antialias_and_lanczos_errors(mode, shape, kw):
    _raises_like(lambda T: F.interpolate(T.ones(shape), size=2, mode=mode, **kw),
                 lambda T: TF.interpolate(T.ones(shape), size=2, mode=mode, **kw))


# ---------------------------------------------------------------- convolution argument checks


@pytest.mark.parametrize("name,case", [
    ("weight dtype", lambda T: TFn(T).conv2d(T.ones(1, 2, 5, 5), T.ones(3, 2, 3, 3,
                                                                        dtype=T.float64))),
    ("bias dtype", lambda T: TFn(T).conv1d(T.ones(1, 2, 5), T.ones(3, 2, 3),
                                           T.ones(3, dtype=T.float64))),
    ("int input", lambda T: TFn(T).conv2d(T.ones(1, 2, 5, 5, dtype=T.int64),
                                          T.ones(3, 2, 3, 3))),
    ("convT3d bias dtype", lambda T: TFn(T).conv_transpose3d(
        T.ones(1, 2, 3, 3, 3), T.ones(2, 3, 2, 2, 2), T.ones(3, dtype=T.float64))),
    ("bias shape", lambda T: TFn(T).conv2d(T.ones(1, 2, 5, 5), T.ones(3, 2, 3, 3), T.ones(4))),
    ("convT bias shape", lambda T: TFn(T).conv_transpose1d(T.ones(1, 2, 5), T.ones(2, 3, 3),
                                                           T.ones(2))),
    ("output_padding >= stride", lambda T: TFn(T).conv_transpose2d(
        T.ones(1, 2, 5, 5), T.ones(2, 3, 3, 3), stride=2, output_padding=2)),
    ("negative output_padding", lambda T: TFn(T).conv_transpose1d(
        T.ones(1, 2, 5), T.ones(2, 3, 3), output_padding=-1)),
    ("no output channels", lambda T: TFn(T).conv2d(T.ones(1, 2, 5, 5), T.ones(0, 2, 3, 3))),
    ("convT no input channels", lambda T: TFn(T).conv_transpose1d(T.ones(1, 0, 5),
                                                                  T.ones(0, 2, 3))),
    ("float stride", lambda T: TFn(T).conv1d(T.ones(1, 2, 5), T.ones(3, 2, 3), stride=1.5)),
], ids=lambda v: v if isinstance(v, str) else "")
def test_conv_invalid_arguments_raise_like_torch(name, case):
    _raises_like(case, case)


def TFn(T):
    return T.nn.functional


@pytest.mark.parametrize("n", [1, 2])
def test_conv_transpose_casts_bias_like_torch(n):
    # torch's 1d/2d transposed kernels take a bias of another float dtype, keeping the input's
    x = rng.standard_normal((1, 2) + (4,) * n).astype(np.float32)
    w = rng.standard_normal((2, 3) + (3,) * n).astype(np.float32)
    b = rng.standard_normal(3)
    fn = f"conv_transpose{n}d"
    e = getattr(F, fn)(ember.tensor(x), ember.tensor(w), ember.tensor(b))
    t = getattr(TF, fn)(torch.tensor(x), torch.tensor(w), torch.tensor(b))
    assert str(e.dtype) == str(t.dtype)
    np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-5, atol=1e-5)


def test_conv_autocast_mixed_dtypes_still_allowed():
    with ember.autocast("cpu", dtype=ember.bfloat16):
        y = F.conv2d(ember.ones(1, 2, 5, 5, dtype=ember.bfloat16), ember.ones(3, 2, 3, 3))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        t = TF.conv2d(torch.ones(1, 2, 5, 5, dtype=torch.bfloat16), torch.ones(3, 2, 3, 3))
    assert str(y.dtype) == str(t.dtype)


@pytest.mark.parametrize("shape,sf", [((1, 2, 6, 3), (3.0, 2.3)), ((1, 2, 3, 3), (1.2, 2.3)),
                                      ((2, 1, 4, 5), (2.4, 1.1))])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_interpolate_nearest_2d_direct_size_mapping(shape, sf, dtype):
    # 2-d nearest maps out == in and out == 2 * in directly, ignoring the given scale
    x = rng.standard_normal(shape).astype(dtype)
    compare(lambda x: F.interpolate(x, scale_factor=sf, mode="nearest"),
            lambda x: TF.interpolate(x, scale_factor=sf, mode="nearest"), [x])


def test_grid_sample_reflection_on_one_pixel_keeps_grid_gradient():
    rng = np.random.default_rng(0)
    x, g = rng.standard_normal((2, 3, 1, 1)), rng.uniform(-1.5, 1.5, (2, 4, 5, 2))
    xe, ge = ember.tensor(x, requires_grad=True), ember.tensor(g, requires_grad=True)
    xt, gt = torch.tensor(x, requires_grad=True), torch.tensor(g, requires_grad=True)
    ye = ember.nn.functional.grid_sample(xe, ge, "bilinear", "reflection", align_corners=True)
    yt = torch.nn.functional.grid_sample(xt, gt, "bilinear", "reflection", align_corners=True)
    np.testing.assert_allclose(ye.detach().numpy(), yt.detach().numpy(), rtol=1e-12)
    ye.sum().backward()
    yt.sum().backward()
    assert ge.grad is not None
    np.testing.assert_allclose(ge.grad.numpy(), gt.grad.numpy(), atol=1e-12)
    np.testing.assert_allclose(xe.grad.numpy(), xt.grad.numpy(), rtol=1e-12)
