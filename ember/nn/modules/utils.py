"""Argument expansion shared by the layer modules: ``_pair(3) == (3, 3)`` while an
iterable is kept as a tuple (``_pair((3, 1)) == (3, 1)``)."""
from collections.abc import Iterable

__all__ = []


def _ntuple(n, name="parse"):
    def expand(value):
        return tuple(value) if isinstance(value, Iterable) else (value,) * n
    expand.__name__ = name
    return expand


_single, _pair, _triple, _quadruple = (
    _ntuple(n, name) for n, name in enumerate(("_single", "_pair", "_triple", "_quadruple"), 1))
