"""Reference quantized Conv1d/2d/3d: the float convolution on the quantized-then-dequantized
weight."""
from __future__ import annotations

import ember.nn as nn
from ember.ao.nn.quantized.reference.modules.utils import ReferenceQuantizedModule

__all__ = ["Conv1d", "Conv2d", "Conv3d"]


def _reference(base, dims):
    class Conv(base, ReferenceQuantizedModule):
        _IS_REFERENCE = True

        def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                     dilation=1, groups=1, bias=True, padding_mode="zeros", device=None,
                     dtype=None, weight_qparams=None):
            base.__init__(self, in_channels, out_channels, kernel_size, stride, padding,
                          dilation, groups, bias, padding_mode, device=device, dtype=dtype)
            self._init_weight_qparams(weight_qparams, device)

        def _get_name(self):
            return f"QuantizedConv{dims}d(Reference)"

        def forward(self, x):
            return self._conv_forward(x, self.get_weight(), self.bias)

        @classmethod
        def from_float(cls, float_conv, weight_qparams):
            ref = cls(float_conv.in_channels, float_conv.out_channels, float_conv.kernel_size,
                      float_conv.stride, float_conv.padding, float_conv.dilation,
                      float_conv.groups, float_conv.bias is not None, float_conv.padding_mode,
                      weight_qparams=weight_qparams)
            ref.weight = nn.Parameter(float_conv.weight.detach())
            if float_conv.bias is not None:
                ref.bias = nn.Parameter(float_conv.bias.detach())
            return ref

    Conv.__name__ = Conv.__qualname__ = f"Conv{dims}d"
    Conv.__module__ = __name__
    return Conv


Conv1d = _reference(nn.Conv1d, 1)
Conv2d = _reference(nn.Conv2d, 2)
Conv3d = _reference(nn.Conv3d, 3)
