"""Pooling, means and resampling of quantized tensors against torch's x86 engine."""
import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import ember
import ember.nn.functional as EF
from tests.quantization.conftest import assert_same_q
from tests.quantization.qops_util import random_q

QT = ["quint8", "qint8"]

MAX_POOL = [
    (2, dict(kernel_size=2)), (2, dict(kernel_size=3, stride=2, padding=1)),
    (2, dict(kernel_size=3, stride=2, ceil_mode=True)),
    (2, dict(kernel_size=(2, 3), stride=(1, 2), dilation=(2, 1))),
    (1, dict(kernel_size=3)), (1, dict(kernel_size=4, stride=3, padding=2, ceil_mode=True)),
    (3, dict(kernel_size=2)), (3, dict(kernel_size=3, stride=2, padding=1)),
]


@pytest.mark.parametrize("qtype", QT)
@pytest.mark.parametrize("n,kw", MAX_POOL)
def test_max_pool(n, kw, qtype):
    rng = np.random.default_rng(n)
    t, e = random_q(rng, (2, 3) + (9,) * n, qtype)
    f = f"max_pool{n}d"
    assert_same_q(getattr(EF, f)(e, **kw), getattr(TF, f)(t, **kw))


AVG_POOL = [
    (2, dict(kernel_size=2)), (2, dict(kernel_size=3, stride=2, padding=1)),
    (2, dict(kernel_size=3, stride=2, padding=1, count_include_pad=False)),
    (2, dict(kernel_size=3, stride=2, ceil_mode=True)),
    (2, dict(kernel_size=3, divisor_override=4)),
    (1, dict(kernel_size=3)), (1, dict(kernel_size=3, stride=2, padding=1)),
    (3, dict(kernel_size=2)), (3, dict(kernel_size=3, stride=2, padding=1)),
]


@pytest.mark.parametrize("qtype", QT)
@pytest.mark.parametrize("n,kw", AVG_POOL)
def test_avg_pool(n, kw, qtype):
    rng = np.random.default_rng(10 + n)
    for channels in (3, 67):
        t, e = random_q(rng, (2, channels) + (9,) * n, qtype)
        f = f"avg_pool{n}d"
        assert_same_q(getattr(EF, f)(e, **kw), getattr(TF, f)(t, **kw))


@pytest.mark.parametrize("qtype", QT)
@pytest.mark.parametrize("n,size", [(1, 5), (2, 3), (2, (4, 7)), (2, 1), (3, (2, 3, 4))])
def test_adaptive_avg_pool(n, size, qtype):
    rng = np.random.default_rng(20 + n)
    for channels in (5, 67):
        t, e = random_q(rng, (2, channels) + (9, 8, 7)[:n], qtype)
        f = f"adaptive_avg_pool{n}d"
        assert_same_q(getattr(EF, f)(e, size), getattr(TF, f)(t, size))


@pytest.mark.parametrize("qtype", QT)
@pytest.mark.parametrize("shape,kw", [
    ((2, 3, 5, 7), dict(scale_factor=2)), ((2, 3, 5, 7), dict(size=(9, 4))),
    ((2, 3, 5, 7), dict(scale_factor=1.7)),
    ((2, 3, 5, 7), dict(size=(11, 13), mode="nearest-exact")),
    ((1, 2, 3, 4, 5), dict(scale_factor=2)), ((1, 2, 3, 4, 5), dict(size=(5, 3, 7))),
    ((2, 3, 5, 7), dict(size=(2, 3), mode="area")),
])
def test_interpolate_gathers(shape, kw, qtype):
    rng = np.random.default_rng(30)
    t, e = random_q(rng, shape, qtype)
    assert_same_q(EF.interpolate(e, **kw), TF.interpolate(t, **kw))


@pytest.mark.parametrize("qtype", QT)
@pytest.mark.parametrize("align_corners", [False, True])
def test_interpolate_bilinear(qtype, align_corners):
    rng = np.random.default_rng(31)
    for size in ((5, 11), (16, 16), (3, 2), (1, 7), (6, 8)):
        t, e = random_q(rng, (2, 3, 6, 8), qtype)
        assert_same_q(EF.interpolate(e, size=size, mode="bilinear", align_corners=align_corners),
                      TF.interpolate(t, size=size, mode="bilinear", align_corners=align_corners))
    t, e = random_q(rng, (1, 2, 5, 5), qtype)
    assert_same_q(EF.interpolate(e, scale_factor=1.7, mode="bilinear"),
                  TF.interpolate(t, scale_factor=1.7, mode="bilinear"))


@pytest.mark.parametrize("qtype", QT)
def test_interpolate_bilinear_channels_last_within_one(qtype):
    """torch's channels-last bilinear kernel rounds its near-half sums by a rule not found:
    ember (the contiguous kernel's rule) is off by one there, on under 2% of the elements."""
    rng = np.random.default_rng(32)
    total = differ = 0
    for size in ((5, 11), (16, 16), (3, 2)):
        t, e = random_q(rng, (2, 3, 6, 8), qtype)
        t = t.contiguous(memory_format=torch.channels_last)
        e = e.contiguous(memory_format=ember.channels_last)
        r = EF.interpolate(e, size=size, mode="bilinear")
        w = TF.interpolate(t, size=size, mode="bilinear")
        diff = np.abs(r.int_repr().numpy().astype(int) - w.int_repr().numpy().astype(int))
        assert diff.max() <= 1 and r.q_scale() == w.q_scale()
        total, differ = total + diff.size, differ + int((diff > 0).sum())
    assert differ / total < 0.02


@pytest.mark.parametrize("mode,name", [("linear", "upsample_linear1d.out"),
                                       ("bicubic", "upsample_bicubic2d.out")])
def test_interpolate_refusals(mode, name):
    rng = np.random.default_rng(32)
    shape = (1, 2, 5) if mode == "linear" else (1, 2, 5, 5)
    t, e = random_q(rng, shape)
    for F, x in ((TF, t), (EF, e)):
        with pytest.raises(NotImplementedError, match=f"'aten::{name}'"):
            F.interpolate(x, scale_factor=2, mode=mode)


def test_pool_refusals():
    rng = np.random.default_rng(33)
    t, e = random_q(rng, (1, 2, 6, 6))
    for F, x in ((TF, t), (EF, e)):
        with pytest.raises(NotImplementedError, match="'aten::max_pool2d_with_indices.out'"):
            F.max_pool2d(x, 2, return_indices=True)


def _channels_last(rng, shape, qtype, **kw):
    t, e = random_q(rng, shape, qtype, **kw)
    return t.contiguous(memory_format=torch.channels_last), \
        e.contiguous(memory_format=ember.channels_last)


@pytest.mark.parametrize("qtype", QT)
@pytest.mark.parametrize("channels", [3, 16, 67])
def test_channels_last_pooling(qtype, channels):
    """Channels-last tensors (what torch's quantized conv returns) pool over channel vectors:
    whole vectors average q - zp, the remaining channels q; the layout is kept."""
    rng = np.random.default_rng(40 + channels)
    t, e = _channels_last(rng, (2, channels, 6, 6), qtype)
    for f, args in (("avg_pool2d", (2,)), ("avg_pool2d", (3, 2, 1)), ("max_pool2d", (2,)),
                    ("adaptive_avg_pool2d", (3,)), ("adaptive_avg_pool2d", (1,))):
        r, w = getattr(EF, f)(e, *args), getattr(TF, f)(t, *args)
        assert_same_q(r, w)
        assert r.is_contiguous(memory_format=ember.channels_last) == \
            w.is_contiguous(memory_format=torch.channels_last)
