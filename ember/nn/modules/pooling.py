"""Pooling over 1, 2 or 3 spatial dims: input ``(N, C, *S)`` or unbatched ``(C, *S)``.
Each family has one base holding the options; the per-dimension classes set ``_dim`` and
``_pool``, their functional (a static method, so ``jit.script`` resolves it)."""
from typing import List, Optional

from ember.nn import functional as F
from ember.nn.modules.module import Module
from ember.nn.modules.utils import _ntuple, _single

__all__ = ["MaxPool1d", "MaxPool2d", "MaxPool3d", "MaxUnpool1d", "MaxUnpool2d",
           "MaxUnpool3d", "AvgPool1d", "AvgPool2d", "AvgPool3d", "LPPool1d", "LPPool2d",
           "LPPool3d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "AdaptiveMaxPool3d",
           "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveAvgPool3d",
           "FractionalMaxPool2d", "FractionalMaxPool3d"]


class _MaxPoolNd(Module):
    """Maximum over each window; ``return_indices`` also returns the argmax positions
    (the input to ``MaxUnpool``)."""
    __constants__ = ["kernel_size", "stride", "padding", "dilation", "return_indices",
                     "ceil_mode"]

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1,
                 return_indices=False, ceil_mode=False):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = kernel_size if stride is None else stride
        self.padding, self.dilation = padding, dilation
        self.return_indices, self.ceil_mode = return_indices, ceil_mode

    def forward(self, input):
        return self._pool(input, self.kernel_size, self.stride, self.padding,
                                     self.dilation, ceil_mode=self.ceil_mode,
                                     return_indices=self.return_indices)

    def extra_repr(self):
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, "
                f"padding={self.padding}, dilation={self.dilation}, "
                f"ceil_mode={self.ceil_mode}")


class MaxPool1d(_MaxPoolNd):
    _dim = 1
    _pool = staticmethod(F.max_pool1d)


class MaxPool2d(_MaxPoolNd):
    _dim = 2
    _pool = staticmethod(F.max_pool2d)


class MaxPool3d(_MaxPoolNd):
    _dim = 3
    _pool = staticmethod(F.max_pool3d)


class _MaxUnpoolNd(Module):
    """Partial inverse of ``MaxPool``: scatter values to the recorded ``indices`` and
    zero-fill the rest; ``output_size`` resolves ambiguous sizes."""

    def __init__(self, kernel_size, stride=None, padding=0):
        super().__init__()
        tup = _ntuple(self._dim)
        self.kernel_size = tup(kernel_size)
        self.stride = tup(kernel_size if stride is None else stride)
        self.padding = tup(padding)

    def forward(self, input, indices, output_size: Optional[List[int]] = None):
        return self._pool(input, indices, self.kernel_size, self.stride,
                                       self.padding, output_size)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnpool1d(_MaxUnpoolNd):
    _dim = 1
    _pool = staticmethod(F.max_unpool1d)


class MaxUnpool2d(_MaxUnpoolNd):
    _dim = 2
    _pool = staticmethod(F.max_unpool2d)


class MaxUnpool3d(_MaxUnpoolNd):
    _dim = 3
    _pool = staticmethod(F.max_unpool3d)


class _AvgPoolNd(Module):
    """Mean over each window; ``count_include_pad`` counts padded zeros in the divisor,
    ``divisor_override`` (2-D/3-D only) replaces it."""
    __constants__ = ["kernel_size", "stride", "padding", "ceil_mode", "count_include_pad",
                     "divisor_override"]

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False,
                 count_include_pad=True, divisor_override=None):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = kernel_size if stride is None else stride
        self.padding, self.ceil_mode = padding, ceil_mode
        self.count_include_pad = count_include_pad
        self.divisor_override = divisor_override

    def forward(self, input):
        args = (self.kernel_size, self.stride, self.padding, self.ceil_mode,
                self.count_include_pad)
        if self._dim > 1:
            args += (self.divisor_override,)
        return self._pool(input, *args)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool1d(_AvgPoolNd):
    """Stores its sizes as 1-tuples; takes no ``divisor_override``."""
    __constants__ = ["kernel_size", "stride", "padding", "ceil_mode", "count_include_pad"]
    _dim = 1
    _pool = staticmethod(F.avg_pool1d)

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False,
                 count_include_pad=True):
        super().__init__(_single(kernel_size), _single(kernel_size if stride is None else stride),
                         _single(padding), ceil_mode, count_include_pad)
        del self.divisor_override


class AvgPool2d(_AvgPoolNd):
    _dim = 2
    _pool = staticmethod(F.avg_pool2d)


class AvgPool3d(_AvgPoolNd):
    _dim = 3
    _pool = staticmethod(F.avg_pool3d)


class _LPPoolNd(Module):
    """Power-average pooling: ``(sum x^p)^(1/p)`` over each window (``p = norm_type``)."""
    __constants__ = ["norm_type", "kernel_size", "stride", "ceil_mode"]

    def __init__(self, norm_type, kernel_size, stride=None, ceil_mode=False):
        super().__init__()
        self.norm_type, self.kernel_size = norm_type, kernel_size
        self.stride, self.ceil_mode = stride, ceil_mode

    def forward(self, input):
        return self._pool(input, float(self.norm_type), self.kernel_size,
                                    self.stride, self.ceil_mode)

    def extra_repr(self):
        return (f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, "
                f"stride={self.stride}, ceil_mode={self.ceil_mode}")


class LPPool1d(_LPPoolNd):
    _dim = 1
    _pool = staticmethod(F.lp_pool1d)


class LPPool2d(_LPPoolNd):
    _dim = 2
    _pool = staticmethod(F.lp_pool2d)


class LPPool3d(_LPPoolNd):
    _dim = 3
    _pool = staticmethod(F.lp_pool3d)


class _AdaptiveMaxPoolNd(Module):
    """Max pooling to a fixed ``output_size`` (``None`` entries keep the input size)."""
    __constants__ = ["output_size", "return_indices"]

    def __init__(self, output_size, return_indices=False):
        super().__init__()
        self.output_size, self.return_indices = output_size, return_indices

    def forward(self, input):
        return self._pool(input, self.output_size, self.return_indices)

    def extra_repr(self):
        return f"output_size={self.output_size}"


class AdaptiveMaxPool1d(_AdaptiveMaxPoolNd):
    _dim = 1
    _pool = staticmethod(F.adaptive_max_pool1d)


class AdaptiveMaxPool2d(_AdaptiveMaxPoolNd):
    _dim = 2
    _pool = staticmethod(F.adaptive_max_pool2d)


class AdaptiveMaxPool3d(_AdaptiveMaxPoolNd):
    _dim = 3
    _pool = staticmethod(F.adaptive_max_pool3d)


class _AdaptiveAvgPoolNd(Module):
    """Average pooling to a fixed ``output_size`` (``None`` entries keep the input size)."""
    __constants__ = ["output_size"]

    def __init__(self, output_size):
        super().__init__()
        self.output_size = output_size

    def forward(self, input):
        return self._pool(input, self.output_size)

    def extra_repr(self):
        return f"output_size={self.output_size}"


class AdaptiveAvgPool1d(_AdaptiveAvgPoolNd):
    _dim = 1
    _pool = staticmethod(F.adaptive_avg_pool1d)


class AdaptiveAvgPool2d(_AdaptiveAvgPoolNd):
    _dim = 2
    _pool = staticmethod(F.adaptive_avg_pool2d)


class AdaptiveAvgPool3d(_AdaptiveAvgPoolNd):
    _dim = 3
    _pool = staticmethod(F.adaptive_avg_pool3d)


class _FractionalMaxPoolNd(Module):
    """Max pooling over pseudo-randomly placed windows (Graham, 2014) to ``output_size`` or
    ``output_ratio`` of the input; ``_random_samples`` (a buffer) fixes the placement."""
    __constants__ = ["kernel_size", "return_indices", "output_size", "output_ratio"]

    def __init__(self, kernel_size, output_size=None, output_ratio=None,
                 return_indices=False, _random_samples=None):
        super().__init__()
        tup = _ntuple(self._dim)
        self.kernel_size = tup(kernel_size)
        self.return_indices = return_indices
        self.register_buffer("_random_samples", _random_samples)
        self.output_size = tup(output_size) if output_size is not None else None
        self.output_ratio = tup(output_ratio) if output_ratio is not None else None
        if output_size is None and output_ratio is None:
            raise ValueError(f"{type(self).__name__} requires specifying either an output "
                             f"size, or a pooling ratio")
        if output_size is not None and output_ratio is not None:
            raise ValueError("only one of output_size and output_ratio may be specified")
        if self.output_ratio is not None and not all(0 < r < 1 for r in self.output_ratio):
            raise ValueError(f"output_ratio must be between 0 and 1 (got {output_ratio})")

    def forward(self, input):
        return self._pool(
            input, self.kernel_size, self.output_size, self.output_ratio, self.return_indices,
            _random_samples=self._random_samples)


class FractionalMaxPool2d(_FractionalMaxPoolNd):
    _dim = 2
    _pool = staticmethod(F.fractional_max_pool2d)


class FractionalMaxPool3d(_FractionalMaxPoolNd):
    _dim = 3
    _pool = staticmethod(F.fractional_max_pool3d)
