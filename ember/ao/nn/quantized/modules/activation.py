"""Quantized activations (torch.ao.nn.quantized.modules.activation): quantized tensor in,
quantized tensor out, each calling its ``quantized::`` op (``ember.ops.quantized``).
Modules whose output needs its own parameters keep them (``scale``, ``zero_point``)."""
from __future__ import annotations

import ember
from ember import nn
from ember.ao.nn.quantized.modules.utils import _output_qparams

__all__ = ["ReLU6", "Hardswish", "ELU", "LeakyReLU", "Sigmoid", "Softmax"]



class ReLU6(nn.ReLU):
    """``min(max(0, x), 6)`` on the input's grid (parameters unchanged)."""

    def __init__(self, inplace=False):
        super().__init__(inplace)
        self.inplace = inplace

    def forward(self, input):
        return ember.ops.quantized.relu6(input, self.inplace)

    def _get_name(self):
        return "QuantizedReLU6"

    @staticmethod
    def from_float(mod, use_precomputed_fake_quant=False):
        return ReLU6(mod.inplace)


class Hardswish(nn.Hardswish):
    """Hardswish requantized to ``(scale, zero_point)``."""

    def __init__(self, scale, zero_point, device=None, dtype=None):
        super().__init__()
        self.register_buffer("scale", ember.tensor(scale))
        self.register_buffer("zero_point", ember.tensor(zero_point))

    def forward(self, input):
        return ember.ops.quantized.hardswish(input, self.scale, self.zero_point)

    def _get_name(self):
        return "QuantizedHardswish"

    @staticmethod
    def from_float(mod, use_precomputed_fake_quant=False):
        return Hardswish(*_output_qparams(mod))

    @classmethod
    def from_reference(cls, mod, scale, zero_point):
        return cls(float(scale), int(zero_point))


class ELU(nn.ELU):
    """ELU requantized to ``(scale, zero_point)``."""

    def __init__(self, scale, zero_point, alpha=1.0):
        super().__init__(alpha)
        self.scale = scale
        self.zero_point = zero_point

    def forward(self, input):
        return ember.ops.quantized.elu(input, self.scale, self.zero_point, self.alpha)

    def _get_name(self):
        return "QuantizedELU"

    @staticmethod
    def from_float(mod, use_precomputed_fake_quant=False):
        return ELU(*_output_qparams(mod), mod.alpha)

    @classmethod
    def from_reference(cls, mod, scale, zero_point):
        return cls(float(scale), int(zero_point), mod.alpha)


class LeakyReLU(nn.LeakyReLU):
    """LeakyReLU requantized to ``(scale, zero_point)``."""

    def __init__(self, scale, zero_point, negative_slope=1e-2, inplace=False, device=None,
                 dtype=None):
        super().__init__(negative_slope, inplace)
        self.register_buffer("scale", ember.tensor(scale))
        self.register_buffer("zero_point", ember.tensor(zero_point))

    def forward(self, input):
        return ember.ops.quantized.leaky_relu(input, self.negative_slope, self.inplace, self.scale,
                                 self.zero_point)

    def _get_name(self):
        return "QuantizedLeakyReLU"

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        return cls(*_output_qparams(mod), mod.negative_slope, mod.inplace)

    @classmethod
    def from_reference(cls, mod, scale, zero_point):
        return cls(float(scale), int(zero_point), mod.negative_slope, mod.inplace)


class Sigmoid(nn.Sigmoid):
    """Sigmoid requantized to ``(output_scale, output_zero_point)``."""

    def __init__(self, output_scale, output_zero_point):
        super().__init__()
        self.output_scale = output_scale
        self.output_zero_point = output_zero_point

    def forward(self, input):
        return ember.ops.quantized.sigmoid(input, self.output_scale, self.output_zero_point)

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        return cls(*_output_qparams(mod))


class Softmax(nn.Softmax):
    """Softmax over ``dim`` requantized to ``(scale, zero_point)``."""

    def __init__(self, dim=None, scale=1.0, zero_point=0):
        super().__init__()
        self.dim = dim
        self.scale = scale
        self.zero_point = zero_point

    def forward(self, input):
        dim = self.dim
        if dim is None:                  # torch's legacy choice of dimension
            dim = 0 if input.dim() in (0, 1, 3) else 1
        return ember.ops.quantized.softmax(input, dim, self.scale, self.zero_point)

    def _get_name(self):
        return "QuantizedSoftmax"

    @staticmethod
    def from_float(mod, use_precomputed_fake_quant=False):
        scale, zero_point = _output_qparams(mod)
        return Softmax(mod.dim, scale, zero_point)

    @classmethod
    def from_reference(cls, mod, scale, zero_point):
        return cls(mod.dim, float(scale), int(zero_point))
