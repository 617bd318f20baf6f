"""``PackageImporter``: load the code and objects of a package made by PackageExporter.

Each importer runs the package's interned modules in a namespace of its own: module
``mypkg.model`` becomes ``<torch_package_N>.mypkg.model`` (see _mangling.py), never enters
``sys.modules``, and its ``import`` statements resolve inside the archive first. Externed
modules come from the running interpreter; ``torch``/``torchvision`` names (in pickles and
in packaged code alike) resolve to ember's modules, so packages written by torch load here.
"""
import builtins
import importlib
import importlib.abc
import inspect
import importlib.machinery
import io
import linecache
import os
import pickle
import weakref
import zipfile

import numpy as np

from ember import serialization as _ser
from ._mangling import PackageMangler, demangle
from .file_structure_representation import Directory, _create_directory_from_file_list
from .glob_group import GlobPattern
from .importer import Importer, _lookup

__all__ = ["PackageImporter"]


def _host_module(name):
    """ember's module for a ``torch``/``torchvision``/``ember`` name."""
    top, _, rest = name.partition(".")
    if top == "torch":
        name = "ember" + (f".{rest}" if rest else "")
    elif top == "torchvision":
        name = "ember.vision" + (f".{rest}" if rest else "")
    return importlib.import_module(name)


def _is_host_name(name):
    return name.partition(".")[0] in ("torch", "torchvision", "ember")


# Packaged modules by mangled name: sys.modules never holds them, so inspect.getfile (used
# by inspect.getsource, hence by ember.jit.script) is taught to look here for a class.
_PACKAGED_MODULES = weakref.WeakValueDictionary()
_plain_getfile = inspect.getfile


def _getfile(obj):
    if inspect.isclass(obj):
        module = _PACKAGED_MODULES.get(getattr(obj, "__module__", None) or "")
        if module is not None and getattr(module, "__file__", None):
            return module.__file__
    return _plain_getfile(obj)


inspect.getfile = _getfile


class _Package:
    """A directory of the archive: a package (``__init__.py`` optional)."""

    def __init__(self, source_file=None):
        self.source_file = source_file
        self.children = {}


class _Module:
    def __init__(self, source_file):
        self.source_file = source_file


class _Extern:
    """A name the package imports from the interpreter."""


class _ResourceReader(importlib.abc.ResourceReader):
    """A package directory of the archive, for importlib.resources."""

    def __init__(self, importer, folder):
        self.importer = importer
        self.folder = folder

    def open_resource(self, resource):
        return io.BytesIO(self.importer._read(f"{self.folder}/{resource}"))

    def resource_path(self, resource):
        raise FileNotFoundError(f"{resource} lies inside a package archive, not on disk")

    def is_resource(self, name):
        return f"{self.folder}/{name}" in self.importer._files

    def contents(self):
        prefix = self.folder + "/"
        names = {f[len(prefix):].split("/", 1)[0] for f in self.importer._files
                 if f.startswith(prefix)}
        return iter(sorted(names))


def _only_externs(package):
    """Whether a source-less directory holds nothing but externs (``os`` of ``os.path``)."""
    return bool(package.children) and all(
        isinstance(c, _Extern)
        or (isinstance(c, _Package) and c.source_file is None and _only_externs(c))
        for c in package.children.values())


class PackageImporter(Importer):
    """``PackageImporter(path_or_buffer, module_allowed=lambda name: True)``

    The path may also name the top folder of an unzipped archive.

    ``module_allowed(name)`` vets every extern module the package names (ImportError when
    it says no). ``load_pickle``/``load_text``/``load_binary`` read resources;
    ``import_module`` runs packaged code.
    """

    def __init__(self, file_or_buffer, module_allowed=lambda module_name: True):
        self._zip = self._dir = None
        if isinstance(file_or_buffer, (str, os.PathLike)):
            self.filename = os.fspath(file_or_buffer)
            if os.path.isdir(self.filename):      # an unzipped archive's top folder
                self._dir = self.filename
            else:
                self._zip = zipfile.ZipFile(self.filename)
        else:
            self.filename = "<binary>"
            self._zip = zipfile.ZipFile(file_or_buffer)
        if self._dir is not None:
            self._files = sorted(
                os.path.relpath(os.path.join(root, f), self._dir).replace(os.sep, "/")
                for root, _, files in os.walk(self._dir) for f in files)
        else:
            names = self._zip.namelist()
            self._archive = names[0].split("/", 1)[0] if names else "archive"
            self._files = [n.split("/", 1)[1] for n in names if "/" in n]
        self.root = _Package()
        self.modules = {}
        self.extern_modules = self._read_externs()
        for name in self.extern_modules:
            if not module_allowed(name):
                raise ImportError(f"package '{file_or_buffer}' needs the external module "
                                  f"'{name}' but that module has been disallowed")
            self._add_extern(name)
        for path in self._files:
            self._add_file(path)
        self.patched_builtins = dict(builtins.__dict__)
        self.patched_builtins["__import__"] = self.__import__
        self.modules["torch_package_importer"] = self
        self._mangler = PackageMangler()
        self._storages = {}          # storage key -> _LoadedStorage, shared by load_pickle
        self.last_map_location = None

    # ------------------------------------------------------------------ archive reading
    def _read_externs(self):
        if ".data/extern_modules" not in self._files:
            return []
        text = self._read(".data/extern_modules").decode("utf-8")
        return [line for line in text.splitlines() if line]

    def _read(self, path, into=None):
        """The bytes of archive file ``path`` (read into the uint8 array ``into`` if given)."""
        if self._dir is None:
            return _ser._read_record(self._zip, self._archive, path, into)
        full = os.path.join(self._dir, *path.split("/"))
        if not os.path.isfile(full):
            raise _ser._corrupt(f"failed locating file {path}: file not found")
        with open(full, "rb") as fh:
            if into is None:
                return fh.read()
            fh.readinto(memoryview(into))
            return into

    def _add_file(self, path):
        *dirs, last = path.split("/")
        if dirs and dirs[0] == ".data":
            return
        package = self._package_node(dirs)
        if isinstance(package, _Extern):
            return
        if last == "__init__.py":
            package.source_file = path
        elif last.endswith(".py"):
            package.children[last[:-3]] = _Module(path)

    def _add_extern(self, name):
        *dirs, last = name.split(".")
        package = self._package_node(dirs)
        if isinstance(package, _Package):
            package.children[last] = _Extern()

    def _package_node(self, atoms):
        node = self.root
        for i, atom in enumerate(atoms):
            child = node.children.get(atom)
            if child is None:
                child = node.children[atom] = _Package()
            elif isinstance(child, _Extern):
                return child
            elif isinstance(child, _Module):
                raise ImportError(f"inconsistent module structure: module "
                                  f"{'.'.join(atoms[:i + 1])} is not a package, but has a "
                                  f"submodule")
            node = child
        return node

    # ------------------------------------------------------------------ resources
    def _resource_path(self, package, resource):
        module = self.import_module(package)
        if not hasattr(module, "__path__"):
            raise TypeError(f"{package!r} is not a package")
        return f"{demangle(module.__name__).replace('.', '/')}/{resource}"

    def load_binary(self, package: str, resource: str) -> bytes:
        return self._read(self._resource_path(package, resource))

    def load_text(self, package: str, resource: str, encoding: str = "utf-8",
                  errors: str = "strict") -> str:
        return self.load_binary(package, resource).decode(encoding, errors)

    def load_pickle(self, package: str, resource: str, map_location=None):
        """Unpickle ``package/resource``: classes come from this package's modules (or
        from the interpreter for externs, from ember for ``torch`` names)."""
        data = self._read(self._resource_path(package, resource))
        self.last_map_location = map_location
        reduced = {}
        importer = self

        class Unpickler(pickle.Unpickler):
            def find_class(self, module, name):
                return importer._find_global(module, name)

            def persistent_load(self, pid):
                kind = pid[0].decode() if isinstance(pid[0], bytes) else pid[0]
                if kind == "storage":
                    return importer._load_storage(pid, map_location)
                if kind == "reduce_package":
                    _, key, func, args = pid
                    if key not in reduced:
                        reduced[key] = func(importer, *args)
                    return reduced[key]
                raise pickle.UnpicklingError(f"unknown persistent id kind {kind!r} in a "
                                             f"package pickle")

        result = Unpickler(io.BytesIO(data), encoding="utf-8").load()
        return _ser._storages_to_ember(result)

    def _find_global(self, module, name):
        full = f"{module}.{name}"
        table = _ser._allowed_globals()
        if full in table:
            return table[full]
        if _is_host_name(module):
            return _ser._ember_global(module, name)
        return _lookup(self.import_module(module), name)

    def _load_storage(self, pid, map_location):
        stype, key, location, numel = pid[1:5]
        key = key.decode() if isinstance(key, bytes) else str(key)
        location = location.decode() if isinstance(location, bytes) else location
        if key not in self._storages:
            dtype = stype.dtype if isinstance(stype, _ser.StorageType) else None
            nbytes = int(numel) * (dtype.itemsize if dtype is not None else 1)
            arr = self._read_into(f".data/{key}.storage", nbytes)
            loaded = _ser._LoadedStorage(arr, dtype)
            self._storages[key] = _ser._apply_map_location(loaded, location, map_location)
        return self._storages[key]

    def _read_into(self, path, nbytes):
        return self._read(path, np.empty(nbytes, np.uint8))

    # ------------------------------------------------------------------ information
    def file_structure(self, *, include: GlobPattern = "**",
                       exclude: GlobPattern = ()) -> Directory:
        """The archive's files as a printable tree (``include``/``exclude``: '/' globs)."""
        return _create_directory_from_file_list(self.filename, self._files, include, exclude)

    def python_version(self):
        """The Python version that wrote the package (None for old packages)."""
        if ".data/python_version" in self._files:
            return self._read(".data/python_version").decode("utf-8").strip()
        return None

    def id(self):
        """This importer's module prefix, ``<torch_package_N>``."""
        return self._mangler.parent_name()

    def get_source(self, module_name):
        """The packaged source of ``module_name`` (mangled or not)."""
        module = self.import_module(demangle(module_name))
        path = getattr(module, "__torch_package_source__", None)
        if path is None:
            raise ValueError(f"module {module_name} has no source in this package")
        return self._read(path).decode("utf-8")

    # ------------------------------------------------------------------ importing
    def import_module(self, name: str, package=None):
        """The module ``name`` as this package provides it."""
        name = demangle(name)
        if package is not None or name.startswith("."):
            level = len(name) - len(name.lstrip("."))
            return self._import(name[level:], package, level)
        return self._import(name)

    def _import(self, name, package=None, level=0):
        if level:
            bits = (package or "").rsplit(".", level - 1)
            if len(bits) < level or not package:
                raise ImportError("attempted relative import beyond top-level package")
            name = f"{bits[0]}.{name}" if name else bits[0]
        if name in self.modules:
            return self.modules[name]
        parent = name.rpartition(".")[0]
        if parent:
            parent_module = self._import(parent)
            if name in self.modules:         # importing the parent imported it
                return self.modules[name]
        module = self._load(name)
        if parent:
            setattr(parent_module, name.rpartition(".")[2], module)
        return module

    def _load(self, name):
        node = self.root
        for atom in name.split("."):
            if not isinstance(node, _Package) or atom not in node.children:
                if _is_host_name(name):
                    module = self.modules[name] = _host_module(name)
                    return module
                raise ModuleNotFoundError(
                    f'No module named "{name}" in self-contained archive "{self.filename}" and '
                    f'the module is also not in the list of allowed external modules: '
                    f'{self.extern_modules}', name=name)
            node = node.children[atom]
            if isinstance(node, _Extern):
                module = self.modules[name] = (_host_module(name) if _is_host_name(name)
                                               else importlib.import_module(name))
                return module
        if isinstance(node, _Package) and node.source_file is None and _only_externs(node):
            # a directory made only to hold externs (`os` of an extern `os.path`): the real one
            module = self.modules[name] = (_host_module(name) if _is_host_name(name)
                                           else importlib.import_module(name))
            return module
        return self._make_module(name, node.source_file, isinstance(node, _Package))

    def _make_module(self, name, source_file, is_package):
        spec = importlib.machinery.ModuleSpec(name, self, origin="<package_importer>",
                                              is_package=is_package)
        module = importlib.util.module_from_spec(spec)
        mangled = self._mangler.mangle(name)
        module.__name__ = mangled
        module.__file__ = self._mangler.mangle(source_file) if source_file else None
        module.__builtins__ = self.patched_builtins
        module.__torch_package__ = True
        module.__torch_package_source__ = source_file
        if source_file is None:
            module.__torch_package_dummy__ = True
        self.modules[name] = module
        _PACKAGED_MODULES[mangled] = module
        if source_file is not None:
            source = self._read(source_file).decode("utf-8")
            linecache.cache[module.__file__] = (len(source), None, source.splitlines(True),
                                                module.__file__)
            try:
                exec(compile(source, module.__file__, "exec", dont_inherit=True),
                     module.__dict__)
            except BaseException:
                del self.modules[name]
                raise
        return module

    def get_resource_reader(self, fullname):
        """importlib.resources support for the package ``fullname`` (``read_text``,
        ``files()``, ``contents()`` in packaged code)."""
        try:
            module = self.import_module(fullname)
        except ImportError:
            return None
        if not hasattr(module, "__path__"):
            return None
        return _ResourceReader(self, demangle(fullname).replace(".", "/"))

    # loader protocol (module_from_spec asks for these)
    def create_module(self, spec):
        return None

    def exec_module(self, module):
        pass

    def __import__(self, name, globals=None, locals=None, fromlist=(), level=0):
        """The ``__import__`` packaged code runs with."""
        package = None
        if level:
            package = (globals or {}).get("__package__")
            if package is None and globals is not None:
                spec = globals.get("__spec__")
                package = spec.parent if spec is not None else None
        module = self._import(name, package, level)
        if fromlist:
            self._fill_fromlist(module, fromlist)
            return module
        if level == 0:
            return self._import(name.partition(".")[0])
        if not name:
            return module
        # `from .. import` aside, `import .a.b` is not valid: return the first package
        head = name.partition(".")[0]
        base = self._import_name(module)
        return self._import(base[:len(base) - len(name) + len(head)])

    def _import_name(self, module):
        spec = getattr(module, "__spec__", None)
        return spec.name if spec is not None else demangle(module.__name__)

    def _fill_fromlist(self, module, fromlist):
        if not hasattr(module, "__path__"):
            return
        base = self._import_name(module)
        for item in fromlist:
            if item == "*":
                self._fill_fromlist(module, getattr(module, "__all__", ()))
            elif not hasattr(module, item):
                try:
                    self._import(f"{base}.{item}")
                except ModuleNotFoundError as e:
                    if e.name != f"{base}.{item}":
                        raise

    # Importer: names of objects defined in this package are their demangled names
    def whichmodule(self, obj, name):
        return Importer.whichmodule(self, obj, name)
