"""The ``__torch_function__`` protocol: objects that define it (Tensor subclasses or
tensor-likes) take over any ember function they are passed to."""
from __future__ import annotations

import contextlib
import threading

_local = threading.local()


@contextlib.contextmanager
def _disabled_torch_function():
    prev = getattr(_local, "disabled", False)
    _local.disabled = True
    try:
        yield
    finally:
        _local.disabled = prev


def is_torch_function_enabled():
    return not getattr(_local, "disabled", False)


def _public_func(op):
    from ember._ops.registry import FUNCTIONS, METHODS
    f = FUNCTIONS.get(op.public_name) or METHODS.get(op.public_name)
    return f if f is not None else op


def call_torch_function(op, args, out, types):
    """Offer the call to each overriding type (subclasses before their bases)."""
    from ember._tensor import Tensor, _TENSOR_TF
    func = _public_func(op)
    kwargs = {} if out is None else {"out": out}
    if getattr(_local, "disabled", False):
        return _unwrapped_call(op, args, out)
    ordered = sorted(types, key=lambda t: -len(t.__mro__))
    for t in ordered:
        tf = t.__torch_function__
        if getattr(tf, "__func__", tf) is _TENSOR_TF:
            continue
        r = tf(func, tuple(types), _user_args(op, args), kwargs)
        if r is not NotImplemented:
            return r
    if all(issubclass(t, Tensor) for t in types):
        return _unwrapped_call(op, args, out)
    raise TypeError(f"no implementation found for '{op.public_name}' on types that implement "
                    f"__torch_function__: {[t for t in types]}")


def _user_args(op, args):
    """Drop trailing defaulted arguments so the override sees what the user passed."""
    sargs = op.schema.args
    n = len(args)
    while n > 1 and sargs[n - 1].has_default and args[n - 1] == sargs[n - 1].default \
            and not hasattr(args[n - 1], "_data"):
        n -= 1
    return tuple(args[:n])


def _unwrapped_call(op, args, out):
    """Run the op treating Tensor subclasses as plain tensors (protocol disabled)."""
    from ember._dispatch import _call_plain
    return _call_plain(op, args, out)


def has_torch_function(args):
    from ember._tensor import Tensor, _TENSOR_TF
    for a in args:
        tf = getattr(type(a), "__torch_function__", None)
        if tf is not None and getattr(tf, "__func__", tf) is not _TENSOR_TF:
            return True
    return False


def handle_torch_function(public_api, relevant_args, *args, **kwargs):
    """For hand-written fronts: dispatch ``public_api`` to overriding arguments."""
    types = tuple({type(a) for a in relevant_args
                   if hasattr(type(a), "__torch_function__")})
    ordered = sorted(types, key=lambda t: -len(t.__mro__))
    for t in ordered:
        r = t.__torch_function__(public_api, types, args, kwargs)
        if r is not NotImplemented:
            return r
    raise TypeError(f"no implementation found for '{public_api.__name__}'")
