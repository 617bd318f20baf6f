"""Named tuples returned by multi-output ops (``torch.return_types``)."""
from __future__ import annotations

import collections

_TYPES: dict = {}
_BASES: dict = {}         # each type's namedtuple base


def _named(name, fields):
    key = (name, fields)
    t = _TYPES.get(key)
    if t is None:
        base = collections.namedtuple(name, fields)
        n = len(fields)
        t = type(name, (base,), {"__slots__": (), "__module__": "torch.return_types",
                                 "__repr__": _repr, "__new__": _structseq_new,
                                 "__getnewargs__": _getnewargs,
                                 "n_fields": n, "n_sequence_fields": n, "n_unnamed_fields": 0})
        _TYPES[key] = t
        _BASES[t] = base
    return t


def _structseq_new(cls, *args, **kwargs):
    """``max((values, indices))``: one sequence, as torch's structseq types take it (several
    arguments or keywords, namedtuple style, also work)."""
    if len(args) == 1 and not kwargs:
        seq = args[0]
        if not hasattr(seq, "__iter__") or isinstance(seq, str):
            raise TypeError("constructor requires a sequence")
        args = tuple(seq)
    return _BASES[cls].__new__(cls, *args, **kwargs)


def _getnewargs(self):
    return (tuple(self),)


def _repr(self):
    body = ",\n".join(f"{f}={v!r}" for f, v in zip(self._fields, self))
    return f"torch.return_types.{type(self).__name__}(\n{body})"


def wrap_returns(op, outputs):
    fields = tuple(op.schema_return_names) if getattr(op, "schema_return_names", None) else None
    if not fields:
        return tuple(outputs)
    t = _named(op.public_name, fields)
    return _BASES[t].__new__(t, *outputs)


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
