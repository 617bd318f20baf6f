"""Reading torch's mobile (``.ptl``) zip: ``bytecode.pkl`` and ``data.pkl`` with NumPy.

Only what the format needs is unpickled (torch tensors, ``__torch__`` objects, typed lists);
any other global is refused. Tensors are NumPy arrays over the stored little-endian bytes.
"""
from __future__ import annotations

import io
import pickle
import zipfile

import numpy as np

_STORAGE_DTYPES = {
    "FloatStorage": np.float32, "DoubleStorage": np.float64, "HalfStorage": np.float16,
    "LongStorage": np.int64, "IntStorage": np.int32, "ShortStorage": np.int16,
    "CharStorage": np.int8, "ByteStorage": np.uint8, "BoolStorage": np.bool_,
}


class Object:
    """A ``__torch__`` object: attribute slots in the order its pickled state lists them
    (the slot numbers of ``GET_ATTR`` / ``SET_ATTR``)."""
    __slots__ = ("qualname", "names", "values")

    def __init__(self, qualname, state=None):
        self.qualname = qualname
        self.names, self.values = [], []
        if state is not None:
            self.__setstate__(state)

    def __setstate__(self, state):
        self.names, self.values = list(state), list(state.values())

    def attr(self, name):
        return self.values[self.names.index(name)]

    def __repr__(self):
        return f"<{self.qualname} object>"


def _object_class(qualname):
    """A class whose NEWOBJ makes an ``Object`` named ``qualname`` (BUILD sets its state)."""
    def new(cls, *args):
        return Object(qualname)
    return type("TorchObject", (), {"__new__": new})


def _rebuild_tensor(storage, offset, size, stride, *_):
    itemsize = storage.itemsize
    return np.lib.stride_tricks.as_strided(storage[offset:], tuple(size),
                                           tuple(s * itemsize for s in stride)).copy()


def _identity(value, *_):
    return value


_GLOBALS = {
    ("torch._utils", "_rebuild_tensor_v2"): _rebuild_tensor,
    ("torch._utils", "_rebuild_parameter"): _identity,
    ("torch.jit._pickle", "restore_type_tag"): _identity,
    ("collections", "OrderedDict"): dict,
    ("builtins", "set"): set,
}
for _n in ("intlist", "doublelist", "boollist", "tensorlist", "list"):
    _GLOBALS[("torch.jit._pickle", "build_" + _n)] = list


class _Unpickler(pickle.Unpickler):
    def __init__(self, data, archive, folders):
        super().__init__(io.BytesIO(data))
        self.archive, self.folders = archive, folders

    def find_class(self, module, name):
        if module == "torch" and name in _STORAGE_DTYPES:
            return np.dtype(_STORAGE_DTYPES[name])
        fn = _GLOBALS.get((module, name))
        if fn is not None:
            return fn
        if module.startswith("__torch__"):
            return _object_class(f"{module}.{name}")
        raise pickle.UnpicklingError(f"ember.lite: refusing global {module}.{name}")

    def persistent_load(self, pid):
        kind, dtype, key, _location, numel = pid
        if kind != "storage":
            raise pickle.UnpicklingError(f"ember.lite: unknown persistent id {pid!r}")
        return self.archive.storage(key, dtype, numel, self.folders)


class Archive:
    """The zip's folder prefix, its storages (read once) and its pickles."""

    def __init__(self, f):
        self.zip = zipfile.ZipFile(f)
        names = self.zip.namelist()
        self.prefix = names[0].split("/")[0] + "/"
        self.names = set(names)
        self.storages = {}

    def read(self, name):
        return self.zip.read(self.prefix + name)

    def has(self, name):
        return self.prefix + name in self.names

    def storage(self, key, dtype, numel, folders):
        arr = self.storages.get((folders, key))
        if arr is None:
            for folder in folders:
                if self.has(folder + key):
                    raw = self.read(folder + key)
                    break
            else:
                raise RuntimeError(f"ember.lite: storage {key} missing from the archive")
            arr = np.frombuffer(raw, dtype=np.dtype(dtype).newbyteorder("<"), count=numel)
            self.storages[(folders, key)] = arr
        return arr

    def unpickle(self, name):
        """data.pkl's storages live in data/; bytecode.pkl's (and constants.pkl's) in
        constants/ (the other folder is tried next)."""
        folders = ("data/", "constants/") if name == "data.pkl" else ("constants/", "data/")
        return _Unpickler(self.read(name), self, folders).load()


def read(f):
    """(bytecode version, {qualified function name: (code dict, schema)}, root object)."""
    archive = Archive(f)
    if not archive.has("bytecode.pkl"):
        raise RuntimeError("ember.lite: not a mobile model (no bytecode.pkl); "
                           "save it with _save_for_lite_interpreter")
    bytecode = archive.unpickle("bytecode.pkl")
    version, entries = bytecode[0], bytecode[1:]
    functions = {}
    for entry in entries:
        name, code, schema = entry[0], dict(entry[1]), (dict(entry[2]) if len(entry) > 2 else {})
        functions[name] = (code, schema)
    root = archive.unpickle("data.pkl")
    return version, functions, root
