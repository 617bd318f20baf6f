"""Quantized batch norm: a quantized ``(N, C, H, W)`` (2d) or ``(N, C, D, H, W)`` (3d)
input normalized with the running statistics, the result requantized to the module's
``(scale, zero_point)`` buffers (``ember.ops.quantized.batch_norm2d/3d``)."""
from __future__ import annotations

import ember
from ember.nn.modules.batchnorm import _BatchNorm as _FloatBatchNorm

__all__ = ["BatchNorm2d", "BatchNorm3d"]

_STATE = ("weight", "bias", "running_mean", "running_var")


class _BatchNorm(_FloatBatchNorm):
    """Shared body; subclasses name their rank (``_NDIM``), shape text and kernel."""
    _NDIM, _SHAPE, _KERNEL = 4, "(N, C, H, W)", "batch_norm2d"

    def __init__(self, num_features, eps=1e-5, momentum=0.1, device=None, dtype=None):
        super().__init__(num_features, eps, momentum, affine=True,
                         track_running_stats=True)
        self.register_buffer("scale", ember.tensor(1.0))
        self.register_buffer("zero_point", ember.tensor(0))

    def _get_name(self):
        return f"Quantized{type(self).__name__}"

    def forward(self, input):
        if input.dim() != self._NDIM:
            raise ValueError(f"Input shape must be `{self._SHAPE}`!")
        kernel = getattr(ember.ops.quantized, self._KERNEL)
        return kernel(input, *(getattr(self, name) for name in _STATE), self.eps,
                      self.scale, self.zero_point)

    @classmethod
    def _carrying(cls, float_bn, scale, zero_point, *extra):
        """A quantized copy sharing ``float_bn``'s affine parameters and statistics."""
        qbn = cls(float_bn.num_features, float_bn.eps, *extra)
        for name in _STATE:
            setattr(qbn, name, getattr(float_bn, name))
        qbn.scale, qbn.zero_point = scale, zero_point
        return qbn

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        """From an observed float batch norm, or a fused BN+ReLU (its first child)."""
        qparams = mod.activation_post_process.calculate_qparams()
        bn = mod[0] if isinstance(mod, ember.nn.Sequential) else mod
        return cls._carrying(bn, *qparams)

    @classmethod
    def from_reference(cls, bn, output_scale, output_zero_point):
        return cls._carrying(bn, output_scale, output_zero_point, bn.momentum)


class BatchNorm2d(_BatchNorm):
    """Quantized BatchNorm2d over ``(N, C, H, W)``."""


class BatchNorm3d(_BatchNorm):
    """Quantized BatchNorm3d over ``(N, C, D, H, W)``."""
    _NDIM, _SHAPE, _KERNEL = 5, "(N, C, D, H, W)", "batch_norm3d"
