"""torch's ``_foreach_*`` functions: one op applied to each tensor of a list.

Used by hand-written optimizers and EMA updates (``torch._foreach_mul_(ema, d)``,
``torch._foreach_add_(ema, params, alpha=1 - d)``, ``torch._foreach_lerp_``). Each is the
plain per-tensor op in a loop, so gradients and dtype rules are those of the op. The second
operand may be a list (one per tensor), a Python number, a list of numbers or a Tensor.
Out-of-place forms return a tuple; in-place forms (trailing ``_``) return the input list.
"""
from __future__ import annotations

_UNARY = ("abs", "acos", "asin", "atan", "ceil", "cos", "cosh", "erf", "erfc", "exp", "expm1",
          "floor", "frac", "lgamma", "log", "log10", "log1p", "log2", "neg", "reciprocal",
          "round", "rsqrt", "sigmoid", "sign", "sin", "sinh", "sqrt", "tan", "tanh", "trunc")
_BINARY = ("add", "sub", "mul", "div", "pow", "maximum", "minimum", "clamp_min", "clamp_max")
_TERNARY = ("addcmul", "addcdiv", "lerp")


def _check(self, *others):
    if not isinstance(self, (list, tuple)) or not self:
        raise RuntimeError("Tensor list must have at least one tensor.")
    for o in others:
        if isinstance(o, (list, tuple)) and len(o) != len(self):
            if o and not hasattr(o[0], "shape"):
                raise RuntimeError("Tensor list must have same number of elements as scalar "
                                   "list.")
            raise RuntimeError(f"Tensor lists must have the same number of tensors, got "
                               f"{len(self)} and {len(o)}")


# maximum/minimum take a Tensor only (torch's foreach forms take a number too): a number
# goes to the clamp of the same meaning
_WITH_NUMBER = {"maximum": "clamp_min", "minimum": "clamp_max"}


def _name_for(name, args):
    if name in _WITH_NUMBER and args and not hasattr(args[0], "shape"):
        return _WITH_NUMBER[name]
    return name


def _at(o, i):
    """The ``i``-th operand: an entry of a list, else the same number or tensor for all."""
    return o[i] if isinstance(o, (list, tuple)) else o


def _make(name):
    if name in ("addcmul", "addcdiv"):          # (self, tensor1, tensor2, value/scalars)
        def split(others, kwargs):
            if len(others) == 3:
                kwargs = dict(kwargs, value=others[2])
                others = others[:2]
            return others, kwargs
    else:
        def split(others, kwargs):
            return others, kwargs

    def out_of_place(self, *others, **kwargs):
        others, kwargs = split(others, kwargs)
        _check(self, *others)
        results = []
        for i, t in enumerate(self):
            args = [_at(o, i) for o in others]
            results.append(getattr(t, _name_for(name, args))(
                *args, **{k: _at(v, i) for k, v in kwargs.items()}))
        return tuple(results)

    def in_place(self, *others, **kwargs):
        others, kwargs = split(others, kwargs)
        _check(self, *others)
        for i, t in enumerate(self):
            args = [_at(o, i) for o in others]
            kw = {k: _at(v, i) for k, v in kwargs.items()}
            op_name = _name_for(name, args)
            method = getattr(t, op_name + "_", None)   # (no Tensor.maximum_: copy the result)
            if method is None:
                t.copy_(getattr(t, op_name)(*args, **kw))
            else:
                method(*args, **kw)
        return self

    out_of_place.__name__ = f"_foreach_{name}"
    in_place.__name__ = f"_foreach_{name}_"
    return out_of_place, in_place


def _pow(self, exponent):
    """``_foreach_pow``: a list of bases, or a number base raised to a list of exponents."""
    import ember
    if isinstance(self, (int, float)):
        _check(exponent)
        return tuple(ember.pow(self, e) for e in exponent)
    _check(self, exponent)
    return tuple(t.pow(_at(exponent, i)) for i, t in enumerate(self))


def _foreach_norm(self, ord=2, dtype=None):
    import ember
    _check(self)
    return tuple(ember.linalg.vector_norm(t, ord, dtype=dtype) for t in self)


def _foreach_max(self):
    _check(self)
    return tuple(t.max() for t in self)


def _foreach_powsum(self, exponent=2):
    _check(self)
    return tuple(t.abs().pow(exponent).sum() for t in self)


def _foreach_clone(self):
    _check(self)
    return tuple(t.clone() for t in self)


def _foreach_zero_(self):
    _check(self)
    for t in self:
        t.zero_()
    return self


def _foreach_copy_(self, src, non_blocking=False):
    _check(self, src)
    for t, s in zip(self, src):
        t.copy_(s, non_blocking)
    return self


FUNCTIONS = {"_foreach_norm": _foreach_norm, "_foreach_max": _foreach_max,
             "_foreach_powsum": _foreach_powsum, "_foreach_clone": _foreach_clone,
             "_foreach_zero_": _foreach_zero_, "_foreach_copy_": _foreach_copy_}
for _name in _UNARY + _BINARY + _TERNARY:
    _f, _fi = _make(_name)
    FUNCTIONS[_f.__name__] = _f
    FUNCTIONS[_fi.__name__] = _fi
FUNCTIONS["_foreach_pow"] = _pow
globals().update(FUNCTIONS)
