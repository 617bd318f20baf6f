"""Dynamically quantized LinearReLU (torch.ao.nn.intrinsic.quantized.dynamic):
``quantized::linear_relu_dynamic``."""
from __future__ import annotations

import ember
from ember.ao.nn.quantized import dynamic as nnqd
from ember.ao.nn.intrinsic.modules import fused as nni
from ember.ops import quantized as Q

__all__ = ["LinearReLU"]


class LinearReLU(nnqd.Linear):
    _FLOAT_MODULE = nni.LinearReLU

    def forward(self, x):
        packed = self._packed_params._packed_params
        if self._packed_params.dtype is ember.qint8:
            return Q.linear_relu_dynamic(x, packed, reduce_range=True)
        return Q.linear_relu_dynamic_fp16(x, packed)

    def _get_name(self):
        return "DynamicQuantizedLinearReLU"

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        return super().from_float(mod, use_precomputed_fake_quant)

    @classmethod
    def from_reference(cls, ref_qlinear_relu):
        return super().from_reference(ref_qlinear_relu[0])
