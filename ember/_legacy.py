"""torch's legacy constructors: ``Tensor(...)``, ``Tensor.new(...)`` and the typed tensor
types (``FloatTensor``, ``LongTensor``...).

They take one of five forms, tried in this order:

    ()                                  an empty 1-d tensor
    (storage)                           a tensor over a storage's memory
    (other)                             an alias of a tensor (of the same dtype)
    (*sizes) or (Size)                  an uninitialized tensor of that size
    (data)                              a tensor from a sequence or an array

A list or tuple is *data* (``Tensor([2, 3])`` holds 2 and 3), ints are sizes. The typed types
are not Tensor subclasses: calling one builds a Tensor of its dtype, and
``isinstance(t, LongTensor)`` checks ``t``'s dtype, as in torch.
"""
from __future__ import annotations


import warnings

import numpy as np

from ember import _dtype
from ember._device import to_device
from ember._kernels.shape import _C_NAMES as _CPP_NAMES   # dtypes as TensorOptions print
from ember._tensor import Size, Tensor, _make

_FORMS = ("(*, torch.device device = None)", "(torch.Storage storage)", "(Tensor other)",
          "(tuple of ints size, *, torch.device device = None)",
          "(object data, *, torch.device device = None)")
_KEYWORDS = ("size", "data", "other", "storage")


_C_TYPES: dict = {}     # ember's classes standing for torch's C types -> torch's names


def _c_types():
    if not _C_TYPES:
        import ember
        from ember._device import device
        from ember.random import Generator
        _C_TYPES.update({device: "torch.device", ember.memory_format: "torch.memory_format",
                         ember.layout: "torch.layout", Generator: "torch._C.Generator"})
    return _C_TYPES


def type_name(cls):
    """A class's name as CPython's ``tp_name`` spells it (and torch's messages print it):
    ``numpy.float64`` for a built-in type of another module, the bare name otherwise."""
    if cls is Size:
        return "torch.Size"
    if issubclass(cls, Tensor):
        return "Tensor"
    if cls is _dtype.dtype:
        return "torch.dtype"
    c_name = (_C_TYPES or _c_types()).get(cls)          # (torch's C types)
    if c_name is not None:
        return c_name
    heap = cls.__flags__ & (1 << 9)
    return cls.__name__ if heap or cls.__module__ == "builtins" else \
        f"{cls.__module__}.{cls.__name__}"


def _options(d):
    return (f"TensorOptions(dtype={_CPP_NAMES[d.name]}, device=cpu, layout=Strided, "
            f"requires_grad=false (default), pinned_memory=false (default), "
            f"memory_format=(nullopt))")


def _describe(x):
    """An argument as torch's mismatch hints print it: ``list of [float, int]``."""
    if isinstance(x, list):
        return f"list of [{', '.join(dict.fromkeys(type_name(type(v)) for v in x))}]"
    if isinstance(x, tuple):
        items = ", ".join(type_name(type(v)) for v in x) + ("," if len(x) == 1 else "")
        return f"{type_name(type(x))} of ({items})"
    return type_name(type(x))


def _bad_combination(args, kwargs):
    """torch's "invalid combination of arguments" TypeError, listing the five forms with a
    hint under those that failed only by their keywords or argument types."""
    names = sorted(kwargs)
    got = [type_name(type(a)) for a in args] + \
        [f"{k}={type_name(type(kwargs[k]))}" for k in names]
    got = ", ".join(got) + (", " if names and not args else "")
    if names and set(names) - {"device"} - set(_KEYWORDS) or len(names) > 1 and not args:
        hint = f"some of the keywords were incorrect: {', '.join(names)}"
        hinted = (0,) if not args else (3, 4)
    else:
        hint = f"some of the arguments have invalid types: " \
               f"({', '.join(f'!{_describe(a)}!' for a in args)})"
        hinted = (0,)
    lines = [f"new() received an invalid combination of arguments - got ({got}), but expected "
             f"one of:"]
    for k, form in enumerate(_FORMS):
        lines.append(f" * {form}")
        if k in hinted:
            lines.append(f"      didn't match because {hint}")
    return TypeError("\n".join(lines) + "\n")


def legacy_new(dtype, args, kwargs):
    """The tensor ``Tensor(*args, **kwargs)`` makes; ``dtype`` None means the default dtype
    (and then any tensor may be aliased)."""
    given = [k for k in _KEYWORDS if k in kwargs]
    if kwargs.keys() - {"device", *_KEYWORDS} or len(given) > 1 or given and args:
        raise _bad_combination(args, kwargs)
    to_device(kwargs.get("device"))
    if given == ["size"]:
        args = tuple(kwargs["size"]) if isinstance(kwargs["size"], (tuple, list)) else \
            (kwargs["size"],)
    elif given:
        args = (kwargs[given[0]],)
    d = _dtype.default_float() if dtype is None else dtype
    if not args:
        return _make(np.empty((0,), d.np))
    first = args[0]
    from ember._ops.factory import _as_dim
    if not isinstance(first, Tensor) and _as_dim(first) is not None or \
            isinstance(first, Size) and len(args) == 1:
        return _uninitialized(args, d)
    if len(args) > 1:
        raise _bad_combination(args, kwargs)
    if isinstance(first, Tensor):
        return _alias(first, dtype)
    from ember.storage import TypedStorage, UntypedStorage
    if isinstance(first, (TypedStorage, UntypedStorage)):
        return _over_storage(first, d)
    return _from_data(first, d)


def _uninitialized(args, d):
    sizes = args[0] if len(args) == 1 and isinstance(args[0], Size) else args
    from ember._ops.factory import empty_op, seq_size
    return empty_op(seq_size(tuple(sizes), "new"), dtype=d)


def _alias(other, dtype):
    if dtype is not None and other.dtype is not dtype:
        raise TypeError(f"expected {_options(dtype)} (got {_options(other.dtype)})")
    return other.view_as(other)


def _over_storage(storage, d):
    from ember.storage import TypedStorage
    if isinstance(storage, TypedStorage):
        if storage.dtype is not d:
            raise RuntimeError(f"Expected a Storage of type {_dtype.scalar_type_name(d)} or an "
                               f"UntypedStorage, but got type "
                               f"{_dtype.scalar_type_name(storage.dtype)} for argument 1 "
                               f"'storage'")
        storage = storage.untyped()
    return _make(storage._array(d.np))


def _from_data(data, d):
    from ember._creation import _from_numpy_copy, _is_sequence, _to_array, from_numpy
    if isinstance(data, np.ndarray):
        if data.dtype == d.np and not any(s < 0 for s in data.strides):
            return from_numpy(data)
        return _make(_from_numpy_copy(data, d))
    if isinstance(data, (str, bytes)):
        raise TypeError(f"new(): invalid data type '{type(data).__name__}'")
    if not _is_sequence(data):
        raise TypeError(f"new(): data must be a sequence (got {type_name(type(data))})")
    return _make(_to_array(data, d))


# ------------------------------------------------------------------------- typed types

class _TensorType(type):
    """The type of ``FloatTensor``, ``LongTensor``...: calling one makes a tensor of its
    dtype from the legacy forms; ``isinstance`` checks a tensor's dtype."""

    def __call__(cls, *args, **kwargs):
        return legacy_new(cls.dtype, args, kwargs)

    def __instancecheck__(cls, obj):
        return isinstance(obj, Tensor) and obj.dtype is cls.dtype


_TYPED = {"FloatTensor": _dtype.float32, "DoubleTensor": _dtype.float64,
          "HalfTensor": _dtype.float16, "BFloat16Tensor": _dtype.bfloat16,
          "LongTensor": _dtype.int64, "IntTensor": _dtype.int32, "ShortTensor": _dtype.int16,
          "CharTensor": _dtype.int8, "ByteTensor": _dtype.uint8, "BoolTensor": _dtype.bool}
TYPES = {name: _TensorType(name, (), {"dtype": d, "is_cuda": False, "is_sparse": False,
                                      "__module__": "ember"})
         for name, d in _TYPED.items()}
# ``Tensor.type()`` names: the typed types' and the two complex ones torch prints
TYPE_NAMES = {f"torch.{name}": d for name, d in _TYPED.items()}
TYPE_NAMES.update({"torch.ComplexFloatTensor": _dtype.complex64,
                   "torch.ComplexDoubleTensor": _dtype.complex128,
                   "torch.ComplexHalfTensor": _dtype.complex32,
                   "torch.UInt16Tensor": _dtype.uint16, "torch.UInt32Tensor": _dtype.uint32,
                   "torch.UInt64Tensor": _dtype.uint64})


def new(self, *args, **kwargs):
    """``Tensor.new``: the legacy constructor with this tensor's dtype."""
    return legacy_new(self.dtype, args, kwargs)


def typename(obj):
    """torch.typename: a tensor's legacy type string (``'torch.FloatTensor'``), otherwise the
    object's (or its type's) module-qualified name, ember's modules named as torch's."""
    from ember._tensor import Tensor
    if isinstance(obj, Tensor):
        return obj.type()
    module = getattr(obj, "__module__", "") or ""
    qualname = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None) \
        or type(obj).__qualname__
    if module == "ember" or module.startswith("ember."):
        module = "torch" + module[len("ember"):]
    return qualname if module in ("", "builtins") else f"{module}.{qualname}"


_warned_default_type = []


def set_default_tensor_type(t):
    """torch's deprecated spelling of ``set_default_dtype``: ``t`` a floating tensor type
    (``torch.DoubleTensor``) or its name (``"torch.DoubleTensor"``)."""
    import ember
    if not _warned_default_type:            # once a process, as torch
        _warned_default_type.append(True)
        warnings.warn("torch.set_default_tensor_type() is deprecated as of PyTorch 2.1, please "
                      "use torch.set_default_dtype() and torch.set_default_device() as "
                      "alternatives.", UserWarning, stacklevel=2)
    if isinstance(t, str):
        module, _, name = t.rpartition(".")
        if module not in ("torch", "torch.cuda", "ember"):
            raise ModuleNotFoundError(f"No module named '{module}'")
        t = TYPES.get(name)
    if not isinstance(t, _TensorType):
        raise TypeError("invalid type object: only floating-point types are supported as the "
                        "default type")
    if not t.dtype.is_floating_point:
        raise TypeError("only floating-point types are supported as the default type")
    ember.set_default_dtype(t.dtype)
