"""Nodes that call a Python callable (``node.fn``) written as the aten call torch prints:
Python operators and builtins on numbers and containers (``torch.add(i, 1)``,
``torch.len(xs)``, ``xs[0]``), list/dict/str methods (``torch.append(xs, v)``), ``math``,
ember's ``nn.functional`` (``F.linear`` -> ``torch.linear``, ``F.batch_norm`` ->
``torch.batch_norm`` in ATen's argument order) and Tensor methods without an op record.
"""
from __future__ import annotations

import inspect
import operator

from ember.jit import _types as T
from ember.jit._ir import NOT_CONSTANT
from ember.jit._printer import _Expr, constant_str

_CASTS = {"Bool": "bool", "Int": "int", "Float": "float", "str": "str", "Complex": "complex"}
# scalar-on-the-left Tensor operators: name -> (torch op, swap operands)
_REFLECTED = {"add": ("add", True), "mul": ("mul", True), "sub": ("rsub", True),
              "__and__": ("bitwise_and", True), "__or__": ("bitwise_or", True),
              "__xor__": ("bitwise_xor", True), "pow": ("pow", False),
              "eq": ("eq", True), "ne": ("ne", True), "lt": ("gt", True), "gt": ("lt", True),
              "le": ("ge", True), "ge": ("le", True)}
_DTYPE_METHODS = {"float": 6, "double": 7, "half": 5, "long": 4, "int": 3, "short": 2,
                  "bool": 11, "byte": 0, "char": 1, "bfloat16": 15}


_ALIASES = {}


def public_name(fn, name, check=False):
    """The public ember / Tensor name of a callable whose ``__name__`` is internal
    (``_cat_front`` -> ``cat``); with ``check``, whether ``name`` is public."""
    import ember
    if not _ALIASES:
        for owner in (ember, ember.Tensor):
            for k in dir(owner):
                if k.startswith("__"):
                    continue
                v = getattr(owner, k, None)
                inner = getattr(v, "__name__", None)
                if callable(v) and isinstance(inner, str) and inner != k and not (
                        hasattr(ember, inner) or hasattr(ember.Tensor, inner)):
                    # (the object is kept: an id alone could later name a new object,
                    # made after a lazily created attribute like this one was freed)
                    _ALIASES.setdefault(id(v), (v, k))
        _ALIASES[None] = None
    if check:
        return hasattr(ember, name) or hasattr(ember.Tensor, name)
    hit = _ALIASES.get(id(fn))
    return hit[1] if hit is not None and hit[0] is fn else name


# callables whose aten spelling uses an input twice: their inputs are never inlined
NAMED_INPUTS = {"interpolate", "upsample", "lp_pool1d", "lp_pool2d", "lp_pool3d", "kl_div",
                "softsign", "tanhshrink", "normalize", "_cross_entropy",
                "multilabel_soft_margin_loss"}


def _is_archive_code_conversion(fn):
    """The loader's ScalarType / MemoryFormat code <-> ember object conversions: no call in
    TorchScript, which keeps the codes (``ops.prim.dtype(x)`` is an int there)."""
    from ember.jit import _archive_builtins as A
    return fn in (A._dtype, A._memory_format, A._dtype_code)


def fn_call(p, n):
    name = n.kind.split("::", 1)[1]
    fn = n.fn
    if getattr(fn, "_torchbind_method", None):     # (packed_params).unpack()
        from ember.jit._namespaced import printed_method
        return printed_method(p, n)
    if not public_name(None, name, check=True):
        name = public_name(fn, name)
    args = [p.arg(v) for v in n.inputs]
    nkw = len(n.kwnames)
    pos, kw = (args[:len(args) - nkw], list(zip(n.kwnames, args[len(args) - nkw:]))) if nkw \
        else (args, [])
    if _is_archive_code_conversion(fn):
        return pos[0].text      # archives write dtypes/memory formats as codes already
    if name in _CASTS and not kw:
        return f"{_CASTS[name]}({', '.join(a.text for a in pos)})"
    if "_py" in n.attrs:
        return _operator(p, n, name, pos)
    if fn is sorted and not kw:
        return f"sorted({', '.join(a.text for a in pos)})"
    if fn in (max, min) and not kw:
        return f"ops.prim.{fn.__name__}(" + ", ".join(a.text for a in pos) + ")"
    if name in ("device_type", "device_index") and len(pos) == 1:
        # a loaded archive's ``ops.prim.type(device)`` / ``ops.prim.index(device)``
        return f"ops.prim.{name[7:]}({pos[0].text})"
    if name == "broadcast_shapes" and len(pos) > 1 and not kw:
        # torch's TorchScript form takes the shapes as separate arguments, not a list
        return p.call(name, [a.text for a in pos])
    if name == "__getitem__":
        from ember.jit._printer import subscript_base
        return f"{subscript_base(pos[0].text)}[{pos[1].text}]"
    if name == "slice" and len(pos) == 4:
        lo, hi, st = pos[1:]
        # slice.t(t[] l, int? start=None, int? end=None, int step=1): trailing defaults go
        parts = [pos[0].text, lo.text, hi.text] + ([st.text] if st.const not in (None, 1) else [])
        defaults = [None, None]
        while len(parts) > 1 and len(parts) <= 3 and \
                pos[len(parts) - 1].const is defaults[len(parts) - 2] and \
                pos[len(parts) - 1].text == "None":
            parts.pop()
        return p.call("slice", parts)
    module = getattr(fn, "__module__", None) or ""
    if module.startswith("ember.nn.functional") or module.startswith("ember.nn.modules"):
        from ember.jit._printer_functional import FUNCTIONAL
        entry = FUNCTIONAL.get(getattr(fn, "__name__", name))
        if entry is None:
            return _scripted_call(p, fn, name, pos, kw)
        return entry(p, _bind(fn, pos, kw, name))
    if module.startswith("ember.jit"):
        return p.call(name, [a.text for a in pos], [(k, a.text) for k, a in kw])
    if module.startswith("ember") or _is_tensor_method(fn):
        return _ember_call(p, fn, name, pos, kw)
    if isinstance(fn, type) and issubclass(fn, BaseException):
        raise NotImplementedError(f"ember.jit.save: constructing {fn.__name__}")
    if module in ("math", "_operator", "operator") or getattr(fn, "__objclass__", None) in (list, dict, str, float) \
            or fn in (len, operator.contains, abs, min, max, round, divmod, sum, any, all,
                      sorted, reversed, list, tuple, dict, ord, chr, hash, hex, oct, bin) \
            or name in ("format", "warn", "__range_length", "__derive_index", "Delete"):
        return p.call(name, [a.text for a in pos], [(k, a.text) for k, a in kw])
    raise NotImplementedError(f"ember.jit.save: {name} (a call to "
                              f"{getattr(fn, '__qualname__', fn)!s}) has no TorchScript form")


def _scripted_call(p, fn, name, pos, kw):
    """A functional with no aten spelling, as torch does it: the function itself scripted
    (``__torch__.torch.nn.functional.<name>``) and called."""
    from ember.jit._script import compile_function
    try:
        function = compile_function(fn)
    except Exception as e:  # noqa: BLE001 - any failure means: no TorchScript form
        raise NotImplementedError(f"ember.jit.save: nn.functional.{name} has no aten mapping "
                                  f"and does not script ({type(e).__name__}: "
                                  f"{str(e).strip().splitlines()[0] if str(e).strip() else ''})"
                                  ) from None
    b = _fill(p, _bind(fn, pos, kw, name))
    args = []
    for arg_name, t, _has_def, _d, _kw in function.arg_schema:
        if arg_name not in b:
            raise NotImplementedError(f"ember.jit.save: cannot bind {name}'s argument "
                                      f"{arg_name}")
        e = b[arg_name]
        if e.type is not None and not T.is_subtype(e.type, t):
            raise NotImplementedError(f"ember.jit.save: nn.functional.{name} scripts with "
                                      f"{arg_name}: {t.annotation}, but is called with "
                                      f"{e.type.annotation}")
        args.append(b.text(arg_name))
    return f"{p.ctx.function_name(function)}(" + "".join(a + ", " for a in args) + ")"


def _is_tensor_method(fn):
    import ember
    return getattr(ember.Tensor, getattr(fn, "__name__", ""), None) is fn


def _operator(p, n, name, pos):
    if len(pos) == 2 and n.outputs[0].type is T.TensorType and pos[0].type is not T.TensorType:
        op, swap = _REFLECTED.get(name, (None, None))
        if op is None:
            if name == "div":
                return p.call("mul", [p.call("reciprocal", [pos[1].text]), pos[0].text])
            raise NotImplementedError(f"ember.jit.save: scalar {name} tensor")
        a, b = (pos[1], pos[0]) if swap else (pos[0], pos[1])
        return p.call(op, [a.text, b.text])
    if name == "pos":
        return pos[0].text
    if name == "__invert__":
        name = "__not__" if pos[0].type is T.BoolType else "__invert__"
    return p.call(name, [a.text for a in pos])


class _Bound(dict):
    """Argument name -> _Expr (defaults filled as constants)."""

    def text(self, name):
        return self[name].text

    def const(self, name):
        e = self[name]
        if e.const is NOT_CONSTANT and e.type is T.NoneType:
            return None              # a NoneType value (an attribute holding None) is None
        return e.const


def _const_expr(p, v):
    return _Expr(constant_str(v, p.ctx), v, None)


def _bind(fn, pos, kw, name):
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        raise NotImplementedError(f"ember.jit.save: cannot read the signature of {name}") from None
    ba = sig.bind(*pos, **dict(kw))
    out = _Bound()
    for pname, prm in sig.parameters.items():
        if prm.kind in (prm.VAR_POSITIONAL, prm.VAR_KEYWORD):
            out[pname] = ba.arguments.get(pname, ())
            continue
        if pname in ba.arguments:
            out[pname] = ba.arguments[pname]
        elif prm.default is not inspect.Parameter.empty:
            out[pname] = _Expr(None, prm.default, None)
    return out


def _fill(p, b):
    for k, v in b.items():
        if isinstance(v, _Expr) and v.text is None:
            b[k] = _Expr(constant_str(v.const, p.ctx) if not isinstance(v.const, tuple)
                         else constant_str(list(v.const), p.ctx), v.const, None)
    return b


def _ember_call(p, fn, name, pos, kw):
    """A Tensor method / ember function without an op record: ordered by the op record of
    the same name when ember has one, else written as called."""
    if name in _DTYPE_METHODS and _is_tensor_method(fn) and len(pos) == 1 and not kw:
        return p.call("to", [pos[0].text, str(_DTYPE_METHODS[name])])
    if name in _TENSOR_SPECIAL:
        return _TENSOR_SPECIAL[name](p, pos, kw)
    try:
        sig = inspect.signature(fn)
        varargs = [k for k, prm in sig.parameters.items() if prm.kind == prm.VAR_POSITIONAL]
    except (TypeError, ValueError):
        sig, varargs = None, []
    if varargs and sig is not None:
        fixed = [k for k, prm in sig.parameters.items()
                 if prm.kind in (prm.POSITIONAL_ONLY, prm.POSITIONAL_OR_KEYWORD)]
        if not fixed and name == "einsum":
            fixed = ["equation"]
        head, rest = pos[:len(fixed)], pos[len(fixed):]
        if len(rest) == 1 and isinstance(rest[0].type, (T.ListType, T.TupleType)):
            packed = [rest[0].text]
        elif rest:
            packed = ["[" + ", ".join(a.text for a in rest) + "]"]
        else:
            packed = []
        kws = [(k, a.text) for k, a in kw if k not in _EMBER_ONLY_KW]
        return p.call(name, [a.text for a in head] + packed, kws)
    from ember._ops.registry import OPS
    op = OPS.get(name)
    if op is not None and sig is not None:
        try:
            b = _fill(p, _bind(fn, pos, kw, name))
        except TypeError:
            b = None
        if b is not None:
            sargs = op.schema.args
            vals = []
            ok = True
            for k, a in enumerate(sargs):
                key = a.name if a.name in b else ("input" if a.name == "self" and "input" in b
                                                  else "self" if a.name == "self" else None)
                if key is None or key not in b:
                    if k == 0 and sargs[0].type == "Tensor" and pos:
                        vals.append(pos[0])
                        continue
                    if a.has_default:
                        vals.append(_const_expr(p, a.default))
                        continue
                    ok = False
                    break
                vals.append(b[key])
            snames = [a.name for a in sargs]
            extra = [k for k, v in b.items() if isinstance(v, _Expr) and k not in snames
                     and k not in ("input", "self") and not _is_sig_default(sig, k, v)]
            if ok and not extra:
                return p.schema_call(name, sargs, vals)
    kws = [(k, a.text) for k, a in kw if k not in _EMBER_ONLY_KW]
    return p.call(name, [a.text for a in pos], kws)


_EMBER_ONLY_KW = {"out"}


def _is_sig_default(sig, k, e):
    prm = sig.parameters.get(k)
    if prm is None or prm.default is inspect.Parameter.empty or e.const is NOT_CONSTANT:
        return False
    d = prm.default
    return e.const is d or (type(e.const) is type(d) and e.const == d)


def _size(p, pos, kw):
    return p.call("size", [a.text for a in pos] + [a.text for _, a in kw])


def _to(p, pos, kw):
    return p.call("to", [a.text for a in pos], [(k, a.text) for k, a in kw])


_TENSOR_SPECIAL = {"size": _size, "to": _to}


# ----------------------------------------------------------------------------- op records
# ember's own op records (what a trace records) with no aten op of the same name

def _rank_of(e, what):
    if isinstance(e.const, (list, tuple)):
        return len(e.const)
    raise NotImplementedError(f"ember.jit.save: {what} with a non-constant size list")


def _list_arg(p, e):
    return constant_str(list(e.const), p.ctx) if isinstance(e.const, tuple) else e.text


def _i_batch_norm(p, a):
    return p.call("native_batch_norm", [e.text for e in a])


def _i_layer_norm(p, a):
    return p.call("layer_norm", [a[0].text, _list_arg(p, a[1])] + [e.text for e in a[2:]])


def _i_max_pool(p, a):
    n = _rank_of(a[1], "max pooling")
    return p.call(f"max_pool{n}d_with_indices", [a[0].text] + [_list_arg(p, e) for e in a[1:5]]
                  + [a[5].text])


def _i_avg_pool(p, a):
    n = _rank_of(a[1], "average pooling")
    return p.call(f"avg_pool{n}d", [a[0].text, _list_arg(p, a[1]), _list_arg(p, a[2])])


def _i_adaptive_max_pool(p, a):
    n = _rank_of(a[1], "adaptive max pooling")
    return p.call(f"adaptive_max_pool{n}d", [a[0].text, _list_arg(p, a[1])])


def _i_cross_entropy(p, a):
    x = a[0].text
    loss = p.call("cross_entropy_loss", [x, a[1].text, "None", a[2].text, a[3].text])
    # (loss, lse, workspace): the record's byte workspace has no use in a graph; x fills it
    return f"({loss}, {p.call('logsumexp', [x, '[1]'])}, {x})"


def _i_reverse_cumsum(p, a):
    x, d = a[0].text, a[1].text
    return p.call("flip", [p.call("cumsum", [p.call("flip", [x, f"[{d}]"]), d]), f"[{d}]"])


def _i_compare(p, a):
    if a[2].const not in ("eq", "ne", "lt", "le", "gt", "ge"):
        raise NotImplementedError(f"ember.jit.save: _compare_mask({a[2].const!r})")
    return p.call(a[2].const, [a[0].text, a[1].text])


def _rename(name):
    return lambda p, a: p.call(name, [e.text for e in a])


INTERNAL_OPS = {
    "_batch_norm_impl": _i_batch_norm, "_layer_norm_impl": _i_layer_norm,
    "_max_pool_with_indices": _i_max_pool, "_avg_pool": _i_avg_pool,
    "_adaptive_max_pool": _i_adaptive_max_pool, "_cross_entropy": _i_cross_entropy,
    "_sgn": _rename("sgn"), "_i1": _rename("special_i1"),
    "_abs_pow": lambda p, a: p.call("pow", [p.call("abs", [a[0].text]), a[1].text]),
    "_blas_pow": _rename("pow"), "_take_along_dim": _rename("take_along_dim"),
    "_reverse_cumsum": _i_reverse_cumsum, "_compare_mask": _i_compare,
    "polygamma": lambda p, a: p.call("polygamma", [a[1].text, a[0].text]),
}
