"""Affine layers: ``Identity``, ``Linear`` (y = x W^T + b) and ``Bilinear``
(y = x1^T A x2 + b)."""
import math

import ember
from ember.nn import functional as F, init
from ember.nn.parameter import Parameter, UninitializedParameter
from ember.nn.modules.lazy import LazyModuleMixin
from ember.nn.modules.module import Module

__all__ = ["Bilinear", "Identity", "LazyLinear", "Linear"]


def _uniform_by_fan_in(tensor, fan_in):
    """Fill ``tensor`` (if any) from U(-1/sqrt(fan_in), 1/sqrt(fan_in)); zeros if fan_in is 0."""
    if tensor is not None:
        limit = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
        init.uniform_(tensor, -limit, limit)


def _weight_and_bias(module, weight_shape, out_features, bias, device, dtype):
    """Register uninitialized ``weight`` (and ``bias`` or a None placeholder)."""
    module.weight = Parameter(ember.empty(weight_shape, device=device, dtype=dtype))
    if bias:
        module.bias = Parameter(ember.empty(out_features, device=device, dtype=dtype))
    else:
        module.register_parameter("bias", None)


class Identity(Module):
    """Returns its input; constructor arguments are accepted and ignored."""

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, input):
        return input


class Linear(Module):
    """``(*, in_features) -> (*, out_features)``; weight ``(out_features, in_features)``,
    both drawn from U(-1/sqrt(in_features), 1/sqrt(in_features))."""
    __constants__ = ["in_features", "out_features"]

    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        _weight_and_bias(self, (out_features, in_features), out_features, bias, device, dtype)
        self.reset_parameters()

    def reset_parameters(self):
        # kaiming_uniform_ with a=sqrt(5) has the bound 1/sqrt(fan_in) too (drawn as torch does)
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        _uniform_by_fan_in(self.bias, self.weight.shape[1])

    def forward(self, input):
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self):
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}")


class NonDynamicallyQuantizableLinear(Linear):
    """A plain ``Linear`` (torch uses the name to exempt it from dynamic quantization)."""


class Bilinear(Module):
    """``(*, in1), (*, in2) -> (*, out)``; weight ``(out, in1, in2)`` and bias drawn from
    U(-1/sqrt(in1), 1/sqrt(in1))."""
    __constants__ = ["in1_features", "in2_features", "out_features"]

    def __init__(self, in1_features, in2_features, out_features, bias=True, device=None,
                 dtype=None):
        super().__init__()
        self.in1_features, self.in2_features = in1_features, in2_features
        self.out_features = out_features
        _weight_and_bias(self, (out_features, in1_features, in2_features), out_features, bias,
                         device, dtype)
        self.reset_parameters()

    def reset_parameters(self):
        if self.in1_features <= 0:
            raise ValueError(f"in1_features must be > 0, but got (in1_features="
                             f"{self.in1_features})")
        for tensor in (self.weight, self.bias):
            _uniform_by_fan_in(tensor, self.in1_features)

    def forward(self, input1, input2):
        return F.bilinear(input1, input2, self.weight, bias=self.bias)

    def extra_repr(self):
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")


class LazyLinear(LazyModuleMixin, Linear):
    """A ``Linear`` whose ``in_features`` is taken from the last dimension of the first
    input; it then becomes a plain ``Linear``."""
    cls_to_become = Linear

    def __init__(self, out_features, bias=True, device=None, dtype=None):
        super().__init__(0, 0, False)
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_features = out_features
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)

    def reset_parameters(self):
        # nothing to draw until the first input fixed in_features
        if self.in_features and not self.has_uninitialized_params():
            Linear.reset_parameters(self)

    def initialize_parameters(self, input):
        if not self.has_uninitialized_params():
            return
        self.in_features = input.shape[-1]
        shapes = {"weight": (self.out_features, self.in_features), "bias": (self.out_features,)}
        with ember.no_grad():
            for name, shape in shapes.items():
                if getattr(self, name) is not None:
                    getattr(self, name).materialize(shape)
            self.reset_parameters()
