"""torch.ao.nn.quantized.functional against torch: the same integers and parameters, the same
checks."""
import numpy as np
import pytest
import torch
import torch.ao.nn.quantized.functional as TQF

import ember
import ember.ao.nn.quantized.functional as EQF
from tests.quantization.conftest import assert_same_q, to_ember
from tests.quantization.qops_util import random_q

QT = ["quint8", "qint8"]

CALLS = {
    "avg_pool2d": lambda F, x: F.avg_pool2d(x, 3, 2, 1),
    "avg_pool3d": lambda F, x: F.avg_pool3d(x[:, :, None], (1, 2, 2)),
    "adaptive_avg_pool2d": lambda F, x: F.adaptive_avg_pool2d(x, (3, 2)),
    "adaptive_avg_pool3d": lambda F, x: F.adaptive_avg_pool3d(x[:, :, None], (1, 2, 3)),
    "max_pool1d": lambda F, x: F.max_pool1d(x.flatten(2), 3),
    "max_pool2d": lambda F, x: F.max_pool2d(x, 3, 2, 1),
    "interpolate": lambda F, x: F.interpolate(x, scale_factor=2),
    "interpolate_bilinear_ac": lambda F, x: F.interpolate(x, size=(7, 7), mode="bilinear",
                                                          align_corners=True),
    "celu": lambda F, x: F.celu(x, 0.05, 10, 1.5),
    "elu": lambda F, x: F.elu(x, 0.05, 10, 0.8),
    "hardswish": lambda F, x: F.hardswish(x, 0.07, 12),
    "leaky_relu": lambda F, x: F.leaky_relu(x, 0.2),
    "leaky_relu_rescaled": lambda F, x: F.leaky_relu(x, 0.2, scale=0.3, zero_point=5),
    "hardtanh": lambda F, x: F.hardtanh(x, -0.3, 0.4),
    "threshold": lambda F, x: F.threshold(x, 0.1, 0.35),
    "hardsigmoid": lambda F, x: F.hardsigmoid(x),
    "clamp": lambda F, x: F.clamp(x, -0.2, 0.6),
}


@pytest.mark.parametrize("qtype", QT)
@pytest.mark.parametrize("name", sorted(CALLS))
def test_functional(name, qtype):
    rng = np.random.default_rng(0)
    t, e = random_q(rng, (2, 3, 6, 7), qtype)
    assert_same_q(CALLS[name](EQF, e), CALLS[name](TQF, t))


@pytest.mark.parametrize("name", ["avg_pool2d", "adaptive_avg_pool2d", "hardtanh", "celu",
                                  "threshold", "hardsigmoid", "clamp", "interpolate"])
def test_float_input_refused(name):
    x = np.random.default_rng(1).standard_normal((1, 2, 6, 6)).astype(np.float32)
    with pytest.raises(ValueError, match="must be quantized!") as want:
        CALLS[name](TQF, torch.from_numpy(x))
    with pytest.raises(ValueError) as got:
        CALLS[name](EQF, ember.from_numpy(x))
    assert str(got.value) == str(want.value)


def test_argument_errors():
    rng = np.random.default_rng(2)
    t, e = random_q(rng, (1, 2, 6, 6))
    for F, x in ((TQF, t), (EQF, e)):
        with pytest.raises(NotImplementedError, match="return_indices is not yet implemented"):
            F.max_pool2d(x, 2, return_indices=True)
        with pytest.raises(ValueError, match="Input to 'threshold' must be specified!"):
            F.threshold(x, None, 0.2)
        with pytest.raises(AssertionError, match="Cannot rescale with `inplace`"):
            F.leaky_relu(x, 0.1, True, 0.2, 3)


def _weights(rng, shape):
    w = torch.quantize_per_tensor(torch.from_numpy(rng.standard_normal(shape).astype(np.float32)),
                                  0.02, 0, torch.qint8)
    b = torch.from_numpy(rng.standard_normal(shape[0]).astype(np.float32))
    return (w, b), (to_ember(w), to_ember(b))


def test_linear():
    rng = np.random.default_rng(3)
    t, e = random_q(rng, (4, 20))
    (w, b), (ew, eb) = _weights(rng, (6, 20))
    assert_same_q(EQF.linear(e, ew, eb, 0.3, 7), TQF.linear(t, w, b, 0.3, 7))
    assert_same_q(EQF.linear(e, ew, None), TQF.linear(t, w, None))


@pytest.mark.parametrize("n", [1, 2, 3])
def test_conv(n):
    rng = np.random.default_rng(4 + n)
    t, e = random_q(rng, (2, 4) + (6,) * n)
    (w, b), (ew, eb) = _weights(rng, (6, 2) + (3,) * n)
    f = f"conv{n}d"
    kw = dict(stride=1, padding=1, groups=2, scale=0.4, zero_point=3)
    assert_same_q(getattr(EQF, f)(e, ew, eb, **kw), getattr(TQF, f)(t, w, b, **kw))


def test_conv_checks():
    rng = np.random.default_rng(8)
    t, e = random_q(rng, (1, 2, 6, 6))
    (w, b), (ew, eb) = _weights(rng, (3, 2, 3, 3))
    ti, ei = random_q(rng, (1, 2, 6, 6), "qint8")
    for F, x, xi, wt, bt in ((TQF, t, ti, w, b), (EQF, e, ei, ew, eb)):
        with pytest.raises(NotImplementedError, match="Only zero-padding is supported!"):
            F.conv2d(x, wt, bt, padding_mode="reflect")
        with pytest.raises(NotImplementedError, match="Only torch.quint8 is supported"):
            F.conv2d(xi, wt, bt)
        with pytest.raises(ValueError, match=r"Input shape must be `\(N, C, H, W\)`!"):
            F.conv2d(x[0], wt, bt)
