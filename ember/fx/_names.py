"""Public dotted names of ember callables, spelled as torch spells them (``torch.add``,
``torch.nn.functional.relu``): graphs print them, generated code calls them with
``torch`` bound to the ember module."""
from __future__ import annotations

import functools
import types

# (namespace attribute path under ember, printed prefix)
_NAMESPACES = (("", "torch"), ("nn.functional", "torch.nn.functional"),
               ("linalg", "torch.linalg"), ("fft", "torch.fft"), ("special", "torch.special"))


_EXTRA = {}      # id -> (object, name) for ember.fx's own helpers


@functools.lru_cache(maxsize=None)
def _table():
    import ember
    names = {}
    for path, prefix in _NAMESPACES:
        ns = ember
        for part in filter(None, path.split(".")):
            ns = getattr(ns, part)
        for key, value in vars(ns).items():
            if key.startswith("_") or isinstance(value, (type, types.ModuleType)):
                continue
            value = getattr(value, "__fx_original__", value)    # patched while tracing
            if callable(value):
                names.setdefault(id(value), (value, f"{prefix}.{key}"))
    names.update(_EXTRA)
    return names


def public_name(obj):
    """``'torch.add'`` for ember.add (None for objects outside ember's namespaces)."""
    hit = _table().get(id(obj))
    return hit[1] if hit is not None and hit[0] is obj else None


def namespace_functions(path):
    """(name, function) pairs of one ember namespace: what the tracer wraps."""
    import ember
    ns = ember
    for part in filter(None, path.split(".")):
        ns = getattr(ns, part)
    return ns, [(k, v) for k, v in vars(ns).items()
                if not k.startswith("_") and callable(v)
                and not isinstance(v, (type, types.ModuleType))]
