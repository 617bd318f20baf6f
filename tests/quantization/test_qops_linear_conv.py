"""quantized::linear* and quantized::conv* against torch's x86 engine, integer for integer."""
import numpy as np
import pytest

from tests.quantization.conftest import to_ember, assert_same_q

torch = pytest.importorskip("torch")
import ember  # noqa: E402

Q = ember.ops.quantized
TQ = torch.ops.quantized


def _rand(rng, *shape, scale=1.0):
    return torch.from_numpy((rng.normal(size=shape) * scale).astype(np.float32))


def _weight(rng, shape, per_channel, axis=0, zero_points=False):
    w = _rand(rng, *shape)
    n = shape[axis]
    if per_channel:
        scales = torch.from_numpy(rng.uniform(0.005, 0.03, n))
        zps = torch.from_numpy(rng.integers(-3, 4, n) if zero_points else np.zeros(n, np.int64))
        return torch.quantize_per_channel(w, scales, zps, axis, torch.qint8)
    return torch.quantize_per_tensor(w, 0.02, 2 if zero_points else 0, torch.qint8)


def _opt(t):
    return None if t is None else to_ember(t)


@pytest.mark.parametrize("per_channel", [False, True])
@pytest.mark.parametrize("relu", [False, True])
@pytest.mark.parametrize("with_bias", [False, True])
def test_linear_static(per_channel, relu, with_bias):
    rng = np.random.default_rng(int(per_channel) * 4 + int(relu) * 2 + int(with_bias))
    for n, k, m in ((3, 7, 5), (64, 130, 33), (2, 5, 4099 // 64)):
        qx = torch.quantize_per_tensor(_rand(rng, 2, n, k), 0.03, int(rng.integers(0, 256)),
                                       torch.quint8)
        qw = _weight(rng, (m, k), per_channel, zero_points=n == 3)
        b = _rand(rng, m) if with_bias else None
        ys = float(0.02 * np.sqrt(k)) * 0.3
        name = "linear_relu" if relu else "linear"
        pt = TQ.linear_prepack(qw, b)
        pe = Q.linear_prepack(to_ember(qw), _opt(b))
        assert_same_q(getattr(Q, name)(to_ember(qx), pe, ys, 120),
                      getattr(TQ, name)(qx, pt, ys, 120))
        assert_same_q(pe.unpack()[0], pt.unpack()[0])


@pytest.mark.parametrize("reduce_range", [False, True])
@pytest.mark.parametrize("per_channel", [False, True])
def test_linear_dynamic(reduce_range, per_channel):
    rng = np.random.default_rng(10 + int(reduce_range) * 2 + int(per_channel))
    for n, k, m in ((3, 7, 5), (40, 99, 17)):
        x = _rand(rng, n, k, scale=2.0) + 0.3
        qw = _weight(rng, (m, k), per_channel)
        b = _rand(rng, m)
        pt = TQ.linear_prepack(qw, b)
        pe = Q.linear_prepack(to_ember(qw), to_ember(b))
        for name in ("linear_dynamic", "linear_relu_dynamic"):
            np.testing.assert_array_equal(
                getattr(Q, name)(to_ember(x), pe, reduce_range).numpy(),
                getattr(TQ, name)(x, pt, reduce_range).numpy())


def test_linear_dynamic_fp16():
    rng = np.random.default_rng(20)
    for n, k, m, bias in ((3, 7, 5, False), (33, 70, 9, True), (5, 300, 1, True)):
        x, w = _rand(rng, n, k), _rand(rng, m, k)
        b = _rand(rng, m) if bias else None
        pt = TQ.linear_prepack_fp16(w, b)
        pe = Q.linear_prepack_fp16(to_ember(w), _opt(b))
        for name in ("linear_dynamic_fp16", "linear_relu_dynamic_fp16"):
            np.testing.assert_array_equal(getattr(Q, name)(to_ember(x), pe).numpy(),
                                          getattr(TQ, name)(x, pt).numpy())
        np.testing.assert_array_equal(Q.linear_unpack_fp16(pe)[0].numpy(),
                                      TQ.linear_unpack_fp16(pt)[0].numpy())


def test_linear_errors():
    qw = torch.quantize_per_tensor(torch.randn(4, 3), 0.1, 0, torch.qint8)
    pe = Q.linear_prepack(to_ember(qw))
    qx8 = ember.quantize_per_tensor(ember.randn(2, 3), 0.1, 0, ember.qint8)
    with pytest.raises(RuntimeError, match="Expected input data type QUInt8 but got QInt8"):
        Q.linear(qx8, pe, 0.1, 0)
    qx = ember.quantize_per_tensor(ember.randn(2, 5), 0.1, 0, ember.quint8)
    with pytest.raises(RuntimeError, match="should be equal to K: 5"):
        Q.linear(qx, pe, 0.1, 0)
    with pytest.raises(RuntimeError, match="expected scalar type QInt8 but found QUInt8"):
        Q.linear_prepack(ember.quantize_per_tensor(ember.randn(4, 3), 0.1, 0, ember.quint8))
    with pytest.raises(NotImplementedError, match="'quantized::linear' .* 'CPU' backend"):
        Q.linear(ember.randn(2, 3), pe, 0.1, 0)


# (dims, groups, per_channel, relu, bias): dense, grouped and depthwise, 1-d to 3-d
CONV_CASES = [(1, 1, False, False, True), (1, 2, True, True, False), (2, 1, False, True, True),
              (2, 1, True, False, True), (2, 2, True, False, True), (2, "dw", False, False,
                                                                      True),
              (3, 1, True, True, True), (3, "dw", True, False, False)]


@pytest.mark.parametrize("case", CONV_CASES)
def test_conv(case):
    d, groups, per_channel, relu, with_bias = case
    rng = np.random.default_rng(CONV_CASES.index(case))
    if groups == "dw":
        cin = groups = 4
        cout = 8
    else:
        cin, cout = 3 * groups, 4 * groups
    ks = [3, 2, 3][:d]
    stride, padding, dilation = [1, 2, 1][:d], [1, 0, 1][:d], [1, 1, 2][:d]
    qx = torch.quantize_per_tensor(_rand(rng, 2, cin, *([9] * d)), 0.03,
                                   int(rng.integers(0, 256)), torch.quint8)
    qw = _weight(rng, (cout, cin // groups, *ks), per_channel, zero_points=d == 1)
    b = _rand(rng, cout) if with_bias else None
    name = f"conv{d}d" + ("_relu" if relu else "")
    pt = getattr(TQ, f"conv{d}d_prepack")(qw, b, stride, padding, dilation, groups)
    pe = getattr(Q, f"conv{d}d_prepack")(to_ember(qw), _opt(b), stride, padding, dilation,
                                           groups)
    assert_same_q(getattr(Q, name)(to_ember(qx), pe, 0.15, 110),
                  getattr(TQ, name)(qx, pt, 0.15, 110))
    assert_same_q(pe.unpack()[0], pt.unpack()[0])
    assert (pe.stride(), pe.padding(), pe.dilation(), pe.groups(), pe.transpose()) == \
        (pt.stride(), pt.padding(), pt.dilation(), pt.groups(), pt.transpose())


@pytest.mark.parametrize("engine", ["x86", "fbgemm"])
@pytest.mark.parametrize("d", [1, 2, 3])
def test_conv_transpose(d, engine):
    """Both engines' routes: under x86 (oneDNN, output padding 0) torch mixes the channels
    of a weight whose input and output channel counts differ, and ember does the same;
    fbgemm computes the transposed convolution itself."""
    torch.backends.quantized.engine = ember.backends.quantized.engine = engine
    rng = np.random.default_rng(30 + d + len(engine))
    for cin, cout, groups in ((3, 4, 1), (4, 4, 2)):
        qx = torch.quantize_per_tensor(_rand(rng, 2, cin, *([6] * d)), 0.03, 40, torch.quint8)
        qw = _weight(rng, (cin, cout // groups, *([3] * d)), False)
        b = _rand(rng, cout)
        args = ([2] * d, [1] * d, [0 if engine == "x86" else 1] * d, [1] * d, groups)
        pt = getattr(TQ, f"conv_transpose{d}d_prepack")(qw, b, *args)
        pe = getattr(Q, f"conv_transpose{d}d_prepack")(to_ember(qw), to_ember(b), *args)
        assert_same_q(getattr(Q, f"conv_transpose{d}d")(to_ember(qx), pe, 0.2, 100),
                      getattr(TQ, f"conv_transpose{d}d")(qx, pt, 0.2, 100))
        assert pe.output_padding() == pt.output_padding() and pe.transpose() == 1
        assert_same_q(pe.unpack()[0], pt.unpack()[0])


def test_conv_errors():
    qw = ember.quantize_per_tensor(ember.randn(4, 3, 2, 2), 0.1, 0, ember.qint8)
    with pytest.raises(RuntimeError, match="stride should contain 2 elements"):
        Q.conv2d_prepack(qw, None, [1], [0], [1], 1)
    pe = Q.conv2d_prepack(qw, None, [1, 1], [0, 0], [1, 1], 1)
    qx = ember.quantize_per_tensor(ember.randn(3, 6, 6), 0.1, 0, ember.quint8)
    with pytest.raises(RuntimeError, match="Expected activation tensor to have 4 dimensions"):
        Q.conv2d(qx, pe, 0.1, 0)
    qwc = ember.quantize_per_channel(ember.randn(3, 4, 2, 2), ember.full((3,), 0.1),
                                     ember.zeros(3, dtype=ember.long), 0, ember.qint8)
    with pytest.raises(RuntimeError, match="Per Channel Quantization is currently disabled"):
        Q.conv_transpose2d_prepack(qwc, None, [1, 1], [0, 0], [0, 0], [1, 1], 1)


@pytest.mark.parametrize("route", ["onednn", "fbgemm_asymmetric", "fbgemm_groups"])
def test_conv_ties_follow_the_engines_route(route):
    """Power-of-two scales make half-way values exact: torch's x86 engine sends symmetric
    weights (<= 100 groups) to oneDNN, which adds the output zero point before rounding, and
    the others to fbgemm, which adds it after; an odd zero point tells the two apart.
    Inputs span 0..255: fbgemm's depthwise kernel (128 groups here) adds pairs of products
    in saturating int16, which shows."""
    rng = np.random.default_rng(40)
    groups, cin, cout = (128, 128, 128) if route == "fbgemm_groups" else (1, 5, 6)
    qx = torch.quantize_per_tensor(_rand(rng, 1, cin, 6, 6) * 2, 1 / 32, 100, torch.quint8)
    zp = 1 if route == "fbgemm_asymmetric" else 0
    qw = torch.quantize_per_tensor(_rand(rng, cout, cin // groups, 3, 3), 1 / 64, zp,
                                   torch.qint8)
    b = torch.from_numpy((rng.integers(-50, 50, cout) / 2048).astype(np.float32))
    pt = TQ.conv2d_prepack(qw, b, [1, 1], [1, 1], [1, 1], groups)
    pe = Q.conv2d_prepack(to_ember(qw), to_ember(b), [1, 1], [1, 1], [1, 1], groups)
    yt = TQ.conv2d(qx, pt, 1 / 16, 101)
    assert_same_q(Q.conv2d(to_ember(qx), pe, 1 / 16, 101), yt)
    assert np.isin(yt.int_repr().numpy(), [0, 255], invert=True).mean() > 0.5   # few clamped


@pytest.mark.parametrize("output_padding", [0, 1])
def test_conv_transpose_x86_equal_channels(output_padding):
    """Under x86 with as many input as output channels: output padding 0 runs oneDNN's
    rounding, 1 fbgemm's."""
    rng = np.random.default_rng(50 + output_padding)
    qx = torch.quantize_per_tensor(_rand(rng, 2, 4, 7, 7), 0.03, 77, torch.quint8)
    qw = _weight(rng, (4, 4, 3, 3), False)
    b = _rand(rng, 4)
    args = ([2, 2], [1, 1], [output_padding] * 2, [1, 1], 1)
    pt = TQ.conv_transpose2d_prepack(qw, b, *args)
    pe = Q.conv_transpose2d_prepack(to_ember(qw), to_ember(b), *args)
    assert_same_q(Q.conv_transpose2d(to_ember(qx), pe, 0.11, 101),
                  TQ.conv_transpose2d(qx, pt, 0.11, 101))
    assert_same_q(pe.unpack()[0], pt.unpack()[0])


# two outputs at a hair from a tie (found among random convolutions): oneDNN's rounding
# takes x_scale * w_scale and 1 / out_scale in double before float32
ONEDNN_NEAR_TIES = [  # (a1, a2, x_scale, w_scale, bias, out_scale, out_zero_point, per_channel)
    (-17, -81, 0.038861797490292324, 0.021201448728416204, -0.7842278, 0.1047274964318074,
     120, False),
    (-63, -9, 0.03823482790483438, 0.029794760726746118, -0.21162607, 0.07998727612528479,
     158, True)]


@pytest.mark.parametrize("case", ONEDNN_NEAR_TIES)
def test_conv_onednn_near_ties(case):
    a1, a2, xs, ws, bias, ys, yz, per_channel = case
    ints = torch.tensor([128 + a1, 128 + a2], dtype=torch.uint8).reshape(1, 2, 1, 1)
    qx = torch._make_per_tensor_quantized_tensor(ints, xs, 128)
    w = torch.tensor([100, 1], dtype=torch.int8).reshape(1, 2, 1, 1)
    qw = torch._make_per_channel_quantized_tensor(
        w, torch.tensor([ws], dtype=torch.double), torch.zeros(1, dtype=torch.long), 0) \
        if per_channel else torch._make_per_tensor_quantized_tensor(w, ws, 0)
    b = torch.tensor([bias], dtype=torch.float32)
    pt = TQ.conv2d_prepack(qw, b, [1, 1], [0, 0], [1, 1], 1)
    pe = Q.conv2d_prepack(to_ember(qw), to_ember(b), [1, 1], [0, 0], [1, 1], 1)
    assert_same_q(Q.conv2d(to_ember(qx), pe, ys, yz), TQ.conv2d(qx, pt, ys, yz))


def test_onednn_fused_ops():
    """linear_leaky_relu, linear_tanh, conv2d_add(_relu): torch has them in its 'onednn'
    engine only. Each torch call gets a freshly packed weight: torch caches oneDNN's fused
    primitive per packed weight, so a weight used by one fused op keeps its activation."""
    torch.backends.quantized.engine = ember.backends.quantized.engine = "onednn"
    rng = np.random.default_rng(60)
    qx = torch.quantize_per_tensor(_rand(rng, 40, 12), 0.03, 100, torch.quint8)
    qw, b = _weight(rng, (6, 12), True), _rand(rng, 6)
    for name, extra in (("linear_leaky_relu", (0.2,)), ("linear_tanh", ())):
        got = getattr(Q, name)(to_ember(qx), Q.linear_prepack(to_ember(qw), to_ember(b)),
                               0.02, 90, *extra)
        assert_same_q(got, getattr(TQ, name)(qx, TQ.linear_prepack(qw, b), 0.02, 90, *extra))
    qx = torch.quantize_per_tensor(_rand(rng, 2, 3, 7, 7), 0.03, 100, torch.quint8)
    qw, b = _weight(rng, (5, 3, 3, 3), False), _rand(rng, 5)
    qa = torch.quantize_per_tensor(_rand(rng, 2, 5, 7, 7, scale=2.0), 0.05, 90, torch.quint8)
    args = ([1, 1], [1, 1], [1, 1], 1)
    for name in ("conv2d_add", "conv2d_add_relu"):
        got = getattr(Q, name)(to_ember(qx), to_ember(qa),
                               Q.conv2d_prepack(to_ember(qw), to_ember(b), *args), 0.1, 60)
        assert_same_q(got, getattr(TQ, name)(qx, qa, TQ.conv2d_prepack(qw, b, *args), 0.1, 60))


def test_onednn_fused_ops_refused_elsewhere():
    qw = ember.quantize_per_tensor(ember.randn(4, 3), 0.1, 0, ember.qint8)
    qx = ember.quantize_per_tensor(ember.randn(2, 3), 0.1, 0, ember.quint8)
    with pytest.raises(RuntimeError, match="Didn't find engine for operation "
                                           "quantized::linear_tanh X86"):
        Q.linear_tanh(qx, Q.linear_prepack(qw), 0.1, 0)
    qwc = ember.quantize_per_tensor(ember.randn(4, 3, 1, 1), 0.1, 0, ember.qint8)
    qxc = ember.quantize_per_tensor(ember.randn(1, 3, 2, 2), 0.1, 0, ember.quint8)
    with pytest.raises(RuntimeError, match=r"quantized::conv2d_add\.X86"):
        Q.conv2d_add(qxc, qxc, Q.conv2d_prepack(qwc, None, [1, 1], [0, 0], [1, 1], 1), 0.1, 0)


@pytest.mark.parametrize("kind", ["conv", "conv_transpose"])
@pytest.mark.parametrize("reduce_range", [False, True])
def test_conv_dynamic(kind, reduce_range):
    rng = np.random.default_rng(70 + reduce_range)
    for d in (1, 2, 3):
        shape = (3, 4) if kind == "conv_transpose" else (4, 3)
        qw = _weight(rng, (*shape, *([3] * d)), kind == "conv")
        b = _rand(rng, 4)
        args = ([2] * d, [1] * d, [0] * d, [1] * d, 1) if kind == "conv_transpose" else \
            ([1] * d, [1] * d, [1] * d, 1)
        pt = getattr(TQ, f"{kind}{d}d_prepack")(qw, b, *args)
        pe = getattr(Q, f"{kind}{d}d_prepack")(to_ember(qw), to_ember(b), *args)
        x = _rand(rng, 2, 3, *([5] * d), scale=2.0) + 0.3
        np.testing.assert_array_equal(
            getattr(Q, f"{kind}{d}d_dynamic")(to_ember(x), pe, reduce_range).numpy(),
            getattr(TQ, f"{kind}{d}d_dynamic")(x, pt, reduce_range).numpy())
