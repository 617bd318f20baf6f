"""QAT convolutions (torch.ao.nn.qat.Conv1d/2d/3d): float convolutions whose weight passes
``weight_fake_quant`` on every forward."""
from __future__ import annotations

from ember import nn
from ember.nn.parameter import Parameter
from ember.ao.nn.qat.modules.linear import _require_qconfig

__all__ = ["Conv1d", "Conv2d", "Conv3d"]


class _ConvNd:
    """Mixin over a float convolution class."""
    _FLOAT_MODULE = None
    _FLOAT_CONV_MODULE = None

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 dilation=1, groups=1, bias=True, padding_mode="zeros", qconfig=None,
                 device=None, dtype=None):
        super().__init__(in_channels, out_channels, kernel_size, stride=stride,
                         padding=padding, dilation=dilation, groups=groups, bias=bias,
                         padding_mode=padding_mode)
        _require_qconfig(qconfig)
        self.qconfig = qconfig
        self.weight_fake_quant = qconfig.weight(factory_kwargs=None)

    def forward(self, input):
        return self._conv_forward(input, self.weight_fake_quant(self.weight), self.bias)

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        """From a float convolution (or fused ConvReLU: its convolution) with ``qconfig``;
        shares its parameters."""
        if type(mod) is not cls._FLOAT_MODULE:
            raise AssertionError(f"qat.{cls.__name__}.from_float only works for "
                                 f"{cls._FLOAT_MODULE.__name__}, got {type(mod).__name__}")
        if not hasattr(mod, "qconfig"):
            raise AssertionError("Input float module must have qconfig defined")
        if not mod.qconfig:
            raise AssertionError("Input float module must have a valid qconfig")
        qconfig = mod.qconfig
        if isinstance(mod, nn.Sequential):            # fused ConvReLU
            mod = mod[0]
        qat = cls(mod.in_channels, mod.out_channels, mod.kernel_size, stride=mod.stride,
                  padding=mod.padding, dilation=mod.dilation, groups=mod.groups,
                  bias=mod.bias is not None, padding_mode=mod.padding_mode, qconfig=qconfig)
        qat.weight = mod.weight
        qat.bias = mod.bias
        return qat

    def to_float(self):
        """The float convolution (with a ReLU for the fused QAT classes)."""
        conv = self._FLOAT_CONV_MODULE(self.in_channels, self.out_channels, self.kernel_size,
                                       self.stride, self.padding, self.dilation, self.groups,
                                       self.bias is not None, self.padding_mode)
        conv.weight = Parameter(self.weight.detach())
        if self.bias is not None:
            conv.bias = Parameter(self.bias.detach())
        if getattr(self, "_FLOAT_RELU_MODULE", None) is not None:
            conv = self._FLOAT_MODULE(conv, self._FLOAT_RELU_MODULE())
        conv.train(self.training)
        return conv


class Conv1d(_ConvNd, nn.Conv1d):
    _FLOAT_MODULE = nn.Conv1d
    _FLOAT_CONV_MODULE = nn.Conv1d


class Conv2d(_ConvNd, nn.Conv2d):
    _FLOAT_MODULE = nn.Conv2d
    _FLOAT_CONV_MODULE = nn.Conv2d


class Conv3d(_ConvNd, nn.Conv3d):
    _FLOAT_MODULE = nn.Conv3d
    _FLOAT_CONV_MODULE = nn.Conv3d
