"""Quantized fused linear modules (torch.ao.nn.intrinsic.quantized): LinearReLU,
LinearLeakyReLU, LinearTanh — ``quantized::linear_relu`` etc."""
from __future__ import annotations

from ember.ao.nn import quantized as nnq
from ember.ao.nn.intrinsic.modules import fused as nni
from ember.ops import quantized as Q
from ember.ao.nn.intrinsic.qat.modules.conv_fused import _fold_bn_once

__all__ = ["LinearReLU", "LinearLeakyReLU", "LinearTanh"]


class LinearReLU(nnq.Linear):
    """``relu(linear(x))`` requantized to ``(scale, zero_point)``."""
    _FLOAT_MODULE = nni.LinearReLU

    def forward(self, x):
        return Q.linear_relu(x, self._packed_params._packed_params, self.scale,
                             self.zero_point)

    def _get_name(self):
        return "QuantizedLinearReLU"

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        return super().from_float(_fold_bn_once(mod), use_precomputed_fake_quant)

    @classmethod
    def from_reference(cls, ref_linear_relu, output_scale, output_zero_point):
        return super().from_reference(ref_linear_relu[0], output_scale, output_zero_point)


class LinearLeakyReLU(nnq.Linear):
    """``leaky_relu(linear(x), negative_slope)`` (``quantized::linear_leaky_relu``)."""
    _FLOAT_MODULE = nni.LinearLeakyReLU

    def __init__(self, in_features, out_features, negative_slope, bias=True,
                 dtype=None):
        import ember
        super().__init__(in_features, out_features, bias,
                         dtype=ember.qint8 if dtype is None else dtype)
        self.negative_slope = negative_slope

    def forward(self, x):
        return Q.linear_leaky_relu(x, self._packed_params._packed_params, self.scale,
                                   self.zero_point, self.negative_slope)

    def _get_name(self):
        return "QuantizedLinearLeakyReLU"

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        activation_post_process = mod.activation_post_process
        linear, leaky_relu = mod[0], mod[1]
        linear.qconfig = mod.qconfig
        linear.activation_post_process = activation_post_process
        qlinear = nnq.Linear.from_float(linear, use_precomputed_fake_quant)
        out = cls(linear.in_features, linear.out_features, leaky_relu.negative_slope)
        out._packed_params = qlinear._packed_params
        out.scale, out.zero_point = qlinear.scale, qlinear.zero_point
        return out


class LinearTanh(nnq.Linear):
    """``tanh(linear(x))`` (``quantized::linear_tanh``)."""
    _FLOAT_MODULE = nni.LinearTanh

    def forward(self, x):
        return Q.linear_tanh(x, self._packed_params._packed_params, self.scale,
                             self.zero_point)

    def _get_name(self):
        return "QuantizedLinearTanh"

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        activation_post_process = mod.activation_post_process
        linear = mod[0]
        linear.qconfig = mod.qconfig
        linear.activation_post_process = activation_post_process
        qlinear = nnq.Linear.from_float(linear, use_precomputed_fake_quant)
        out = cls(linear.in_features, linear.out_features)
        out._packed_params = qlinear._packed_params
        out.scale, out.zero_point = qlinear.scale, qlinear.zero_point
        return out
