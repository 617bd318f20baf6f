"""Reference quantized Linear: a float linear on the quantized-then-dequantized weight."""
from __future__ import annotations

import ember.nn as nn
import ember.nn.functional as F
from ember.ao.nn.quantized.reference.modules.utils import ReferenceQuantizedModule

__all__ = ["Linear"]


class Linear(nn.Linear, ReferenceQuantizedModule):
    _IS_REFERENCE = True

    def __init__(self, in_features, out_features, bias_=True, device=None, dtype=None,
                 weight_qparams=None):
        super().__init__(in_features, out_features, bias_, device=device, dtype=dtype)
        self._init_weight_qparams(weight_qparams, device)

    def _get_name(self):
        return "QuantizedLinear(Reference)"

    def forward(self, x):
        return F.linear(x, self.get_weight(), self.bias)

    @classmethod
    def from_float(cls, float_linear, weight_qparams):
        ref = cls(float_linear.in_features, float_linear.out_features,
                  float_linear.bias is not None, weight_qparams=weight_qparams)
        ref.weight = nn.Parameter(float_linear.weight.detach())
        if float_linear.bias is not None:
            ref.bias = nn.Parameter(float_linear.bias.detach())
        return ref
