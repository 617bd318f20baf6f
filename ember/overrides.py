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
           "TorchFunctionMode", "enable_reentrant_dispatch", "resolve_name",
           "get_default_nowrap_functions", "get_testing_overrides", "BaseTorchFunctionMode"]


class _Local(threading.local):
    disabled = False        # (class default: a missing attribute of a local is slow)


_local = _Local()


@contextlib.contextmanager
def _disabled_torch_function():
    """Treat Tensor subclasses as plain tensors inside (torch's DisableTorchFunctionSubclass)."""
    prev = _local.disabled
    _local.disabled = True
    try:
        yield
    finally:
        _local.disabled = prev


class DisableTorchFunctionSubclass:
    """Context manager: subclass ``__torch_function__`` handlers are skipped inside."""

    def __enter__(self):
        self._prev = _local.disabled
        _local.disabled = True
        return self

    def __exit__(self, *exc):
        _local.disabled = self._prev
        return False


class DisableTorchFunction:
    """Context manager: neither subclass handlers nor TorchFunctionModes run inside
    (torch._C.DisableTorchFunction)."""

    def __enter__(self):
        self._prev = _local.disabled
        self._modes = state.modes
        _local.disabled = True
        state.modes = tuple(m for m in state.modes if not isinstance(m, TorchFunctionMode))
        return self

    def __exit__(self, *exc):
        _local.disabled = self._prev
        kept = set(map(id, self._modes))
        state.modes = self._modes + tuple(m for m in state.modes if id(m) not in kept)
        return False


def is_torch_function_enabled():
    return not _local.disabled


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
    from ember._ops.registry import FUNCTIONS, METHODS, OPERATOR_METHODS
    name = op.public_name
    f, m = FUNCTIONS.get(name), METHODS.get(name)
    fcode = getattr(f, "__code__", None)
    mcode = getattr(m, "__code__", None)
    frame = sys._getframe(2)
    for _ in range(24):
        if frame is None:
            break
        code = frame.f_code
        if mcode is not None and (code is mcode or mcode in OPERATOR_METHODS.get(code, ())):
            return m, True
        if code is fcode and fcode is not None:
            return _PUBLIC.get(f, f), False
        frame = frame.f_back
    if f is not None:
        return _PUBLIC.get(f, f), False
    if m is not None:
        return m, True
    nnf = sys.modules.get("ember.nn.functional")
    g = getattr(nnf, name, None)
    if callable(g):
        return g, False
    return _named_op(op), False


_NAMED_OPS: dict = {}


def _named_op(op):
    """A callable running ``op`` under its public name (handlers read ``func.__name__``)."""
    f = _NAMED_OPS.get(op)
    if f is None:
        def f(*args, **kwargs):
            return op(*args, **kwargs)
        f.__name__ = f.__qualname__ = op.public_name
        f._op_record = op
        _NAMED_OPS[op] = f
    return f


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
    return func, uargs, kwargs or None


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
    return f"torch.Tensor.{name}" if is_method else f"torch.{name}"


def _via_operator():
    """True when the call came through a Python operator's front (``a + b``, ``a += b``): as
    torch's, it then answers NotImplemented when every handler did, and Python tries the
    reflected operator and raises its own 'unsupported operand type(s)' TypeError."""
    from ember._ops.registry import OPERATOR_METHODS
    frame = sys._getframe(2)
    for _ in range(24):
        if frame is None:
            return False
        if frame.f_code in OPERATOR_METHODS:
            return True
        frame = frame.f_back
    return False


def call_torch_function(op, args, out, types=None):
    """Offer the call of ``op`` to the overriding arguments (called by the dispatcher)."""
    if _local.disabled:
        return _unwrapped_call(op, args, out)
    overloaded = _get_overloaded_args(_relevant(op, args))
    if not _FUNCTIONAL_WRAPPED and any(_users_type(type(a)) for a in overloaded):
        _wrap_functional()
    if not overloaded:
        return _unwrapped_call(op, args, out)
    func, uargs, kwargs = _user_call(op, args, out)
    tps = tuple(type(a) for a in overloaded)
    for arg in overloaded:
        r = _call_handler(arg, func, tps, uargs, kwargs, UserWarning)
        if r is not NotImplemented:
            return r
    if _via_operator():
        return NotImplemented
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
    if _local.disabled:
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
    import collections
    out = collections.defaultdict(list)
    out[ember] = sorted({f for f in FUNCTIONS.values()}, key=lambda f: f.__name__)
    out[ember.Tensor] = sorted({m for m in METHODS.values()}, key=lambda f: f.__name__)
    # torch's namespaces of Python functions and their own ops (``F.relu``, ``linalg.norm``)
    import inspect
    import ember.nn.functional as F
    for mod in (F, ember.linalg, ember.fft, ember.special):
        fns = {v for n, v in vars(mod).items()
               if not n.startswith("_") and inspect.isfunction(v) and
               not n.startswith(("has_torch_function", "handle_torch_function")) and
               (v.__module__ or "ember").startswith("ember")}
        out[mod] = sorted(fns, key=lambda f: getattr(f, "__name__", ""))
    return out


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
    import ember.nn.functional as F
    name = getattr(f, "__name__", None)
    if name and getattr(F, name, None) is f:
        return f"torch.nn.functional.{name}"
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
        # (ukwargs stays None for a call without keywords, as torch hands its C ops' modes)
        types = tuple(type(a) for a in _get_overloaded_args(_relevant(op, args)))
        r = self.__torch_function__(func, types, uargs, ukwargs)
        if r is NotImplemented:
            return op(*args, **kwargs)
        return r

    def __enter__(self):
        _wrap_tensor_for_modes()
        return super().__enter__()

    def __exit__(self, *exc):
        r = super().__exit__(*exc)
        if not _mode_active():
            _unwrap_tensor()                # the last mode is gone: Tensor's own again
        return r

    @classmethod
    def push(cls, *args, **kwargs):
        return cls(*args, **kwargs).__enter__()


class BaseTorchFunctionMode(TorchFunctionMode):
    """A TorchFunctionMode that runs every call as it is (a base to override)."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


def _get_current_function_mode_stack():
    return [m for m in state.modes if isinstance(m, TorchFunctionMode)]


def _len_torch_function_stack():
    return len(_get_current_function_mode_stack())


def get_testing_overrides():
    """``{overridable function: a dummy of its signature returning -1}`` (for tests of
    ``__torch_function__`` handlers)."""
    import inspect
    out = {}
    for fns in get_overridable_functions().values():
        for f in fns:
            try:
                sig = inspect.signature(f)
            except (TypeError, ValueError):
                sig = None

            def dummy(*args, **kwargs):
                return -1
            if sig is not None:
                dummy.__signature__ = sig
            dummy.__name__ = getattr(f, "__name__", "dummy")
            out[f] = dummy
    return out


def _get_current_function_mode():
    modes = [m for m in state.modes if isinstance(m, TorchFunctionMode)]
    return modes[-1] if modes else None


# ------------------------------------------------------------------ Tensor's own methods
#
# Op methods (``add``, ``__add__``...) reach the protocol through the dispatcher. The Tensor
# methods and properties written by hand (``detach``, ``data``, ``shape``, ``new_zeros``,
# ``__repr__``...) are wrapped here, as torch's are: on each Tensor subclass that takes part
# in the protocol when the class is made (plain tensors pay nothing), and on Tensor itself
# the first time a TorchFunctionMode is entered. A wrapper passes the handler the public
# callable (``Tensor.detach``, or ``Tensor.data.__get__`` for a property).

_NOT_WRAPPED = {"__new__", "__init__", "__init_subclass__", "__torch_function__",
                "as_subclass", "__iter__", "__hash__", "__getattribute__", "__setattr__",
                "__class__", "__dict__", "__weakref__", "_make_subclass"}
_PRIVATE_WRAPPED = {"_version", "_base", "_is_view", "_grad"}
_WRAPPED: dict = {}          # name -> the original function or property of Tensor


def _protocol_names():
    """Tensor's hand-written public methods and properties (computed once)."""
    if not _WRAPPED:
        from ember._tensor import Tensor
        for name, v in Tensor.__dict__.items():
            if name in _NOT_WRAPPED or (name.startswith("_") and not name.startswith("__")
                                        and name not in _PRIVATE_WRAPPED):
                continue
            if isinstance(v, property) or (callable(v) and not isinstance(v, type) and
                                           hasattr(v, "__code__") and
                                           not hasattr(v, "_op")):
                _WRAPPED[name] = v
    return _WRAPPED


# torch's methods written in Python (they are handed a kwargs dict, empty or not; the
# others, as ops, get None when called without keywords)
_PYTHON_METHODS = {"__deepcopy__", "__reduce_ex__", "storage", "__repr__", "backward",
                   "register_hook", "register_post_accumulate_grad_hook", "is_shared",
                   "share_memory_", "norm", "lu", "stft", "istft", "split", "unique",
                   "unique_consecutive", "__rsub__", "__rdiv__", "__rtruediv__", "__rpow__",
                   "__format__", "__floordiv__", "__rfloordiv__", "__rlshift__",
                   "__rrshift__", "__rmatmul__", "__rmod__", "__len__", "__dir__",
                   "__array__", "__contains__", "unflatten", "dim_order", "__dlpack__",
                   "__dlpack_device__"}


def _relevant_of(self, args):
    return (self,) + tuple(a for a in args if hasattr(type(a), "__torch_function__"))


def _dispatch_or_none(public, relevant, args, kwargs, method=True, operator=False):
    """``handle_torch_function`` handing None for no keywords (as torch's C methods do)."""
    overloaded = _get_overloaded_args(relevant)
    types = tuple(type(a) for a in overloaded)
    modes = [m for m in state.modes if isinstance(m, TorchFunctionMode)]
    if modes:
        if method and not types:        # (a mode over a plain tensor's method sees Tensor)
            types = (type(args[0]),)
        with _popped(modes[-1]):
            r = modes[-1].__torch_function__(public, types, args, kwargs)
        if r is not NotImplemented:
            return r
    for arg in overloaded:
        r = _call_handler(arg, public, types, args, kwargs)
        if r is not NotImplemented:
            return r
    if operator:            # (a reflected operator: Python raises its own TypeError)
        return NotImplemented
    raise TypeError(f"no implementation found for '{_func_name(public, True)}' on types that "
                    f"implement __torch_function__: {list(types)}")


# ``2 * t`` reaches a handler as torch's C operators hand it: ``Tensor.mul(t, 2)``
_REFLECTED_AS = {"__radd__": "add", "__rmul__": "mul", "__rand__": "bitwise_and",
                 "__ror__": "bitwise_or", "__rxor__": "bitwise_xor"}


def _wrap_backward(orig):
    """torch's ``Tensor.backward`` hands a handler its four arguments by name, always."""
    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        if not has_torch_function((self,)):
            return orig(self, gradient, retain_graph, create_graph, inputs)
        from ember._tensor import Tensor
        return _dispatch_or_none(Tensor.backward, (self,), (self,), {
            "gradient": gradient, "retain_graph": retain_graph, "create_graph": create_graph,
            "inputs": inputs})
    functools.update_wrapper(backward, orig)
    return backward


def _wrap_method(name, orig):
    if name == "backward":
        return _wrap_backward(orig)
    keep_dict = name in _PYTHON_METHODS
    public_name = _REFLECTED_AS.get(name, name)
    operator = name.startswith("__r") and name.endswith("__") and name not in (
        "__repr__", "__reduce__", "__reduce_ex__")

    def method(self, *args, **kwargs):
        relevant = _relevant_of(self, args)
        if not has_torch_function(relevant):
            return orig(self, *args, **kwargs)
        from ember._tensor import Tensor
        return _dispatch_or_none(getattr(Tensor, public_name), relevant, (self,) + args,
                                 kwargs if kwargs or keep_dict else None, operator=operator)
    functools.update_wrapper(method, orig)
    return method


def _wrap_property(name, orig):
    def fget(self):
        if not has_torch_function((self,)):
            return orig.__get__(self)
        from ember._tensor import Tensor
        return _dispatch_or_none(Tensor.__dict__[name].__get__, (self,), (self,), None)

    def fset(self, value):
        if not has_torch_function((self,)):
            return orig.__set__(self, value)
        from ember._tensor import Tensor
        return _dispatch_or_none(Tensor.__dict__[name].__set__, (self,), (self, value), None)
    return property(fget, fset if orig.fset is not None else None, orig.fdel, orig.__doc__)


def install_subclass_protocol(cls):
    """Called for each new Tensor subclass: wrap the hand-written methods it does not
    define itself (nor a class between it and Tensor), if it takes part in the protocol."""
    from ember._tensor import Tensor
    if not _overrides(cls) or not _users_type(cls):
        return                  # (ember's own tensor kinds route what they need themselves)
    _wrap_functional()
    if any("__torch_function_wrapped__" in k.__dict__ for k in cls.__mro__[1:]):
        return                              # inherited from a wrapped subclass
    own = set()
    for k in cls.__mro__:
        if k is Tensor:
            break
        own.update(k.__dict__)
    for name, orig in _protocol_names().items():
        if name in own:
            continue
        setattr(cls, name, _wrap_property(name, orig) if isinstance(orig, property)
                else _wrap_method(name, orig))
    cls.__torch_function_wrapped__ = True


_TENSOR_WRAPPED = False


def _wrap_tensor_for_modes():
    """Wrap Tensor's own hand-written methods (once: a TorchFunctionMode sees them)."""
    global _TENSOR_WRAPPED
    if not _TENSOR_WRAPPED:
        from ember._tensor import Tensor
        names = _protocol_names()
        _TENSOR_WRAPPED = True
        _wrap_functional()
        for name, orig in names.items():
            setattr(Tensor, name, _wrap_property(name, orig) if isinstance(orig, property)
                    else _wrap_method(name, orig))


def _unwrap_tensor():
    global _TENSOR_WRAPPED
    if _TENSOR_WRAPPED:
        from ember._tensor import Tensor
        for name, orig in _protocol_names().items():
            setattr(Tensor, name, orig)
        _TENSOR_WRAPPED = False


def get_default_nowrap_functions():
    """Functions whose results the default ``__torch_function__`` hands back as they are
    (not converted to the subclass): the getters of ``_base`` and ``grad``."""
    from ember._tensor import Tensor
    return {Tensor.__dict__[n].__get__ for n in ("_base", "grad", "_grad")
            if n in Tensor.__dict__}


# ------------------------------------------------------------------ nn.functional
#
# ``torch.nn.functional``'s Python functions hand the whole call to ``__torch_function__``
# (``func`` is ``F.linear``, not the ops it runs). Ember's do so once the protocol is in use:
# they are wrapped the first time a protocol subclass is made, a TorchFunctionMode entered
# or an op meets an overriding argument (plain programs never pay for the check).

_FUNCTIONAL_WRAPPED = False
_PUBLIC: dict = {}           # a wrapped top-level function -> its wrapper (the public one)
_ORIGINALS: list = []        # (namespace, name, function) replaced by a wrapper


def _users_type(tp):
    """A type of the program's (not one of ember's own tensor kinds)?"""
    return not getattr(tp, "__module__", "").startswith("ember.")


# torch's nn.functional functions that are ops (handed None for no keywords)
_C_FUNCTIONAL = {"adaptive_avg_pool1d", "avg_pool1d", "avg_pool2d", "avg_pool3d", "bilinear",
                 "celu_", "channel_shuffle", "conv1d", "conv2d", "conv3d", "conv_tbc",
                 "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
                 "cosine_similarity", "elu_", "gelu", "hardshrink", "hardtanh_", "leaky_relu_",
                 "linear", "logsigmoid", "native_channel_shuffle", "one_hot",
                 "pairwise_distance", "pdist", "pixel_shuffle", "pixel_unshuffle", "prelu",
                 "relu_", "rrelu_", "scaled_dot_product_attention", "selu_", "softplus",
                 "softshrink", "threshold_"}


def _wrap_function(fn, is_op=None):
    is_op = fn.__name__ in _C_FUNCTIONAL if is_op is None else is_op

    def function(*args, **kwargs):
        relevant = []
        for a in (*args, *kwargs.values()):
            if type(a) in (list, tuple):
                relevant.extend(x for x in a if hasattr(type(x), "__torch_function__"))
            elif hasattr(type(a), "__torch_function__"):
                relevant.append(a)
        if not has_torch_function(relevant):
            return fn(*args, **kwargs)
        if is_op and not kwargs:
            return _dispatch_or_none(function, relevant, args, None, method=False)
        return handle_torch_function(function, relevant, *args, **kwargs)
    functools.update_wrapper(function, fn)
    function._torch_function_front = True
    return function


def _wrap_functional():
    global _FUNCTIONAL_WRAPPED
    if _FUNCTIONAL_WRAPPED:
        return
    _FUNCTIONAL_WRAPPED = True
    import types
    import ember.nn.functional as F
    for name in dir(F):
        fn = getattr(F, name)
        if name.startswith("_") or type(fn) is not types.FunctionType or \
                hasattr(fn, "_op") or hasattr(fn, "_torch_function_front") or \
                not getattr(fn, "__module__", "").startswith("ember"):
            continue
        _install(F, name, fn, _wrap_function(fn))
    _wrap_module_functionals()
    # the top-level functions written in Python (torch.cat, torch.where...): ops in torch
    import ember
    from ember._ops.registry import FUNCTIONS
    extra = {n: getattr(ember, n) for n in ("result_type",) if hasattr(ember, n)}
    for name, fn in list(FUNCTIONS.items()) + list(extra.items()):
        if type(fn) is types.FunctionType and not hasattr(fn, "_op") and \
                not hasattr(fn, "_torch_function_front") and getattr(ember, name, None) is fn:
            w = _PUBLIC[fn] = _wrap_function(fn, True)
            _install(ember, name, fn, w)


def _wrap_module_functionals():
    """Modules that keep their functional as a class attribute (``Conv1d._conv =
    staticmethod(F.conv1d)``, pools, dropouts) call the wrapper too: a handler or mode then
    sees ``conv1d``, as torch's, not the ops inside it."""
    import ember.nn.functional as F
    wrapped = {id(fn): getattr(F, name) for ns, name, fn in _ORIGINALS if ns is F}
    for modname, mod in list(sys.modules.items()):
        if not modname.startswith("ember.nn.modules") or mod is None:
            continue
        for cls in list(vars(mod).values()):
            if not isinstance(cls, type) or cls.__module__ != modname:
                continue
            for name, v in list(vars(cls).items()):
                if isinstance(v, staticmethod) and id(v.__func__) in wrapped:
                    _ORIGINALS.append((cls, name, v))
                    setattr(cls, name, staticmethod(wrapped[id(v.__func__)]))


def _install(namespace, name, fn, wrapper):
    """Put ``wrapper`` in ``namespace`` for ``fn``, named so that pickle finds it there."""
    wrapper.__module__ = namespace.__name__
    _ORIGINALS.append((namespace, name, fn))
    setattr(namespace, name, wrapper)


def _unwrap_functional():
    """Put back the functions ``_wrap_functional`` replaced (tests isolate their
    protocol types with it: FX's and the JIT's pattern tables hold the functions)."""
    global _FUNCTIONAL_WRAPPED
    while _ORIGINALS:
        namespace, name, fn = _ORIGINALS.pop()
        setattr(namespace, name, fn)
    _PUBLIC.clear()
    _FUNCTIONAL_WRAPPED = False
