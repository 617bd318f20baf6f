"""QAT Linear (torch.ao.nn.qat.Linear): a float Linear whose weight passes a fake quantizer
(``weight_fake_quant``, built from ``qconfig.weight``) on every forward.

The QAT layers (Linear here, Conv1d/2d/3d in conv.py) share ``_from_float``/``_to_float``:
converting is driven by the layer's constructor arguments (``_LAYOUT``: read off one layer,
handed to the other's constructor)."""
from __future__ import annotations

from ember import nn
from ember.nn import functional as F
from ember.nn.parameter import Parameter

__all__ = ["Linear"]


def _require_qconfig(qconfig):
    if not qconfig:
        raise AssertionError("qconfig must be provided for QAT module")


def _check_float_module(cls, mod, float_types):
    """torch's assertions on what ``cls.from_float`` is given (type, then its qconfig)."""
    problem = (type(mod) not in float_types and
               f"qat.{cls.__name__}.from_float only works for "
               f"{cls._FLOAT_MODULE.__name__}, got {type(mod).__name__}") or \
        (not hasattr(mod, "qconfig") and "Input float module must have qconfig defined") or \
        (not mod.qconfig and "Input float module must have a valid qconfig")
    if problem:
        raise AssertionError(problem)


def _read(layer, names):
    """The constructor arguments ``names`` as a layer holds them."""
    return {name: getattr(layer, name) for name in names}


# What the QAT layers share (as functions: torch's classes have no common base to copy).
def _attach_fake_quant(module, qconfig):
    _require_qconfig(qconfig)
    module.qconfig = qconfig
    module.weight_fake_quant = qconfig.weight(factory_kwargs=None)


def _from_float(cls, mod, use_precomputed_fake_quant=False):
    """From the float layer (or a fused pair: its first module) carrying ``qconfig``; the
    QAT layer shares its parameters."""
    _check_float_module(cls, mod, (cls._FLOAT_MODULE,))
    layer = mod[0] if isinstance(mod, nn.Sequential) else mod
    qat = cls(**_read(layer, cls._LAYOUT), bias=layer.bias is not None, qconfig=mod.qconfig)
    qat.weight, qat.bias = layer.weight, layer.bias
    return qat


def _to_float(self):
    """A float layer with copies of the parameters (a fused pair for the *ReLU classes)."""
    layer = self._float_layer_class()(**_read(self, self._LAYOUT), bias=self.bias is not None)
    layer.weight = Parameter(self.weight.detach())
    if self.bias is not None:
        layer.bias = Parameter(self.bias.detach())
    relu = getattr(self, "_FLOAT_RELU_MODULE", None)
    if relu is not None:
        layer = self._FLOAT_MODULE(layer, relu())
    layer.train(self.training)
    return layer


class Linear(nn.Linear):
    """``linear(x, weight_fake_quant(weight), bias)``."""
    _FLOAT_MODULE = nn.Linear
    _LAYOUT = ("in_features", "out_features")
    from_float = classmethod(_from_float)
    to_float = _to_float

    def __init__(self, in_features, out_features, bias=True, qconfig=None, device=None,
                 dtype=None):
        super().__init__(in_features, out_features, bias)
        _attach_fake_quant(self, qconfig)

    @classmethod
    def _float_layer_class(cls):
        return nn.Linear

    def forward(self, input):
        return F.linear(input, self.weight_fake_quant(self.weight), self.bias)
