"""Tensor construction from data: ``tensor``, ``as_tensor``, ``asarray``, ``from_numpy``.

Factories that take a size (``zeros``, ``randn`` ...) are op records in
``ember/_ops/factory.py``; these functions wrap existing data and are not ops.
"""
from __future__ import annotations

import numbers

import numpy as np

from ember import _dtype
from ember._device import to_device
from ember._tensor import Tensor, _make


def _infer_dtype(data):
    """torch's inference for Python data: bool < int64 < default float < default complex."""
    kind = 0
    stack = [data]
    while stack:
        x = stack.pop()
        if isinstance(x, Tensor):
            return None
        if isinstance(x, (list, tuple)):
            stack.extend(x)
        elif isinstance(x, bool) or isinstance(x, np.bool_):
            kind = max(kind, 0)
        elif isinstance(x, numbers.Integral):
            kind = max(kind, 1)
        elif isinstance(x, numbers.Real):
            kind = max(kind, 2)
        elif isinstance(x, numbers.Complex):
            kind = max(kind, 3)
        else:
            raise TypeError(f"Could not infer dtype of {type(x).__name__}")
    return (_dtype.bool, _dtype.int64, _dtype.default_float(), _dtype._default_complex())[kind]


def _to_array(data, dtype):
    """NumPy array (fresh) of ``data`` with torch's dtype inference."""
    if isinstance(data, Tensor):
        arr = data._data
        return np.array(arr, dtype=dtype.np if dtype else arr.dtype, copy=True)
    if isinstance(data, np.ndarray):
        d = dtype.np if dtype else _dtype.from_numpy_dtype(data.dtype).np
        return np.array(data, dtype=d, copy=True)
    if hasattr(data, "__dlpack__") and not isinstance(data, (list, tuple)):
        return np.array(np.from_dlpack(data), dtype=dtype.np if dtype else None, copy=True)
    if isinstance(data, (list, tuple)) and any(isinstance(x, Tensor) for x in _flat_first(data)):
        data = _tensors_to_lists(data)
    if dtype is None:
        if isinstance(data, np.generic):
            dtype = _dtype.from_numpy_dtype(data.dtype)
        else:
            dtype = _infer_dtype(data)
    try:
        return np.array(data, dtype=dtype.np)
    except (ValueError, TypeError) as e:
        if "inhomogeneous" in str(e) or "sequence" in str(e):
            raise ValueError(f"expected sequence of equal-length lists: {e}") from None
        raise TypeError(f"can't convert {type(data).__name__} to a tensor: {e}") from None


def _flat_first(data):
    while isinstance(data, (list, tuple)) and data:
        yield data[0]
        data = data[0]


def _tensors_to_lists(data):
    if isinstance(data, Tensor):
        if data.numel() != 1 and data.ndim == 0:
            return data.item()
        return data._data.tolist() if data.ndim else data.item()
    if isinstance(data, (list, tuple)):
        return [_tensors_to_lists(x) for x in data]
    return data


def tensor(data, *, dtype=None, device=None, requires_grad=False, pin_memory=False):
    """A new tensor holding a copy of ``data`` (nested lists, numbers, arrays)."""
    to_device(device)
    dtype = None if dtype is None else _dtype.to_dtype(dtype)
    if isinstance(data, Tensor):
        import warnings
        warnings.warn("To copy construct from a tensor, it is recommended to use "
                      "sourceTensor.clone().detach() or sourceTensor.clone().detach()."
                      "requires_grad_(True), rather than torch.tensor(sourceTensor).",
                      UserWarning, stacklevel=2)
    t = _make(_to_array(data, dtype))
    if requires_grad:
        t.requires_grad_(True)
    return t


def as_tensor(data, dtype=None, device=None):
    """Share memory with ``data`` when it already is a tensor/array of that dtype."""
    to_device(device)
    dtype = None if dtype is None else _dtype.to_dtype(dtype)
    if isinstance(data, Tensor):
        return data if dtype is None or data.dtype is dtype else data.to(dtype)
    if isinstance(data, np.ndarray):
        try:
            d = _dtype.from_numpy_dtype(data.dtype)
        except TypeError:
            d = None
        if d is not None and (dtype is None or dtype is d):
            return from_numpy(data)
    return _make(_to_array(data, dtype))


def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad=False):
    """Like NumPy's asarray: no copy unless needed (or ``copy=True``)."""
    if copy:
        t = tensor(obj._data if isinstance(obj, Tensor) else obj, dtype=dtype, device=device)
    else:
        if hasattr(obj, "__dlpack__") and not isinstance(obj, (Tensor, np.ndarray)):
            obj = from_dlpack(obj)
        t = as_tensor(obj, dtype=dtype, device=device)
    if requires_grad:
        t.requires_grad_(True)
    return t


def from_numpy(ndarray):
    """A tensor sharing memory with a NumPy array."""
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(ndarray).__name__})")
    _dtype.from_numpy_dtype(ndarray.dtype)
    if any(s < 0 for s in ndarray.strides):
        raise ValueError("At least one stride in the given numpy array is negative, and tensors "
                         "with negative strides are not currently supported. (You can probably "
                         "work around this by making a copy of your array  with array.copy().) ")
    if not ndarray.dtype.isnative:
        raise TypeError("given numpy array has byte order different from the native byte order. "
                        "Conversion between byte orders is currently not supported.")
    return _make(ndarray)


def from_dlpack(ext_tensor):
    """Zero-copy import of any object with ``__dlpack__`` (NumPy, torch, JAX, CuPy on CPU)."""
    if isinstance(ext_tensor, Tensor):
        return ext_tensor
    arr = np.from_dlpack(ext_tensor)
    return _make(arr)
