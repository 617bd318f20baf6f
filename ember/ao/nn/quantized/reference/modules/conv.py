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


def _reference_transpose(base, dims):
    import ember.nn.functional as F
    functional = getattr(F, f"conv_transpose{dims}d")

    class ConvTranspose(base, ReferenceQuantizedModule):
        _IS_REFERENCE = True

        def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                     output_padding=0, groups=1, bias=True, dilation=1, padding_mode="zeros",
                     device=None, dtype=None, weight_qparams=None):
            base.__init__(self, in_channels, out_channels, kernel_size, stride, padding,
                          output_padding, groups, bias, dilation, padding_mode, device=device,
                          dtype=dtype)
            self._init_weight_qparams(weight_qparams, device)

        def _get_name(self):
            return f"QuantizedConvTranspose{dims}d(Reference)"

        def forward(self, x, output_size=None):
            output_padding = self._output_padding(x, output_size, self.stride, self.padding,
                                                  self.kernel_size, dims, self.dilation) \
                if output_size is not None else self.output_padding
            return functional(x, self.get_weight(), self.bias, self.stride, self.padding,
                              output_padding, self.groups, self.dilation)

        @classmethod
        def from_float(cls, float_conv, weight_qparams):
            ref = cls(float_conv.in_channels, float_conv.out_channels, float_conv.kernel_size,
                      float_conv.stride, float_conv.padding, float_conv.output_padding,
                      float_conv.groups, float_conv.bias is not None, float_conv.dilation,
                      float_conv.padding_mode, weight_qparams=weight_qparams)
            ref.weight = nn.Parameter(float_conv.weight.detach())
            if float_conv.bias is not None:
                ref.bias = nn.Parameter(float_conv.bias.detach())
            return ref

    ConvTranspose.__name__ = ConvTranspose.__qualname__ = f"ConvTranspose{dims}d"
    ConvTranspose.__module__ = __name__
    return ConvTranspose


ConvTranspose1d = _reference_transpose(nn.ConvTranspose1d, 1)
ConvTranspose2d = _reference_transpose(nn.ConvTranspose2d, 2)
ConvTranspose3d = _reference_transpose(nn.ConvTranspose3d, 3)
__all__ += ["ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d"]
