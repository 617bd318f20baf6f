"""Tensor construction from data: ``tensor``, ``as_tensor``, ``asarray``, ``from_numpy``,
``from_dlpack``, ``frombuffer``.

Factories that take a size (``zeros``, ``randn`` ...) are op records in
``ember/_ops/factory.py``; these functions wrap existing data and are not ops.

Note [dtype inference]: like torch, a Python ``bool`` is bool, an ``int`` int64, a
``float`` the default dtype and a ``complex`` the default complex dtype; NumPy scalars and
arrays keep their dtype, tensors inside a list are scalars of their dtype, and the dtype of
a sequence is ``promote_types`` over its items.
"""
from __future__ import annotations

import ctypes
import math
import numbers
import warnings
from collections.abc import Sequence

import numpy as np

from ember import _dtype
from ember._device import to_device
from ember._meta_tensor import to_meta
from ember._state import state
from ember._tensor import Tensor, _make

_PY_CATEGORY = {bool: 0, int: 1, float: 2, complex: 3}
_NP_UNSUPPORTED = ("can't convert np.ndarray of type {}. The only supported types are: float64, "
                   "float32, float16, complex64, complex128, int64, int32, int16, int8, uint64, "
                   "uint32, uint16, uint8, and bool.")


def _np_dtype_of(np_dtype):
    """The ember dtype of an array's NumPy dtype (TypeError with torch's message if none)."""
    d = _dtype._BY_NP.get(np_dtype)
    if d is not None:
        return _dtype._used(d)
    if np_dtype.isnative is False and np_dtype.newbyteorder("=") in _dtype._BY_NP:
        return _dtype._BY_NP[np_dtype.newbyteorder("=")]
    raise TypeError(_NP_UNSUPPORTED.format(f"numpy.{np_dtype.type.__name__}"))


def _is_sequence(x):
    """Python's sequence protocol as torch sees it (tensors and strings are not sequences
    here: tensors inside a list are scalars)."""
    if isinstance(x, (list, tuple, range)):
        return True
    if isinstance(x, (str, bytes, dict, set, frozenset, Tensor, np.generic)):
        return False
    if isinstance(x, np.ndarray):
        return x.ndim > 0
    if isinstance(x, (Sequence, memoryview)):
        return True
    return hasattr(type(x), "__getitem__") and hasattr(type(x), "__len__") and \
        not isinstance(x, type)


def _leaf_dtype(x):
    """The dtype torch infers for one scalar item."""
    t = type(x)
    c = _PY_CATEGORY.get(t)
    if c is not None:
        return _SCALAR_DT[c]()
    if isinstance(x, Tensor):
        return x.dtype
    if isinstance(x, np.generic):
        return _np_dtype_of(x.dtype)
    if isinstance(x, np.ndarray):         # 0-d array
        return _np_dtype_of(x.dtype)
    if isinstance(x, (str, bytes)):
        raise TypeError(f"new(): invalid data type '{t.__name__}'")
    if isinstance(x, bool):
        return _dtype.bool
    if isinstance(x, numbers.Integral) and hasattr(x, "__index__"):
        return _dtype.int64
    if isinstance(x, float):
        return _dtype.default_float()
    if isinstance(x, complex):
        return _dtype._default_complex()
    raise RuntimeError(f"Could not infer dtype of {t.__name__}")


_SCALAR_DT = (lambda: _dtype.bool, lambda: _dtype.int64, _dtype.default_float,
              _dtype._default_complex)


def _compute_sizes(data):
    sizes = []
    x = data
    while _is_sequence(x) or x is not data and isinstance(x, (np.ndarray, str)):
        if isinstance(x, str):            # torch reads a nested string as a sequence
            raise ValueError("too many dimensions 'str'")
        if isinstance(x, np.ndarray):
            if x.ndim == 0:               # a 0-d array first in a list has no len()
                raise TypeError("len() of unsized object")
            sizes.extend(x.shape)
            break
        n = len(x)
        sizes.append(n)
        if n == 0:
            break
        x = x[0]
    return sizes


def _scan(obj, dim, sizes, types, dtypes, has_tensor):
    """Check that ``obj`` is rectangular with ``sizes`` (torch's messages) and collect the
    types of its leaves (Python types in ``types``, dtypes of arrays/tensors in ``dtypes``)."""
    if isinstance(obj, np.ndarray):
        _warn_arrays(obj)
        if list(obj.shape) != list(sizes[dim:]):
            got = obj.shape[0] if obj.ndim else 0
            raise ValueError(f"expected sequence of length {sizes[dim]} at dim {dim} "
                             f"(got {got})")
        dtypes.add(_np_dtype_of(obj.dtype))
        return
    n = len(obj)
    if n != sizes[dim]:
        raise ValueError(f"expected sequence of length {sizes[dim]} at dim {dim} (got {n})")
    if dim == len(sizes) - 1:
        ts = set(map(type, obj))
        for t in ts:
            if t in _PY_CATEGORY:
                types.add(t)
                continue
            for x in obj:
                if type(x) is t:
                    if t is np.ndarray:
                        _warn_arrays(x)
                    if _is_sequence(x):
                        raise TypeError(f"'{t.__name__}' object cannot be interpreted as an "
                                        f"integer")
                    if isinstance(x, Tensor):
                        has_tensor[0] = True
                    dtypes.add(_leaf_dtype(x))
        return
    for x in obj:
        if isinstance(x, str):
            raise TypeError("new(): invalid data type 'str'")
        if not _is_sequence(x):
            raise TypeError("not a sequence")
        _scan(x, dim + 1, sizes, types, dtypes, has_tensor)


def _tensors_to_items(obj, as_index):
    """Tensors inside a list are read as torch reads them: through ``__index__`` for an
    integer or bool target (one element of an integer or bool dtype), else ``item()``."""
    if isinstance(obj, Tensor):
        if as_index and (obj.numel() != 1 or obj.dtype.is_floating_point or obj.is_complex()):
            raise TypeError("only integer tensors of a single element can be converted to an "
                            "index")
        if obj.numel() != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        if not as_index and obj.requires_grad and state.grad_enabled:
            from ember._runtime_flags import warn_once
            warn_once("scalar of a tensor that requires grad",
                      "Converting a tensor with requires_grad=True to a scalar may lead to "
                      "unexpected behavior.\nConsider using tensor.detach() first.",
                      stacklevel=_user_stacklevel() + 1)
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj
    if _is_sequence(obj):
        return [_tensors_to_items(x, as_index) for x in obj]
    return obj


def _check_int_range(arr, dtype):
    """torch's overflow check for Python integers stored into an integer dtype (negative
    values may wrap into unsigned types, as in torch)."""
    info = np.iinfo(dtype.np)
    lo = -info.max - 1 if dtype.np.kind == "u" else info.min
    if arr.size and (arr.min() < lo or arr.max() > info.max):
        raise RuntimeError(f"value cannot be converted to type {dtype.name} without overflow")


def _flat_numbers(data):
    """The array of a short flat list of plain Python ints (int64) or floats (the default
    float dtype), the common literal (``torch.tensor([0, 1])``: 37 -> 8 us); None for
    anything else, which takes the general path."""
    if len(data) > 64 or not data:
        return None
    t = type(data[0])
    if t is int:
        if all(type(v) is int for v in data) and \
                -0x8000000000000000 <= min(data) and max(data) <= 0x7FFFFFFFFFFFFFFF:
            return np.array(data, np.int64)
    elif t is float:
        if all(type(v) is float for v in data) and max(map(abs, data)) < 3.0e38:
            return np.array(data, _dtype.default_float().np)   # (NaN: the general path)
    return None


def _from_sequence(data, dtype):
    """A fresh NumPy array from nested Python data (torch's rules, NumPy's speed)."""
    if dtype is None and type(data) in (list, tuple) and \
            (arr := _flat_numbers(data)) is not None:
        return arr
    sizes = _compute_sizes(data)
    types, dtypes, has_tensor = set(), set(), [False]
    if sizes and 0 not in sizes[:-1] or sizes and sizes[-1] != 0:
        if 0 not in sizes:
            _scan(data, 0, sizes, types, dtypes, has_tensor)
    inferred = None
    for t in types:
        d = _SCALAR_DT[_PY_CATEGORY[t]]()
        inferred = d if inferred is None else _dtype.promote_types(inferred, d)
    for d in dtypes:
        inferred = d if inferred is None else _dtype.promote_types(inferred, d)
    if inferred is None:                  # empty: the default dtype
        inferred = _dtype.default_float()
    target = inferred if dtype is None else dtype
    if has_tensor[0]:
        data = _tensors_to_items(data, target.np.kind in "iub")
    if 0 in sizes:
        return np.zeros(sizes, target.np)
    return _convert(data, target, complex in types, types)


def _user_stacklevel():
    from ember._runtime_flags import user_stacklevel
    return user_stacklevel() - 1          # counted from our caller


def _warn_arrays(arr):
    """torch's once-a-process warning for each array (and each row of one, down to 1-D rows)
    met inside a list; every one warns after ``set_warn_always(True)``."""
    from ember._runtime_flags import warn_once
    count = 1 + sum(math.prod(arr.shape[:k]) for k in range(1, arr.ndim))
    for _ in range(count):
        warn_once("tensor from a list of arrays",
                  "Creating a tensor from a list of numpy.ndarrays is extremely slow. Please "
                  "consider converting the list to a single numpy.ndarray with numpy.array() "
                  "before converting to a tensor.", stacklevel=_user_stacklevel() + 1)


def _convert(data, target, has_complex, types):
    if target is _dtype.complex32:      # (real, imag) float16 pairs, made from complex64
        from ember._kernels.complex32 import from_complex
        from ember._ops.complex32 import warn_experimental
        warn_experimental()
        return from_complex(_convert(data, _dtype.complex64, has_complex, types))
    kind = target.np.kind
    if has_complex and kind != "c":
        raise TypeError("must be real number, not complex")
    if target is _dtype.uint64 and int in types and float not in types:  # unsigned 64-bit
        if _has_huge_int(data, 0, 2 ** 64):
            neg = _has_huge_int(data, 0, 2 ** 200)
            raise OverflowError("can't convert negative int to unsigned" if neg else
                                "int too big to convert")
        return np.array(data, dtype=object).astype(np.uint64)
    try:
        arr = np.array(data)
    except OverflowError:
        raise ValueError("Overflow when unpacking long long") from None
    if arr.dtype == object or arr.dtype.kind == "u" and arr.dtype.itemsize == 8 and \
            int in types:
        if int in types and _has_huge_int(data):
            raise ValueError("Overflow when unpacking long long")
        arr = np.array(data, dtype=target.np)
    with np.errstate(all="ignore"):
        if kind in "iu":
            if arr.dtype.kind == "f":
                if not np.isfinite(arr).all():
                    raise RuntimeError(f"value cannot be converted to type {target.name} "
                                       f"without overflow")
                arr = np.trunc(arr)
            if arr.dtype.kind in "iuf":
                _check_int_range(arr, target)
        if kind == "b" and arr.dtype.kind == "c":
            return arr != 0
        return arr.astype(target.np)


def _has_huge_int(obj, lo=-2 ** 63, hi=2 ** 63):
    if isinstance(obj, int) and not isinstance(obj, bool):
        return not lo <= obj < hi
    if isinstance(obj, (list, tuple)):
        return any(_has_huge_int(x, lo, hi) for x in obj)
    return False


def _from_numpy_copy(arr, dtype):
    if arr.dtype.kind in "OSUVMm" or arr.dtype not in _dtype._BY_NP and \
            not (not arr.dtype.isnative and arr.dtype.newbyteorder("=") in _dtype._BY_NP):
        raise TypeError(_NP_UNSUPPORTED.format(f"numpy.{arr.dtype.type.__name__}"))
    if not arr.dtype.isnative:          # (an array inside a list is converted, as in torch)
        raise ValueError("given numpy array has byte order different from the native byte "
                         "order. Conversion between byte orders is currently not supported.")
    _check_strides(arr)
    d = _np_dtype_of(arr.dtype) if dtype is None else dtype
    with np.errstate(all="ignore"):
        return np.array(arr, dtype=d.np, copy=True)


def _check_strides(arr):
    if any(s < 0 for s in arr.strides):
        raise ValueError("At least one stride in the given numpy array is negative, and tensors "
                         "with negative strides are not currently supported. (You can probably "
                         "work around this by making a copy of your array  with array.copy().) ")


def _to_array(data, dtype):
    """A fresh NumPy array holding ``data`` with torch's dtype inference."""
    if isinstance(data, Tensor):
        with np.errstate(all="ignore"):
            return np.array(data._data, dtype=None if dtype is None else dtype.np, copy=True)
    if isinstance(data, np.ndarray):
        return _from_numpy_copy(data, dtype)
    if isinstance(data, np.generic):
        d = _leaf_dtype(data) if dtype is None else dtype
        return _convert_scalar(data.item(), d)
    t = type(data)
    if t in _PY_CATEGORY:
        d = _SCALAR_DT[_PY_CATEGORY[t]]() if dtype is None else dtype
        return _convert_scalar(data, d)
    if _is_sequence(data):
        if isinstance(data, memoryview):
            data = data.tolist()
        elif not isinstance(data, (list, tuple)) and hasattr(data, "__array__"):
            return _from_numpy_copy(np.asarray(data), dtype)
        return _from_sequence(data, dtype)
    if data is None:
        raise RuntimeError("Could not infer dtype of NoneType")
    _leaf_dtype(data)                     # raises the right error for unsupported objects
    d = _leaf_dtype(data) if dtype is None else dtype
    return _convert_scalar(data, d)


def _convert_scalar(value, dtype):
    kind = dtype.np.kind
    if isinstance(value, complex) and kind != "c":
        if kind == "b":
            return np.array(value != 0)
        raise TypeError("must be real number, not complex")
    if isinstance(value, int) and not isinstance(value, bool):
        if not -2 ** 63 <= value < 2 ** 63:
            raise ValueError("Overflow when unpacking long long")
    if kind in "iu" and not isinstance(value, bool):
        if isinstance(value, float):
            if not math.isfinite(value):
                raise RuntimeError(f"value cannot be converted to type {dtype.name} without "
                                   f"overflow")
            value = math.trunc(value)
        info = np.iinfo(dtype.np)
        lo = -info.max - 1 if kind == "u" else info.min
        if not lo <= value <= info.max:
            raise RuntimeError(f"value cannot be converted to type {dtype.name} without overflow")
        if kind == "u":
            value %= info.max + 1
    with np.errstate(all="ignore"):
        return np.array(value, dtype=dtype.np)


def _finish(t, requires_grad):
    if state.inference_mode:           # Note [inference tensors] (ember/autograd/grad_mode.py)
        t._autograd_meta().inference = True
    if requires_grad:
        if not (t.is_floating_point() or t.is_complex()):
            raise RuntimeError("Only Tensors of floating point and complex dtype can require "
                               "gradients")
        t._requires_grad = True
    return t


def _dtype_arg(dtype, fname="tensor"):
    d = _dtype.dtype_argument(dtype, fname)
    if d in _dtype.QUANTIZED:       # torch's own refusal: it cannot store numbers as these
        raise RuntimeError("store_scalar: invalid type")
    return d


def tensor(data, *, dtype=None, device=None, requires_grad=False, pin_memory=False):
    """A new tensor holding a copy of ``data`` (nested lists, numbers, arrays, tensors)."""
    if isinstance(data, Tensor):
        warnings.warn("To copy construct from a tensor, it is recommended to use "
                      "sourceTensor.detach().clone() or sourceTensor.detach().clone()."
                      "requires_grad_(True), rather than torch.tensor(sourceTensor).",
                      UserWarning, stacklevel=2)
    return _new_tensor(data, dtype, device, requires_grad)


def _new_tensor(data, dtype, device, requires_grad):
    on_meta = to_device(device).type == "meta"
    t = _finish(_make(_to_array(data, _dtype_arg(dtype))), requires_grad)
    return to_meta(t) if on_meta else t


def as_tensor(data, dtype=None, device=None):
    """Share memory with ``data`` when it already is a tensor/array of that dtype; otherwise
    copy (keeping autograd history when ``data`` is a tensor)."""
    to_device(device)
    dtype = _dtype_arg(dtype, "as_tensor")
    if isinstance(data, Tensor):
        return data if dtype is None or data.dtype is dtype else data.to(dtype)
    if isinstance(data, np.ndarray):
        d = _dtype._BY_NP.get(data.dtype)
        if d is not None and (dtype is None or dtype is d):
            return from_numpy(data)
        return _make(_from_numpy_copy(data, dtype))
    return _make(_to_array(data, dtype))


def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad=None):
    """Like NumPy's asarray: shares memory with tensors, arrays, DLPack exporters and
    buffers unless a copy is needed (or ``copy=True``); ``copy=False`` raises when it can't
    alias."""
    to_device(device)
    dtype = _dtype_arg(dtype, "asarray")
    t = _asarray(obj, dtype, copy)
    if requires_grad is None:
        if isinstance(obj, Tensor) and obj._requires_grad:
            warnings.warn("torch.asarray: unspecified requires_grad now defaults to "
                          "obj.requires_grad instead of False. Pass requires_grad=False "
                          "explicitly to get the old behavior and silence this warning.",
                          UserWarning, stacklevel=2)
        return t
    if bool(requires_grad) != t._requires_grad:
        if requires_grad:
            _finish(t, True) if t._grad_fn is None else None
        else:
            t.requires_grad_(False)
    return t


def _alias_error(src, dst):
    raise ValueError(f"can't alias tensor with dtype '{_dtype.scalar_type_name(src)}' into dtype "
                     f"'{_dtype.scalar_type_name(dst)}'.")


def _asarray(obj, dtype, copy):
    if isinstance(obj, Tensor):
        if dtype is not None and obj.dtype is not dtype:
            if copy is False:
                _alias_error(obj.dtype, dtype)
            return obj.to(dtype)
        return obj.clone() if copy else obj
    if isinstance(obj, np.ndarray):
        d = _dtype._BY_NP.get(obj.dtype)
        if d is not None and (dtype is None or d is dtype) and not copy:
            return from_numpy(obj)
        if copy is False:
            if d is None:
                raise TypeError(_NP_UNSUPPORTED.format(f"numpy.{obj.dtype.type.__name__}"))
            _alias_error(d, dtype)
        return _make(_from_numpy_copy(obj, dtype))
    if hasattr(obj, "__dlpack__") or _is_capsule(obj):
        t = from_dlpack(obj)
        return _asarray(t, dtype, copy) if (dtype is not None and t.dtype is not dtype) or copy \
            else t
    if isinstance(obj, np.generic):
        return _make(_to_array(obj, dtype))
    if not isinstance(obj, (list, tuple, range)) and _has_buffer(obj):
        return frombuffer(obj, dtype=dtype or _dtype.default_float()) if not copy else \
            frombuffer(obj, dtype=dtype or _dtype.default_float()).clone()
    if copy is False:
        raise ValueError("can't alias arbitrary sequence into a tensor.")
    return _make(_to_array(obj, dtype))


def _has_buffer(obj):
    try:
        memoryview(obj)
        return True
    except TypeError:
        return False


def _is_capsule(obj):
    return type(obj).__name__ == "PyCapsule"


def from_numpy(ndarray):
    """A tensor sharing memory with a NumPy array."""
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(ndarray).__name__})")
    if ndarray.dtype not in _dtype._BY_NP:
        if not ndarray.dtype.isnative and ndarray.dtype.newbyteorder("=") in _dtype._BY_NP:
            raise ValueError("given numpy array has byte order different from the native byte "
                             "order. Conversion between byte orders is currently not supported.")
        raise TypeError(_NP_UNSUPPORTED.format(f"numpy.{ndarray.dtype.type.__name__}"))
    _check_strides(ndarray)
    _dtype._used(_dtype._BY_NP[ndarray.dtype])
    if not ndarray.flags.writeable:
        _warn_readonly()
        ndarray = _writable_alias(ndarray)
    t = _make(ndarray.view())           # its own array object: reshaping `ndarray` in place
                                        # leaves the tensor as it is (torch)
    if state.inference_mode:
        t._autograd_meta().inference = True
    return t


def _writable_alias(arr):
    """A writable array on the memory of the read-only ``arr``: like torch, a tensor from a
    non-writable array shares its memory and in-place ops write into it. An array with
    overlapping elements (a zero stride) stays read-only, as ember's expanded tensors are."""
    if arr.size == 0 or any(st == 0 and n > 1 for n, st in zip(arr.shape, arr.strides)):
        return arr
    span = arr.itemsize + sum((n - 1) * st for n, st in zip(arr.shape, arr.strides))
    buf = (ctypes.c_char * span).from_address(arr.ctypes.data)
    buf.owner = arr                       # the alias keeps the array (and its memory) alive
    return np.ndarray(arr.shape, arr.dtype, buffer=buf, strides=arr.strides)


_readonly_warned = [False]


def _warn_readonly():
    if not _readonly_warned[0]:
        _readonly_warned[0] = True
        warnings.warn("The given NumPy array is not writable, and PyTorch does not support "
                      "non-writable tensors. This means writing to this tensor will result in "
                      "undefined behavior. You may want to copy the array to protect its data or "
                      "make it writable before converting it to a tensor. This type of warning "
                      "will be suppressed for the rest of this program.", UserWarning,
                      stacklevel=3)


class _Capsule:
    """Adapter giving a bare DLPack capsule the ``__dlpack__`` protocol NumPy expects."""

    def __init__(self, capsule):
        self.capsule = capsule

    def __dlpack__(self, stream=None, **kwargs):
        return self.capsule

    def __dlpack_device__(self):
        return (1, 0)


def from_dlpack(ext_tensor):
    """Zero-copy import of an object with ``__dlpack__`` (NumPy, torch, JAX... on CPU) or of
    a DLPack capsule."""
    if isinstance(ext_tensor, Tensor):
        return ext_tensor
    if _is_capsule(ext_tensor):
        ext_tensor = _Capsule(ext_tensor)
    elif not hasattr(ext_tensor, "__dlpack__"):
        raise TypeError(f"from_dlpack(): expected an object with a __dlpack__ method or a "
                        f"DLPack capsule, got {type(ext_tensor).__name__}")
    if hasattr(ext_tensor, "__dlpack_device__"):
        dev_type, _ = ext_tensor.__dlpack_device__()
        if int(dev_type) not in (1, 3):          # kDLCPU, kDLCUDAHost
            raise RuntimeError(f"ember can only import CPU tensors through DLPack (got device "
                               f"type {int(dev_type)})")
    try:
        arr = np.from_dlpack(ext_tensor)
    except BufferError as e:
        raise RuntimeError(f"from_dlpack(): {e}") from None
    if arr.dtype not in _dtype._BY_NP:
        raise TypeError(_NP_UNSUPPORTED.format(f"numpy.{arr.dtype.type.__name__}"))
    if not arr.flags.writeable:
        try:
            arr.flags.writeable = True
        except ValueError:
            arr = _writable_alias(arr)
    return _make(arr)


def _writable_alias(arr):
    """A writable array over ``arr``'s memory. NumPy imports a legacy DLPack capsule (no
    read-only flag) as read-only, where torch's import is writable; the producer's memory
    is writable by the protocol's contract, so ember aliases it (``arr`` kept alive as the
    buffer's owner)."""
    import ctypes
    if arr.size == 0:
        return np.array(arr)
    lo = sum(min(0, (n - 1) * st) for n, st in zip(arr.shape, arr.strides))
    hi = sum(max(0, (n - 1) * st) for n, st in zip(arr.shape, arr.strides)) + arr.itemsize
    start = arr.__array_interface__["data"][0] + lo
    raw = (ctypes.c_char * (hi - lo)).from_address(start)
    raw._owner = arr                  # the capsule's memory lives as long as this buffer
    return np.ndarray(arr.shape, arr.dtype, buffer=raw, offset=-lo, strides=arr.strides)


def frombuffer(buffer, *, dtype, count=-1, offset=0, requires_grad=False):
    """A 1-D tensor sharing memory with an object implementing the buffer protocol."""
    d = _dtype.to_dtype(dtype)
    try:
        mv = memoryview(buffer)
    except TypeError:
        raise ValueError(f"object does not implement Python buffer protocol.") from None
    nbytes = mv.nbytes
    size = d.itemsize
    if not (nbytes > 0 and count != 0):
        raise ValueError(f"both buffer length ({nbytes}) and count ({count}) must not be 0")
    if not 0 <= offset < nbytes:
        raise ValueError(f"offset ({offset} bytes) must be non-negative and no greater than "
                         f"buffer length ({nbytes} bytes) minus 1")
    if not (count > 0 or (nbytes - offset) % size == 0):
        raise ValueError(f"buffer length ({nbytes - offset} bytes) after offset ({offset} bytes) "
                         f"must be a multiple of element size ({size})")
    if count < 0:
        count = (nbytes - offset) // size
    if offset + count * size > nbytes:
        raise ValueError(f"requested buffer length ({count} * {size} bytes) after offset "
                         f"({offset} bytes) must not be greater than actual buffer length "
                         f"({nbytes} bytes)")
    arr = np.frombuffer(mv, dtype=d.np, count=count, offset=offset)
    if not arr.flags.writeable:
        _warn_readonly_buffer()
        try:
            arr.flags.writeable = True
        except ValueError:
            pass
    return _finish(_make(arr), requires_grad)


_buffer_warned = [False]


def _warn_readonly_buffer():
    if not _buffer_warned[0]:
        _buffer_warned[0] = True
        warnings.warn("The given buffer is not writable, and PyTorch does not support "
                      "non-writable tensors. This means you can write to the underlying "
                      "(supposedly non-writable) buffer using the tensor. You may want to copy "
                      "the buffer to protect its data or make it writable before converting it "
                      "to a tensor. This type of warning will be suppressed for the rest of this "
                      "program.", UserWarning, stacklevel=3)
