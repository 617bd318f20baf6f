"""Symbolic tracing: run ``forward`` on Proxies and record what it does.

While ``Tracer.trace`` runs, a few names are patched and restored afterwards:
``Module.__call__`` (submodule calls go through ``call_module``: leaves become
``call_module`` nodes, others are traced through), ``Module.__getattr__`` (parameters
become ``get_attr`` nodes), the public functions of ``ember``, ``ember.nn.functional``,
``linalg``, ``fft`` and ``special`` (a call with a Proxy argument becomes a
``call_function`` node, arguments as the user wrote them), and the functions registered
with ``wrap``. Ops reached any other way still see the Proxy through the
``__torch_function__`` protocol.
"""
from __future__ import annotations

import builtins
import contextlib
import functools
import inspect
import math
import sys

import ember
from ember import nn
from ember.fx.graph import Graph
from ember.fx.proxy import Proxy, ParameterProxy, TracerBase
from ember.fx._names import namespace_functions, FUNCTIONAL_BUILTINS

__all__ = ["Tracer", "symbolic_trace", "wrap", "PH", "PHBase"]

_WRAPPED = []                  # (globals dict, name) registered by wrap()
WRAPPED_FUNCTIONS = {}         # id(original function) -> it, for codegen's wrap() lines
_NAMESPACES = ("", "nn.functional", "linalg", "fft", "special")

# nn.functional functions that torch implements in C (_names.FUNCTIONAL_BUILTINS) are
# recorded with the user's arguments unchanged; the others record their first `n`
# parameters positionally and the rest by keyword, defaults filled in, as torch's Python
# functional wrappers pass them on.
_LEADING = {"max_pool1d": 2, "max_pool2d": 2, "max_pool3d": 2, "batch_norm": 3,
            "instance_norm": 1, "layer_norm": 2, "group_norm": 2, "pad": 2,
            "embedding": 2, "adaptive_max_pool1d": 2, "adaptive_max_pool2d": 2,
            "adaptive_max_pool3d": 2, "unfold": 2, "fold": 3, "grid_sample": 2,
            "affine_grid": 2, "local_response_norm": 2, "embedding_bag": 2,
            "triplet_margin_loss": 3, "margin_ranking_loss": 3, "gaussian_nll_loss": 3,
            "cosine_embedding_loss": 3, "ctc_loss": 4, "lp_pool1d": 3, "lp_pool2d": 3,
            "lp_pool3d": 3, "max_unpool1d": 3, "max_unpool2d": 3, "max_unpool3d": 3}
_AS_METHOD = {"sigmoid", "tanh"}     # torch's F.sigmoid(x) is x.sigmoid()
_LOSSES_LEADING = 2            # input, target


def _leading(name):
    if name in _LEADING:
        return _LEADING[name]
    return _LOSSES_LEADING if name.endswith("_loss") or name in (
        "cross_entropy", "nll_loss", "binary_cross_entropy",
        "binary_cross_entropy_with_logits", "kl_div") else 1


def _has_proxy(tree):
    """The first Proxy inside nested tuples/lists/dicts ``tree`` (None if there is none)."""
    if isinstance(tree, Proxy):
        return tree
    if isinstance(tree, (tuple, list)):
        items = tree
    elif isinstance(tree, dict):
        items = tree.values()
    elif isinstance(tree, slice):
        items = (tree.start, tree.stop, tree.step)
    else:
        return None
    for item in items:
        found = _has_proxy(item)
        if found is not None:
            return found
    return None


def _functional_call(fn, name):
    """Arguments of an nn.functional call as torch's wrapper passes them on."""
    if name in FUNCTIONAL_BUILTINS:
        return None
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    lead = _leading(name)

    def split(args, kwargs):
        bound = sig.bind(*args, **kwargs)
        bound.apply_defaults()
        items = list(bound.arguments.items())
        if any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in sig.parameters.values()):
            return args, kwargs
        return tuple(v for _, v in items[:lead]), dict(items[lead:])
    return split


def _assert(condition, message):
    """``torch._assert``: raise AssertionError(message) unless ``condition``."""
    if not condition:
        raise AssertionError(message)


def _assert_is_none(value, msg):
    assert value is None, msg


def _single_varargs(fn):
    """``fn`` with its ``*args`` turned into one ordinary parameter, so tracing passes
    a single Proxy for the whole tuple (indexing it records getitem nodes)."""
    code = getattr(fn, "__code__", None)
    if code is None or not code.co_flags & inspect.CO_VARARGS or code.co_kwonlyargcount:
        return fn
    new = code.replace(co_argcount=code.co_argcount + 1,
                       co_flags=code.co_flags & ~inspect.CO_VARARGS)
    patched = type(fn)(new, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
    patched.__signature__ = inspect.signature(fn)
    return patched


def _recording(fn, name=None, split=None, kind="call_function"):
    """``fn``, recording a call_function node when a Proxy is among its arguments
    (a call_method node named ``name`` for ``kind="call_method"``)."""
    fn = getattr(fn, "__fx_original__", fn)
    target = name if kind == "call_method" else fn
    @functools.wraps(fn)
    def recorder(*args, **kwargs):
        proxy = _has_proxy((args, kwargs))
        if proxy is None:
            return fn(*args, **kwargs)
        if split is not None:
            args, kwargs = split(args, kwargs)
        return proxy.tracer.create_proxy(kind, target, args, kwargs)
    recorder.__fx_original__ = fn
    return recorder


class _Patcher:
    """Sets attributes for the duration of a trace and restores them afterwards."""

    def __init__(self):
        self._undo = []

    def setattr(self, obj, name, value):
        self._undo.append((obj, name, obj.__dict__.get(name, _MISSING)
                           if not isinstance(obj, dict) else obj.get(name, _MISSING)))
        if isinstance(obj, dict):
            obj[name] = value
        else:
            setattr(obj, name, value)

    def restore(self):
        for obj, name, old in reversed(self._undo):
            if isinstance(obj, dict):
                if old is _MISSING:
                    obj.pop(name, None)
                else:
                    obj[name] = old
            elif old is _MISSING:
                delattr(obj, name)
            else:
                setattr(obj, name, old)
        self._undo.clear()


_MISSING = object()


def patch_namespaces(patcher):
    """Make ember's public functions record a node when called with a Proxy."""
    for path in _NAMESPACES:
        ns, fns = namespace_functions(path)
        for name, fn in fns:
            if path == "nn.functional" and name in _AS_METHOD:
                patcher.setattr(ns, name, _recording(fn, name, kind="call_method"))
                continue
            split = _functional_call(fn, name) if path == "nn.functional" else None
            patcher.setattr(ns, name, _recording(fn, name, split))


@contextlib.contextmanager
def recording_calls():
    """While inside, ember functions called with Proxies record nodes (used when a
    GraphModule is called with Proxies outside of a trace)."""
    patcher = _Patcher()
    try:
        patch_namespaces(patcher)
        yield
    finally:
        patcher.restore()


class PHBase:
    """Marker for ``concrete_args`` entries that stay symbolic (pass ``PH``)."""

    def __repr__(self):
        return "PH"


PH = PHBase()


class Tracer(TracerBase):
    """Turns a Module or function into a Graph. Override ``is_leaf_module`` to decide
    which submodules stay opaque, ``create_arg`` for new constant types."""

    def __init__(self, autowrap_modules=(math,), autowrap_functions=(),
                 param_shapes_constant=False):
        self.autowrap_modules = tuple(autowrap_modules)
        self.autowrap_functions = tuple(autowrap_functions)
        self._autowrap_ids = {id(v) for m in self.autowrap_modules
                              for k, v in vars(m).items()
                              if not k.startswith("_") and callable(v)}
        self._autowrap_ids |= {id(f) for f in self.autowrap_functions}
        self.param_shapes_constant = param_shapes_constant
        self.submodule_paths = None
        self.root = None
        self.graph = None
        self.tensor_attrs = {}

    # ------------------------------------------------------------- policy hooks
    def is_leaf_module(self, m, module_qualified_name):
        """Standard ``ember.nn`` modules (not Sequential) are leaves."""
        module = type(m).__module__ or ""
        return (module.startswith("ember.nn") or module.startswith("torch.nn")) \
            and not isinstance(m, nn.Sequential)

    def path_of_module(self, mod):
        if self.submodule_paths is not None:
            path = self.submodule_paths.get(id(mod))
            if path is None:
                raise NameError("module is not installed as a submodule")
            return path
        for name, m in self.root.named_modules():
            if m is mod:
                return name
        raise NameError("module is not installed as a submodule")

    def call_module(self, m, forward, args, kwargs):
        """A submodule call: a ``call_module`` node for leaves, else trace through."""
        name = self.path_of_module(m)
        if not self.is_leaf_module(m, name):
            return forward(*args, **kwargs)
        return self.create_proxy("call_module", name, args, kwargs)

    def getattr(self, attr, attr_val, parameter_proxy_cache):
        """Reading a module attribute: parameters (and buffers) become get_attr nodes."""
        if not isinstance(attr_val, ember.Tensor):
            return attr_val
        name = self.tensor_attrs.get(id(attr_val))
        if name is None or not isinstance(attr_val, nn.Parameter) and \
                not getattr(self, "proxy_buffer_attributes", True):
            return attr_val
        if name not in parameter_proxy_cache:
            if self.param_shapes_constant and isinstance(attr_val, nn.Parameter):
                node = self.create_node("get_attr", name, (), {})
                parameter_proxy_cache[name] = ParameterProxy(self, node, name, attr_val)
            else:
                parameter_proxy_cache[name] = self.create_proxy("get_attr", name, (), {})
        return parameter_proxy_cache[name]

    def create_arg(self, a):
        """Turn a traced value into a node argument (Tensors become get_attr nodes)."""
        if isinstance(a, Proxy):
            return a.node
        if isinstance(a, nn.Parameter) or isinstance(a, ember.Tensor):
            name = self.tensor_attrs.get(id(a))
            if name is None:
                i = 0
                while hasattr(self.root, f"_tensor_constant{i}"):
                    i += 1
                name = f"_tensor_constant{i}"
                setattr(self.root, name, a)
                self.tensor_attrs[id(a)] = name
            return self.create_node("get_attr", name, (), {})
        if isinstance(a, tuple) and not hasattr(a, "_fields"):
            return tuple(self.create_arg(x) for x in a)
        if isinstance(a, tuple):
            return type(a)(*(self.create_arg(x) for x in a))
        if isinstance(a, list):
            return [self.create_arg(x) for x in a]
        if isinstance(a, dict):
            out = {}
            for k, v in a.items():
                if not isinstance(k, str):
                    raise RuntimeError(f"Keys for dictionaries used as an argument cannot "
                                       f"contain a Node. Got key: {k}")
                out[k] = self.create_arg(v)
            return out
        if isinstance(a, (slice, range)):
            return type(a)(*map(self.create_arg, (a.start, a.stop, a.step)))
        if a is None or a is Ellipsis or isinstance(
                a, (str, int, float, bool, complex, ember.dtype, ember.device,
                    ember.layout, ember.memory_format, type(builtins.print))):
            return a
        if isinstance(a, nn.Module):
            raise NotImplementedError(f"argument of type: {type(a)}")
        if callable(a):
            return a
        raise NotImplementedError(f"argument of type: {type(a)}")

    # ------------------------------------------------------------------ tracing
    def trace(self, root, concrete_args=None):
        """Record ``root`` (a Module or a function) as a Graph."""
        if isinstance(root, nn.Module):
            self.root = root
            fn = _single_varargs(inspect.unwrap(type(root).forward))
            fn_globals = fn.__globals__
        else:
            self.root = nn.Module()
            fn = _single_varargs(root)
            fn_globals = getattr(fn, "__globals__", {})
        self.graph = Graph(tracer_cls=type(self))
        self.submodule_paths = {id(m): n for n, m in self.root.named_modules()}
        self.tensor_attrs = {}
        for name, t in list(self.root.named_parameters()) + list(self.root.named_buffers()):
            self.tensor_attrs.setdefault(id(t), name)
        self._collect_tensor_attrs(self.root, "")
        args = self._placeholders(fn, isinstance(root, nn.Module), concrete_args)
        patcher = _Patcher()
        try:
            self._patch(patcher, fn_globals)
            result = fn(*args)
        finally:
            patcher.restore()
        returns = inspect.signature(fn).return_annotation
        self.create_node("output", "output", (self.create_arg(result),), {},
                         type_expr=None if returns is inspect.Signature.empty else returns)
        self.submodule_paths = None
        return self.graph

    def _collect_tensor_attrs(self, module, prefix):
        for k, v in vars(module).items():
            if isinstance(v, ember.Tensor):
                self.tensor_attrs.setdefault(id(v), prefix + k)
        for name, child in module.named_children():
            self._collect_tensor_attrs(child, f"{prefix}{name}.")

    def _placeholders(self, fn, skip_self, concrete_args):
        """One placeholder per parameter of ``fn``. A ``concrete_args`` value is passed
        in as it is, and the graph checks at run time that the input still equals it."""
        params = list(inspect.signature(fn).parameters.values())[1 if skip_self else 0:]
        concrete_args = dict(concrete_args or {})
        args = [self.root] if skip_self else []
        for p in params:
            default = () if p.default is inspect.Parameter.empty else (p.default,)
            if p.name in concrete_args:
                value = concrete_args[p.name]
                proxy = self.create_proxy("placeholder", p.name + "_1", default, {})
                if isinstance(value, PHBase):
                    args.append(proxy)
                    continue
                message = f"{p.name} has been specialized to have value {value} but got " \
                          f"another value"
                if value is None:
                    self.create_proxy("call_function", _assert_is_none, (proxy, message), {})
                else:
                    self.create_proxy("call_function", _assert, (proxy == value, message), {})
                args.append(value)
            elif p.kind == p.VAR_POSITIONAL:
                args.append(self.create_proxy("placeholder", "*" + p.name, (), {}))
            elif p.kind == p.VAR_KEYWORD:
                raise NotImplementedError("**kwargs are not supported by symbolic tracing")
            else:
                annotation = None if p.annotation is inspect.Parameter.empty else p.annotation
                args.append(self.create_proxy("placeholder", p.name, default, {},
                                              type_expr=annotation))
        return args

    def _patch(self, patcher, fn_globals):
        tracer, cache = self, {}
        orig_call, orig_getattr = nn.Module.__call__, nn.Module.__getattr__

        def module_call(mod, *args, **kwargs):
            return tracer.call_module(mod, lambda *a, **k: orig_call(mod, *a, **k),
                                      args, kwargs)

        def module_getattr(mod, attr):
            return tracer.getattr(attr, orig_getattr(mod, attr), cache)

        patcher.setattr(nn.Module, "__call__", module_call)
        patcher.setattr(nn.Module, "__getattr__", module_getattr)
        patch_namespaces(patcher)
        for globs, name in _WRAPPED:
            original = globs.get(name, getattr(builtins, name, None))
            if original is not None:
                WRAPPED_FUNCTIONS[id(original)] = original
                patcher.setattr(globs, name, _recording(original))
        for name, value in list(fn_globals.items()):
            if id(value) in self._autowrap_ids:
                WRAPPED_FUNCTIONS[id(value)] = value
                patcher.setattr(fn_globals, name, _recording(value))
        for module in self.autowrap_modules:
            for name, value in list(vars(module).items()):
                if id(value) in self._autowrap_ids:
                    WRAPPED_FUNCTIONS[id(value)] = value
                    patcher.setattr(module, name, _recording(value))

    def __deepcopy__(self, memo):
        import copy
        new = type(self).__new__(type(self))
        for k, v in self.__dict__.items():
            new.__dict__[k] = v if k in ("autowrap_modules",) else copy.deepcopy(v, memo)
        return new


def wrap(fn_or_name):
    """Record calls to a module-level function as ``call_function`` nodes instead of
    tracing through it: ``fx.wrap("name")`` at module scope, or ``@fx.wrap``."""
    if callable(fn_or_name):
        name = fn_or_name.__name__
    elif isinstance(fn_or_name, str):
        name = fn_or_name
    else:
        raise AssertionError("Unsupported type for global function! Must be either a "
                             "callable or string name")
    frame = sys._getframe(1)
    if frame.f_code.co_name != "<module>":
        raise NotImplementedError("wrap must be called at the top level of a module")
    _WRAPPED.append((frame.f_globals, name))
    return fn_or_name


def symbolic_trace(root, concrete_args=None):
    """Trace ``root`` (Module or function) into a GraphModule."""
    from ember.fx.graph_module import GraphModule
    tracer = Tracer()
    graph = tracer.trace(root, concrete_args)
    name = type(root).__name__ if isinstance(root, nn.Module) else root.__name__
    return GraphModule(tracer.root, graph, name)


def _register_names():
    from ember.fx import _names
    _names._EXTRA[id(_assert)] = (_assert, "torch._assert")
    _names._EXTRA[id(_assert_is_none)] = (_assert_is_none,
                                          "torch.fx._symbolic_trace._assert_is_none")


_register_names()
