"""Calls while compiling: ember builtins (bound to their op records' schemas when they have
one), Tensor methods, Python builtins (``len``, ``range``, ``int``...), ``math``, scripted
functions, methods and classes, submodules; and what ``for`` can iterate over."""
from __future__ import annotations

import ast
import operator

from ember.jit import _builtins as B
from ember.jit import _sugar as S
from ember.jit import _types as T
from ember.jit._ir import NOT_CONSTANT
from ember.jit.frontend import CompileError

_NOARG = object()


def _args(c, arg_nodes, kw_nodes, hints=None):
    args = []
    for a in arg_nodes:
        if isinstance(a, ast.Starred):      # *t over a tuple known at compile time
            args.extend(_starred(c, a))
        else:
            args.append(c.value(c.expr(a), a))
    kwargs = {k: c.value(c.expr(v), v) for k, v in kw_nodes.items()}
    return args, kwargs


def call(c, fn, arg_nodes, kw_nodes, e, type_hint=None):
    call_values = getattr(fn, "call_values", None)
    if call_values is not None:     # a resolver's own callable (jit.load: torch.<op>)
        args, kwargs = _args(c, arg_nodes, kw_nodes)
        return S.SimpleValue(call_values(c, args, kwargs, e))
    if isinstance(fn, S.Builtin):
        if fn.family == "python":
            return python_builtin(c, fn, arg_nodes, kw_nodes, e, type_hint)
        if fn.family == "jit":
            return jit_builtin(c, fn, arg_nodes, kw_nodes, e, type_hint)
        args, kwargs = _args(c, arg_nodes, kw_nodes)
        if fn.family == "math":
            return S.SimpleValue(c.emit(f"aten::{fn.name}", args, [B.math_result(fn.name)], e,
                                        fn=fn.fn).output)
        if fn.family == "ember":
            return S.SimpleValue(ember_call(c, fn.fn, fn.name, args, kwargs, e))
        if fn.family == "exception":
            c.error("Exceptions must be raised", e)
        if fn.family == "warn":          # warnings.warn(msg[, category][, stacklevel=])
            c.emit("aten::warn", args, (), e, fn=_warn)
            return S.SimpleValue(c.const(None))
    if isinstance(fn, S.Method) and isinstance(fn.self_value, S.ModuleValue):
        mod = fn.self_value
        if fn.name in ("items", "keys", "values") and c._is_container(mod):
            return S.TupleSugar(c.resolver.container_items(c, mod, e, fn.name))
        args, kwargs = _args(c, arg_nodes, kw_nodes)
        return S.SimpleValue(c.resolver.call_module(c, mod, fn.name, args, kwargs, e))
    if isinstance(fn, S.Method):
        args, kwargs = _args(c, arg_nodes, kw_nodes)
        return S.SimpleValue(method_call(c, fn.self_value, fn.name, args, kwargs, e))
    if isinstance(fn, S.ModuleValue):
        args, kwargs = _args(c, arg_nodes, kw_nodes)
        return S.SimpleValue(c.resolver.call_module(c, fn, "forward", args, kwargs, e))
    if isinstance(fn, S.ScriptFunctionRef):
        args, kwargs = _args(c, arg_nodes, kw_nodes)
        return S.SimpleValue(call_function(c, fn.function, args, kwargs, e))
    if isinstance(fn, S.ClassRef):
        args, kwargs = _args(c, arg_nodes, kw_nodes)
        return S.SimpleValue(c.resolver.construct(c, fn, args, kwargs, e))
    if isinstance(fn, S.IgnoredFunction):
        args, kwargs = _args(c, arg_nodes, kw_nodes)
        ret = fn.fn.__annotations__.get("return", None) if hasattr(fn.fn, "__annotations__") else None
        rt = T.from_annotation(ret, c.resolver.class_type, getattr(fn.fn, "__globals__", {})) \
            if ret is not None else T.NoneType if _returns_nothing(fn.fn) else T.TensorType
        if getattr(inspect_unwrap(fn.fn), "_ember_jit_unused", False):
            # @jit.unused: calling it from scripted code raises (torch's text)
            c.emit("prim::RaiseException", [c.const("This Python function is annotated to be "
                                                    "ignored and cannot be run"),
                                            # run() prints this class as RuntimeError
                                            c.const("builtins.AssertionError")], (), e)
            return S.SimpleValue(c.emit("prim::Uninitialized", [], [rt], e).output)
        return S.SimpleValue(c.emit("prim::PythonOp", args + list(kwargs.values()), [rt], e,
                                    {"name": getattr(fn.fn, "__qualname__", "fn")}, fn=fn.fn,
                                    kwnames=list(kwargs)).output)
    if isinstance(fn, S.PythonConstant) and callable(fn.value):
        c.error(f"Python builtin {fn.value!r} is currently not supported in Torchscript", e)
    desc = fn.describe() if isinstance(fn, S.Sugar) else repr(fn)
    c.error(f"{desc} is not callable", e)


def _size_list(t):
    return list(t.size())


def _stride_list(t):
    return list(t.stride())


def _warn(msg, *args):
    import warnings
    warnings.warn(msg, stacklevel=3)


def inspect_unwrap(f):
    while hasattr(f, "__wrapped__"):
        f = f.__wrapped__
    return f


def _starred(c, node):
    it = c.expr(node.value)
    items = c.unrolled_items(it, node)
    if items is None:
        c.error("Starred expressions are only supported on tuples", node)
    return [c.value(i, node) for i in items]


def _returns_nothing(fn):
    try:
        import inspect
        import textwrap
        src = textwrap.dedent(inspect.getsource(fn))
        tree = ast.parse(src)
        return not any(isinstance(n, ast.Return) and n.value is not None for n in ast.walk(tree))
    except Exception:
        return False


# ------------------------------------------------------------------------------ ember ops

def bind_schema(c, op, args, kwargs, e, method=False):
    """Schema-ordered inputs of an op record call (defaults as constants), or None when the
    call does not fit the schema (the front is then called as a Python function)."""
    sargs = op.schema.args
    vals = [None] * len(sargs)
    pos = list(args)
    for k, a in enumerate(sargs):
        if not pos:
            break
        if a.kwarg_only:
            return None
        # torch's varargs int list (x.view(2, 3), x.permute(0, 2, 1)): only for the one
        # positional argument after self, every later one keyword-only (not roll(1, 1))
        if a.is_list and a.type in ("int", "SymInt") and pos[0].type is T.IntType \
                and len(pos) > 1 and k == 1 and all(x.kwarg_only for x in sargs[k + 1:]):
            vals[k] = c.emit("prim::ListConstruct", pos, [T.ListType(T.IntType)], e).output
            pos = []
            break
        vals[k] = pos.pop(0)
    if pos:
        return None
    names = {("input" if a.name == "self" else a.name): k for k, a in enumerate(sargs)}
    names.update({a.name: k for k, a in enumerate(sargs)})
    for kname, v in kwargs.items():
        k = names.get(kname)
        if k is None or vals[k] is not None:
            return None
        vals[k] = v
    for k, a in enumerate(sargs):
        if vals[k] is None:
            if not a.has_default:
                return None
            vals[k] = c.const_value(a.default if not isinstance(a.default, tuple) else list(a.default), e)
        else:
            if not _fits_schema(vals[k].type, a):
                return None
    return vals


def _fits_schema(t, a):
    if t is T.AnyType:
        return True
    if t is T.NoneType:
        return a.optional or a.has_default and a.default is None
    t = T.unwrap_optional(t) if a.optional else t
    if a.type == "Tensor":
        if a.is_list:
            return isinstance(t, (T.ListType, T.TupleType))
        return t is T.TensorType or B.is_number(t)
    if a.is_list:
        return isinstance(t, (T.ListType, T.TupleType)) or t is T.IntType or t is T.TensorType
    if a.type in ("int", "SymInt"):
        return t in (T.IntType, T.BoolType) or t is T.TensorType
    if a.type == "float":
        return t in (T.IntType, T.FloatType, T.BoolType) or t is T.TensorType
    if a.type == "bool":
        return t in (T.BoolType, T.IntType)
    if a.type == "Scalar":
        return B.is_number(t) or t is T.TensorType
    if a.type == "str":
        return t is T.StrType
    return True


def ember_call(c, fn, name, args, kwargs, e, method=False):
    """A call to an ember function (or Tensor method with ``args[0]`` the tensor)."""
    from ember.jit import _namespaced
    namespaced = None if method else _namespaced.records(fn)
    if namespaced:           # ember.ops.quantized.add(...): a quantized::add node
        v = _namespaced.call(c, namespaced, args, kwargs, e)
        if v is not None:
            return v
    op = getattr(fn, "_op", None)
    kind = f"aten::{name}"
    if op is None and not method and name in _overloaded_fronts():
        v = _overload_call(c, name, args, kwargs, e)
        if v is not None:
            return v
    if op is not None and op.composite is None and not _has_varargs(fn, method):
        vals = bind_schema(c, op, args, kwargs, e, method)
        if vals is not None:
            rt = B.function_result(name, op, [v.type for v in args], len(args), kwargs, method)
            return c.emit(kind, vals, [rt], e, op=op).output
    if op is not None:
        vals = bind_schema(c, op, args, kwargs, e, method)
        if vals is not None and not _has_varargs(fn, method):
            rt = B.function_result(name, op, [v.type for v in args], len(args), kwargs, method)
            return c.emit(kind, vals, [rt], e, op=op).output
    _check_plain_args(c, name, args, kwargs, e)
    _check_signature(c, fn, name, args, kwargs, e)
    rt = _annotated_result(fn) or _with_indices(fn, args, kwargs) or B.function_result(
        name, op, [v.type for v in args], len(args), kwargs, method)
    return c.emit(kind, args + list(kwargs.values()), [rt], e, fn=fn, kwnames=list(kwargs)).output


# ember functions that pick one of their op's overloads in Python (their records are
# ``name.<overload>`` only): compiled as that overload's node, as torch's builtin call
_OVERLOAD_FRONTS = ("quantized_lstm", "quantized_gru")
_OVERLOADED = None


def _overloaded_fronts():
    """{name: [records]} for the names of ``_OVERLOAD_FRONTS``."""
    global _OVERLOADED
    if _OVERLOADED is None:
        from ember._ops.registry import OPS
        _OVERLOADED = {name: [op for key, op in OPS.items()
                              if key.partition(".")[0] == name and "." in key]
                       for name in _OVERLOAD_FRONTS}
    return _OVERLOADED


def _overload_call(c, name, args, kwargs, e):
    """An ``aten::name`` node of the first overload record whose schema binds, or None."""
    for op in _overloaded_fronts()[name]:
        vals = bind_schema(c, op, list(args), dict(kwargs), e)
        if vals is not None:
            return c.emit(f"aten::{name}", vals, [B.schema_returns(op)], e, op=op).output
    return None


_PAIR = T.TupleType((T.TensorType, T.TensorType))


def _with_indices(fn, args, kwargs):
    """``(values, indices)`` of a pooling function called with ``return_indices=True``."""
    import inspect
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    if "return_indices" not in sig.parameters:
        return None
    try:
        bound = sig.bind_partial(*args, **kwargs).arguments
    except TypeError:
        return None
    flag = bound.get("return_indices")
    return _PAIR if flag is not None and flag.constant() is True else None



def _check_signature(c, fn, name, args, kwargs, e):
    """A call that does not fit the op's schema runs the Python front; one that does not
    fit the front's signature either (too many arguments, an unknown keyword) is refused
    now, as torch refuses it."""
    import inspect
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return
    try:
        sig.bind(*range(len(args)), **dict.fromkeys(kwargs))
    except TypeError as err:
        import re
        text = str(err)
        positional = [p for p in sig.parameters.values() if p.kind in (
            p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        unknown = re.search(r"unexpected keyword argument '(\w+)'", text)
        missing = re.search(r"missing a required argument: '(\w+)'", text)
        reason = (f"Keyword argument {unknown.group(1)} unknown." if unknown else
                  f"Argument {missing.group(1)} not provided." if missing else
                  f"Expected at most {len(positional)} arguments but found {len(args)} "
                  f"positional arguments." if "too many" in text else text)
        raise CompileError(f"Arguments for call are not valid.\nThe following variants are "
                           f"available:\n  \n  aten::{name}{sig}:\n  {reason}\n\nThe "
                           f"original call is", c.span(e.func if isinstance(e, ast.Call) else e)
                           ) from None


def _annotated_result(fn):
    """The return annotation of an ember helper called from scripted code, if it has one."""
    ann = getattr(fn, "__annotations__", None) or {}
    if "return" not in ann:
        return None
    try:
        return T.from_annotation(ann["return"], None, getattr(fn, "__globals__", {}))
    except T.AnnotationError:
        return None


def _has_varargs(fn, method):
    code = getattr(fn, "__code__", None)
    # (a generated front's ``*_more`` only catches surplus arguments: Note [arity errors])
    return code is not None and bool(code.co_flags & 0x04) and \
        code.co_varnames[code.co_argcount + code.co_kwonlyargcount] != "_more"


def _check_plain_args(c, name, args, kwargs, e):
    for v in list(args) + list(kwargs.values()):
        if isinstance(v.type, T.ClassType) and v.type.is_module:
            c.error(f"Module values cannot be passed to builtin '{name}'", e)


def tensor_method(c, v, name, args, kwargs, e):
    import ember
    fn = getattr(ember.Tensor, name, None)
    if fn is None or not callable(fn):
        c.error(f"'{c.type_name(v)}' object has no attribute or method '{name}'.",
                e.func if isinstance(e, ast.Call) else e)
    if name in ("size", "stride") and not args and not kwargs:     # int[] in TorchScript
        return c.emit(f"aten::{name}", [v], [T.ListType(T.IntType)], e,
                      fn=_size_list if name == "size" else _stride_list).output
    return ember_call(c, fn, name, [v] + list(args), kwargs, e, method=True)


_LIST_METHODS = {
    "append": (list.append, lambda t, a: T.NoneType), "extend": (list.extend, lambda t, a: T.NoneType),
    "insert": (list.insert, lambda t, a: T.NoneType), "pop": (list.pop, lambda t, a: t.elem),
    "remove": (list.remove, lambda t, a: T.NoneType), "clear": (list.clear, lambda t, a: T.NoneType),
    "index": (list.index, lambda t, a: T.IntType), "count": (list.count, lambda t, a: T.IntType),
    "reverse": (list.reverse, lambda t, a: T.NoneType), "copy": (list.copy, lambda t, a: t),
    "sort": (list.sort, lambda t, a: T.NoneType),
}
_DICT_METHODS = {
    "keys": (lambda d: list(d.keys()), lambda t, a: T.ListType(t.key)),
    "values": (lambda d: list(d.values()), lambda t, a: T.ListType(t.value)),
    "items": (lambda d: list(d.items()), lambda t, a: T.ListType(T.TupleType((t.key, t.value)))),
    "get": (dict.get, lambda t, a: t.value if len(a) > 2 and a[2].type == t.value else T.OptionalType(t.value)),
    "pop": (dict.pop, lambda t, a: t.value), "clear": (dict.clear, lambda t, a: T.NoneType),
    "update": (dict.update, lambda t, a: T.NoneType), "copy": (dict.copy, lambda t, a: t),
    "setdefault": (dict.setdefault, lambda t, a: t.value),
    "popitem": (dict.popitem, lambda t, a: T.TupleType((t.key, t.value))),
}
_STR_RESULTS = {"split": T.ListType(T.StrType), "rsplit": T.ListType(T.StrType),
                "splitlines": T.ListType(T.StrType), "startswith": T.BoolType,
                "endswith": T.BoolType, "find": T.IntType, "rfind": T.IntType, "index": T.IntType,
                "count": T.IntType, "isdigit": T.BoolType, "isalpha": T.BoolType,
                "isspace": T.BoolType, "islower": T.BoolType, "isupper": T.BoolType,
                "isalnum": T.BoolType, "isidentifier": T.BoolType, "istitle": T.BoolType,
                "isdecimal": T.BoolType, "isnumeric": T.BoolType}


def method_call(c, v, name, args, kwargs, e):
    t = v.type
    if t is T.TensorType:
        return tensor_method(c, v, name, args, kwargs, e)
    if isinstance(t, T.ListType):
        entry = _LIST_METHODS.get(name)
        if entry is None:
            c.error(f"Unknown list method '{name}'", e)
        fn, rt = entry
        if name == "append" and args and not T.is_subtype(args[0].type, t.elem):
            got = c.type_name(args[0])
            c.error(f"aten::append.t(t[](a!) self, t(c -> *) el) -> t[](a!):\nCould not "
                    f"match type {got} to t in argument 'el': Type variable 't' previously "
                    f"matched to type {t.elem.annotation} is matched to type {got}.\n",
                    e.func if isinstance(e, ast.Call) else e)
        return c.emit(f"aten::{name}", [v] + args + list(kwargs.values()), [rt(t, [v] + args)], e,
                      fn=fn, kwnames=list(kwargs)).output
    if isinstance(t, T.DictType):
        entry = _DICT_METHODS.get(name)
        if entry is None:
            c.error(f"Unknown dict method '{name}'", e)
        fn, rt = entry
        return c.emit(f"aten::{name}", [v] + args, [rt(t, [v] + args)], e, fn=fn).output
    if t is T.StrType:
        fn = getattr(str, name, None)
        if fn is None:
            c.error(f"Unknown str method '{name}'", e)
        rt = _STR_RESULTS.get(name, T.StrType)
        if name == "format":
            return c.emit("aten::format", [v] + args, [T.StrType], e, fn=B.script_format).output
        return c.emit(f"aten::{name}", [v] + args + list(kwargs.values()), [rt], e, fn=fn,
                      kwnames=list(kwargs)).output
    if isinstance(t, T.ClassType) and t.constants and "$torchbind" in t.constants:
        from ember.jit._namespaced import torchbind_method     # packed parameters
        return torchbind_method(c, v, name, args + list(kwargs.values()), e)
    if isinstance(t, T.ClassType):
        return c.resolver.call_method(c, v, name, args, kwargs, e)
    if isinstance(t, T.FutureType) and name == "wait":
        return c.emit("aten::wait", [v], [t.elem], e).output
    if isinstance(t, T.RRefType):
        from ember.jit import _rpc
        return _rpc.rref_method(c, v, name, args, e)
    if t is T.AnyType:
        return c.emit("prim::CallAny", [v] + args + list(kwargs.values()), [T.AnyType], e,
                      {"name": name}, kwnames=list(kwargs)).output
    if t is T.FloatType and name == "is_integer":
        return c.emit("aten::is_integer", [v], [T.BoolType], e, fn=float.is_integer).output
    c.error(f"'{'NoneType' if t is T.NoneType else t.annotation}' object has no attribute "
            f"or method '{name}'.", e.func if isinstance(e, ast.Call) else e)


def call_function(c, function, args, kwargs, e):
    """``prim::CallFunction`` of a scripted function, arguments checked against its schema."""
    vals = bind_script_args(c, function.name, function.arg_schema, args, kwargs, e,
                            decl=function.schema_str())
    n = c.emit("prim::CallFunction", vals, [function.return_type], e,
               {"name": function.qualified_name})
    n.fn = function
    return n.output


def bind_script_args(c, fname, schema, args, kwargs, e, decl=None, has_self=False):
    """The inputs of a call to a scripted function or method: positional and keyword
    arguments matched to ``schema``, defaults filled in, types checked. Mismatches raise
    torch's texts under ``decl``, the callee's declaration (``has_self``: a method's, whose
    ``self`` torch counts among the arguments)."""
    decl = decl or "{}({})".format(fname, ", ".join(f"{a[1]} {a[0]}" for a in schema))
    where = e.func if isinstance(e, ast.Call) else e
    vals = []
    args, kwargs = list(args), dict(kwargs)
    n_pos = len(args)
    positional = [a for a in schema if not a[4]]
    if n_pos > len(positional):
        c.error(f"{decl}:\nExpected at most {len(schema) + has_self} arguments but found "
                f"{n_pos + has_self} positional arguments.\n", where)
    for name, t, has_def, default, kw_only in schema:
        if args and not kw_only:
            v = args.pop(0)
        elif name in kwargs:
            v = kwargs.pop(name)
        elif has_def:
            v = c.const_value(default, e)
        else:
            c.error(f"{decl}:\nArgument {name} not provided.\n", where)
        if not T.is_subtype(v.type, t):
            v = _coerce_arg(c, v, t, name, e, decl)
        vals.append(v)
    if kwargs:
        c.error(f"{decl}:\nKeyword argument {next(iter(kwargs))} unknown.\n", where)
    return vals


def _coerce_arg(c, v, t, name, e, decl):
    tt = T.unwrap_optional(t)
    if v.node is not None and getattr(v.node, "kind", None) in ("prim::ListConstruct",
                                                                "prim::DictConstruct") \
            and isinstance(tt, (T.ListType, T.DictType)) and all(
                T.is_subtype(i.type, getattr(tt, "elem", None) or tt.value) for i in
                v.node.inputs[(0 if isinstance(tt, T.ListType) else 1)::(1 if isinstance(tt, T.ListType) else 2)]):
        v.set_type(tt)
        return v
    if tt is T.FloatType and v.type is T.IntType:
        return c.emit("aten::Float", [v], [T.FloatType], e, fn=float).output
    if v.type is T.TensorType and tt in (T.IntType, T.FloatType):
        return c.implicit_scalar(v, tt, e)
    if isinstance(tt, T.ListType) and isinstance(v.type, T.TupleType) and all(
            T.is_subtype(x, tt.elem) for x in v.type.elems):
        return c.tuple_to_list(v, tt, e)
    if v.type is T.AnyType:
        return c.cast(v, t)
    c.error(f"{decl}:\nExpected a value of type '{t.annotation}' for argument '{name}' but "
            f"instead found type '{c.type_name(v)}'.\n", e.func if isinstance(e, ast.Call) else e)


# ------------------------------------------------------------------------ Python builtins

def python_builtin(c, fn, arg_nodes, kw_nodes, e, type_hint):
    name = fn.name
    if name == "isinstance":
        return S.SimpleValue(_isinstance(c, arg_nodes, e))
    if name == "range":
        args, _ = _args(c, arg_nodes, kw_nodes)
        return S.Builtin(tuple(args), "range", "range-value")
    if name in ("enumerate", "zip", "reversed"):
        kw = {k: c.value(c.expr(v), v) for k, v in kw_nodes.items()}
        if name == "enumerate" and len(arg_nodes) == 2:      # enumerate(xs, start)
            kw["start"] = c.value(c.expr(arg_nodes[1]), arg_nodes[1])
            arg_nodes = arg_nodes[:1]
        return S.Builtin([c.expr(a) for a in arg_nodes], name, "iter-value", self_value=kw)
    if name == "len" and len(arg_nodes) == 1:      # len of a module container: a constant
        obj = c.expr(arg_nodes[0])
        if isinstance(obj, (S.ModuleList, S.TupleSugar)) or isinstance(
                obj, S.ModuleValue) and c._is_container(obj):
            n = len(obj.items) if not isinstance(obj, S.ModuleValue) else len(obj.module._modules)
            return S.SimpleValue(c.const(n))
    if name in ("getattr", "hasattr"):
        obj = c.expr(arg_nodes[0])
        attr = _constant_str(c, arg_nodes[1])
        if attr is None:
            c.error(f"{name}'s attribute name must be a string literal", e)
        if name == "hasattr" or len(arg_nodes) > 2:     # getattr(obj, name, default)
            try:
                got = c.attribute(obj, attr, e)
            except CompileError:
                if name == "hasattr":
                    return S.SimpleValue(c.const(False))
                return c.expr(arg_nodes[2])
            return S.SimpleValue(c.const(True)) if name == "hasattr" else got
        return c.attribute(obj, attr, e)
    args, kwargs = _args(c, arg_nodes, kw_nodes)
    types = [a.type for a in args]
    if name == "len":
        if args and isinstance(types[0], T.ClassType) and not types[0].is_module:
            return S.SimpleValue(c.resolver.call_method(c, args[0], "__len__", [], {}, e))
        return S.SimpleValue(c.emit("aten::len", args, [T.IntType], e, fn=len).output)
    if name in ("int", "float", "bool", "str", "complex"):
        rt = {"int": T.IntType, "float": T.FloatType, "bool": T.BoolType, "str": T.StrType,
              "complex": T.ComplexType}[name]
        if not args:
            return S.SimpleValue(c.const(fn.fn()))
        cst = args[0].constant()
        if isinstance(cst, (int, float, bool, str)) and len(args) == 1:
            try:
                return S.SimpleValue(c.const(B.script_str(cst) if name == "str" else fn.fn(cst)))
            except (ValueError, TypeError):
                pass
        kind = {"int": "aten::Int", "float": "aten::Float", "bool": "aten::Bool",
                "str": "aten::str", "complex": "aten::Complex"}[name]
        return S.SimpleValue(c.emit(kind, args, [rt], e, fn=B.script_str if name == "str"
                                    else fn.fn).output)
    if name == "print":
        c.emit("prim::Print", args, (), e, fn=print, kwnames=list(kwargs))
        return S.SimpleValue(c.const(None))
    if name in ("min", "max"):
        if len(args) == 1:
            t = args[0].type
            rt = t.elem if isinstance(t, T.ListType) else T.AnyType
        else:
            rt = types[0]
            for t in types[1:]:
                rt = B.number_result("add", rt, t) or T.unify(rt, t) or T.AnyType
            if all(t is T.TensorType for t in types):
                return S.SimpleValue(ember_call(c, getattr(_ember(), "maximum" if name == "max" else "minimum"),
                                                "maximum" if name == "max" else "minimum", args, {}, e))
        return S.SimpleValue(c.emit(f"prim::{name}", args, [rt], e, fn=fn.fn).output)
    if name == "abs":
        if types[0] is T.TensorType:
            return S.SimpleValue(tensor_method(c, args[0], "abs", [], {}, e))
        return S.SimpleValue(c.emit("prim::abs", args, [types[0]], e, fn=abs).output)
    if name == "round":
        rt = T.IntType if len(args) == 1 and types[0] is not T.TensorType else types[0]
        return S.SimpleValue(c.emit("aten::round", args, [rt], e, fn=round).output)
    if name in ("any", "all"):
        return S.SimpleValue(c.emit(f"aten::{name}", args, [T.BoolType], e, fn=fn.fn).output)
    if name == "sum":
        t = types[0]
        rt = t.elem if isinstance(t, T.ListType) else T.AnyType
        return S.SimpleValue(c.emit("aten::sum", args, [rt], e, fn=sum).output)
    if name == "divmod":
        rt = B.number_result("floordiv", types[0], types[1])
        return S.SimpleValue(c.emit("aten::divmod", args, [T.TupleType((rt, rt))], e,
                                    fn=divmod).output)
    if name in ("list", "tuple"):
        if not args:
            t = T.unwrap_optional(type_hint) if type_hint is not None else T.ListType(T.TensorType)
            return S.SimpleValue(c.emit("prim::ListConstruct", [], [t], e).output)
        t = types[0]
        if name == "list" and isinstance(t, T.TupleType) and t.elems:
            et = t.elems[0]
            for x in t.elems[1:]:
                et = et and T.unify(et, x)
            if et is not None:
                return S.SimpleValue(c.tuple_to_list(args[0], T.ListType(et), e))
        if name == "list":
            rt = t if isinstance(t, T.ListType) else T.ListType(t.elem if isinstance(
                t, T.ListType) else T.StrType if t is T.StrType else T.AnyType)
            return S.SimpleValue(c.emit("aten::list", args, [rt], e, fn=list).output)
        return S.SimpleValue(c.emit("aten::tuple", args, [T.AnyType], e, fn=tuple).output)
    if name == "dict":
        if args and isinstance(types[0], T.DictType):          # dict(d): a copy
            return S.SimpleValue(c.emit("aten::dict", args, [types[0]], e, fn=dict).output)
        t = T.unwrap_optional(type_hint) if type_hint is not None else T.DictType(T.StrType, T.TensorType)
        return S.SimpleValue(c.emit("prim::DictConstruct", [], [t], e).output)
    if name in ("ord", "chr", "hex", "oct", "bin", "hash", "sorted"):
        rt = {"ord": T.IntType, "hash": T.IntType, "sorted": types[0] if types else T.AnyType}.get(
            name, T.StrType)
        return S.SimpleValue(c.emit(f"aten::{name}", args, [rt], e, fn=fn.fn,
                                    kwnames=list(kwargs)).output)
    c.error(f"Python builtin <built-in function {name}> is currently not supported in "
            f"Torchscript", e)


def _constant_str(c, node):
    """A string known while compiling: a literal, or a name bound to a constant (the
    variable of a loop unrolled over a constant tuple of names)."""
    if isinstance(node, ast.Constant):
        return node.value if isinstance(node.value, str) else None
    v = c.expr(node)
    if isinstance(v, S.PythonConstant) and isinstance(v.value, str):
        return v.value
    if isinstance(v, S.SimpleValue) and isinstance(v.value.constant(), str):
        return v.value.constant()
    return None


def _ember():
    import ember
    return ember


def isinstance_types(c, node):
    """The JitTypes an ``isinstance`` second argument names."""
    if isinstance(node, ast.Tuple):
        out = []
        for x in node.elts:
            out.extend(isinstance_types(c, x))
        return out
    return [annotation(c, node)]


def _isinstance(c, arg_nodes, e):
    v = c.value(c.expr(arg_nodes[0]), arg_nodes[0])
    try:
        targets = isinstance_types(c, arg_nodes[1])
    except T.AnnotationError as err:
        c.error(str(err), arg_nodes[1])
    t = v.type
    if t is T.AnyType or isinstance(t, (T.OptionalType, T.UnionType)):
        for tt in targets:
            if isinstance(t, T.OptionalType) and T.is_subtype(t.elem, tt) and not tt is T.NoneType:
                return c.emit("aten::__isnot__", [v, c.const(None)], [T.BoolType], e,
                              fn=operator.is_not, attrs={"_py": "is not"}).output
        pys = tuple(_py_class(tt) for tt in targets)
        return c.emit("prim::isinstance", [v], [T.BoolType], e,
                      {"types": [str(x) for x in targets]}, fn=lambda x: isinstance(x, pys)).output
    return c.const(any(T.is_subtype(t, tt) or (isinstance(tt, T.ListType) and tt.elem is T.AnyType
                                                and isinstance(t, T.ListType)) for tt in targets))


def _py_class(t):
    import ember
    return {T.TensorType: ember.Tensor, T.IntType: int, T.FloatType: float, T.BoolType: bool,
            T.StrType: str, T.NoneType: type(None)}.get(
        t, list if isinstance(t, T.ListType) else dict if isinstance(t, T.DictType) else
        tuple if isinstance(t, T.TupleType) else getattr(t, "py_class", None) or object)


def annotation(c, node):
    try:
        return T.from_annotation_ast(node, c.resolver.globals, c.resolver.class_type)
    except T.AnnotationError as err:
        raise CompileError(str(err), c.where(node)) from None


def jit_builtin(c, fn, arg_nodes, kw_nodes, e, type_hint):
    name = fn.name
    if name == "annotate":
        t = annotation(c, arg_nodes[0])
        v = c.value(c.expr(arg_nodes[1], type_hint=t), arg_nodes[1])
        return S.SimpleValue(c.coerce(v, t, arg_nodes[1], f"annotate: expected a value of type "
                                      f"{t.annotation} but got"))
    if name == "isinstance":
        return S.SimpleValue(_isinstance(c, arg_nodes, e))
    if name in ("is_scripting",):
        return S.SimpleValue(c.const(True))
    if name in ("is_tracing",):
        return S.SimpleValue(c.const(False))
    if name == "fork":
        target = c.expr(arg_nodes[0])
        args, kwargs = _args(c, arg_nodes[1:], kw_nodes)
        return S.SimpleValue(c.resolver.fork(c, target, args, kwargs, e))
    if name == "wait":
        args, _ = _args(c, arg_nodes, kw_nodes)
        t = args[0].type
        rt = t.elem if isinstance(t, T.FutureType) else T.AnyType
        return S.SimpleValue(c.emit("aten::wait", args, [rt], e).output)
    if name in ("rpc_async", "rpc_sync", "remote"):
        from ember.jit import _rpc
        return S.SimpleValue(_rpc.rpc_call(c, name, arg_nodes, kw_nodes, e))
    if name == "unchecked_cast":
        t = annotation(c, arg_nodes[0])
        v = c.value(c.expr(arg_nodes[1]), arg_nodes[1])
        return S.SimpleValue(c.cast(v, t))
    c.error(f"torch.jit.{name} is not supported in scripted code", e)


# ----------------------------------------------------------------------------- iteration

def iteration(c, it, node):
    """For ``for x in it``: (trip count Value, a function emitting the item in the body)."""
    if isinstance(it, S.Builtin) and it.family == "range-value":
        args = list(it.fn)
        for a in args:
            if a.type not in (T.IntType, T.BoolType, T.AnyType):
                c.error(f"range(): expected int arguments, got {a.type.annotation}", node)
        if len(args) == 1:
            trip = args[0]
            return trip, lambda: S.SimpleValue(c.loop_index)
        start, stop = args[0], args[1]
        step = args[2] if len(args) > 2 else c.const(1)
        trip = c.emit("aten::__range_length", [start, stop, step], [T.IntType], node,
                      fn=_range_length).output

        def item():
            return S.SimpleValue(c.emit("aten::__derive_index", [c.loop_index, start, step],
                                        [T.IntType], node, fn=_derive_index).output)
        return trip, item
    if isinstance(it, S.Builtin) and it.family == "iter-value":
        return _iter_combinator(c, it, node)
    if isinstance(it, S.ClassRef) and isinstance(it.class_type, T.EnumType):
        # `for c in Color`: over the constant list of its members (its length left unfolded,
        # as torch leaves it)
        members = c.const(list(it.cls), node)
        trip = c.emit("aten::len", [members], [T.IntType], node, fn=_members_len).output
        return trip, lambda: S.SimpleValue(c.emit(
            "aten::__getitem__", [members, c.loop_index], [it.class_type], node,
            fn=operator.getitem).output)
    v = c.value(it, node)
    t = v.type
    if isinstance(t, T.TupleType) and t.elems:        # a tuple of one type: as a list
        et = t.elems[0]
        for x in t.elems[1:]:
            et = et and T.unify(et, x)
        if et is not None:
            v = c.tuple_to_list(v, T.ListType(et), node)
            t = v.type
    if isinstance(t, T.ListType) or t is T.StrType:
        trip = c.emit("aten::len", [v], [T.IntType], node, fn=len).output
        et = t.elem if isinstance(t, T.ListType) else T.StrType
        return trip, lambda: S.SimpleValue(c.emit("aten::__getitem__", [v, c.loop_index], [et],
                                                  node, fn=operator.getitem).output)
    if isinstance(t, T.DictType):
        keys = c.emit("aten::keys", [v], [T.ListType(t.key)], node,
                      fn=lambda d: list(d.keys())).output
        trip = c.emit("aten::len", [keys], [T.IntType], node, fn=len).output
        return trip, lambda: S.SimpleValue(c.emit("aten::__getitem__", [keys, c.loop_index],
                                                  [t.key], node, fn=operator.getitem).output)
    if t is T.TensorType:
        trip = c.emit("aten::len", [v], [T.IntType], node, fn=len).output
        return trip, lambda: S.SimpleValue(c.emit("aten::select", [v, c.const(0), c.loop_index],
                                                  [T.TensorType], node,
                                                  fn=lambda x, d, i: x[i]).output)
    c.error(f"'{t.annotation}' object is not iterable", node)


def _members_len(members):
    return len(members)


def _iter_combinator(c, it, node):
    name = it.name
    subs = [iteration(c, x, node) for x in it.fn]
    def smallest(trips):
        # torch's loop over enumerate/zip runs min([trip, ...]) times (enumerate's own
        # count being the largest int)
        lst = c.emit("prim::ListConstruct", trips, [T.ListType(T.IntType)], node).output
        return c.emit("prim::min", [lst], [T.IntType], node, fn=min).output

    if name == "enumerate":
        trip, item = subs[0]
        start = it.self_value.get("start")
        if start is None:
            most = c.const(9223372036854775807)
        elif start.constant() is not NOT_CONSTANT:
            most = c.const(9223372036854775807 - start.constant())
        else:
            most = c.emit("aten::sub", [c.const(9223372036854775807), start], [T.IntType], node,
                          fn=operator.sub, attrs={"_py": "-"}).output
        trip = smallest([most, trip])

        def bind():
            idx = S.SimpleValue(c.loop_index) if start is None else S.SimpleValue(
                c.emit("aten::__derive_index", [c.loop_index, start, c.const(1)], [T.IntType],
                       node, fn=_derive_index).output)
            return S.TupleSugar([idx, item()])
        return trip, bind
    if name == "zip":
        trip = smallest([t for t, _ in subs])
        return trip, lambda: S.TupleSugar([item() for _, item in subs])
    if name == "reversed":
        v = c.value(it.fn[0], node)
        rev = c.emit("aten::reversed", [v], [v.type], node, fn=lambda x: list(reversed(x))).output
        return iteration(c, S.SimpleValue(rev), node)
    c.error(f"cannot iterate over {name}", node)


def unrolled_call_items(c, it, node):
    """enumerate/zip over module containers unroll too."""
    if isinstance(it, S.Builtin) and it.family == "iter-value" and any(
            isinstance(x, (S.ModuleList, S.TupleSugar)) or isinstance(x, S.ModuleValue)
            and c._is_container(x) for x in it.fn):
        if it.name == "enumerate":
            inner = c.unrolled_items(it.fn[0], node)
            start = it.self_value.get("start")
            s0 = start.constant() if start is not None else 0
            return [S.TupleSugar([S.SimpleValue(c.const(s0 + k)), x]) for k, x in enumerate(inner)]
        if it.name == "zip":
            lists = [c.unrolled_items(x, node) for x in it.fn]
            if any(x is None for x in lists):
                c.error("zip over a module container and a list is not supported", node)
            return [S.TupleSugar(list(xs)) for xs in zip(*lists)]
    return None


def _range_length(lo, hi, step):
    if step == 0:
        raise RuntimeError("range() arg 3 must not be zero")
    return len(range(lo, hi, step))


def _derive_index(i, start, step):
    return start + i * step
