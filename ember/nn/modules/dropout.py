"""Dropout layers: each zeroes entries (or whole channels) with probability ``p`` while
training and is the identity in eval mode; the shape is unchanged. The classes differ only
in the functional they call (``_drop``) and whether it gets the ``inplace`` flag."""
from ember.nn import functional as F
from ember.nn.modules.module import Module

__all__ = ["Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout",
           "FeatureAlphaDropout"]


class _DropoutNd(Module):
    """Shared constructor/repr: ``p`` in [0, 1] and the ``inplace`` flag."""
    __constants__ = ["p", "inplace"]
    _drop = None                 # the functional form
    _passes_inplace = True

    def __init__(self, p=0.5, inplace=False):
        super().__init__()
        if min(p, 1 - p) < 0:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p = p
        self.inplace = inplace

    def forward(self, input):
        flags = (self.inplace,) if self._passes_inplace else ()
        return self._drop(input, self.p, self.training, *flags)

    def extra_repr(self):
        return f"p={self.p}, inplace={self.inplace}"


class Dropout(_DropoutNd):
    """Zero each element with probability ``p``, scaling the survivors by 1/(1-p)."""
    _drop = staticmethod(F.dropout)


class Dropout1d(_DropoutNd):
    """Zero whole channels of ``(N, C, L)`` or ``(C, L)`` inputs."""
    _drop = staticmethod(F.dropout1d)


class Dropout2d(_DropoutNd):
    """Zero whole channels of ``(N, C, H, W)`` or ``(C, H, W)`` inputs."""
    _drop = staticmethod(F.dropout2d)


class Dropout3d(_DropoutNd):
    """Zero whole channels of ``(N, C, D, H, W)`` or ``(C, D, H, W)`` inputs."""
    _drop = staticmethod(F.dropout3d)


class AlphaDropout(_DropoutNd):
    """Dropout that keeps the zero mean / unit variance of SELU activations."""
    _drop, _passes_inplace = staticmethod(F.alpha_dropout), False


class FeatureAlphaDropout(_DropoutNd):
    """Alpha dropout of whole channels."""
    _drop, _passes_inplace = staticmethod(F.feature_alpha_dropout), False
