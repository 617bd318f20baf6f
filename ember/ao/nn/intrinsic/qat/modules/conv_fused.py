"""QAT fused convolutions (torch.ao.nn.intrinsic.qat): ConvBn{1,2,3}d, ConvBnReLU{1,2,3}d,
ConvReLU{1,2,3}d; input ``(N, C_in, *spatial)``, output ``(N, C_out, *spatial')``.

ConvBn keeps its batch norm as the child ``bn`` and trains through the simulation in
``_simulated_bn`` (convolution without bias on ``fake_quant(W * g)``, ``/ g``, ``+ bias``,
then ``bn``). ConvReLU is the QAT convolution followed by ReLU. Each dimension's three
classes come from one table (``_family``)."""
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
                                                             from_fused_float,
                                                             with_simulated_batch_norm)
from ember.ao.nn import qat as nnqat
from ember.nn.modules.conv import _ConvNd as _FloatConvNd
from ember.ao.nn.qat.modules.linear import _require_qconfig

__all__ = ["ConvBn1d", "ConvBnReLU1d", "ConvReLU1d", "ConvBn2d", "ConvBnReLU2d", "ConvReLU2d",
           "ConvBn3d", "ConvBnReLU3d", "ConvReLU3d", "update_bn_stats", "freeze_bn_stats"]

_SHAPE_FIELDS = ("in_channels", "out_channels", "kernel_size", "stride", "padding",
                 "dilation", "groups", "padding_mode")


def _conv_kwargs(conv):
    """Constructor arguments that rebuild ``conv``'s geometry (and whether it has a bias)."""
    kwargs = {field: getattr(conv, field) for field in _SHAPE_FIELDS}
    kwargs["bias"] = conv.bias is not None
    return kwargs


def _detached(param):
    return None if param is None else Parameter(param.detach())


@with_simulated_batch_norm
class _ConvBnNd(_FloatConvNd, _FusedModule):
    """Conv + batch norm QAT base; a subclass also lists its float ``nn.ConvNd`` in its
    bases and names its float classes in the ``_FLOAT_*`` attributes."""
    _version = 2
    _FLOAT_MODULE = None
    _FLOAT_CONV_MODULE = None
    _FLOAT_BN_MODULE = None
    _FLOAT_RELU_MODULE = None
    _DIM = 2
    _FOLD = staticmethod(fuse_conv_bn_weights)

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 dilation=1, groups=1, bias=None, padding_mode="zeros", eps=1e-05,
                 momentum=0.1, freeze_bn=False, qconfig=None):
        # the convolution is built without a bias: its bias (if any) is added after the
        # simulated batch-norm scaling, and drawn in reset_bn_parameters
        geometry = dict(stride=stride, padding=padding, dilation=dilation, groups=groups,
                        padding_mode=padding_mode)
        self._FLOAT_CONV_MODULE.__init__(self, in_channels, out_channels, kernel_size,
                                         bias=False, **geometry)
        _require_qconfig(qconfig)
        self.register_parameter("bias", Parameter(ember.empty(out_channels)) if bias else None)
        batch_norm = self._FLOAT_BN_MODULE(out_channels, eps=eps, momentum=momentum)
        self._attach_bn(batch_norm, qconfig, freeze_bn)

    def reset_bn_parameters(self):
        """The batch norm's reset, plus the bias ~ U(-1/sqrt(fan_in), 1/sqrt(fan_in))."""
        SimulatedBatchNorm.reset_bn_parameters(self)
        if self.bias is None:
            return
        limit = 1 / math.sqrt(self.weight[0].numel())
        init.uniform_(self.bias, -limit, limit)

    def _forward(self, input):
        no_bias = ember.zeros(self.out_channels, dtype=input.dtype)
        return self._simulated(input, lambda x, w: self._conv_forward(x, w, no_bias))

    def forward(self, input):
        return self._forward(input)

    def extra_repr(self):
        return self._FLOAT_CONV_MODULE.extra_repr(self)

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        """From a fused float ConvBn(ReLU) carrying ``qconfig``, sharing its parameters and
        batch-norm statistics."""
        return from_fused_float(cls, mod, cls._FLOAT_MODULE, _conv_kwargs)

    def to_float(self):
        """The float convolution with ``bn`` folded in (inside a ConvReLU when fused with
        ReLU), in this module's mode."""
        conv = self._FLOAT_CONV_MODULE(**_conv_kwargs(self))
        conv.weight, conv.bias = self._folded(_detached(self.weight), _detached(self.bias))
        if self._FLOAT_RELU_MODULE is not None:
            conv = _CONV_RELU[self._DIM](conv, self._FLOAT_RELU_MODULE())
        return conv.train(self.training)


def _relu_after_conv_bn(self, input):
    return F.relu(self._forward(input))


def _relu_after_qat_conv(self, input):
    weight = self.weight_fake_quant(self.weight)
    return F.relu(self._conv_forward(input, weight, self.bias))


_CONV = {1: nn.Conv1d, 2: nn.Conv2d, 3: nn.Conv3d}
_BN = {1: nn.BatchNorm1d, 2: nn.BatchNorm2d, 3: nn.BatchNorm3d}
_QAT_CONV = {1: nnqat.Conv1d, 2: nnqat.Conv2d, 3: nnqat.Conv3d}
_CONV_RELU = {1: nni.ConvReLU1d, 2: nni.ConvReLU2d, 3: nni.ConvReLU3d}


def _family(dim):
    """(ConvBn, ConvBnReLU, ConvReLU) QAT classes of dimension ``dim``, with torch's bases."""
    def make(name, bases, doc, **attrs):
        attrs.update(_FLOAT_MODULE=getattr(nni, name), _FLOAT_CONV_MODULE=_CONV[dim],
                     __module__=__name__, __doc__=doc)
        return type(name, bases, attrs)
    d = f"{dim}d"
    conv_bn = make(f"ConvBn{d}", (_ConvBnNd, _CONV[dim]), f"QAT conv{d} + batch norm.",
                   _FLOAT_BN_MODULE=_BN[dim], _FLOAT_RELU_MODULE=None, _DIM=dim)
    conv_bn_relu = make(f"ConvBnReLU{d}", (conv_bn,), f"QAT conv{d} + batch norm + relu.",
                        _FLOAT_RELU_MODULE=nn.ReLU, forward=_relu_after_conv_bn)
    conv_relu = make(f"ConvReLU{d}", (_QAT_CONV[dim], _FusedModule),
                     f"QAT conv{d} + relu: ``relu(conv(x, weight_fake_quant(weight)))``.",
                     _FLOAT_BN_MODULE=None, _FLOAT_RELU_MODULE=nn.ReLU,
                     forward=_relu_after_qat_conv)
    return conv_bn, conv_bn_relu, conv_relu


ConvBn1d, ConvBnReLU1d, ConvReLU1d = _family(1)
ConvBn2d, ConvBnReLU2d, ConvReLU2d = _family(2)
ConvBn3d, ConvBnReLU3d, ConvReLU3d = _family(3)


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
