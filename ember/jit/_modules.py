"""Scripting ``nn.Module``s: each instance becomes a ``RecursiveScriptModule`` with a
``ClassType`` (its parameters, buffers, submodules, typed attributes and constants) and
methods compiled on first reference. Containers (``ModuleList``, ``Sequential``,
``ModuleDict``) are indexed with constants and iterated by unrolling.
"""
from __future__ import annotations

import inspect
import types

from ember import nn
from ember.jit import _sugar as S
from ember.jit import _types as T
from ember.jit._script import (Function, Resolver, _globals_of, compile_method,
                               qualified_class_name)
from ember.jit.frontend import CompileError

_CONTAINERS = (nn.ModuleList, nn.Sequential, nn.ModuleDict)
_SKIP_ATTRS = {"training", "dump_patches", "call_super_init"}


def is_container(m):
    return isinstance(m.original_class if isinstance(m, RecursiveScriptModule) else m,
                      type) and issubclass(m.original_class, _CONTAINERS) \
        if isinstance(m, RecursiveScriptModule) else isinstance(m, _CONTAINERS)


def _constant_names(cls):
    names = set()
    for klass in reversed(cls.__mro__):
        names.update(getattr(klass, "__constants__", ()) or ())
        for name, ann in (klass.__dict__.get("__annotations__", {}) or {}).items():
            if "Final" in str(ann):
                names.add(name)
    return names


def _attribute_annotations(cls):
    out = {}
    for klass in reversed(cls.__mro__):
        if klass in (nn.Module, object):
            continue
        for name, ann in (klass.__dict__.get("__annotations__", {}) or {}).items():
            if "Final" in str(ann):
                continue
            out[name] = (ann, getattr(inspect.getmodule(klass), "__dict__", {}))
    return out


def script_module(module, memo=None):
    """The RecursiveScriptModule of ``module`` (submodules scripted first)."""
    memo = {} if memo is None else memo
    if id(module) in memo:
        return memo[id(module)]
    if isinstance(module, RecursiveScriptModule):
        return module
    if "_ember_compiled" in module.__dict__:        # a compiled ScriptModule subclass
        return module.__dict__["_ember_compiled"]
    cls = type(module)
    _check_initialized(module)
    children = {name: (script_module(m, memo) if m is not None else None)
                for name, m in module._modules.items()}
    slots, attrs, constants = {}, {"training": T.BoolType}, {}
    for name, p in module._parameters.items():
        attrs[name] = T.TensorType if p is not None else T.NoneType
        slots[name] = "_parameters"
    for name, b in module._buffers.items():
        attrs[name] = T.TensorType if b is not None else T.NoneType
        slots[name] = "_buffers"
    for name, ch in children.items():
        attrs[name] = ch._ct if ch is not None else T.NoneType
        slots[name] = "_modules"
    const_names = _constant_names(cls)
    annotated = _attribute_annotations(cls)
    plain, functions, failed = {}, {}, {}
    for name, v in module.__dict__.items():
        if name in _module_internals() and name not in annotated or name in _SKIP_ATTRS \
                or name.startswith("__"):
            continue
        if name in const_names:
            constants[name] = v if not isinstance(v, list) else tuple(v)
            continue
        if _is_jit_attribute(v):         # self.x = jit.Attribute(value, type)
            try:
                t = T.from_annotation(v.type, None, getattr(inspect.getmodule(cls), "__dict__", {}))
            except T.AnnotationError:
                continue
            attrs[name] = t
            plain[name] = v.value
            continue
        if callable(v) and not isinstance(v, (nn.Module, type)) and name not in annotated:
            functions[name] = v             # e.g. self.activation = F.relu
            continue
        try:
            if name in annotated:
                ann, env = annotated[name]
                t = T.from_annotation(ann, None, env) if not isinstance(ann, str) else \
                    T.from_annotation(ann, None, env)
            else:
                t = T.type_of_value(v)
        except (T.AnnotationError, Exception):
            failed[name] = type(v).__name__
            continue             # torch: an attribute of unsupported type fails only if used
        attrs[name] = t
        plain[name] = v
    for name in const_names:
        if name not in constants and hasattr(module, name) and name not in attrs:
            v = getattr(module, name)
            if not isinstance(v, nn.Module):
                constants[name] = v if not isinstance(v, list) else tuple(v)
    constants["$slots"] = slots
    constants["$functions"] = functions
    constants["$failed"] = failed
    ct = T.ClassType(qualified_class_name(cls), cls, True, attrs, {}, constants)
    rsm = RecursiveScriptModule._construct(module, ct, children, plain)
    memo[id(module)] = rsm
    # compile forward and the exported methods now (errors surface at script time)
    if _has_forward(cls):
        module_function(rsm, "forward")
    for name in _exported(cls):
        fn = module_function(rsm, name)
        if name != "forward":       # before nn.Module's own methods of that name (half...)
            rsm.__dict__[name] = ScriptMethod(rsm, fn)
    return rsm


def _check_initialized(module):
    from ember.nn.parameter import UninitializedTensorMixin
    lazy = [n for n, p in module._parameters.items() if isinstance(p, UninitializedTensorMixin)]
    if lazy:
        cls = type(module)
        name = qualified_class_name(cls)[len("__torch__."):]
        raise RuntimeError(f"'{name}' has uninitialized parameters {lazy[0]}. Did you "
                           f"forget to run a forward pass?")


def _module_internals():
    """The ``__dict__`` entries every ``nn.Module`` has (hooks, parameter dicts...): not
    attributes of the scripted class."""
    global _INTERNALS
    if _INTERNALS is None:
        _INTERNALS = frozenset(nn.Module().__dict__)
    return _INTERNALS


_INTERNALS = None


def _is_jit_attribute(v):
    from ember.jit import Attribute
    return isinstance(v, Attribute)


def _has_forward(cls):
    for klass in cls.__mro__:
        if "forward" in klass.__dict__:
            return klass is not nn.Module
    return False


def _exported(cls):
    out = []
    for klass in cls.__mro__:
        for name, f in klass.__dict__.items():
            if getattr(f, "_ember_jit_export", False) and name not in out:
                out.append(name)
    return out


def _find_method(cls, name):
    for klass in cls.__mro__:
        if name in klass.__dict__:
            return klass.__dict__[name]
    return None


def module_function(rsm, name):
    """The compiled Function of method ``name`` of a scripted module (compiled once)."""
    ct = rsm._ct
    fn = ct.methods.get(name)
    if fn == "compiling":
        raise CompileError(f"Recursive method calls are not supported: {name}")
    if fn is not None:
        return fn
    pyfn = _find_method(rsm.original_class, name)
    if pyfn is None and name.startswith("__") and name.endswith("_getter"):
        prop = _find_method(rsm.original_class, name[2:-len("_getter")])
        pyfn = prop.fget if isinstance(prop, property) else None
    if pyfn is None or not callable(pyfn):
        return None
    if getattr(pyfn, "_ember_jit_unused", False):
        pyfn = getattr(pyfn, "_ember_jit_unused_replacement", pyfn)
    return compile_method(ct, name, pyfn, ModuleResolver(_globals_of(pyfn), ct, rsm), rsm)


def module_forward_function(modsugar):
    return module_function(modsugar.module, "forward")


class ModuleResolver(Resolver):
    def __init__(self, globals_, ct, rsm):
        super().__init__(globals_)
        self.ct, self.rsm = ct, rsm

    def submodule(self, mod, attr):
        rsm = mod.module
        ch = rsm._modules.get(attr, _MISSING) if isinstance(rsm, RecursiveScriptModule) else _MISSING
        if ch is _MISSING or ch is None:
            return None
        return S.ModuleValue(None, ch, ch._ct)

    def module_method(self, mod, attr):
        rsm = mod.module
        f = _find_method(rsm.original_class, attr)
        if f is None:
            return None
        if getattr(f, "_ember_jit_ignore", False):
            return S.IgnoredFunction(_bound_original(rsm, f))
        if isinstance(f, property):
            if attr in (getattr(rsm.original_class, "__jit_unused_properties__", ()) or ()):
                return None
            return S.PropertyGet(attr)
        if isinstance(f, staticmethod):
            return self.wrap(f.__func__, attr)
        if inspect.isfunction(f):
            return S.Method(mod, attr)
        if f is None or isinstance(f, (bool, int, float, str, tuple)):
            return S.PythonConstant(f)         # a class-level constant
        return None

    def call_module(self, c, mod, name, args, kwargs, e):
        from ember.jit._calls import bind_script_args
        rsm = mod.module
        if is_container(rsm) and name in ("items", "keys", "values"):
            c.error(f"{name}() of a module container must be iterated in a for loop", e)
        try:
            fn = module_function(rsm, name)
        except CompileError as err:
            if "Recursive" in str(err):
                c.error(str(err), e)
            raise
        if fn is None:
            c.error(f"Module '{rsm.original_name}' has no method '{name}'", e)
        vals = bind_script_args(c, name, fn.arg_schema, args, kwargs, e,
                                decl=fn.schema_str(), has_self=True)
        n = c.emit("prim::CallMethod", [mod.value] + vals, [fn.return_type], e, {"name": name})
        n.fn = _HookedCall(fn) if name == "forward" and _has_forward_hooks(rsm) else fn
        return n.output

    def container_items(self, c, mod, e, kind="values"):
        """The children of a container module, as ModuleValues (unrolled iteration)."""
        rsm = mod.module
        out = []
        for key, ch in rsm._modules.items():
            v = c.emit("prim::GetAttr", [mod.value], [ch._ct], e, {"name": key}, names=[key]).output
            mv = S.ModuleValue(v, ch, ch._ct)
            if kind == "items":
                out.append(S.TupleSugar([S.PythonConstant(key), mv]))
            elif kind == "keys":
                out.append(S.PythonConstant(key))
            else:
                out.append(mv)
        return out


_HOOK_DICTS = ("_forward_hooks", "_forward_pre_hooks", "_forward_hooks_with_kwargs",
               "_forward_pre_hooks_with_kwargs", "_forward_hooks_always_called")


def _has_forward_hooks(module):
    return bool(module._forward_hooks or module._forward_pre_hooks)


class _HookedCall:
    """A submodule's forward called with the forward hooks it had when it was scripted: the
    call goes through ``Module.__call__`` (hooks, then the compiled forward). Such calls
    are not inlined by the passes and take the dispatcher path."""

    def __init__(self, fn):
        self.function = fn
        self.name, self.qualified_name = fn.name, fn.qualified_name
        self.return_type, self.arg_schema = fn.return_type, fn.arg_schema

    @staticmethod
    def py(module, *args):
        return module(*args)


def _bound_original(rsm, f):
    def call(*args, **kwargs):
        return f(rsm, *args, **kwargs)
    call.__qualname__ = getattr(f, "__qualname__", "ignored")
    call.__annotations__ = getattr(f, "__annotations__", {})
    call.__wrapped__ = f
    return call


_MISSING = object()


def _lite_deprecated():
    # torch 2.13's saves for the lite interpreter warn at the caller's line
    import warnings
    warnings.warn("Lite Interpreter is deprecated. Please consider switching to ExecuTorch."
                  "             https://docs.pytorch.org/executorch/stable/getting-started.html",
                  DeprecationWarning, stacklevel=3)


# --------------------------------------------------------------------------- the module

class ScriptModule(nn.Module):
    """Base of scripted modules (``isinstance(m, jit.ScriptModule)``).

    Subclassed directly it is torch's older API: methods decorated ``@jit.script_method``
    are compiled when the most derived ``__init__`` returns. The instance keeps its class;
    its submodules become their scripted modules (sharing parameters), its script methods
    run compiled, and ``code``/``graph``/``save`` are those of the compiled module."""

    _ember_recursive = False          # True for RecursiveScriptModule and its subclasses

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        init = cls.__dict__.get("__init__")
        if cls._ember_recursive or init is None:
            return

        def __init__(self, *args, **kw):
            init(self, *args, **kw)
            if type(self).__init__ is __init__:      # the most derived __init__ is done
                _compile_script_module(self)
        __init__.__qualname__, __init__.__doc__ = init.__qualname__, init.__doc__
        __init__.__wrapped__ = init
        cls.__init__ = __init__

    def _compiled(self):
        c = self.__dict__.get("_ember_compiled")
        if c is None:
            raise RuntimeError(f"{type(self).__name__} has not been compiled (its __init__ "
                               f"has not returned)")
        return c

    @property
    def graph(self):
        return self._compiled().graph

    @property
    def code(self):
        return self._compiled().code

    def save(self, f, _extra_files=None):
        from ember.jit._serialization import save
        save(self._compiled(), f, _extra_files=_extra_files)

    def train(self, mode=True):
        super().train(mode)
        c = self.__dict__.get("_ember_compiled")
        if c is not None:
            c.__dict__["training"] = mode
        return self


def _compile_script_module(module):
    """Compile a ScriptModule subclass instance in place (``@jit.script_method``)."""
    rsm = script_module(module)
    d = module.__dict__
    d["_ember_compiled"] = rsm
    for name, ch in rsm._modules.items():
        module._modules[name] = ch
    for name, fn in list(rsm._ct.methods.items()):
        if isinstance(fn, Function):
            d[name] = ScriptMethod(rsm, fn)


def script_method(fn):
    """``@jit.script_method``: a method of a ``jit.ScriptModule`` subclass compiled when
    the instance is constructed."""
    fn._ember_jit_export = True
    return fn


class RecursiveScriptModule(ScriptModule):
    """A scripted module: shares the original's parameters and buffers; its compiled
    methods run in place of the Python ones."""

    _ember_recursive = True

    def __init__(self, *a, **k):
        raise RuntimeError("RecursiveScriptModule is created by ember.jit.script")

    @classmethod
    def _construct(cls, original, ct, children, plain):
        self = nn.Module.__new__(cls)
        nn.Module.__init__(self)
        d = self.__dict__
        d["_ct"] = ct
        d["original_class"] = type(original)
        d["original_name"] = type(original).__name__
        d["training"] = original.training
        for name, p in original._parameters.items():
            self._parameters[name] = p
        for name, b in original._buffers.items():
            self._buffers[name] = b
        self._non_persistent_buffers_set = set(getattr(original, "_non_persistent_buffers_set", ()))
        for name, ch in children.items():
            self._modules[name] = ch
        for name, v in plain.items():
            d[name] = v
        for name in _HOOK_DICTS:          # hooks registered before scripting keep running
            getattr(self, name).update(getattr(original, name, {}))
        for name, v in ct.constants.items():
            if not name.startswith("$"):
                d[name] = v
        return self

    def __setattr__(self, name, value):
        # a Final attribute or a name in __constants__ is baked into the compiled code
        ct = self.__dict__.get("_ct")
        if ct is not None and not name.startswith("$") and name in ct.constants:
            raise RuntimeError(f"Can't set constant '{name}' which has value:"
                               f"{ct.constants[name]}")
        super().__setattr__(name, value)

    # calls ---------------------------------------------------------------------------
    def forward(self, *args, **kwargs):
        fn = self._ct.methods.get("forward")
        if fn is None or fn == "compiling":
            raise RuntimeError(f"Method 'forward' is not defined on the scripted module "
                               f"{self.original_name}")
        return fn.call_method(self, args, kwargs)

    def _method(self, name):
        fn = self._ct.methods.get(name)
        if fn is None or fn == "compiling":
            fn = module_function(self, name) if _find_method(self.original_class, name) is not None else None
        return fn

    def __getattr__(self, name):
        try:
            return nn.Module.__getattr__(self, name)
        except AttributeError:
            pass
        ct = self.__dict__.get("_ct")
        if ct is not None and not name.startswith("__"):
            fn = ct.methods.get(name)
            if isinstance(fn, Function):
                return ScriptMethod(self, fn)
            getter = ct.methods.get(f"__{name}_getter")
            if isinstance(getter, Function):          # a property used by scripted code
                return getter.call_method(self, (), {})
            # an @ignore'd or @unused method stays a Python method of the scripted module
            # (called from Python it runs the original, as torch's)
            cls = self.__dict__.get("original_class")
            f = _find_method(cls, name) if isinstance(cls, type) else None
            if inspect.isfunction(f) and getattr(f, "_ember_jit_ignore", False):
                return types.MethodType(f, self)
        raise AttributeError(f"'RecursiveScriptModule' object has no attribute '{name}'")

    # container protocol: a scripted ModuleList / Sequential / ModuleDict answers len(),
    # indexing, iteration and ``in`` through its original class's methods; other scripted
    # modules raise NotImplementedError, as torch's
    def _original_magic(self, name, *args):
        cls = self.original_class
        fn = getattr(cls, name, None)
        if fn is None or fn is getattr(nn.Module, name, None):
            raise NotImplementedError()
        view = nn.Module.__new__(cls)         # the container over this module's children
        nn.Module.__init__(view)
        view.__dict__["_modules"] = self._modules
        return getattr(view, name)(*args)

    def __len__(self):
        return self._original_magic("__len__")

    def __getitem__(self, idx):
        return self._original_magic("__getitem__", idx)

    def __iter__(self):
        return self._original_magic("__iter__")

    def __contains__(self, key):
        return self._original_magic("__contains__", key)

    # introspection --------------------------------------------------------------------
    @property
    def graph(self):
        return self._forward_fn().graph

    @property
    def inlined_graph(self):
        from ember.jit._passes import inlined
        return inlined(self._forward_fn().graph)

    @property
    def code(self):
        from ember.jit._printer import function_code
        if not isinstance(self._ct.methods.get("forward"), Function):
            raise AttributeError("'RecursiveScriptModule' object has no attribute 'code'")
        return function_code(self._forward_fn())

    @property
    def code_with_constants(self):
        return self.code, {}

    def _forward_fn(self):
        fn = self._ct.methods.get("forward")
        if not isinstance(fn, Function):
            raise RuntimeError("Method 'forward' is not defined.")
        return fn

    @property
    def _c(self):
        return self

    def _type(self):
        return self._ct

    def extra_repr(self):
        return f"original_name={self.original_name}"

    def __repr__(self):
        lines = [f"{k}: {repr(m)}" for k, m in self._modules.items()]
        head = "RecursiveScriptModule(original_name=" + self.original_name
        if not lines:
            return head + ")"
        body = "\n".join("  (" + k + "): " + repr(m).replace("\n", "\n  ")
                         for k, m in self._modules.items())
        return f"RecursiveScriptModule(\n  original_name={self.original_name}\n{body}\n)"

    def save(self, f, _extra_files=None):
        from ember.jit._serialization import save
        save(self, f, _extra_files=_extra_files)

    def _save_for_lite_interpreter(self, f, _extra_files=None):
        from ember.jit.mobile import _save_for_lite_interpreter
        _lite_deprecated()
        _save_for_lite_interpreter(self, f, _extra_files=_extra_files)

    def _save_to_buffer_for_lite_interpreter(self, _extra_files=None):
        """The lite-interpreter file as bytes."""
        import io
        from ember.jit.mobile import _save_for_lite_interpreter
        _lite_deprecated()
        buf = io.BytesIO()
        _save_for_lite_interpreter(self, buf, _extra_files=_extra_files)
        return buf.getvalue()

    def __copy__(self):
        raise NotImplementedError("copying a scripted module is not supported; use "
                                  "copy.deepcopy")

    def __deepcopy__(self, memo):
        import copy
        new = nn.Module.__new__(type(self))
        memo[id(self)] = new
        for k, v in self.__dict__.items():
            if isinstance(v, ScriptMethod):
                new.__dict__[k] = ScriptMethod(new, v.fn)
                continue
            new.__dict__[k] = v if k in ("_ct", "original_class", "original_name") else \
                copy.deepcopy(v, memo)
        return new


class ScriptMethod:
    """``scripted.some_exported_method``: a compiled method bound to its module."""

    def __init__(self, module, fn):
        self.module, self.fn = module, fn

    def __call__(self, *args, **kwargs):
        return self.fn.call_method(self.module, args, kwargs)

    @property
    def graph(self):
        return self.fn.graph

    @property
    def code(self):
        from ember.jit._printer import function_code
        return function_code(self.fn)

    @property
    def schema(self):
        return self.fn.schema_str()

    @property
    def name(self):
        return self.fn.name
