"""The modules a Python source file imports, read from its syntax tree (nothing runs)."""
import ast

__all__ = ["find_files_source_depends_on"]


def _absolute(module, level, package):
    """The absolute name of ``from <level dots><module> import ...`` inside ``package``."""
    if level == 0:
        return module
    parts = package.split(".") if package else []
    if level > len(parts):
        raise ImportError("attempted relative import beyond top-level package")
    base = parts[:len(parts) - (level - 1)]
    return ".".join(base + ([module] if module else []))


def find_files_source_depends_on(src, package):
    """``[(module, attribute or None), ...]`` in source order: ``import a.b`` gives
    ``('a.b', None)``; ``from a import b, c`` gives ``('a', 'b'), ('a', 'c')`` (``b`` may be
    a submodule or a name in ``a``: the exporter decides). ``package`` is the package the
    source lives in, for relative imports."""
    found = []

    def visit(node):                     # depth first, in source order
        if isinstance(node, ast.Import):
            found.extend((alias.name, None) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(node.module or "", node.level, package)
            if base:
                found.extend((base, alias.name if alias.name != "*" else None)
                             for alias in node.names)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(src))
    return found
