"""Quantized batch norm (torch.ao.nn.quantized.modules.batchnorm): normalizes a quantized
``(N, C, H, W)`` / ``(N, C, D, H, W)`` tensor with the running statistics and requantizes
to ``(scale, zero_point)`` (``quantized::batch_norm2d/3d``)."""
from __future__ import annotations

import ember
from ember.nn.modules.batchnorm import _BatchNorm as _FloatBatchNorm

__all__ = ["BatchNorm2d", "BatchNorm3d"]


class _BatchNorm(_FloatBatchNorm):
    _NDIM = 4
    _SHAPE = "(N, C, H, W)"

    def __init__(self, num_features, eps=1e-5, momentum=0.1, device=None, dtype=None):
        super().__init__(num_features, eps, momentum, True, True)
        self.register_buffer("scale", ember.tensor(1.0))
        self.register_buffer("zero_point", ember.tensor(0))

    def _get_name(self):
        return "Quantized" + type(self).__name__

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        """From an observed float batch norm (or a fused BNReLU: its batch norm)."""
        activation_post_process = mod.activation_post_process
        if isinstance(mod, ember.nn.Sequential):          # BNReLU2d/3d
            mod = mod[0]
        scale, zero_point = activation_post_process.calculate_qparams()
        new_mod = cls(mod.num_features, mod.eps)
        new_mod.weight = mod.weight
        new_mod.bias = mod.bias
        new_mod.running_mean = mod.running_mean
        new_mod.running_var = mod.running_var
        new_mod.scale = scale
        new_mod.zero_point = zero_point
        return new_mod

    @classmethod
    def from_reference(cls, bn, output_scale, output_zero_point):
        qbn = cls(bn.num_features, bn.eps, bn.momentum)
        qbn.weight = bn.weight
        qbn.bias = bn.bias
        qbn.running_mean = bn.running_mean
        qbn.running_var = bn.running_var
        qbn.scale = output_scale
        qbn.zero_point = output_zero_point
        return qbn


class BatchNorm2d(_BatchNorm):
    """Quantized BatchNorm2d over ``(N, C, H, W)``."""

    def forward(self, input):
        if input.dim() != 4:
            raise ValueError("Input shape must be `(N, C, H, W)`!")
        return ember.ops.quantized.batch_norm2d(input, self.weight, self.bias,
                                                self.running_mean, self.running_var, self.eps,
                                                self.scale, self.zero_point)


class BatchNorm3d(_BatchNorm):
    """Quantized BatchNorm3d over ``(N, C, D, H, W)``."""
    _NDIM = 5
    _SHAPE = "(N, C, D, H, W)"

    def forward(self, input):
        if input.dim() != 5:
            raise ValueError("Input shape must be `(N, C, D, H, W)`!")
        return ember.ops.quantized.batch_norm3d(input, self.weight, self.bias,
                                                self.running_mean, self.running_var, self.eps,
                                                self.scale, self.zero_point)
