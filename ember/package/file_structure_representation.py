"""``Directory``: the tree of files in a package, as ``PackageImporter.file_structure`` shows it.

Printed, subdirectories come first, then files, each group sorted by name::

    ─── my_package.pt
        ├── .data
        │   └── version
        └── byteorder
"""
from typing import Dict, List

from .glob_group import GlobGroup, GlobPattern

__all__ = ["Directory"]


class Directory:
    """A directory (``is_dir``) or a file of the archive; ``children`` by name."""

    def __init__(self, name: str, is_dir: bool):
        self.name = name
        self.is_dir = is_dir
        self.children: Dict[str, "Directory"] = {}

    def _get_dir(self, parts: List[str]) -> "Directory":
        node = self
        for part in parts:
            if part not in node.children:
                node.children[part] = Directory(part, True)
            node = node.children[part]
        return node

    def _add_file(self, file_path: str):
        *dirs, file = file_path.split("/")
        self._get_dir(dirs).children[file] = Directory(file, False)

    def has_file(self, filename: str) -> bool:
        """Whether ``'a/b/c.py'`` (a file or a directory) is in this tree."""
        node = self
        for part in filename.split("/"):
            if not node.is_dir or part not in node.children:
                return False
            node = node.children[part]
        return True

    def __str__(self):
        lines = []
        self._render(lines, "", "")
        return "".join(lines)

    def __repr__(self):
        return f"Directory(name={self.name!r}, is_dir={self.is_dir})"

    def _render(self, lines, head, indent):
        """``head``: this entry's connector; ``indent``: prefix for its children's lines."""
        lines.append(f"{head}{self.name}\n" if head else f"─── {self.name}\n")
        if not head:
            indent = "    "
        kids = (sorted((c for c in self.children.values() if c.is_dir), key=_name)
                + sorted((c for c in self.children.values() if not c.is_dir), key=_name))
        for i, child in enumerate(kids):
            last = i == len(kids) - 1
            child._render(lines, indent + ("└── " if last else "├── "),
                          indent + ("    " if last else "│   "))


def _name(node):
    return node.name


def _create_directory_from_file_list(filename: str, file_list: List[str],
                                     include: GlobPattern = "**",
                                     exclude: GlobPattern = ()) -> Directory:
    """The tree of the paths in ``file_list`` that match ``include`` and not ``exclude``."""
    wanted = GlobGroup(include, exclude=exclude, separator="/")
    top = Directory(filename, True)
    for path in file_list:
        if wanted.matches(path):
            top._add_file(path)
    return top
