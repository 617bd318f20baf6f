"""Op records (``OpDef``) and the registry; public functions and Tensor methods are
generated from each record's schema.

One record per op holds everything every feature needs: the schema, the kernel (on
backend arrays), the backward rule (in ember ops, so it is differentiable), an optional
jvp rule and batching rule, promotion and autocast policy, determinism, and which
inputs the backward needs saved. In-place (``add_``) and ``out=`` variants are derived.
"""
from __future__ import annotations

import keyword
import re

import numpy as np

from ember import _dtype
from ember._ops.schema import parse

OPS: dict[str, "OpDef"] = {}          # full name -> record (in-place variants included)
FUNCTIONS: dict[str, object] = {}     # public ember.<name>
METHODS: dict[str, object] = {}       # Tensor.<name>

PROMOTE_KINDS = ("default", "int_to_float", "bool", None)


class OpDef:
    """The record of one op. See docs/ARCHITECTURE.md."""

    def __init__(self, schema, kernel=None, *, composite=None, promote="default",
                 promote_args=None, autocast=None, nondeterministic=False, saves=(),
                 grad_name=None, differentiable=True, out_dtype=None):
        self.schema = parse(schema)
        self.name = self.schema.full_name           # 'add.Tensor'
        self.public_name = self.schema.name         # 'add'
        self.kernel = kernel
        # optional ``kernel_out(out, *vals)``: writes the result straight into ``out`` (used by
        # the in-place variant when dtypes and shapes allow; see _dispatch._call_inplace)
        self.kernel_out = None
        self.composite = composite
        self.backward = None
        self.jvp = None
        self.batch_rule = None
        self.meta = None
        if promote not in PROMOTE_KINDS:
            raise ValueError(f"unknown promotion kind {promote!r}")
        self.promote = promote
        self.autocast = autocast
        self.nondeterministic = nondeterministic
        self.differentiable = differentiable
        self.out_dtype = out_dtype                  # fixed result dtype (e.g. int64 for argmax)
        self.check_operands = None                  # fn(args): checks before promotion casts
        # fn(args): checks every call runs first (an op with one leaves the fast path)
        self.check_inputs = None
        self.out_np = None if out_dtype is None else out_dtype.np
        args = self.schema.args
        self.argnames = tuple(a.name for a in args)
        # (index, is_list, optional) of every Tensor / Tensor[] argument
        self.tensor_args = tuple((i, a.is_list, a.optional) for i, a in enumerate(args)
                                 if a.type == "Tensor")
        self.promote_args = (tuple(i for i, _, _ in self.tensor_args)
                             if promote_args is None else
                             tuple(self.argnames.index(n) for n in promote_args))
        idx = {n: i for i, n in enumerate(self.argnames)}
        rets = self.schema.returns
        out_idx = {r[2]: k for k, r in enumerate(rets) if r[2]}
        # saves: argument names, "result" (every output), or output names (only those:
        # ``ctx.result`` then holds None in place of the outputs not kept alive)
        self.saved_args = tuple(idx[n] for n in saves if n in idx)
        picked = tuple(out_idx[n] for n in saves if n not in idx and n != "result")
        self.saves_result = "result" in saves or bool(picked)
        self.saved_outputs = picked if picked and "result" not in saves else None
        self.num_outputs = len(rets)
        self.schema_return_names = tuple(r[2] for r in rets) if all(r[2] for r in rets) \
            and len(rets) > 1 else None
        self.returns_list = len(rets) == 1 and rets[0][0] == "Tensor[]"
        self.is_view = bool(rets) and rets[0][1] is not None and not rets[0][1].endswith("!") \
            and args and args[0].alias == rets[0][1]
        # False: a view op whose result shares storage and version counter but is no autograd
        # view (torch's non-differentiable views: ``_base`` None, e.g. ``view(dtype)``)
        self.autograd_view = True
        self.is_inplace = False
        self.functional = self                      # for an in-place variant: its functional op
        self.inplace_variant = None
        camel = "".join(p[:1].upper() + p[1:] for p in self.public_name.strip("_").split("_"))
        camel = re.sub(r"(?<=\d)[a-z]", lambda m: m.group().upper(), camel)  # torch: Log1P, I0E
        self.grad_name = grad_name or f"{camel}Backward0"
        self.node_class = None                      # set by autograd.graph on first use
        self.tensor_idx = tuple(i for i, _, _ in self.tensor_args)
        self._update_fast()
        if self.name in OPS:
            raise ValueError(f"op {self.name} registered twice")
        OPS[self.name] = self

    def __repr__(self):
        return f"<OpDef {self.name}>"

    def _update_fast(self):
        """May the dispatcher's fast path run this op (Note [fast path])?"""
        self.fast = self.composite is None and not self.is_inplace and self.check_inputs is None

    def __setattr__(self, name, value):
        object.__setattr__(self, name, value)
        if name in ("composite", "is_inplace", "check_inputs") and "tensor_idx" in self.__dict__:
            self._update_fast()
        elif name == "out_dtype":
            object.__setattr__(self, "out_np", None if value is None else value.np)

    # decorators -------------------------------------------------------------------
    def def_backward(self, fn):
        """``fn(ctx, grad, *args) -> grads`` (one per positional argument), in ember ops."""
        self._set("backward", fn)
        return fn

    def def_jvp(self, fn):
        self._set("jvp", fn)
        return fn

    def def_kernel_out(self, fn):
        self._set("kernel_out", fn)
        return fn

    def def_batch_rule(self, fn):
        self._set("batch_rule", fn)
        return fn

    def _set(self, field, fn):
        setattr(self, field, fn)
        if self.inplace_variant is not None:
            setattr(self.inplace_variant, field, fn)

    def make_inplace(self, name=None):
        """Derive the in-place variant ``<name>_`` that writes into argument 0."""
        v = object.__new__(OpDef)
        v.__dict__.update(self.__dict__)
        base = self.public_name
        v.public_name = name or base + "_"
        v.name = v.public_name + (("." + self.schema.overload) if self.schema.overload else "")
        v.is_inplace = True
        v.is_view = False
        v.functional = self
        v.grad_name = self.grad_name
        self.inplace_variant = v
        OPS[v.name] = v
        return v

    def __call__(self, *args, **kwargs):
        """Call through the dispatcher with schema-ordered arguments (used by modes)."""
        out = kwargs.pop("out", None) if kwargs else None
        if kwargs or len(args) < len(self.argnames):
            args = bind(self, args, kwargs)
        return _dispatcher.dispatch(self, args, out)


def bind(op, args, kwargs):
    """Slow path: fill a positional tuple from args/kwargs with defaults."""
    vals = list(args)
    for a in op.schema.args[len(args):]:
        if a.name in kwargs:
            vals.append(kwargs.pop(a.name))
        elif a.has_default:
            vals.append(a.default)
        else:
            raise TypeError(f"{op.public_name}() missing required argument '{a.name}'")
    if kwargs:
        raise TypeError(f"{op.public_name}() got an unexpected keyword argument "
                        f"'{next(iter(kwargs))}'")
    return tuple(vals)


# -------------------------------------------------------------------- code generation

def _pyname(name):
    return name + "_" if keyword.iskeyword(name) else name


def _signature(op, method, with_out, varargs):
    params, call, kw_started = [], [], False
    for i, a in enumerate(op.schema.args):
        name = _pyname(a.name)
        if i == 0 and not method and name == "self":
            name = "input"
        if method and i == 0:
            params.append("self")
            call.append("self")
            continue
        if varargs == a.name:
            # torch's methods take the list as varargs, as one sequence, or by keyword
            # (x.flip(0, 1), x.flip((0, 1)), x.flip(dims=(0, 1)))
            params.append(f"*_va_{name}")
            params.append(f"{name}=_NOARG")
            got = f"_varargs(_va_{name}, {name}, {a.name!r})"
            if a.type in ("int", "SymInt"):     # Note [argument types]
                got = f"_check_arg(_op, {a.name!r}, 'int', True, False, {got})"
            call.append(got)
            kw_started = True
            continue
        if a.kwarg_only and not kw_started:
            params.append("*")
            kw_started = True
        params.append(f"{name}={a.default!r}" if a.has_default else name)
        call.append(name)
    if with_out:
        if not kw_started:
            params.append("*")
        params.append("out=None")
    return params, call


_NOARG = object()
# every generated front's globals: _dispatch.add_call_layer rebinds their inlined `_call`
FRONT_NAMESPACES = []
# schema types whose values the fronts check (Note [argument types])
_PLAIN_KINDS = {"int": "int", "SymInt": "int", "float": "float", "bool": "bool", "str": "str",
                "Scalar": "Scalar"}
_SCALARS = frozenset((int, float, bool, complex))


def _varargs(v, kw=_NOARG, name=None):
    if kw is not _NOARG:
        if v:
            raise TypeError(f"argument '{name}' given by name and by position")
        v = (kw,)
    if len(v) == 1 and isinstance(v[0], (tuple, list)) or len(v) == 1 and hasattr(v[0], "__len__") \
            and not hasattr(v[0], "_data"):
        return tuple(v[0])
    return v


# Note [argument types]: torch's argument parser refuses a list or a NumPy array where a
# Tensor goes ("sqrt(): argument 'input' (position 1) must be Tensor, not list") and a dtype
# that is not a torch.dtype. The dispatcher's slow path raises ArgumentTypeError (the fast
# path only ever sees Tensors and numbers, so it pays nothing); the fronts adapt it: a
# method counts positions after ``self``, and a Python operator returns NotImplemented, so
# that ``x + [1]`` raises Python's TypeError and ``x == [1]`` is False, as in torch (a NumPy
# operand of an operator is converted instead: torch's result there comes back from NumPy
# as a Tensor). Fronts with a ``ScalarType`` argument check it first.
_CODE_CACHE: dict = {}


def _bad_argument(err, op, args, out, kind):
    """A front's answer to ArgumentTypeError (Note [argument types])."""
    if err.op is not op:
        raise err
    if kind == "method":
        raise _dispatcher.ArgumentTypeError(op, err.index, err.value, method=True) from None
    if kind == "operator" and isinstance(err.value, np.ndarray):
        from ember._creation import as_tensor
        args = args[:err.index] + (as_tensor(err.value),) + args[err.index + 1:]
        return _dispatcher.dispatch(op, args, out)
    return NotImplemented


def generate(op, *, method=False, with_out=False, varargs=None, name=None, kind=None):
    """Build the Python front (function or method) of an op record. ``kind``: None (a
    function), "method", "operator" or "inplace operator" (Note [argument types])."""
    from ember._dispatch import _call, _dispatch_mode, ArgumentTypeError
    from ember._state import state
    if method and kind is None:
        kind = "method"
    params, call = _signature(op, method, with_out, varargs)
    fname = name or op.public_name
    args = f"({', '.join(call)}{',' if len(call) == 1 else ''})"
    out = "out" if with_out else "None"
    checks = ""
    for k, a in enumerate(op.schema.args):
        v = _pyname(a.name)
        if a.type == "ScalarType" and not a.is_list:
            checks += (f"    if {v} is not None and type({v}) is not _DT:\n"
                       f"        {v} = _check_dtype({v}, {op.public_name!r}, {a.name!r})\n")
        plain = _PLAIN_KINDS.get(a.type)
        if plain is None or a.name == varargs or (method and k == 0):
            continue
        # Note [argument types] (in _dispatch): one type test, the checker only when it fails
        # a list argument given one plain value (``sum(x, 1)``) is well-typed too
        test = ("(type({v}) is not tuple or not _ints({v})) and type({v}) is not int"
                if a.is_list and plain == "int" else
                "type({v}) is not tuple and type({v}) is not " + plain
                if a.is_list and plain != "Scalar" else
                "type({v}) is not tuple" if a.is_list else
                "type({v}) not in _SCALARS" if plain == "Scalar" else f"type({v}) is not {plain}")
        optional = a.optional or a.is_list and a.has_default     # torch: None -> default
        test = test.format(v=v) + (f" and {v} is not None" if optional else "")
        checks += (f"    if {test}:\n        _check_arg(_op, {a.name!r}, {plain!r}, "
                   f"{a.is_list}, {optional}, {v})\n")
    if with_out and op.num_outputs == 1 and not op.returns_list:
        checks += ("    if out is not None and not isinstance(out, _Tensor):\n"
                   "        _check_arg(_op, 'out', 'Tensor', False, True, out)\n")
    # the dispatcher's entry, inlined: modes first, else straight to _call (a method and
    # its operators share one code object: the __torch_function__ layer finds the front
    # the user called by its code on the stack)
    entry = (f"if _state.modes:\n        return _dispatch_mode(_op, {args}, {out})\n"
             f"    return _call(_op, {args}, {out})")
    if kind is None:
        body = f"    {entry}"
    else:
        body = (f"    try:\n        {entry.replace(chr(10), chr(10) + '    ')}\n"
                f"    except _ArgumentTypeError as e:\n"
                f"        return _bad_argument(e, _op, {args}, {out}, _kind)")
    src = f"def _front({', '.join(params)}):\n{checks}{body}\n"
    code = _CODE_CACHE.get(src)
    if code is None:       # many ops share a signature: compile each shape once (import time)
        code = _CODE_CACHE[src] = compile(src, "<ember op front>", "exec")
    env = {"_call": _call, "_dispatch_mode": _dispatch_mode, "_state": state, "_op": op,
           "_varargs": _varargs, "_NOARG": _NOARG, "_ArgumentTypeError": ArgumentTypeError,
           "_bad_argument": _bad_argument, "_DT": _dtype.dtype,
           "_check_dtype": _dtype.dtype_argument, "_kind": kind,
           "_check_arg": _dispatcher.check_argument, "_SCALARS": _SCALARS,
           "_ints": _dispatcher.all_ints,
           "_Tensor": _dispatcher.Tensor}
    exec(code, env)
    FRONT_NAMESPACES.append(env)
    fn = env["_front"]
    fn.__name__ = fname
    fn.__doc__ = op.kernel.__doc__ if op.kernel is not None and op.kernel.__doc__ else \
        f"{op.public_name}: {op.schema}"
    fn.__qualname__ = fname
    fn._op = op
    return fn


def operator_front(fn, inplace):
    """The Python operator (``__add__``, ``__iadd__``) over a generated method front."""
    op = getattr(fn, "_op", None)
    if op is None:
        return fn
    return generate(op, method=True, name=fn.__name__,
                    kind="inplace operator" if inplace else "operator")


def register(op, *, function=True, method=True, inplace=False, out=True, varargs=None,
             method_name=None):
    """Generate and register the public fronts of ``op``; returns ``op``."""
    if function:
        FUNCTIONS[op.public_name] = generate(op, with_out=out and not op.is_view)
    if method:
        METHODS[method_name or op.public_name] = generate(op, method=True, varargs=varargs,
                                                          name=method_name)
    if inplace:
        v = op.inplace_variant or op.make_inplace()
        METHODS[v.public_name] = generate(v, method=True, varargs=varargs)
    return op


def refuse_bool(op, message, exc=NotImplementedError, inplace_only=False):
    """torch has no Bool kernel for ``op`` (or its in-place variant): ``exc(message)`` when
    ``self`` is a bool tensor, before any promotion or cast check."""
    def check(args):
        a = getattr(args[0], "_data", None)
        if a is not None and a.dtype == np.bool_:
            raise exc(message)
    for o in ((op.inplace_variant,) if inplace_only else (op, op.inplace_variant)):
        if o is not None:
            o.check_inputs = check
    return op


def defop(schema, kernel=None, *, function=True, method=True, inplace=False, out=True,
          varargs=None, **opts):
    """Create an op record and its public fronts in one step."""
    return register(OpDef(schema, kernel, **opts), function=function, method=method,
                    inplace=inplace, out=out, varargs=varargs)


def public(name=None, method=False, function=True):
    """Register a hand-written front (an overloaded name like ``max``) that calls op records."""
    def deco(fn):
        n = name or fn.__name__
        if function:
            FUNCTIONS[n] = fn
        if method:
            METHODS[n if method is True else method] = fn
        return fn
    return deco


from ember import _dispatch as _dispatcher  # noqa: E402  (the dispatcher imports records lazily)
