"""Quantized Dropout (torch.ao.nn.quantized.modules.dropout): the identity (quantized
models run in inference)."""
from __future__ import annotations

from ember import nn

__all__ = ["Dropout"]


class Dropout(nn.Dropout):
    """Returns its input unchanged."""

    def forward(self, input):
        return input

    def _get_name(self):
        return "QuantizedDropout"

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        return cls(mod.p, mod.inplace)

    @classmethod
    def from_reference(cls, mod, scale, zero_point):
        return cls(mod.p, mod.inplace)
