"""torch.ao.nn.quantized.dynamic Conv1d/2d/3d and ConvTranspose1d/2d/3d: float in, float
out through ``quantized::conv{n}d_dynamic`` (the input quantized per call with
``reduce_range``; the result requantized with the input's parameters, as torch does)."""
from __future__ import annotations

from ember.ao.nn.quantized.modules import conv as nnq_conv
from ember.ops import quantized as Q

__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d",
           "ConvTranspose3d"]


class _DynamicMixin:
    def forward(self, input):
        if input.dim() != self._NDIM + 2:
            raise ValueError(f"Input shape must be `(N, C, {', '.join('DHW'[3 - self._NDIM:])})`!"
                             if self._NDIM > 1 else "Input shape must be `(N, C, L)`!")
        if getattr(self, "padding_mode", "zeros") != "zeros":
            import ember
            pad = [p for p in reversed(self.padding) for _ in range(2)]
            input = ember.nn.functional.pad(input, pad, mode=self.padding_mode)
        kind = "conv_transpose" if self.transposed else "conv"
        op = getattr(Q, f"{kind}{self._NDIM}d_dynamic")
        return op(input, self._packed_params, reduce_range=True)

    def _get_name(self):
        return "DynamicQuantized" + type(self).__name__

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        """From a float convolution with ``qconfig`` (its weight observer; no output
        parameters: scale 1.0, zero point 0)."""
        if type(mod) is not cls._FLOAT_MODULE:
            raise AssertionError(f"nnqd.{cls.__name__}.from_float only works for "
                                 f"{cls._FLOAT_MODULE.__name__}")
        if not hasattr(mod, "qconfig"):
            raise AssertionError("Input float module must have qconfig defined.")
        return cls.get_qconv(mod, None, mod.qconfig.weight())


class Conv1d(_DynamicMixin, nnq_conv.Conv1d):
    """Dynamically quantized 1-d convolution: float32 (N, C, L) -> float32."""


class Conv2d(_DynamicMixin, nnq_conv.Conv2d):
    """Dynamically quantized 2-d convolution: float32 (N, C, H, W) -> float32."""


class Conv3d(_DynamicMixin, nnq_conv.Conv3d):
    """Dynamically quantized 3-d convolution: float32 (N, C, D, H, W) -> float32."""


class ConvTranspose1d(_DynamicMixin, nnq_conv.ConvTranspose1d):
    """Dynamically quantized 1-d transposed convolution."""


class ConvTranspose2d(_DynamicMixin, nnq_conv.ConvTranspose2d):
    """Dynamically quantized 2-d transposed convolution."""


class ConvTranspose3d(_DynamicMixin, nnq_conv.ConvTranspose3d):
    """Dynamically quantized 3-d transposed convolution."""
