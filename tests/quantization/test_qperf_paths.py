"""The fast paths of quantized conv/linear/max pooling stay exact (against torch's x86 and
fbgemm engines, and against exact int64 sums) and lay outputs out as torch does."""
import numpy as np
import pytest

from tests.quantization.conftest import to_ember, assert_same_q

torch = pytest.importorskip("torch")
import ember  # noqa: E402
from ember._kernels import quantized_gemm as G  # noqa: E402

Q = ember.ops.quantized
TQ = torch.ops.quantized


def _qx(rng, shape, zero_point, hi=256):
    ints = torch.from_numpy(rng.integers(0, hi, shape).astype(np.uint8))
    return torch._make_per_tensor_quantized_tensor(ints, 0.02, zero_point)


def _qw(rng, shape, zero_points=None, lo=-128, hi=128):
    ints = torch.from_numpy(rng.integers(lo, hi, shape).astype(np.int8))
    n = shape[0]
    zps = torch.zeros(n, dtype=torch.long) if zero_points is None else \
        torch.from_numpy(np.asarray(zero_points, np.int64))
    return torch._make_per_channel_quantized_tensor(
        ints, torch.from_numpy(rng.uniform(0.002, 0.01, n)), zps, 0)


def _both(qx, qw, bias, stride, padding, dilation, groups, out_scale, out_zp, relu=False):
    n = qw.dim() - 2
    name = f"conv{n}d{'_relu' if relu else ''}"
    args = (stride, padding, dilation, groups)
    pt = getattr(TQ, f"conv{n}d_prepack")(qw, bias, *args)
    pe = getattr(Q, f"conv{n}d_prepack")(to_ember(qw), None if bias is None else
                                         to_ember(bias), *args)
    yt = getattr(TQ, name)(qx, pt, out_scale, out_zp)
    ye = getattr(Q, name)(to_ember(qx), pe, out_scale, out_zp)
    return ye, yt, pe


def test_int_matmul_exact_past_float32_range():
    """Sums far beyond 2**24 (K chunked by the bound): equal to int64 sums."""
    rng = np.random.default_rng(0)
    x = rng.integers(-255, 256, (5, 3000))
    x[0] = 255
    w = rng.integers(-255, 256, (3000, 7))
    w[:, 0] = 255
    assert G.exact_chunk(255, 255) < 3000      # several chunks
    got = G.int_matmul(x.astype(np.float32), w.astype(np.float32), 255, 255)
    np.testing.assert_array_equal(got, x @ w)
    assert got[0, 0] == 3000 * 255 * 255 > 2 ** 24


@pytest.mark.parametrize("zero_point", [0, 128])
def test_linear_long_rows_full_range(zero_point):
    """K = 3001 with inputs and weights at their extremes: running sums pass 2**24 (odd
    values, so float32 would round them) and come back near 0, where one output integer is
    eight units of the accumulator."""
    rng = np.random.default_rng(1)
    K = 3001
    shifted = np.where(np.arange(K) < K // 2, 127, -127)[None, :] + \
        rng.integers(-1, 2, (6, K)) * (rng.random((6, K)) < 0.002)
    shifted = np.clip(shifted, -128, 127)
    shifted[:, -1] = 0
    qx = torch._make_per_tensor_quantized_tensor(
        torch.from_numpy((shifted + 128).astype(np.uint8)), 0.02, 128)
    if zero_point == 0:     # the same integers, but only the actual maxima bound them
        qx = _qx(rng, (6, K), 0)
    w = np.full((9, K), 127, np.int8)
    w[1:] = rng.integers(-128, 128, (8, K))
    qw = torch._make_per_tensor_quantized_tensor(torch.from_numpy(w), 0.001, 0)
    b = torch.from_numpy(rng.normal(size=9).astype(np.float32) * 1e-4)
    yt = TQ.linear(qx, TQ.linear_prepack(qw, b), 0.02 * 0.001 * 8, 128)
    pe = Q.linear_prepack(to_ember(qw), to_ember(b))
    assert_same_q(Q.linear(to_ember(qx), pe, 0.02 * 0.001 * 8, 128), yt)
    assert_same_q(Q.linear(to_ember(qx), pe, 0.02 * 0.001 * 8, 128), yt)   # cached weights
    if zero_point:
        assert np.isin(yt.int_repr().numpy()[:, 0], [0, 255], invert=True).all()


@pytest.mark.parametrize("d", [1, 2, 3])
def test_conv_outputs_are_channels_last_like_torch(d):
    rng = np.random.default_rng(2 + d)
    qx = _qx(rng, (2, 4) + (6,) * d, 3)
    qw = _qw(rng, (6, 4) + (3,) * d, lo=-20, hi=20)
    ye, yt, _ = _both(qx, qw, None, [1] * d, [1] * d, [1] * d, 1, 0.1, 2)
    assert_same_q(ye, yt)
    assert ye.stride() == yt.stride()
    qwt = torch.quantize_per_tensor(torch.randn(4, 6, *([3] * d)) * 0.05, 0.01, 0,
                                    torch.qint8)
    args = ([2] * d, [1] * d, [0] * d, [1] * d, 1)
    pt = getattr(TQ, f"conv_transpose{d}d_prepack")(qwt, None, *args)
    pe = getattr(Q, f"conv_transpose{d}d_prepack")(to_ember(qwt), None, *args)
    yt = getattr(TQ, f"conv_transpose{d}d")(qx, pt, 0.1, 2)
    ye = getattr(Q, f"conv_transpose{d}d")(to_ember(qx), pe, 0.1, 2)
    assert_same_q(ye, yt)
    assert ye.stride() == yt.stride()


def test_conv_wide_input_chunked():
    """A 1x1 conv over 1100 channels at the extremes (past one exact float32 chunk), and a
    grouped 3x3 one, channels-last input."""
    rng = np.random.default_rng(5)
    qx = _qx(rng, (1, 1100, 5, 5), 0)
    qw = _qw(rng, (8, 1100, 1, 1))
    ye, yt, _ = _both(qx, qw, None, [1, 1], [0, 0], [1, 1], 1, 40.0, 100)
    assert_same_q(ye, yt)
    qx = _qx(rng, (2, 12, 7, 7), 77).contiguous(memory_format=torch.channels_last)
    qw = _qw(rng, (8, 3, 3, 3), zero_points=rng.integers(-3, 4, 8))
    ye, yt, _ = _both(qx, qw, None, [2, 1], [1, 2], [1, 2], 4, 0.5, 60, relu=True)
    assert_same_q(ye, yt)


@pytest.mark.parametrize("mult", [1, 2])
@pytest.mark.parametrize("stride", [1, 2])
def test_depthwise_fbgemm_saturates_pairs(mult, stride):
    """fbgemm's depthwise kernel (asymmetric weights under x86, 16 groups): inputs up to 255
    and large weights make pairs of products leave int16, which torch saturates."""
    rng = np.random.default_rng(10 * mult + stride)
    qx = _qx(rng, (2, 16, 9, 9), 5)
    qw = _qw(rng, (16 * mult, 1, 3, 3), zero_points=rng.integers(-2, 3, 16 * mult), lo=90)
    b = torch.from_numpy(rng.normal(size=16 * mult).astype(np.float32))
    ye, yt, pe = _both(qx, qw, b, [stride] * 2, [1, 1], [1, 1], 16, 2.0, 10)
    assert not pe._onednn
    assert_same_q(ye, yt)
    # the saturation mattered: the exact sums give other integers
    exact = G.requantize_acc(_exact_acc(qx, qw, stride, 1, 1, 16), 0.02,
                             qw.q_per_channel_scales().numpy(), b.numpy(), 2.0, 10, False)
    assert (exact != yt.int_repr().numpy()).any()


def _exact_acc(qx, qw, stride, padding, dilation, groups):
    x = qx.int_repr().double() - qx.q_zero_point()
    w = qw.int_repr().double() - qw.q_per_channel_zero_points().double().reshape(-1, 1, 1, 1)
    acc = torch.nn.functional.conv2d(x, w, None, stride, padding, dilation, groups)
    return np.rint(acc.numpy()).astype(np.int64)


def test_depthwise_onednn_route_exact():
    """Symmetric depthwise weights (<= 100 groups) go to oneDNN: exact sums, any geometry."""
    rng = np.random.default_rng(20)
    qx = _qx(rng, (1, 24, 11, 10), 30)
    qw = _qw(rng, (48, 1, 3, 2), lo=100)
    ye, yt, pe = _both(qx, qw, None, [2, 1], [2, 1], [2, 3], 24, 4.0, 7, relu=True)
    assert pe._onednn
    assert_same_q(ye, yt)


@pytest.mark.parametrize("padding,ceil_mode", [(0, False), (1, True)])
def test_max_pool_keeps_channels_last(padding, ceil_mode):
    rng = np.random.default_rng(30)
    qx = _qx(rng, (2, 5, 9, 9), 4).contiguous(memory_format=torch.channels_last)
    yt = torch.nn.functional.max_pool2d(qx, 3, 2, padding, ceil_mode=ceil_mode)
    ye = ember.nn.functional.max_pool2d(to_ember(qx).contiguous(
        memory_format=ember.channels_last), 3, 2, padding, ceil_mode=ceil_mode)
    assert_same_q(ye, yt)
    assert ye.stride() == yt.stride()
    qs = torch._make_per_tensor_quantized_tensor(
        torch.from_numpy(rng.integers(-128, 128, (3, 7, 7)).astype(np.int8)), 0.1, 0)
    assert_same_q(ember.nn.functional.max_pool2d(to_ember(qs), 2, 1, 1),
                  torch.nn.functional.max_pool2d(qs, 2, 1, 1))


@pytest.mark.parametrize("groups,wshape", [(1, (6, 4, 3, 3)), (4, (8, 1, 3, 3))])
def test_conv_empty_batch(groups, wshape):
    rng = np.random.default_rng(40)
    qw = _qw(rng, wshape, lo=-9, hi=9)
    ye, yt, _ = _both(_qx(rng, (0, 4, 6, 6), 3), qw, None, [1, 1], [1, 1], [1, 1], groups,
                      0.03, 4)
    assert_same_q(ye, yt)


@pytest.fixture(params=["onnxruntime", "numpy"])
def integer_gemm_engine(request, monkeypatch):
    """Run with onnxruntime's integer GEMM (when installed) and with the float32 path."""
    from ember._kernels import integer_gemm
    if request.param == "numpy":
        monkeypatch.setattr(integer_gemm, "available", lambda K: False)
    elif not integer_gemm.available(1):
        pytest.skip("the onnx extra (onnxruntime) is not installed")
    return request.param


@pytest.mark.parametrize("groups,zps", [(1, None), (2, None), (1, [3, -2, 0, 1, 5, -7])])
def test_integer_gemm_engines_give_torchs_integers(integer_gemm_engine, groups, zps):
    rng = np.random.default_rng(groups)
    qx = _qx(rng, (2, 4, 9, 9), 37)
    qw = _qw(rng, (6, 4 // groups, 3, 3), zps)
    bias = torch.from_numpy(rng.standard_normal(6).astype(np.float32))
    ye, yt, _ = _both(qx, qw, bias, [1, 1], [1, 1], [1, 1], groups, 0.05, 20)
    assert_same_q(ye, yt)
    x = torch._make_per_tensor_quantized_tensor(
        torch.from_numpy(rng.integers(0, 256, (5, 70)).astype(np.uint8)), 0.02, 120)
    w = torch.quantize_per_tensor(torch.randn(9, 70) * 0.1, 0.003, 0, torch.qint8)
    pt = TQ.linear_prepack(w, bias[:1].repeat(9))
    pe = Q.linear_prepack(to_ember(w), to_ember(bias[:1].repeat(9)))
    assert_same_q(Q.linear(to_ember(x), pe, 0.04, 60), TQ.linear(x, pt, 0.04, 60))
    xf = torch.randn(5, 70)
    np.testing.assert_array_equal(Q.linear_dynamic(to_ember(xf), pe, True).numpy(),
                                  TQ.linear_dynamic(xf, pt, True).numpy())
    # large enough for onnxruntime's GEMM (small ones take the float32 path: both checked)
    from ember._ops.quantized_linear import INT_GEMM_MIN_WORK
    x = torch._make_per_tensor_quantized_tensor(
        torch.from_numpy(rng.integers(0, 256, (64, 300)).astype(np.uint8)), 0.02, 7)
    w = _qw(rng, (40, 300), None if zps is None else rng.integers(-7, 8, 40))
    assert 64 * 300 * 40 >= INT_GEMM_MIN_WORK > 5 * 70 * 9
    b = torch.from_numpy(rng.standard_normal(40).astype(np.float32))
    pt, pe = TQ.linear_prepack(w, b), Q.linear_prepack(to_ember(w), to_ember(b))
    assert_same_q(Q.linear(to_ember(x), pe, 0.3, 100), TQ.linear(x, pt, 0.3, 100))


@pytest.mark.parametrize("d,k,stride,dilation", [(1, 3, 2, 1), (1, 17, 1, 1), (2, 3, 1, 1),
                                                  (2, 5, 2, 2), (3, 3, 1, 2)])
def test_one_channel_conv_columns(integer_gemm_engine, d, k, stride, dilation):
    """One input channel: im2col tap by tap for the integer GEMM (from 16 taps on:
    quantized_gemm._columns_one_channel), the window view for fewer; any stride and
    dilation, per-channel weights with a bias, 1 to 3 spatial dims."""
    rng = np.random.default_rng(50 + d + k)
    qx = _qx(rng, (3, 1) + (19 if d == 1 else 11,) * d, 11)
    qw = _qw(rng, (5, 1) + (k,) * d)
    bias = torch.from_numpy(rng.standard_normal(5).astype(np.float32))
    ye, yt, _ = _both(qx, qw, bias, [stride] * d, [1] * d, [dilation] * d, 1, 0.07, 9,
                      relu=d == 2)
    assert_same_q(ye, yt)


def test_clone_and_copying_reshape_keep_layout_and_params():
    """clone copies the plain integers (route's fast copy): strides of each memory format,
    per-channel parameters, and a reshape that must copy (flatten of channels-last)."""
    rng = np.random.default_rng(60)
    qt = _qx(rng, (2, 5, 3, 4), 9).contiguous(memory_format=torch.channels_last)
    qe = to_ember(qt).contiguous(memory_format=ember.channels_last)
    for fmt in (None, "preserve_format", "contiguous_format", "channels_last"):
        kw = {} if fmt is None else {"memory_format": getattr(torch, fmt)}
        ye = qe.clone(**({} if fmt is None else {"memory_format": getattr(ember, fmt)}))
        yt = qt.clone(**kw)
        assert_same_q(ye, yt)
        assert ye.stride() == yt.stride()
        assert ye.data_ptr() != qe.data_ptr()
    assert_same_q(qe.flatten(1), qt.flatten(1))
    assert_same_q(qe.reshape(2, -1), qt.reshape(2, -1))
    wt = _qw(rng, (4, 3, 2, 2), zero_points=[1, -2, 0, 3])
    assert_same_q(to_ember(wt).clone(), wt.clone())


def test_depthwise_fbgemm_saturates_padding_pairs():
    """fbgemm pads with the input's zero point: with small inputs (< 40) and zero point 250,
    only pairs of padding products leave int16 (2 * 250 * 120 > 32767 > 2 * 40 * 120)."""
    rng = np.random.default_rng(70)
    qx = _qx(rng, (1, 16, 6, 6), 250, hi=40)
    w = torch.from_numpy(np.full((16, 1, 3, 3), 120, np.int8))
    qw = torch._make_per_channel_quantized_tensor(
        w, torch.full((16,), 0.01, dtype=torch.float64), torch.ones(16, dtype=torch.long), 0)
    ye, yt, pe = _both(qx, qw, None, [1, 1], [1, 1], [1, 1], 16, 5.0, 100)
    assert not pe._onednn
    assert_same_q(ye, yt)
