"""``ember.package`` (torch.package): self-contained archives of code, objects and data.

    with ember.package.PackageExporter("model.pt") as exp:
        exp.intern("my_project.**")        # package the project's source
        exp.extern("numpy.**")             # the loader's own numpy
        exp.save_pickle("model", "model.pkl", model)
    model = ember.package.PackageImporter("model.pt").load_pickle("model", "model.pkl")

See docs/PACKAGE.md for what is supported.
"""
from types import ModuleType

from ._mangling import demangle, is_mangled  # noqa: F401 - (torch has them here too)
from .file_structure_representation import Directory
from .glob_group import GlobGroup
from .importer import (Importer, ObjMismatchError, ObjNotFoundError, OrderedImporter,
                       sys_importer)
from .package_exporter import EmptyMatchError, PackageExporter, PackagingError
from .package_importer import PackageImporter

__all__ = ["PackageExporter", "PackageImporter", "PackagingError", "EmptyMatchError",
           "Importer", "OrderedImporter", "sys_importer", "ObjNotFoundError",
           "ObjMismatchError", "Directory", "GlobGroup", "is_from_package"]


def is_from_package(obj) -> bool:
    """Whether ``obj`` (a module, or an instance) comes from a PackageImporter."""
    if isinstance(obj, ModuleType):
        return is_mangled(obj.__name__)
    return is_mangled(type(obj).__module__)
