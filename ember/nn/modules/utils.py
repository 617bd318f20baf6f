"""Argument expansion shared by the layer modules: ``_pair(3) == (3, 3)`` while an
iterable is kept as a tuple (``_pair((3, 1)) == (3, 1)``)."""
from collections.abc import Iterable

__all__ = ["consume_prefix_in_state_dict_if_present"]


def _ntuple(n, name="parse"):
    def expand(value):
        return tuple(value) if isinstance(value, Iterable) else (value,) * n
    expand.__name__ = name
    return expand


_single, _pair, _triple, _quadruple = (
    _ntuple(n, name) for n, name in enumerate(("_single", "_pair", "_triple", "_quadruple"), 1))


def consume_prefix_in_state_dict_if_present(state_dict, prefix):
    """Strip ``prefix`` (e.g. ``"module."`` left by DataParallel) in place from every key of
    ``state_dict`` that starts with it, and from the keys of its ``_metadata`` (where the
    bare module name, ``prefix`` without its dots, becomes the root ``""``). Renamed
    entries move to the end, in their order."""
    for key in [k for k in state_dict if k.startswith(prefix)]:
        state_dict[key[len(prefix):]] = state_dict.pop(key)
    meta = getattr(state_dict, "_metadata", None)
    if meta is None:
        return
    bare = prefix.replace(".", "")
    for key in list(meta):
        if key and (key == bare or key.startswith(prefix)):
            meta[key[len(prefix):]] = meta.pop(key)
