"""ember.nn.parameter (torch.nn.parameter): Parameter, Buffer, UninitializedParameter."""
from collections import OrderedDict

import numpy as np

from ember._tensor import Tensor, _init
from ember import _dtype
from ember.overrides import _disabled_torch_function_impl

__all__ = ["Parameter", "Buffer", "UninitializedParameter", "UninitializedBuffer",
           "is_lazy"]


def _rebuild_parameter(arr, requires_grad, state):
    p = Parameter(_wrap(arr), requires_grad)
    if state:
        p.__dict__.update(state)
    return p


def _wrap(arr):
    from ember._tensor import _make
    return _make(arr)


class _ParameterMeta(type(Tensor)):
    # isinstance(t, Parameter) is True for tensors with the ``_is_param`` flag (as in torch)
    def __instancecheck__(self, instance):
        if self is Parameter:
            if isinstance(instance, Tensor) and getattr(instance, "_is_param", False):
                return True
        return super().__instancecheck__(instance)


class Parameter(Tensor, metaclass=_ParameterMeta):
    """A Tensor that is a module parameter: assigning it as a Module attribute registers it."""
    __torch_function__ = _disabled_torch_function_impl   # ops on a Parameter return Tensors

    def __new__(cls, data=None, requires_grad=True):
        if data is None:
            data = _wrap(np.empty((0,), _dtype.default_float().np))
        if not isinstance(data, Tensor):
            raise TypeError(f"Parameter(): argument 'data' must be Tensor, not "
                            f"{type(data).__name__}")
        t = object.__new__(cls)
        _init(t, data._data)
        t._requires_grad = bool(requires_grad)
        if requires_grad and not (t.is_floating_point() or t.is_complex()):
            raise RuntimeError("Only Tensors of floating point and complex dtype can require "
                               "gradients")
        return t

    def __init__(self, *args, **kwargs):
        pass

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        result = type(self)(_wrap(self._data.copy()), self._requires_grad)
        memo[id(self)] = result
        return result

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()

    def __reduce_ex__(self, proto):
        state = dict(self.__dict__) if self.__dict__ else None
        return (_rebuild_parameter, (np.array(self._data), self._requires_grad, state))

    def __setstate__(self, state):
        pass


class UninitializedTensorMixin:
    _allowed_methods = ()

    def materialize(self, shape, device=None, dtype=None):
        if dtype is None:
            dtype = self.data.dtype
        if isinstance(shape, int):
            shape = (shape,)
        self._data = np.empty(tuple(shape), dtype.np)
        self.__class__ = self.cls_to_become

    @property
    def shape(self):
        raise RuntimeError("Can't access the shape of an uninitialized parameter or buffer. "
                           "This error usually happens in `load_state_dict` when trying to load "
                           "an uninitialized parameter into an initialized one. Call "
                           "`forward` to initialize the parameters before accessing their "
                           "attributes.")

    def share_memory_(self):
        raise RuntimeError("Can't share memory on an uninitialized parameter or buffer. Call "
                           "`forward` to initialize the parameters before calling "
                           "`module.share_memory()`.")

    def __repr__(self):
        return f"<{self.__class__.__name__}>"

    def __reduce_ex__(self, proto):
        return (self.__class__, (self.requires_grad,))


def is_lazy(param):
    return isinstance(param, UninitializedTensorMixin)


class UninitializedParameter(UninitializedTensorMixin, Parameter):
    cls_to_become = Parameter

    def __new__(cls, requires_grad=True, device=None, dtype=None):
        data = _wrap(np.empty((0,), (dtype or _dtype.default_float()).np))
        return Parameter.__new__(cls, data, requires_grad)


class _BufferMeta(type(Tensor)):
    def __instancecheck__(self, instance):
        if self is Buffer:
            if isinstance(instance, Tensor) and getattr(instance, "_is_buffer", False):
                return True
        return super().__instancecheck__(instance)


class Buffer(Tensor, metaclass=_BufferMeta):
    """A Tensor that registers as a buffer when assigned as a Module attribute. Like torch,
    ``Buffer(t)`` returns a plain tensor flagged ``_is_buffer``."""

    def __new__(cls, data=None, *, persistent=True):
        if data is None:
            data = _wrap(np.empty((0,), _dtype.default_float().np))
        t = data.detach()
        t.requires_grad_(data.requires_grad)
        t._is_buffer = True
        t.persistent = persistent
        return t


class UninitializedBuffer(UninitializedTensorMixin, Tensor):
    cls_to_become = Tensor

    def __new__(cls, requires_grad=False, device=None, dtype=None, persistent=True):
        t = object.__new__(cls)
        _init(t, np.empty((0,), (dtype or _dtype.default_float()).np))
        t._requires_grad = requires_grad
        t.persistent = persistent
        return t
