"""Convolutions over 1, 2 or 3 spatial dims and their transposes. Input ``(N, C_in, *S)``
or unbatched ``(C_in, *S)``; output ``(N, C_out, *S')``. Weight ``(C_out, C_in/groups, *k)``
(transposed: ``(C_in, C_out/groups, *k)``), drawn like ``Linear``'s."""
import math
from typing import List, Optional

import ember
from ember import Tensor
from ember.nn import functional as F, init
from ember.nn.parameter import Parameter, UninitializedParameter
from ember.nn.modules.lazy import LazyModuleMixin
from ember.nn.modules.linear import _uniform_by_fan_in
from ember.nn.modules.module import Module
from ember.nn.modules.utils import _ntuple

__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d",
           "ConvTranspose3d", "LazyConv1d", "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d",
           "LazyConvTranspose2d", "LazyConvTranspose3d"]

_PADDING_MODES = {"zeros", "reflect", "replicate", "circular"}


class _ConvNd(Module):
    """Convolution over ``_dim`` spatial dims; subclasses set ``_dim`` and ``_conv`` (their
    functional, a static method so that ``jit.script`` resolves it)."""
    __constants__ = ["stride", "padding", "dilation", "groups", "padding_mode",
                     "output_padding", "in_channels", "out_channels", "kernel_size"]
    _dim = None
    _transposed = False

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 dilation=1, groups=1, bias=True, padding_mode="zeros", device=None,
                 dtype=None):
        super().__init__()
        self._setup(in_channels, out_channels, kernel_size, stride, padding, dilation, 0,
                    groups, bias, padding_mode, device, dtype)

    def _setup(self, in_channels, out_channels, kernel_size, stride, padding, dilation,
               output_padding, groups, bias, padding_mode, device, dtype):
        tup = _ntuple(self._dim)
        stride = tup(stride)
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        for what, n in (("in_channels", in_channels), ("out_channels", out_channels)):
            if n % groups:
                raise ValueError(f"{what} must be divisible by groups")
        if isinstance(padding, str):
            if padding not in ("same", "valid"):
                raise ValueError(f"Invalid padding string {padding!r}, should be one of "
                                 f"{ {'same', 'valid'} }")
            if padding == "same" and any(s != 1 for s in stride):
                raise ValueError("padding='same' is not supported for strided convolutions")
        else:
            padding = tup(padding)
        if padding_mode not in _PADDING_MODES:
            raise ValueError(f"padding_mode must be one of {_PADDING_MODES}, but got "
                             f"padding_mode='{padding_mode}'")
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size, self.stride, self.padding = tup(kernel_size), stride, padding
        self.dilation, self.transposed = tup(dilation), self._transposed
        self.output_padding, self.groups = tup(output_padding), groups
        self.padding_mode = padding_mode
        self._reversed_padding_repeated_twice = self._explicit_padding()
        if self._transposed:
            shape = (in_channels, out_channels // groups, *self.kernel_size)
        else:
            shape = (out_channels, in_channels // groups, *self.kernel_size)
        self.weight = Parameter(ember.empty(shape, device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(ember.empty(out_channels, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def _explicit_padding(self):
        """``F.pad``-ordered amounts (last dim first, before/after) for non-zero modes."""
        if self.padding == "valid":
            return [0, 0] * self._dim
        if self.padding == "same":
            amounts = []
            for d, k in zip(reversed(self.dilation), reversed(self.kernel_size)):
                total = d * (k - 1)
                amounts += [total // 2, total - total // 2]
            return amounts
        return tuple(p for p in reversed(self.padding) for _ in range(2))

    def reset_parameters(self):
        # kaiming_uniform_ with a=sqrt(5) gives the bound 1/sqrt(fan_in) (drawn as torch does)
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        _uniform_by_fan_in(self.bias, self.weight[0].numel() if len(self.weight) else 0)

    def _conv_forward(self, input: Tensor, weight: Tensor, bias: Optional[Tensor]):
        if self.padding_mode != "zeros":
            input = F.pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode)
            return self._conv(input, weight, bias, self.stride, [0] * self._dim, self.dilation,
                              self.groups)
        return self._conv(input, weight, bias, self.stride, self.padding, self.dilation,
                          self.groups)

    def forward(self, input):
        return self._conv_forward(input, self.weight, self.bias)

    def extra_repr(self):
        s = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
             f"stride={self.stride}")
        optional = (("padding", self.padding, (0,) * len(self.padding)),
                    ("dilation", self.dilation, (1,) * self._dim),
                    ("output_padding", self.output_padding, (0,) * self._dim),
                    ("groups", self.groups, 1))
        s += "".join(f", {k}={v}" for k, v, default in optional if v != default)
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s


class Conv1d(_ConvNd):
    """Input ``(N, C_in, L)`` or ``(C_in, L)``."""
    _dim = 1
    _conv = staticmethod(F.conv1d)


class Conv2d(_ConvNd):
    """Input ``(N, C_in, H, W)`` or ``(C_in, H, W)``."""
    _dim = 2
    _conv = staticmethod(F.conv2d)


class Conv3d(_ConvNd):
    """Input ``(N, C_in, D, H, W)`` or ``(C_in, D, H, W)``."""
    _dim = 3
    _conv = staticmethod(F.conv3d)


class _ConvTransposeNd(_ConvNd):
    """Transposed convolution (the gradient of a convolution w.r.t. its input);
    ``forward(input, output_size)`` may pick among the output sizes a stride allows."""
    _transposed = True

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 output_padding=0, groups=1, bias=True, dilation=1, padding_mode="zeros",
                 device=None, dtype=None):
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for {type(self).__name__}')
        Module.__init__(self)
        self._setup(in_channels, out_channels, kernel_size, stride,
                    _ntuple(self._dim)(padding), dilation, output_padding, groups, bias,
                    padding_mode, device, dtype)

    def _output_padding(self, input, output_size: Optional[List[int]], stride: List[int],
                        padding: List[int], kernel_size: List[int], num_spatial_dims: int,
                        dilation: Optional[List[int]] = None) -> List[int]:
        """The extra size per spatial dim that makes the output ``output_size``."""
        if output_size is None:
            return list(self.output_padding)
        n = num_spatial_dims
        lead = 2 if input.dim() == n + 2 else 1
        if len(output_size) == n + lead:
            output_size = output_size[lead:]
        if len(output_size) != n:
            raise ValueError(f"ConvTranspose{n}D: for {input.dim()}D input, output_size must "
                             f"have {n} or {n + lead} elements (got {len(output_size)})")
        if dilation is None:
            dilation = [1] * n
        smallest = [(input.size(lead + d) - 1) * stride[d] - 2 * padding[d]
                    + dilation[d] * (kernel_size[d] - 1) + 1 for d in range(n)]
        largest = [lo + s - 1 for lo, s in zip(smallest, stride)]
        if any(not lo <= size <= hi for size, lo, hi in zip(output_size, smallest, largest)):
            raise ValueError(f"requested an output size of {output_size}, but valid sizes "
                             f"range from {smallest} to {largest} (for an input of "
                             f"{input.size()[2:]})")
        return [size - lo for size, lo in zip(output_size, smallest)]

    def forward(self, input, output_size: Optional[List[int]] = None):
        output_padding = self._output_padding(input, output_size, self.stride, self.padding,
                                              self.kernel_size, self._dim, self.dilation)
        return self._conv(input, self.weight, bias=self.bias, stride=self.stride,
                          padding=self.padding, output_padding=output_padding,
                          groups=self.groups, dilation=self.dilation)


class ConvTranspose1d(_ConvTransposeNd):
    """Input ``(N, C_in, L)`` or ``(C_in, L)``."""
    _dim = 1
    _conv = staticmethod(F.conv_transpose1d)


class ConvTranspose2d(_ConvTransposeNd):
    """Input ``(N, C_in, H, W)`` or ``(C_in, H, W)``."""
    _dim = 2
    _conv = staticmethod(F.conv_transpose2d)


class ConvTranspose3d(_ConvTransposeNd):
    """Input ``(N, C_in, D, H, W)`` or ``(C_in, D, H, W)``."""
    _dim = 3
    _conv = staticmethod(F.conv_transpose3d)


class _LazyConvXdMixin(LazyModuleMixin):
    """``in_channels`` is read from ``input.shape[1]`` (``shape[0]`` unbatched) on the first
    call; until then weight and bias are ``UninitializedParameter``. Mix in before the
    convolution class it becomes (``cls_to_become``)."""

    def _make_lazy(self, out_channels, bias, device, dtype):
        self.out_channels = out_channels
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)

    def reset_parameters(self):
        # nothing to draw until the first input fixed in_channels
        if self.in_channels and not self.has_uninitialized_params():
            _ConvNd.reset_parameters(self)

    def _channels_of(self, input):
        """``C_in`` of ``input``: ``(N, C_in, *S)`` or unbatched ``(C_in, *S)``."""
        n = self._dim
        if input.dim() not in (n + 1, n + 2):
            raise RuntimeError(f"Expected {n + 1}D (unbatched) or {n + 2}D (batched) input "
                               f"to {type(self).__name__}, but got input of size: "
                               f"{input.shape}")
        return input.shape[0] if input.dim() == n + 1 else input.shape[1]

    def initialize_parameters(self, input, *args):
        if not self.has_uninitialized_params():
            if not self.in_channels:     # weight came from a checkpoint: read it back
                w = self.weight.shape
                self.in_channels = w[0] if self.transposed else w[1] * self.groups
            return
        self.in_channels = self._channels_of(input)
        if self.in_channels % self.groups:
            raise ValueError("in_channels must be divisible by groups")
        if self.transposed:
            shape = (self.in_channels, self.out_channels // self.groups, *self.kernel_size)
        else:
            shape = (self.out_channels, self.in_channels // self.groups, *self.kernel_size)
        with ember.no_grad():
            self.weight.materialize(shape)
            if self.bias is not None:
                self.bias.materialize((self.out_channels,))
            self.reset_parameters()


class _LazyConvNd(_LazyConvXdMixin):
    def __init__(self, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 bias=True, padding_mode="zeros", device=None, dtype=None):
        super().__init__(0, 0, kernel_size, stride, padding, dilation, groups, False,
                         padding_mode)
        self._make_lazy(out_channels, bias, device, dtype)


class _LazyConvTransposeNd(_LazyConvXdMixin):
    def __init__(self, out_channels, kernel_size, stride=1, padding=0, output_padding=0,
                 groups=1, bias=True, dilation=1, padding_mode="zeros", device=None,
                 dtype=None):
        super().__init__(0, 0, kernel_size, stride, padding, output_padding, groups, False,
                         dilation, padding_mode)
        self._make_lazy(out_channels, bias, device, dtype)


class LazyConv1d(_LazyConvNd, Conv1d):
    """A ``Conv1d`` whose ``in_channels`` comes from the first input."""
    cls_to_become = Conv1d


class LazyConv2d(_LazyConvNd, Conv2d):
    """A ``Conv2d`` whose ``in_channels`` comes from the first input."""
    cls_to_become = Conv2d


class LazyConv3d(_LazyConvNd, Conv3d):
    """A ``Conv3d`` whose ``in_channels`` comes from the first input."""
    cls_to_become = Conv3d


class LazyConvTranspose1d(_LazyConvTransposeNd, ConvTranspose1d):
    """A ``ConvTranspose1d`` whose ``in_channels`` comes from the first input."""
    cls_to_become = ConvTranspose1d


class LazyConvTranspose2d(_LazyConvTransposeNd, ConvTranspose2d):
    """A ``ConvTranspose2d`` whose ``in_channels`` comes from the first input."""
    cls_to_become = ConvTranspose2d


class LazyConvTranspose3d(_LazyConvTransposeNd, ConvTranspose3d):
    """A ``ConvTranspose3d`` whose ``in_channels`` comes from the first input."""
    cls_to_become = ConvTranspose3d
