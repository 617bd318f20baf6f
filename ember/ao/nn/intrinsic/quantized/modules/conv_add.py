"""Quantized ConvAdd2d / ConvAddReLU2d (torch.ao.nn.intrinsic.quantized):
``conv(x1) + x2`` (then relu) requantized (``quantized::conv2d_add(_relu)``)."""
from __future__ import annotations

from ember.ao.nn import quantized as nnq
from ember.ao.nn.intrinsic.modules import fused as nni
from ember.ops import quantized as Q

__all__ = ["ConvAdd2d", "ConvAddReLU2d"]


class ConvAdd2d(nnq.Conv2d):
    _FLOAT_MODULE = nni.ConvAdd2d

    def forward(self, input, extra_input):
        if input.dim() != 4:
            raise ValueError("Input shape must be `(N, C, H, W)`!")
        return Q.conv2d_add(input, extra_input, self._packed_params, self.scale,
                            self.zero_point)

    def _get_name(self):
        return "Quantized" + type(self).__name__

    @classmethod
    def from_reference(cls, ref_qconv, output_scale, output_zero_point):
        return super().from_reference(ref_qconv[0], output_scale, output_zero_point)


class ConvAddReLU2d(ConvAdd2d):
    _FLOAT_MODULE = nni.ConvAddReLU2d

    def forward(self, input, extra_input):
        if input.dim() != 4:
            raise ValueError("Input shape must be `(N, C, H, W)`!")
        return Q.conv2d_add_relu(input, extra_input, self._packed_params, self.scale,
                                 self.zero_point)
