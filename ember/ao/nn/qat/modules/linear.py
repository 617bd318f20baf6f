"""QAT Linear (torch.ao.nn.qat.Linear): a float Linear whose weight passes a fake quantizer
(``weight_fake_quant``, built from ``qconfig.weight``) on every forward."""
from __future__ import annotations

from ember import nn
from ember.nn import functional as F
from ember.nn.parameter import Parameter

__all__ = ["Linear"]


def _require_qconfig(qconfig):
    if not qconfig:
        raise AssertionError("qconfig must be provided for QAT module")


def _check_float_module(cls, mod, float_types):
    if type(mod) not in float_types:
        raise AssertionError(f"qat.{cls.__name__}.from_float only works for "
                             f"{cls._FLOAT_MODULE.__name__}, got {type(mod).__name__}")
    if not hasattr(mod, "qconfig"):
        raise AssertionError("Input float module must have qconfig defined")
    if not mod.qconfig:
        raise AssertionError("Input float module must have a valid qconfig")


class Linear(nn.Linear):
    """``linear(x, weight_fake_quant(weight), bias)``."""
    _FLOAT_MODULE = nn.Linear

    def __init__(self, in_features, out_features, bias=True, qconfig=None, device=None,
                 dtype=None):
        super().__init__(in_features, out_features, bias)
        _require_qconfig(qconfig)
        self.qconfig = qconfig
        self.weight_fake_quant = qconfig.weight(factory_kwargs=None)

    def forward(self, input):
        return F.linear(input, self.weight_fake_quant(self.weight), self.bias)

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        """From a float Linear (or fused LinearReLU: its Linear) carrying ``qconfig``; shares
        its parameters."""
        _check_float_module(cls, mod, (cls._FLOAT_MODULE,))
        qconfig = mod.qconfig
        if isinstance(mod, nn.Sequential):            # fused LinearReLU
            mod = mod[0]
        qat = cls(mod.in_features, mod.out_features, bias=mod.bias is not None, qconfig=qconfig)
        qat.weight = mod.weight
        qat.bias = mod.bias
        return qat

    def to_float(self):
        linear = nn.Linear(self.in_features, self.out_features, self.bias is not None)
        linear.weight = Parameter(self.weight.detach())
        if self.bias is not None:
            linear.bias = Parameter(self.bias.detach())
        linear.train(self.training)
        return linear
