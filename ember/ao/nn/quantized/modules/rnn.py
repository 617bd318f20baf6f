"""torch.ao.nn.quantized.LSTM: the quantizable LSTM after ``convert`` (quantized Linears
and QFunctionals inside; its input and hidden states are quantized tensors)."""
from __future__ import annotations

from ember.ao.nn.quantizable.modules import rnn as _quantizable

__all__ = ["LSTM"]


class LSTM(_quantizable.LSTM):
    """Made from an observed ``quantizable.LSTM`` by ``from_observed``; forward takes a
    quantized (T, B, in) input and returns quantized (output, (h_n, c_n))."""
    _FLOAT_MODULE = _quantizable.LSTM

    def _get_name(self):
        return "QuantizedLSTM"

    @classmethod
    def from_float(cls, *args, **kwargs):
        raise NotImplementedError("It looks like you are trying to convert a non-observed LSTM "
                                  "module. Please, see the examples on quantizable LSTMs.")

    @classmethod
    def from_observed(cls, other):
        """Convert the observed module's Linears and FloatFunctionals in place."""
        from ember.ao.quantization import convert
        if type(other) is not cls._FLOAT_MODULE:
            raise AssertionError(f"expected {cls._FLOAT_MODULE}, got {type(other)}")
        converted = convert(other, inplace=False, remove_qconfig=True)
        converted.__class__ = cls
        return converted
