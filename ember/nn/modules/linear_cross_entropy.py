"""``LinearCrossEntropyLoss``: a linear layer fused with cross-entropy, wrapping
F.linear_cross_entropy. ``linear`` holds a (num_classes * prod(out_features), in_features)
weight, seen as (num_classes, *out_features, in_features) in forward.
Shapes: input (N, in) or (in,), target (N, *out_features) / () indices or probabilities."""
import math

from ember.nn import functional as F
from ember.nn.modules.module import Module
from ember.nn.modules.linear import Linear

__all__ = ["LinearCrossEntropyLoss"]


class LinearCrossEntropyLoss(Module):
    __constants__ = ["num_classes", "out_features", "reduction", "ignore_index",
                     "label_smoothing"]

    def __init__(self, in_features, num_classes, *, out_features=(), bias=False, device=None,
                 dtype=None, reduction="mean", weight=None, ignore_index=None,
                 label_smoothing=0.0, options=None):
        super().__init__()
        if not 0.0 <= label_smoothing <= 1.0:
            raise RuntimeError(f"expected label_smoothing to be in range [0, 1], got "
                               f"{label_smoothing}")
        if weight is not None and tuple(weight.shape) != (num_classes,):
            raise RuntimeError(f"expected weight shape to be ({num_classes},), got "
                               f"{tuple(weight.shape)}")
        self.reduction = reduction
        self.num_classes = num_classes
        self.out_features = tuple(out_features)
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing
        self.options = options
        self.linear = Linear(in_features, num_classes * math.prod(self.out_features), bias=bias,
                             device=device, dtype=dtype)
        self.register_buffer("weight", weight)

    def forward(self, input, target):
        shape = (self.num_classes,) + self.out_features
        w = self.linear.weight.reshape(shape + (self.linear.in_features,))
        b = None if self.linear.bias is None else self.linear.bias.reshape(shape)
        return F.linear_cross_entropy(input, w, target, linear_bias=b, weight=self.weight,
                                      reduction=self.reduction, ignore_index=self.ignore_index,
                                      label_smoothing=self.label_smoothing,
                                      options=self.options)

    def extra_repr(self):
        return (f"in_features={self.linear.in_features}, num_classes={self.num_classes}, "
                f"out_features={self.out_features}, bias={self.linear.bias is not None}, "
                f"reduction={self.reduction}, ignore_index={self.ignore_index}, "
                f"label_smoothing={self.label_smoothing}, options={self.options}")
