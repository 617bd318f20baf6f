"""QAT convolutions (torch.ao.nn.qat.Conv1d/2d/3d): float convolutions whose weight passes
``weight_fake_quant`` on every forward (the shared conversions are in linear.py)."""
from __future__ import annotations

from ember import nn
from ember.ao.nn.qat.modules.linear import _attach_fake_quant, _from_float, _to_float

__all__ = ["Conv1d", "Conv2d", "Conv3d"]


class _ConvNd:
    """The mixin for a float convolution class; ``_FLOAT_CONV_MODULE`` is what to_float
    builds (the fused QAT ConvReLU classes wrap it with their ReLU)."""
    _FLOAT_CONV_MODULE = None
    _LAYOUT = ("in_channels", "out_channels", "kernel_size", "stride", "padding", "dilation",
               "groups", "padding_mode")
    from_float = classmethod(_from_float)
    to_float = _to_float

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 dilation=1, groups=1, bias=True, padding_mode="zeros", qconfig=None,
                 device=None, dtype=None):
        layout = (in_channels, out_channels, kernel_size, stride, padding, dilation, groups)
        super().__init__(*layout, bias, padding_mode)      # the float convolution's order
        _attach_fake_quant(self, qconfig)

    @classmethod
    def _float_layer_class(cls):
        return cls._FLOAT_CONV_MODULE

    def forward(self, input):
        return self._conv_forward(input, self.weight_fake_quant(self.weight), self.bias)


def _qat_conv(float_conv):
    return type(float_conv.__name__, (_ConvNd, float_conv),
                {"_FLOAT_MODULE": float_conv, "_FLOAT_CONV_MODULE": float_conv,
                 "__module__": __name__,
                 "__doc__": f"QAT {float_conv.__name__}: ``conv(x, weight_fake_quant(weight))``."})


Conv1d, Conv2d, Conv3d = map(_qat_conv, (nn.Conv1d, nn.Conv2d, nn.Conv3d))
