"""``ember.save`` / ``ember.load`` in PyTorch's own checkpoint format (torch.serialization).

The file is torch's zip archive (stored, records aligned to 64 bytes)::

    <archive>/data.pkl                pickle (protocol 2) of the object
    <archive>/.format_version         "1"
    <archive>/.storage_alignment      "64"
    <archive>/byteorder               "little"
    <archive>/data/<key>              raw bytes of each storage
    <archive>/version                 "3\\n"
    <archive>/.data/serialization_id  40 decimal digits

Tensors pickle the way torch pickles them, with torch's global names (written without
importing torch): ``torch._utils._rebuild_tensor_v2(storage, storage_offset, size, stride,
requires_grad, OrderedDict())`` where ``storage`` is the persistent id
``('storage', torch.FloatStorage, key, 'cpu', numel)``; parameters go through
``torch._utils._rebuild_parameter``; dtypes are the globals ``torch.float32`` ...; other ember
globals are written under their ``torch.`` names. So a file saved by ember loads in torch with
``weights_only=True``, and torch's files load here: the reader maps torch's names back to
ember. Tensors that shared a storage when saved share one after loading.

Loading is restricted by default (``weights_only=True``): a global outside the allowlist (plus
``add_safe_globals``) raises ``pickle.UnpicklingError`` naming it.
"""
from __future__ import annotations

import collections
import contextlib
import io
import os
import _compat_pickle
import pickle
import random as _pyrandom
import sys
import threading
import zipfile

import numpy as np

from ember import _dtype

__all__ = ["save", "load", "add_safe_globals", "get_safe_globals", "clear_safe_globals",
           "safe_globals", "get_default_load_endianness", "set_default_load_endianness",
           "save_safetensors", "load_safetensors", "DEFAULT_PROTOCOL", "StorageType"]

DEFAULT_PROTOCOL = 2
_ALIGN = 64

# dtype name -> torch's legacy typed-storage class name
_STORAGE_NAMES = {
    "float32": "FloatStorage", "float64": "DoubleStorage", "float16": "HalfStorage",
    "bfloat16": "BFloat16Storage", "int64": "LongStorage", "int32": "IntStorage",
    "int16": "ShortStorage", "int8": "CharStorage", "uint8": "ByteStorage",
    "bool": "BoolStorage", "complex64": "ComplexFloatStorage",
    "complex128": "ComplexDoubleStorage",
}
_STORAGE_NAMES.update({"quint8": "QUInt8Storage", "qint8": "QInt8Storage",
                       "qint32": "QInt32Storage", "quint4x2": "QUInt4x2Storage"})
_STORAGE_DTYPES = {v: k for k, v in _STORAGE_NAMES.items()}

UNSAFE_MESSAGE = (
    "In PyTorch 2.6, we changed the default value of the `weights_only` argument in `torch.load` "
    "from `False` to `True`. Re-running `torch.load` with `weights_only` set to `False` will likely "
    "succeed, but it can result in arbitrary code execution. Do it only if you got the file from a "
    "trusted source."
)
_DOCS_MESSAGE = (
    "\n\nCheck the documentation of torch.load to learn more about types accepted by default with "
    "weights_only https://pytorch.org/docs/stable/generated/torch.load.html."
)


# ============================================================ plain pickling (copy, workers)

def _rebuild_tensor_for_pickle(data, requires_grad, view=None):
    """Target of ``Tensor.__reduce_ex__`` for ordinary pickling (multiprocessing, copy).
    ``view``: (element offset, shape, element strides, dtype) of a view, ``data`` then
    being the bytes of its whole storage."""
    from ember._tensor import _make
    if view is None:
        t = _make(np.asarray(data))
    else:
        from ember._kernels.shape import address, from_address
        offset, shape, strides, dt = view
        buf = np.asarray(data, np.uint8)        # (copy.copy: the same memory, as torch)
        item = dt.itemsize
        w = buf.flags.writeable
        root = _make(from_address(address(buf), (buf.shape[0] // item,), (item,), dt, buf, w))
        root._vc = 1
        overlap = any(st == 0 and n > 1 for n, st in zip(shape, strides))
        t = _make(from_address(address(buf) + offset * item, tuple(shape),
                               tuple(st * item for st in strides), dt, buf, w and not overlap))
        t._storage_base = root
    t._vc = 1                 # (torch's unpickled tensors were set_ onto their storage)
    if requires_grad:
        t._requires_grad = True
    return t


# ============================================================ writing

class _Global:
    """A stand-in for a global of torch's (written by name: torch need not be importable)."""
    __slots__ = ("module", "name")

    def __init__(self, module, name):
        self.module = module
        self.name = name

    def __repr__(self):
        return f"{self.module}.{self.name}"

    def __call__(self, *args):   # never called: pickle only checks callability
        raise TypeError(f"{self!r} is a name written into a checkpoint")


_GLOBALS: dict = {}


def _g(module, name):
    key = (module, name)
    g = _GLOBALS.get(key)
    if g is None:
        g = _GLOBALS[key] = _Global(module, name)
    return g


class _PlainTensor:
    """Wraps a tensor so it pickles as a plain ``torch.Tensor`` (a Parameter's data)."""
    __slots__ = ("t",)

    def __init__(self, t):
        self.t = t


class _StorageRef:
    """A storage to write: its bytes, dtype, key."""
    __slots__ = ("key", "bytes", "dtype", "pid", "untyped")

    def __init__(self, key, byts, dtype, untyped=False):
        self.key = key
        self.bytes = byts
        self.dtype = dtype
        # dtypes with no legacy storage class (uint16/32/64) are saved untyped and rebuilt by
        # _rebuild_tensor_v3, which names the dtype, as torch does
        self.untyped = untyped = untyped or dtype.name not in _STORAGE_NAMES
        if untyped:
            stype = _g("torch.storage", "UntypedStorage")
            numel = byts.shape[0]
        else:
            stype = _g("torch", _STORAGE_NAMES[dtype.name])
            numel = byts.shape[0] // dtype.itemsize
        self.pid = ("storage", stype, key, "cpu", numel)


def _torch_module_name(module):
    """The torch name of an ember module (``ember.nn.modules`` -> ``torch.nn.modules``)."""
    if module == "ember":
        return "torch"
    if module.startswith("ember."):
        rest = module[len("ember."):]
        if rest == "vision" or rest.startswith("vision."):
            return "torchvision" + rest[len("vision"):]
        return "torch." + rest
    return module


def _parameter_class():
    try:
        from ember.nn.parameter import Parameter
        return Parameter
    except Exception:  # noqa: BLE001 - ember.nn may be absent
        return None


class _TorchPickler(pickle._Pickler):
    """Pickles ember objects under torch's names; storages become persistent ids."""
    # torch.save writes a per_channel_affine_float_qparams tensor under the scheme
    # per_channel_affine (float zero points tell it apart); TorchScript archives name it
    _float_qparams_scheme = False

    dispatch = dict(pickle._Pickler.dispatch)

    def __init__(self, file, protocol):
        super().__init__(file, protocol)
        self.storages = {}          # id(root array) -> _StorageRef
        self._keep = []             # keep roots alive while ids are in use
        self._param_cls = _parameter_class()
        from ember._tensor import Tensor, Size
        from ember._device import device
        from ember.storage import UntypedStorage, TypedStorage
        self._Tensor, self._Size, self._device = Tensor, Size, device
        self._UStorage, self._TStorage = UntypedStorage, TypedStorage
        from ember import layout
        self._layout = layout
        from ember._ops.quantized_serialization import packed_classes
        packed = packed_classes()
        if packed:              # packed parameters pickle as torch.ScriptObject
            self.dispatch = dict(self.dispatch)
            for cls in packed:
                self.dispatch[cls] = type(self)._save_script_object

    # ---------------------------------------------------------------- globals
    def _write_global(self, module, name):
        self.write(pickle.GLOBAL + module.encode("utf-8") + b"\n" + name.encode("utf-8") + b"\n")

    def save_stub(self, obj):
        self._write_global(obj.module, obj.name)
        self.memoize(obj)

    dispatch[_Global] = save_stub

    def save_global(self, obj, name=None):
        if name is None:
            name = getattr(obj, "__qualname__", None) or obj.__name__
        module = getattr(obj, "__module__", None)
        if module is None:
            module = pickle.whichmodule(obj, name)
        if module and (module == "ember" or module.startswith("ember.")) and "." not in name:
            self._write_global(_torch_module_name(module), name)
            self.memoize(obj)
            return
        # the texts of Python's C pickler (torch's), not of the Python one this class extends
        if "<locals>" in name.split("."):
            raise AttributeError(f"Can't pickle local object {name!r}")
        try:
            __import__(module)
            found = sys.modules[module]
            for part in name.split("."):
                found = getattr(found, part)
        except (ImportError, KeyError, AttributeError):
            raise pickle.PicklingError(f"Can't pickle {obj!r}: attribute lookup {name} on "
                                       f"{module} failed") from None
        super().save_global(obj, name)

    dispatch[type] = save_global
    dispatch[type(save_global)] = save_global       # (functions)

    # ---------------------------------------------------------------- storages
    def _storage_of(self, t):
        root = t._root()._data
        ref = self.storages.get(id(root))
        dtype = t.dtype
        if ref is None:
            byts = t.untyped_storage()._bytes
            ref = _StorageRef(str(len(self.storages)), byts, dtype)
            self.storages[id(root)] = ref
            self._keep.append(root)
        elif (ref.dtype or _dtype.uint8) is not dtype:
            raise RuntimeError("Cannot save multiple tensors or storages that view the same data "
                               "as different types")
        return ref

    def persistent_id(self, obj):
        if type(obj) is _StorageRef:
            return obj.pid
        if isinstance(obj, self._UStorage):
            owner = obj._owner
            ref = self.storages.get(id(owner))
            if ref is None:
                ref = _StorageRef(str(len(self.storages)), obj._bytes, None, untyped=True)
                self.storages[id(owner)] = ref
                self._keep.append(owner)
            elif not ref.untyped and ref.dtype is not _dtype.uint8:
                raise RuntimeError("Cannot save multiple tensors or storages that view the same "
                                   "data as different types")
            return ref.pid
        if isinstance(obj, self._TStorage):
            u = obj._untyped_storage
            ref = self.storages.get(id(u._owner))
            if ref is None:
                ref = _StorageRef(str(len(self.storages)), u._bytes, obj.dtype)
                self.storages[id(u._owner)] = ref
                self._keep.append(u._owner)
            return ref.pid
        return None

    # ---------------------------------------------------------------- reductions
    def _tensor_args(self, t):
        ref = self._storage_of(t)
        return (ref, t.storage_offset(), tuple(t.shape), tuple(t.stride()), t.requires_grad,
                collections.OrderedDict())

    def reducer_override(self, obj):
        if isinstance(obj, self._Tensor) and type(obj) is not self._Tensor:
            from ember.overrides import _disabled_torch_function
            with _disabled_torch_function():    # (reading a subclass' metadata: no events)
                return self._reduce(obj)
        return self._reduce(obj)

    def _reduce(self, obj):
        t = type(obj)
        if t is _PlainTensor:
            obj = obj.t
            if obj._data.dtype in _dtype.QUANTIZED_NP:
                return self._reduce_qtensor(obj)
            args = self._tensor_args(obj)[:4] + (False, collections.OrderedDict())
            if obj.dtype.name not in _STORAGE_NAMES:
                return (_g("torch._utils", "_rebuild_tensor_v3"), args + (obj.dtype,))
            return (_g("torch._utils", "_rebuild_tensor_v2"), args)
        if isinstance(obj, self._Tensor):
            state = obj.__dict__ if obj.__dict__ else None
            if self._param_cls is not None and isinstance(obj, self._param_cls):
                state = {k: v for k, v in (state or {}).items() if not k.startswith("_")} or None
                if state:
                    return (_g("torch._utils", "_rebuild_parameter_with_state"),
                            (_PlainTensor(obj), obj.requires_grad, collections.OrderedDict(),
                             state))
                return (_g("torch._utils", "_rebuild_parameter"),
                        (_PlainTensor(obj), obj.requires_grad, collections.OrderedDict()))
            if hasattr(obj._data, "layout"):
                return _reduce_sparse(obj)
            if obj._data.dtype in _dtype.QUANTIZED_NP:
                return self._reduce_qtensor(obj)
            args = self._tensor_args(obj)
            if obj.dtype.name not in _STORAGE_NAMES:
                args, rebuild = args + (obj.dtype,), _g("torch._utils", "_rebuild_tensor_v3")
            else:
                rebuild = _g("torch._utils", "_rebuild_tensor_v2")
            if t is self._Tensor and not state:
                return (rebuild, args)
            new_type = _g("torch", "Tensor") if t is self._Tensor else t
            return (_g("torch._tensor", "_rebuild_from_type_v2"), (rebuild, new_type, args, state))
        if t is self._Size:
            return (_g("torch", "Size"), (tuple(obj),))
        if t is self._device:
            return (_g("torch", "device"), (str(obj),))
        if t is self._layout:
            return (_g("torch.serialization", "_get_layout"), (repr(obj),))
        return NotImplemented

    def _save_script_object(self, obj):
        """torch's form: ``torch.ScriptObject`` NEWOBJ, BUILD ``(state, class name)``."""
        from ember._ops import quantized_serialization as QS
        self._write_global("torch", "ScriptObject")
        self.write(pickle.EMPTY_TUPLE + pickle.NEWOBJ)
        self.memoize(obj)
        self.save((QS.torchbind_state(obj), QS.torchbind_name(obj)))
        self.write(pickle.BUILD)

    def _reduce_qtensor(self, t):
        """A quantized tensor as torch pickles it (see ember/_ops/quantized_serialization.py)."""
        from ember._ops import quantized_serialization as QS
        from ember._tensor import _make
        if t.dtype is _dtype.quint4x2:      # two values a byte: a storage of its own
            ref = _StorageRef(str(len(self.storages)), QS.packed_4bit(t), t.dtype)
            self.storages[id(ref)] = ref
            self._keep.append(ref)
            offset, stride = 0, _contig(tuple(t.shape))
        else:
            ref, offset, stride = self._storage_of(t), t.storage_offset(), tuple(t.stride())
        return (_g("torch._utils", "_rebuild_qtensor"),
                (ref, offset, tuple(t.shape), stride,
                 QS.quantizer_params(t, _make, self._float_qparams_scheme), False,
                 collections.OrderedDict()))


def _reduce_sparse(t):
    """A sparse tensor as torch pickles it: ``_rebuild_sparse_tensor(layout, parts)``."""
    from ember._ops.sparse import reduce_for_save
    return (_g("torch._utils", "_rebuild_sparse_tensor"), reduce_for_save(t))


def _rebuild_sparse_tensor(layout, data):
    from ember._ops.sparse import rebuild_sparse_tensor
    return rebuild_sparse_tensor(layout, data)


def _save_dtype(self, obj):
    self.save(_g("torch", obj.name))


_TorchPickler.dispatch[_dtype.dtype] = _save_dtype


def _save_qscheme(self, obj):
    self.save(_g("torch", obj.name))


_TorchPickler.dispatch[_dtype.qscheme] = _save_qscheme


def _serialization_id():
    return "".join(str(_pyrandom.randrange(10)) for _ in range(40))


class _AlignedZip:
    """Writes stored records with torch's 64-byte data alignment ('FB' padding field)."""

    def __init__(self, buf, archive):
        self.zf = zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED, allowZip64=True)
        self.archive = archive

    def write(self, name, data):
        full = f"{self.archive}/{name}"
        info = zipfile.ZipInfo(full, date_time=(1980, 1, 1, 0, 0, 0))
        info.compress_type = zipfile.ZIP_STORED
        start = self.zf.start_dir + 30 + len(full.encode("utf-8"))
        pad = (-(start + 4)) % _ALIGN
        info.extra = b"FB" + pad.to_bytes(2, "little") + b"Z" * pad
        self.zf.writestr(info, data)

    def close(self):
        self.zf.close()


def _is_path(f):
    return isinstance(f, (str, os.PathLike))


def save(obj, f, pickle_module=pickle, pickle_protocol=DEFAULT_PROTOCOL,
         _use_new_zipfile_serialization=True, _disable_byteorder_record=False):
    """Save ``obj`` to ``f`` (a path or a writable binary file) in torch's zip format (or,
    with ``_use_new_zipfile_serialization=False``, its legacy stream format)."""
    if not _use_new_zipfile_serialization:
        if _is_path(f):
            with open(f, "wb") as fh:
                _save_legacy(obj, fh, pickle_protocol)
        else:
            _save_legacy(obj, f, pickle_protocol)
        return
    if _is_path(f):
        base = os.path.splitext(os.path.basename(os.fspath(f)))[0]
        try:
            base.encode("ascii")
        except UnicodeEncodeError:
            base = "archive"
        archive = base or "archive"
    else:
        if not hasattr(f, "write"):
            raise AttributeError(f"expected 'f' to be string, path, or a file-like object with a "
                                 f"'write' attribute")
        archive = "archive"

    data = io.BytesIO()
    pickler = _TorchPickler(data, pickle_protocol)
    pickler.dump(obj)

    buf = io.BytesIO()
    z = _AlignedZip(buf, archive)
    z.write("data.pkl", data.getvalue())
    z.write(".format_version", b"1")
    z.write(".storage_alignment", b"64")
    if not _disable_byteorder_record:
        z.write("byteorder", sys.byteorder.encode())
    for ref in sorted(pickler.storages.values(), key=lambda r: int(r.key)):
        z.write(f"data/{ref.key}", np.ascontiguousarray(ref.bytes).tobytes())
    z.write("version", b"3\n")
    z.write(".data/serialization_id", _serialization_id().encode())
    z.close()
    if _is_path(f):
        parent = os.path.dirname(os.path.abspath(os.fspath(f)))
        if not os.path.isdir(parent):
            raise RuntimeError(f"Parent directory {os.path.dirname(os.fspath(f))} does not exist.")
        with open(f, "wb") as fh:
            fh.write(buf.getvalue())
    else:
        f.write(buf.getvalue())


# ============================================================ reading

class StorageType:
    """A legacy storage class name (``torch.FloatStorage``) seen while loading."""

    def __init__(self, name):
        self._dtype = _dtype._BY_NAME[_STORAGE_DTYPES[name]] if name in _STORAGE_DTYPES else None
        self.name = name

    @property
    def dtype(self):
        return self._dtype

    def __repr__(self):
        return f"StorageType(dtype={self._dtype})"


_UNTYPED = StorageType("UntypedStorage")
_STORAGE_TYPES = {n: StorageType(n) for n in _STORAGE_DTYPES}


class _LoadedStorage:
    """A storage read from the archive: bytes (aligned, writable) and its element dtype."""
    __slots__ = ("bytes", "dtype", "root", "__weakref__")

    def __init__(self, byts, dtype):
        self.bytes = byts
        self.dtype = dtype
        self.root = None

    def _ember(self):
        from ember.storage import UntypedStorage, TypedStorage
        u = UntypedStorage._wrap(self.bytes, self.bytes)
        s = object.__new__(TypedStorage)
        s._untyped_storage = u
        # torch hands back a bare saved UntypedStorage as TypedStorage(dtype=torch.uint8)
        s.dtype = self.dtype if self.dtype is not None else _dtype.uint8
        return s


def _storage_parts(storage):
    """(bytes, dtype) of a loaded or ember storage."""
    if isinstance(storage, _LoadedStorage):
        return storage
    from ember.storage import UntypedStorage, TypedStorage
    if isinstance(storage, TypedStorage):
        ls = _LoadedStorage(storage._untyped_storage._bytes, storage.dtype)
        return ls
    if isinstance(storage, UntypedStorage):
        return _LoadedStorage(storage._bytes, None)
    raise TypeError(f"cannot rebuild a tensor from {type(storage).__name__}")


def _contig(size):
    st, acc = [], 1
    for s in reversed(size):
        st.append(acc)
        acc *= max(s, 1)
    return tuple(reversed(st))


def _rebuild_tensor(storage, storage_offset, size, stride, dtype=None):
    from ember._tensor import _make
    ls = _storage_parts(storage)
    dtype = _dtype._used(dtype or ls.dtype or _dtype.uint8)
    size, stride = tuple(int(s) for s in size), tuple(int(s) for s in stride)
    item = dtype.itemsize
    n = ls.bytes.shape[0] // item
    flat = ls.bytes[:n * item].view(dtype.np)
    numel = 1
    for s in size:
        numel *= s
    root = ls.root
    if root is None or root.dtype is not dtype:
        if (storage_offset == 0 and numel == n and stride == _contig(size)) or root is not None:
            if root is None:
                t = _make(flat.reshape(size))
                t._vc = 1     # (torch's loaded tensors were set_ onto their storage)
                ls.root = t
                return t
        root = _make(flat)
        root._vc = 1
        ls.root = root
    from ember.autograd.grad_mode import no_grad
    with no_grad():
        return root.as_strided(size, stride, storage_offset)


def _set_hooks(t, hooks):
    return t


def _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad, backward_hooks,
                       metadata=None):
    t = _rebuild_tensor(storage, storage_offset, size, stride)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _rebuild_tensor_v3(storage, storage_offset, size, stride, requires_grad, backward_hooks,
                       dtype, metadata=None):
    t = _rebuild_tensor(storage, storage_offset, size, stride, dtype=dtype)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _rebuild_tensor_v1(storage, storage_offset, size, stride):
    return _rebuild_tensor(storage, storage_offset, size, stride)


def _rebuild_qtensor(storage, storage_offset, size, stride, quantizer_params, requires_grad,
                     backward_hooks):
    from ember._ops.quantized_serialization import rebuild_qtensor
    ls = _storage_parts(storage)
    if ls.dtype not in _dtype.QUANTIZED:
        raise RuntimeError(f"_rebuild_qtensor: expected a quantized storage, got {ls.dtype}")
    return rebuild_qtensor(ls.bytes, ls.dtype, int(storage_offset), size, stride,
                           quantizer_params)


def _set_obj_state(obj, state):
    if isinstance(state, tuple):
        if len(state) != 2:
            raise RuntimeError(f"Invalid serialized state: {state}")
        dict_state, slots_state = state
    else:
        dict_state, slots_state = state, None
    for d in (dict_state, slots_state):
        if d:
            for k, v in d.items():
                setattr(obj, k, v)
    return obj


def _rebuild_parameter(data, requires_grad, backward_hooks):
    P = _parameter_class()
    if P is None:
        data.requires_grad_(bool(requires_grad))
        return data
    p = P(data, requires_grad)
    p._vc = max(p._vc, 1)     # (torch's loaded tensors were set_ onto their storage)
    return p


def _rebuild_parameter_with_state(data, requires_grad, backward_hooks, state):
    return _set_obj_state(_rebuild_parameter(data, requires_grad, backward_hooks), state)


def _rebuild_from_type_v2(func, new_type, args, state):
    ret = func(*args)
    if type(ret) is not new_type:
        P = _parameter_class()
        if P is not None and new_type is P:
            ret = P(ret, ret.requires_grad)
        else:
            ret = ret.as_subclass(new_type)
    if state:
        _set_obj_state(ret, state)
    return ret


def _get_layout(name):
    import ember
    return getattr(ember, name.split(".")[-1])


def _rebuild_device(*args):
    from ember._device import device
    return device(*args)


def _allowed_globals():
    import ember
    from ember._tensor import Tensor, Size
    from ember._device import device
    rc = {
        "collections.OrderedDict": collections.OrderedDict,
        "collections.Counter": collections.Counter,
        "torch.serialization._get_layout": _get_layout,
        "torch.Size": Size,
        "torch.Tensor": Tensor,
        "torch.device": device,
        "_codecs.encode": __import__("codecs").encode,
        "builtins.bytearray": bytearray,
        "builtins.set": set,
        "builtins.complex": complex,
        "torch._utils._rebuild_tensor": _rebuild_tensor_v1,
        "torch._utils._rebuild_tensor_v2": _rebuild_tensor_v2,
        "torch._utils._rebuild_tensor_v3": _rebuild_tensor_v3,
        "torch._utils._rebuild_parameter": _rebuild_parameter,
        "torch._utils._rebuild_parameter_with_state": _rebuild_parameter_with_state,
        "torch._tensor._rebuild_from_type_v2": _rebuild_from_type_v2,
        "torch._utils._rebuild_sparse_tensor": _rebuild_sparse_tensor,
        "torch._utils._rebuild_qtensor": _rebuild_qtensor,
        "torch.UntypedStorage": _UNTYPED,
        "torch.storage.UntypedStorage": _UNTYPED,
    }
    for d in _dtype.ALL + _dtype.QUANTIZED:
        rc[f"torch.{d.name}"] = d
    for name, q in _dtype.QSCHEMES.items():
        rc[f"torch.{name}"] = q
    for n, st in _STORAGE_TYPES.items():
        rc[f"torch.{n}"] = st
    P = _parameter_class()
    if P is not None:
        rc["torch.nn.parameter.Parameter"] = P
    return rc


# ---------------------------------------------------------------- user allowlist
_USER_GLOBALS = threading.local()
_PERSISTENT_USER = []


def _user_list():
    return getattr(_USER_GLOBALS, "stack", None) or []


def add_safe_globals(safe_globals):
    """Allow these globals (objects, or ``(obj, "module.name")``) in weights-only loads."""
    _PERSISTENT_USER.extend(safe_globals)


def get_safe_globals():
    return list(_PERSISTENT_USER)


def clear_safe_globals():
    _PERSISTENT_USER.clear()


class safe_globals(contextlib.ContextDecorator):
    """Context manager allowing ``safe_globals`` in weights-only loads inside it."""

    def __init__(self, safe_globals):
        self.safe_globals = list(safe_globals)
        self._n = 0

    def __enter__(self):
        self._n = len(_PERSISTENT_USER)
        _PERSISTENT_USER.extend(self.safe_globals)

    def __exit__(self, *exc):
        del _PERSISTENT_USER[self._n:self._n + len(self.safe_globals)]


def _user_allowed():
    out = {}
    for g in _PERSISTENT_USER:
        if isinstance(g, tuple):
            obj, name = g
            out[name] = obj
        else:
            mod = getattr(g, "__module__", None)
            qn = getattr(g, "__qualname__", getattr(g, "__name__", None))
            out[f"{mod}.{qn}"] = g
            if mod:
                tm = _torch_module_name(mod)
                out[f"{tm}.{qn}"] = g
    return out


def _ember_global(module, name):
    """Resolve a global of a torch checkpoint for a full (unrestricted) load."""
    full = f"{module}.{name}"
    table = _allowed_globals()
    if full in table:
        return table[full]
    if full == "torch.ScriptObject":        # packed parameters (full loads only, as torch)
        from ember._ops.quantized_serialization import ScriptObjectShell
        return ScriptObjectShell
    import importlib
    for src, dst in (("torchvision", "ember.vision"), ("functorch", "ember.func"),
                     ("torch", "ember")):
        if module == src or module.startswith(src + "."):
            module = dst + module[len(src):]
            break
    mod = importlib.import_module(module)
    obj = mod
    for part in name.split("."):
        obj = getattr(obj, part)
    return obj


class _Unpickler(pickle.Unpickler):
    def __init__(self, file, loader, weights_only):
        super().__init__(file, encoding="utf-8")
        self._loader = loader
        self._weights_only = weights_only
        if weights_only:
            self._allowed = _allowed_globals()
            self._allowed.update(_user_allowed())

    def find_class(self, module, name):
        # protocol-2 pickles may name Python 2 modules (__builtin__, copy_reg)
        if (module, name) in _compat_pickle.NAME_MAPPING:
            module, name = _compat_pickle.NAME_MAPPING[(module, name)]
        elif module in _compat_pickle.IMPORT_MAPPING:
            module = _compat_pickle.IMPORT_MAPPING[module]
        full = f"{module}.{name}"
        if not self._weights_only:
            return _ember_global(module, name)
        if full in self._allowed:
            return self._allowed[full]
        msg = (f"Unsupported global: GLOBAL {full} was not an allowed global by default. "
               f"Please use `torch.serialization.add_safe_globals([{full}])` or the "
               f"`torch.serialization.safe_globals([{full}])` context manager to allowlist this "
               f"global if you trust this class/function.")
        raise pickle.UnpicklingError(
            "Weights only load failed. This file can still be loaded, to do so you have two "
            "options, \x1b[1mdo those steps only if you trust the source of the checkpoint"
            "\x1b[0m. "                                    # (bold, as torch's text)
            f"\n\t(1) {UNSAFE_MESSAGE}\n\t(2) Alternatively, to load with `weights_only=True` "
            "please check the recommended steps in the following error message.\n\t"
            "WeightsUnpickler error: " + msg + _DOCS_MESSAGE)

    def persistent_load(self, pid):
        return self._loader(pid)


_ENDIAN = [None]


def get_default_load_endianness():
    return _ENDIAN[0]


def set_default_load_endianness(endianness):
    _ENDIAN[0] = endianness


def _check_location(loc):
    from ember._device import to_device
    to_device(loc)


def _apply_map_location(storage, location, map_location):
    if map_location is None:
        return storage
    if callable(map_location) and not isinstance(map_location, str):
        emb = storage._ember()
        r = map_location(emb, location)
        if r is None or r is emb:
            return storage
        return _storage_parts(r)
    if isinstance(map_location, dict):
        target = map_location.get(location, location)
        _check_location(target)
        return storage
    from ember._device import device
    if not isinstance(map_location, (str, device)):
        raise TypeError(f"'{type(map_location).__name__}' object is not callable")
    _check_location(map_location)
    return storage


def load(f, map_location=None, pickle_module=None, *, weights_only=None, mmap=None,
         **pickle_load_args):
    """Load an object saved by ``ember.save`` or ``torch.save`` (zip format)."""
    if weights_only is None:
        weights_only = pickle_module is None
        force = os.getenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "0").lower() in ("1", "y", "yes",
                                                                             "true")
        if force:
            weights_only = False
    if weights_only and pickle_module is not None:
        raise RuntimeError("Can not safely load weights when explicit pickle_module is "
                           "specified")
    if isinstance(map_location, str) or map_location is not None and \
            type(map_location).__name__ == "device":
        _check_location(map_location)
    if mmap and not _is_path(f):
        raise ValueError("f must be a file path in order to use the mmap argument")
    if _is_path(f):
        with open(f, "rb") as fh:
            return _load_stream(fh, map_location, weights_only, mmap=mmap, name=f)
    if not hasattr(f, "seek"):
        raise AttributeError(f"'{type(f).__name__}' object has no attribute 'seek'. You can "
                             f"only torch.load from a file that is seekable. Please pre-load "
                             f"the data into a buffer like io.BytesIO and try to load from it "
                             f"instead.")
    return _load_stream(f, map_location, weights_only)


def _load_stream(fh, map_location, weights_only, mmap=False, name=None):
    start = fh.tell() if hasattr(fh, "tell") else 0
    magic = fh.read(4)
    fh.seek(start)
    if magic[:2] != b"PK":
        if mmap:
            raise RuntimeError(f"mmap can only be used with files saved with `torch.save({name}, "
                               "_use_new_zipfile_serialization=True), please torch.save your "
                               "checkpoint with this option in order to use mmap.")
        return _load_legacy(fh, map_location, weights_only)
    try:
        zf = zipfile.ZipFile(fh)
    except (zipfile.BadZipFile, EOFError) as e:     # truncated, or the magic then garbage
        size = fh.seek(0, io.SEEK_END) - start
        raise _corrupt("failed reading zip archive: " + (
            "not a ZIP archive" if size < _ZIP_END_RECORD else
            "failed finding central directory")) from e
    with zf:
        return _load_zip(zf, map_location, weights_only)


_ZIP_END_RECORD = 22            # bytes of the smallest possible zip file
_MAX_FILE_VERSION = 10          # the newest format version torch 2.13 reads


def _corrupt(problem):
    return RuntimeError(f"PytorchStreamReader {problem}. The checkpoint is probably corrupted: "
                        f"it was not saved completely, was cut short in transfer, or was "
                        f"modified after saving.")


def _read_record(zf, archive, name, into=None):
    """The bytes of record ``name`` (read into the uint8 array ``into`` when given); a
    missing or unreadable record raises torch's RuntimeError."""
    try:
        info = zf.getinfo(f"{archive}/{name}")
    except KeyError:
        raise _corrupt(f"failed locating file {name}: file not found") from None
    try:
        with zf.open(info) as src:
            if into is None:
                return src.read()
            mv, got = memoryview(into), 0
            while got < into.shape[0]:
                n = src.readinto(mv[got:])
                if not n:
                    break
                got += n
            return into
    except (zipfile.BadZipFile, EOFError, zipfile.LargeZipFile) as e:   # bad header or CRC
        raise _corrupt(f"failed reading file {name}: {e}") from e


def _check_version(zf, archive, names):
    name = "version" if f"{archive}/version" in names else ".data/version"
    if f"{archive}/{name}" not in names:
        raise RuntimeError('Expected hasRecord("version") to be true, but got false.  (Could '
                           'this error message be improved?  If so, please report an '
                           'enhancement request to PyTorch.)')
    text = _read_record(zf, archive, name).decode("latin-1")
    try:
        version = int(text.strip())
    except ValueError:
        raise RuntimeError(f"Couldn't parse the version {text} as Long Long.") from None
    if version > _MAX_FILE_VERSION:
        raise RuntimeError(f"Attempted to read a PyTorch file with version {version}, but the "
                           f"maximum supported version for reading is {_MAX_FILE_VERSION}. The "
                           f"version of your PyTorch installation may be too old, please "
                           f"upgrade PyTorch to latest version to mitigate this issue.")


def _load_zip(zf, map_location, weights_only):
    names = zf.namelist()
    if not names or "/" not in names[0]:
        raise _corrupt("failed locating file data.pkl: file not found")
    archive = names[0].split("/", 1)[0]
    if f"{archive}/data.pkl" not in names:
        if f"{archive}/constants.pkl" in names:
            raise RuntimeError("ember.load: this is a TorchScript archive (torch.jit.save); "
                               "ember cannot load TorchScript")
        raise _corrupt("failed locating file data.pkl: file not found")
    _check_version(zf, archive, names)
    byteorder = "little"
    if f"{archive}/byteorder" in names:
        byteorder = _read_record(zf, archive, "byteorder").decode()
    loaded = {}

    def persistent_load(pid):
        if not isinstance(pid, tuple) or not pid or pid[0] not in ("storage", b"storage"):
            raise pickle.UnpicklingError(f"unsupported persistent id {pid!r}")
        stype, key, location, numel = pid[1:]
        key = key.decode() if isinstance(key, bytes) else key
        location = location.decode() if isinstance(location, bytes) else location
        dtype = stype.dtype if isinstance(stype, StorageType) else None
        if key in loaded:
            return loaded[key]
        nbytes = int(numel) * (dtype.itemsize if dtype is not None else 1)
        info = zf.NameToInfo.get(f"{archive}/data/{key}")
        if info is not None and info.file_size != nbytes:
            raise RuntimeError(f"record size ({info.file_size} bytes) does not match expected "
                               f"size ({nbytes} bytes = {nbytes} elements * 1 bytes/element) "
                               f"for dtype Byte")
        arr = _read_record(zf, archive, f"data/{key}", np.empty(nbytes, np.uint8))
        if byteorder != sys.byteorder and dtype is not None and dtype.itemsize > 1:
            arr = arr.view(dtype.np).byteswap().view(np.uint8)
        ls = _apply_map_location(_LoadedStorage(arr, dtype), location, map_location)
        loaded[key] = ls
        return ls

    up = _Unpickler(io.BytesIO(_read_record(zf, archive, "data.pkl")), persistent_load,
                    weights_only)
    return _storages_to_ember(up.load())


# ---------------------------------------------------------------- legacy (pre-1.6) format
_LEGACY_MAGIC = 0x1950a86a20f9469cfc6c
_LEGACY_PROTOCOL = 1001


class _LegacyPickler(_TorchPickler):
    """Storages as the legacy format's persistent ids: the zip format's five fields and no
    view metadata (``None``), which torch's legacy loader unpacks as a sixth."""

    def persistent_id(self, obj):
        pid = super().persistent_id(obj)
        return None if pid is None else pid + (None,)


def _save_legacy(obj, fh, protocol):
    """The stream _load_legacy reads: magic number, protocol version, sys info, the object,
    the sorted storage keys, then per storage its element count (int64) and bytes."""
    pickle.dump(_LEGACY_MAGIC, fh, protocol=protocol)
    pickle.dump(_LEGACY_PROTOCOL, fh, protocol=protocol)
    pickle.dump({"protocol_version": _LEGACY_PROTOCOL,
                 "little_endian": sys.byteorder == "little",
                 "type_sizes": {"short": 2, "int": 4, "long": 4}}, fh, protocol=protocol)
    pickler = _LegacyPickler(fh, protocol)
    pickler.dump(obj)
    refs = {ref.key: ref for ref in pickler.storages.values()}
    pickle.dump(sorted(refs), fh, protocol=protocol)
    for key in sorted(refs):
        ref = refs[key]
        fh.write(int(ref.pid[4]).to_bytes(8, sys.byteorder, signed=True))
        fh.write(np.ascontiguousarray(ref.bytes).tobytes())


def _unexpected_eof(missing):
    return RuntimeError(f"unexpected EOF, expected {missing} more bytes. The file might be "
                        f"corrupted.")


def _no_persistent(pid):
    raise pickle.UnpicklingError(f"unsupported persistent id {pid!r}")


# the opcodes torch's weights-only unpickler reads (found by loading each single byte)
_WEIGHTS_ONLY_OPCODES = frozenset(b"()'.GJKMNQRUX]abcehjqrstu}") | frozenset(
    (0x80, 0x81, 0x85, 0x86, 0x87, 0x88, 0x89, 0x8a, 0x8f))


def _check_first_opcode(fh):
    """A weights-only load of a file that is no pickle (junk, a text file, nothing): torch's
    unpickler refuses the first byte by its number, or runs out of input (an empty text)."""
    start = fh.tell()
    first = fh.read(1)
    fh.seek(start)
    if not first:
        raise EOFError("")
    if first[0] not in _WEIGHTS_ONLY_OPCODES:
        raise pickle.UnpicklingError(
            f"Weights only load failed. {UNSAFE_MESSAGE}\nPlease file an issue with the "
            f"following so that we can make `weights_only=True` compatible with your use case: "
            f"WeightsUnpickler error: \n\nUnsupported operand {first[0]}{_DOCS_MESSAGE}")


def _load_legacy(fh, map_location, weights_only):
    """torch's non-zip format: pickles of the magic number, protocol version, sys info, the
    object (storages as persistent ids ``('storage', type, key, location, numel, view)``) and
    the sorted storage keys, then each storage as an int64 element count and its raw bytes."""
    def small():
        return _Unpickler(fh, _no_persistent, weights_only).load()

    if weights_only:
        _check_first_opcode(fh)
    magic = small()
    if magic != _LEGACY_MAGIC:
        raise RuntimeError("Invalid magic number; corrupt file?")
    protocol = small()
    if protocol != _LEGACY_PROTOCOL:
        raise RuntimeError(f"Invalid protocol version: {protocol}")
    sys_info = small()
    little = sys_info.get("little_endian", True) if isinstance(sys_info, dict) else True
    swap = little != (sys.byteorder == "little")
    loaded = {}     # key -> _LoadedStorage (data filled in after the object pickle)
    views = {}

    def persistent_load(pid):
        if not isinstance(pid, tuple) or not pid or pid[0] not in ("storage", b"storage"):
            raise pickle.UnpicklingError(f"unsupported persistent id {pid!r}")
        stype, key, location, numel = pid[1:5]
        view_metadata = pid[5] if len(pid) > 5 else None
        key = key.decode() if isinstance(key, bytes) else str(key)
        location = location.decode() if isinstance(location, bytes) else location
        dtype = stype.dtype if isinstance(stype, StorageType) else None
        if key not in loaded:
            item = dtype.itemsize if dtype is not None else 1
            ls = _LoadedStorage(np.zeros(int(numel) * item, np.uint8), dtype)
            ls = _apply_map_location(ls, location, map_location)
            loaded[key] = ls
        base = loaded[key]
        if view_metadata is None:
            return base
        view_key, offset, view_size = view_metadata
        view_key = view_key.decode() if isinstance(view_key, bytes) else str(view_key)
        if view_key not in views:
            item = dtype.itemsize if dtype is not None else 1
            views[view_key] = _LoadedStorage(
                base.bytes[int(offset) * item:(int(offset) + int(view_size)) * item], dtype)
        return views[view_key]

    result = _Unpickler(fh, persistent_load, weights_only).load()
    keys = small()
    for key in keys:
        key = key.decode() if isinstance(key, bytes) else str(key)
        head = fh.read(8)
        if len(head) != 8:
            raise _unexpected_eof(8 - len(head))
        count = int.from_bytes(head, "little" if little else "big", signed=True)
        ls = loaded.get(key)
        if ls is None:
            raise RuntimeError(f"ember.load: legacy checkpoint has data for unknown storage {key}")
        item = ls.dtype.itemsize if ls.dtype is not None else 1
        nbytes = count * item
        arr = ls.bytes
        if arr.shape[0] != nbytes:
            raise RuntimeError(f"ember.load: storage {key} holds {arr.shape[0]} bytes but the "
                               f"file has {nbytes}")
        mv = memoryview(arr)
        got = 0
        while got < nbytes:
            n = fh.readinto(mv[got:]) if hasattr(fh, "readinto") else None
            if n is None:
                chunk = fh.read(nbytes - got)
                n = len(chunk)
                arr[got:got + n] = np.frombuffer(chunk, np.uint8)
            if not n:
                raise _unexpected_eof(nbytes - got)
            got += n
        if swap and ls.dtype is not None and item > 1:
            arr.view(ls.dtype.np).byteswap(inplace=True)
    return _storages_to_ember(result)


def _storages_to_ember(obj):
    """Bare storages in the result become ember storages (tensors already are tensors)."""
    if isinstance(obj, _LoadedStorage):
        return obj._ember()
    if type(obj) in (dict, collections.OrderedDict):
        for k, v in obj.items():
            if isinstance(v, (_LoadedStorage, dict, list)):
                obj[k] = _storages_to_ember(v)
        return obj
    if type(obj) is list:
        for i, v in enumerate(obj):
            if isinstance(v, (_LoadedStorage, dict, list)):
                obj[i] = _storages_to_ember(v)
        return obj
    return obj


# ============================================================ safetensors (optional extra)

def _safetensors_numpy():
    try:
        import safetensors.numpy as stn
    except ImportError as e:
        raise ImportError("safetensors support needs the 'safetensors' package: "
                          "pip install ember[safetensors]") from e
    return stn


def save_safetensors(tensors, filename, metadata=None):
    """Write a dict of name -> tensor to a .safetensors file."""
    stn = _safetensors_numpy()
    from ember._tensor import Tensor
    arrays = {}
    for k, v in tensors.items():
        if not isinstance(v, Tensor):
            raise ValueError(f"Key `{k}` is invalid, expected torch.Tensor but received "
                             f"{type(v)}")
        a = np.asarray(v._data)
        # np.ascontiguousarray turns a 0-d array into shape (1,): keep the shape
        arrays[k] = np.ascontiguousarray(a).reshape(a.shape)
    stn.save_file(arrays, os.fspath(filename), metadata=metadata)


def load_safetensors(filename, device="cpu"):
    """Read a .safetensors file into a dict of name -> tensor."""
    stn = _safetensors_numpy()
    from ember._tensor import _make
    _check_location(device)
    return {k: _make(np.array(v)) for k, v in stn.load_file(os.fspath(filename)).items()}
