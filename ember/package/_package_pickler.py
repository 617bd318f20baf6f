"""The pickler behind ``PackageExporter.save_pickle``.

It is ember's checkpoint pickler (ember/serialization.py: tensors and storages as torch
writes them, ember's classes under their ``torch.`` names) with two changes:

* every other global is named by the exporter's importer, so a class loaded from a package
  is written under its original (demangled) module name;
* an object whose class defines ``__reduce_package__(exporter)`` becomes the persistent id
  ``('reduce_package', id(obj), func, args)``, rebuilt on load as ``func(importer, *args)``.
"""
import pickle
import pickletools
from types import FunctionType

from ember.serialization import _TorchPickler, _torch_module_name
from .importer import ObjMismatchError, ObjNotFoundError

__all__ = ["PackagePickler", "pickle_globals"]


def _is_ember(module):
    return module == "ember" or (module or "").startswith("ember.")


def _public_module(obj, module, qualname):
    """``ember.nn.functional`` for ``relu`` defined in ``ember.nn.functional._activation``:
    a private module's object is named by the nearest public package exporting it (names
    torch can resolve too); otherwise its own module."""
    import sys
    parts = module.split(".")
    if not any(p.startswith("_") for p in parts[1:]):
        return module
    while len(parts) > 1 and any(p.startswith("_") for p in parts[1:]):
        parts.pop()
    candidate = sys.modules.get(".".join(parts))
    try:
        found = candidate
        for attr in qualname.split("."):
            found = getattr(found, attr)
    except AttributeError:
        return module
    return ".".join(parts) if found is obj else module


class PackagePickler(_TorchPickler):
    dispatch = dict(_TorchPickler.dispatch)

    def __init__(self, exporter, file, protocol):
        super().__init__(file, protocol)
        self.exporter = exporter
        self.importer = exporter.importer
        # storage keys run across all the pickles of one package: share the exporter's table
        self.storages = exporter._storages
        self._keep = exporter._storage_owners

    def save_global(self, obj, name=None):
        module = getattr(obj, "__module__", None)
        if _is_ember(module):
            qualname = name or getattr(obj, "__qualname__", None) or obj.__name__
            self._write_global(_torch_module_name(_public_module(obj, module, qualname)),
                               qualname)
        else:
            try:
                module, qualname = self.importer.get_name(obj, name)
            except (ObjNotFoundError, ObjMismatchError) as e:
                raise pickle.PicklingError(f"Can't pickle {obj!r}: {e}") from None
            self._write_global(module, qualname)
        self.memoize(obj)

    dispatch[type] = save_global
    dispatch[FunctionType] = save_global

    def persistent_id(self, obj):
        cls = type(obj)
        if not isinstance(obj, type) and hasattr(cls, "__reduce_package__"):
            func, args = obj.__reduce_package__(self.exporter)
            return ("reduce_package", id(obj), func, tuple(args))
        if _is_ember(cls.__module__) and cls.__name__ in ("RecursiveScriptModule",
                                                           "ScriptModule"):
            return ("reduce_package", id(obj), unpackage_script_module,
                    (self.exporter._save_script_module(obj),))
        if _is_ember(cls.__module__) and cls.__name__ == "ScriptFunction":
            raise NotImplementedError(
                "ember.package cannot save a TorchScript function (only ScriptModules, as "
                "ember.jit.save)")
        return super().persistent_id(obj)


def unpackage_script_module(importer, key):
    """Load-time half of a ScriptModule in a package: ``.data/ts_code/<key>.pt`` is the
    module as ember.jit.save wrote it."""
    import io
    from ember import jit
    return jit.load(io.BytesIO(importer._read(f".data/ts_code/{key}.pt")),
                    map_location=importer.last_map_location)


def pickle_globals(data):
    """``{module: [names]}`` of the globals a pickle refers to, in order of first appearance.
    (This pickler writes GLOBAL opcodes; a STACK_GLOBAL is read from the two strings pushed
    just before it.)"""
    modules, strings = {}, []
    for op, arg, _ in pickletools.genops(data):
        if op.name == "GLOBAL":
            module, name = arg.split(" ", 1)
        elif op.name == "STACK_GLOBAL" and len(strings) >= 2:
            module, name = strings[-2], strings[-1]
        else:
            if isinstance(arg, str) and "UNICODE" in op.name:
                strings.append(arg)
            continue
        names = modules.setdefault(module, [])
        if name not in names:
            names.append(name)
    return modules
