"""``PackageExporter``: write code, objects and data into one self-contained zip archive.

Archive layout (as torch.package writes it; ``<a>`` is the archive's top folder)::

    <a>/<package path>/<resource>   save_pickle / save_text / save_binary
    <a>/<module path>.py            interned modules (<module path>/__init__.py: packages)
    <a>/_mock.py                    the MockedObject stand-in (when anything is mocked)
    <a>/.data/<key>.storage         raw bytes of each tensor storage
    <a>/.data/extern_modules        externed module names, one a line
    <a>/.data/python_version, <a>/.data/version ("6"), <a>/byteorder, <a>/.data/serialization_id

Every module an object or a source file needs becomes a node of a dependency graph; each is
decided by the first matching ``intern``/``extern``/``mock``/``deny`` pattern, except ember
(and the ``torch``/``torchvision`` names ember's objects are written under) and the
standard library, which are always extern. ``close()`` raises ``PackagingError`` listing
every module that could not be packaged, then writes the sources.
"""
import importlib.machinery
import io
import os
import platform
import sys
from collections import OrderedDict
from enum import Enum
from typing import Sequence

from ember.serialization import _AlignedZip, _is_path, _serialization_id
from ._digraph import DiGraph
from ._package_pickler import PackagePickler, pickle_globals
from ._stdlib import RISKY_STDLIB, is_stdlib_module
from .find_file_dependencies import find_files_source_depends_on
from .glob_group import GlobGroup
from .importer import Importer, OrderedImporter, sys_importer

__all__ = ["PackageExporter", "PackagingError", "EmptyMatchError"]

_FORMAT_VERSION = b"6\n"
_HOST_PACKAGES = ("ember", "torch", "torchvision")    # always extern


class _Action(Enum):
    INTERN = 1
    EXTERN = 2
    MOCK = 3
    DENY = 4
    MOCK_SUPPORT = 5        # `_mock` imported by the code of a package being repackaged
    SKIP = 6                # `torch_package_importer`: the importer itself, at load time


class PackagingErrorReason(Enum):
    """Why a module could not be packaged (the headings of PackagingError's message)."""
    IS_EXTENSION_MODULE = "Module is a C extension module. torch.package supports Python modules only."
    NO_DUNDER_FILE = "Module had no __file__ defined."
    SOURCE_FILE_NOT_FOUND = "Module had a __file__, but we could not find it in your filesystem."
    DEPENDENCY_RESOLUTION_FAILED = "Dependency resolution failed."
    NO_ACTION = "Module did not match against any action pattern. Extern, mock, or intern it."
    DENIED = "Module was denied by a pattern."
    MOCKED_BUT_STILL_USED = ("Module was mocked out, but is still being used in the package. "
                             "Please intern or extern the mocked modules if objects are supposed "
                             "to be in the package.")


class PackagingError(Exception):
    """Raised by ``close()``: every broken module, grouped by reason."""

    def __init__(self, dependency_graph, debug=False):
        by_reason = OrderedDict()
        for name, attrs in dependency_graph.nodes.items():
            if "error" in attrs:
                by_reason.setdefault(attrs["error"], []).append(name)
        lines = ["\n"]
        for reason, names in by_reason.items():
            lines.append(f"* {reason.value}\n")
            for name in names:
                lines.append(f"    {name}\n")
                context = dependency_graph.nodes[name].get("error_context")
                if context is not None:
                    lines.append(f"      {context}\n")
                if debug:
                    path = " -> ".join(dependency_graph.first_path(name))
                    lines.append(f"      A path to {name}: {path}\n")
        if not debug:
            lines.append("\nSet debug=True when invoking PackageExporter for a visualization "
                         "of where broken modules are coming from!\n")
        self.dependency_graph = dependency_graph
        super().__init__("".join(lines))


class EmptyMatchError(Exception):
    """A pattern registered with ``allow_empty=False`` matched no module."""


class _PatternInfo:
    def __init__(self, action, allow_empty):
        self.action = action
        self.allow_empty = allow_empty
        self.was_matched = False


def _risky_note(name):
    return (f"Note: While we usually use modules in the python standard library from the "
            f"local environment, `{name}` has a lot of system level access and therefore can "
            f"pose a security risk. We heavily recommend removing `{name}` from your packaged "
            f"code. However, if that is not possible, add it to the extern list by calling "
            f'PackageExporter.extern("`{name}`")')


def _module_path(name, is_package):
    path = name.replace(".", "/")
    return f"{path}/__init__.py" if is_package else f"{path}.py"


class PackageExporter:
    """``with PackageExporter("out.pt") as exp: exp.intern("my_pkg.**"); exp.save_pickle(...)``

    ``f``: a path, or a writable binary file (written on ``close()``). ``importer``: where
    modules and their sources come from (an ``Importer`` or a sequence of them, searched in
    order). ``debug``: PackagingError shows a dependency path to each broken module.
    """

    def __init__(self, f, importer=sys_importer, debug: bool = False):
        if _is_path(f):
            self._path, self._out = os.fspath(f), None
            stem = os.path.splitext(os.path.basename(self._path))[0]
            archive = stem if stem and stem.isascii() else "archive"
        else:
            if not hasattr(f, "write"):
                raise AttributeError("expected 'f' to be string, path, or a file-like object "
                                     "with a 'write' attribute")
            self._path, self._out, archive = None, f, "archive"
        if isinstance(importer, Importer):
            self.importer = importer
        else:
            if not isinstance(importer, Sequence) or not all(
                    isinstance(i, Importer) for i in importer):
                raise TypeError("importer arg should be an Importer or a sequence of Importers, "
                                f"got {type(importer)} instead.")
            self.importer = OrderedImporter(*importer)
        self.debug = debug
        self._buffer = io.BytesIO()
        self.zip_file = _AlignedZip(self._buffer, archive)
        self._written = set()
        self._storages = {}              # id(storage owner) -> _StorageRef, for all pickles
        self._storage_owners = []
        self._storages_written = set()
        self.dependency_graph = DiGraph()
        self.patterns = OrderedDict()    # GlobGroup -> _PatternInfo, in registration order
        self._unique_id = 0
        self._script_modules = 0
        self._extern_hooks, self._mock_hooks, self._intern_hooks = (
            OrderedDict(), OrderedDict(), OrderedDict())   # (weak-referenceable for handles)
        self._closed = False

    # ------------------------------------------------------------------ patterns
    def _add_pattern(self, action, include, exclude, allow_empty):
        self.patterns[GlobGroup(include, exclude=exclude)] = _PatternInfo(action, allow_empty)

    def intern(self, include, *, exclude=(), allow_empty: bool = True):
        """Package the source of the modules matching ``include`` (and what they import)."""
        self._add_pattern(_Action.INTERN, include, exclude, allow_empty)

    def extern(self, include, *, exclude=(), allow_empty: bool = True):
        """Leave the matching modules out; the loading interpreter imports its own."""
        self._add_pattern(_Action.EXTERN, include, exclude, allow_empty)

    def mock(self, include, *, exclude=(), allow_empty: bool = True):
        """Replace the matching modules with stubs whose attributes are MockedObjects."""
        self._add_pattern(_Action.MOCK, include, exclude, allow_empty)

    def deny(self, include, *, exclude=()):
        """Make packaging fail if a matching module is needed."""
        self._add_pattern(_Action.DENY, include, exclude, True)

    # ------------------------------------------------------------------ hooks
    def _register(self, hooks, hook):
        from ember.utils.hooks import RemovableHandle
        handle = RemovableHandle(hooks)
        hooks[handle.id] = hook
        return handle

    def register_extern_hook(self, hook):
        """``hook(exporter, module_name)`` for each externed module, at ``close()``."""
        return self._register(self._extern_hooks, hook)

    def register_mock_hook(self, hook):
        return self._register(self._mock_hooks, hook)

    def register_intern_hook(self, hook):
        return self._register(self._intern_hooks, hook)

    # ------------------------------------------------------------------ dependency graph
    def _implicit_extern(self, name):
        return name.partition(".")[0] in _HOST_PACKAGES or is_stdlib_module(name)

    def add_dependency(self, module_name: str, dependencies: bool = True):
        """Decide ``module_name`` by the patterns (and, if interned, what it imports)."""
        graph = self.dependency_graph
        if module_name in graph and graph.nodes[module_name].get("provided"):
            return
        if module_name == "torch_package_importer":
            graph.add_node(module_name, action=_Action.SKIP, provided=True)
            return
        if module_name == "_mock":
            graph.add_node(module_name, action=_Action.MOCK_SUPPORT, provided=True)
            return
        if self._implicit_extern(module_name):
            graph.add_node(module_name, action=_Action.EXTERN, provided=True)
            return
        for pattern, info in self.patterns.items():
            if pattern.matches(module_name):
                info.was_matched = True
                graph.add_node(module_name, action=info.action, provided=True)
                if info.action is _Action.DENY:
                    graph.add_node(module_name, error=PackagingErrorReason.DENIED)
                elif info.action is _Action.INTERN:
                    self._intern_module(module_name, dependencies)
                return
        graph.add_node(module_name, error=PackagingErrorReason.NO_ACTION)
        if module_name in RISKY_STDLIB:
            graph.add_node(module_name, error_context=_risky_note(module_name))

    def _intern_module(self, module_name, dependencies):
        module = self.importer.import_module(module_name)
        is_package = hasattr(module, "__path__")
        source = self._source_of(module_name, module)
        if source is None:
            return
        self.dependency_graph.add_node(module_name, action=_Action.INTERN, provided=True,
                                       is_package=is_package, source=source)
        if dependencies:
            self._add_source_dependencies(module_name, source, is_package)

    def _source_of(self, name, module):
        """The module's source text, or None after marking its node with the reason."""
        from .package_importer import PackageImporter
        graph = self.dependency_graph
        loader = getattr(module, "__loader__", None)
        if isinstance(loader, PackageImporter):
            return loader.get_source(name)
        filename = getattr(module, "__file__", None)
        if filename is None:
            graph.add_node(name, error=PackagingErrorReason.NO_DUNDER_FILE)
            if name in RISKY_STDLIB:
                graph.add_node(name, error_context=_risky_note(name))
            return None
        if filename.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES)):
            graph.add_node(name, error=PackagingErrorReason.IS_EXTENSION_MODULE)
            return None
        if not os.path.isfile(filename):
            graph.add_node(name, error=PackagingErrorReason.SOURCE_FILE_NOT_FOUND,
                           error_context=f"The file {filename} does not exist")
            return None
        with open(filename, encoding="utf-8") as fh:
            return fh.read()

    def _add_source_dependencies(self, module_name, source, is_package):
        package = module_name if is_package else module_name.rpartition(".")[0]
        try:
            imports = find_files_source_depends_on(source, package)
        except (ImportError, SyntaxError) as e:
            self.dependency_graph.add_node(
                module_name, error=PackagingErrorReason.DEPENDENCY_RESOLUTION_FAILED,
                error_context=f"Context: {e}")
            return
        found = {}
        for base, attr in imports:
            if attr is not None and self._module_exists(f"{base}.{attr}"):
                found.setdefault(f"{base}.{attr}", None)
            elif self._module_exists(base):
                found.setdefault(base, None)
        for dep in found:
            self.dependency_graph.add_edge(module_name, dep)
            self.add_dependency(dep)

    def _module_exists(self, name):
        if name in self.dependency_graph and self.dependency_graph.nodes[name].get("provided"):
            return True
        top = name.partition(".")[0]
        try:
            if top in _HOST_PACKAGES:           # ember's own module of that name
                from .package_importer import _host_module
                _host_module(name)
            else:
                self.importer.import_module(name)
            return True
        except Exception:  # noqa: BLE001 - an unimportable name is not a dependency
            return False

    # ------------------------------------------------------------------ saving
    def _check_open(self):
        if self._closed:
            raise AttributeError("this PackageExporter is closed: nothing more can be saved "
                                 "into it")

    def _write(self, filename, data):
        self._check_open()
        if filename in self._written:
            raise AssertionError(f"Tried to write file '{filename}', but it already exists in "
                                 f"this archive. Please file a bug.")
        self._written.add(filename)
        self.zip_file.write(filename, data.encode("utf-8") if isinstance(data, str) else data)

    @staticmethod
    def _resource_path(package, resource):
        return f"{package.replace('.', '/')}/{resource}"

    def save_source_string(self, module_name: str, src: str, is_package: bool = False,
                           dependencies: bool = True):
        """Intern ``src`` as the source of ``module_name``."""
        self._check_open()
        self.dependency_graph.add_node(module_name, action=_Action.INTERN, provided=True,
                                       is_package=is_package, source=src)
        if dependencies:
            self._add_source_dependencies(module_name, src, is_package)

    def save_source_file(self, module_name: str, file_or_directory: str,
                         dependencies: bool = True):
        """Intern a source file, or a whole directory tree as package ``module_name``."""
        path = os.fspath(file_or_directory)
        if not os.path.isdir(path):
            with open(path, encoding="utf-8") as fh:
                self.save_source_string(module_name, fh.read(), False, dependencies)
            return
        for root, dirs, files in os.walk(path):
            dirs.sort()
            rel = os.path.relpath(root, path)
            prefix = module_name if rel == "." else f"{module_name}.{rel.replace(os.sep, '.')}"
            for fname in sorted(files):
                if not fname.endswith(".py"):
                    continue
                is_package = fname == "__init__.py"
                name = prefix if is_package else f"{prefix}.{fname[:-3]}"
                with open(os.path.join(root, fname), encoding="utf-8") as fh:
                    self.save_source_string(name, fh.read(), is_package, dependencies)

    def save_module(self, module_name: str, dependencies: bool = True):
        """Intern the module ``module_name`` (its source from the importer)."""
        if not isinstance(module_name, str):
            raise TypeError("save_module() expects a string input, did you perhaps mean to "
                            "pass `__name__`?")
        self._check_open()
        self._intern_module(module_name, dependencies)

    def save_pickle(self, package: str, resource: str, obj, dependencies: bool = True,
                    pickle_protocol: int = 3):
        """Pickle ``obj`` to ``package/resource``; the modules its globals come from become
        dependencies. Tensors are stored as in ember.save's checkpoints."""
        if pickle_protocol not in (3, 4):
            raise AssertionError(f"torch.package only supports pickle protocols 3 and 4, got "
                                 f"{pickle_protocol}")
        self._check_open()
        filename = self._resource_path(package, resource)
        data = io.BytesIO()
        PackagePickler(self, data, pickle_protocol).dump(obj)
        data = data.getvalue()
        if dependencies:
            node = f"<{package}.{resource}>"
            self.dependency_graph.add_node(node, action=_Action.INTERN, provided=True,
                                           is_pickle=True)
            for module, names in pickle_globals(data).items():
                self.dependency_graph.add_edge(node, module)
                self.add_dependency(module)
                if self.dependency_graph.nodes[module].get("action") is _Action.MOCK:
                    self.dependency_graph.add_node(
                        module, error=PackagingErrorReason.MOCKED_BUT_STILL_USED,
                        error_context=f"Context: Object(s) '{names}' from module `{module}` "
                                      f"was mocked out during packaging but is being used in "
                                      f"resource - `{resource}` in package `{package}`. ")
        import numpy as np
        for ref in sorted(self._storages.values(), key=lambda r: int(r.key)):
            if ref.key not in self._storages_written:
                self._storages_written.add(ref.key)
                self._write(f".data/{ref.key}.storage", np.ascontiguousarray(ref.bytes).tobytes())
        self._write(filename, data)

    def _save_script_module(self, module):
        """Write a ScriptModule (ember.jit.save's archive) under .data/ts_code; its key."""
        from ember import jit
        key = str(self._script_modules)
        self._script_modules += 1
        data = io.BytesIO()
        jit.save(module, data)
        self._write(f".data/ts_code/{key}.pt", data.getvalue())
        return key

    def save_text(self, package: str, resource: str, text: str):
        self.save_binary(package, resource, text.encode("utf-8"))

    def save_binary(self, package, resource, binary: bytes):
        self._write(self._resource_path(package, resource), binary)

    def get_unique_id(self) -> str:
        """A fresh id per call (for resource names made in ``__reduce_package__``)."""
        uid = str(self._unique_id)
        self._unique_id += 1
        return uid

    # ------------------------------------------------------------------ reports
    def _nodes_with(self, action):
        return sorted(n for n, a in self.dependency_graph.nodes.items()
                      if a.get("action") is action and not a.get("is_pickle"))

    def externed_modules(self):
        return self._nodes_with(_Action.EXTERN)

    def interned_modules(self):
        return self._nodes_with(_Action.INTERN)

    def mocked_modules(self):
        return self._nodes_with(_Action.MOCK)

    def denied_modules(self):
        return self._nodes_with(_Action.DENY)

    def dependency_graph_string(self) -> str:
        """The dependency graph in Graphviz dot."""
        return self.dependency_graph.to_dot()

    def all_paths(self, src: str, dst: str) -> str:
        """Dot source of the subgraph of every dependency path from ``src`` to ``dst``."""
        return self.dependency_graph.all_paths(src, dst)

    # ------------------------------------------------------------------ closing
    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        if exc_type is not None:        # leave the archive as it is; the error propagates
            self._finish()
            return
        self.close()

    def close(self):
        """Check the dependency graph, write sources and metadata, finish the archive."""
        graph = self.dependency_graph
        try:
            if any("error" in a for a in graph.nodes.values()):
                raise PackagingError(graph, debug=self.debug)
            for pattern, info in self.patterns.items():
                if not info.allow_empty and not info.was_matched:
                    raise EmptyMatchError(f"Exporter did not match any modules to {pattern}, "
                                          f"which was marked as allow_empty=False")
        except Exception:
            self._finish()              # (the archive stays incomplete, its file closed)
            raise
        hooks = {_Action.EXTERN: self._extern_hooks, _Action.MOCK: self._mock_hooks,
                 _Action.INTERN: self._intern_hooks}
        for name, attrs in graph.nodes.items():
            if not attrs.get("is_pickle"):
                for hook in list(hooks.get(attrs.get("action"), {}).values()):
                    hook(self, name)
        self._write_modules()
        self._finish()

    def _write_modules(self):
        externs, mock_written = [], False
        for name, attrs in self.dependency_graph.nodes.items():
            action = attrs.get("action")
            if action is _Action.EXTERN:
                externs.append(name)
            elif action in (_Action.MOCK, _Action.MOCK_SUPPORT):
                if not mock_written:
                    self._write("_mock.py", _mock_source())
                    mock_written = True
                if action is _Action.MOCK:
                    self._write(_module_path(name, self._is_package(name)), _MOCK_STUB)
            elif action is _Action.INTERN and not attrs.get("is_pickle") and "source" in attrs:
                self._write(_module_path(name, attrs.get("is_package", False)), attrs["source"])
        self._write(".data/extern_modules", "".join(f"{n}\n" for n in externs) or "\n")
        self._write(".data/python_version", platform.python_version())
        self._write(".data/version", _FORMAT_VERSION)
        self._write("byteorder", sys.byteorder)
        self._write(".data/serialization_id", _serialization_id())

    def _is_package(self, name):
        try:
            return hasattr(self.importer.import_module(name), "__path__")
        except Exception:  # noqa: BLE001 - a mocked module need not exist
            return False

    def _finish(self):
        if self._closed:
            return
        self._closed = True
        self.zip_file.close()
        if self._path is not None:
            with open(self._path, "wb") as fh:
                fh.write(self._buffer.getvalue())
        else:
            self._out.write(self._buffer.getvalue())
            if hasattr(self._out, "flush"):
                self._out.flush()


# a mocked module: any attribute is a MockedObject named after it
_MOCK_STUB = ("from _mock import MockedObject\n\n\n"
              "def __getattr__(attr: str):\n"
              "    return MockedObject(f\"{__name__}.{attr}\", _suppress_err=True)\n")


def _mock_source():
    with open(os.path.join(os.path.dirname(__file__), "_mock.py"), encoding="utf-8") as fh:
        return fh.read()
