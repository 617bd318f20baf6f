"""ember.nn.modules.padding (torch.nn.modules.padding), ported onto ember."""
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


__all__ = ['CircularPad1d', 'CircularPad2d', 'CircularPad3d', 'ConstantPad1d', 'ConstantPad2d', 'ConstantPad3d', 'ReflectionPad1d', 'ReflectionPad2d', 'ReflectionPad3d', 'ReplicationPad1d', 'ReplicationPad2d', 'ReplicationPad3d', 'ZeroPad1d', 'ZeroPad2d', 'ZeroPad3d']

class _CircularPadNd(Module):
    __constants__ = ['padding']

    def _check_input_dim(self, input):
        raise NotImplementedError

    def forward(self, input):
        self._check_input_dim(input)
        return F.pad(input, self.padding, 'circular')

    def extra_repr(self):
        return f'{self.padding}'

class CircularPad1d(_CircularPadNd):

    def __init__(self, padding):
        super().__init__()
        self.padding = _pair(padding)

    def _check_input_dim(self, input):
        if input.dim() != 2 and input.dim() != 3:
            raise ValueError(f'expected 2D or 3D input (got {input.dim()}D input)')

class CircularPad2d(_CircularPadNd):

    def __init__(self, padding):
        super().__init__()
        self.padding = _quadruple(padding)

    def _check_input_dim(self, input):
        if input.dim() != 3 and input.dim() != 4:
            raise ValueError(f'expected 3D or 4D input (got {input.dim()}D input)')

class CircularPad3d(_CircularPadNd):

    def __init__(self, padding):
        super().__init__()
        self.padding = _ntuple(6)(padding)

    def _check_input_dim(self, input):
        if input.dim() != 4 and input.dim() != 5:
            raise ValueError(f'expected 4D or 5D input (got {input.dim()}D input)')

class _ConstantPadNd(Module):
    __constants__ = ['padding', 'value']

    def __init__(self, value):
        super().__init__()
        self.value = value

    def forward(self, input):
        return F.pad(input, self.padding, 'constant', self.value)

    def extra_repr(self):
        return f'padding={self.padding}, value={self.value}'

class ConstantPad1d(_ConstantPadNd):

    def __init__(self, padding, value):
        super().__init__(value)
        self.padding = _pair(padding)

class ConstantPad2d(_ConstantPadNd):
    __constants__ = ['padding', 'value']

    def __init__(self, padding, value):
        super().__init__(value)
        self.padding = _quadruple(padding)

class ConstantPad3d(_ConstantPadNd):

    def __init__(self, padding, value):
        super().__init__(value)
        self.padding = _ntuple(6)(padding)

class _ReflectionPadNd(Module):
    __constants__ = ['padding']

    def forward(self, input):
        return F.pad(input, self.padding, 'reflect')

    def extra_repr(self):
        return f'{self.padding}'

class ReflectionPad1d(_ReflectionPadNd):

    def __init__(self, padding):
        super().__init__()
        self.padding = _pair(padding)

class ReflectionPad2d(_ReflectionPadNd):

    def __init__(self, padding):
        super().__init__()
        self.padding = _quadruple(padding)

class ReflectionPad3d(_ReflectionPadNd):

    def __init__(self, padding):
        super().__init__()
        self.padding = _ntuple(6)(padding)

class _ReplicationPadNd(Module):
    __constants__ = ['padding']

    def forward(self, input):
        return F.pad(input, self.padding, 'replicate')

    def extra_repr(self):
        return f'{self.padding}'

class ReplicationPad1d(_ReplicationPadNd):

    def __init__(self, padding):
        super().__init__()
        self.padding = _pair(padding)

class ReplicationPad2d(_ReplicationPadNd):

    def __init__(self, padding):
        super().__init__()
        self.padding = _quadruple(padding)

class ReplicationPad3d(_ReplicationPadNd):

    def __init__(self, padding):
        super().__init__()
        self.padding = _ntuple(6)(padding)

class ZeroPad1d(ConstantPad1d):

    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f'{self.padding}'

class ZeroPad2d(ConstantPad2d):

    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f'{self.padding}'

class ZeroPad3d(ConstantPad3d):

    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f'{self.padding}'
