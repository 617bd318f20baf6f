"""Padding layers over the last 1, 2 or 3 dims. ``padding`` is an int (all sides) or a
``2 * dim`` tuple ordered like ``F.pad``: (last-dim before, last-dim after, ...)."""
from ember.nn import functional as F
from ember.nn.modules.module import Module
from ember.nn.modules.utils import _ntuple

__all__ = ["CircularPad1d", "CircularPad2d", "CircularPad3d", "ConstantPad1d",
           "ConstantPad2d", "ConstantPad3d", "ReflectionPad1d", "ReflectionPad2d",
           "ReflectionPad3d", "ReplicationPad1d", "ReplicationPad2d", "ReplicationPad3d",
           "ZeroPad1d", "ZeroPad2d", "ZeroPad3d"]


class _PadNd(Module):
    """``F.pad(input, padding, _mode)``; subclasses set ``_dim`` and ``_mode``."""
    __constants__ = ["padding"]
    _check_dims = False

    def __init__(self, padding):
        super().__init__()
        self.padding = _ntuple(2 * self._dim)(padding)

    def forward(self, input):
        if self._check_dims and input.dim() not in (self._dim + 1, self._dim + 2):
            raise ValueError(f"expected {self._dim + 1}D or {self._dim + 2}D input "
                             f"(got {input.dim()}D input)")
        return F.pad(input, self.padding, self._mode)

    def extra_repr(self):
        return f"{self.padding}"


class _CircularPadNd(_PadNd):
    """Wrap around: the input is treated as periodic."""
    _mode, _check_dims = "circular", True


class CircularPad1d(_CircularPadNd):
    _dim = 1


class CircularPad2d(_CircularPadNd):
    _dim = 2


class CircularPad3d(_CircularPadNd):
    _dim = 3


class _ReflectionPadNd(_PadNd):
    """Mirror the input about its edge (the edge itself is not repeated)."""
    _mode = "reflect"


class ReflectionPad1d(_ReflectionPadNd):
    _dim = 1


class ReflectionPad2d(_ReflectionPadNd):
    _dim = 2


class ReflectionPad3d(_ReflectionPadNd):
    _dim = 3


class _ReplicationPadNd(_PadNd):
    """Repeat the edge values."""
    _mode = "replicate"


class ReplicationPad1d(_ReplicationPadNd):
    _dim = 1


class ReplicationPad2d(_ReplicationPadNd):
    _dim = 2


class ReplicationPad3d(_ReplicationPadNd):
    _dim = 3


class _ConstantPadNd(_PadNd):
    """Fill with ``value``."""
    __constants__ = ["padding", "value"]
    _mode = "constant"

    def __init__(self, padding, value):
        super().__init__(padding)
        self.value = value

    def forward(self, input):
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self):
        return f"padding={self.padding}, value={self.value}"


class ConstantPad1d(_ConstantPadNd):
    _dim = 1


class ConstantPad2d(_ConstantPadNd):
    _dim = 2


class ConstantPad3d(_ConstantPadNd):
    _dim = 3


class _ZeroPad:
    """Constant padding with 0.0 (mixed in before a ``ConstantPad{d}d``)."""

    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"


class ZeroPad1d(_ZeroPad, ConstantPad1d):
    pass


class ZeroPad2d(_ZeroPad, ConstantPad2d):
    pass


class ZeroPad3d(_ZeroPad, ConstantPad3d):
    pass
