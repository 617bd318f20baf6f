"""The ``__torch_function__`` protocol (``torch.overrides``).

Objects that define ``__torch_function__`` -- Tensor subclasses or tensor-likes that are not
tensors at all -- take over any ember function or Tensor method they are passed to. Like
torch, the handler receives the *public* callable the user called (``ember.add``,
``ember.Tensor.add``...), the tuple of overriding types, and the user's arguments: a handler
can compare ``func is ember.add`` or look ``func`` up in a table.

The dispatcher calls ``call_torch_function(op, args, out, types)`` when an argument of an
op record overrides the protocol; hand-written Python functions use
``has_torch_function`` / ``handle_torch_function`` as in torch. ``TorchFunctionMode`` sees
every call made while it is active (it is a dispatcher mode: it runs above the subclass
handlers, and is popped while its own handler runs).
"""
from __future__ import annotations

import contextlib
import functools
import sys
import threading
import warnings

from ember._dispatch import Mode
from ember._state import state

__all__ = ["get_ignored_functions", "get_overridable_functions", "handle_torch_function",
           "has_torch_function", "has_torch_function_unary", "has_torch_function_variadic",
           "is_tensor_like", "is_tensor_method_or_property", "wrap_torch_function",
           "TorchFunctionMode", "enable_reentrant_dispatch", "resolve_name"]

_local = threading.local()


@contextlib.contextmanager
def _disabled_torch_function():
    """Treat Tensor subclasses as plain tensors inside (torch's DisableTorchFunctionSubclass)."""
    prev = getattr(_local, "disabled", False)
    _local.disabled = True
    try:
        yield
    finally:
        _local.disabled = prev


class DisableTorchFunctionSubclass:
    """Context manager: subclass ``__torch_function__`` handlers are skipped inside."""

    def __enter__(self):
        self._prev = getattr(_local, "disabled", False)
        _local.disabled = True
        return self

    def __exit__(self, *exc):
        _local.disabled = self._prev
        return False


def is_torch_function_enabled():
    return not getattr(_local, "disabled", False)


def _disabled_torch_function_impl(func, types, args=(), kwargs=None):
    """Assign to ``__torch_function__`` to opt a subclass out of the protocol (like torch's
    ``torch._C._disabled_torch_function_impl``)."""
    with _disabled_torch_function():
        return func(*args, **(kwargs or {}))


def _tensor_tf():
    from ember._tensor import _TENSOR_TF
    return _TENSOR_TF


def _overrides(tp):
    """Does type ``tp`` take part in the protocol? (plain tensors and opted-out types don't)"""
    from ember._tensor import Tensor
    if tp is Tensor:
        return False
    tf = getattr(tp, "__torch_function__", None)
    if tf is None:
        return False
    return getattr(tf, "__func__", tf) is not _disabled_torch_function_impl


def _get_overloaded_args(relevant_args, get_type_fn=type):
    """Arguments whose types override ``__torch_function__``, one per type, subclasses
    before their superclasses, otherwise in order of appearance (torch's rule)."""
    types, out = set(), []
    for arg in relevant_args:
        tp = get_type_fn(arg)
        if tp in types or not _overrides(tp):
            continue
        types.add(tp)
        index = len(out)
        for i, old in enumerate(out):
            if issubclass(tp, get_type_fn(old)):
                index = i
                break
        out.insert(index, arg)
    return out


def _call_handler(arg, func, types, args, kwargs, warning=DeprecationWarning):
    """Call one argument's handler (the default Tensor handler declines, as torch's does,
    when another overriding type is not its superclass)."""
    tf = arg.__torch_function__
    raw = getattr(tf, "__func__", tf)
    if raw is _tensor_tf():
        cls = type(arg)
        if not all(issubclass(cls, t) for t in types):
            return NotImplemented
    elif getattr(tf, "__self__", None) is arg:
        warnings.warn("Defining your `__torch_function__ as a plain method is deprecated and "
                      "will be an error in future, please define it as a classmethod.",
                      warning, stacklevel=4)
    return tf(func, types, args, kwargs)


# ------------------------------------------------------------------------------ op records

def _front_of(op):
    """The public callable the user called for ``op``: the generated Tensor method or
    function whose frame is on the stack, else the public function (or method) of that name."""
    from ember._ops.registry import FUNCTIONS, METHODS
    name = op.public_name
    f, m = FUNCTIONS.get(name), METHODS.get(name)
    fcode = getattr(f, "__code__", None)
    mcode = getattr(m, "__code__", None)
    frame = sys._getframe(2)
    for _ in range(24):
        if frame is None:
            break
        code = frame.f_code
        if code is mcode and mcode is not None:
            return m, True
        if code is fcode and fcode is not None:
            return f, False
        frame = frame.f_back
    if f is not None:
        return f, False
    if m is not None:
        return m, True
    return op, False


def _is_default(v, d):
    if v is d:
        return True
    t = type(v)
    return t is type(d) and t in (int, float, bool, str, complex, tuple) and v == d


def _user_call(op, args, out):
    """The public callable, positional args and keyword args that reproduce the call:
    trailing positional arguments left at their defaults are dropped, keyword-only
    arguments appear in ``kwargs`` when they differ from their defaults."""
    func, _ = _front_of(op)
    sargs = op.schema.args
    pos = [i for i, a in enumerate(sargs) if not a.kwarg_only and i < len(args)]
    n = len(pos)
    while n > 1 and sargs[pos[n - 1]].has_default and \
            _is_default(args[pos[n - 1]], sargs[pos[n - 1]].default):
        n -= 1
    uargs = tuple(args[i] for i in pos[:n])
    kwargs = {}
    for i, a in enumerate(sargs):
        if a.kwarg_only and i < len(args) and not (a.has_default and
                                                    _is_default(args[i], a.default)):
            kwargs[a.name] = args[i]
    if out is not None:
        kwargs["out"] = out
    return func, uargs, kwargs


def _relevant(op, args):
    for i, is_list, _ in op.tensor_args:
        if i >= len(args):
            continue
        a = args[i]
        if is_list and isinstance(a, (list, tuple)):
            yield from a
        else:
            yield a


def _func_name(func, is_method):
    name = getattr(func, "__name__", str(func))
    return f"torch._C.TensorBase.{name}" if is_method else f"torch.{name}"


def call_torch_function(op, args, out, types=None):
    """Offer the call of ``op`` to the overriding arguments (called by the dispatcher)."""
    if getattr(_local, "disabled", False):
        return _unwrapped_call(op, args, out)
    overloaded = _get_overloaded_args(_relevant(op, args))
    if not overloaded:
        return _unwrapped_call(op, args, out)
    func, uargs, kwargs = _user_call(op, args, out)
    tps = tuple(type(a) for a in overloaded)
    for arg in overloaded:
        r = _call_handler(arg, func, tps, uargs, kwargs, UserWarning)
        if r is not NotImplemented:
            return r
    _, is_method = _front_of(op)
    lines = "".join(f"  - tensor subclass {t}\n" for t in tps)
    raise TypeError(f"Multiple dispatch failed for '{_func_name(func, is_method)}'; all "
                    f"__torch_function__ handlers returned NotImplemented:\n\n{lines}\n"
                    f"For more information, try re-running with TORCH_LOGS=not_implemented")


def _unwrapped_call(op, args, out):
    """Run the op treating Tensor subclasses as plain tensors (protocol disabled)."""
    from ember._dispatch import _call_plain
    return _call_plain(op, args, out)


# ------------------------------------------------------------------------------ public API

def _mode_active():
    return any(isinstance(m, TorchFunctionMode) for m in state.modes)


def has_torch_function(relevant_args):
    """True if any argument overrides ``__torch_function__`` (or a mode is active)."""
    if getattr(_local, "disabled", False):
        return False
    if _mode_active():
        return True
    for a in relevant_args:
        if _overrides(type(a)):
            return True
    return False


def has_torch_function_unary(arg):
    return has_torch_function((arg,))


def has_torch_function_variadic(*args):
    return has_torch_function(args)


def handle_torch_function(public_api, relevant_args, *args, **kwargs):
    """Dispatch ``public_api(*args, **kwargs)`` to the active mode or to the overriding
    arguments among ``relevant_args`` (for hand-written Python functions)."""
    overloaded = _get_overloaded_args(relevant_args)
    types = tuple(type(a) for a in overloaded)
    modes = [m for m in state.modes if isinstance(m, TorchFunctionMode)]
    if modes:
        mode = modes[-1]
        with _popped(mode):
            r = mode.__torch_function__(public_api, types, args, kwargs)
        if r is not NotImplemented:
            return r
    for arg in overloaded:
        r = _call_handler(arg, public_api, types, args, kwargs)
        if r is not NotImplemented:
            return r
    func_name = f"{getattr(public_api, '__module__', None)}.{public_api.__name__}"
    msg = (f"no implementation found for '{func_name}' on types that implement "
           f"__torch_function__: {[type(a) for a in overloaded]}")
    if modes:
        msg += f" nor in mode {modes[-1]}"
    raise TypeError(msg)


@contextlib.contextmanager
def _popped(mode):
    saved = state.modes
    state.modes = tuple(m for m in saved if m is not mode)
    try:
        yield
    finally:
        state.modes = saved


def is_tensor_like(inp):
    """True for tensors and for objects whose type defines ``__torch_function__``."""
    from ember._tensor import Tensor
    return type(inp) is Tensor or hasattr(inp, "__torch_function__")


def wrap_torch_function(dispatcher):
    """Decorator making a Python function overridable: ``dispatcher(*args, **kwargs)``
    returns the relevant arguments."""
    def inner(func):
        @functools.wraps(func)
        def wrapped(*args, **kwargs):
            relevant = dispatcher(*args, **kwargs)
            if has_torch_function(relevant):
                return handle_torch_function(wrapped, relevant, *args, **kwargs)
            return func(*args, **kwargs)
        return wrapped
    return inner


def get_overridable_functions():
    """``{ember: [functions], ember.Tensor: [methods]}`` that take part in the protocol."""
    import ember
    from ember._ops.registry import FUNCTIONS, METHODS
    return {ember: sorted({f for f in FUNCTIONS.values()}, key=lambda f: f.__name__),
            ember.Tensor: sorted({m for m in METHODS.values()}, key=lambda f: f.__name__)}


def get_ignored_functions():
    """Public functions that cannot be overridden (no tensor arguments)."""
    import ember
    names = ["tensor", "as_tensor", "asarray", "from_numpy", "from_dlpack", "frombuffer",
             "zeros", "ones", "empty", "full", "empty_strided", "eye", "arange", "range",
             "linspace", "logspace", "rand", "randn", "randint", "randperm", "manual_seed",
             "seed", "initial_seed", "get_default_dtype", "set_default_dtype", "promote_types",
             "can_cast", "is_tensor", "set_printoptions", "get_rng_state", "set_rng_state"]
    return {getattr(ember, n) for n in names if hasattr(ember, n)}


def is_tensor_method_or_property(func):
    """True for Tensor methods and property getters (the protocol passes ``Tensor.add``,
    not ``ember.add``, for them)."""
    from ember._ops.registry import METHODS
    return any(func is m for m in METHODS.values()) or getattr(func, "__name__", "") == "__get__"


def resolve_name(f):
    """``'torch.add'``-style name of a public function or method (None if unknown)."""
    import ember
    from ember._ops.registry import FUNCTIONS, METHODS
    for n, g in FUNCTIONS.items():
        if g is f:
            return f"torch.{n}"
    for n, g in METHODS.items():
        if g is f:
            return f"torch.Tensor.{n}"
    return None


@contextlib.contextmanager
def enable_reentrant_dispatch():
    yield


class TorchFunctionMode(Mode):
    """Intercept every ember call while active: override ``__torch_function__(self, func,
    types, args=(), kwargs=None)``; calling ``func(*args, **kwargs)`` inside runs the call
    (the mode is popped while its handler runs)."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        raise NotImplementedError

    def __ember_dispatch__(self, op, args, kwargs):
        func, uargs, ukwargs = _user_call(op, args, kwargs.get("out"))
        types = tuple(type(a) for a in _get_overloaded_args(_relevant(op, args)))
        r = self.__torch_function__(func, types, uargs, ukwargs)
        if r is NotImplemented:
            return op(*args, **kwargs)
        return r

    @classmethod
    def push(cls, *args, **kwargs):
        return cls(*args, **kwargs).__enter__()


def _get_current_function_mode():
    modes = [m for m in state.modes if isinstance(m, TorchFunctionMode)]
    return modes[-1] if modes else None
