"""Module-name mangling: each PackageImporter puts its modules under its own prefix.

A module ``mypkg.model`` loaded by the third importer is named
``<torch_package_2>.mypkg.model``; the angle brackets make the name impossible to import
by accident, and ``demangle`` gives back the name the module had when it was packaged.
"""
import re

__all__ = ["PackageMangler", "demangle", "is_mangled", "get_mangle_prefix"]

_PREFIX = re.compile(r"^<torch_package_\d+>")
_next_index = [0]


class PackageMangler:
    """Hands out one fresh prefix per instance (one instance per PackageImporter)."""

    def __init__(self):
        self._prefix = f"<torch_package_{_next_index[0]}>"
        _next_index[0] += 1

    def mangle(self, name):
        """``'a.b'`` -> ``'<torch_package_N>.a.b'`` (names are mangled once)."""
        if not name:
            raise ValueError("cannot mangle an empty module name")
        return f"{self._prefix}.{name}"

    def demangle(self, mangled):
        """Undo ``mangle`` when ``mangled`` carries this instance's prefix."""
        head = self._prefix + "."
        return mangled[len(head):] if mangled.startswith(head) else mangled

    def parent_name(self):
        return self._prefix


def is_mangled(name):
    return _PREFIX.match(name) is not None


def demangle(name):
    """Strip any importer's prefix: ``'<torch_package_0>.a.b'`` -> ``'a.b'``."""
    m = _PREFIX.match(name)
    if m is None:
        return name
    rest = name[m.end():]
    return rest[1:] if rest.startswith(".") else rest


def get_mangle_prefix(name):
    m = _PREFIX.match(name)
    return m.group(0) if m else name
