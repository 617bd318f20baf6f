"""ember.nn.modules.fold (torch.nn.modules.fold), ported onto ember."""
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


__all__ = ['Fold', 'Unfold']

class Fold(Module):
    __constants__ = ['output_size', 'kernel_size', 'dilation', 'padding', 'stride']

    def __init__(self, output_size, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.output_size = output_size
        self.kernel_size = kernel_size
        self.dilation = dilation
        self.padding = padding
        self.stride = stride

    def forward(self, input):
        return F.fold(input, self.output_size, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self):
        return 'output_size={output_size}, kernel_size={kernel_size}, dilation={dilation}, padding={padding}, stride={stride}'.format(**self.__dict__)

class Unfold(Module):
    __constants__ = ['kernel_size', 'dilation', 'padding', 'stride']

    def __init__(self, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.kernel_size = kernel_size
        self.dilation = dilation
        self.padding = padding
        self.stride = stride

    def forward(self, input):
        return F.unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self):
        return 'kernel_size={kernel_size}, dilation={dilation}, padding={padding}, stride={stride}'.format(**self.__dict__)
