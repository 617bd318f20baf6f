"""Upsampling layers: ``F.interpolate`` with options fixed at construction.
Input ``(N, C, W)``, ``(N, C, H, W)`` or ``(N, C, D, H, W)``."""
from ember.nn import functional as F
from ember.nn.modules.module import Module

__all__ = ["Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d"]


def _float_factors(scale_factor):
    """``scale_factor`` as a float or a tuple of floats (``None`` when unset or zero)."""
    if isinstance(scale_factor, tuple):
        return tuple(map(float, scale_factor))
    return float(scale_factor) if scale_factor else None


class Upsample(Module):
    """Resize to ``size`` or by ``scale_factor`` (stored as float / tuple of floats)."""
    __constants__ = ["size", "scale_factor", "mode", "align_corners", "name",
                     "recompute_scale_factor"]

    def __init__(self, size=None, scale_factor=None, mode="nearest", align_corners=None,
                 recompute_scale_factor=None):
        super().__init__()
        self.size, self.scale_factor = size, _float_factors(scale_factor)
        self.mode, self.align_corners = mode, align_corners
        self.recompute_scale_factor = recompute_scale_factor
        self.name = type(self).__name__

    def forward(self, input):
        return F.interpolate(input, size=self.size, scale_factor=self.scale_factor,
                             mode=self.mode, align_corners=self.align_corners,
                             recompute_scale_factor=self.recompute_scale_factor)

    def extra_repr(self):
        if self.scale_factor is not None:
            return f"scale_factor={self.scale_factor!r}, mode={self.mode!r}"
        return f"size={self.size!r}, mode={self.mode!r}"


class UpsamplingNearest2d(Upsample):
    """``Upsample(mode='nearest')`` for 4-D input."""

    def __init__(self, size=None, scale_factor=None):
        Upsample.__init__(self, size=size, scale_factor=scale_factor)


class UpsamplingBilinear2d(Upsample):
    """``Upsample(mode='bilinear', align_corners=True)`` for 4-D input."""

    def __init__(self, size=None, scale_factor=None):
        Upsample.__init__(self, size=size, scale_factor=scale_factor, mode="bilinear",
                          align_corners=True)
