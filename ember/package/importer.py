"""Importers: where an exporter finds modules, and how it names the objects it pickles.

``sys_importer`` is the interpreter's own import system. A ``PackageImporter`` is also an
importer, so objects loaded from a package can be packaged again; ``OrderedImporter`` asks
several importers in turn (``PackageExporter(f, importer=(pkg_importer, sys_importer))``).
"""
import importlib
import pickle
import sys
from types import ModuleType
from typing import Any, Optional, Tuple

from ._mangling import demangle, get_mangle_prefix, is_mangled

__all__ = ["Importer", "sys_importer", "OrderedImporter", "ObjNotFoundError",
           "ObjMismatchError"]


class ObjNotFoundError(Exception):
    """``get_name`` could not find the object under the name it claims."""


class ObjMismatchError(Exception):
    """The importer's module holds a different object under that name."""


class Importer:
    """Base class: ``import_module(name)`` plus the naming rule pickling relies on."""
    modules: dict

    def import_module(self, module_name: str) -> ModuleType:
        raise NotImplementedError

    def whichmodule(self, obj: Any, name: str) -> str:
        module = getattr(obj, "__module__", None)
        return module if module is not None else pickle.whichmodule(obj, name)

    def get_name(self, obj: Any, name: Optional[str] = None) -> Tuple[str, str]:
        """``(module name, qualified name)`` under which ``import_module`` finds ``obj``,
        package prefixes removed. Raises ObjNotFoundError / ObjMismatchError."""
        if name is None:
            name = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None)
        if name is None:
            raise ObjNotFoundError(f"{obj!r} has no __qualname__ or __name__: it cannot be "
                                   f"pickled by reference")
        where = self.whichmodule(obj, name)
        module_name = demangle(where)
        try:
            found = _lookup(self.import_module(module_name), name)
        except (ImportError, AttributeError) as e:
            raise ObjNotFoundError(f"{obj!r} was not found as {module_name}.{name}") from e
        if found is obj:
            return module_name, name
        # an object defined in a package, asked of the interpreter, or the reverse
        def origin(o):
            mod = self.whichmodule(o, name)
            return get_mangle_prefix(mod) if is_mangled(mod) else "the current Python environment"
        raise ObjMismatchError(
            f"The object provided is from '{origin(obj)}', but the object found at "
            f"'{module_name}.{name}' is from '{origin(found)}'. Make sure the importer used "
            f"to package the object (importer=...) can import the module it came from.")


def _lookup(module, qualname):
    obj = module
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


class _SysImporter(Importer):
    """The interpreter's ``importlib.import_module``."""

    def import_module(self, module_name: str):
        return importlib.import_module(module_name)

    @property
    def modules(self):
        return sys.modules

    def whichmodule(self, obj, name):
        return pickle.whichmodule(obj, name)


sys_importer = _SysImporter()


class OrderedImporter(Importer):
    """Tries each importer in turn; ``get_name`` takes the first that names ``obj``."""

    def __init__(self, *importers):
        if len(importers) == 1 and isinstance(importers[0], (list, tuple)):
            importers = tuple(importers[0])
        self._importers = list(importers)

    def import_module(self, module_name):
        last = None
        for importer in self._importers:
            if not isinstance(importer, Importer):
                raise TypeError(f"{importer!r} is not an Importer. All importers in "
                                f"OrderedImporter must inherit from Importer.")
            try:
                module = importer.import_module(module_name)
            except ModuleNotFoundError as e:
                last = e
                continue
            if getattr(module, "__torch_package_dummy__", False):   # an empty package dir
                continue
            return module
        raise last or ModuleNotFoundError(module_name)

    def get_name(self, obj, name=None):
        errors = []
        for importer in self._importers:
            try:
                return importer.get_name(obj, name)
            except (ObjNotFoundError, ObjMismatchError) as e:
                errors.append(e)
        raise errors[0] if errors else ObjNotFoundError(f"no importer found {obj!r}")

    def whichmodule(self, obj, name):
        return Importer.whichmodule(self, obj, name)
