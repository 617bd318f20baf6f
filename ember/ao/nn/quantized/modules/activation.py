"""Quantized activations (torch.ao.nn.quantized.modules.activation): a quantized tensor in,
its ``quantized::`` op (``ember.ops.quantized``), a quantized tensor out. ReLU6 keeps the
input's grid; the others requantize to the grid their float module's observer saw
(``Requantizing``), kept as buffers or attributes as torch keeps them."""
from __future__ import annotations

import ember
from ember import nn
from ember.ao.nn.quantized.modules.utils import Requantizing, _qparam_buffers

__all__ = ["ReLU6", "Hardswish", "ELU", "LeakyReLU", "Sigmoid", "Softmax"]


class ReLU6(nn.ReLU):
    """``min(max(0, x), 6)`` on the input's grid (parameters unchanged)."""

    def __init__(self, inplace=False):
        super().__init__(inplace)

    def forward(self, input):
        return ember.ops.quantized.relu6(input, self.inplace)

    def _get_name(self):
        return "QuantizedReLU6"

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        return cls(mod.inplace)


class Hardswish(Requantizing, nn.Hardswish):
    """Hardswish onto ``(scale, zero_point)`` (buffers)."""

    def __init__(self, scale, zero_point, device=None, dtype=None):
        super().__init__()
        _qparam_buffers(self, scale, zero_point)

    def forward(self, input):
        return ember.ops.quantized.hardswish(input, self.scale, self.zero_point)


class ELU(Requantizing, nn.ELU):
    """ELU onto ``(scale, zero_point)`` (plain attributes)."""

    def __init__(self, scale, zero_point, alpha=1.0):
        super().__init__(alpha)
        self.scale, self.zero_point = scale, zero_point

    def forward(self, input):
        return ember.ops.quantized.elu(input, self.scale, self.zero_point, self.alpha)

    @classmethod
    def _rebuild(cls, mod, scale, zero_point):
        return scale, zero_point, mod.alpha


class LeakyReLU(Requantizing, nn.LeakyReLU):
    """LeakyReLU onto ``(scale, zero_point)`` (buffers)."""

    def __init__(self, scale, zero_point, negative_slope=1e-2, inplace=False, device=None,
                 dtype=None):
        super().__init__(negative_slope, inplace)
        _qparam_buffers(self, scale, zero_point)

    def forward(self, input):
        return ember.ops.quantized.leaky_relu(input, self.negative_slope, self.inplace,
                                              self.scale, self.zero_point)

    @classmethod
    def _rebuild(cls, mod, scale, zero_point):
        return scale, zero_point, mod.negative_slope, mod.inplace


class Sigmoid(Requantizing, nn.Sigmoid):
    """Sigmoid onto ``(output_scale, output_zero_point)``; prints as the float module."""

    def __init__(self, output_scale, output_zero_point):
        super().__init__()
        self.output_scale, self.output_zero_point = output_scale, output_zero_point

    def forward(self, input):
        return ember.ops.quantized.sigmoid(input, self.output_scale, self.output_zero_point)

    def _get_name(self):
        return "Sigmoid"


class Softmax(Requantizing, nn.Softmax):
    """Softmax over ``dim`` onto ``(scale, zero_point)`` (plain attributes)."""

    def __init__(self, dim=None, scale=1.0, zero_point=0):
        super().__init__()
        self.dim, self.scale, self.zero_point = dim, scale, zero_point

    def forward(self, input):
        dim = self.dim
        if dim is None:                  # torch's legacy choice of dimension
            dim = 0 if input.dim() in (0, 1, 3) else 1
        return ember.ops.quantized.softmax(input, dim, self.scale, self.zero_point)

    @classmethod
    def _rebuild(cls, mod, scale, zero_point):
        return mod.dim, scale, zero_point
