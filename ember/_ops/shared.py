"""``Tensor.share_memory_`` / ``is_shared``: a tensor's memory moved into an anonymous
shared mapping, which processes forked afterwards (``multiprocessing``'s default on Linux,
and ``torch.multiprocessing.Process``) write to and read from in place: Hogwild training
(``model.share_memory()`` then workers stepping the same parameters) updates the parent's
model as torch's does. Tensors pickled to a spawned process still travel by value."""
from __future__ import annotations

import mmap

import numpy as np

from ember._ops.registry import public


def _owner(arr):
    """The object at the bottom of ``arr``'s chain of bases."""
    while isinstance(arr, np.ndarray) and arr.base is not None:
        arr = arr.base
    return arr


def _in_shared_mapping(arr):
    return isinstance(_owner(arr), mmap.mmap)


@public(method=True, function=False)
def is_shared(self):
    """Whether the tensor's memory is shared with processes forked from now on."""
    return isinstance(self._data, np.ndarray) and _in_shared_mapping(self._data)


@public(method=True, function=False)
def share_memory_(self):
    """Move the tensor's memory into a shared anonymous mapping (same values, shape and
    strides; a no-op when already shared). Views taken earlier keep the old memory."""
    arr = self._data
    if not isinstance(arr, np.ndarray) or arr.size == 0 or _in_shared_mapping(arr):
        return self
    lo = sum(min(0, (n - 1) * s) for n, s in zip(arr.shape, arr.strides))
    hi = sum(max(0, (n - 1) * s) for n, s in zip(arr.shape, arr.strides)) + arr.itemsize
    buf = mmap.mmap(-1, hi - lo, flags=mmap.MAP_SHARED)
    shared = np.ndarray(arr.shape, arr.dtype, buffer=buf, offset=-lo, strides=arr.strides)
    np.copyto(shared, arr)
    if not arr.flags.writeable:
        shared.flags.writeable = False
    self._data = shared
    return self


# Tensor's placeholder (never shared) is replaced here (install_methods keeps methods the
# class already defines)
from ember._tensor import Tensor  # noqa: E402
Tensor.is_shared = is_shared
