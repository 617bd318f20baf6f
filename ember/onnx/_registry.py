"""The symbolic table: IR node kind -> ``fn(g, *inputs)`` that emits ONNX nodes.

Built-in entries come from ``_symbolic_*`` modules (``@symbolic("aten::relu")``, with the
first opset they work in). ``register_custom_op_symbolic`` entries win over them for
exports at or above their opset. Python-number nodes (``operator.add`` ... on values known
only at run time) are looked up by their callable.
"""
from __future__ import annotations

_TABLE: dict = {}           # kind -> [(opset, fn)], sorted by opset
_CUSTOM: dict = {}          # kind -> {opset: fn}
_PYTHON: dict = {}          # callable -> fn
_loaded = False


def symbolic(*kinds, opset=9):
    def deco(fn):
        for k in kinds:
            _TABLE.setdefault(k, []).append((opset, fn))
            _TABLE[k].sort(key=lambda e: e[0])
        return fn
    return deco


def python_symbolic(*callables):
    def deco(fn):
        for c in callables:
            _PYTHON[c] = fn
        return fn
    return deco


def _load():
    global _loaded
    if not _loaded:
        _loaded = True
        import importlib
        for name in ("_symbolic_ops", "_symbolic_shape", "_symbolic_nn", "_symbolic_vision",
                     "_symbolic_functional"):
            importlib.import_module("ember.onnx." + name)      # they fill the table


def _pick(entries, opset):
    best = None
    for v, fn in entries:
        if v <= opset:
            best = fn
    return best


def lookup_custom(kind, opset):
    """A ``register_custom_op_symbolic`` entry (these win over everything built in)."""
    custom = _CUSTOM.get(kind)
    return _pick(sorted(custom.items()), opset) if custom else None


def lookup(kind, opset):
    _load()
    return lookup_custom(kind, opset) or _pick(_TABLE.get(kind, ()), opset)


def lookup_python(fn):
    _load()
    try:
        return _PYTHON.get(fn)
    except TypeError:
        return None


def first_opset(kind):
    """The lowest opset any symbolic for ``kind`` works in (for the error), or None."""
    opsets = [v for v, _ in _TABLE.get(kind, ())] + list(_CUSTOM.get(kind, {}))
    return min(opsets) if opsets else None


def _kind(name):
    if "::" not in name:
        raise ValueError(f"Failed to register operator {name}. The symbolic name must match the "
                         f"format domain::name, and should start with a letter and contain "
                         f"only alphanumerical characters")
    return name


def register_custom_op_symbolic(symbolic_name, symbolic_fn, opset_version):
    """Use ``symbolic_fn(g, *inputs)`` for ``symbolic_name`` ("aten::relu", "ns::op") in
    exports with opset ``opset_version`` or newer."""
    _CUSTOM.setdefault(_kind(symbolic_name), {})[opset_version] = symbolic_fn


def unregister_custom_op_symbolic(symbolic_name, opset_version):
    """Forget a symbolic registered with ``register_custom_op_symbolic``."""
    entries = _CUSTOM.get(_kind(symbolic_name), {})
    entries.pop(opset_version, None)
    if not entries:
        _CUSTOM.pop(symbolic_name, None)
