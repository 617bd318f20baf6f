"""Storages: ``Tensor.untyped_storage()`` (bytes) and ``Tensor.storage()`` (typed elements).

A tensor's storage is the memory of its root (``_storage_base``, or itself): views share their
base's storage, so ``x[1:].untyped_storage().data_ptr() == x.untyped_storage().data_ptr()``
and writing through a storage writes the tensors over it. The storage of a root spans the
bytes its elements occupy (torch's ``from_numpy`` convention for strided arrays).
"""
from __future__ import annotations

import warnings
import weakref

import numpy as np

from ember import _dtype
from ember._kernels.shape import address, extent_bytes, from_address

_CACHE: "weakref.WeakValueDictionary[int, UntypedStorage]" = weakref.WeakValueDictionary()


def _root(tensor):
    b = tensor._storage_base
    return tensor if b is None else b


class UntypedStorage:
    """A flat array of bytes (torch.UntypedStorage)."""
    __slots__ = ("_bytes", "_owner", "_root_ref", "__weakref__")

    def __init__(self, *args, device=None):
        from ember._device import to_device
        to_device(device)
        if not args:
            data = np.zeros(0, np.uint8)
        elif len(args) == 1 and isinstance(args[0], (int, np.integer)):
            data = np.zeros(int(args[0]), np.uint8)
        elif len(args) == 1 and isinstance(args[0], (list, tuple, bytes, bytearray, str)):
            bad = next((v for v in args[0] if not isinstance(v, (int, np.integer))), None)
            if bad is not None:
                raise RuntimeError(f"torch.UntypedStorage(): tried to construct a storage from a "
                                   f"sequence ({type(args[0]).__name__}), but one of the items "
                                   f"was of type {type(bad).__name__} instead of int")
            data = np.array(list(args[0]), np.uint8)
        else:
            raise TypeError(f"UntypedStorage(): invalid arguments {args!r}")
        self._bytes = data
        self._owner = data
        self._root_ref = None

    @classmethod
    def _of(cls, tensor):
        root = _root(tensor)
        arr = root._data
        s = _CACHE.get(id(arr))
        if s is not None and s._owner is arr:
            return s
        s = cls._wrap(from_address(address(arr), (extent_bytes(arr),), (1,), np.uint8, arr,
                                   arr.flags.writeable), arr)
        s._root_ref = weakref.ref(root)         # (set_ growing the storage moves the root)
        _CACHE[id(arr)] = s
        return s

    @classmethod
    def _wrap(cls, byte_array, owner):
        s = object.__new__(cls)
        s._bytes = byte_array
        s._owner = owner
        s._root_ref = None
        return s

    # ------------------------------------------------------------------ metadata
    def nbytes(self):
        return self._bytes.shape[0]

    size = nbytes

    def __len__(self):
        return self._bytes.shape[0]

    def data_ptr(self):
        return address(self._bytes)

    def element_size(self):
        return 1

    @property
    def device(self):
        from ember._device import CPU
        return CPU

    @property
    def is_cuda(self):
        return False

    @property
    def is_sparse(self):
        return False

    def type(self):
        return "torch.UntypedStorage"

    def untyped(self):
        return self

    def is_shared(self):
        return False

    def share_memory_(self):
        return self

    def is_pinned(self, device="cuda"):
        return False

    def cpu(self):
        return self

    # ------------------------------------------------------------------ elements
    def __getitem__(self, idx):
        if isinstance(idx, slice):
            start, stop, step = idx.indices(len(self))
            if step != 1:
                raise RuntimeError(f"Trying to slice with a step of {step}, but only a step of "
                                   f"1 is supported")
            return UntypedStorage._wrap(self._bytes[start:max(stop, start)], self._owner)
        return int(self._bytes[_check_index(idx, len(self))])

    def __setitem__(self, idx, value):
        if not self._bytes.flags.writeable:
            raise RuntimeError("cannot write into a read-only storage")
        if isinstance(idx, slice):
            self._bytes[idx] = value
        else:
            self._bytes[_check_index(idx, len(self))] = value

    def __iter__(self):
        return iter(self.tolist())

    def tolist(self):
        return self._bytes.tolist()

    def fill_(self, value):
        self._bytes[...] = value
        return self

    def copy_(self, source, non_blocking=None):
        src = source._bytes if isinstance(source, UntypedStorage) else \
            source._untyped._bytes[:source.nbytes()]
        if src.shape[0] != len(self):
            raise RuntimeError(f"size mismatch, got {len(self)} and {src.shape[0]} bytes")
        self._bytes[...] = src
        return self

    def clone(self):
        data = self._bytes.copy()
        return UntypedStorage._wrap(data, data)

    def resize_(self, size):
        raise RuntimeError("Trying to resize storage that is not resizable")

    def __copy__(self):
        return self.clone()

    def __deepcopy__(self, memo):
        return self.clone()

    def __repr__(self):
        body = "\n".join(f" {v}" for v in self.tolist())
        head = f"[torch.storage.UntypedStorage(device=cpu) of size {len(self)}]"
        return f"{body}\n{head}" if body else head

    def _array(self, np_dtype):
        """The bytes seen as elements of ``np_dtype`` (a view)."""
        item = np.dtype(np_dtype).itemsize
        n = len(self) // item
        return self._bytes[:n * item].view(np_dtype)


def _check_index(idx, n):
    try:
        i = idx.__index__()
    except AttributeError:
        raise TypeError(f"can't index a torch.storage.UntypedStorage with "
                        f"{type(idx).__name__}") from None
    if not -n <= i < n:
        raise IndexError(f"index {i} out of range for storage of size {n}")
    return i + n if i < 0 else i


_warned = [False]


def _warn_typed(level=3):
    if not _warned[0]:
        _warned[0] = True
        warnings.warn("TypedStorage is deprecated. It will be removed in the future and "
                      "UntypedStorage will be the only storage class. This should only matter to "
                      "you if you are using storages directly.  To access UntypedStorage "
                      "directly, use tensor.untyped_storage() instead of tensor.storage()",
                      UserWarning, stacklevel=level)


class _LegacyStorageMeta(type):
    """Metaclass of the legacy storage classes: ``FloatStorage(...)`` builds a TypedStorage of
    float32 and ``isinstance(s, FloatStorage)`` asks whether a TypedStorage holds float32."""

    @property
    def dtype(cls):
        return _class_dtype(cls)

    def __instancecheck__(cls, obj):
        if cls is TypedStorage:
            return type.__instancecheck__(cls, obj)
        return isinstance(obj, TypedStorage) and obj.dtype is cls.dtype


class TypedStorage(metaclass=_LegacyStorageMeta):
    """Elements of one dtype over an UntypedStorage (torch.TypedStorage, deprecated)."""
    __slots__ = ("_untyped_storage", "dtype")
    is_sparse = False

    def __init__(self, *args, dtype=None, device=None, wrap_storage=None):
        _warn_typed()
        self.dtype = _dtype.get_default_dtype() if dtype is None else _dtype.to_dtype(dtype)
        if wrap_storage is not None:
            self._untyped_storage = wrap_storage
            return
        npd = self.dtype.np
        if not args:
            data = np.zeros(0, npd)
        elif len(args) == 1 and isinstance(args[0], (int, np.integer)):
            data = np.zeros(int(args[0]), npd)
        elif len(args) == 1 and isinstance(args[0], (list, tuple)):
            data = np.array(args[0], npd)
        else:
            raise TypeError(f"TypedStorage(): invalid arguments {args!r}")
        self._untyped_storage = UntypedStorage._wrap(data.view(np.uint8), data)

    @classmethod
    def _of(cls, tensor):
        _warn_typed(4)                  # (called by Tensor.storage(): the user's line)
        s = object.__new__(cls)
        s._untyped_storage = UntypedStorage._of(tensor)
        s.dtype = tensor.dtype
        return s

    @property
    def _untyped(self):
        return self._untyped_storage

    def untyped(self):
        return self._untyped_storage

    @property
    def _arr(self):
        return self._untyped_storage._array(self.dtype.np)

    def size(self):
        return len(self._untyped_storage) // self.dtype.itemsize

    def __len__(self):
        return self.size()

    def nbytes(self):
        return self.size() * self.dtype.itemsize

    def element_size(self):
        return self.dtype.itemsize

    def data_ptr(self):
        return self._untyped_storage.data_ptr()

    @property
    def device(self):
        return self._untyped_storage.device

    @property
    def is_cuda(self):
        return False

    def type(self, dtype=None, non_blocking=False):
        """The legacy class name (``'torch.FloatStorage'``); with ``dtype``, a converted copy."""
        if dtype is None:
            return f"torch.{_LEGACY_NAMES[self.dtype.name]}"
        if isinstance(dtype, str):
            dtype = _LEGACY[dtype.rsplit(".", 1)[-1]].dtype
        return self._to(_dtype.to_dtype(dtype))

    def pickle_storage_type(self):
        return _LEGACY_NAMES[self.dtype.name]

    def _to(self, dt):
        """A copy of the elements converted to ``dt``."""
        data = self._arr.astype(dt.np)
        return _typed(data, dt)

    def resize_(self, size):
        """Grow or shrink to ``size`` elements (new ones uninitialized: zeros here)."""
        if self._untyped_storage._root_ref is not None:
            raise RuntimeError("Trying to resize storage that is not resizable")
        data = np.zeros(int(size), self.dtype.np)
        n = min(int(size), self.size())
        data[:n] = self._arr[:n]
        self._untyped_storage = UntypedStorage._wrap(data.view(np.uint8), data)
        return self

    @classmethod
    def from_buffer(cls, buffer, byte_order="native", count=-1, offset=0, dtype=None):
        """Elements read from a bytes-like ``buffer`` (``byte_order``: native, little, big)."""
        dt = _dtype.to_dtype(dtype) if dtype is not None else _class_dtype(cls)
        npd = dt.np.newbyteorder({"native": "=", "little": "<", "big": ">"}[byte_order])
        data = np.frombuffer(buffer, npd, count, offset).astype(dt.np)
        return _typed(data, dt)

    @classmethod
    def from_file(cls, filename, shared=False, size=0):
        """``size`` elements of ``filename`` (``shared``: a writable mapping of the file)."""
        from ember._ops.api_gaps import from_file
        t = from_file(filename, shared, size, dtype=_class_dtype(cls))
        return t.storage() if t.numel() else _typed(np.zeros(0, t.dtype.np), t.dtype)

    def __reduce__(self):
        return (_typed, (self._arr.copy(), self.dtype))

    def is_shared(self):
        return False

    def share_memory_(self):
        return self

    def cpu(self):
        return self

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            raise RuntimeError("slices are only supported in UntypedStorage.__getitem__")
        return self._arr[_check_index(idx, self.size())].item()

    def __setitem__(self, idx, value):
        arr = self._arr
        if isinstance(idx, slice):
            arr[idx] = value
        else:
            arr[_check_index(idx, self.size())] = value

    def __iter__(self):
        return iter(self.tolist())

    def tolist(self):
        return self._arr.tolist()

    def fill_(self, value):
        self._arr[...] = value
        return self

    def copy_(self, source, non_blocking=None):
        src = source._arr if isinstance(source, TypedStorage) else \
            source._bytes.view(self.dtype.np)
        self._arr[...] = src
        return self

    def clone(self):
        return _typed(self._arr.copy(), self.dtype)

    def __repr__(self):
        body = "\n".join(f" {v}" for v in self.tolist())
        head = (f"[torch.storage.TypedStorage(dtype={self.dtype}, device=cpu) of size "
                f"{self.size()}]")
        return f"{body}\n{head}" if body else head


def _typed(data, dt):
    """A TypedStorage of ``dt`` owning the NumPy array ``data`` (1-D)."""
    s = object.__new__(TypedStorage)
    data = np.ascontiguousarray(data).reshape(-1)
    s._untyped_storage = UntypedStorage._wrap(data.view(np.uint8), data)
    s.dtype = dt
    return s


def _class_dtype(cls):
    if cls is TypedStorage:
        return _dtype.get_default_dtype()
    name = cls.__dict__.get("_legacy_dtype")
    return _dtype.get_default_dtype() if name is None else getattr(_dtype, name)


# torch's legacy typed storage classes: one per dtype; ``Storage`` follows the default dtype
_LEGACY_SPECS = (("FloatStorage", "float32"), ("DoubleStorage", "float64"),
                 ("HalfStorage", "float16"), ("BFloat16Storage", "bfloat16"),
                 ("LongStorage", "int64"), ("IntStorage", "int32"), ("ShortStorage", "int16"),
                 ("CharStorage", "int8"), ("ByteStorage", "uint8"), ("BoolStorage", "bool"),
                 ("ComplexFloatStorage", "complex64"), ("ComplexDoubleStorage", "complex128"),
                 ("QUInt8Storage", "quint8"), ("QInt8Storage", "qint8"),
                 ("QInt32Storage", "qint32"), ("QUInt4x2Storage", "quint4x2"))
_LEGACY_NAMES = {dt: name for name, dt in _LEGACY_SPECS}


def _legacy_new(cls, *args, wrap_storage=None, device=None, **kwargs):
    if kwargs:
        raise RuntimeError(f"{cls}.__new__ received an invalid combination of arguments. "
                           f"Expected one of:\n * no arguments\n * (int size)\n * (Sequence "
                           f"data)\n * (*, UntypedStorage wrap_storage)\nKeyword argument "
                           f"'{next(iter(kwargs))}' cannot be specified")
    if len(args) == 1 and isinstance(args[0], (str, bytes)):
        raise TypeError(f"new(): invalid data type '{type(args[0]).__name__}'")
    return TypedStorage(*args, dtype=cls.dtype, device=device, wrap_storage=wrap_storage)


def _make_legacy(name, dt):
    return _LegacyStorageMeta(name, (TypedStorage,), {
        "__slots__": (), "__new__": _legacy_new, "__module__": "torch", "_legacy_dtype": dt,
        "__doc__": f"Legacy storage class of {dt} elements (a TypedStorage)."})


_LEGACY = {name: _make_legacy(name, dt) for name, dt in _LEGACY_SPECS}
Storage = _make_legacy("Storage", None)      # the default dtype's storage class
globals().update(_LEGACY)


def _convert(dt_name):
    def convert(self):
        return self._to(getattr(_dtype, dt_name))
    convert.__doc__ = f"A copy converted to {dt_name}."
    return convert


for _meth, _dt in (("float", "float32"), ("double", "float64"), ("half", "float16"),
                   ("bfloat16", "bfloat16"), ("long", "int64"), ("int", "int32"),
                   ("short", "int16"), ("char", "int8"), ("byte", "uint8"), ("bool", "bool"),
                   ("complex_float", "complex64"), ("complex_double", "complex128")):
    setattr(TypedStorage, _meth, _convert(_dt))


def is_storage(obj):
    """Whether ``obj`` is a storage (untyped or typed); torch.is_storage."""
    return isinstance(obj, (UntypedStorage, TypedStorage))
