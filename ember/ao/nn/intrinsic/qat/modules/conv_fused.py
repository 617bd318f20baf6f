"""QAT fused convolutions (torch.ao.nn.intrinsic.qat): ConvBn*, ConvBnReLU*, ConvReLU*.

ConvBn keeps the batch norm as a module (``bn``) and trains through the folded weight the
way torch approximates it: ``w' = fake_quant(w * gamma / running_std)``, convolve with zero
bias, divide the result by ``gamma / running_std`` per channel, add the conv bias, then
``bn(...)`` (batch statistics in training, running ones once frozen)."""
from __future__ import annotations

import math

import ember
from ember import nn
from ember.nn import functional as F
from ember.nn import init
from ember.nn.parameter import Parameter
from ember.nn.utils.fusion import fuse_conv_bn_weights
from ember.ao.nn import intrinsic as nni
from ember.ao.nn.intrinsic.modules.fused import _FusedModule
from ember.ao.nn.intrinsic.qat.modules._simulated_bn import (SimulatedBatchNorm,
                                                             with_simulated_batch_norm)
from ember.ao.nn import qat as nnqat
from ember.nn.modules.conv import _ConvNd as _FloatConvNd
from ember.ao.nn.qat.modules.linear import _require_qconfig

__all__ = ["ConvBn1d", "ConvBnReLU1d", "ConvReLU1d", "ConvBn2d", "ConvBnReLU2d", "ConvReLU2d",
           "ConvBn3d", "ConvBnReLU3d", "ConvReLU3d", "update_bn_stats", "freeze_bn_stats"]

_BN = {1: nn.BatchNorm1d, 2: nn.BatchNorm2d, 3: nn.BatchNorm3d}


@with_simulated_batch_norm
class _ConvBnNd(_FloatConvNd, _FusedModule):
    """Base (before a float ``nn.ConvNd`` in the bases) of conv + batch norm QAT."""
    _version = 2
    _FLOAT_MODULE = None
    _FLOAT_CONV_MODULE = None
    _FLOAT_BN_MODULE = None
    _FLOAT_RELU_MODULE = None
    _DIM = 2

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 dilation=1, groups=1, bias=None, padding_mode="zeros", eps=1e-05,
                 momentum=0.1, freeze_bn=False, qconfig=None):
        self._FLOAT_CONV_MODULE.__init__(self, in_channels, out_channels, kernel_size,
                                         stride=stride, padding=padding, dilation=dilation,
                                         groups=groups, bias=False, padding_mode=padding_mode)
        _require_qconfig(qconfig)
        if bias:
            self.bias = Parameter(ember.empty(out_channels))
        else:
            self.register_parameter("bias", None)
        self._attach_bn(_BN[self._DIM](out_channels, eps, momentum, True, True), qconfig,
                        freeze_bn)

    def reset_bn_parameters(self):
        SimulatedBatchNorm.reset_bn_parameters(self)
        if self.bias is not None:
            bound = 1 / math.sqrt(self.weight[0].numel())
            init.uniform_(self.bias, -bound, bound)

    def _forward(self, input):
        zero_bias = ember.zeros(self.out_channels, dtype=input.dtype)
        return self._simulated(input, lambda x, w: self._conv_forward(x, w, zero_bias))

    def forward(self, input):
        return self._forward(input)

    def extra_repr(self):
        return self._FLOAT_CONV_MODULE.extra_repr(self)

    def _fold_bn(self):
        """(weight, bias) with the batch norm folded in (what convert quantizes)."""
        return fuse_conv_bn_weights(self.weight, self.bias, self.bn.running_mean,
                                    self.bn.running_var, self.bn.eps, self.bn.weight,
                                    self.bn.bias)

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        """From a fused float ConvBn(ReLU) carrying ``qconfig``; shares its parameters and
        batch-norm statistics."""
        if type(mod) is not cls._FLOAT_MODULE:
            raise AssertionError(f"qat.{cls.__name__}.from_float only works for "
                                 f"{cls._FLOAT_MODULE.__name__}")
        if not hasattr(mod, "qconfig"):
            raise AssertionError("Input float module must have qconfig defined")
        if not mod.qconfig:
            raise AssertionError("Input float module must have a valid qconfig")
        conv, bn = mod[0], mod[1]
        qat = cls(conv.in_channels, conv.out_channels, conv.kernel_size, conv.stride,
                  conv.padding, conv.dilation, conv.groups, conv.bias is not None,
                  conv.padding_mode, bn.eps, bn.momentum, False, mod.qconfig)
        qat.weight = conv.weight
        qat.bias = conv.bias
        qat.bn.weight = bn.weight
        qat.bn.bias = bn.bias
        qat.bn.running_mean = bn.running_mean
        qat.bn.running_var = bn.running_var
        qat.bn.num_batches_tracked = bn.num_batches_tracked
        return qat

    def to_float(self):
        """The float convolution with the batch norm folded in (plus ReLU if fused)."""
        conv = self._FLOAT_CONV_MODULE(self.in_channels, self.out_channels, self.kernel_size,
                                       self.stride, self.padding, self.dilation, self.groups,
                                       self.bias is not None, self.padding_mode)
        conv.weight = Parameter(self.weight.detach())
        if self.bias is not None:
            conv.bias = Parameter(self.bias.detach())
        if self.bn is not None:
            conv.weight, conv.bias = fuse_conv_bn_weights(
                conv.weight, conv.bias, self.bn.running_mean, self.bn.running_var,
                self.bn.eps, self.bn.weight, self.bn.bias)
        if self._FLOAT_RELU_MODULE is not None:
            relu = self._FLOAT_RELU_MODULE()
            fused = {1: nni.ConvReLU1d, 2: nni.ConvReLU2d, 3: nni.ConvReLU3d}[self._DIM]
            result = fused(conv, relu)
        else:
            result = conv
        result.train(self.training)
        return result


def _conv_bn(name, dim, float_module, relu_of=None):
    conv_cls = {1: nn.Conv1d, 2: nn.Conv2d, 3: nn.Conv3d}[dim]
    attrs = {"_FLOAT_MODULE": float_module, "_FLOAT_CONV_MODULE": conv_cls,
             "_FLOAT_BN_MODULE": _BN[dim], "_FLOAT_RELU_MODULE": nn.ReLU if relu_of else None,
             "_DIM": dim, "__module__": __name__,
             "__doc__": f"QAT conv{dim}d + batch norm{' + relu' if relu_of else ''}."}
    if relu_of:
        attrs["forward"] = lambda self, input: F.relu(self._forward(input))
        return type(name, (relu_of,), attrs)
    return type(name, (_ConvBnNd, conv_cls), attrs)


ConvBn1d = _conv_bn("ConvBn1d", 1, nni.ConvBn1d)
ConvBnReLU1d = _conv_bn("ConvBnReLU1d", 1, nni.ConvBnReLU1d, ConvBn1d)
ConvBn2d = _conv_bn("ConvBn2d", 2, nni.ConvBn2d)
ConvBnReLU2d = _conv_bn("ConvBnReLU2d", 2, nni.ConvBnReLU2d, ConvBn2d)
ConvBn3d = _conv_bn("ConvBn3d", 3, nni.ConvBn3d)
ConvBnReLU3d = _conv_bn("ConvBnReLU3d", 3, nni.ConvBnReLU3d, ConvBn3d)


def _relu_forward(self, input):
    return F.relu(self._conv_forward(input, self.weight_fake_quant(self.weight), self.bias))


class ConvReLU1d(nnqat.Conv1d, _FusedModule):
    """QAT conv1d + relu: ``relu(conv(x, weight_fake_quant(weight)))``."""
    _FLOAT_MODULE = nni.ConvReLU1d
    _FLOAT_CONV_MODULE = nn.Conv1d
    _FLOAT_RELU_MODULE = nn.ReLU
    forward = _relu_forward


class ConvReLU2d(nnqat.Conv2d, _FusedModule):
    """QAT conv2d + relu."""
    _FLOAT_MODULE = nni.ConvReLU2d
    _FLOAT_CONV_MODULE = nn.Conv2d
    _FLOAT_RELU_MODULE = nn.ReLU
    forward = _relu_forward


class ConvReLU3d(nnqat.Conv3d, _FusedModule):
    """QAT conv3d + relu."""
    _FLOAT_MODULE = nni.ConvReLU3d
    _FLOAT_CONV_MODULE = nn.Conv3d
    _FLOAT_RELU_MODULE = nn.ReLU
    forward = _relu_forward


def update_bn_stats(mod):
    """``model.apply(update_bn_stats)``: batch norms of QAT ConvBn modules train again."""
    if isinstance(mod, _ConvBnNd):
        mod.update_bn_stats()


def freeze_bn_stats(mod):
    """``model.apply(freeze_bn_stats)``: QAT ConvBn modules use running statistics."""
    if isinstance(mod, _ConvBnNd):
        mod.freeze_bn_stats()


def _fold_bn_once(mod):
    """Before conversion to a quantized module: fold a QAT ConvBn/LinearBn module's batch
    norm into its own weight and bias (once), as torch's ``from_float`` does."""
    if hasattr(mod, "_fold_bn") and not getattr(mod, "_bn_folded", False):
        mod.weight, mod.bias = mod._fold_bn()
        mod._bn_folded = True
    return mod
