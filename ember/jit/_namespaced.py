"""Ops of namespaces other than ``aten`` (``quantized::add``...) in scripted and traced code.

``ember.ops.quantized.add(...)`` (torch: ``torch.ops.quantized.add``) compiles to a node of
kind ``quantized::add`` carrying the op record whose schema binds the arguments; archives
write it as torch does, ``ops.quantized.add(q, r, 0.1, 3)``, and ``jit.load`` reads that
back to the same record."""
from __future__ import annotations

from ember.jit import _builtins as B


def records(fn):
    """The op records behind ``fn`` when it is a non-aten packet (``ember.ops.quantized.add``)
    or a ``ns::name`` record itself; else None."""
    ns = getattr(fn, "_namespace", None)
    if ns is not None and ns != "aten":
        return list(fn._overloads.values())
    name = getattr(fn, "name", None)
    if isinstance(name, str) and "::" in name and hasattr(fn, "schema"):
        return [fn]
    return None


def registry_records(ns, name):
    """The records named ``ns::name`` (any overload) in ember's op registry."""
    from ember._ops.registry import OPS
    full = f"{ns}::{name}"
    return [op for key, op in OPS.items() if key.partition(".")[0] == full]


def kind_of(op):
    """``quantized::add`` for the record ``quantized::add`` (overload dropped)."""
    return op.name.partition(".")[0]


def call(c, ops, args, kwargs, e):
    """IR for a call of one of ``ops`` (the first whose schema binds), or None."""
    from ember.jit._calls import bind_schema
    for op in ops:
        vals = bind_schema(c, op, list(args), dict(kwargs), e)
        if vals is not None:
            return c.emit(kind_of(op), vals, [B.schema_returns(op)], e, op=op).output
    return None


def printed(p, n):
    """``ops.<ns>.<name>(args)`` for a node of a non-aten op (None for aten ops)."""
    ns, _, name = n.kind.partition("::")
    if ns in ("aten", "prim") or not name:
        return None
    sargs = n.op.schema.args
    args = [p.arg(v) for v in n.inputs]
    pos, kws = [], []
    for a, v in zip(sargs, args):
        (kws if a.kwarg_only else pos).append((a, v))
    text = [p.list_text(v, a) for a, v in pos] + \
        [f"{a.name}={p.list_text(v, a)}" for a, v in kws]
    return f"ops.{ns}.{name}(" + ", ".join(text) + ")"


# ------------------------------------------------------------------ TorchBind objects
# Packed parameters (``quantized::linear_prepack``'s result...) are torch's TorchBind
# objects: a module attribute holding one has the type
# ``__torch__.torch.classes.quantized.LinearPackedParamsBase``; archives pickle it with its
# state (ember/_ops/quantized_serialization.py) and jit.load rebuilds it.

TORCHBIND_PREFIX = "__torch__.torch.classes."
_TORCHBIND_TYPES = {}


def torchbind_type(value=None, qualname=None):
    """The ClassType of a TorchBind object (or of its qualified name); None otherwise."""
    if qualname is None:
        from ember._ops.quantized_serialization import torchbind_name
        qualname = torchbind_name(value)
        if qualname is None:
            return None
    elif not qualname.startswith(TORCHBIND_PREFIX):
        return None
    t = _TORCHBIND_TYPES.get(qualname)
    if t is None:
        from ember.jit import _types as T
        t = _TORCHBIND_TYPES[qualname] = T.ClassType(qualname, None, False, {}, {},
                                                     {"$torchbind": True})
    return t


def is_torchbind(t):
    return getattr(t, "constants", None) is not None and "$torchbind" in t.constants


def torchbind_object(value):
    """(qualified name, state) of a TorchBind object, for the archive's pickle."""
    from ember._ops.quantized_serialization import torchbind_name, torchbind_state
    return torchbind_name(value), torchbind_state(value)


def rebuild_torchbind(qualname, state):
    from ember._ops.quantized_serialization import from_torchbind
    return from_torchbind(qualname, state)
