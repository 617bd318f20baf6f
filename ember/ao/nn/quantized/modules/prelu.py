"""torch.ao.nn.quantized.PReLU: PReLU on a quantized tensor with a quantized weight.

Negative inputs give ``rint(x * w / scale) + zero_point`` in float32 (torch's integers);
non-negative inputs are requantized to the output qparams. (torch 2.13's x86 kernel maps
non-negative inputs with a slope that does not preserve their value; ember keeps x.)
"""
from __future__ import annotations

import numpy as np

import ember
from ember import nn

__all__ = ["PReLU"]


class PReLU(nn.Module):
    """Quantized PReLU: output qparams (``scale``, ``zero_point``) fixed at construction;
    ``weight`` a quint8 tensor of ``num_parameters`` slopes (one per channel, dim 1)."""

    def __init__(self, output_scale, output_zero_point, num_parameters=1):
        super().__init__()
        self.scale, self.zero_point = output_scale, output_zero_point
        self.num_parameters = num_parameters
        self.weight = ember.quantize_per_tensor(ember.randn(num_parameters), 1.0, 0,
                                                ember.quint8)

    def set_weight(self, w):
        self.weight = w

    def _get_name(self):
        return "QuantizedPReLU"

    def forward(self, input):
        if not input.is_quantized:
            raise RuntimeError("quantized PReLU expects a quantized input")
        x = input.dequantize().numpy().astype(np.float32)
        slope = self.weight.dequantize().numpy().astype(np.float32)
        if x.ndim >= 2 and slope.size > 1:           # one slope per channel (dim 1)
            slope = slope.reshape([1, slope.size] + [1] * (x.ndim - 2))
        y = np.where(x >= 0, x, x * slope).astype(np.float32)
        lo, hi = _RANGE[input.dtype]
        ints = np.clip(np.rint(y / np.float32(self.scale)) + self.zero_point, lo, hi)
        return ember._make_per_tensor_quantized_tensor(
            ember.tensor(ints.astype(np.int64)).to(_int_dtype(input.dtype)),
            float(self.scale), int(self.zero_point))

    @classmethod
    def _build(cls, mod, out_scale, out_zero_point):
        """The quantized module for float/reference ``mod``: its slopes quantized to quint8
        with the qparams of the qconfig's weight observer."""
        slopes = mod.weight.detach().float()
        watcher = mod.qconfig.weight()
        watcher(slopes)
        if watcher.dtype != ember.quint8:
            import warnings
            warnings.warn(f"PReLU's weight observer should have dtype quint8 but got "
                          f"{watcher.dtype}")
        w_scale, w_zp = watcher.calculate_qparams()
        made = cls(float(out_scale), int(out_zero_point), mod.num_parameters)
        made.set_weight(ember.quantize_per_tensor(slopes, float(w_scale), int(w_zp),
                                                  ember.quint8))
        return made

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        """From an observed nn.PReLU (output qparams from its observer)."""
        return cls._build(mod, *mod.activation_post_process.calculate_qparams())

    @classmethod
    def from_reference(cls, mod, output_scale, output_zero_point):
        return cls._build(mod, output_scale, output_zero_point)


_RANGE = {ember.quint8: (0, 255), ember.qint8: (-128, 127), ember.qint32: (-2 ** 31, 2 ** 31 - 1)}


def _int_dtype(qdtype):
    return {ember.quint8: ember.uint8, ember.qint8: ember.int8,
            ember.qint32: ember.int32}[qdtype]
