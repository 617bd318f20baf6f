"""Quantized LayerNorm, GroupNorm and InstanceNorm (torch.ao.nn.quantized.modules.
normalization): float affine parameters shared with the float module, the output put on the
grid its observer saw (``Requantizing``; ``scale``/``zero_point`` buffers)."""
from __future__ import annotations

import ember
from ember import nn
from ember.ao.nn.quantized.modules.utils import Requantizing, _qparam_buffers

__all__ = ["LayerNorm", "GroupNorm", "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d"]


def _share_affine(mod, weight, bias, scale, zero_point):
    mod.weight, mod.bias = weight, bias
    _qparam_buffers(mod, scale, zero_point)


class LayerNorm(Requantizing, nn.LayerNorm):
    """LayerNorm over the last ``len(normalized_shape)`` dims (``quantized::layer_norm``)."""

    def __init__(self, normalized_shape, weight, bias, scale, zero_point, eps=1e-5,
                 elementwise_affine=True, device=None, dtype=None):
        super().__init__(normalized_shape, eps=eps, elementwise_affine=elementwise_affine)
        _share_affine(self, weight, bias, scale, zero_point)

    def forward(self, input):
        return ember.ops.quantized.layer_norm(
            input, self.normalized_shape, weight=self.weight, bias=self.bias, eps=self.eps,
            output_scale=self.scale, output_zero_point=self.zero_point)

    @classmethod
    def _rebuild(cls, mod, scale, zero_point):
        return (mod.normalized_shape, mod.weight, mod.bias, scale, zero_point, mod.eps,
                mod.elementwise_affine)


class GroupNorm(Requantizing, nn.GroupNorm):
    """GroupNorm (``quantized::group_norm``)."""
    __constants__ = ["num_groups", "num_channels", "eps", "affine"]

    def __init__(self, num_groups, num_channels, weight, bias, scale, zero_point, eps=1e-5,
                 affine=True, device=None, dtype=None):
        super().__init__(num_groups, num_channels, eps, affine)
        _share_affine(self, weight, bias, scale, zero_point)

    def forward(self, input):
        return ember.ops.quantized.group_norm(input, self.num_groups, self.weight, self.bias,
                                              self.eps, self.scale, self.zero_point)

    @classmethod
    def _rebuild(cls, mod, scale, zero_point):
        return (mod.num_groups, mod.num_channels, mod.weight, mod.bias, scale, zero_point,
                mod.eps, mod.affine)


class _InstanceNorm(Requantizing):
    def __init__(self, num_features, weight, bias, scale, zero_point, eps=1e-5, momentum=0.1,
                 affine=False, track_running_stats=False, device=None, dtype=None):
        super().__init__(num_features, eps, momentum, affine, track_running_stats)
        _share_affine(self, weight, bias, scale, zero_point)

    def forward(self, input):
        return ember.ops.quantized.instance_norm(input, self.weight, self.bias, self.eps,
                                                 self.scale, self.zero_point)

    @classmethod
    def _rebuild(cls, mod, scale, zero_point):
        return (mod.num_features, mod.weight, mod.bias, scale, zero_point, mod.eps,
                mod.affine)


class InstanceNorm1d(_InstanceNorm, nn.InstanceNorm1d):
    """InstanceNorm1d (``quantized::instance_norm``)."""


class InstanceNorm2d(_InstanceNorm, nn.InstanceNorm2d):
    """InstanceNorm2d (``quantized::instance_norm``)."""


class InstanceNorm3d(_InstanceNorm, nn.InstanceNorm3d):
    """InstanceNorm3d (``quantized::instance_norm``)."""
