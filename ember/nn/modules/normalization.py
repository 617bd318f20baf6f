"""Normalization over features rather than the batch: ``LayerNorm`` / ``RMSNorm`` over
the trailing ``normalized_shape`` dims, ``GroupNorm`` over channel groups of
``(N, C, *)``, and local response normalization across neighbouring channels."""
import numbers

import ember
from ember.nn import functional as F, init
from ember.nn.parameter import Parameter
from ember.nn.modules.module import Module

__all__ = ["LocalResponseNorm", "CrossMapLRN2d", "LayerNorm", "GroupNorm", "RMSNorm"]


def _affine(module, shape, weight, bias, device, dtype):
    """Register ``weight`` (ones) and ``bias`` (zeros) of ``shape``, or None for each."""
    make = lambda: Parameter(ember.empty(shape, device=device, dtype=dtype))
    module.register_parameter("weight", make() if weight else None)
    module.register_parameter("bias", make() if weight and bias else None)


def _reset_affine(module):
    if module.weight is not None:
        init.ones_(module.weight)
    if module.bias is not None:
        init.zeros_(module.bias)


def _as_shape(normalized_shape):
    if isinstance(normalized_shape, numbers.Integral):
        return (normalized_shape,)
    return tuple(normalized_shape)


class _LocalResponseNormBase(Module):
    """Divide each channel of ``(N, C, *)`` by ``(k + alpha/size * sum of squares over
    `size` neighbouring channels) ** beta``."""

    def __init__(self, size, alpha=0.0001, beta=0.75, k=1.0):
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input):
        return F.local_response_norm(input, size=self.size, alpha=self.alpha, beta=self.beta,
                                     k=self.k)

    def extra_repr(self):
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


class LocalResponseNorm(_LocalResponseNormBase):
    __constants__ = ["size", "alpha", "beta", "k"]


class CrossMapLRN2d(_LocalResponseNormBase):
    """Local response norm for 4-D input ``(N, C, H, W)`` only."""

    def __init__(self, size, alpha=0.0001, beta=0.75, k=1):
        super().__init__(size, alpha, beta, k)

    def forward(self, input):
        if input.dim() != 4:
            raise ValueError(f"CrossMapLRN2d: Expected input to be 4D, got {input.dim()}D "
                             "instead.")
        return F.local_response_norm(input, size=self.size, alpha=self.alpha, beta=self.beta,
                                     k=self.k)


class LayerNorm(Module):
    """Normalize over the last ``len(normalized_shape)`` dims; ``weight``/``bias`` have
    ``normalized_shape``."""
    __constants__ = ["normalized_shape", "eps", "elementwise_affine"]

    def __init__(self, normalized_shape, eps=1e-05, elementwise_affine=True, bias=True,
                 device=None, dtype=None):
        super().__init__()
        self.normalized_shape = _as_shape(normalized_shape)
        self.eps, self.elementwise_affine = eps, elementwise_affine
        _affine(self, self.normalized_shape, elementwise_affine, bias, device, dtype)
        self.reset_parameters()

    def reset_parameters(self):
        _reset_affine(self)

    def forward(self, input):
        return F.layer_norm(input, self.normalized_shape, weight=self.weight, bias=self.bias,
                            eps=self.eps)

    def extra_repr(self):
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}, bias={self.bias is not None}")


class GroupNorm(Module):
    """Split the ``num_channels`` channels of ``(N, C, *)`` into ``num_groups`` groups and
    normalize each; per-channel ``weight``/``bias``."""
    __constants__ = ["num_groups", "num_channels", "eps", "affine"]

    def __init__(self, num_groups, num_channels, eps=1e-05, affine=True, device=None,
                 dtype=None, *, bias=True):
        super().__init__()
        if num_channels % num_groups:
            raise ValueError(f"num_channels ({num_channels}) must be divisible by "
                             f"num_groups ({num_groups})")
        self.num_groups, self.num_channels = num_groups, num_channels
        self.eps, self.affine = eps, affine
        _affine(self, num_channels, affine, bias, device, dtype)
        self.reset_parameters()

    def reset_parameters(self):
        _reset_affine(self)

    def forward(self, input):
        return F.group_norm(input, self.num_groups, weight=self.weight, bias=self.bias,
                            eps=self.eps)

    def extra_repr(self):
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, "
                f"affine={self.affine}, bias={self.bias is not None}")


class RMSNorm(Module):
    """Divide by the root mean square over the last ``len(normalized_shape)`` dims
    (``eps=None``: the dtype's machine epsilon); ``weight`` only, no bias."""
    __constants__ = ["normalized_shape", "eps", "elementwise_affine"]

    def __init__(self, normalized_shape, eps=None, elementwise_affine=True, device=None,
                 dtype=None):
        super().__init__()
        self.normalized_shape = _as_shape(normalized_shape)
        self.eps, self.elementwise_affine = eps, elementwise_affine
        weight = (Parameter(ember.empty(self.normalized_shape, device=device, dtype=dtype))
                  if elementwise_affine else None)
        self.register_parameter("weight", weight)
        self.reset_parameters()

    def reset_parameters(self):
        if self.weight is not None:
            init.ones_(self.weight)

    def forward(self, x):
        return F.rms_norm(x, self.normalized_shape, weight=self.weight, eps=self.eps)

    def extra_repr(self):
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}")
