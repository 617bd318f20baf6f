"""Stubs (torch.ao.quantization.stubs): identity placeholders marking where a model's tensors
become quantized (:class:`QuantStub`) and float again (:class:`DeQuantStub`); ``convert``
swaps them for ``nn.quantized.Quantize``/``DeQuantize``."""
from __future__ import annotations

from ember import nn

__all__ = ["QuantStub", "DeQuantStub", "QuantWrapper"]


class QuantStub(nn.Module):
    """Identity until ``convert``; observed like any output by ``prepare``."""

    def __init__(self, qconfig=None):
        super().__init__()
        if qconfig:
            self.qconfig = qconfig

    def forward(self, x):
        return x


class DeQuantStub(nn.Module):
    """Identity until ``convert`` makes it a ``DeQuantize``."""

    def __init__(self, qconfig=None):
        super().__init__()
        if qconfig:
            self.qconfig = qconfig

    def forward(self, x):
        return x


class QuantWrapper(nn.Module):
    """``module`` between a :class:`QuantStub` and a :class:`DeQuantStub` (taking over its
    qconfig and training mode)."""

    def __init__(self, module):
        super().__init__()
        qconfig = getattr(module, "qconfig", None)
        self.add_module("quant", QuantStub(qconfig))
        self.add_module("dequant", DeQuantStub(qconfig))
        self.add_module("module", module)
        self.train(module.training)

    def forward(self, X):
        return self.dequant(self.module(self.quant(X)))
