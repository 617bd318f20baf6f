"""QAT LinearReLU (torch.ao.nn.intrinsic.qat.LinearReLU)."""
from __future__ import annotations

from ember import nn
from ember.nn import functional as F
from ember.ao.nn import qat as nnqat
from ember.ao.nn.intrinsic.modules.fused import _FusedModule, LinearReLU as _FloatLinearReLU

__all__ = ["LinearReLU"]


class LinearReLU(nnqat.Linear, _FusedModule):
    """``relu(linear(x, weight_fake_quant(weight), bias))``."""
    _FLOAT_MODULE = _FloatLinearReLU

    def __init__(self, in_features, out_features, bias=True, qconfig=None):
        super().__init__(in_features, out_features, bias, qconfig)

    def forward(self, input):
        return F.relu(F.linear(input, self.weight_fake_quant(self.weight), self.bias))

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        return super().from_float(mod, use_precomputed_fake_quant)

    def to_float(self):
        linear = nnqat.Linear.to_float(self)
        return _FloatLinearReLU(linear, nn.ReLU())
