"""ember.nn.modules.pixelshuffle (torch.nn.modules.pixelshuffle), ported onto ember."""
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


__all__ = ['PixelShuffle', 'PixelUnshuffle']

class PixelShuffle(Module):
    __constants__ = ['upscale_factor']

    def __init__(self, upscale_factor):
        super().__init__()
        self.upscale_factor = upscale_factor

    def forward(self, input):
        return F.pixel_shuffle(input, self.upscale_factor)

    def extra_repr(self):
        return f'upscale_factor={self.upscale_factor}'

class PixelUnshuffle(Module):
    __constants__ = ['downscale_factor']

    def __init__(self, downscale_factor):
        super().__init__()
        self.downscale_factor = downscale_factor

    def forward(self, input):
        return F.pixel_unshuffle(input, self.downscale_factor)

    def extra_repr(self):
        return f'downscale_factor={self.downscale_factor}'
