"""Op records (``OpDef``) and the registry; public functions and Tensor methods are
generated from each record's schema.

One record per op holds everything every feature needs: the schema, the kernel (on
backend arrays), the backward rule (in ember ops, so it is differentiable), an optional
jvp rule and batching rule, promotion and autocast policy, determinism, and which
inputs the backward needs saved. In-place (``add_``) and ``out=`` variants are derived.
"""
from __future__ import annotations

import functools
import inspect
import keyword
import marshal
import os
import re
import sys

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
                 grad_name=None, differentiable=True, out_dtype=None, none_grads=False):
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
        # a multi-output record whose backward takes None for an output no gradient reached
        # (else zeros of its shape arrive: _sdpa_fused's probabilities, (B, H, L, S), for one)
        self.none_grads = none_grads
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
        # a record that returns nothing and writes into its ``Tensor(a!)`` / ``Tensor(a!)[]``
        # arguments (``_fused_adam_``): the dispatcher's ``_call_mutating`` runs it
        self.mutated_args = () if rets else tuple(
            i for i, a in enumerate(args) if a.alias is not None and a.alias.endswith("!"))
        out_idx = {r[2]: k for k, r in enumerate(rets) if r[2]}
        # saves: argument names, "result" (every output), or output names (only those:
        # ``ctx.result`` then holds None in place of the outputs not kept alive)
        self.saved_args = tuple(idx[n] for n in saves if n in idx)
        # saved argument -> the arguments whose gradients read it (Note [saved for whom] in
        # ember/autograd/graph.py); a saved argument not listed is read by every gradient
        self.saved_needs = {}
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
        self._fronts = []           # namespaces of the fronts with a fast block (Note [fast path])
        self.tensor_idx = tuple(i for i, _, _ in self.tensor_args)
        self._update_fast()
        if self.name in OPS:
            raise ValueError(f"op {self.name} registered twice")
        OPS[self.name] = self

    def __repr__(self):
        return f"<OpDef {self.name}>"

    def recorder(self, *args_and_out):
        """``recorder(*args, out)``: record autograd for ``out`` made by a front's fast block
        from the op's arguments (Note [fast path]). The first call builds the op's recorder,
        which then shadows this and is what the fronts call (their ``_REC``)."""
        from ember.autograd.graph import make_recorder
        rec = self.__dict__["recorder"] = make_recorder(self)
        for namespace in self._fronts:
            namespace["_REC"] = rec
        return rec(*args_and_out)

    def _update_fast(self):
        """May the dispatcher's fast path run this op (Note [fast path])? Also refreshes what
        the fronts' fast blocks read: the kernel and the dtype table (``fast_table``)."""
        self.fast = self.composite is None and not self.is_inplace and \
            self.check_inputs is None and not self.mutated_args
        if self._fronts:
            table = fast_table(self)
            kernel = self.kernel_out if self.is_inplace else plain_kernel(self.kernel)
            for namespace in self._fronts:
                namespace["_RES"] = table
                namespace["_K"] = kernel

    def __setattr__(self, name, value):
        object.__setattr__(self, name, value)
        if name == "out_dtype":
            object.__setattr__(self, "out_np", None if value is None else value.np)
        if name in _FAST_FIELDS and "tensor_idx" in self.__dict__:
            self._update_fast()

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

    def saved_for(self, needs):
        """``mul.saved_for({"self": ("other",), "other": ("self",)})``: which arguments'
        gradients read each saved argument (kept without a version check when none of them
        requires grad)."""
        idx = {n: i for i, n in enumerate(self.argnames)}
        self._set("saved_needs", {idx[k]: tuple(idx[n] for n in v) for k, v in needs.items()})
        return self

    def _set(self, field, fn):
        setattr(self, field, fn)
        if self.inplace_variant is not None:
            setattr(self.inplace_variant, field, fn)

    def make_inplace(self, name=None):
        """Derive the in-place variant ``<name>_`` that writes into argument 0."""
        v = object.__new__(OpDef)
        v.__dict__.update(self.__dict__)
        v.__dict__["_fronts"] = []
        v.__dict__.pop("recorder", None)
        v.__dict__.pop("positional_front", None)
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
        if kwargs:
            out = kwargs.pop("out", None)
            if kwargs or len(args) < len(self.argnames):
                args = bind(self, args, kwargs)
            if out is not None:
                return _dispatcher.dispatch(self, args, out)
        elif len(args) < len(self.argnames):
            args = bind(self, args, {})
        return self.positional_front(*args)

    def positional_front(self, *args):
        """The front ``__call__`` ends in: every argument positional, in schema order (Note
        [fast path]). Generated on the first call, it then shadows this method."""
        front = self.__dict__["positional_front"] = generate(self, positional=True)
        return front(*args)


# what the fronts' fast blocks depend on (OpDef.__setattr__ refreshes them)
_FAST_FIELDS = frozenset(("composite", "is_inplace", "check_inputs", "kernel", "nondeterministic",
                          "promote", "out_dtype", "kernel_out"))
# Note [fast path] in the fronts: dtypes whose kernels run as they are (no half-precision
# wrapper, no dispatcher layer: quantized, wide unsigned, complex32 and the half types all
# take the dispatcher's path)
_FAST_DTYPES = tuple(np.dtype(n) for n in ("bool", "uint8", "int8", "int16", "int32", "int64",
                                           "float32", "float64", "complex64", "complex128"))
# the fast dtypes a Python float operand keeps (torch: float and complex tensors)
_FLOAT_KEEPS = {d: True for d in _FAST_DTYPES if d.kind in "fc"}
_FAST_EDT = {d: True for d in _dtype.ALL if d.np in _FAST_DTYPES}     # as ``dtype=``
_NO_ENTRY = object()
_HALF_WRAPPER = None


def plain_kernel(kernel):
    """``kernel`` without its half-precision wrapper (``half_in_float32``): what the wrapper
    runs for operands of the fast dtypes."""
    global _HALF_WRAPPER
    if _HALF_WRAPPER is None:
        from ember._kernels.util import half_in_float32
        _HALF_WRAPPER = half_in_float32(abs).__code__
    if getattr(kernel, "__code__", None) is _HALF_WRAPPER or \
            getattr(kernel, "half_only_wrapper", False):
        return kernel.__wrapped__
    return kernel


def fast_table(op):
    """Note [fast path]: ``{operand dtype: result dtype}`` for which a front may call the
    kernel straight away (every Tensor operand of that one dtype, Python numbers that keep
    it); the result dtype is None where the kernel's stands. Empty when the op must take the
    dispatcher's path (composite, in-place, checked inputs, nondeterministic)."""
    p, out = op.promote, op.out_np
    if op.is_inplace:       # written straight into ``self`` by ``kernel_out``, dtype kept
        if op.kernel_out is None or op.composite is not None or op.check_inputs is not None \
                or op.nondeterministic or out is not None or p not in ("default", "int_to_float"):
            return {}
        return {d: d for d in _FAST_DTYPES if p == "default" or d.kind in "fc"}
    if not op.fast or op.nondeterministic or op.kernel is None or \
            op.num_outputs != 1 or op.returns_list:
        return {}
    if p is None:
        return {d: out for d in _FAST_DTYPES}
    if p == "bool":
        return {d: np.dtype(np.bool_) for d in _FAST_DTYPES}
    if p == "int_to_float":
        return {d: d for d in _FAST_DTYPES if d.kind in "fc"}
    return {d: d if out is None else out for d in _FAST_DTYPES}


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


# Note [NumPy keyword names]: torch's argument parser also takes ``axis=`` for ``dim`` and
# ``keepdims=`` for ``keepdim`` (``x.sum(axis=0, keepdims=True)``). A front with such an
# argument gets the alias as a keyword; the argument and every required one after it default
# to ``_NOARG`` so that a missing or doubly given value is told apart.
_ALIASES = {"dim": "axis", "keepdim": "keepdims"}


def _aliases(op, varargs):
    names = {a.name for a in op.schema.args}
    return {a.name: _ALIASES[a.name] for a in op.schema.args
            if a.name in _ALIASES and a.name != varargs and _ALIASES[a.name] not in names}


def _alias_checks(op, fname, aliases, required, arity=False):
    """The front's first lines: take each alias's value, fill defaults, report missing
    (with ``arity``, the arity test after them does)."""
    lines = []
    for a in op.schema.args:
        alias = aliases.get(a.name)
        if alias is None:
            continue
        lines += [f"    if {alias} is not _NOARG:",
                  f"        if {a.name} is not _NOARG:",
                  f"            raise TypeError(\"{fname}() got an unexpected keyword argument "
                  f"'{alias}'\")",
                  f"        {a.name} = {alias}"]
        if a.has_default:
            lines += [f"    elif {a.name} is _NOARG:", f"        {a.name} = {a.default!r}"]
    if required and not arity:
        names = ", ".join(f"({n!r}, {n})" for n in required)
        lines += ["    if " + " or ".join(f"{n} is _NOARG" for n in required) + ":",
                  f"        _missing_arguments({fname!r}, [n for n, v in ({names},) "
                  f"if v is _NOARG])"]
    return "".join(line + "\n" for line in lines)


def _numpy_names(fn, fname):
    """``fn`` taking ``axis=`` for ``dim`` and ``keepdims=`` for ``keepdim`` as well."""
    sig = inspect.signature(fn).parameters
    params = list(sig)
    where = {name: params.index(name) for name in _ALIASES if name in params}
    # the keywords ``fn`` takes (None: it takes any, ``**``); torch names the first keyword
    # of the call that is none of them, an alias (``axis=``) counting as none once any other
    # is unknown (``cat(x, axis=0, foo=1)``: "cat() got an unexpected keyword argument 'axis'")
    takes = None if any(p.kind is p.VAR_KEYWORD for p in sig.values()) else frozenset(
        n for n, p in sig.items() if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY))

    def unknown(kwargs):
        if takes is not None and not takes.issuperset(kwargs):
            bad = [k for k in kwargs if k not in takes]
            if any(k not in ("axis", "keepdims") for k in bad):
                raise TypeError(f"{fname}() got an unexpected keyword argument '{bad[0]}'")

    def front(*args, **kwargs):
        if kwargs and ("axis" in kwargs or "keepdims" in kwargs):
            unknown(kwargs)
            for name, i in where.items():
                alias = _ALIASES[name]
                if alias in kwargs:
                    if name in kwargs or len(args) > i:
                        raise TypeError(f"{fname}() got an unexpected keyword argument "
                                        f"'{alias}'")
                    kwargs[name] = kwargs.pop(alias)
        try:
            return fn(*args, **kwargs)
        except TypeError:               # (binding failed: an unknown keyword, torch's name)
            if kwargs:
                unknown(kwargs)
            raise
    return functools.update_wrapper(front, fn)


def _missing_arguments(fname, names):
    """Python's TypeError for required positional arguments not given."""
    quoted = [f"'{n}'" for n in names]
    listed = " and ".join(quoted) if len(quoted) <= 2 else \
        ", ".join(quoted[:-1]) + ", and " + quoted[-1]
    plural = "argument" if len(names) == 1 else "arguments"
    raise TypeError(f"{fname}() missing {len(names)} required positional {plural}: {listed}")


def _plain_signature(fn, required, aliases):
    """The signature a front shows ``inspect`` (ember.jit and ember.fx bind calls with it):
    without Note [arity errors]'s ``*_more``, required arguments without a default."""
    sig = inspect.signature(fn)
    strip = set(required)
    if aliases:        # (those Note [NumPy keyword names] already made _NOARG keep it)
        names = list(sig.parameters)
        first = min((names.index(n) for n in aliases if n in names), default=len(names))
        strip = {n for n in strip if names.index(n) < first}
    empty = inspect.Parameter.empty
    return sig.replace(parameters=[
        p.replace(default=empty) if p.name in strip else p
        for p in sig.parameters.values() if p.name not in ("_more", "_kw")])


def _takes_keywords(fname, method):
    from ember._ops import parser_errors
    return parser_errors.takes_keywords(fname, method)


def _keyword_error(fname, method, kw):
    """torch's TypeError for a call of a generated front of an overloaded name with keywords
    it does not take (Note [unknown keywords]); the front's frame is our caller's."""
    from ember._ops import parser_errors
    raise parser_errors.keyword_error(fname, method, sys._getframe(1), kw) from None


def _arity_error(op, fname, method):
    """torch's TypeError for a call of a generated front with too many positional arguments
    or a required one missing (Note [arity errors]); the front's frame is our caller's."""
    from ember._ops import parser_errors
    raise parser_errors.arity_error(op, fname, method, sys._getframe(1)) from None


def _signature(op, method, with_out, varargs, aliases=(), required=None, arity=False):
    """Parameters and schema-ordered call arguments of a front; names of required arguments
    that default to ``_NOARG`` (Note [NumPy keyword names], Note [arity errors]) go to
    ``required``. ``arity``: every required positional argument defaults to ``_NOARG`` and
    ``*_more`` takes surplus positional arguments (Note [arity errors])."""
    params, call, kw_started = [], [], False
    sentinel = False
    star = "*_more" if arity else "*"
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
            if a.type in ("int", "SymInt"):     # Note [argument types]
                got = f"_int_varargs(_op, _va_{name}, {name}, {a.name!r})"
            else:
                got = f"_varargs(_va_{name}, {name}, {a.name!r})"
            call.append(got)
            kw_started = True
            continue
        if a.kwarg_only and not kw_started:
            params.append(star)
            kw_started = True
        sentinel = sentinel or a.name in aliases
        if sentinel and (a.name in aliases or not a.has_default) or \
                arity and not a.has_default and not a.kwarg_only:
            params.append(f"{name}=_NOARG")
            if not a.has_default:
                required.append(name)
        else:
            params.append(f"{name}={a.default!r}" if a.has_default else name)
        call.append(name)
    if with_out:
        if not kw_started:
            params.append(star)
            kw_started = True
        params.append("out=None")
    if aliases:
        if not kw_started:
            params.append(star)
            kw_started = True
        params += [f"{alias}=_NOARG" for alias in aliases.values()]
    if arity and not kw_started:
        params.append(star)
    return params, call


_NOARG = object()
# ops whose Tensor arguments torch's parser refuses a number for (they have no Scalar
# overload): ``torch.maximum(t, 0.)``, ``t @ 2`` raise TypeError (an operator:
# NotImplemented). Checked in the public fronts only: ember's own code may pass numbers.
_TENSORS_ONLY = frozenset((
    "matmul", "maximum", "minimum", "fmax", "fmin", "atan2", "arctan2", "hypot", "ldexp",
    "nextafter", "heaviside", "logaddexp", "logaddexp2", "igamma", "igammac", "gcd", "lcm",
    "logical_and", "logical_or", "logical_xor", "complex", "polar", "masked_select", "take",
    "take_along_dim", "binomial"))
# every generated front's globals: _dispatch.add_call_layer rebinds their inlined `_call`
FRONT_NAMESPACES = []
# schema types whose values the fronts check (Note [argument types])
_PLAIN_KINDS = {"int": "int", "SymInt": "int", "float": "float", "bool": "bool", "str": "str",
                "Scalar": "Scalar"}
_SCALARS = frozenset((int, float, bool, complex))


def _varargs(v, kw=_NOARG, name=None):
    if kw is _NOARG and len(v) == 1 and type(v[0]) is tuple:      # x.permute((1, 0))
        return v[0]
    if kw is not _NOARG:
        if v:
            raise TypeError(f"argument '{name}' given by name and by position")
        v = (kw,)
    if len(v) == 1 and isinstance(v[0], (tuple, list)) or len(v) == 1 and hasattr(v[0], "__len__") \
            and not hasattr(v[0], "_data"):
        return tuple(v[0])
    return v


def _int_varargs(op, v, kw, name):
    """``_varargs`` of an int list, checked (Note [argument types]) unless all ints."""
    v = _varargs(v, kw, name)
    if type(v) is tuple and _dispatcher.all_ints(v):
        return v
    return _dispatcher.check_argument(op, name, "int", True, False, v)


# Note [argument types]: torch's argument parser refuses a list or a NumPy array where a
# Tensor goes ("sqrt(): argument 'input' (position 1) must be Tensor, not list") and a dtype
# that is not a torch.dtype. The dispatcher's slow path raises ArgumentTypeError (the fast
# path only ever sees Tensors and numbers, so it pays nothing); the fronts adapt it: a
# method counts positions after ``self``, and a Python operator returns NotImplemented, so
# that ``x + [1]`` raises Python's TypeError and ``x == [1]`` is False, as in torch (a NumPy
# operand: Note [NumPy operands] in ``ember/_tensor.py``). Fronts with a ``ScalarType``
# argument check it first.
_CODE_CACHE: dict = {}
# Note [front cache]: the fronts' code objects, kept between runs as .pyc files are (same
# directory, same switch: sys.dont_write_bytecode), keyed by their source text, so a stale
# file is merely unused; compiling ~300 fronts costs ~0.05 s of every import otherwise
_disk_code = None
_CodeType = type(_signature.__code__)


def _front_code(src):
    global _disk_code
    if _disk_code is None:
        _disk_code = _load_front_cache()
    code = _disk_code.get(src)
    if type(code) is not _CodeType:
        code = compile(src, "<ember op front>", "exec")
        if not _disk_code.get("__save__") and not sys.dont_write_bytecode:
            _disk_code["__save__"] = True
            import atexit
            atexit.register(_save_front_cache)
    return code


def _front_cache_path():
    return os.path.join(os.path.dirname(__file__), "__pycache__",
                        f"_fronts.{sys.implementation.cache_tag}.marshal")


def _load_front_cache():
    try:
        with open(_front_cache_path(), "rb") as f:
            cached = marshal.load(f)
        return cached if type(cached) is dict else {}
    except Exception:           # absent, unreadable, another Python's: compile instead
        return {}


def _save_front_cache():
    path = _front_cache_path()
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(tmp, "wb") as f:
            marshal.dump(dict(_CODE_CACHE), f)
        os.replace(tmp, path)      # (atomic: concurrent processes never read half a file)
    except OSError:
        try:
            os.remove(tmp)
        except OSError:
            pass


def _bad_argument(err, op, args, out, kind):
    """A front's answer to ArgumentTypeError (Note [argument types])."""
    if err.op is not op:
        raise err
    if kind == "method":
        raise _dispatcher.ArgumentTypeError(op, err.index, err.value, method=True) from None
    # only == takes an array (Note [NumPy operands] in ember/_tensor.py): the other
    # operators leave it to NumPy
    if kind == "operator" and isinstance(err.value, np.ndarray) and op.public_name == "eq":
        from ember._creation import as_tensor
        args = args[:err.index] + (as_tensor(err.value),) + args[err.index + 1:]
        return _dispatcher.dispatch(op, args, out)
    return NotImplemented


def generate(op, *, method=False, with_out=False, varargs=None, name=None, kind=None,
             positional=False):
    """Build the Python front (function or method) of an op record. ``kind``: None (a
    function), "method", "operator" or "inplace operator" (Note [argument types]).
    ``positional``: the front of ``OpDef.__call__``, every argument positional in schema
    order, unchecked (as ``dispatch`` takes them)."""
    from ember._dispatch import _call, _dispatch_mode, ArgumentTypeError
    from ember._state import state
    if method and kind is None:
        kind = "method"
    # Note [arity errors]: the user's fronts (not Python's operators, which always pass one
    # operand) give torch's texts for missing and surplus arguments
    arity = not positional and kind not in ("operator", "inplace operator")
    if positional:
        params = call = [f"a{i}" for i in range(len(op.argnames))]
    else:
        aliases, required = _aliases(op, varargs), []
        params, call = _signature(op, method, with_out, varargs, aliases, required, arity)
    fname = name or op.public_name
    args = f"({', '.join(call)}{',' if len(call) == 1 else ''})"
    out = "out" if with_out else "None"
    checks = "" if positional or not aliases else \
        _alias_checks(op, fname, aliases, required, arity)
    if arity and _takes_keywords(fname, method):        # Note [unknown keywords]
        params = params + ["**_kw"]
        checks = (f"    if _kw:\n        _keyword_error({fname!r}, {method}, _kw)\n"
                  + checks)
    if arity:
        more = ["_more"] if any(p.startswith("*_more") for p in params) else []
        tests = more + [f"{n} is _NOARG" for n in required]
        if tests:
            checks += (f"    if {' or '.join(tests)}:\n"
                       f"        _arity_error(_op, {fname!r}, {method})\n")
    for k, a in enumerate(() if positional else op.schema.args):
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
    if not positional and op.public_name in _TENSORS_ONLY:
        for k, a in enumerate(op.schema.args):
            if a.type != "Tensor" or a.is_list or (method and k == 0):
                continue
            v = "input" if k == 0 and a.name == "self" else _pyname(a.name)
            refuse = "return NotImplemented" if kind in ("operator", "inplace operator") else \
                f"raise _ArgumentTypeError(_op, {k}, {v}, {kind == 'method'})"
            checks += (f"    if type({v}) in _SCALARS or isinstance({v}, _npgeneric):\n"
                       f"        {refuse}\n")
    if with_out and op.num_outputs == 1 and not op.returns_list:
        checks += ("    if out is not None and not isinstance(out, _Tensor):\n"
                   "        _check_arg(_op, 'out', 'Tensor', False, True, out)\n")
    # the dispatcher's entry, inlined: modes first, else straight to _call (a method and
    # its operators share one code object: the __torch_function__ layer finds the front
    # the user called by its code on the stack)
    fast = _fast_inplace_block(op, call) if op.is_inplace else \
        _fast_block(op, call, args, with_out)
    entry = (f"if _state.modes:\n        return _dispatch_mode(_op, {args}, {out})\n"
             f"    return _call(_op, {args}, {out})")
    if fast:
        entry = f"if not _state.modes:\n{fast}\n        return _call(_op, {args}, {out})\n" \
                f"    return _dispatch_mode(_op, {args}, {out})"
    if kind is None:
        body = f"    {entry}"
    else:
        body = (f"    try:\n        {entry.replace(chr(10), chr(10) + '    ')}\n"
                f"    except _ArgumentTypeError as e:\n"
                f"        return _bad_argument(e, _op, {args}, {out}, _kind)")
    src = f"def _front({', '.join(params)}):\n{checks}{body}\n"
    code = _CODE_CACHE.get(src)
    if code is None:       # many ops share a signature: compile each shape once (import time)
        code = _CODE_CACHE[src] = _front_code(src)
    env = {"_call": _call, "_dispatch_mode": _dispatch_mode, "_state": state, "_op": op,
           "_varargs": _varargs, "_int_varargs": _int_varargs, "_NOARG": _NOARG,
           "_ArgumentTypeError": ArgumentTypeError, "_missing_arguments": _missing_arguments,
           "_arity_error": _arity_error, "_keyword_error": _keyword_error,
           "_bad_argument": _bad_argument, "_DT": _dtype.dtype,
           "_check_dtype": _dtype.dtype_argument, "_kind": kind,
           "_check_arg": _dispatcher.check_argument, "_SCALARS": _SCALARS,
           "_ints": _dispatcher.all_ints, "_npgeneric": np.generic,
           "_Tensor": _dispatcher.Tensor}
    if fast:
        env.update(_PLAIN=_dispatcher.PLAIN_TENSOR_TYPES, _nd=np.ndarray, _new=object.__new__,
                   _NO=_NO_ENTRY, _FLOATS=_FLOAT_KEEPS, _BOOL=np.dtype(np.bool_),
                   _FAST_EDT=_FAST_EDT,
                   _asarray=np.asarray,
                   _set_view=_dispatcher._graph.set_view,
                   _RES=fast_table(op), _REC=op.recorder,
                   _K=op.kernel_out if op.is_inplace else plain_kernel(op.kernel))
        op._fronts.append(env)
    exec(code, env)
    FRONT_NAMESPACES.append(env)
    fn = env["_front"]
    if arity and ("_more" in fn.__code__.co_varnames or "_kw" in fn.__code__.co_varnames
                  or required):
        fn.__signature__ = _plain_signature(fn, required, aliases)
    fn.__name__ = fname
    fn.__doc__ = op.kernel.__doc__ if op.kernel is not None and op.kernel.__doc__ else \
        f"{op.public_name}: {op.schema}"
    fn.__qualname__ = fname
    fn._op = op
    return fn


def _fast_block(op, call, args, with_out):
    """Note [fast path], inlined in a front: when every Tensor operand is a plain Tensor of
    one fast dtype (``fast_table``) and Python numbers keep that dtype, call the kernel and
    wrap its array here; anything else (and any error) goes on to ``_call``. The block is
    the same text for every op of a signature; what differs (``_RES``, ``_K``) is in the
    front's globals, kept current by ``OpDef._update_fast``. A view op's result is marked
    as a view here too. Empty for signatures it does not serve (Tensor lists, several
    outputs: their work is in the dispatcher)."""
    tensors = [(call[i], a.optional) for i, a in enumerate(op.schema.args)
               if a.type == "Tensor" and not a.is_list]
    if not tensors or any(a.type == "Tensor" and a.is_list or a.type == "Any"
                          for a in op.schema.args) or \
            tensors[0][1] or op.num_outputs != 1 or op.returns_list or op.is_inplace:
        return ""
    # the dispatcher's layers also route by these arguments (a complex32, wide unsigned or
    # quantized ``dtype=``; a ``device=``, a ``layout=``): the fast block takes only the
    # plain ones
    guards = ["out is None"] if with_out else []
    for i, a in enumerate(op.schema.args):
        if a.type == "ScalarType" and not a.is_list:
            guards.append(f"({call[i]} is None or {call[i]} in _FAST_EDT)")
        elif a.type in ("Device", "Layout"):
            guards.append(f"{call[i]} is None")
    first = tensors[0][0]
    ind = " " * 8
    lines = [f"_t = type({first})",
             "if _t is _Tensor or _t in _PLAIN:",
             f"    _a0 = {first}._data",
             "    _dt = _a0.dtype",
             "    _rd = _RES.get(_dt, _NO)",
             "    if _rd is not _NO and type(_a0) is _nd" +
             "".join(" and " + g for g in guards) + ":",
             f"        _req = {first}._requires_grad",
             "        _ok = True"]
    kargs = []
    for k, name in enumerate(call):
        match = [j for j, (n, _) in enumerate(tensors) if n == name]
        if not match or match[0] == 0:
            kargs.append("_a0" if match else name)
            continue
        j = match[0]
        a = f"_a{j}"
        kargs.append(a)
        optional = tensors[j][1]
        lines += [f"        _t = type({name})",
                  "        if _t is _Tensor or _t in _PLAIN:",
                  f"            {a} = {name}._data",
                  f"            if {a}.dtype is not _dt or type({a}) is not _nd:",
                  "                _ok = False",
                  f"            elif {name}._requires_grad:",
                  "                _req = True"]
        if optional:
            lines += [f"        elif {name} is None:", f"            {a} = None"]
        lines += ["        elif _t is float:", f"            {a} = {name}",
                  "            _ok = _dt in _FLOATS",
                  "        elif _t is int:", f"            {a} = {name}",
                  "            _ok = _dt is not _BOOL",
                  "        else:", "            _ok = False"]
    lines += ["        if _ok:",
              "            try:",
              f"                _r = _K({', '.join(kargs)})",
              "            except Exception:",
              "                _ok = False",
              "        if _ok:",
              "            if type(_r) is not _nd:",
              "                _r = _asarray(_r)",
              "            if _rd is not None and _r.dtype is not _rd and _r.dtype != _rd:",
              "                _r = _r.astype(_rd)",
              "            _o = _new(_Tensor)",
              "            _o._data = _r",
              "            _o._requires_grad = False",
              "            _o._grad_fn = None",
              "            _o._output_nr = 0",
              "            _o._storage_base = None",
              "            _o._view_info = None",
              "            _o._vc = 0",
              "            _o._meta = None"]
    if op.is_view:
        lines += [f"            _set_view(_o, {first}, _op, {args})"]
    lines += ["            if _req and _state.grad_enabled:",
              f"                _REC({', '.join(call)}, _o)",
              "            return _o"]
    return "\n".join(ind + line for line in lines)


def _fast_inplace_block(op, call):
    """Note [fast path] for an in-place variant with a ``kernel_out``: when ``self`` is a
    plain root tensor of a fast dtype (``fast_table``), writeable, and the other Tensor
    operands have its dtype and shape (numbers keeping the dtype), and nothing is to be
    recorded (no operand requires grad, or grad mode is off: an optimizer's step), write
    the result into ``self`` and bump its version; anything else goes on to ``_call``."""
    tensors = [(call[i], a.optional) for i, a in enumerate(op.schema.args)
               if a.type == "Tensor" and not a.is_list]
    if not tensors or call[0] != "self" or \
            any(a.type == "Any" or a.type == "Tensor" and a.is_list or
                a.type in ("ScalarType", "Device", "Layout") for a in op.schema.args):
        return ""
    ind = " " * 8
    lines = ["_t = type(self)",
             "if (_t is _Tensor or _t in _PLAIN) and self._storage_base is None:",
             "    _a0 = self._data",
             "    _dt = _a0.dtype",
             "    if _dt in _RES and type(_a0) is _nd:",
             "        _req = self._requires_grad",
             "        _ok = True"]
    kargs = ["_a0", "_a0"]          # kernel_out(out, self, *rest)
    for name in call[1:]:
        match = [j for j, (n, _) in enumerate(tensors) if n == name]
        if not match:
            kargs.append(name)
            continue
        a = f"_a{match[0]}"
        kargs.append(a)
        lines += [f"        _t = type({name})",
                  "        if _t is _Tensor or _t in _PLAIN:",
                  f"            {a} = {name}._data",
                  f"            if {a}.dtype is not _dt or type({a}) is not _nd or "
                  f"{a}.shape != _a0.shape:",
                  "                _ok = False",
                  f"            elif {name}._requires_grad:",
                  "                _req = True"]
        if tensors[match[0]][1]:
            lines += [f"        elif {name} is None:", f"            {a} = None"]
        lines += ["        elif _t is float:", f"            {a} = {name}",
                  "            _ok = _dt in _FLOATS",
                  "        elif _t is int:", f"            {a} = {name}",
                  "            _ok = _dt is not _BOOL",
                  "        else:", "            _ok = False"]
    lines += ["        if _ok and not (_req and _state.grad_enabled) and _a0.flags.writeable and "
              "(self._meta is None or not self._meta.inference):",
              "            try:",
              f"                _K({', '.join(kargs)})",
              "            except Exception:",
              "                _ok = False",
              "            else:",
              "                self._vc += 1",
              "                return self"]
    return "\n".join(ind + line for line in lines)


def operator_front(fn, inplace):
    """The Python operator (``__add__``, ``__iadd__``) over a generated method front."""
    op = getattr(fn, "_op", None)
    if op is None:
        return fn
    front = generate(op, method=True, name=fn.__name__,
                     kind="inplace operator" if inplace else "operator")
    OPERATOR_METHODS.setdefault(front.__code__, set()).add(fn.__code__)
    return front


# the method fronts' code objects each operator front's code stands for (an operator has no
# Note [arity errors] test, so its code is not its method's; ember.overrides finds the
# front the user called by the code on the stack)
OPERATOR_METHODS: dict = {}


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


def public(name=None, method=False, function=True, numpy_names=False):
    """Register a hand-written front (an overloaded name like ``max``) that calls op records;
    ``numpy_names``: it also takes ``axis=``/``keepdims=`` (Note [NumPy keyword names])."""
    def deco(fn):
        n = name or fn.__name__
        if numpy_names:
            fn = _numpy_names(fn, n)
        if function:
            FUNCTIONS[n] = fn
        if method:
            METHODS[n if method is True else method] = fn
        return fn
    return deco


from ember import _dispatch as _dispatcher  # noqa: E402  (the dispatcher imports records lazily)
