"""Argument expansion shared by the layer modules: ``_pair(3) == (3, 3)`` while an
iterable is kept as a tuple (``_pair((3, 1)) == (3, 1)``)."""
from collections.abc import Iterable

__all__ = []


def _ntuple(n, name="parse"):
    def expand(value):
        return tuple(value) if isinstance(value, Iterable) else (value,) * n
    expand.__name__ = name
    return expand


_single = _ntuple(1, "_single")
_pair = _ntuple(2, "_pair")
_triple = _ntuple(3, "_triple")
_quadruple = _ntuple(4, "_quadruple")
