"""ember.nn.modules.upsampling (torch.nn.modules.upsampling), ported onto ember."""
import math
import collections
from itertools import repeat
from collections.abc import Sequence
import ember as torch
from ember import Tensor
from ember.nn import functional as F, init
from ember.nn.modules.module import Module
try:
    from ember.nn.parameter import Parameter, UninitializedParameter
except ImportError:  # pragma: no cover
    pass


def _ntuple(n, name="parse"):
    def parse(x):
        if isinstance(x, collections.abc.Iterable):
            return tuple(x)
        return tuple(repeat(x, n))
    parse.__name__ = name
    return parse


_single = _ntuple(1, "_single")
_pair = _ntuple(2, "_pair")
_triple = _ntuple(3, "_triple")
_quadruple = _ntuple(4, "_quadruple")


def _reverse_repeat_tuple(t, n):
    return tuple(x for x in reversed(t) for _ in range(n))


__all__ = ['Upsample', 'UpsamplingNearest2d', 'UpsamplingBilinear2d']

class Upsample(Module):
    __constants__ = ['size', 'scale_factor', 'mode', 'align_corners', 'name', 'recompute_scale_factor']

    def __init__(self, size=None, scale_factor=None, mode='nearest', align_corners=None, recompute_scale_factor=None):
        super().__init__()
        self.name = type(self).__name__
        self.size = size
        if isinstance(scale_factor, tuple):
            self.scale_factor = tuple((float(factor) for factor in scale_factor))
        else:
            self.scale_factor = float(scale_factor) if scale_factor else None
        self.mode = mode
        self.align_corners = align_corners
        self.recompute_scale_factor = recompute_scale_factor

    def forward(self, input):
        return F.interpolate(input, self.size, self.scale_factor, self.mode, self.align_corners, recompute_scale_factor=self.recompute_scale_factor)

    def __setstate__(self, state):
        if 'recompute_scale_factor' not in state:
            state['recompute_scale_factor'] = True
        super().__setstate__(state)

    def extra_repr(self):
        if self.scale_factor is not None:
            info = 'scale_factor=' + repr(self.scale_factor)
        else:
            info = 'size=' + repr(self.size)
        info += ', mode=' + repr(self.mode)
        return info

class UpsamplingNearest2d(Upsample):

    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode='nearest')

class UpsamplingBilinear2d(Upsample):

    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode='bilinear', align_corners=True)
