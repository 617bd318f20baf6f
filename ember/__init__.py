"""ember: PyTorch's API on NumPy. ``import ember as torch``."""
from __future__ import annotations

__version__ = "0.1.0"

from ember import _dtype
from ember._dtype import (dtype, bool, uint8, int8, int16, int32, int64, float16, bfloat16,
                          float32, float64, complex64, complex128, half, float, double, cfloat,
                          cdouble, short, int, long, promote_types, result_type, can_cast,
                          get_default_dtype, set_default_dtype, finfo, iinfo)
from ember._device import device
from ember._tensor import Tensor, Size
from ember._creation import tensor, as_tensor, asarray, from_numpy, from_dlpack
from ember import _ops
from ember._ops.registry import FUNCTIONS as _FUNCTIONS, METHODS as _METHODS
from ember._tensor import install_methods as _install_methods
from ember import autograd
from ember.autograd.grad_mode import (no_grad, enable_grad, set_grad_enabled, inference_mode,
                                      is_grad_enabled, is_inference_mode_enabled)

_install_methods(_METHODS, _FUNCTIONS)
globals().update({k: v for k, v in _FUNCTIONS.items() if not k.startswith("_")})


class layout:
    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return "torch." + self.name


strided = layout("strided")
sparse_coo = layout("sparse_coo")


class memory_format:
    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return "torch." + self.name

    def __str__(self):
        return self.name


contiguous_format = memory_format("contiguous_format")
channels_last = memory_format("channels_last")
preserve_format = memory_format("preserve_format")


def is_tensor(obj):
    return isinstance(obj, Tensor)


def is_floating_point(input):
    return input.is_floating_point()


def is_complex(input):
    return input.is_complex()


def numel(input):
    return input.numel()
