"""Factory op records (``zeros``, ``ones``, ``full``, ``empty``) and their fronts:
``*_like`` and ``Tensor.new_*`` variants, ``dtype``/``device``/``requires_grad`` options."""
from __future__ import annotations

import builtins

from ember import _dtype
from ember._device import to_device
from ember._kernels import factory as K
from ember._ops.registry import OpDef, public
from ember._tensor import Tensor

zeros_op = OpDef("zeros(SymInt[] size, *, ScalarType dtype) -> Tensor", K.zeros, promote=None)
ones_op = OpDef("ones(SymInt[] size, *, ScalarType dtype) -> Tensor", K.ones, promote=None)
full_op = OpDef("full(SymInt[] size, Scalar fill_value, *, ScalarType dtype) -> Tensor", K.full,
                promote=None)
empty_op = OpDef("empty(SymInt[] size, *, ScalarType dtype) -> Tensor", K.empty, promote=None)


def size_args(size):
    """``f(2, 3)``, ``f((2, 3))``, ``f([2, 3])`` and ``f(torch.Size)`` all mean (2, 3)."""
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = size[0]
    out = []
    for s in size:
        if isinstance(s, Tensor):
            s = s.item()
        if not isinstance(s, (int,)) or isinstance(s, builtins.bool):
            try:
                s = s.__index__()
            except AttributeError:
                raise TypeError(f"size must be a tuple of ints, but got element of type "
                                f"{type(s).__name__}") from None
        out.append(s)
    return tuple(out)


def finish(t, requires_grad):
    if requires_grad:
        t.requires_grad_(True)
    return t


def _factory(op, size, dtype, device, requires_grad, *extra):
    to_device(device)
    d = _dtype.default_float() if dtype is None else _dtype.to_dtype(dtype)
    return finish(op(size_args(size), *extra, dtype=d), requires_grad)


@public()
def zeros(*size, out=None, dtype=None, layout=None, device=None, pin_memory=False,
          requires_grad=False):
    """A tensor of zeros of the given size."""
    return _factory(zeros_op, size, dtype, device, requires_grad)


@public()
def ones(*size, out=None, dtype=None, layout=None, device=None, pin_memory=False,
         requires_grad=False):
    """A tensor of ones of the given size."""
    return _factory(ones_op, size, dtype, device, requires_grad)


@public()
def empty(*size, out=None, dtype=None, layout=None, device=None, pin_memory=False,
          requires_grad=False, memory_format=None):
    """An uninitialised tensor (ember fills it with zeros)."""
    return _factory(empty_op, size, dtype, device, requires_grad)


def _fill_dtype(fill_value):
    return _dtype.scalar_dtype(fill_value.item() if isinstance(fill_value, Tensor)
                               else fill_value)


@public()
def full(size, fill_value, *, out=None, dtype=None, layout=None, device=None, pin_memory=False,
         requires_grad=False):
    """A tensor of ``size`` filled with ``fill_value`` (dtype inferred from it)."""
    if dtype is None:
        dtype = _fill_dtype(fill_value)
    if isinstance(fill_value, Tensor):
        fill_value = fill_value.item()
    return _factory(full_op, (size,), dtype, device, requires_grad, fill_value)


def _like(op, input, dtype, requires_grad, *extra):
    d = input.dtype if dtype is None else _dtype.to_dtype(dtype)
    return finish(op(tuple(input.shape), *extra, dtype=d), requires_grad)


@public()
def zeros_like(input, *, dtype=None, layout=None, device=None, requires_grad=False,
               memory_format=None):
    return _like(zeros_op, input, dtype, requires_grad)


@public()
def ones_like(input, *, dtype=None, layout=None, device=None, requires_grad=False,
              memory_format=None):
    return _like(ones_op, input, dtype, requires_grad)


@public()
def empty_like(input, *, dtype=None, layout=None, device=None, requires_grad=False,
               memory_format=None):
    return _like(empty_op, input, dtype, requires_grad)


@public()
def full_like(input, fill_value, *, dtype=None, layout=None, device=None, requires_grad=False,
              memory_format=None):
    return _like(full_op, input, dtype, requires_grad, fill_value)


def _new(op, self, size, dtype, device, requires_grad, *extra):
    to_device(device)
    d = self.dtype if dtype is None else _dtype.to_dtype(dtype)
    return finish(op(size_args(size), *extra, dtype=d), requires_grad)


@public(method=True, function=False)
def new_zeros(self, *size, dtype=None, layout=None, device=None, pin_memory=False,
              requires_grad=False):
    return _new(zeros_op, self, size, dtype, device, requires_grad)


@public(method=True, function=False)
def new_ones(self, *size, dtype=None, layout=None, device=None, pin_memory=False,
             requires_grad=False):
    return _new(ones_op, self, size, dtype, device, requires_grad)


@public(method=True, function=False)
def new_empty(self, *size, dtype=None, layout=None, device=None, pin_memory=False,
              requires_grad=False):
    return _new(empty_op, self, size, dtype, device, requires_grad)


@public(method=True, function=False)
def new_full(self, size, fill_value, *, dtype=None, layout=None, device=None, pin_memory=False,
             requires_grad=False):
    return _new(full_op, self, (size,), dtype, device, requires_grad, fill_value)


@public(method=True, function=False)
def new_tensor(self, data, *, dtype=None, device=None, requires_grad=False, pin_memory=False):
    from ember._creation import tensor
    return tensor(data, dtype=self.dtype if dtype is None else dtype, requires_grad=requires_grad)
