"""Quantized ConvReLU1d/2d/3d (torch.ao.nn.intrinsic.quantized): ``quantized::convNd_relu``.
From a float ConvReLU, or a QAT ConvReLU/ConvBnReLU (batch norm folded in first)."""
from __future__ import annotations

from ember.ao.nn import quantized as nnq
from ember.ops import quantized as Q
from ember.ao.nn.intrinsic.modules import fused as nni
from ember.ao.nn.intrinsic.qat.modules.conv_fused import _fold_bn_once

__all__ = ["ConvReLU1d", "ConvReLU2d", "ConvReLU3d"]


class _ConvReLUMixin:
    def _get_name(self):
        return "Quantized" + type(self).__name__

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        return super().from_float(_fold_bn_once(mod), use_precomputed_fake_quant)

    @classmethod
    def from_reference(cls, ref_qconv, output_scale, output_zero_point):
        return super().from_reference(ref_qconv[0], output_scale, output_zero_point)


class ConvReLU1d(_ConvReLUMixin, nnq.Conv1d):
    _FLOAT_MODULE = nni.ConvReLU1d

    def forward(self, input):
        if input.dim() != 3:
            raise ValueError("Input shape must be `(N, C, L)`!")
        return Q.conv1d_relu(self._padded(input), self._packed_params, self.scale,
                             self.zero_point)


class ConvReLU2d(_ConvReLUMixin, nnq.Conv2d):
    _FLOAT_MODULE = nni.ConvReLU2d

    def forward(self, input):
        if input.dim() != 4:
            raise ValueError("Input shape must be `(N, C, H, W)`!")
        return Q.conv2d_relu(self._padded(input), self._packed_params, self.scale,
                             self.zero_point)


class ConvReLU3d(_ConvReLUMixin, nnq.Conv3d):
    _FLOAT_MODULE = nni.ConvReLU3d

    def forward(self, input):
        if input.dim() != 5:
            raise ValueError("Input shape must be `(N, C, D, H, W)`!")
        return Q.conv3d_relu(self._padded(input), self._packed_params, self.scale,
                             self.zero_point)
