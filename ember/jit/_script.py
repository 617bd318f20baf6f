"""``jit.script``: functions, modules (recursively) and classes -> compiled ``Function``s.

    source (inspect) -> ast -> Compiler (typed Graph) -> passes -> codegen (Python)

A module becomes a ``RecursiveScriptModule`` sharing the original's parameters and
buffers, with a ``ClassType`` describing its attributes; its methods compile on first
reference (``forward``, ``@jit.export``ed methods and what they call).
"""
from __future__ import annotations

import ast
import builtins
import inspect
import textwrap
import types as pytypes
import warnings

from ember.jit import _sugar as S
from ember.jit import _types as T
from ember.jit._compiler import Compiler
from ember.jit.frontend import CompileError, NotSupportedError


# --------------------------------------------------------------------------- source

class SourceInfo:
    """Where a compiled function's source lives: ``lines`` as in the file (a method keeps
    its class's indentation, as torch prints it), ``indent`` the columns removed before
    parsing (ast columns + indent = file columns)."""
    def __init__(self, filename, lines, first_line, indent=0):
        self.filename, self.lines, self.first_line = filename, lines, first_line
        self.line_offset = first_line - 1
        self.indent = indent


def get_def(fn):
    """(FunctionDef ast, SourceInfo) of a Python function or method."""
    fn = inspect.unwrap(fn)
    try:
        lines, first = inspect.getsourcelines(fn)
    except (OSError, TypeError) as e:
        raise OSError(f"Can't get source for {fn}. TorchScript requires source access in order "
                      f"to carry out compilation, make sure original .py files are available.") from e
    src = textwrap.dedent("".join(lines))
    indent = len(lines[0].rstrip("\n")) - len(src.split("\n", 1)[0]) if lines else 0
    tree = ast.parse(src)
    fd = tree.body[0]
    filename = inspect.getsourcefile(fn) or "<unknown>"
    if len(tree.body) != 1 or not isinstance(fd, (ast.FunctionDef, ast.AsyncFunctionDef)):
        # a lambda, or a def sharing its lines with other statements
        raise RuntimeError(f"Expected a single top-level function: {filename}:{first}")
    original = "".join(lines).rstrip("\n").split("\n")
    return fd, SourceInfo(filename, original, first, indent)


def def_from_source(src, name, filename="<string>"):
    tree = ast.parse(src)
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return node, SourceInfo(filename, src.split("\n"), 1)
    raise KeyError(name)


def qualified_class_name(cls):
    mod = cls.__module__ or ""
    if mod.startswith("ember"):
        mod = "torch" + mod[len("ember"):]
    if mod in ("__main__", "builtins") or not mod:
        return f"__torch__.{cls.__qualname__}"
    return f"__torch__.{mod}.{cls.__qualname__}"


# --------------------------------------------------------------------------- functions

class Function:
    """One compiled function or method: its graph, schema and generated Python code."""

    def __init__(self, name, qualified_name, graph, arg_schema, return_type, owner=None,
                 self_name=None):
        self.name, self.qualified_name = name, qualified_name
        self.graph = graph
        self.arg_schema = arg_schema            # (name, type, has_default, default, kw_only)
        self.return_type = return_type
        self.owner = owner                      # ClassType of a method
        self.self_name = self_name
        self.py = None
        self.source = None

    def finish(self, optimize=True):
        from ember.jit import _codegen, _passes
        if optimize:
            _passes.optimize(self.graph)
        names = ([self.self_name] if self.owner is not None else []) + [a[0] for a in self.arg_schema]
        self.py, self.source = _codegen.generate(self.graph, self.name, names)
        if any(t is T.AnyType for _, t, *_ in self.arg_schema) or _looks_at_types(self.graph.block):
            # the array fast path hands NumPy arrays where Tensors were: not for code that
            # asks what its values are (isinstance on Any)
            self.__dict__["_no_array_path"] = True
        return self

    def bind(self, args, kwargs, skip_self=False):
        schema = self.arg_schema
        if not kwargs and len(args) == len(schema):
            out = list(args)
        else:
            out = list(args)
            if len(out) > len(schema):
                raise RuntimeError(f"{self.name}() expected at most {len(schema)} argument(s) "
                                   f"but received {len(out)} argument(s). Declaration: "
                                   f"{self.schema_str()}")
            for name, t, has_def, default, _ in schema[len(out):]:
                if name in kwargs:
                    out.append(kwargs.pop(name))
                elif has_def:
                    out.append(default)
                else:
                    raise RuntimeError(f"{self.name}() is missing value for argument '{name}'. "
                                       f"Declaration: {self.schema_str()}")
            if kwargs:
                raise RuntimeError(f"{self.name}() got an unexpected keyword argument "
                                   f"'{next(iter(kwargs))}'")
        for k, ((name, t, has_def, default, _), v) in enumerate(zip(schema, out)):
            if v is None and t is T.TensorType and has_def and default is None:
                continue        # torch: an undefined Tensor (`x is None` is still False)
            if isinstance(t, T.EnumType) and not isinstance(v, t.py_class):
                v = out[k] = _same_enum(v, t)     # a loaded archive's enum: by name
            if not _value_fits(v, t):
                v = out[k] = _scalar_cast(v, t)
            if not _value_fits(v, t):
                raise RuntimeError(f"{self.name}() Expected a value of type '{t.annotation}' for "
                                   f"argument '{name}' but instead found type "
                                   f"'{type(v).__name__}'.\nPosition: {k + (1 if self.owner else 0)}"
                                   f"\nValue: {v!r}\nDeclaration: {self.schema_str()}"
                                   f"{_cast_details(v, t)}")
            if t is T.FloatType and type(v) is int:
                out[k] = float(v)
            elif type(v) is bool and (t is T.IntType or isinstance(t, T.OptionalType) and
                                      t.elem is T.IntType):
                out[k] = int(v)         # (torch's int argument holds 1, not True)
        return out

    def schema_str(self):
        parts = ([f"{self.owner} {self.self_name}"] if self.owner is not None else []) + [
            f"{t} {n}" + (f"={_default_str(d)}" if hd else "") for n, t, hd, d, _ in self.arg_schema]
        ret = str(self.return_type)
        if ret.startswith("("):          # one tuple-typed return: torch doubles the parentheses
            ret = f"({ret})"
        return f"{self.name}({', '.join(parts)}) -> {ret}"

    @property
    def schema(self):
        return self.schema_str()

    def __call__(self, *args, **kwargs):
        run, try_run = _runners()
        if not kwargs and len(args) == len(self.arg_schema) and self._tensors_only():
            done, result = try_run(self, args, None, True)   # Note in ember/jit/_fastpath.py
            if done:
                return result
        args = self.bind(args, kwargs)
        done, result = try_run(self, args)
        return result if done else run(self.py, args)

    def call_method(self, obj, args, kwargs):
        run, try_run = _runners()
        if not kwargs and len(args) == len(self.arg_schema) and self._tensors_only():
            done, result = try_run(self, args, obj, True)
            if done:
                return result
        args = self.bind(args, kwargs)
        done, result = try_run(self, args, obj)
        return result if done else run(self.py, [obj] + args)

    def _tensors_only(self):
        """Are all arguments Tensors (then the array path checks them itself, unbound)?"""
        r = self.__dict__.get("_all_tensors")
        if r is None:
            r = self.__dict__["_all_tensors"] = all(a[1] is T.TensorType for a in self.arg_schema)
        return r


def _default_str(d):
    """A default as torch's schema shows it (an enum member: ``Enum<Color.RED>``)."""
    return f"Enum<{type(d).__name__}.{d.name}>" if T.is_enum_class(type(d)) else repr(d)


def _looks_at_types(block):
    for n in block.nodes:
        if n.kind == "prim::isinstance" or any(_looks_at_types(b) for b in n.blocks):
            return True
    return False


_RUNNERS = []


def _runners():
    """(``_errors.run``, ``_fastpath.try_run``), imported once (calls are hot)."""
    if not _RUNNERS:
        from ember.jit._errors import run
        from ember.jit._fastpath import try_run
        _RUNNERS.extend((run, try_run))
    return _RUNNERS


def _scalar_cast(v, t):
    """torch's argument conversions for a scripted function: a one-element tensor to an int,
    float or bool; a number to a bool, a bool to a float; a tuple to a list and back."""
    import ember
    if isinstance(t, T.OptionalType) and v is not None:
        return _scalar_cast(v, t.elem)
    if isinstance(v, ember.Tensor) and v.numel() == 1 and t in (T.IntType, T.FloatType,
                                                                T.BoolType):
        x = v.item()
        return int(x) if t is T.IntType else float(x) if t is T.FloatType else bool(x)
    if t is T.BoolType and isinstance(v, (int, float)):
        return bool(v)
    if t is T.FloatType and isinstance(v, bool):
        return float(v)
    if isinstance(t, T.ListType) and isinstance(v, tuple):
        return list(v)
    if isinstance(t, T.TupleType) and isinstance(v, list) and len(v) == len(t.elems):
        return tuple(v)
    return v


def _cast_details(v, t):
    """The last lines of torch's argument error: its binding layer's cast failure."""
    if t is T.TensorType:
        return f"\nCast error details: Unable to cast {v} to Tensor"
    if isinstance(t, (T.DictType, T.TupleType)):
        try:
            seq = dict(v) if isinstance(t, T.DictType) else tuple(v)
        except Exception as e:      # noqa: BLE001 - its text is the message
            return f"\n Python error details: {type(e).__name__}: {e}"
        if isinstance(t, T.TupleType) and len(seq) != len(t.elems):
            return (f"\nCast error details: Object {v} had a different number of elements than "
                    f"type {t.annotation}")
    import ember
    tp = "<class 'torch.Tensor'>" if isinstance(v, ember.Tensor) else str(type(v))
    return (f"\nCast error details: Unable to cast Python instance of type {tp} to C++ "
            f"type '?' (#define PYBIND11_DETAILED_ERROR_MESSAGES or compile in debug mode for "
            f"details)")


def _value_fits(v, t):
    import ember
    if t is T.TensorType:
        return isinstance(v, ember.Tensor)
    if t is T.IntType:
        return isinstance(v, int) and not isinstance(v, bool) or isinstance(v, bool)
    if t is T.FloatType:
        return isinstance(v, (int, float)) and not isinstance(v, bool)
    if t is T.BoolType:
        return isinstance(v, bool)
    if t is T.StrType:
        return isinstance(v, str)
    if isinstance(t, T.OptionalType):
        return v is None or _value_fits(v, t.elem)
    if isinstance(t, T.UnionType):
        return any(_value_fits(v, e) for e in t.elems)
    if isinstance(t, T.ListType):
        return isinstance(v, (list, ember.Size)) and all(_value_fits(x, t.elem) for x in v[:8])
    if isinstance(t, T.TupleType):
        return isinstance(v, tuple) and len(v) == len(t.elems) and all(
            _value_fits(x, u) for x, u in zip(v, t.elems))
    if isinstance(t, T.DictType):
        return isinstance(v, dict)
    if t is T.NoneType:
        return v is None
    if isinstance(t, T.EnumType):
        return isinstance(v, t.py_class)
    return True


def _same_enum(v, t):
    """``v`` as a member of ``t``'s class when it is a member of a same-named Enum (the
    Python class of an enum that ``jit.load`` rebuilt from an archive), else ``v``."""
    import enum
    if isinstance(v, enum.Enum) and type(v).__name__ == t.py_class.__name__ and \
            v.name in t.py_class.__members__ and t.py_class[v.name].value == v.value:
        return t.py_class[v.name]
    return v


class RecursiveCall(CompileError):
    """A function reached again while it compiles (the caller adds the call's range)."""


_FUNCTIONS: dict = {}      # python function -> Function (scripted free functions)
_IN_PROGRESS: set = set()


def compile_function(pyfn):
    """The Function of a free Python function (compiled once, cached)."""
    fn = _FUNCTIONS.get(pyfn)
    if fn is not None:
        return fn
    if pyfn in _IN_PROGRESS:
        raise RecursiveCall(f"function '{pyfn.__name__}' is called recursively. Recursive "
                            f"calls are not supported")
    _IN_PROGRESS.add(pyfn)
    try:
        fd, src = get_def(pyfn)
        resolver = Resolver(_globals_of(pyfn))
        comp = _make_compiler(fd, src, resolver, pyfn)
        graph = comp.compile()
        qual = qualified_class_name(pyfn) if hasattr(pyfn, "__qualname__") else pyfn.__name__
        fn = Function(fd.name, qual, graph, comp.arg_schema, comp.return_type)
        fn.source_text = "\n".join(src.lines)
        fn.finish()
        _FUNCTIONS[pyfn] = fn
        return fn
    finally:
        _IN_PROGRESS.discard(pyfn)


def _globals_of(pyfn):
    env = dict(getattr(pyfn, "__globals__", {}))
    code = getattr(pyfn, "__code__", None)
    if code is not None and pyfn.__closure__:
        for name, cell in zip(code.co_freevars, pyfn.__closure__):
            try:
                env[name] = cell.cell_contents
            except ValueError:
                pass
    return env


def _make_compiler(fd, src, resolver, pyfn, self_type=None, self_module=None):
    """A Compiler with the argument types, defaults and return type read from the def."""
    args = fd.args
    params = args.posonlyargs + args.args + args.kwonlyargs
    arg_types, defaults = {}, {}
    # defaults from the live function (already evaluated)
    try:
        sig = inspect.signature(pyfn)
        for p in sig.parameters.values():
            if p.default is not inspect.Parameter.empty:
                defaults[p.name] = p.default
    except (TypeError, ValueError):
        pass
    for k, p in enumerate(params):
        if k == 0 and self_type is not None:
            continue
        if p.annotation is not None:
            try:
                arg_types[p.arg] = T.from_annotation_ast(p.annotation, resolver.globals,
                                                         resolver.class_type)
            except T.AnnotationError as err:
                raise CompileError(str(err), _where(src, p.annotation, fd.name)) from None
        elif p.arg in defaults and defaults[p.arg] is not None and not isinstance(
                defaults[p.arg], _tensor_cls()):
            try:
                arg_types[p.arg] = T.type_of_value(defaults[p.arg])
            except T.AnnotationError:
                pass
    ret = None
    if fd.returns is not None:
        try:
            ret = T.from_annotation_ast(fd.returns, resolver.globals, resolver.class_type)
        except T.AnnotationError as err:
            raise CompileError(str(err), _where(src, fd.returns, fd.name)) from None
    return Compiler(fd, resolver, src, self_type=self_type, self_module=self_module,
                    arg_types=arg_types, return_type=ret, defaults=defaults)


def _where(src, node, name):
    from ember.jit._ir import SourceRange
    ind = getattr(src, "indent", 0)
    end = getattr(node, "end_col_offset", None)
    return SourceRange(src.filename, node.lineno + src.line_offset, node.col_offset + ind,
                       None if end is None else end + ind, src.lines, src.first_line, name)


def _tensor_cls():
    import ember
    return ember.Tensor


# --------------------------------------------------------------------------- resolution

_PY_BUILTINS = {"len", "range", "int", "float", "bool", "str", "print", "min", "max", "abs",
                "isinstance", "enumerate", "zip", "list", "tuple", "dict", "sum", "round",
                "any", "all", "divmod", "getattr", "hasattr", "ord", "chr", "hash", "reversed",
                "sorted", "hex", "oct", "bin", "complex"}
_JIT_NAMES = {"annotate", "isinstance", "is_scripting", "is_tracing", "fork", "wait",
              "unchecked_cast", "_unwrap_optional"}


class Resolver:
    """Answers the names a compiled function uses that are not its locals."""

    def __init__(self, globals_):
        self.globals = globals_

    def __call__(self, name):
        if name in self.globals:
            return self.wrap(self.globals[name], name)
        if name in _PY_BUILTINS:
            return S.Builtin(getattr(builtins, name), name, "python")
        obj = getattr(builtins, name, None)
        if isinstance(obj, type) and issubclass(obj, BaseException):
            return S.Builtin(obj, name, "exception")
        if name == "__name__":
            return S.PythonConstant(self.globals.get("__name__", "__main__"))
        return None

    def wrap(self, obj, name):
        import ember
        from ember.jit import _script_api
        if getattr(obj, "_torch_function_front", False):
            obj = obj.__wrapped__       # (ember.overrides' __torch_function__ front)
        if obj is warnings.warn:
            return S.Builtin(obj, "warn", "warn")
        if isinstance(obj, pytypes.ModuleType):
            if obj.__name__ in ("math", "warnings") or obj.__name__.startswith("ember") or obj.__name__ in (
                    "typing", "torch") or obj.__name__.startswith("torch"):
                return S.PyModule(obj)
            return S.PythonConstant(obj)
        if obj is None or isinstance(obj, (bool, int, float, str, complex, ember.dtype,
                                           ember.device)):
            return S.PythonConstant(obj)
        if isinstance(obj, tuple) and not hasattr(type(obj), "_fields"):
            return S.PythonConstant(obj)
        if isinstance(obj, ScriptFunction):
            return S.ScriptFunctionRef(obj._function)
        jit_name = _script_api.JIT_BUILTINS.get(obj) if _hashable(obj) else None
        if jit_name is not None:
            return S.Builtin(obj, jit_name, "jit")
        if isinstance(obj, pytypes.BuiltinFunctionType) and getattr(obj, "__module__", "") == "math":
            return S.Builtin(obj, obj.__name__, "math")
        if _hashable(obj) and obj in _BUILTIN_FN_NAMES:
            return S.Builtin(obj, _BUILTIN_FN_NAMES[obj], "python")
        if isinstance(obj, type):
            if issubclass(obj, BaseException):
                return S.Builtin(obj, obj.__name__, "exception")
            if issubclass(obj, tuple) and hasattr(obj, "_fields"):
                return S.ClassRef(obj, T.namedtuple_type(obj, self.class_type))
            if T.is_enum_class(obj):
                return S.ClassRef(obj, T.enum_type(obj))
            if (obj.__module__ or "").startswith("ember"):
                return S.PythonConstant(obj)
            ct = self.class_type(obj)
            if ct is not None:
                return S.ClassRef(obj, ct)
            return S.PythonConstant(obj)
        if callable(obj):
            if getattr(obj, "_ember_jit_ignore", False):
                return S.IgnoredFunction(obj)
            mod = getattr(obj, "__module__", None) or ""
            # ember.vision.transforms stands in for torchvision's Python transforms, which
            # TorchScript compiles: their functions join the graph instead of becoming builtins
            # (its PIL-or-tensor ``functional`` front stays a builtin call); so do
            # ember.vision.io's typed fronts (their kernels are jit.ignore'd)
            compiled = (mod.startswith("ember.vision.transforms")
                        and mod != "ember.vision.transforms.functional"
                        or mod == "ember.vision.io.image")
            library = mod.startswith("ember") and not compiled
            if library or getattr(obj, "_op", None) is not None:
                fname = getattr(obj, "__name__", name)
                if mod.startswith("ember.jit"):
                    return S.PythonConstant(obj)
                return S.Builtin(obj, fname, "ember")
            if isinstance(obj, (pytypes.FunctionType,)):
                return S.ScriptFunctionRef(compile_function(obj))
            if isinstance(obj, pytypes.MethodType):
                return S.PythonConstant(obj)
        return S.PythonConstant(obj)

    def class_type(self, cls_or_name):
        if isinstance(cls_or_name, str):
            obj = T._lookup(cls_or_name, self.globals)
            if obj is T._MISSING or not isinstance(obj, type):
                return None
            cls_or_name = obj
        cls = cls_or_name
        if not isinstance(cls, type):
            return None
        if issubclass(cls, tuple) and hasattr(cls, "_fields"):
            return T.namedtuple_type(cls, self.class_type)
        if T.is_enum_class(cls):
            return T.enum_type(cls)
        from ember import nn
        if issubclass(cls, nn.Module):
            return None
        if (cls.__module__ or "").startswith("ember"):
            return None
        return script_class(cls)

    # modules -------------------------------------------------------------------------
    def submodule(self, mod, attr):
        return None

    def module_method(self, mod, attr):
        return None


_BUILTIN_FN_NAMES = {getattr(builtins, n): n for n in _PY_BUILTINS}


def _hashable(o):
    try:
        hash(o)
        return True
    except TypeError:
        return False


# --------------------------------------------------------------------------- classes

_CLASSES: dict = {}


def script_class(cls):
    """The ClassType of a user class (its methods compile on first use)."""
    ct = _CLASSES.get(cls)
    if ct is not None:
        return ct
    ct = T.ClassType(qualified_class_name(cls), cls, False, {}, {}, {})
    _CLASSES[cls] = ct
    init = cls.__dict__.get("__init__")
    if init is not None:
        class_method(ct, "__init__")
    return ct


def class_method(ct, name):
    """The compiled Function of method ``name`` of a scripted class."""
    fn = ct.methods.get(name)
    if fn is not None:
        return fn
    cls = ct.py_class
    pyfn = None
    for klass in cls.__mro__:
        if name in klass.__dict__:
            pyfn = klass.__dict__[name]
            break
    if pyfn is None:
        return None
    if isinstance(pyfn, (staticmethod, classmethod)):
        raise NotSupportedError(f"static and class methods of scripted classes aren't supported "
                                f"({cls.__name__}.{name})")
    return compile_method(ct, name, pyfn, ClassResolver(_globals_of(pyfn), ct))


def compile_method(ct, name, pyfn, resolver, self_module=None):
    """Compile method ``name`` of class/module type ``ct`` from Python function ``pyfn``
    (``ct.methods[name]`` reads "compiling" meanwhile: recursion is an error)."""
    fd, src = get_def(pyfn)
    comp = _make_compiler(fd, src, resolver, pyfn, self_type=ct, self_module=self_module)
    comp.name = name
    ct.methods[name] = "compiling"
    try:
        graph = comp.compile()
    except BaseException:
        ct.methods.pop(name, None)
        raise
    self_name = fd.args.args[0].arg if fd.args.args else "self"
    fn = Function(name, f"{ct.qualname}.{name}", graph, comp.arg_schema, comp.return_type, ct,
                  self_name)
    fn.source_text = "\n".join(src.lines)
    ct.methods[name] = fn
    fn.finish()
    return fn


class ClassResolver(Resolver):
    def __init__(self, globals_, ct):
        super().__init__(globals_)
        self.ct = ct

    def call_method(self, c, v, name, args, kwargs, e):
        from ember.jit._calls import bind_script_args
        ct = v.type
        fn = class_method(ct, name) if isinstance(ct, T.ClassType) and ct.py_class is not None \
            else None
        if fn == "compiling" or (isinstance(ct, T.ClassType) and ct.methods.get(name) == "compiling"):
            c.error("Recursive method calls are not supported in TorchScript", e)
        if fn is None:
            c.error(f"Tried to access nonexistent attribute or method '{name}' of type "
                    f"'{ct}'.", e)
        vals = bind_script_args(c, name, fn.arg_schema, args, kwargs, e,
                                decl=fn.schema_str(), has_self=True)
        n = c.emit("prim::CallMethod", [v] + vals, [fn.return_type], e, {"name": name})
        n.fn = fn
        return n.output

    def construct(self, c, ref, args, kwargs, e):
        ct = ref.class_type
        if isinstance(ct, T.TupleType):       # NamedTuple
            from ember.jit._calls import bind_script_args
            schema = [(n, t, False, None, False) for n, t in zip(ct.names, ct.elems)]
            vals = bind_script_args(c, ref.cls.__name__, schema, args, kwargs, e)
            return c.emit("prim::TupleConstruct", vals, [ct], e).output
        obj = c.emit("prim::CreateObject", [], [ct], e, fn=_creator(ref.cls)).output
        init = class_method(ct, "__init__")
        if init is not None:
            self.call_method(c, obj, "__init__", args, kwargs, e)
        return obj

    def fork(self, c, target, args, kwargs, e):
        return _emit_fork(c, target, args, kwargs, e)


def _creator(cls):
    def create():
        return object.__new__(cls)
    create.__qualname__ = f"create_{cls.__name__}"
    return create


# Resolver methods shared by all: classes and forks
Resolver.call_method = ClassResolver.call_method
Resolver.construct = ClassResolver.construct
Resolver.fork = ClassResolver.fork


def _emit_fork(c, target, args, kwargs, e):
    from ember.jit._calls import bind_script_args
    from ember.jit._compiler import Closure
    if isinstance(target, Closure) and not args and not kwargs:
        return target.fork(c, e)
    if isinstance(target, S.ScriptFunctionRef):
        fn = target.function
        vals = bind_script_args(c, fn.name, fn.arg_schema, args, kwargs, e)
        n = c.emit("prim::fork", vals, [T.FutureType(fn.return_type)], e, {"name": fn.name})
        n.fn = fn
        return n.output
    if isinstance(target, S.ModuleValue):
        fn = target.module_function("forward") if hasattr(target, "module_function") else None
        from ember.jit._modules import module_forward_function
        fn = module_forward_function(target)
        vals = bind_script_args(c, "forward", fn.arg_schema, args, kwargs, e)
        n = c.emit("prim::fork", [target.value] + vals, [T.FutureType(fn.return_type)], e,
                   {"name": "forward"})
        n.fn = fn
        return n.output
    if isinstance(target, S.Sugar) and not isinstance(target, (S.SimpleValue, Closure)):
        return _fork_callable(c, target, args, kwargs, e)
    c.error("fork() expects a scripted function or module as its first argument", e)


def _fork_callable(c, target, args, kwargs, e):
    """``fork(torch.mm, x, y)``, a builtin or other callable: fork a closure whose body is
    ``return target(*args, **kwargs)`` (the arguments become its captured inputs)."""
    from ember.jit._compiler import Closure
    from ember.jit._ir import NOT_CONSTANT
    captured = {"__fork_fn": target}

    def arg(name, v):            # constants are written into the body, as torch does
        k = v.constant()
        if k is None or isinstance(k, (bool, int, float, str)) and k is not NOT_CONSTANT:
            return ast.Constant(k)
        captured[name] = S.SimpleValue(v)
        return ast.Name(name, ast.Load())
    call_args = [arg(f"__fork_a{i}", v) for i, v in enumerate(args)]
    keywords = [ast.keyword(k, arg(f"__fork_k_{k}", v)) for k, v in kwargs.items()]
    call = ast.Call(ast.Name("__fork_fn", ast.Load()), call_args, keywords)
    fd = ast.FunctionDef("fork_target", ast.arguments([], [], None, [], [], None, []),
                         [ast.Return(call)], [], None, type_params=[])
    for node in ast.walk(fd):
        ast.copy_location(node, e)
        node.end_lineno = getattr(e, "end_lineno", e.lineno)
        node.end_col_offset = getattr(e, "end_col_offset", None)
    return Closure(fd, captured).fork(c, e)


# --------------------------------------------------------------------------- ScriptFunction

class ScriptFunction:
    """A scripted free function: call it, print ``graph``/``code``, save it."""

    def __init__(self, function, pyfn=None):
        self._function = function
        self._pyfn = pyfn
        self.__name__ = function.name
        self.__qualname__ = getattr(pyfn, "__qualname__", function.name)
        self.__doc__ = getattr(pyfn, "__doc__", None)
        self.__module__ = getattr(pyfn, "__module__", None)

    def __call__(self, *args, **kwargs):
        return self._function(*args, **kwargs)

    @property
    def py(self):
        return self._function.py

    @property
    def graph(self):
        return self._function.graph

    @property
    def inlined_graph(self):
        from ember.jit._passes import inlined
        return inlined(self._function.graph)

    @property
    def code(self):
        from ember.jit._printer import function_code
        return function_code(self._function)

    @property
    def name(self):
        return self._function.name

    @property
    def qualified_name(self):
        return self._function.qualified_name

    @property
    def schema(self):
        return self._function.schema_str()

    def graph_for(self, *args, **kwargs):
        return self.graph

    def save(self, f, _extra_files=None):
        from ember.jit._serialization import save
        save(self, f, _extra_files=_extra_files)

    def __repr__(self):
        return f"<ember.jit.ScriptFunction object {self.__name__}>"

    def __reduce__(self):
        raise TypeError("ScriptFunction cannot be pickled; use ember.jit.save")


def script_function(pyfn):
    return ScriptFunction(compile_function(pyfn), pyfn)
