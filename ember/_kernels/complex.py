"""Complex view kernels: they return NumPy views sharing memory with their input."""
from __future__ import annotations

import numpy as np

_REAL = {np.dtype(np.complex64): np.float32, np.dtype(np.complex128): np.float64}
_CPLX = {np.dtype(np.float32): np.complex64, np.dtype(np.float64): np.complex128,
         np.dtype(np.float16): None}    # complex32 (ember/_kernels/complex32.py), on use
_TORCH_NAME = {"int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char",
               "uint8": "Byte", "bool": "Bool", "float16": "Half", "complex64": "ComplexFloat",
               "complex128": "ComplexDouble"}


def view_as_real(a):
    if a.dtype.kind != "c":
        raise RuntimeError("view_as_real is only supported for complex tensors")
    rd = _REAL[a.dtype]
    shape, strides = a.shape + (2,), tuple(a.strides) + (np.dtype(rd).itemsize,)
    if a.size == 0:
        return np.zeros(shape, rd)
    return np.lib.stride_tricks.as_strided(_real_base(a, rd), shape=shape, strides=strides,
                                           writeable=a.flags.writeable)


def _real_base(a, rd):
    """A real-typed view starting at ``a``'s first element (same buffer)."""
    first = np.lib.stride_tricks.as_strided(a, shape=(1,), strides=(a.itemsize,))
    return first.view(rd)


def _complex32():
    """complex32's array dtype; turns on its dispatcher layer (ember/_ops/complex32.py)."""
    from ember import _dtype
    return _dtype._used(_dtype.complex32).np


def view_as_complex(a):
    if a.dtype not in _CPLX:
        name = _TORCH_NAME.get(a.dtype.name, a.dtype.name)
        raise RuntimeError(f"view_as_complex is only supported for half, float and double "
                           f"tensors, but got a tensor of scalar type: {name}")
    if a.ndim == 0 or a.shape[-1] != 2:
        raise RuntimeError("Tensor must have a last dimension of size 2")
    isz = a.dtype.itemsize
    if a.size and a.strides[-1] != isz:      # (an empty array's strides carry no layout)
        raise RuntimeError("Tensor must have a last dimension with stride 1")
    if any((s // isz) % 2 for s, n in zip(a.strides[:-1], a.shape[:-1]) if n > 1):
        raise RuntimeError("Tensor must have a stride divisible by 2 for all but last dimension")
    root = a
    while isinstance(root.base, np.ndarray):
        root = root.base
    if a.size and ((a.ctypes.data - root.ctypes.data) // isz) % 2:
        raise RuntimeError("Tensor must have a storage_offset divisible by 2")
    cd = _CPLX[a.dtype] or _complex32()
    if a.size == 0:
        return np.zeros(a.shape[:-1], cd)
    base = a.reshape(-1)[:2] if a.flags.c_contiguous else \
        np.lib.stride_tricks.as_strided(a, shape=(2,), strides=(isz,))
    c = base.view(cd)
    return np.lib.stride_tricks.as_strided(c, shape=a.shape[:-1], strides=a.strides[:-1],
                                           writeable=a.flags.writeable)
