"""torch's argument-parser TypeError for the ops it overloads ("sum() received an invalid
combination of arguments - got (str), but expected one of: ..."), built from the call as the
user wrote it (``_dispatch.call_site``) when binding an argument fails: nothing here runs on a
successful call.

The signatures are torch's, in its order, as its parser lists them for the method form
(``x.sum('a')``) and the function form (``torch.sum(x, 'a')``). Under each signature torch
explains the mismatch ("didn't match because some of the arguments have invalid types:
(!str!)", or "... keywords were incorrect: dim") only when the signature has no keyword-only
arguments and takes as many arguments as the call gives, or none (found by experiment). When exactly one
signature takes as many arguments as the call gives, torch names the argument that failed
instead (``x.sum(0, 'a')``: "argument 'keepdim' (position 2) must be bool, not str").
"""
from __future__ import annotations

import numbers
import re

import numpy as np

_REDUCE = ("(*, torch.dtype dtype = None)",
           "(tuple of ints dim, bool keepdim = False, *, torch.dtype dtype = None)")
_STD = ("(tuple of ints dim, bool unbiased = True, bool keepdim = False)",
        "(tuple of ints dim = None, *, Number correction = None, bool keepdim = False)",
        "(bool unbiased = True)")
_MINMAX = ("()", "(Tensor other)", "(int dim, bool keepdim = False)")
_ALLANY = ("()", "(tuple of ints dim = None, bool keepdim = False)",
           "(int dim, bool keepdim = False)")

METHOD = {
    "sum": _REDUCE, "mean": _REDUCE,
    "prod": ("(*, torch.dtype dtype = None)",
             "(int dim, bool keepdim = False, *, torch.dtype dtype = None)"),
    "std": _STD, "var": _STD,
    "min": _MINMAX, "max": _MINMAX,
    "all": _ALLANY, "any": _ALLANY,
    "view": ("(torch.dtype dtype)", "(tuple of ints size)"),
    "to": ("(torch.device device = None, torch.dtype dtype = None, bool non_blocking = False, "
           "bool copy = False, *, torch.memory_format memory_format = None)",
           "(torch.dtype dtype, bool non_blocking = False, bool copy = False, *, "
           "torch.memory_format memory_format = None)",
           "(Tensor tensor, bool non_blocking = False, bool copy = False, *, "
           "torch.memory_format memory_format = None)"),
    "squeeze": ("()", "(int dim)", "(tuple of ints dim)"),
    "count_nonzero": ("(int dim = None)", "(tuple of ints dim)"),
    "narrow": ("(int dim, Tensor start, int length)", "(int dim, int start, int length)"),
    "clamp": ("(Tensor min = None, Tensor max = None)", "(Number min = None, Number max = None)"),
    "pow": ("(Tensor exponent)", "(Number exponent)"),
    "masked_fill": ("(Tensor mask, Tensor value)", "(Tensor mask, Number value)"),
    "repeat_interleave": ("(Tensor repeats, int dim = None, *, int output_size = None)",
                          "(int repeats, int dim = None, *, int output_size = None)"),
    "movedim": ("(int source, int destination)",
                "(tuple of ints source, tuple of ints destination)"),
    "tensor_split": ("(tuple of ints indices, int dim = 0)",
                     "(Tensor tensor_indices_or_sections, int dim = 0)",
                     "(int sections, int dim = 0)"),
}
METHOD.update({"moveaxis": METHOD["movedim"], "clamp_": METHOD["clamp"], "pow_": METHOD["pow"],
               "masked_fill_": METHOD["masked_fill"], "squeeze_": METHOD["squeeze"]})
for _n in ("clamp_min", "clamp_max"):
    _arg = _n[6:]
    METHOD[_n] = METHOD[_n + "_"] = (f"(Tensor {_arg})", f"(Number {_arg})")

_STD_F = ("(Tensor input, tuple of ints dim, bool unbiased = True, bool keepdim = False, *, "
          "Tensor out = None)",
          "(Tensor input, tuple of ints dim = None, *, Number correction = None, bool keepdim = "
          "False, Tensor out = None)",
          "(Tensor input, bool unbiased = True)")
_MINMAX_F = ("(Tensor input, *, Tensor out = None)",
             "(Tensor input, Tensor other, *, Tensor out = None)",
             "(Tensor input, int dim, bool keepdim = False, *, tuple of Tensors out = None)")
_ALLANY_F = ("(Tensor input, *, Tensor out = None)",
             "(Tensor input, tuple of ints dim = None, bool keepdim = False, *, Tensor out = "
             "None)",
             "(Tensor input, int dim, bool keepdim = False, *, Tensor out = None)")
FUNCTION = {
    "sum": ("(Tensor input, *, torch.dtype dtype = None)",
            "(Tensor input, tuple of ints dim, bool keepdim = False, *, torch.dtype dtype = "
            "None, Tensor out = None)"),
    "mean": ("(Tensor input, *, torch.dtype dtype = None, Tensor out = None)",
             "(Tensor input, tuple of ints dim, bool keepdim = False, *, torch.dtype dtype = "
             "None, Tensor out = None)"),
    "prod": ("(Tensor input, *, torch.dtype dtype = None)",
             "(Tensor input, int dim, bool keepdim = False, *, torch.dtype dtype = None, "
             "Tensor out = None)"),
    "moveaxis": ("(Tensor input, int source, int destination)",
                 "(Tensor input, tuple of ints source, tuple of ints destination)"),
    "std": _STD_F, "var": _STD_F, "min": _MINMAX_F, "max": _MINMAX_F,
    "all": _ALLANY_F, "any": _ALLANY_F,
    "squeeze": ("(Tensor input)", "(Tensor input, int dim)", "(Tensor input, tuple of ints dim)"),
    "count_nonzero": ("(Tensor input, int dim = None)", "(Tensor input, tuple of ints dim)"),
    "narrow": ("(Tensor input, int dim, Tensor start, int length)",
               "(Tensor input, int dim, int start, int length)"),
    "clamp": ("(Tensor input, Tensor min = None, Tensor max = None, *, Tensor out = None)",
              "(Tensor input, Number min = None, Number max = None, *, Tensor out = None)"),
    "pow": ("(Tensor input, Tensor exponent, *, Tensor out = None)",
            "(Number self, Tensor exponent, *, Tensor out = None)",
            "(Tensor input, Number exponent, *, Tensor out = None)"),
    "masked_fill": ("(Tensor input, Tensor mask, Tensor value)",
                    "(Tensor input, Tensor mask, Number value)"),
    "movedim": ("(Tensor input, int source, int destination)",
                "(Tensor input, tuple of ints source, tuple of ints destination)"),
    "tensor_split": ("(Tensor input, tuple of ints indices, int dim = 0)",
                     "(Tensor input, Tensor tensor_indices_or_sections, int dim = 0)",
                     "(Tensor input, int sections, int dim = 0)"),
    "repeat_interleave": ("(Tensor input, Tensor repeats, int dim = None, *, int output_size = "
                          "None)",
                          "(Tensor repeats, *, int output_size = None)",
                          "(Tensor input, int repeats, int dim = None, *, int output_size = "
                          "None)"),
}


def _type_name(v, detail=False):
    """torch's name of an argument's type ("got (list)", "!list of [int]!" in detail)."""
    from ember import Tensor, dtype
    if isinstance(v, Tensor):
        return "Parameter" if type(v).__name__ == "Parameter" else "Tensor"
    if isinstance(v, dtype):
        return "torch.dtype"
    if isinstance(v, (list, tuple)) and detail:      # every element: "tuple of (float, int)"
        names = ", ".join(_type_name(e) for e in v)
        return f"tuple of ({names})" if isinstance(v, tuple) else f"list of [{names}]"
    from ember._legacy import type_name
    return type_name(type(v))


def _fits(typ, v):
    from ember import Tensor, dtype
    if v is None:
        return False
    if typ == "Tensor":
        return isinstance(v, Tensor)
    if typ == "Number":
        return isinstance(v, (numbers.Number, np.number, np.bool_)) or isinstance(v, Tensor)
    if typ in ("int", "bool"):
        ok = (bool, np.bool_) if typ == "bool" else (numbers.Integral,)
        return isinstance(v, ok) or isinstance(v, Tensor) and v.numel() == 1
    if typ == "float":
        return isinstance(v, (numbers.Real, np.number))
    if typ == "str":
        return isinstance(v, str)
    if typ == "torch.dtype":
        return isinstance(v, dtype)
    if typ == "tuple of ints":          # (taken by its first element: not a bool)
        if isinstance(v, (list, tuple)):
            return all(isinstance(e, numbers.Integral) for e in v) and not (
                v and isinstance(v[0], (bool, np.bool_)))
        return isinstance(v, numbers.Integral)
    return True


_PARAM = re.compile(r"^(.*?) (\w+)(?: = .*)?$")


def _params(sig):
    """[(type, name, keyword only)] of a signature string."""
    out, kw_only = [], False
    body = sig[1:-1]
    for part in filter(None, (p.strip() for p in body.split(", "))):
        if part == "*":
            kw_only = True
            continue
        m = _PARAM.match(part)
        out.append((m.group(1), m.group(2), kw_only))
    return out


def _detail(sig, pos, kw):
    """The line torch prints under ``sig`` for this call, or None."""
    params = _params(sig)
    if any(p[2] for p in params) or params and len(params) != len(pos) + len(kw):
        return None
    names = {n: t for t, n, _ in params}
    bad = [k for k in kw if k not in names]
    if bad:
        return f"didn't match because some of the keywords were incorrect: {', '.join(bad)}"
    shown = []
    for i, v in enumerate(pos):
        # (torch's explanation marks every "tuple of ints" value, well-typed ones too)
        ok = i < len(params) and not params[i][2] and params[i][0] != "tuple of ints" and \
            _fits(params[i][0], v)
        name = _type_name(v, True)
        shown.append(name if ok else f"!{name}!")
    n_pos = len(shown)
    for k in sorted(kw, key=list(names).index):     # (keywords in the signature's order)
        v = kw[k]
        name = _type_name(v, True)
        ok = names[k] != "tuple of ints" and _fits(names[k], v)
        shown.append(f"{k}={name}" if ok else f"!{k}={name}!")
    if all(not s.startswith("!") for s in shown):
        return None
    text = ", ".join(shown) if n_pos else "".join(s + ", " for s in shown)
    return f"didn't match because some of the arguments have invalid types: ({text})"


def _got(pos, kw):
    parts = [_type_name(v) for v in pos]
    kws = [f"{k}={_type_name(v)}" for k, v in kw.items()]
    if parts:
        return ", ".join(parts + kws)
    return "".join(k + ", " for k in kws)


def call_arguments(front, method, extra=None, caller=None):
    """(positional values, keyword values) of the user's call of generated ``front``, or
    None when its bytecode does not tell (``extra``: the keywords it took as ``**``;
    ``caller``: the user's frame when wrappers stand between it and ``front``)."""
    from ember._dispatch import call_count, _call_keywords
    argc, kw_names = call_count(front) if caller is None else _call_keywords(caller)
    if argc is None:
        return None
    code, loc = front.f_code, front.f_locals
    names = list(code.co_varnames[:code.co_argcount])
    values = [loc[n] for n in names]
    if code.co_flags & 0x04:                          # *varargs (view(*size), permute(*dims))
        values += list(loc[code.co_varnames[code.co_argcount + code.co_kwonlyargcount]])
    if method:
        values = values[1:]
    n_pos = argc - len(kw_names)
    if n_pos < 0 or n_pos > len(values):
        return None
    kw = {}
    if extra is None:
        extra = loc.get("_kw") or {}        # keywords a front takes as ``**_kw``
    for k in kw_names:
        v = extra[k] if k in extra else loc.get(k, loc.get(f"_va_{k}"))
        kw[k] = v
    return values[:n_pos], kw


def overloaded_text(fname, sigs, pos, kw):
    shown = dict(reversed(list(kw.items())))     # (keywords in reverse of the call's order)
    lines = [f"{fname}() received an invalid combination of arguments - got "
             f"({_got(pos, shown)}), but expected one of:"]
    for sig in sigs:
        lines.append(f" * {sig}")
        d = _detail(sig, pos, kw)
        if d is not None:
            lines.append(f"      {d}")
    return "\n".join(lines) + "\n"


def raise_overloaded(fname, site):
    """Raise torch's overload TypeError for op ``fname`` called at ``site``
    (``_dispatch.call_site``'s answer) when torch overloads it; else return."""
    front, method, _ = site
    if front is None:
        return
    sigs = (METHOD if method else FUNCTION).get(fname)
    if sigs is None:
        return
    given = call_arguments(front, method)
    if given is None:
        return
    pos, kw = given
    n = len(pos) + len(kw)
    plausible = 0
    for sig in sigs:
        params = _params(sig)
        required = sum(1 for p in _split(sig) if " = " not in p and p != "*")
        if required <= n <= len(params):
            plausible += 1
    if plausible == 1:          # torch's parser then names the one argument that failed
        return
    raise TypeError(overloaded_text(fname, sigs, pos, kw))


def _split(sig):
    return [p.strip() for p in sig[1:-1].split(", ") if p.strip()]



def hand_written(fname, input, params):
    """torch's overload TypeError for a hand-written front shared by ``x.name(...)`` and
    ``torch.name(x, ...)``; ``params``: (name, value) of the arguments after the input that
    the call gave. Method or function is told by the user's call's argument count
    (``x.min(1.5)`` passes one, ``torch.min(x, 1.5)`` two). None when the call site does not
    tell (the caller raises its own error)."""
    method, kw_names = _method_call(len(params))
    if method is None:
        return None
    pos = [v for n, v in params if n not in kw_names]
    kw = {n: v for n, v in params if n in kw_names}
    if not method:
        pos = [input] + pos
    sigs = (METHOD if method else FUNCTION).get(fname)
    return None if sigs is None else TypeError(overloaded_text(fname, sigs, pos, kw))


def _method_call(n_given, depth=2):
    """(method?, keyword names) of the user's call of the hand-written front that called our
    caller (``depth`` 3: our caller's caller), given ``n_given`` arguments after the input;
    (None, None) when its call site does not tell."""
    import sys
    from ember._dispatch import _call_keywords
    f = sys._getframe(depth).f_back
    while f is not None and f.f_globals.get("__name__") == "ember._ops.registry":
        f = f.f_back                   # the NumPy-keyword wrapper (``axis=``) around fronts
    argc, kw_names = _call_keywords(f)
    if argc is None or argc not in (n_given, n_given + 1):
        return None, None
    return argc == n_given, kw_names


def bad_argument(fname, name, index, expected, value, n_given):
    """torch's "fname(): argument 'name' (position N) must be expected, not type" from a
    hand-written front (``index``: the argument's place after the input)."""
    from ember._legacy import type_name
    method, kw_names = _method_call(n_given)
    where = "" if method is None or name in kw_names else \
        f" (position {index + (0 if method else 1)})"
    return TypeError(f"{fname}(): argument '{name}'{where} must be {expected}, not "
                     f"{type_name(type(value))}")


def int_argument(fname, name, index, value, kind="int"):
    """``value`` when it is an int (Python's, NumPy's, a one-element integer tensor), else
    torch's parser TypeError naming argument ``name`` (``index``: its place after the input;
    the arguments before it are taken as given) of a hand-written front."""
    if type(value) is int or (not isinstance(value, (bool, np.bool_)) and
                              hasattr(type(value), "__index__")):
        return value
    from ember import Tensor
    if isinstance(value, Tensor) and value.numel() == 1 and not value.is_floating_point():
        return value
    import sys
    f = sys._getframe(1)
    err = _bad_from(f, fname, name, index, kind, value)
    raise err


def _bad_from(front_frame, fname, name, index, kind, value):
    from ember._dispatch import _call_keywords
    from ember._legacy import type_name
    f = front_frame.f_back
    while f is not None and f.f_globals.get("__name__") == "ember._ops.registry":
        f = f.f_back
    argc, kw_names = _call_keywords(f)
    where = ""
    if argc is not None and name not in kw_names:
        method = argc == index
        if method or argc == index + 1:
            where = f" (position {index if method else index + 1})"
    return TypeError(f"{fname}(): argument '{name}'{where} must be {kind}, not "
                     f"{type_name(type(value))}")


def bool_argument(fname, name, index, value):
    """``value`` when it is a bool, else torch's parser TypeError (as :func:`int_argument`)."""
    if type(value) is bool:
        return value
    import sys
    raise _bad_from(sys._getframe(1), fname, name, index, "bool", value)


def tensor_argument(fname, name, index, value):
    """torch's parser TypeError for a non-Tensor ``value`` of Tensor argument ``name`` (as
    :func:`int_argument`)."""
    import sys
    raise _bad_from(sys._getframe(1), fname, name, index, "Tensor", value)


# Note [arity errors]: torch's parser, not Python's, words a call with a required argument
# missing or too many positional ones (found by experiment): 'cumsum() missing 1 required
# positional arguments: "dim"' (always "arguments" for one, "argument" for more: 'missing 2
# required positional argument: "dim0", "dim1"'), listing every required positional
# argument from the first one not given by position (also those given by keyword); 'add()
# takes 1 positional argument but 2 were given' / 'takes from 0 to 3 positional arguments
# but 4 were given' / '... but 1 was given', counted without a method's ``self``. Where
# torch overloads the name, these come only when exactly one listed signature takes as many
# arguments as the call gives; otherwise the overload list ("received an invalid combination
# of arguments ..."; with one listed signature, as for ``add`` whose others torch hides:
# "got (Tensor, !int!), but expected (Tensor other, *, Number alpha = 1)"). Generated
# fronts test ``_more or dim is _NOARG`` (one test; Python's operators skip it) and come
# here only when it holds.
_CMP = ("(Tensor other)", "(Number other)")
_CMP_F = ("(Tensor input, Tensor other, *, Tensor out = None)",
          "(Tensor input, Number other, *, Tensor out = None)")
_SCATTER = ("(int dim, Tensor index, Tensor src)", "(int dim, Tensor index, Tensor src, *, str reduce)",
            "(int dim, Tensor index, Number value)",
            "(int dim, Tensor index, Number value, *, str reduce)")
METHOD.update({
    "add": ("(Tensor other, *, Number alpha = 1)",),
    "sub": ("(Tensor other, *, Number alpha = 1)",),
    "addmm": ("(Tensor mat1, Tensor mat2, *, Number beta = 1, Number alpha = 1)",),
    "lerp": ("(Tensor end, Tensor weight)", "(Tensor end, Number weight)"),
    "fill_": ("(Tensor value)", "(Number value)"),
    "index_fill": ("(int dim, Tensor index, Tensor value)", "(int dim, Tensor index, Number value)"),
    "movedim": ("(int source, int destination)",
                "(tuple of ints source, tuple of ints destination)"),
    "scatter": _SCATTER,
})
METHOD["index_fill_"] = METHOD["index_fill"]
METHOD["scatter_"] = METHOD["scatter"]
METHOD["lerp_"] = METHOD["lerp"]
METHOD["add_"] = METHOD["add"]
METHOD["sub_"] = METHOD["sub"]
for _n in ("eq", "ne", "lt", "le", "gt", "ge"):
    METHOD[_n] = METHOD[_n + "_"] = _CMP
    FUNCTION[_n] = _CMP_F
FUNCTION.update({
    "add": ("(Tensor input, Tensor other, *, Number alpha = 1, Tensor out = None)",),
    "sub": ("(Tensor input, Tensor other, *, Number alpha = 1, Tensor out = None)",),
    "addmm": ("(Tensor input, Tensor mat1, Tensor mat2, *, Number beta = 1, Number alpha = 1, "
              "Tensor out = None)",
              "(Tensor input, Tensor mat1, Tensor mat2, torch.dtype out_dtype, *, Number beta = "
              "1, Number alpha = 1, Tensor out = None)"),
    "mm": ("(Tensor input, Tensor mat2, *, Tensor out = None)",
           "(Tensor input, Tensor mat2, torch.dtype out_dtype, *, Tensor out = None)"),
    "bmm": ("(Tensor input, Tensor mat2, *, Tensor out = None)",
            "(Tensor input, Tensor mat2, torch.dtype out_dtype, *, Tensor out = None)"),
    "lerp": ("(Tensor input, Tensor end, Tensor weight, *, Tensor out = None)",
             "(Tensor input, Tensor end, Number weight, *, Tensor out = None)"),
    "fill": ("(Tensor input, Tensor value)", "(Tensor input, Number value)"),
    "index_fill": ("(Tensor input, int dim, Tensor index, Tensor value)",
                   "(Tensor input, int dim, Tensor index, Number value)"),
    "movedim": ("(Tensor input, int source, int destination)",
                "(Tensor input, tuple of ints source, tuple of ints destination)"),
    "scatter": tuple(s.replace("(", "(Tensor input, ", 1).replace(")", ", Tensor out = None)")
                     if "*" in s else
                     s.replace("(", "(Tensor input, ", 1).replace(")", ", *, Tensor out = None)")
                     for s in _SCATTER),
})


# schema types as torch's parser names them in its texts
_SCHEMA_TYPES = {"Tensor": "Tensor", "int": "int", "SymInt": "int", "float": "float",
                 "bool": "bool", "str": "str", "Scalar": "Number", "int[]": "tuple of ints",
                 "SymInt[]": "tuple of ints", "ScalarType": "torch.dtype"}


def _fits_strictly(shown, v):
    """``_fits``, but an int argument takes no one-element tensor but a 0-d integer one."""
    from ember import Tensor
    if shown == "int" and isinstance(v, Tensor):
        return v.dim() == 0 and not v.is_floating_point() and not v.is_complex()
    return _fits(shown, v)


def _got_marked(sig, pos, kw):
    """The "got (...)" of torch's one-signature overload text: arguments that do not fit
    ``sig`` marked ``!type!``."""
    params = _params(sig)
    positional = [p for p in params if not p[2]]
    names = {n: t for t, n, _ in params}
    shown = []
    for i, v in enumerate(pos):
        name = _type_name(v)
        shown.append(name if i < len(positional) and _fits(positional[i][0], v) else f"!{name}!")
    for k, v in kw.items():
        name = _type_name(v)
        shown.append(f"{k}={name}" if k in names and _fits(names[k], v) else f"{k}=!{name}!")
    return ", ".join(shown)


def _arity_text(fname, params, pos, kw):
    """The one-signature parser's text for a call of ``params`` [(name, required,
    keyword-only)] giving ``pos`` and ``kw``, or None when it binds."""
    positional = [p for p in params if not p[2]]
    if len(pos) > len(positional):
        # (torch counts a required keyword-only argument too: sort's "from 1 to 0")
        lo = sum(1 for p in params if p[1])
        hi = len(positional)
        takes = f"{hi} positional argument{'' if hi == 1 else 's'}" if lo == hi else \
            f"from {lo} to {hi} positional arguments"
        return f"{fname}() takes {takes} but {len(pos)} {'was' if len(pos) == 1 else 'were'} given"
    rest = [p for p in positional[len(pos):] if p[1]]
    if any(p[0] not in kw for p in rest):
        n = len(rest)
        return (f"{fname}() missing {n} required positional argument{'s' if n == 1 else ''}: "
                + ", ".join(f'"{p[0]}"' for p in rest))
    return None


def arity_error(op, fname, method, front):
    """torch's TypeError for the call of generated front (frame ``front``) of ``op`` that
    misses a required argument or gives too many (Note [arity errors])."""
    from ember._ops.registry import _NOARG, _pyname
    given = call_arguments(front, method)
    loc = front.f_locals
    names = [_pyname(a.name) for a in op.schema.args]
    if not method and names and names[0] == "self":
        names[0] = "input"
    if method:
        names = names[1:]
    if given is None:                    # called from ember's code: the values as bound
        pos, kw = [], {}
        for n in names:
            v = loc.get(n, _NOARG)
            if v is _NOARG:
                break
            pos.append(v)
        else:
            pos += list(loc.get("_more", ()))
    else:
        pos, kw = given
        pos = [v for v in pos if v is not _NOARG]
    if method and not names:        # torch's no-argument methods are CPython's own
        return TypeError(f"TensorBase.{fname}() takes no arguments ({len(pos)} given)")
    sigs = (METHOD if method else FUNCTION).get(fname)
    if sigs is not None:
        n = len(pos) + len(kw)
        plausible = [s for s in sigs if sum(1 for p in _split(s) if " = " not in p and p != "*")
                     <= n <= len(_params(s))]
        if len(plausible) != 1:
            if len(sigs) == 1:
                return TypeError(f"{fname}() received an invalid combination of arguments - got "
                                 f"({_got_marked(sigs[0], pos, kw)}), but expected {sigs[0]}")
            return TypeError(overloaded_text(fname, sigs, pos, kw))
        params = [(name, " = " not in part, kw_only)
                  for (_, name, kw_only), part in zip(_params(plausible[0]),
                                                      [p for p in _split(plausible[0]) if p != "*"])]
    else:
        args = op.schema.args[1:] if method else op.schema.args
        params = [(n, not a.has_default, a.kwarg_only) for n, a in zip(names, args)]
        if given is not None and len(pos) <= len(params):
            # torch binds the given arguments first: one of the wrong type is named before
            # any missing one ("index_select(): argument 'dim' (position 1) must be int")
            for i, (v, a) in enumerate(zip(pos, args)):
                shown = _SCHEMA_TYPES.get(a.type + ("[]" if a.is_list else ""))
                if shown is not None and not (v is None and a.optional) and \
                        not _fits_strictly(shown, v):
                    return TypeError(f"{fname}(): argument '{names[i]}' (position {i + 1}) "
                                     f"must be {shown}, not {_type_name(v)}")
    text = _arity_text(fname, params, pos, kw)
    if text is None:       # (the overload torch would pick binds: name the argument as usual)
        text = f"{fname}() received invalid arguments"
    return TypeError(text)


# Note [unknown keywords]: a keyword no signature takes is Python's text ("zeros() got an
# unexpected keyword argument 'foo'") for the names torch does not overload; for those it
# overloads, torch's parser words it as any other failure (found by experiment): when
# exactly one listed signature takes as many arguments as the call gives (keywords
# counted), the error of binding that one ('max() missing 1 required positional arguments:
# "dim"', else "max() got an unexpected keyword argument 'zzz'", the first unknown one as
# written); otherwise the overload list, its keywords shown in reverse of the call's order
# ("got (Tensor, foo=int, dim=int)" for ``max(x, dim=0, foo=1)``), and under each
# signature whose text has as many comma-separated parts as the call gives arguments
# ("()" and the "*" count one each) "didn't match because some of the keywords were
# incorrect: " and the keywords it does not take, in that order. Fronts of overloaded
# names take ``**_kw`` and come here only when it is not empty.

def _parts(sig):
    return max(1, len(_split(sig)))


def keyword_text(fname, sigs, pos, kw, method=True):
    """The TypeError text of a call of overloaded ``fname`` giving keywords ``kw`` (in the
    call's order) that some listed signature does not take (Note [unknown keywords])."""
    n = len(pos) + len(kw)
    plausible = [s for s in sigs if sum(1 for p in _split(s) if " = " not in p and p != "*")
                 <= n <= len(_params(s))]
    if len(plausible) == 1:
        params = _params(plausible[0])
        names = {name for _, name, _ in params}
        spec = [(name, " = " not in part, kw_only)
                for (_, name, kw_only), part in zip(params,
                                                    [p for p in _split(plausible[0]) if p != "*"])]
        text = _arity_text(fname, spec, pos, {k: v for k, v in kw.items() if k in names})
        if text is None:
            bad = [k for k in kw if k not in names]
            text = f"{fname}() got an unexpected keyword argument '{bad[0] if bad else ''}'"
        return text
    shown = dict(reversed(list(kw.items())))
    lines = [f"{fname}() received an invalid combination of arguments - got "
             f"({_got(pos, shown)}), but expected one of:"]
    for sig in sigs:
        lines.append(f" * {sig}")
        if _parts(sig) == n:
            # a keyword the signature names but of a wrong type is incorrect too
            # (``x.sort(0, True, stable=1, foo=2)``: "foo, stable")
            types = {name: typ for typ, name, _ in _params(sig)}
            bad = [k for k in shown if k not in types or
                   shown[k] is not None and not _fits(types[k], shown[k])]
            if bad:
                lines.append(f"      didn't match because some of the keywords were incorrect: "
                             f"{', '.join(bad)}")
    return "\n".join(lines) + "\n"


def method_keywords(fname, pos, kw):
    """torch's TypeError for hand-written method front ``fname`` (our caller's caller) called with
    positional ``pos`` and keywords ``kw`` that match none of its signatures (an unknown
    keyword, or keywords no form takes together): the keywords in the call's order when its
    call site tells (Note [unknown keywords])."""
    method, kw_names = _method_call(len(pos) + len(kw), 3)
    if method and set(kw_names) == set(kw):
        kw = {k: kw[k] for k in kw_names}
    return TypeError(keyword_text(fname, METHOD[fname], list(pos), kw))


def takes_keywords(fname, method):
    """Does torch list more than one signature for ``fname`` (its fronts then take
    ``**_kw``: Note [unknown keywords])?"""
    sigs = (METHOD if method else FUNCTION).get(fname)
    return sigs is not None and len(sigs) > 1


def keyword_error(fname, method, front, kw_given, caller=None):
    """torch's TypeError for the call of front (frame ``front``) with keywords ``kw_given``
    it does not take (Note [unknown keywords])."""
    sigs = (METHOD if method else FUNCTION).get(fname)
    given = call_arguments(front, method, kw_given, caller)
    if sigs is None or given is None:
        return TypeError(f"{fname}() got an unexpected keyword argument '{next(iter(kw_given))}'")
    pos, kw = given
    from ember._ops.registry import _NOARG
    pos = [v for v in pos if v is not _NOARG]
    return TypeError(keyword_text(fname, sigs, pos, kw, method))


def factory_keywords(fname, kw, allowed=()):
    """Raise torch's TypeError (Note [unknown keywords]) from hand-written function front
    ``fname`` (our caller) when ``kw``, the keywords it took as ``**``, has one besides
    ``allowed``; else return."""
    if any(k not in allowed for k in kw):
        import sys
        front = sys._getframe(1)
        caller = front.f_back            # past ember's wrappers (on_device) to the user's call
        while caller is not None and caller.f_globals.get("__name__", "").startswith("ember."):
            caller = caller.f_back
        raise keyword_error(fname, False, front, kw, caller) from None


_FACTORY = ("Tensor out = None, torch.dtype dtype = None, torch.layout layout = None, "
            "torch.device device = None, bool pin_memory = False, bool requires_grad = False")
_FACTORY_NO_OUT = _FACTORY.replace("Tensor out = None, ", "")
_SORT = ("(*, bool stable, int dim = -1, bool descending = False)",
         "(int dim = -1, bool descending = False)")
METHOD["sort"] = _SORT
FUNCTION.update({
    "sort": ("(Tensor input, *, bool stable, int dim = -1, bool descending = False, tuple of "
             "Tensors out = None)",
             "(Tensor input, int dim = -1, bool descending = False, *, tuple of Tensors out = "
             "None)"),
    "eye": (f"(int n, *, {_FACTORY})", f"(int n, int m, *, {_FACTORY})"),
    "arange": (f"(Number end, *, {_FACTORY})", f"(Number start, Number end, *, {_FACTORY_NO_OUT})",
               f"(Number start, Number end, Number step = 1, *, {_FACTORY})"),
    "linspace": tuple(f"({a} start, {b} end, int steps, *, {_FACTORY})"
                      for a, b in (("Tensor", "Tensor"), ("Number", "Tensor"),
                                   ("Tensor", "Number"), ("Number", "Number"))),
    "randn": (f"(tuple of ints size, *, torch.Generator generator, {_FACTORY})",
              f"(tuple of ints size, *, {_FACTORY})"),
    "rand": (f"(tuple of ints size, *, torch.Generator generator, {_FACTORY})",
             f"(tuple of ints size, *, {_FACTORY})"),
    "randint": tuple(f"({head}tuple of ints size, *, {gen}{_FACTORY})"
                     for head in ("int high, ", "int low, int high, ")
                     for gen in ("torch.Generator generator, ", "")),
})


def hand_keywords(fname, input, given, extra):
    """torch's TypeError (Note [unknown keywords]) for a hand-written front shared by
    ``x.name(...)`` and ``torch.name(x, ...)`` called with keywords ``extra`` it does not
    take; ``given``: (name, value) of its own arguments after the input that the call gave.
    Python's text when the call site does not tell."""
    method, kw_names = _method_call(len(given) + len(extra))
    if method is None:
        return TypeError(f"{fname}() got an unexpected keyword argument '{next(iter(extra))}'")
    values = dict(given)
    values.update(extra)
    pos = [v for n, v in given if n not in kw_names]
    kw = {n: values.get(n) for n in kw_names}
    if not method:
        pos = [input] + pos
    sigs = (METHOD if method else FUNCTION)[fname]
    return TypeError(keyword_text(fname, sigs, pos, kw, method))
