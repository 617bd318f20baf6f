"""Quantized LayerNorm, GroupNorm and InstanceNorm1d/2d/3d. The float affine parameters are
shared with the float module; the normalized output is requantized onto the grid its
observer saw (``scale`` / ``zero_point`` buffers, see ``Requantizing``). Shapes as the
float modules: LayerNorm ``(*, *normalized_shape)``, the others ``(N, C, *)``."""
from __future__ import annotations

import ember
from ember import nn
from ember.ao.nn.quantized.modules.utils import Requantizing, _qparam_buffers

__all__ = ["LayerNorm", "GroupNorm", "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d"]

_q = ember.ops.quantized


class _QuantizedNorm(Requantizing):
    """Constructors take ``(*_LEAD, weight, bias, scale, zero_point, *_TAIL)``; rebuilding
    from a float module reads those config names off it."""
    _LEAD, _TAIL = (), ()

    def _adopt(self, weight, bias, scale, zero_point):
        self.weight, self.bias = weight, bias
        _qparam_buffers(self, scale, zero_point)

    @classmethod
    def _rebuild(cls, mod, scale, zero_point):
        lead = [getattr(mod, name) for name in cls._LEAD]
        tail = [getattr(mod, name) for name in cls._TAIL]
        return (*lead, mod.weight, mod.bias, scale, zero_point, *tail)

    def _requant(self):
        return {"output_scale": self.scale, "output_zero_point": self.zero_point}


class LayerNorm(_QuantizedNorm, nn.LayerNorm):
    """LayerNorm over the trailing ``normalized_shape`` dims."""
    _LEAD, _TAIL = ("normalized_shape",), ("eps", "elementwise_affine")

    def __init__(self, normalized_shape, weight, bias, scale, zero_point,
                 eps=1e-5, elementwise_affine=True, device=None, dtype=None):
        nn.LayerNorm.__init__(self, normalized_shape, eps=eps,
                              elementwise_affine=elementwise_affine)
        self._adopt(weight, bias, scale, zero_point)

    def forward(self, input):
        return _q.layer_norm(input, self.normalized_shape, weight=self.weight,
                             bias=self.bias, eps=self.eps, **self._requant())


class GroupNorm(_QuantizedNorm, nn.GroupNorm):
    """GroupNorm: ``num_channels`` split into ``num_groups`` normalized groups."""
    __constants__ = ["num_groups", "num_channels", "eps", "affine"]
    _LEAD, _TAIL = ("num_groups", "num_channels"), ("eps", "affine")

    def __init__(self, num_groups, num_channels, weight, bias, scale,
                 zero_point, eps=1e-5, affine=True, device=None, dtype=None):
        nn.GroupNorm.__init__(self, num_groups, num_channels, eps=eps, affine=affine)
        self._adopt(weight, bias, scale, zero_point)

    def forward(self, input):
        groups, eps = self.num_groups, self.eps
        return _q.group_norm(input, groups, self.weight, self.bias, eps,
                             self.scale, self.zero_point)


class _InstanceNorm(_QuantizedNorm):
    """Per-sample, per-channel normalization over the spatial dims."""
    _LEAD, _TAIL = ("num_features",), ("eps", "affine")

    def __init__(self, num_features, weight, bias, scale, zero_point,
                 eps=1e-5, momentum=0.1, affine=False,
                 track_running_stats=False, device=None, dtype=None):
        # the mixins define no __init__: this reaches the nn.InstanceNormNd base
        super().__init__(num_features, eps=eps, momentum=momentum, affine=affine,
                         track_running_stats=track_running_stats)
        self._adopt(weight, bias, scale, zero_point)

    def forward(self, input):
        eps = self.eps
        return _q.instance_norm(input, self.weight, self.bias, eps,
                                self.scale, self.zero_point)


class InstanceNorm1d(_InstanceNorm, nn.InstanceNorm1d):
    """InstanceNorm1d over ``(N, C, L)``."""


class InstanceNorm2d(_InstanceNorm, nn.InstanceNorm2d):
    """InstanceNorm2d over ``(N, C, H, W)``."""


class InstanceNorm3d(_InstanceNorm, nn.InstanceNorm3d):
    """InstanceNorm3d over ``(N, C, D, H, W)``."""
