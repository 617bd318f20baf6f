"""Quantized ConvAdd2d / ConvAddReLU2d: ``conv(x1) + x2`` (then ReLU) on quantized
``(N, C, H, W)`` inputs, requantized to ``(scale, zero_point)`` in one fused kernel."""
from __future__ import annotations

from ember.ao.nn import quantized as nnq
from ember.ao.nn.intrinsic.modules import fused as nni
from ember.ops import quantized as Q

__all__ = ["ConvAdd2d", "ConvAddReLU2d"]


def _need_4d(x):
    if x.dim() != 4:
        raise ValueError("Input shape must be `(N, C, H, W)`!")


class ConvAdd2d(nnq.Conv2d):
    """``conv(input) + extra_input``; both ``(N, C, H, W)``."""
    _FLOAT_MODULE = nni.ConvAdd2d

    def forward(self, input, extra_input):
        _need_4d(input)
        packed, scale, zp = self._packed_params, self.scale, self.zero_point
        return Q.conv2d_add(input, extra_input, packed, scale, zp)

    def _get_name(self):
        return f"Quantized{type(self).__name__}"

    @classmethod
    def from_reference(cls, ref_qconv, output_scale, output_zero_point):
        """``ref_qconv`` is the fused pair; its first child is the reference conv."""
        conv = ref_qconv[0]
        return super().from_reference(conv, output_scale, output_zero_point)


class ConvAddReLU2d(ConvAdd2d):
    """``relu(conv(input) + extra_input)``."""
    _FLOAT_MODULE = nni.ConvAddReLU2d

    def forward(self, input, extra_input):
        _need_4d(input)
        packed, scale, zp = self._packed_params, self.scale, self.zero_point
        return Q.conv2d_add_relu(input, extra_input, packed, scale, zp)
