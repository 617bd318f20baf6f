"""Fused module sequences (torch.ao.nn.intrinsic): ``Sequential`` containers marking layers
that quantization treats as one (conv + bn + relu...). Forward runs them in order, so a
fused float model computes what the unfused one did."""
from __future__ import annotations

from ember import nn

__all__ = ["ConvReLU1d", "ConvReLU2d", "ConvReLU3d", "LinearReLU", "ConvBn1d", "ConvBn2d",
           "ConvBnReLU1d", "ConvBnReLU2d", "ConvBn3d", "ConvBnReLU3d", "BNReLU2d", "BNReLU3d",
           "LinearBn1d", "LinearLeakyReLU", "LinearTanh", "ConvAdd2d", "ConvAddReLU2d"]


class _FusedModule(nn.Sequential):
    """Base of the fused containers."""


def _fused(name, *types):
    """A fused container class whose constructor takes one module of each of ``types``."""
    def __init__(self, *mods):
        if len(mods) != len(types) or not all(type(m) is t for m, t in zip(mods, types)):
            found = " and ".join(type(m).__name__ for m in mods)
            raise AssertionError(f"Incorrect types for input modules: {found}")
        _FusedModule.__init__(self, *mods)
    doc = f"``{' -> '.join(t.__name__ for t in types)}`` fused into one module."
    return type(name, (_FusedModule,), {"__init__": __init__, "__doc__": doc,
                                       "__module__": __name__})


ConvReLU1d = _fused("ConvReLU1d", nn.Conv1d, nn.ReLU)
ConvReLU2d = _fused("ConvReLU2d", nn.Conv2d, nn.ReLU)
ConvReLU3d = _fused("ConvReLU3d", nn.Conv3d, nn.ReLU)
LinearReLU = _fused("LinearReLU", nn.Linear, nn.ReLU)
ConvBn1d = _fused("ConvBn1d", nn.Conv1d, nn.BatchNorm1d)
ConvBn2d = _fused("ConvBn2d", nn.Conv2d, nn.BatchNorm2d)
ConvBn3d = _fused("ConvBn3d", nn.Conv3d, nn.BatchNorm3d)
ConvBnReLU1d = _fused("ConvBnReLU1d", nn.Conv1d, nn.BatchNorm1d, nn.ReLU)
ConvBnReLU2d = _fused("ConvBnReLU2d", nn.Conv2d, nn.BatchNorm2d, nn.ReLU)
ConvBnReLU3d = _fused("ConvBnReLU3d", nn.Conv3d, nn.BatchNorm3d, nn.ReLU)
BNReLU2d = _fused("BNReLU2d", nn.BatchNorm2d, nn.ReLU)
BNReLU3d = _fused("BNReLU3d", nn.BatchNorm3d, nn.ReLU)
LinearBn1d = _fused("LinearBn1d", nn.Linear, nn.BatchNorm1d)
LinearLeakyReLU = _fused("LinearLeakyReLU", nn.Linear, nn.LeakyReLU)
LinearTanh = _fused("LinearTanh", nn.Linear, nn.Tanh)


class ConvAdd2d(_FusedModule):
    """Conv2d whose output is added to a second input (``add(conv(x1), x2)``)."""

    def __init__(self, conv, add):
        super().__init__(conv)
        self.add = add

    def forward(self, x1, x2):
        return self.add(self[0](x1), x2)


class ConvAddReLU2d(_FusedModule):
    """``relu(add(conv(x1), x2))``."""

    def __init__(self, conv, add, relu):
        super().__init__(conv)
        self.add = add
        self.relu = relu

    def forward(self, x1, x2):
        return self.relu(self.add(self[0](x1), x2))
