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
    "squeeze": ("()", "(int dim)", "(tuple of ints dim)"),
    "count_nonzero": ("(int dim = None)", "(tuple of ints dim)"),
    "narrow": ("(int dim, Tensor start, int length)", "(int dim, int start, int length)"),
    "clamp": ("(Tensor min = None, Tensor max = None)", "(Number min = None, Number max = None)"),
    "pow": ("(Tensor exponent)", "(Number exponent)"),
    "masked_fill": ("(Tensor mask, Tensor value)", "(Tensor mask, Number value)"),
    "repeat_interleave": ("(Tensor repeats, int dim = None, *, int output_size = None)",
                          "(int repeats, int dim = None, *, int output_size = None)"),
}
METHOD.update({"clamp_": METHOD["clamp"], "pow_": METHOD["pow"],
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
    if isinstance(v, (list, tuple)) and detail:
        names = []
        for e in v:
            n = _type_name(e)
            if n not in names:
                names.append(n)
        return f"{type(v).__name__} of [{', '.join(names)}]"
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
    if typ == "tuple of ints":
        if isinstance(v, (list, tuple)):
            return all(isinstance(e, numbers.Integral) for e in v)
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
        ok = i < len(params) and not params[i][2] and _fits(params[i][0], v)
        name = _type_name(v, True)
        shown.append(name if ok else f"!{name}!")
    for k, v in kw.items():
        name = _type_name(v, True)
        shown.append(f"{k}={name}" if _fits(names[k], v) else f"{k}=!{name}!")
    if all(not s.startswith("!") and "=!" not in s for s in shown):
        return None
    return f"didn't match because some of the arguments have invalid types: ({', '.join(shown)})"


def _got(pos, kw):
    parts = [_type_name(v) for v in pos]
    kws = [f"{k}={_type_name(v)}" for k, v in kw.items()]
    if parts:
        return ", ".join(parts + kws)
    return "".join(k + ", " for k in kws)


def call_arguments(front, method):
    """(positional values, keyword values) of the user's call of generated ``front``, or
    None when its bytecode does not tell."""
    from ember._dispatch import call_count
    argc, kw_names = call_count(front)
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
    for k in kw_names:
        v = loc.get(k, loc.get(f"_va_{k}"))
        kw[k] = v
    return values[:n_pos], kw


def overloaded_text(fname, sigs, pos, kw):
    lines = [f"{fname}() received an invalid combination of arguments - got ({_got(pos, kw)}), "
             f"but expected one of:"]
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


def _method_call(n_given):
    """(method?, keyword names) of the user's call of the hand-written front that called our
    caller, given ``n_given`` arguments after the input; (None, None) when its call site does
    not tell."""
    import sys
    from ember._dispatch import _call_keywords
    f = sys._getframe(2).f_back
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
