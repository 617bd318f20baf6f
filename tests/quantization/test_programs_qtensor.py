"""Quantized tensors as user programs handle them: 0-d and empty tensors, their printing."""
import pytest
import torch

import ember
from tests.quantization.conftest import assert_same_q

QTYPES = ["quint8", "qint8", "qint32"]


@pytest.mark.parametrize("qtype", QTYPES)
@pytest.mark.parametrize("value", [3.0, -3.0, 1000.0, 0.25])
def test_quantize_zero_dim(qtype, value):
    t = torch.quantize_per_tensor(torch.tensor(value), 0.5, 2, getattr(torch, qtype))
    e = ember.quantize_per_tensor(ember.tensor(value), 0.5, 2, getattr(ember, qtype))
    assert_same_q(e, t)
    assert repr(e) == repr(t)


@pytest.mark.parametrize("shape", [(0,), (0, 3), (2, 0, 1)])
def test_empty_quantized_repr(shape):
    t = torch.quantize_per_tensor(torch.zeros(shape), 1.0, 0, torch.quint8)
    e = ember.quantize_per_tensor(ember.zeros(shape), 1.0, 0, ember.quint8)
    assert repr(e) == repr(t)


def test_empty_per_channel_repr():
    args = ([0.1, 0.2], [0, 1])
    t = torch.quantize_per_channel(torch.zeros(2, 0), *map(torch.tensor, args), 0, torch.qint8)
    e = ember.quantize_per_channel(ember.zeros(2, 0), *map(ember.tensor, args), 0, ember.qint8)
    assert repr(e) == repr(t)


@pytest.mark.parametrize("path", ["ao.nn.quantized.reference", "ao.ns", "ao.nn.quantized.dynamic",
                                  "ao.nn.intrinsic.qat", "nn.quantized.dynamic"])
def test_subpackages_reached_as_attributes(path):
    """``torch.ao.nn.quantized.reference.Linear`` works without importing the package first."""
    obj = ember
    for part in path.split("."):
        obj = getattr(obj, part)
    assert obj.__name__.endswith(path.split(".")[-1])
