"""torch.types: the type aliases annotations use (``Number``, ``Device``, ``_size``...)."""
from __future__ import annotations

import os
from typing import IO, Union

from ember._device import device as _device
from ember._dtype import dtype as _dtype
from ember._tensor import Size, Tensor

__all__ = ["Number", "Device", "FileLike", "Storage", "Size", "Tensor"]

_int = int
_float = float
_bool = bool
_complex = complex
_dtype = _dtype
_device = _device
_size = Union[Size, list, tuple]
_layout = object
_dispatchkey = Union[str, object]
_qscheme = object

Number = Union[int, float, bool]
IntLikeType = int
FloatLikeType = float
BoolLikeType = bool
Device = Union[_device, str, int, None]
FileLike = Union[str, os.PathLike, IO[bytes]]


def __getattr__(name):
    if name == "Storage":
        from ember.storage import UntypedStorage
        return UntypedStorage
    raise AttributeError(f"module 'torch.types' has no attribute '{name}'")
