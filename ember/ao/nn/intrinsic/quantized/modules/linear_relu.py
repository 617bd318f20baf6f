"""Quantized fused linear + activation: LinearReLU, LinearLeakyReLU, LinearTanh. Input
``(*, in_features)`` quantized -> ``(*, out_features)`` activated and requantized to
``(scale, zero_point)`` by one fused kernel."""
from __future__ import annotations

import ember
from ember.ao.nn import quantized as nnq
from ember.ao.nn.intrinsic.modules import fused as nni
from ember.ops import quantized as Q
from ember.ao.nn.intrinsic.qat.modules.conv_fused import _fold_bn_once

__all__ = ["LinearReLU", "LinearLeakyReLU", "LinearTanh"]


def _named(name):
    """A ``_get_name`` returning ``name``."""
    return lambda self: name


def _from_fused_pair(cls, mod, use_precomputed_fake_quant, *extra):
    """Quantize the fused float pair's linear (``mod[0]``) with the pair's qconfig and
    output observer, then move its packed weight and qparams into a ``cls``."""
    linear = mod[0]
    linear.qconfig, linear.activation_post_process = mod.qconfig, mod.activation_post_process
    plain = nnq.Linear.from_float(linear, use_precomputed_fake_quant)
    fused = cls(linear.in_features, linear.out_features, *extra)
    fused._packed_params = plain._packed_params
    fused.scale, fused.zero_point = plain.scale, plain.zero_point
    return fused


class LinearReLU(nnq.Linear):
    """``relu(linear(x))``."""
    _FLOAT_MODULE = nni.LinearReLU

    def forward(self, x):
        packed = self._packed_params._packed_params
        return Q.linear_relu(x, packed, self.scale, self.zero_point)

    _get_name = _named("QuantizedLinearReLU")

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        folded = _fold_bn_once(mod)                    # a QAT LinearBn folds first
        return super().from_float(folded, use_precomputed_fake_quant)

    @classmethod
    def from_reference(cls, ref_linear_relu, output_scale, output_zero_point):
        linear = ref_linear_relu[0]
        return super().from_reference(linear, output_scale, output_zero_point)


class LinearLeakyReLU(nnq.Linear):
    """``leaky_relu(linear(x), negative_slope)``."""
    _FLOAT_MODULE = nni.LinearLeakyReLU

    def __init__(self, in_features, out_features, negative_slope,
                 bias=True, dtype=None):
        nnq.Linear.__init__(self, in_features, out_features, bias,
                            dtype=dtype if dtype is not None else ember.qint8)
        self.negative_slope = negative_slope

    def forward(self, x):
        packed = self._packed_params._packed_params
        return Q.linear_leaky_relu(x, packed, self.scale, self.zero_point,
                                   self.negative_slope)

    _get_name = _named("QuantizedLinearLeakyReLU")

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        slope = mod[1].negative_slope
        return _from_fused_pair(cls, mod, use_precomputed_fake_quant, slope)


class LinearTanh(nnq.Linear):
    """``tanh(linear(x))``."""
    _FLOAT_MODULE = nni.LinearTanh

    def forward(self, x):
        packed = self._packed_params._packed_params
        return Q.linear_tanh(x, packed, self.scale, self.zero_point)

    _get_name = _named("QuantizedLinearTanh")

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        return _from_fused_pair(cls, mod, use_precomputed_fake_quant)
