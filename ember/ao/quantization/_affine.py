"""The affine-quantization description types of torch.ao.quantization.observer (used by
torchao-style observers): granularities, mapping types, zero-point domains, the block size
of a granularity, and the abstract ``AffineQuantizedObserverBase``."""
from __future__ import annotations

import enum
from abc import ABCMeta, abstractmethod
from dataclasses import dataclass

from ember import nn

__all__ = ["Granularity", "PerTensor", "PerAxis", "PerGroup", "PerRow", "PerToken", "PerBlock",
           "MappingType", "ZeroPointDomain", "TorchAODType", "get_block_size",
           "AffineQuantizedObserverBase"]


class MappingType(enum.Enum):
    """How the float range maps onto the integers."""
    SYMMETRIC = enum.auto()
    SYMMETRIC_NO_CLIPPING_ERR = enum.auto()
    ASYMMETRIC = enum.auto()


class ZeroPointDomain(enum.Enum):
    """Where the zero point lives: integer, float, or none."""
    INT = enum.auto()
    FLOAT = enum.auto()
    NONE = enum.auto()


class TorchAODType(enum.Enum):
    """Sub-byte integer types without a dtype of their own."""
    INT1 = enum.auto()
    INT2 = enum.auto()
    INT3 = enum.auto()
    INT4 = enum.auto()
    INT5 = enum.auto()
    INT6 = enum.auto()
    INT7 = enum.auto()


@dataclass(frozen=True)
class Granularity:
    """How many values share one set of quantization parameters."""


@dataclass(frozen=True)
class PerBlock(Granularity):
    block_size: tuple


@dataclass(frozen=True)
class PerTensor(Granularity):
    pass


@dataclass(frozen=True)
class PerAxis(Granularity):
    axis: int


@dataclass(frozen=True)
class PerGroup(Granularity):
    group_size: int


@dataclass(frozen=True)
class PerRow(Granularity):
    pass


@dataclass(frozen=True)
class PerToken(Granularity):
    pass


def get_block_size(input_shape, granularity):
    """The block of ``input_shape`` that one set of parameters covers."""
    shape = tuple(input_shape)
    if isinstance(granularity, PerTensor):
        return shape
    if isinstance(granularity, PerAxis):
        block = list(shape)
        block[granularity.axis] = 1
        return tuple(block)
    if isinstance(granularity, PerGroup):
        if len(shape) != 2:
            raise AssertionError(f"Expecting input shape dim to be 2 for per group "
                                 f"quantization, gotinput shape: {shape}")
        return (1, granularity.group_size)
    if isinstance(granularity, (PerRow, PerToken)):
        return (1,) * (len(shape) - 1) + shape[-1:]
    raise ValueError(f"Unsupported Granularity: {granularity}")


class AffineQuantizedObserverBase(nn.Module, metaclass=ABCMeta):
    """Base of observers described by a mapping type, target dtype and granularity;
    subclasses implement ``forward`` and ``calculate_qparams``."""

    def __init__(self, mapping_type, target_dtype, granularity, quant_min=None, quant_max=None,
                 eps=None, scale_dtype=None, zero_point_dtype=None, preserve_zero=True,
                 zero_point_domain=ZeroPointDomain.INT, **kwargs):
        super().__init__()
        if granularity is None:
            raise AssertionError("granularity is None")
        self.mapping_type = mapping_type
        self.target_dtype = target_dtype
        self.granularity = granularity
        self.quant_min, self.quant_max = quant_min, quant_max
        self.eps = eps
        self.scale_dtype, self.zero_point_dtype = scale_dtype, zero_point_dtype
        self.preserve_zero = preserve_zero
        self.zero_point_domain = zero_point_domain
        self.block_size = None          # set from the first input's shape
        self.original_dtype = None

    @abstractmethod
    def forward(self, input):
        ...

    @abstractmethod
    def calculate_qparams(self):
        ...

    @classmethod
    def with_args(cls, **kwargs):
        from ember.ao.quantization.observer import _with_args
        return _with_args(cls, **kwargs)
