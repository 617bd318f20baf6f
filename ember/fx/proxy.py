"""Proxy: the stand-in value a traced function computes with. Every operation on a
Proxy -- operators, Tensor methods, attribute reads, ember functions (through the
``__torch_function__`` protocol) -- adds a node to the tracer's graph and returns a
new Proxy for its result."""
from __future__ import annotations

import dis
import operator
import sys

__all__ = ["Proxy", "Attribute", "ParameterProxy", "TraceError", "TracerBase"]


class TraceError(ValueError):
    pass


class TracerBase:
    """What a Proxy needs from its tracer: ``create_proxy`` and the policy hooks."""
    graph = None

    def create_node(self, kind, target, args, kwargs, name=None, type_expr=None):
        return self.graph.create_node(kind, target, args, kwargs, name, type_expr)

    def proxy(self, node):
        return Proxy(node, self)

    def create_proxy(self, kind, target, args, kwargs, name=None, type_expr=None,
                     proxy_factory_fn=None):
        """Record ``target(*args, **kwargs)`` as a node (its arguments go through
        ``create_arg``) and return its Proxy."""
        args_ = self.create_arg(args)
        kwargs_ = self.create_arg(kwargs)
        assert isinstance(args_, tuple) and isinstance(kwargs_, dict)
        node = self.create_node(kind, target, args_, kwargs_, name, type_expr)
        return self.proxy(node) if proxy_factory_fn is None else proxy_factory_fn(node)

    def create_arg(self, a):
        from ember.fx.node import map_aggregate
        return map_aggregate(a, lambda x: x.node if isinstance(x, Proxy) else x)

    def to_bool(self, obj):
        raise TraceError("symbolically traced variables cannot be used as inputs to "
                         "control flow")

    def iter(self, obj):
        raise TraceError("Proxy object cannot be iterated. This can be attempted when the "
                         "Proxy is used in a loop or as a *args or **kwargs function "
                         "argument. See the torch.fx docs on pytorch.org for a more detailed "
                         "explanation of what types of control flow can be traced, and check "
                         "out the Proxy docstring for help troubleshooting Proxy iteration "
                         "errors")

    def keys(self, obj):
        return Attribute(obj, "keys")()


class Proxy:
    """A traced value: wraps the Node that produces it."""

    def __init__(self, node, tracer=None):
        if tracer is None:
            tracer = GraphAppendingTracer(node.graph)
        self.tracer, self.node = tracer, node

    def __repr__(self):
        return f"Proxy({self.node.name})"

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return Attribute(self, name)

    def __getstate__(self):
        return self.__dict__

    def __setstate__(self, d):
        self.__dict__ = d

    def __deepcopy__(self, memo):
        raise RuntimeError("Proxy objects cannot be deep-copied during symbolic tracing")

    def _record(self, kind, target, *args, **kwargs):
        return self.tracer.create_proxy(kind, target, args, kwargs)

    def __call__(self, *args, **kwargs):
        return self._record("call_method", "__call__", self, *args, **kwargs)

    def __iter__(self):
        # ``a, b = proxy`` unpacks into getitem nodes; any other iteration is untraceable
        caller = sys._getframe(1)
        count = _unpack_count(caller.f_code, caller.f_lasti)
        if count is None:
            return self.tracer.iter(self)
        return iter([self[k] for k in range(count)])

    def __bool__(self):
        return self.tracer.to_bool(self)

    def __len__(self):
        raise RuntimeError("'len' is not supported in symbolic tracing by default. If you "
                           "want this call to be recorded, please call torch.fx.wrap('len') "
                           "at module scope")

    def keys(self):
        return self.tracer.keys(self)

    @classmethod
    def __torch_function__(cls, orig_method, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        tracer = _find_tracer((args, kwargs))
        from ember.overrides import is_tensor_method_or_property
        if is_tensor_method_or_property(orig_method):
            return tracer.create_proxy("call_method", orig_method.__name__, args, kwargs)
        if getattr(orig_method, "_torch_function_front", False):
            orig_method = orig_method.__wrapped__     # (ember.overrides' wrapper: the function)
        return tracer.create_proxy("call_function", orig_method, args, kwargs,
                                   name=tracer.graph._target_to_name(orig_method))


def _unpack_count(code, offset):
    """How many values the instruction at ``offset`` unpacks (None if it does not)."""
    by_offset = {inst.offset: inst for inst in dis.get_instructions(code)}
    inst = by_offset.get(offset)
    return inst.argval if inst is not None and inst.opname == "UNPACK_SEQUENCE" else None


def _find_tracer(tree):
    found = []

    def visit(x):
        if isinstance(x, Proxy):
            found.append(x.tracer)
        return x
    from ember.fx.node import map_aggregate
    map_aggregate(tree, visit)
    return found[0]


class GraphAppendingTracer(TracerBase):
    def __init__(self, graph):
        self.graph = graph


class Attribute(Proxy):
    """``proxy.name``: a getattr node made on first use as a value; calling it records
    a ``call_method`` node instead."""

    def __init__(self, root, attr):
        self.root, self.attr, self.tracer = root, attr, root.tracer
        self._value = None

    @property
    def node(self):
        if self._value is None:      # the getattr node exists only once the value is used
            self._value = self.root._record("call_function", getattr, self.root, self.attr)
        return self._value.node

    def __call__(self, *args, **kwargs):
        return self.root._record("call_method", self.attr, self.root, *args, **kwargs)


class ParameterProxy(Proxy):
    """A parameter's Proxy that answers shape questions with the real parameter
    (``Tracer(param_shapes_constant=True)``)."""

    def __init__(self, tracer, node, name, param):
        super().__init__(node, tracer)
        self.name, self.param = name, param

    def __repr__(self):
        return f"ParameterProxy({self.name})"

    @property
    def shape(self):
        return self.param.shape

    def size(self, dim=None):
        return self.param.size() if dim is None else self.param.size(dim)

    def dim(self):
        return self.param.dim()

    @property
    def ndim(self):
        return self.param.ndim

    def numel(self):
        return self.param.numel()

    def nelement(self):
        return self.param.nelement()


_REFLECTABLE = ("add", "sub", "mul", "floordiv", "truediv", "mod", "pow", "lshift",
                "rshift", "and", "or", "xor", "matmul")
_OTHER = ("eq", "ne", "lt", "gt", "le", "ge", "getitem")


def _op(name):
    return getattr(operator, name + "_" if name in ("and", "or") else name)


def _install_magic():
    for name in _REFLECTABLE + _OTHER:
        fn = _op(name)
        setattr(Proxy, f"__{name}__",
                lambda self, other, fn=fn: self.tracer.create_proxy(
                    "call_function", fn, (self, other), {}))
    for name in _REFLECTABLE:
        fn = _op(name)
        setattr(Proxy, f"__r{name}__",
                lambda self, other, fn=fn: self.tracer.create_proxy(
                    "call_function", fn, (other, self), {}))
    for name in ("neg", "pos", "invert"):
        fn = _op(name)
        setattr(Proxy, f"__{name}__",
                lambda self, fn=fn: self.tracer.create_proxy("call_function", fn, (self,), {}))


_install_magic()
Proxy.__hash__ = object.__hash__
