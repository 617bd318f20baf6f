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
            rt = _prepacked_type(op) or B.schema_returns(op)
            return c.emit(kind_of(op), vals, [rt], e, op=op).output
    return None


def _prepacked_type(op):
    """torch's result type of a ``quantized::*_prepack`` op (ember's schemas say Any) or of a
    ``*_unpack`` op (the bias is optional)."""
    import re
    name = kind_of(op).partition("::")[2]
    if name in ("linear_prepack", "linear_prepack_fp16"):
        return torchbind_type(qualname=TORCHBIND_PREFIX + "quantized.LinearPackedParamsBase")
    if name == "embedding_bag_prepack":
        return torchbind_type(
            qualname=TORCHBIND_PREFIX + "quantized.EmbeddingPackedParamsBase")
    if name.endswith("_unpack") and (name.startswith("linear") or name.startswith("conv")):
        from ember.jit import _types as T           # (weight, bias or None)
        return T.TupleType((T.TensorType, T.OptionalType(T.TensorType)))
    m = re.fullmatch(r"conv(?:_transpose)?([123])d_prepack", name)
    if m:
        dims = 3 if m.group(1) == "3" else 2        # a 1-d convolution packs as a 2-d one
        return torchbind_type(
            qualname=TORCHBIND_PREFIX + f"quantized.Conv{dims}dPackedParamsBase")
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


# methods of the packed-parameters classes that torch's archive code calls (a quantized
# Conv's _weight_bias: ``(self._packed_params).unpack()``), with their result types
TORCHBIND_METHODS = ("unpack", "stride", "padding", "dilation", "output_padding", "groups",
                     "transpose", "bit_rate")


def _method_caller(name):
    def call(obj):
        return getattr(obj, name)()
    call.__name__ = call.__qualname__ = name
    call._torchbind_method = name
    return call


_CALLERS = {name: _method_caller(name) for name in TORCHBIND_METHODS}


def torchbind_method(c, v, name, args, e):
    """IR for ``obj.name()`` on a packed-parameters value."""
    from ember.jit import _types as T
    ints = T.ListType(T.IntType)
    types = {"unpack": T.TupleType((T.TensorType, T.OptionalType(T.TensorType))),
             "groups": T.IntType, "transpose": T.IntType, "bit_rate": T.IntType}
    if name == "unpack" and v.type.qualname.endswith(".EmbeddingPackedParamsBase"):
        types["unpack"] = T.TensorType
    if name not in _CALLERS or args:
        c.error(f"'{v.type.qualname}' has no method '{name}' taking these arguments", e)
    return c.emit(f"aten::{name}", [v], [types.get(name, ints)], e, fn=_CALLERS[name]).output


def printed_method(p, n):
    """``(obj).name()`` for a packed-parameters method node (None for other nodes)."""
    name = getattr(n.fn, "_torchbind_method", None)
    if name is None:
        return None
    return f"({p.arg(n.inputs[0]).text}).{name}()"
