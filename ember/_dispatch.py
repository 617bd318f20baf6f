"""The dispatcher: every public function, Tensor method and operator ends here.

    dispatch(op, args, out)
      -> mode stack (profiler, autocast, tracer, func transforms, user modes)
      -> _call: unwrap, type promotion, determinism check, kernel, wrap,
                autograd recording (only when grad mode is on and an input requires grad)

``args`` is the full positional tuple in the op's schema order (the generated fronts
fill defaults). Note [fast path]: with no mode active and no input requiring grad, the
cost is one loop over the tensor arguments, a promotion lookup and the kernel call.
"""
from __future__ import annotations

import numpy as np

from ember import _dtype, _overlap
from ember._state import state
from ember._kernels.util import allocation_error
from ember._tensor import Tensor, _make, _TENSOR_TF
from ember.return_types import wrap_returns
from ember.autograd import graph as _graph

_ndarray = np.ndarray
_SCALAR_CATEGORY = {bool: 0, int: 1, float: 2, complex: 3}
_NP_CATEGORY = {d.np: d._category for d in _dtype.ALL + _dtype.QUANTIZED}
_NP_TO_DT = {d.np: d for d in _dtype.ALL + _dtype.QUANTIZED}
_INT_KINDS = "biu"
_BOOL = np.dtype(np.bool_)
_promotion_cache: dict = {}
_deterministic = [False, False]   # (enabled, warn_only)


class Mode:
    """Base class of dispatcher modes. Override ``__ember_dispatch__``; it runs with this
    mode popped, so calling ``op(*args, **kwargs)`` inside re-dispatches to the layers
    below. Use as a context manager to push it.

    Note [composite parts]: a composite op record (one written in other ember ops) reaches
    a mode as itself. With ``sees_composite_parts = True`` the mode also sees the ops the
    composite runs, as torch's profiler and autocast do: the composite's body runs with the
    modes that handled the call pushed back. Otherwise (tracers, torch-function modes) the
    composite is one opaque call."""

    sees_composite_parts = False

    def __ember_dispatch__(self, op, args, kwargs):
        return op(*args, **kwargs)

    def __enter__(self):
        state.modes = state.modes + (self,)
        return self

    def __exit__(self, *exc):
        modes = state.modes
        if modes and modes[-1] is self:
            state.modes = modes[:-1]
        else:  # exited out of order: remove wherever it is
            state.modes = tuple(m for m in modes if m is not self)
        return False


def dispatch(op, args, out=None):
    """Run ``op`` on schema-ordered ``args`` through the mode stack and the kernel."""
    if state.modes:
        return _dispatch_mode(op, args, out)
    return _call(op, args, out)


def _dispatch_mode(op, args, out):
    st = state
    modes = st.modes
    mode = modes[-1]
    handling = st.handling
    st.modes = modes[:-1]
    if mode.sees_composite_parts:
        st.handling = (mode,) + handling
    try:
        return mode.__ember_dispatch__(op, args, {} if out is None else {"out": out})
    finally:
        st.modes = modes
        st.handling = handling


def _run_composite(op, args):
    """Note [composite parts]: the body runs with the modes handling this call pushed back."""
    st = state
    handling = st.handling
    if not handling:
        return op.composite(*args)
    modes = st.modes
    st.modes = modes + handling
    st.handling = ()
    try:
        return op.composite(*args)
    finally:
        st.modes = modes
        st.handling = handling


_OPTED_OUT: dict = {}


def _opted_out(tp):
    """Is Tensor subclass ``tp`` out of the ``__torch_function__`` protocol (its handler is
    ``_disabled_torch_function_impl``, as nn.Parameter's is)? Cached per type."""
    r = _OPTED_OUT.get(tp)
    if r is None:
        from ember.overrides import _disabled_torch_function_impl
        tf = tp.__torch_function__
        r = _OPTED_OUT[tp] = getattr(tf, "__func__", tf) is _disabled_torch_function_impl
    return r


def _torch_function_args(op, args):
    """Types of the arguments taking part in ``__torch_function__`` (the slow path)."""
    found = []
    for i, is_list, _ in op.tensor_args:
        items = args[i] if is_list and isinstance(args[i], (list, tuple)) else (args[i],)
        for a in items:
            tp = type(a)
            if tp is Tensor or tp in found:
                continue
            tf = getattr(tp, "__torch_function__", None)
            if tf is not None and not (isinstance(a, Tensor) and _opted_out(tp)):
                found.append(tp)
    return found


def _handle_torch_function(op, args, out, types):
    from ember.overrides import call_torch_function
    return call_torch_function(op, args, out, types)


class ArgumentTypeError(TypeError):
    """A value that is not a Tensor (a list, a NumPy array...) where ``op`` takes one, with
    torch's argument parser's message. The generated fronts renumber it for methods (which
    count from the argument after ``self``) and turn it into ``NotImplemented`` for Python
    operators (Note [argument types] in ``ember/_ops/registry.py``)."""

    def __init__(self, op, index, value, method=False):
        name = op.argnames[index]
        if name == "self":
            name = "input"
        # torch's overloads list their forms (a call only: an operator's front returns
        # NotImplemented for this error)
        from ember._ops import parser_errors
        parser_errors.raise_overloaded(op.public_name, call_site(2))
        from ember._legacy import type_name
        super().__init__(f"{op.public_name}(): argument '{name}' (position "
                         f"{index if method else index + 1}) must be Tensor, not "
                         f"{type_name(type(value))}")
        self.op, self.index, self.value = op, index, value


# printed as torch's parser error is, a plain TypeError (``type(e).__name__``, tracebacks)
ArgumentTypeError.__name__ = ArgumentTypeError.__qualname__ = "TypeError"
ArgumentTypeError.__module__ = "builtins"


# Note [argument types], for the arguments that are not Tensors: the generated fronts send
# a value here only when its type is not the plain one (``type(dim) is not int``), so a
# well-typed call pays one ``type`` test per argument.
_NUMBER = (int, float, complex, bool, np.number, np.bool_)


def _int_like(v):
    return not isinstance(v, (bool, np.bool_)) and hasattr(type(v), "__index__")


def _fits(v, kind):
    if kind == "int":
        return _int_like(v)
    if kind == "float":
        return isinstance(v, (int, float, np.integer, np.floating, np.bool_, Tensor))
    if kind == "bool":
        return isinstance(v, (bool, np.bool_))
    if kind == "str":
        return isinstance(v, str)
    if kind == "Scalar":
        return isinstance(v, _NUMBER + (Tensor,))
    return isinstance(v, Tensor)


_EXPECTED = {"int": "int", "float": "float", "bool": "bool", "str": "str", "Scalar": "Number",
             "Tensor": "Tensor"}


def all_ints(v):
    """Are all elements of tuple ``v`` Python ints (the generated fronts' fast test of an
    int[] argument; anything else goes to :func:`check_argument`)? An empty tuple goes
    there too: for a method's varargs (``x.permute()``) it is a missing argument."""
    for e in v:
        if type(e) is not int:
            return False
    return len(v) > 0


def _int_element(e, kind="int"):
    """An element torch's parser takes in an int list: an int or bool (Python or NumPy) or
    an integer tensor of one element."""
    if isinstance(e, Tensor):
        return e._data.size == 1 and e._data.dtype.kind in "biu"
    return hasattr(type(e), "__index__")


# Note [int lists]: torch's argument parser takes a sequence as an int list by its first
# element (an int, not a bool; found by experiment). A first element that is no int means
# the list was never taken: given as several varargs values the call has too many arguments
# ("permute() takes 1 positional argument but 2 were given"; an overloaded name lists its
# overloads), given by keyword "argument 'size' must be tuple of ints, not tuple", given as
# one sequence "argument 'size' (position 1) must be tuple of ints, but found element of
# type float at pos 0" (0-based). Only later elements are unpacked, one by one: "failed to
# unpack the object at pos 2 ..." (1-based), and there a bool counts as an int.
def check_int_list(fname, name, v, position=None):
    """A hand-written front's check of int-list argument ``name`` (sequence ``v``): torch's
    TypeError for an element that is no int; returns ``v``. ``position``: where the user's
    call gave the list (1-based, as torch counts), "" for by keyword, None if unknown: a bad
    first element then gets torch's texts (Note [int lists])."""
    if type(v) is tuple and all_ints(v):
        return v
    for k, e in enumerate(v):
        if not _int_element(e) or k == 0 and position is not None and \
                isinstance(e, (bool, np.bool_)):
            from ember._legacy import type_name
            if k == 0 and position == "":
                raise TypeError(f"{fname}(): argument '{name}' must be tuple of ints, not "
                                f"{type_name(type(v))}")
            if k == 0 and position is not None:
                raise TypeError(f"{fname}(): argument '{name}' (position {position}) must be "
                                f"tuple of ints, but found element of type "
                                f"{type_name(type(e))} at pos 0")
            raise TypeError(f"{fname}(): argument '{name}' failed to unpack the object at pos "
                            f"{k + 1} with error \"type must be tuple of ints,but got "
                            f"{type_name(type(e))}\"")
    return v


def user_position(frame, name):
    """Where the user's call of the hand-written front running in ``frame`` gave argument
    ``name``, for :func:`check_int_list`: its 1-based position, "" by keyword, None when the
    call site does not tell (read only once an argument is refused)."""
    argc, kw = _call_keywords(frame.f_back)
    if argc is None:
        return None
    if name in kw:
        return ""
    names = frame.f_code.co_varnames[:frame.f_code.co_argcount]
    return names.index(name) + 1 if name in names else None


_FRONT_FILE = "<ember op front>"          # the generated fronts' code (ember/_ops/registry.py)


def call_site(depth=2):
    """Where the op front being bound was called from, read only once an argument is refused
    (Note [argument types]): ``(front frame, method?, keyword names)``. The keyword names are
    those of the user's call (from its bytecode), None when unknown (called from ember's own
    code, or with ``**kwargs``): torch's parser prints "(position N)" for a positional
    argument only."""
    import sys
    f = sys._getframe(depth)
    while f is not None and f.f_code.co_filename != _FRONT_FILE:
        f = f.f_back
    if f is None:
        return None, False, None
    return f, f.f_code.co_varnames[:1] == ("self",), _call_keywords(f.f_back)[1]


def call_count(front):
    """(number of arguments, keyword names) of the user's call of ``front``, or (None, None)."""
    return _call_keywords(front.f_back)


_CALL_KW = __import__("sys").version_info >= (3, 13)    # names loaded before CALL_KW


def _call_keywords(frame):
    """(argument count, keyword names) of the call ``frame`` is executing (CPython 3.11-3.13
    bytecode; a method called through ``x.name(...)`` counts no ``self``)."""
    if frame is None or frame.f_globals.get("__name__", "").startswith("ember"):
        return None, None
    import dis
    code, kw, last = frame.f_code, (), None
    try:
        for ins in dis.get_instructions(code):
            if ins.offset > frame.f_lasti:        # (f_lasti may point into its caches)
                break
            last = (ins.opname, ins.arg, kw)
            if ins.opname == "KW_NAMES":
                kw = code.co_consts[ins.arg]
            elif ins.opname == "LOAD_CONST" and type(ins.argval) is tuple and _CALL_KW:
                kw = ins.argval if all(type(n) is str for n in ins.argval) else ()
            elif ins.opname in ("CALL", "CALL_FUNCTION_EX", "CALL_KW"):
                kw = ()
    except Exception:       # pragma: no cover - bytecode ember does not know
        return None, None
    if last is None or last[0] not in ("CALL", "CALL_KW"):
        return None, None
    return last[1], last[2]


def _position(op, name, depth=3):
    """torch's " (position N)" for argument ``name`` of the front being bound, or ""."""
    front, method, kw = call_site(depth)
    names = getattr(op, "argnames", None)
    if front is None or not names or name not in names or kw is None or name in kw:
        return ""           # (called from ember's own code: its call is not the user's)
    k = list(names).index(name)
    return f" (position {k if method else k + 1})"


def check_argument(op, name, kind, is_list, optional, v):
    """Torch's argument parser's TypeError for a non-Tensor argument of the wrong type;
    returns ``v`` unchanged when it is acceptable."""
    if v is None and optional:
        return v
    if v == () and is_list:
        _missing_varargs(op, name)
        return v
    from ember._legacy import type_name
    head = f"{op.public_name}(): argument '{name}'"
    if is_list:
        if isinstance(v, (tuple, list)):
            fits = _int_element if kind == "int" else _fits
            for k, e in enumerate(v):
                if not fits(e, kind) or k == 0 and isinstance(e, (bool, np.bool_)):
                    if k == 0:          # torch's parser takes a list by its first element
                        _overload_error(op, name, v)
                        _one_vararg(op, name, head, kind)
                        _first_element(op, name, head, kind, e)
                        continue            # (a bool first element of an internal call)
                    _one_vararg(op, name, head, kind)
                    raise TypeError(f"{head} failed to unpack the object at pos {k + 1} with "
                                    f"error \"type must be tuple of {_EXPECTED[kind]}s,but got "
                                    f"{type_name(type(e))}\"")
            return v
        if isinstance(v, Tensor) or _fits(v, kind):
            return v
        _overload_error(op, name, v)
        raise TypeError(f"{head}{_position(op, name)} must be tuple of {_EXPECTED[kind]}s, "
                        f"not {type_name(type(v))}")
    if _fits(v, kind):
        return v
    _overload_error(op, name, v)
    raise TypeError(f"{head}{_position(op, name)} must be {_EXPECTED[kind]}, not "
                    f"{type_name(type(v))}")


def _one_vararg(op, name, head, kind):
    """``x.expand(2.5)``: one varargs value that is no list is torch's "must be tuple of
    ints, not float" (several name the element that failed to unpack)."""
    front, method, kw = call_site(3)
    if front is None:
        return
    given = front.f_locals.get(f"_va_{name}")
    if type(given) is tuple and len(given) == 1 and not isinstance(given[0], (tuple, list)):
        from ember._legacy import type_name
        raise TypeError(f"{head}{_position(op, name)} must be tuple of {_EXPECTED[kind]}s, not "
                        f"{type_name(type(given[0]))}")


def _first_element(op, name, head, kind, e):
    """A list whose first element is no int (Note [int lists]): torch's parser does not take
    it as the list at all. Several varargs values: "permute() takes 1 positional argument but
    2 were given"; the list by keyword: "must be tuple of ints, not tuple"; one sequence:
    "(position 1) must be tuple of ints, but found element of type float at pos 0"."""
    from ember._legacy import type_name
    front, method, kw = call_site(3)
    if front is not None:
        given = front.f_locals.get(f"_va_{name}")
        if type(given) is tuple and len(given) > 1:
            raise TypeError(f"{op.public_name}() takes 1 positional argument but {len(given)} "
                            f"were given")
        if kw is not None and name in kw:
            raise TypeError(f"{head} must be tuple of {_EXPECTED[kind]}s, not "
                            f"{type_name(type(front.f_locals.get(name)))}")
    elif isinstance(e, (bool, np.bool_)):
        return              # ember's own call: a bool is an int
    raise TypeError(f"{head}{_position(op, name, 4)} must be tuple of {_EXPECTED[kind]}s, but "
                    f"found element of type {type_name(type(e))} at pos 0")


def _missing_varargs(op, name):
    """torch's parser's TypeError for a varargs list given nothing (``x.permute()``)."""
    import sys
    front = sys._getframe(2)
    while front is not None and front.f_code.co_filename != _FRONT_FILE:
        front = front.f_back
    if front is None:
        return
    loc = front.f_locals
    given = loc.get(f"_va_{name}")
    from ember._ops.registry import _NOARG
    if given == () and loc.get(name) is _NOARG:     # (an empty tuple given is no error)
        from ember._ops import parser_errors
        parser_errors.raise_overloaded(op.public_name, call_site(3))
        raise TypeError(f'{op.public_name}() missing 1 required positional arguments: '
                        f'"{name}"')


def _overload_error(op, name, v):
    """torch's "received an invalid combination of arguments" for an op it overloads."""
    from ember._ops import parser_errors
    parser_errors.raise_overloaded(op.public_name, call_site(3))


def _bad_arg(op, i, a):
    raise ArgumentTypeError(op, i, a)


def _check_tensor_args(op, args):
    """Torch's argument check for a composite op, before its body runs."""
    for i, is_list, optional in op.tensor_args:
        a = args[i]
        if is_list:
            _check_tensor_list(op, i, a)
        elif isinstance(a, (np.ndarray, list, tuple, str)) or a is None and not optional:
            _bad_arg(op, i, a)


def _check_tensor_list(op, i, a):
    from ember._legacy import type_name
    if not isinstance(a, (list, tuple)):
        if isinstance(a, Tensor):
            return
        raise TypeError(f"{op.public_name}(): argument '{op.argnames[i]}' (position {i + 1}) "
                        f"must be tuple of Tensors, not {type_name(type(a))}")
    for k, x in enumerate(a):
        if not isinstance(x, Tensor) and x is not None:
            raise TypeError(f"expected Tensor as element {k} in argument {i}, but got "
                            f"{type_name(type(x))}")


# Note [fast path] in the fronts: exact types treated as plain Tensors there (Tensor, and
# subclasses out of the __torch_function__ protocol, added as the dispatcher meets them)
PLAIN_TENSOR_TYPES = {Tensor: True}


_LAYERS = {}     # call layer -> the call it passes the rest to


def add_call_layer(layer):
    """Put ``layer(op, args, out)`` in front of the dispatcher's call and return the call it
    passes the rest to (adding a layer again changes nothing). Features that matter only once
    used (meta tensors, sparse tensors) add theirs on first use, so until then the fast path
    pays nothing for them. The generated op fronts inline ``_call``; their namespaces are
    rebound too."""
    global _call
    if layer in _LAYERS:
        return _LAYERS[layer]
    from ember._ops.registry import FRONT_NAMESPACES
    previous = _LAYERS[layer] = _call
    _call = layer
    for namespace in FRONT_NAMESPACES:
        if namespace["_call"] is previous:
            namespace["_call"] = layer
    return previous


def _call(op, args, out):
    if out is not None:
        _check_out_grad(op, args, out)
    # Note [fast path]: exact Tensors of one dtype, no lists, no scalars -> no promotion work
    if op.fast:
        vals = list(args)
        first = None
        req = False
        scalar_cat = 0
        for i in op.tensor_idx:
            a = vals[i]
            t = type(a)
            if t is Tensor:
                arr = vals[i] = a._data
                if a._requires_grad:
                    req = True
                d = arr.dtype
                if first is None:
                    first = d
                elif d is not first:
                    break
            elif t is float:
                scalar_cat = 2
            elif t is int:
                if scalar_cat < 1:
                    scalar_cat = 1
            else:
                break
        else:
            if scalar_cat and (first is None or _NP_CATEGORY[first] < scalar_cat):
                return _call_general(op, args, out)
            p = op.promote
            if p is None:
                res_dt = op.out_np
            elif p == "default":
                res_dt = first if op.out_np is None else op.out_np
            elif p == "bool":
                res_dt = _BOOL
            elif first is not None and first.kind in _INT_KINDS:   # int_to_float
                return _call_general(op, args, out)
            else:
                res_dt = first
            if op.nondeterministic and _deterministic[0]:
                _nondeterministic_alert(op, args)
            return _run_kernel(op, args, vals, res_dt, req, out)
    return _call_general(op, args, out)


# torch's wording of the out= refusal where its op is no plain out= kernel: factories name
# the ATen op, these resize their output first (and refuse to resize a tensor needing grad)
_OUT_GRAD_RESIZE = frozenset(("randn", "empty"))
_OUT_GRAD_NAMES = {"softmax": "aten::softmax", "linalg_inv": "linalg_inv_ex"}


def _check_out_grad(op, args, out):
    """torch refuses ``out=`` under grad mode when an argument or ``out`` requires grad
    (checked before the kernel runs: nothing is resized or written)."""
    found = False
    for o in (out if isinstance(out, (tuple, list)) else (out,)):
        if isinstance(o, Tensor) and o._requires_grad:
            found = True
    if found and op.public_name in _OUT_GRAD_RESIZE:      # whatever the grad mode
        raise RuntimeError("cannot resize variables that require grad")
    if not state.grad_enabled or not op.differentiable:   # (argmax, eq, nonzero...: written)
        return
    if not found:
        for i, is_list, _ in op.tensor_args:
            a = args[i]
            for x in (a if is_list and isinstance(a, (tuple, list)) else (a,)):
                if isinstance(x, Tensor) and x._requires_grad:
                    found = True
    if found:
        raise _out_grad_error(op)


def _out_grad_error(op):
    name = op.public_name
    if name in _OUT_GRAD_RESIZE:
        return RuntimeError("cannot resize variables that require grad")
    name = _OUT_GRAD_NAMES.get(name) or (
        name if getattr(op, "tensor_args", True) else f"aten::{name}")
    return RuntimeError(f"{name}(): functions with out=... arguments don't support automatic "
                        f"differentiation, but one of the arguments requires grad.")


def _call_general(op, args, out):
    if op.is_inplace:
        _overlap.check_inplace(op, args)        # torch's refusals of overlapping sources
    if op.composite is not None:
        if _needs_tf_check(op, args):
            types = _torch_function_args(op, args) if not _tf_disabled() else None
            if types:
                return _handle_torch_function(op, args, out, types)
            _check_tensor_args(op, args)
        result = _run_composite(op, args)
        if op.is_inplace:           # composite in-place variant: write the result back
            return args[0].copy_(result)
        if out is None:
            return result
        _overlap.check_out(op, args, out)
        return _write_out(op, result, out)
    if op.check_inputs is not None:
        op.check_inputs(args)
    vals = list(args)
    req = False
    first = None          # dtype of the first promoting tensor
    uniform = True
    scalars = None
    for i, is_list, optional in op.tensor_args:
        a = vals[i]
        t = type(a)
        if t is Tensor:
            arr = a._data
        elif t in _SCALAR_CATEGORY:
            if scalars is None:
                scalars = [a]
            else:
                scalars.append(a)
            continue
        elif isinstance(a, Tensor):
            if not _opted_out(t):
                if not _tf_disabled():
                    return _handle_torch_function(op, args, out,
                                                  _torch_function_args(op, args))
            elif t not in PLAIN_TENSOR_TYPES:
                PLAIN_TENSOR_TYPES[t] = True
            arr = a._data
        elif is_list and isinstance(a, (list, tuple)):
            arrs = []
            for k, x in enumerate(a):
                if not isinstance(x, Tensor):
                    if hasattr(type(x), "__torch_function__"):
                        return _handle_torch_function(op, args, out,
                                                      _torch_function_args(op, args))
                    from ember._legacy import type_name
                    raise TypeError(f"expected Tensor as element {k} in argument {i}, but "
                                    f"got {type_name(type(x))}")
                if type(x) is not Tensor and not _opted_out(type(x)) and not _tf_disabled():
                    return _handle_torch_function(op, args, out,
                                                  _torch_function_args(op, args))
                if x._requires_grad:
                    req = True
                xa = x._data
                d = xa.dtype
                if first is None:
                    first = d
                elif d is not first:
                    uniform = False
                arrs.append(xa)
            vals[i] = arrs
            continue
        elif a is None and optional:
            continue
        elif isinstance(a, np.generic) and a.ndim == 0:
            a = vals[i] = _np_number(a)
            if scalars is None:
                scalars = [a]
            else:
                scalars.append(a)
            continue
        elif hasattr(t, "__torch_function__") and not _tf_disabled():
            return _handle_torch_function(op, args, out, _torch_function_args(op, args))
        else:
            _bad_arg(op, i, a)
        vals[i] = arr
        if a._requires_grad:
            req = True
        d = arr.dtype
        if first is None:
            first = d
        elif d is not first:
            uniform = False

    # ---- type promotion
    promote = op.promote
    res_dt = None
    if promote is not None:
        if uniform and first is not None and (
                scalars is None or _scalars_fit(first, scalars)):
            cd = first
        else:
            cd = _promote(op, args, vals)
            if cd.kind == "V" and cd == _dtype.complex32.np:
                return _as_complex32(op, args, out)     # float16 with a complex number
            if op.check_operands is not None:
                op.check_operands(args)
            if cd.itemsize == 2 and op.public_name in _SCALAR_OTHER:
                _scalar_other(vals, cd)
            _cast_inputs(op, vals, cd)
        if promote == "int_to_float" and cd.kind in _INT_KINDS:
            cd = _dtype._default[0].np
            _cast_inputs(op, vals, cd)
        res_dt = np.dtype(np.bool_) if promote == "bool" else cd
    if op.out_np is not None:
        res_dt = op.out_np
    if op.nondeterministic and _deterministic[0]:
        _nondeterministic_alert(op, args)
    if op.is_inplace:
        return _call_inplace(op, args, vals, res_dt, req)
    if op.mutated_args:
        return _call_mutating(op, args, vals, req)
    return _run_kernel(op, args, vals, res_dt, req, out)


def _call_mutating(op, args, vals, req):
    """A record that writes into several arguments and returns nothing (``op.mutated_args``:
    ``_fused_adam_``): the kernel writes into their arrays, then each written tensor's
    version is bumped. Autograd records nothing: with grad mode on, writing into a tensor
    that requires grad is refused (torch's error for in-place on a leaf)."""
    written = []
    for i in op.mutated_args:
        a = args[i]
        written.extend(a if isinstance(a, (list, tuple)) else () if a is None else (a,))
    for t in written:
        if req and t._requires_grad and state.grad_enabled:
            raise RuntimeError(f"{op.public_name}: a leaf Variable that requires grad is being "
                               f"used in an in-place operation.")
        arr = t._data
        if type(arr) is not _ndarray or not arr.flags.writeable:
            raise RuntimeError(f"{op.public_name}: cannot write into a tensor whose memory "
                               f"is read-only or has no data (shape {tuple(arr.shape)})")
    try:
        op.kernel(*vals)
    except MemoryError as e:
        raise allocation_error(e) from None
    for t in written:
        _graph.bump_version(t)
    return None


def _run_kernel(op, args, vals, res_dt, req, out):
    """Call the kernel on unwrapped ``vals``, wrap the result(s), record autograd."""
    try:
        res = op.kernel(*vals)
    except ValueError as e:
        _raise_broadcast_error(vals, e)
        raise
    except OverflowError as e:
        res = _retry_wrapped_ints(op, vals, res_dt, e)
    except FloatingPointError as e:
        raise RuntimeError(f"{op.public_name}: {e}") from None
    except MemoryError as e:
        raise allocation_error(e) from None

    # ---- wrap
    if op.num_outputs == 1 and not op.returns_list:
        if type(res) is not _ndarray:
            res = np.asarray(res)
        if res_dt is not None and res.dtype is not res_dt and res.dtype != res_dt:
            res = res.astype(res_dt)
        result = _make(res)
        if op.is_view:
            _graph.set_view(result, args[0], op, args)
        outputs = (result,)
    else:
        outputs = tuple(_make(r if type(r) is _ndarray else np.asarray(r)) for r in res)
        if op.is_view:
            for k, o in enumerate(outputs):
                _graph.set_view(o, args[0], op, args, k)
        result = list(outputs) if op.returns_list else outputs
    if req and state.grad_enabled and op.differentiable:
        _graph.record(op, args, outputs)
    if out is not None:
        _overlap.check_out(op, args, out)
        if op.public_name in _SCALAR_BOUNDS and _scalar_bounds(args):
            _overlap_found_dtype(result, out)
        return _write_out(op, result, out)
    if op.num_outputs > 1 and not op.returns_list:
        return wrap_returns(op, outputs)
    return result


# clamp with number bounds is torch's ``clamp(Tensor, Scalar?, Scalar?)``: its ``out=`` must
# have the result's dtype, and in place its cast error names the C++ type
_SCALAR_BOUNDS = frozenset(("clamp", "clamp_min", "clamp_max", "clamp_", "clamp_min_",
                            "clamp_max_"))


def _scalar_bounds(args):
    """Is a bound a number (torch's Scalar overload)?"""
    for b in args[1:3]:
        if b is not None and not isinstance(b, Tensor):
            return True
    return False


def _overlap_found_dtype(result, out):
    if isinstance(out, Tensor) and out._data.dtype != result._data.dtype:
        raise RuntimeError(f"Found dtype {_dtype.scalar_type_name(out._data.dtype)} but "
                           f"expected {_dtype.scalar_type_name(result._data.dtype)}")


_TF_LOCAL = []          # ember.overrides' thread-local switch (imported once: a cycle)


def _tf_disabled():
    if not _TF_LOCAL:
        from ember.overrides import _local
        _TF_LOCAL.append(_local)
    return _TF_LOCAL[0].disabled


def _call_plain(op, args, out):
    """``_call`` with the ``__torch_function__`` protocol disabled (subclasses as Tensor)."""
    from ember.overrides import _disabled_torch_function
    with _disabled_torch_function():
        return _call(op, args, out)


def _retry_wrapped_ints(op, vals, res_dt, err):
    """A Python int outside an integer dtype's range wraps around, as in torch."""
    if res_dt is None or res_dt.kind not in "iub":
        raise RuntimeError(f"{op.public_name}: {err}") from None
    vals = [np.array(v, dtype=np.int64).astype(res_dt) if type(v) is int else v for v in vals]
    return op.kernel(*vals)


def _needs_tf_check(op, args):
    for i, is_list, optional in op.tensor_args:
        a = args[i]
        if type(a) is not Tensor and not isinstance(a, (int, float, bool, complex)) and (
                a is not None or not optional):
            return True
    return False


def _scalars_fit(first, scalars):
    cat = _NP_CATEGORY.get(first)
    if cat is None:
        return False
    for s in scalars:
        sc = _SCALAR_CATEGORY.get(type(s))
        if sc is None or sc > cat:
            return False
    return True


def _np_number(a):
    """The Python number torch reads from a NumPy scalar operand: a ``numpy.bool_`` is no
    bool to torch's parser but a float (``int_tensor + np.True_`` is float32)."""
    if type(a) is np.bool_:
        return float(a)
    if type(a) is np.complex64:     # nor a complex64 one a complex: its float(), warning
        import warnings
        from ember._creation import _user_stacklevel
        warnings.warn("Casting complex values to real discards the imaginary part",
                      np.exceptions.ComplexWarning, stacklevel=_user_stacklevel())
        return float(a.real)
    return a.item()


def _promote(op, args, vals):
    """General torch promotion over the promoting arguments (slow path, cached)."""
    key = [op.promote]
    for i in op.promote_args:
        a = args[i]
        if isinstance(a, Tensor):
            key.append((a._data.dtype, a._data.ndim > 0))
        elif isinstance(a, (list, tuple)):
            for x in a:
                key.append((x._data.dtype, x._data.ndim > 0))
        elif a is None:
            continue
        else:
            key.append(type(a) if not isinstance(a, np.generic) else type(_np_number(a)))
    key.append(_dtype._default[0])
    key = tuple(key)
    cd = _promotion_cache.get(key)
    if cd is None:
        groups = ([], [], [])
        for k in key[1:-1]:
            if isinstance(k, tuple):
                groups[0 if k[1] else 1].append(_NP_TO_DT[k[0]])
            else:
                groups[2].append(_dtype.scalar_dtype(k(0) if k is not bool else False))
        r = _dtype.promote_operands(*groups)
        if r is None:                      # nothing to promote (e.g. an empty tensor list)
            return _dtype.default_float().np
        cd = r.np
        _promotion_cache[key] = cd
    return cd


def _as_complex32(op, args, out):
    """torch computes float16 with a complex number (or 0-d complex tensor) in complex32:
    the float16 operands become complex32 tensors, and the complex32 layer runs the op
    (or refuses it, as torch's kernels do)."""
    c32 = _dtype.complex32
    if op.is_inplace:
        raise RuntimeError(f"result type ComplexHalf can't be cast to the desired output type "
                           f"{_dtype.scalar_type_name(args[0]._data.dtype)}")
    new = list(args)
    for i in op.promote_args:
        a = new[i]
        if isinstance(a, Tensor) and a._data.dtype == np.float16:
            new[i] = a.to(c32)
        elif isinstance(a, (list, tuple)):
            new[i] = type(a)(x.to(c32) if isinstance(x, Tensor) and
                             x._data.dtype == np.float16 else x for x in a)
    from ember._ops import complex32
    complex32.enable()
    return _call(op, tuple(new), out)


# Note [half scalars] (ember/_kernels/half_arith.py): a 0-d tensor given second to these
# ops reaches torch's half kernels as a number (mul/div: unrounded), not cast to the half
# dtype first as a 0-d tensor given first is.
_SCALAR_OTHER = frozenset(("add", "sub", "mul", "div", "add_", "sub_", "mul_", "div_"))


def _scalar_other(vals, cd):
    v = vals[1]
    if type(v) is _ndarray and v.ndim == 0 and v.dtype != cd and v.dtype.kind in "fiu" and \
            cd.name in ("float16", "bfloat16") and type(vals[0]) is _ndarray and \
            vals[0].dtype == cd:
        vals[1] = v.item()


def _cast_inputs(op, vals, cd):
    for i in op.promote_args:
        v = vals[i]
        if type(v) is _ndarray:
            if v.dtype != cd:
                vals[i] = v.astype(cd)
        elif type(v) is list:
            vals[i] = [x if x.dtype == cd else x.astype(cd) for x in v]


def _raise_broadcast_error(vals, err):
    """NumPy's "could not be broadcast" ValueError from a kernel as torch's RuntimeError
    naming the mismatched sizes (returns when ``err`` is something else)."""
    text = str(err)
    if "broadcast" not in text and "must match the size of tensor b" not in text or \
            text.startswith("shape mismatch: value tensor"):       # index_put_'s own text
        return
    from ember._kernels.util import broadcast_shape
    shape = None
    for v in vals:
        if isinstance(v, _ndarray):          # (a meta tensor's Placeholder too)
            shape = v.shape if shape is None else broadcast_shape(shape, v.shape)


def check_inplace_target(self, req, grad_on):
    """torch's refusals of an in-place write into ``self`` (``req``: another argument
    requires grad): leaves that require grad and their views, views autograd cannot
    rebase, inference tensors."""
    if grad_on and self._requires_grad and self._grad_fn is None and self._view_info is None:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place "
                           "operation.")
    if self._meta is not None or self._storage_base is not None:
        _graph.check_inplace(self, req)     # views that can't be rebased, inference tensors
    if grad_on and self._view_info is not None and _graph.is_view_of_leaf(self):
        raise RuntimeError("a view of a leaf Variable that requires grad is being used in an "
                           "in-place operation.")


def _call_inplace(op, args, vals, res_dt, req):
    """In-place variant: compute out of place, check the cast, write into argument 0."""
    self = args[0]
    if not isinstance(self, Tensor):
        raise TypeError(f"{op.public_name}(): self must be a Tensor")
    grad_on = state.grad_enabled
    check_inplace_target(self, req, grad_on)
    dst = self._data
    if res_dt is not None and _NP_CATEGORY[res_dt] > _NP_CATEGORY[dst.dtype]:
        to = _dtype.scalar_type_name(dst.dtype)
        if op.public_name in _SCALAR_BOUNDS and _scalar_bounds(args):
            from ember._kernels.shape import _c_name
            to = _c_name(dst.dtype)
        raise RuntimeError(f"result type {_dtype.scalar_type_name(res_dt)} "
                           f"can't be cast to the desired output type {to}")
    recording = (req or self._requires_grad) and grad_on and op.differentiable
    kout = op.kernel_out
    if kout is not None and res_dt == dst.dtype and dst.flags.writeable and \
            _fits_out(vals, dst):
        # write straight into the destination: the record (made first) snapshots self if
        # its backward needs the old value; ufuncs handle inputs overlapping ``dst``
        node = _graph.record(op, args, None, inplace=True) if recording else None
        kout(dst, *vals)
        _graph.bump_version(self)
        if node is not None:
            _graph.rebase_history(self, node)
        return self
    try:
        res = op.kernel(*vals)
    except (ValueError, RuntimeError) as e:
        # an in-place op names ``self`` first in a broadcast error, whatever its kernel does
        _raise_broadcast_error(vals, e)
        raise
    except MemoryError as e:
        raise allocation_error(e) from None
    if type(res) is not _ndarray:
        res = np.asarray(res)
    if res.shape != dst.shape:
        raise RuntimeError(f"output with shape {list(dst.shape)} doesn't match the broadcast "
                           f"shape {list(res.shape)}")
    node = _graph.record(op, args, None, inplace=True) if recording else None
    if not dst.flags.writeable:
        write_readonly(op.public_name, dst, res, _overlap_rule(op, args))
    else:
        np.copyto(dst, res, casting="unsafe")
    _graph.bump_version(self)
    if node is not None:
        _graph.rebase_history(self, node)
    return self


def _fits_out(vals, dst):
    """Every array in ``vals`` has ``dst``'s dtype and broadcasts to ``dst``'s shape."""
    dt = dst.dtype
    shape = dst.shape
    for v in vals:
        if type(v) is _ndarray:
            if v.dtype != dt:
                return False
            s = v.shape
            if s != shape:
                n = len(s)
                if n > len(shape) or any(a != 1 and a != b for a, b in
                                         zip(s, shape[len(shape) - n:])):
                    return False
        elif v is not None and not isinstance(v, (bool, int, float, complex, str)):
            return False
    return True


def _write_out(op, result, out):
    """``out=``: resize (as torch does) and copy the result into the given tensor(s)."""
    check = getattr(op, "check_out", None)          # torch's per-op contract (out_contracts)
    if check is not None:
        check(op, result, out)
    if state.grad_enabled:
        res_list = result if isinstance(result, (tuple, list)) else (result,)
        outs = out if isinstance(out, (tuple, list)) else (out,)
        if any(r._requires_grad for r in res_list) or any(
                isinstance(o, Tensor) and o._requires_grad for o in outs):
            raise _out_grad_error(op)
    if isinstance(result, (tuple, list)):
        for r, o in zip(result, out):
            _copy_out(op, r, o)
        if op.num_outputs > 1 and not op.returns_list:
            return wrap_returns(op, tuple(out))
        return out
    _copy_out(op, result, out)
    return out


def _copy_out(op, r, o):
    if not isinstance(o, Tensor):
        raise TypeError(f"{op.public_name}(): argument 'out' must be Tensor, not "
                        f"{type(o).__name__}")
    src = r._data
    if _NP_CATEGORY[src.dtype] > _NP_CATEGORY[o._data.dtype]:
        raise RuntimeError(f"result type {_dtype.scalar_type_name(src.dtype)} "
                           f"can't be cast to the desired output type "
                           f"{_dtype.scalar_type_name(o._data.dtype)}")
    if o._data.shape != src.shape:
        if o._storage_base is not None:
            raise RuntimeError(f"{op.public_name}(): out= tensor is a view with shape "
                               f"{list(o._data.shape)}; cannot resize it to {list(src.shape)}")
        if o._data.size:
            import warnings
            from ember._runtime_flags import user_stacklevel
            warnings.warn(f"An output with one or more elements was resized since it had shape "
                          f"{list(o._data.shape)}, which does not match the required output "
                          f"shape {list(src.shape)}. This behavior is deprecated, and in a "
                          f"future PyTorch release outputs will not be resized unless they have "
                          f"zero elements. You can explicitly reuse an out tensor t by resizing "
                          f"it, inplace, to zero elements with t.resize_(0).", UserWarning,
                          stacklevel=user_stacklevel())
        o._data = np.empty_like(src, o._data.dtype)       # the result's layout, as torch
    if not o._data.flags.writeable:
        write_readonly(op.public_name, o._data, src, _OVERLAP_OUT.get(op.public_name))
    else:
        np.copyto(o._data, src, casting="unsafe")
    _graph.bump_version(o)


# torch's overlap contract: an output with a dimension of size > 1 and stride 0 (an expanded
# tensor) is refused ("unsupported operation...") by every op but these, which write into it
_OVERLAP_MSG = ("unsupported operation: more than one element of the written-to tensor refers "
                "to a single memory location. Please clone() the tensor before performing the "
                "operation.")
_OVERLAP_INPLACE = {"fill_": "allow", "zero_": "allow", "tril_": "allow", "triu_": "allow",
                    "baddbmm_": "accumulate", "index_put_": "warn", "masked_fill_": "warn",
                    "index_fill_": "warn"}
_OVERLAP_OUT = dict.fromkeys((
    "amax", "amin", "prod", "std", "var", "norm", "bmm", "mv", "dot", "zeros", "ones", "full",
    "empty", "arange", "range", "linspace", "logspace", "tril", "triu", "masked_select"),
    "allow") | {"sum": "sum", "nansum": "sum", "eye": "zeros_first"}
_OVERLAP_HINT = {"index_put_": "tensor[indices] = tensor", "masked_fill_": "tensor[mask] = scalar",
                 "index_fill_": "tensor[mask] = scalar"}


def _overlap_rule(op, args):
    """How torch treats an expanded ``self`` for in-place ``op``: None (refused), "allow" or
    "warn" (written, with a deprecation warning). ``fill_`` of a Tensor value is refused."""
    name = op.public_name
    if name == "fill_" and isinstance(args[1], Tensor):
        return None
    if name == "copy_" and args[1] is args[0]:        # a copy onto itself writes nothing
        return "allow"
    if name == "index_put_" and _mask_fill(args):
        return "warn_mask"                # torch's index_put_ then runs masked_fill_
    return _OVERLAP_INPLACE.get(name)


def _mask_fill(args):
    """index_put_ arguments torch turns into masked_fill_: one bool mask, a 0-d value, no
    accumulation."""
    idx, value = args[1], args[2]
    if not (isinstance(idx, (tuple, list)) and len(idx) == 1) or args[3]:
        return False
    mask = idx[0]
    dt = getattr(mask, "dtype", None)
    return (dt == np.bool_ or str(dt) == "torch.bool") and np.ndim(
        value._data if isinstance(value, Tensor) else value) == 0


def has_internal_overlap(a):
    """torch's definite overlap: a dimension of size > 1 with stride 0 (shape (n,), strides)."""
    return a.size > 1 and any(st == 0 and n > 1 for n, st in zip(a.shape, a.strides))


def _memory_writable(a):
    """Whether the memory under the read-only view ``a`` belongs to a writable array."""
    from ember._kernels.shape import _Iface
    x = a
    while x is not None:
        if isinstance(x, _ndarray):
            if x.flags.writeable:
                return True
            x = x.base
        else:       # from_address's carrier, as_strided's DummyArray: the memory's owner
            x = x._keep if isinstance(x, _Iface) else getattr(x, "base", None)
    return False


def write_readonly(name, dst, res, rule):
    """Write ``res`` into the read-only array ``dst`` of an expanded view (stride 0): torch's
    overlap error unless ``rule`` allows it; then only the elements whose value changes are
    stored, so a write into one of several aliases of a location is what the others see."""
    if not _memory_writable(dst):
        raise RuntimeError(f"{name}: cannot write into a tensor whose memory is read-only")
    overlap = has_internal_overlap(dst)
    if overlap and rule is None:
        raise RuntimeError(_OVERLAP_MSG)
    if overlap and rule in ("warn", "warn_mask"):
        import sys
        import warnings
        level, frame = 2, sys._getframe(1)
        while frame is not None and (frame.f_globals.get("__name__", "").startswith("ember")
                                     or frame.f_code.co_filename.startswith("<ember")):
            level, frame = level + 1, frame.f_back        # point at the user's line
        warnings.warn(f"Use of {name} on expanded tensors is deprecated. Please clone() the "
                      f"tensor before performing this operation. This also applies to advanced "
                      f"indexing e.g. {_OVERLAP_HINT[name]}", UserWarning, stacklevel=level)
        if rule == "warn_mask":
            warnings.warn(f"Use of masked_fill_ on expanded tensors is deprecated. Please "
                          f"clone() the tensor before performing this operation. This also "
                          f"applies to advanced indexing e.g. {_OVERLAP_HINT['masked_fill_']}",
                          UserWarning, stacklevel=level)
    from ember._kernels.shape import address, from_address
    alias = from_address(address(dst), dst.shape, dst.strides, dst.dtype, dst, True)
    if not overlap:
        np.copyto(alias, res, casting="unsafe")
        return
    res = np.broadcast_to(np.asarray(res).astype(dst.dtype, copy=False), dst.shape)
    every = (slice(None),) * dst.ndim
    if rule == "accumulate":          # each alias adds its update (baddbmm_ in place)
        np.add.at(alias, every, res - dst)
        return
    if rule in ("sum", "zeros_first"):    # out= kernels that zero the output first
        alias[...] = 0
        if rule == "sum":                  # ... and accumulate into it (sum out=)
            np.add.at(alias, every, res)
            return
    raw = np.dtype((np.void, dst.itemsize))
    changed = res.view(raw) != dst.view(raw)
    alias[changed] = res[changed]


def _nondeterministic_alert(op, args):
    """``op.nondeterministic`` is True, or a predicate of the arguments that returns whether
    to alert, or the name torch alerts with (``put`` alerts as ``put_``)."""
    nd = op.nondeterministic
    hit = True if nd is True else nd(args)
    if hit:
        from ember._determinism import alert_not_deterministic
        alert_not_deterministic(hit if isinstance(hit, str) else op.public_name, stacklevel=5)
