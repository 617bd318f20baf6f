"""Tensor kinds that ``Module.__setattr__`` recognises: ``Parameter`` (trainable state),
``Buffer`` (non-trainable state) and their lazy, shape-less ``Uninitialized*`` forms."""
import numpy as np

from ember import _dtype
from ember._tensor import Tensor, _init
from ember.overrides import _disabled_torch_function_impl

__all__ = ["Parameter", "Buffer", "UninitializedParameter", "UninitializedBuffer",
           "is_lazy"]


def _wrap(arr):
    from ember._tensor import _make
    return _make(arr)


def _empty(dtype=None):
    """A 0-element tensor of ``dtype`` (default float): the data of ``Parameter()``."""
    return _wrap(np.empty((0,), (dtype or _dtype.default_float()).np))


def _rebuild_parameter(arr, requires_grad, state):
    """Unpickling entry point (referenced by name in pickles)."""
    p = Parameter(_wrap(arr), requires_grad)
    p._vc = 1                 # (torch's unpickled tensors were set_ onto their storage)
    if state:
        p.__dict__.update(state)
    return p


def _custom_tensor(data):
    """A Tensor subclass of the user's taking part in ``__torch_function__``?"""
    from ember.overrides import _overrides
    tp = type(data)
    return tp is not Tensor and not issubclass(tp, Parameter) and _overrides(tp)


def _custom_parameter(data, requires_grad):
    """torch's Parameter of a custom tensor: ``data.detach()`` (its own type), requiring
    grad and flagged ``_is_param`` (``isinstance(p, Parameter)`` holds)."""
    t = data.detach().requires_grad_(requires_grad)
    if type(t) is not type(data):
        raise RuntimeError(f"Creating a Parameter from an instance of type "
                           f"{type(data).__name__} requires that detach() returns an "
                           f"instance of the same type, but return type {type(t).__name__} "
                           f"was found instead. To use the type as a Parameter, please correct "
                           f"the detach() semantics defined by its __torch_dispatch__() "
                           f"implementation.")
    t._is_param = True
    return t


class _FlagMeta(type(Tensor)):
    """``isinstance(t, cls)`` also holds for plain tensors carrying ``cls._flag`` (torch
    treats a tensor marked as a parameter/buffer as one)."""
    _flag = None

    def __instancecheck__(cls, obj):
        if cls.__dict__.get("_flag") and isinstance(obj, Tensor) \
                and getattr(obj, cls.__dict__["_flag"], False):
            return True
        return super().__instancecheck__(obj)


class Parameter(Tensor, metaclass=_FlagMeta):
    """A tensor registered as a parameter when assigned to a Module attribute. It shares
    ``data``'s memory and requires grad by default; ops on it return plain Tensors."""
    _flag = "_is_param"
    __torch_function__ = _disabled_torch_function_impl

    def __new__(cls, data=None, requires_grad=True):
        data = _empty() if data is None else data
        if not isinstance(data, Tensor):
            raise TypeError("Parameter(): argument 'data' must be Tensor, not "
                            f"{type(data).__name__}")
        if type(requires_grad) is not bool:
            from ember._legacy import type_name
            raise TypeError(f"_make_subclass(): argument 'require_grad' (position 3) must be "
                            f"bool, not {type_name(type(requires_grad))}")
        if _custom_tensor(data):
            return _custom_parameter(data, requires_grad)
        self = object.__new__(cls)
        _init(self, data._data)
        if "_qparams" in data.__dict__:     # a quantized tensor's scale / zero point
            self._qparams = data._qparams
        self._requires_grad = bool(requires_grad)
        if requires_grad and not (self.is_floating_point() or self.is_complex()):
            raise RuntimeError("Only Tensors of floating point and complex dtype can require "
                               "gradients")
        return self

    def __init__(self, *args, **kwargs):
        pass

    def __deepcopy__(self, memo):
        if id(self) not in memo:
            data = _wrap(self._data.copy(order="K"))      # clone(preserve_format)
            if "_qparams" in self.__dict__:
                data._qparams = self._qparams
            memo[id(self)] = type(self)(data, self._requires_grad)
        return memo[id(self)]

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()

    def __reduce_ex__(self, proto):
        return _rebuild_parameter, (np.array(self._data), self._requires_grad,
                                    dict(self.__dict__) or None)

    def __setstate__(self, state):
        pass


class Buffer(Tensor, metaclass=_FlagMeta):
    """Marks a tensor to be registered as a buffer when assigned to a Module attribute.
    ``Buffer(t)`` returns a detached plain tensor flagged ``_is_buffer`` (as torch does)."""
    _flag = "_is_buffer"

    def __new__(cls, data=None, *, persistent=True):
        data = _empty() if data is None else data
        t = data.detach()
        t.requires_grad_(data.requires_grad)
        t._is_buffer = True
        t.persistent = persistent
        return t


def _describe(func):
    """``func`` as torch's messages show it: a Tensor method of its C base as
    ``<method 'numel' of 'torch._C.TensorBase' objects>``."""
    name = getattr(func, "__name__", None)
    if name and not name.startswith("__") and getattr(Tensor, name, None) is func:
        return f"<method '{name}' of 'torch._C.TensorBase' objects>"
    return str(func)


class UninitializedTensorMixin:
    """A placeholder whose shape is unknown until ``materialize(shape)`` turns it into
    ``cls_to_become`` (used by lazy modules). Any op on it raises ValueError (through
    ``__torch_function__``), except the methods named in ``_allowed_methods`` and attributes."""
    _allowed_methods = frozenset({
        "__hash__", "size", "copy_", "is_floating_point", "half", "float", "double", "char",
        "short", "int", "long", "cuda", "cpu", "to", "get_device",
        "_has_compatible_shallow_copy_type", "_to_copy"})

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        name = getattr(func, "__name__", None) or getattr(func, "public_name", None)
        if name in cls._allowed_methods or name in ("__get__", "__set__"):   # attributes
            return super().__torch_function__(func, types, args, kwargs)
        raise ValueError(
            f"Attempted to use an uninitialized parameter in {_describe(func)}. This error "
            "happens when you are using a `LazyModule` or explicitly manipulating "
            f"`torch.nn.parameter.{cls.__name__}` objects. When using LazyModules Call "
            "`forward` with a dummy batch to initialize the parameters before calling torch "
            "functions")

    def materialize(self, shape, device=None, dtype=None):
        dtype = self.data.dtype if dtype is None else dtype
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        self._data = np.empty(shape, dtype.np)
        self.__class__ = self.cls_to_become

    def numel(self):
        return self.__torch_function__(Tensor.numel, (type(self),), (self,))

    def __len__(self):
        return self.__torch_function__(Tensor.__len__, (type(self),), (self,))

    @property
    def shape(self):
        raise RuntimeError("Can't access the shape of an uninitialized parameter or buffer. This "
                           "error usually happens in `load_state_dict` when trying to load an "
                           "uninitialized parameter into an initialized one. Call `forward` to "
                           "initialize the parameters before accessing their attributes.")

    def share_memory_(self):
        raise RuntimeError("Can't share memory on an uninitialized parameter or buffer. Call "
                           "`forward` to initialize the parameters before calling "
                           "`module.share_memory()`.")

    def __repr__(self):
        return f"<{type(self).__name__}>"

    def __deepcopy__(self, memo):
        if id(self) not in memo:
            memo[id(self)] = type(self)(self.requires_grad, dtype=self.dtype)
        return memo[id(self)]

    def __reduce_ex__(self, proto):
        return type(self), (self.requires_grad,)


def is_lazy(param):
    """Whether ``param`` is an uninitialized (lazy) parameter or buffer."""
    return isinstance(param, UninitializedTensorMixin)


class UninitializedParameter(UninitializedTensorMixin, Parameter):
    cls_to_become = Parameter

    def __new__(cls, requires_grad=True, device=None, dtype=None):
        return Parameter.__new__(cls, _empty(dtype), requires_grad)


class UninitializedBuffer(UninitializedTensorMixin, Tensor):
    cls_to_become = Tensor

    def __new__(cls, requires_grad=False, device=None, dtype=None, persistent=True):
        self = object.__new__(cls)
        _init(self, _empty(dtype)._data)
        self._requires_grad = requires_grad
        self.persistent = persistent
        return self
