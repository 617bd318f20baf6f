"""Named tuples returned by multi-output ops (``torch.return_types``)."""
from __future__ import annotations

import collections

_TYPES: dict = {}


def _named(name, fields):
    key = (name, fields)
    t = _TYPES.get(key)
    if t is None:
        base = collections.namedtuple(name, fields)
        t = type(name, (base,), {"__slots__": (), "__module__": "torch.return_types",
                                 "__repr__": _repr})
        _TYPES[key] = t
    return t


def _repr(self):
    body = ",\n".join(f"{f}={v!r}" for f, v in zip(self._fields, self))
    return f"torch.return_types.{type(self).__name__}(\n{body})"


def wrap_returns(op, outputs):
    fields = tuple(op.schema_return_names) if getattr(op, "schema_return_names", None) else None
    if not fields:
        return tuple(outputs)
    return _named(op.public_name, fields)(*outputs)


def __getattr__(name):
    """``torch.return_types.max`` and friends: the type an op with named returns makes."""
    if name.startswith("__"):   # ``__path__``, asked by every ``from ... import``: no scan
        raise AttributeError(f"module 'torch.return_types' has no attribute '{name}'")
    from ember._ops.registry import OPS
    for op in list(OPS.values()):
        fields = getattr(op, "schema_return_names", None)
        if fields and getattr(op, "public_name", None) == name:
            return _named(name, tuple(fields))
    raise AttributeError(f"module 'torch.return_types' has no attribute '{name}'")
