"""torch.ao.nn.quantized.MultiheadAttention: the quantizable one after ``convert``
(quantized projections; float scores and softmax between dequant and quant stubs)."""
from __future__ import annotations

from ember.ao.nn.quantizable.modules import activation as _quantizable

__all__ = ["MultiheadAttention"]


class MultiheadAttention(_quantizable.MultiheadAttention):
    """Made by ``from_observed``; takes quantized query/key/value, returns quantized
    (output, weights)."""
    _FLOAT_MODULE = _quantizable.MultiheadAttention

    def _get_name(self):
        return "QuantizedMultiheadAttention"

    @classmethod
    def from_float(cls, other):
        raise NotImplementedError("It looks like you are trying to convert a non-observed MHA "
                                  "module. Please, see the examples on quantizable MHAs.")

    @classmethod
    def from_observed(cls, other):
        from ember.ao.quantization import convert
        converted = convert(other, inplace=False, remove_qconfig=True)
        converted.__class__ = cls
        return converted
