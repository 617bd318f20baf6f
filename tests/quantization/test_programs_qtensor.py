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


NAN, INF = float("nan"), float("inf")
EDGE_ROWS = [[1.0, NAN], [NAN, INF], [-INF, NAN], [5.0] * 9 + [NAN], [1e10, -1e10, 3e9]]


@pytest.mark.parametrize("qtype", QTYPES)
@pytest.mark.parametrize("row", EDGE_ROWS)
def test_quantize_nan_inf_and_saturation(qtype, row):
    """NaN: qmax in the 8-bit per-tensor kernel, int32's minimum (low bits kept) in the
    others; qint32 saturates at its bounds."""
    t = torch.quantize_per_tensor(torch.tensor(row), 0.1, 3, getattr(torch, qtype))
    e = ember.quantize_per_tensor(ember.tensor(row), 0.1, 3, getattr(ember, qtype))
    assert_same_q(e, t)
    args = ([0.1, 1.0], [0, 1])
    t = torch.quantize_per_channel(torch.tensor([row, row]), *map(torch.tensor, args), 0,
                                   getattr(torch, qtype))
    e = ember.quantize_per_channel(ember.tensor([row, row]), *map(ember.tensor, args), 0,
                                   getattr(ember, qtype))
    assert_same_q(e, t)


def test_dynamic_quantize_nan_refused():
    with pytest.raises(RuntimeError, match="min should be less than or equal to max"):
        torch.quantize_per_tensor_dynamic(torch.tensor([1.0, NAN]), torch.quint8, False)
    with pytest.raises(RuntimeError, match="min should be less than or equal to max"):
        ember.quantize_per_tensor_dynamic(ember.tensor([1.0, NAN]), ember.quint8, False)
