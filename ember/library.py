"""torch.library's Python custom-op API: ``custom_op`` and the registrations on its result.

``@custom_op("ns::name", mutates_args=())`` turns an annotated Python function into an op,
reachable as ``ember.ops.ns.name`` (and ``.default``). Calls run the function; with
``register_autograd(backward, setup_context=...)`` the call records a node (a generated
``autograd.Function`` named as torch's, ``GeneratedBackwardFor_ns_name_defaultBackward``)
whose backward is the user's. Without one, outputs of differentiable inputs still carry a
node whose backward raises torch's error. ``register_fake`` and ``register_kernel`` record
their functions (ember has one CPU device: a "cpu" kernel replaces the implementation).
"""
from __future__ import annotations

import inspect

__all__ = ["custom_op", "CustomOpDef", "register_autograd", "register_fake",
           "register_kernel", "Library"]

_REGISTRY = {}               # "ns::name" -> CustomOpDef


def _tensors_in(values):
    from ember._tensor import Tensor
    for v in values:
        if isinstance(v, Tensor):
            yield v
        elif isinstance(v, (list, tuple)):
            yield from _tensors_in(v)


class CustomOpDef:
    """The op ``custom_op`` makes: call it, or register autograd/fake/kernels on it."""

    def __init__(self, namespace, name, fn, mutates_args):
        self._namespace, self._name = namespace, name
        self._init_fn = fn
        self._mutates_args = mutates_args
        self._signature = inspect.signature(fn)
        self._kernels = {}
        self._fake_fn = None
        self._backward_fn = None
        self._setup_context_fn = None
        self._function = None
        self.__name__ = name
        self.__doc__ = fn.__doc__

    def __repr__(self):
        return f"<CustomOpDef({self._namespace}::{self._name})>"

    @property
    def _qualname(self):
        return f"{self._namespace}::{self._name}"

    @property
    def _opoverload(self):
        return _op_packet(self).default

    # ---------------------------------------------------------------- registrations
    def register_kernel(self, device_types, fn=None, /):
        def register(f):
            kinds = (device_types,) if isinstance(device_types, str) or device_types is None \
                else tuple(device_types)
            for kind in kinds:
                self._kernels[kind] = f
            return f
        return register if fn is None else register(fn)

    def register_fake(self, fn, /):
        self._fake_fn = fn
        return fn

    def register_autograd(self, backward, /, *, setup_context=None):
        if not callable(backward):
            raise TypeError(f"Expected `backward` to be callable, got {type(backward)}")
        self._backward_fn = backward
        self._setup_context_fn = setup_context
        return None

    def register_torch_dispatch(self, torch_dispatch_class, fn=None, /):
        raise NotImplementedError("CustomOpDef.register_torch_dispatch is not supported by "
                                  "ember")

    # ---------------------------------------------------------------- calls
    def _impl(self):
        kernel = self._kernels.get("cpu") or self._kernels.get(None) or self._init_fn

        def checked(*values):
            out = kernel(*values)
            _check_no_alias(self, kernel, values, out)
            return out
        return checked

    def __call__(self, *args, **kwargs):
        import ember
        bound = self._signature.bind(*args, **kwargs)
        bound.apply_defaults()
        values = list(bound.arguments.values())
        needs_graph = ember.is_grad_enabled() and any(
            t.requires_grad for t in _tensors_in(values))
        if not needs_graph:
            return self._impl()(*values)
        return self._autograd_function().apply(*values)

    def _autograd_function(self):
        if self._function is None:
            self._function = _make_function(self)
        return self._function


def _check_no_alias(op, kernel, values, out):
    """torch refuses outputs that are, or view, an input or another output."""
    outs = list(_tensors_in(out if isinstance(out, (list, tuple)) else [out]))
    if not outs:
        return
    seen = {t.untyped_storage().data_ptr() for t in _tensors_in(values) if t.numel()}
    for t in outs:
        if not t.numel():
            continue
        ptr = t.untyped_storage().data_ptr()
        if ptr in seen:
            raise RuntimeError(
                f"{op._name} (with implementation in {inspect.getmodule(kernel)}): The output "
                f"of this custom operator (1) must not also be an input to this custom operator "
                f"and (2) may not alias any inputs to this custom operator or other returns. "
                f"The most common way to trigger this error is if we have y = custom_op(x) and "
                f"y and x are the same Tensor. Please instead return a clone of the offending "
                f"output tensor(s) (e.g. return x.clone()) or refactor the custom operator to "
                f"not return y.")
        seen.add(ptr)


def _detached(values):
    from ember._tensor import Tensor
    out = []
    for v in values:
        if isinstance(v, Tensor):
            v = v.detach()
        elif isinstance(v, (list, tuple)):
            v = type(v)(_detached(v))
        out.append(v)
    return out


def _make_function(op):
    """The generated ``autograd.Function`` running ``op`` (its backward the registered one)."""
    from ember.autograd import Function

    label = f"{op._namespace}.{op._name}.default"

    def forward(ctx, *values):
        out = op._impl()(*_detached(values))      # the kernel sees no autograd
        if op._setup_context_fn is not None:
            op._setup_context_fn(ctx, tuple(values), out)
        return out

    def backward(ctx, *grads):
        if op._backward_fn is None:
            raise RuntimeError(f"Trying to backward through {label} but no autograd formula "
                               f"was registered. Please use register_autograd to add one.")
        res = op._backward_fn(ctx, *grads)
        return res if isinstance(res, tuple) else (res,)

    name = f"GeneratedBackwardFor_{op._namespace}_{op._name}_default"
    return type(name, (Function,), {"forward": staticmethod(forward),
                                    "backward": staticmethod(backward)})


def _check_annotations(fn):
    sig = inspect.signature(fn)
    for p in sig.parameters.values():
        if p.annotation is inspect.Parameter.empty:
            raise ValueError(f"infer_schema(func): Parameter {p.name} must have a type "
                             f"annotation. Got func with signature {sig})")
    if sig.return_annotation is inspect.Signature.empty:
        raise ValueError(f"infer_schema(func): No return type annotation was provided. Please "
                         f"add one. Got func with signature {sig})")


def custom_op(name, fn=None, /, *, mutates_args, device_types=None, schema=None):
    """Decorator: the annotated function ``fn`` as the op ``name`` ("namespace::name")."""
    if "::" not in name:
        raise ValueError(f"Expected there to be a namespace in {name}, i.e. The operator name "
                         f"should look something like ns::foo")
    namespace, opname = name.split("::", 1)
    if isinstance(mutates_args, str) and mutates_args != "unknown":
        raise ValueError("mutates_args must be an iterable of argument names or 'unknown'")

    def wrap(f):
        if schema is None:
            _check_annotations(f)
        op = CustomOpDef(namespace, opname, f, mutates_args)
        if device_types is not None:
            op.register_kernel(device_types, f)
        _REGISTRY[name] = op
        return op
    return wrap if fn is None else wrap(fn)


def _lookup(op):
    if isinstance(op, CustomOpDef):
        return op
    key = op if isinstance(op, str) else getattr(op, "_qualified_name", None)
    if key not in _REGISTRY:
        raise ValueError(f"register: {op} is not an operator made by torch.library.custom_op "
                         f"(ember supports only those)")
    return _REGISTRY[key]


def register_autograd(op, backward, /, *, setup_context=None, lib=None):
    """``op.register_autograd`` for an op given by name ("ns::name") or object."""
    return _lookup(op).register_autograd(backward, setup_context=setup_context)


def register_fake(op, fn=None, /, *, lib=None, _stacklevel=1):
    target = _lookup(op)
    return target.register_fake if fn is None else target.register_fake(fn)


def register_kernel(op, device_types, fn=None, /, *, lib=None):
    return _lookup(op).register_kernel(device_types, fn)


class Library:
    """torch.library.Library (schema strings and dispatch-key kernels): not in ember."""

    def __init__(self, ns, kind, dispatch_key=""):
        raise NotImplementedError("torch.library.Library (operator schemas and dispatch keys) "
                                  "is not supported by ember; use torch.library.custom_op")


# ------------------------------------------------------------------ ember.ops.<ns>.<name>

class _CustomOpOverload:
    """``ember.ops.ns.name.default``."""

    def __init__(self, op):
        self._op = op
        self._qualified_name = op._qualname

    def __call__(self, *args, **kwargs):
        return self._op(*args, **kwargs)

    def __str__(self):
        return f"{self._op._namespace}.{self._op._name}.default"

    def __repr__(self):
        return f"<OpOverload(op='{self._op._namespace}.{self._op._name}', overload='default')>"


class _CustomOpPacket:
    """``ember.ops.ns.name``: calls the op; ``.default`` is its single overload."""

    def __init__(self, op):
        self._op = op
        self._qualified_name = op._qualname
        self.default = _CustomOpOverload(op)
        self.__name__ = op._name

    def __call__(self, *args, **kwargs):
        return self._op(*args, **kwargs)

    def overloads(self):
        return ["default"]

    def __str__(self):
        return f"{self._op._namespace}.{self._op._name}"

    def __repr__(self):
        return f"<OpOverloadPacket(op='{self._op._namespace}.{self._op._name}')>"


def _op_packet(op):
    return _CustomOpPacket(op)


class CustomNamespace:
    """``ember.ops.<ns>`` for a namespace holding custom ops."""

    def __init__(self, name):
        self._name = name

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        op = _REGISTRY.get(f"{self._name}::{name}")
        if op is None:
            raise AttributeError(f"'_OpNamespace' '{self._name}' object has no attribute "
                                 f"'{name}'")
        return _op_packet(op)

    def __repr__(self):
        return f"<ember.ops.{self._name}>"
