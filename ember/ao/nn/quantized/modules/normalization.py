"""Quantized LayerNorm, GroupNorm and InstanceNorm (torch.ao.nn.quantized.modules.
normalization): float affine parameters, output requantized to ``(scale, zero_point)``."""
from __future__ import annotations

import ember
from ember import nn

__all__ = ["LayerNorm", "GroupNorm", "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d"]



def _qparams_buffers(mod, scale, zero_point):
    mod.register_buffer("scale", ember.tensor(scale))
    mod.register_buffer("zero_point", ember.tensor(zero_point))


class LayerNorm(nn.LayerNorm):
    """LayerNorm over the last ``len(normalized_shape)`` dimensions (``quantized::layer_norm``)."""

    def __init__(self, normalized_shape, weight, bias, scale, zero_point, eps=1e-5,
                 elementwise_affine=True, device=None, dtype=None):
        super().__init__(normalized_shape, eps=eps, elementwise_affine=elementwise_affine)
        self.weight = weight
        self.bias = bias
        _qparams_buffers(self, scale, zero_point)

    def forward(self, input):
        return ember.ops.quantized.layer_norm(input, self.normalized_shape, weight=self.weight,
                                 bias=self.bias, eps=self.eps, output_scale=self.scale,
                                 output_zero_point=self.zero_point)

    def _get_name(self):
        return "QuantizedLayerNorm"

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        scale, zero_point = mod.activation_post_process.calculate_qparams()
        return cls(mod.normalized_shape, mod.weight, mod.bias, float(scale), int(zero_point),
                   mod.eps, mod.elementwise_affine)

    @classmethod
    def from_reference(cls, mod, scale, zero_point):
        return cls(mod.normalized_shape, mod.weight, mod.bias, float(scale), int(zero_point),
                   mod.eps, mod.elementwise_affine)


class GroupNorm(nn.GroupNorm):
    """GroupNorm (``quantized::group_norm``)."""
    __constants__ = ["num_groups", "num_channels", "eps", "affine"]

    def __init__(self, num_groups, num_channels, weight, bias, scale, zero_point, eps=1e-5,
                 affine=True, device=None, dtype=None):
        super().__init__(num_groups, num_channels, eps, affine)
        self.weight = weight
        self.bias = bias
        _qparams_buffers(self, scale, zero_point)

    def forward(self, input):
        return ember.ops.quantized.group_norm(input, self.num_groups, self.weight, self.bias, self.eps,
                                 self.scale, self.zero_point)

    def _get_name(self):
        return "QuantizedGroupNorm"

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        scale, zero_point = mod.activation_post_process.calculate_qparams()
        return cls(mod.num_groups, mod.num_channels, mod.weight, mod.bias, float(scale),
                   int(zero_point), mod.eps, mod.affine)


class _InstanceNormMixin:
    def __init__(self, num_features, weight, bias, scale, zero_point, eps=1e-5, momentum=0.1,
                 affine=False, track_running_stats=False, device=None, dtype=None):
        super().__init__(num_features, eps, momentum, affine, track_running_stats)
        self.weight = weight
        self.bias = bias
        _qparams_buffers(self, scale, zero_point)

    def forward(self, input):
        return ember.ops.quantized.instance_norm(input, self.weight, self.bias, self.eps, self.scale,
                                    self.zero_point)

    def _get_name(self):
        return "Quantized" + type(self).__name__

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        scale, zero_point = mod.activation_post_process.calculate_qparams()
        return cls(mod.num_features, mod.weight, mod.bias, float(scale), int(zero_point),
                   mod.eps, mod.affine)

    @classmethod
    def from_reference(cls, mod, scale, zero_point):
        return cls(mod.num_features, mod.weight, mod.bias, float(scale), int(zero_point),
                   mod.eps, mod.affine)


class InstanceNorm1d(_InstanceNormMixin, nn.InstanceNorm1d):
    """InstanceNorm1d (``quantized::instance_norm``)."""


class InstanceNorm2d(_InstanceNormMixin, nn.InstanceNorm2d):
    """InstanceNorm2d (``quantized::instance_norm``)."""


class InstanceNorm3d(_InstanceNormMixin, nn.InstanceNorm3d):
    """InstanceNorm3d (``quantized::instance_norm``)."""
