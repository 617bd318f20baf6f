"""``jit.load``: a TorchScript archive written by torch (or ember) -> RecursiveScriptModule.

    archive.zip
      <name>/data.pkl            the module tree (pickle; classes are ``__torch__.*``)
      <name>/code/__torch__/...  TorchScript source of every class and function
      <name>/constants.pkl       tensors the code names as ``CONSTANTS.c<k>``
      <name>/data/<k>, constants/<k>   raw storages;  <name>/extra/<file>   _extra_files

Loading is safe: ``data.pkl`` is read by an Unpickler that knows only the archive's own
classes, torch's tensor-rebuild functions and ``OrderedDict``; the code is checked (only
TorchScript names: ``torch``, ``ops``, ``annotate``, the archive's ``__torch__`` classes...)
and compiled by ember's TorchScript compiler with ``ArchiveResolver``, which resolves
nothing else. No archive can import or call arbitrary Python.
"""
from __future__ import annotations

import ast
import builtins
import collections
import io
import math
import os
import pickle
import zipfile

from ember.jit import _archive_builtins as AB
from ember.jit import _sugar as S
from ember.jit import _types as T
from ember.jit._compiler import Compiler
from ember.jit._script import Function, Resolver, SourceInfo
from ember.jit.frontend import CompileError

# --------------------------------------------------------------------------- names

_PY_BUILTINS = {"range", "len", "int", "float", "bool", "str", "isinstance", "getattr",
                "hasattr", "print", "min", "max", "abs", "round", "enumerate", "zip", "list",
                "tuple", "dict", "divmod", "sorted", "chr", "ord", "any", "all", "sum",
                "reversed", "complex", "hex", "oct", "bin"}
_JIT = {"annotate", "unchecked_cast", "isinstance", "fork"}
_TYPE_NAMES = {"Tensor", "List", "Dict", "Tuple", "Optional", "Final", "NoneType", "Any",
               "Device", "number", "Future", "Union", "Module", "NamedTuple", "object",
               "Enum", "int", "float", "bool", "str", "complex"}
_ROOTS = {"torch", "ops", "__torch__", "CONSTANTS", "math", "uninitialized", "inf", "nan",
          "self"}
_ALLOWED = _PY_BUILTINS | _JIT | _TYPE_NAMES | _ROOTS
_EXCEPTIONS = {n for n in dir(builtins) if isinstance(getattr(builtins, n), type)
               and issubclass(getattr(builtins, n), BaseException)}


class RefusedArchive(RuntimeError):
    """The archive holds something TorchScript code never does; nothing of it is run."""


def _unsafe(msg, path, node=None):
    where = f" ({path}, line {node.lineno})" if node is not None and hasattr(node, "lineno") \
        else f" ({path})"
    return RefusedArchive(f"ember.jit.load: the archive's code is not TorchScript: {msg}{where}; "
                        f"refusing to load it")


def check_code(tree, path, methods):
    """Only class and function definitions, and only TorchScript's names: anything else
    (imports, ``os.system``, ``__import__``, dunder attributes, method calls other than the
    archive's own methods) is refused."""
    for top in tree.body:
        if isinstance(top, ast.ClassDef):
            for st in top.body:
                if isinstance(st, ast.FunctionDef):
                    _check_function(st, path, methods)
                elif isinstance(st, (ast.AnnAssign, ast.Assign, ast.Pass)):
                    _check_expr_names(st, {"__annotations__", "__parameters__",
                                           "__buffers__"}, path)
                elif isinstance(st, ast.Expr) and isinstance(st.value, ast.Constant):
                    pass
                else:
                    raise _unsafe(f"a class body holds a {type(st).__name__}", path, st)
        elif isinstance(top, ast.FunctionDef):
            _check_function(top, path, methods)
        else:
            raise _unsafe(f"a top-level {type(top).__name__} statement", path, top)


_NAMESPACES = ("torch", "ops", "__torch__", "CONSTANTS", "math")


def _fork_closures(fd):
    """The nested defs torch writes for forks: ``def __forked_function<k>():`` with no
    parameters or decorators, directly in ``fd``'s statements (not nested further)."""
    out = set()

    def visit(stmts):
        for st in stmts:
            if isinstance(st, ast.FunctionDef):
                a = st.args
                if st.name.startswith("__forked_function") and not (
                        a.posonlyargs or a.args or a.kwonlyargs or a.vararg or a.kwarg
                        or st.decorator_list):
                    out.add(st)
                continue
            for field in ("body", "orelse"):
                visit(getattr(st, field, None) or [])
    visit(fd.body)
    return out


def _check_function(fd, path, methods):
    if fd.decorator_list:
        raise _unsafe("decorators", path, fd)
    local = set()
    closures = _fork_closures(fd)
    for n in ast.walk(fd):
        if isinstance(n, (ast.Import, ast.ImportFrom, ast.Global, ast.Nonlocal, ast.Lambda,
                          ast.ClassDef, ast.AsyncFunctionDef, ast.Await, ast.Yield,
                          ast.YieldFrom)) or isinstance(n, ast.FunctionDef) and n is not fd \
                and n not in closures:
            raise _unsafe(f"{type(n).__name__} statements", path, n)
        if n in closures:
            local.add(n.name)
        if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
            local.add(n.id)
        elif isinstance(n, ast.arg):
            local.add(n.arg)
    _check_expr_names(fd, local, path)
    for n in ast.walk(fd):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and \
                ast.unparse(n.func.value).split(".")[0] not in _NAMESPACES:
            # obj.name(...): only the archive's own methods (Tensor/list ops are torch.<op>)
            attr = n.func.attr
            if attr == "__new__" and n.args and ast.unparse(n.args[0]) == ast.unparse(
                    n.func.value) and ast.unparse(n.func.value).startswith("__torch__."):
                continue
            if attr not in methods:
                raise _unsafe(f"method call '.{attr}(...)' on a value", path, n)


def _check_expr_names(node, local, path):
    for n in ast.walk(node):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id not in local \
                and n.id not in _ALLOWED and n.id not in _EXCEPTIONS:
            raise _unsafe(f"name '{n.id}' is not a TorchScript builtin", path, n)
        if isinstance(n, ast.Attribute) and n.attr.startswith("__") and \
                n.attr.endswith("__") and n.attr not in AB._DUNDER_OPS and \
                n.attr not in ("__init__", "__new__", "__enter__", "__exit__"):
            raise _unsafe(f"attribute '{n.attr}'", path, n)
        if isinstance(n, ast.Constant) and isinstance(n.value, bytes):
            raise _unsafe("bytes literals", path, n)


class _Rewrite(ast.NodeTransformer):
    """Archive idioms the compiler reads as plain TorchScript: ``uninitialized(T)`` ->
    ``unchecked_cast(T, None)``; ``ops.prim.RaiseException(msg, "builtins.E")`` as a
    statement -> ``raise E(msg)`` (an exit the compiler's control flow knows)."""

    def visit_Call(self, node):
        self.generic_visit(node)
        f = node.func
        if isinstance(f, ast.Attribute) and f.attr == "__new__" and len(node.args) == 1:
            # X.__new__(X): an object of archive class X, before __init__
            new = ast.Call(func=ast.parse("ops.prim.CreateObject", mode="eval").body,
                           args=[ast.Constant(ast.unparse(f.value))], keywords=[])
            return ast.copy_location(new, node)
        if isinstance(node.func, ast.Name) and node.func.id == "uninitialized" and \
                len(node.args) == 1:
            new = ast.Call(func=ast.Name("unchecked_cast", ast.Load()),
                           args=[node.args[0], ast.Constant(None)], keywords=[])
            return ast.copy_location(new, node)
        if isinstance(node.func, ast.Name) and node.func.id == "annotate" and \
                len(node.args) == 2 and isinstance(node.args[0], ast.Name) and \
                node.args[0].id in ("int", "float", "bool"):
            # annotate(int, t) also converts a one-element Tensor
            conv = ast.Call(func=ast.Name(node.args[0].id, ast.Load()), args=[node.args[1]],
                            keywords=[])
            node.args[1] = ast.copy_location(conv, node.args[1])
        return node

    def visit_Attribute(self, node):
        return self.generic_visit(node)

    def visit_With(self, node):
        """``with obj:`` (an archive class with __enter__/__exit__, e.g. no_grad) ->
        ``obj.__enter__()``, the body, ``obj.__exit__(None, None, None)``."""
        self.generic_visit(node)
        if len(node.items) != 1 or node.items[0].optional_vars is not None or \
                not isinstance(node.items[0].context_expr, ast.Name):
            return node
        obj = node.items[0].context_expr.id

        def call(name, nargs):
            c = ast.parse(f"{obj}.{name}({', '.join(['None'] * nargs)})").body[0]
            for n in ast.walk(c):
                ast.copy_location(n, node)
            return c
        body = list(node.body)
        tail = [body.pop()] if body and isinstance(body[-1], ast.Return) else []
        return [call("__enter__", 0)] + body + [call("__exit__", 3)] + tail

    def visit_Expr(self, node):
        self.generic_visit(node)
        call = node.value
        if isinstance(call, ast.Call) and ast.unparse(call.func) == "ops.prim.RaiseException" \
                and len(call.args) == 2 and isinstance(call.args[1], ast.Constant) \
                and isinstance(call.args[1].value, str) \
                and call.args[1].value.startswith("builtins."):
            cls = call.args[1].value.split(".", 1)[1]
            exc = ast.Call(func=ast.Name(cls, ast.Load()), args=[call.args[0]], keywords=[])
            new = ast.Raise(exc=ast.copy_location(exc, call), cause=None)
            return ast.copy_location(new, node)
        return node


def _fix_locations(tree):
    for n in ast.walk(tree):
        if hasattr(n, "lineno"):
            for child in ast.iter_child_nodes(n):
                if not hasattr(child, "lineno") and isinstance(child, (ast.expr, ast.stmt)):
                    child.lineno, child.col_offset = n.lineno, n.col_offset
                    child.end_lineno = getattr(n, "end_lineno", n.lineno)
                    child.end_col_offset = getattr(n, "end_col_offset", None)


# --------------------------------------------------------------------------- the unit

class _Tree:
    """A package of the archive's ``__torch__`` namespace (children: packages, classes and
    functions)."""

    def __init__(self, name):
        self.__name__ = name
        self._items = {}

    def __getattr__(self, name):
        items = self.__dict__.get("_items", {})
        if name in items:
            return items[name]
        raise AttributeError(name)

    def _child(self, name):
        t = self._items.get(name)
        if t is None:
            t = self._items[name] = _Tree(f"{self.__name__}.{name}")
        return t


class _FunctionRef:
    __slots__ = ("qualname",)

    def __init__(self, qualname):
        self.qualname = qualname


class _Constants:
    def __init__(self, values):
        self._values = values

    def __getattr__(self, name):
        vals = self.__dict__.get("_values", ())
        if name.startswith("c") and name[1:].isdigit() and int(name[1:]) < len(vals):
            return vals[int(name[1:])]
        raise AttributeError(name)


class ArchiveClass:
    """One ``class X(...)`` of the archive: its ClassType (or NamedTuple type), parameter
    and buffer names, method definitions and the Python class its instances get."""

    def __init__(self, qualname, cdef, src):
        self.qualname, self.cdef, self.src = qualname, cdef, src
        bases = [ast.unparse(b) for b in cdef.bases]
        self.kind = ("module" if "Module" in bases else "namedtuple" if "NamedTuple" in bases
                     else "enum" if "Enum" in bases else "interface" if any(
                         "Interface" in b for b in bases) else "class")
        self.params, self.buffers = [], []
        self.defs = {}
        self.ct = None
        self.py_class = None


class Unit:
    """The archive's classes, functions and constants, compiled on demand (shared by
    copies of the loaded module)."""

    def __deepcopy__(self, memo):
        return self

    def __init__(self, sources, constants):
        self.classes, self.fdefs, self.functions = {}, {}, {}
        self.by_ct = {}
        self.root = _Tree("__torch__")
        self.constants = _Constants(constants)
        self.failed = {}
        self.pending_setstate = []      # (module, class, state) of __getstate__-pickled modules
        trees = {path: ast.parse(text, filename=path) for path, text in sources.items()}
        from ember.jit._namespaced import TORCHBIND_METHODS
        methods = {"__init__"} | set(TORCHBIND_METHODS)
        for tree in trees.values():
            for top in tree.body:
                if isinstance(top, ast.ClassDef):
                    methods.update(st.name for st in top.body if isinstance(st, ast.FunctionDef))
        for path, text in sources.items():
            check_code(trees[path], path, methods)
        for path, text in sources.items():
            self._read(path, text, trees[path])
        for acls in self.classes.values():
            self._make_type(acls)
        for acls in self.classes.values():
            self._fill_type(acls)

    # reading ---------------------------------------------------------------------------
    def _read(self, path, text, tree):
        tree = _Rewrite().visit(tree)
        _fix_locations(tree)
        src = SourceInfo(path, text.split("\n"), 1)
        parts = path[:-3].split("/")
        prefix = ".".join(parts[parts.index("__torch__"):]) if "__torch__" in parts else \
            "__torch__"
        pkg = self.root
        for p in prefix.split(".")[1:]:
            pkg = pkg._child(p)
        for top in tree.body:
            qual = f"{prefix}.{top.name}"
            if isinstance(top, ast.ClassDef):
                acls = self.classes[qual] = ArchiveClass(qual, top, src)
                pkg._items[top.name] = acls
            else:
                self.fdefs[qual] = (top, src)
                pkg._items[top.name] = _FunctionRef(qual)

    def _make_type(self, acls):
        if acls.kind == "enum":
            acls.py_class = _enum_class(acls, self)
            acls.ct = T.enum_type(acls.py_class, acls.qualname)
            return
        if acls.kind == "interface":
            return
        if acls.kind == "namedtuple":
            return          # built in _fill_type (its fields may name other classes)
        acls.ct = T.ClassType(acls.qualname, None, acls.kind == "module", {}, {}, {})
        self.by_ct[acls.ct] = acls

    def _fill_type(self, acls):
        if acls.kind in ("enum", "interface") or acls.defs or acls.py_class is not None \
                or acls.kind == "module" and "$slots" in acls.ct.constants:
            return
        resolver = ArchiveResolver(self)
        names, types = [], []
        constants, attrs = {}, {}
        for st in acls.cdef.body:
            if isinstance(st, ast.FunctionDef):
                acls.defs[st.name] = st
            elif isinstance(st, ast.Assign) and len(st.targets) == 1:
                tgt = st.targets[0]
                if isinstance(tgt, ast.Name) and tgt.id in ("__parameters__", "__buffers__"):
                    vals = [x.value for x in st.value.elts]
                    (acls.params if tgt.id == "__parameters__" else acls.buffers).extend(vals)
                elif isinstance(tgt, ast.Subscript) and ast.unparse(tgt.value) == "__annotations__":
                    key = tgt.slice.value if isinstance(tgt.slice, ast.Constant) else None
                    t = self._annotation(st.value, resolver, acls)
                    if not isinstance(key, str) or not key.isidentifier() and not (
                            acls.kind == "module" and (isinstance(t, T.ClassType) and t.is_module
                                                       or key in acls.params + acls.buffers)):
                        # only submodules, parameters and buffers of modules ("0", "1"...)
                        raise _unsafe(f"attribute name {key!r} of {acls.qualname}",
                                      acls.src.filename, st)
                    attrs[key] = t
                elif isinstance(tgt, ast.Name) and tgt.id == "__annotations__":
                    pass
                else:
                    raise _unsafe(f"an assignment in class body {acls.qualname}",
                                  acls.src.filename, st)
            elif isinstance(st, ast.AnnAssign):
                name = st.target.id
                ann = st.annotation
                is_final = isinstance(ann, ast.Subscript) and ast.unparse(ann.value) == "Final"
                if st.value is not None:
                    constants[name] = _literal(st.value, self)
                    if not is_final:
                        attrs[name] = self._annotation(ann, resolver, acls)
                else:
                    t = self._annotation(ann, resolver, acls)
                    attrs[name] = t
                    names.append(name)
                    types.append(t)
        if acls.kind == "namedtuple":
            acls.py_class = collections.namedtuple(acls.cdef.name, names)
            acls.ct = T.TupleType(tuple(types), tuple(names), acls.qualname, acls.py_class)
            return
        ct = acls.ct
        ct.attributes.update(attrs)
        ct.constants.update(constants)
        if acls.kind == "module":
            slots = {}
            for n in acls.params:
                slots[n] = "_parameters"
            for n in acls.buffers:
                slots[n] = "_buffers"
            for n, t in attrs.items():
                if isinstance(t, T.ClassType) and t.is_module:
                    slots[n] = "_modules"
            ct.constants["$slots"] = slots
            ct.attributes.setdefault("training", T.BoolType)
        else:
            acls.py_class = type(acls.cdef.name, (_ScriptObject,), {"__qualname__": acls.qualname})

    def _annotation(self, node, resolver, acls):
        node = _UnionAsAny().visit(_copy(node))
        try:
            return T.from_annotation_ast(node, {}, resolver.class_type)
        except T.AnnotationError as err:
            raise NotImplementedError(f"ember.jit.load: {acls.qualname}: {err}") from None

    # compiling -------------------------------------------------------------------------
    def function(self, qualname):
        fn = self.functions.get(qualname)
        if fn == "compiling":
            raise CompileError(f"Recursive calls are not supported in TorchScript: {qualname}")
        if fn is not None:
            return fn
        fd, src = self.fdefs[qualname]
        self.functions[qualname] = "compiling"
        try:
            fn = self._compile(fd, src, qualname, None)
        except BaseException:
            self.functions.pop(qualname, None)
            raise
        self.functions[qualname] = fn
        return fn

    def method(self, acls, name):
        ct = acls.ct
        fn = ct.methods.get(name)
        if fn == "compiling":
            raise CompileError(f"Recursive method calls are not supported: "
                               f"{acls.qualname}.{name}")
        if fn is not None:
            return fn
        fd = acls.defs.get(name)
        if fd is None:
            return None
        ct.methods[name] = "compiling"
        try:
            fn = self._compile(fd, acls.src, f"{acls.qualname}.{name}", acls)
        except BaseException:
            ct.methods.pop(name, None)
            raise
        ct.methods[name] = fn
        return fn

    def _compile(self, fd, src, qualname, acls):
        resolver = ArchiveResolver(self)
        a = fd.args
        params = a.posonlyargs + a.args + a.kwonlyargs
        is_method = acls is not None
        arg_types, defaults = {}, {}
        for k, p in enumerate(params):
            if k == 0 and is_method:
                continue
            if p.annotation is not None:
                arg_types[p.arg] = self._annotation(p.annotation, resolver,
                                                    acls or _Named(qualname))
        pos_defaults = a.defaults
        for p, d in zip(a.args[len(a.args) - len(pos_defaults):], pos_defaults):
            defaults[p.arg] = _literal(d, self)
        for p, d in zip(a.kwonlyargs, a.kw_defaults):
            if d is not None:
                defaults[p.arg] = _literal(d, self)
        ret = self._annotation(fd.returns, resolver, acls or _Named(qualname)) \
            if fd.returns is not None else None
        self_module = acls if is_method and acls.kind == "module" else None
        comp = Compiler(fd, resolver, src, self_type=acls.ct if is_method else None,
                        self_module=self_module, arg_types=arg_types, return_type=ret,
                        defaults=defaults, name=fd.name)
        graph = comp.compile()
        _check_graph(graph.block, qualname)
        self_name = params[0].arg if is_method and params else None
        fn = Function(fd.name, qualname, graph, comp.arg_schema, comp.return_type,
                      acls.ct if is_method else None, self_name)
        fn.source_text = "\n".join(src.lines)
        # torch optimized the archive's code already; ember's CSE would also merge
        # torch.clone(x) calls whose results are then mutated in place
        fn.finish(optimize=False)
        return fn


def _copy(node):
    import copy
    return copy.deepcopy(node)


class _UnionAsAny(ast.NodeTransformer):
    """``Union[A, B]`` (not an Optional) has no ember type: it is read as ``Any`` (the
    code refines it with ``isinstance``)."""

    def visit_Subscript(self, node):
        self.generic_visit(node)
        if ast.unparse(node.value) == "Union":
            items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            if not (len(items) == 2 and "None" in (ast.unparse(items[0]), ast.unparse(items[1]))):
                return ast.copy_location(ast.Name("Any", ast.Load()), node)
        return node


_FORBIDDEN_NODES = {"prim::CallAny", "prim::PythonOp", "prim::With"}


def _safe_fn(fn):
    """Callables a compiled archive may run: ember's, Python's operators and builtins,
    ``math``, and methods of str/list/dict/float."""
    if fn is None:
        return True
    owner = getattr(fn, "__objclass__", None)
    if owner in (str, list, dict, float, int):
        return True
    module = getattr(fn, "__module__", None) or ""
    qual = getattr(fn, "__qualname__", "") or ""
    if qual.startswith("Tensor."):       # a Tensor method: ops and the plain ones only
        from ember._ops.registry import METHODS
        name = qual.split(".")[1]
        return name in METHODS or name in AB._METHODS
    return module == "ember" or module.startswith("ember.") or module in (
        "builtins", "_operator", "operator", "math")


def _check_graph(block, qualname):
    """No node of compiled archive code calls Python outside ember and the builtins
    (prim::CallAny, prim::PythonOp, a context manager): a last line of defence."""
    for n in block.nodes:
        if n.kind in _FORBIDDEN_NODES or not _safe_fn(n.fn):
            raise RefusedArchive(f"ember.jit.load: {qualname} compiles to {n.kind} "
                               f"({getattr(n.fn, '__qualname__', n.fn)!s}), which archive code "
                               f"may not run; refusing to load it")
        for b in n.blocks:
            _check_graph(b, qualname)


class _Named:
    def __init__(self, qualname):
        self.qualname = qualname


def _enum_class(acls, unit):
    """A Python Enum rebuilt from ``class Color(Enum): RED = 1 ...`` (literal values only)."""
    import enum
    members = []
    for st in acls.cdef.body:
        if isinstance(st, ast.Assign) and len(st.targets) == 1 and \
                isinstance(st.targets[0], ast.Name):
            v = _literal(st.value, unit)
            if not isinstance(v, (int, float, str)):
                raise _unsafe(f"enum {acls.qualname} member value {v!r}", acls.src.filename, st)
            members.append((st.targets[0].id, v))
        elif not isinstance(st, ast.Pass):
            raise _unsafe(f"a {type(st).__name__} in enum {acls.qualname}", acls.src.filename,
                          st)
    return enum.Enum(acls.cdef.name, members, qualname=acls.qualname, module="__torch__")


class _ScriptObject:
    """An instance of a (non-module) class of the archive."""

    def __setstate__(self, state):
        self.__dict__.update(state if isinstance(state, dict) else {})


def _literal(node, unit):
    """A default argument or class constant written in the archive (literals only;
    ``torch.device("cpu")`` and ``CONSTANTS.c<k>`` too)."""
    try:
        return ast.literal_eval(node)
    except ValueError:
        pass
    import ember
    text = ast.unparse(node)
    if text in ("inf", "-inf", "nan"):
        return float(text)
    if isinstance(node, ast.Call) and ast.unparse(node.func) == "torch.device" and \
            len(node.args) == 1 and isinstance(node.args[0], ast.Constant):
        return ember.device(node.args[0].value)
    if isinstance(node, ast.Attribute) and ast.unparse(node.value) == "CONSTANTS":
        return getattr(unit.constants, node.attr)
    if isinstance(node, ast.Attribute):                 # __torch__.Color.RED
        acls = unit.classes.get(ast.unparse(node.value))
        if acls is not None and acls.kind == "enum" and node.attr in acls.py_class.__members__:
            return acls.py_class[node.attr]
    if isinstance(node, (ast.Tuple, ast.List)):
        items = [_literal(x, unit) for x in node.elts]
        return tuple(items) if isinstance(node, ast.Tuple) else items
    raise NotImplementedError(f"ember.jit.load: cannot read the constant '{text}'")


# --------------------------------------------------------------------------- resolver

def _safe_constant(v):
    import ember
    if v is None or isinstance(v, (bool, int, float, str, complex, ember.Tensor, ember.dtype,
                                   ember.device)):
        return True
    if isinstance(v, (tuple, list)):
        return all(_safe_constant(x) for x in v)
    from ember.jit._namespaced import torchbind_type
    return torchbind_type(v) is not None        # packed parameters a trace baked in


class ArchiveResolver(Resolver):
    """Names in archive code: TorchScript builtins (``torch``, ``ops``, ``annotate``...),
    the archive's own ``__torch__`` classes and functions and its ``CONSTANTS``. Nothing
    else resolves."""
    allows_closures = True      # torch writes forks as nested __forked_function defs

    def __init__(self, unit):
        super().__init__({})
        self.unit = unit

    def __call__(self, name):
        if name == "torch":
            return S.PyModule(AB.TORCH)
        if name == "ops":
            return S.PyModule(AB.OPS)
        if name == "__torch__":
            return S.PyModule(self.unit.root)
        if name == "CONSTANTS":
            return S.PyModule(self.unit.constants)
        if name == "math":
            return S.PyModule(math)
        if name in _JIT:
            return S.Builtin(None, name, "jit")
        if name in _PY_BUILTINS:
            return S.Builtin(getattr(builtins, name), name, "python")
        if name in ("inf", "nan"):
            return S.PythonConstant(float(name))
        if name in _EXCEPTIONS:
            return S.Builtin(getattr(builtins, name), name, "exception")
        return None

    def wrap(self, obj, name):
        import types as pytypes
        if isinstance(obj, AB.OpName):
            sugar = AB.ArchiveCall(obj.ns, obj.name) if obj.ns.startswith("torch") else \
                AB.ops_call(obj.ns, obj.name)
            if sugar is not None:
                return sugar
        elif isinstance(obj, (AB.Namespace, _Tree)):
            return S.PyModule(obj)
        elif isinstance(obj, _FunctionRef):
            if obj.qualname == "__torch__.torch.backends.mha.get_fastpath_enabled":
                # torch's fused attention kernels: ember has none, the plain path is taken
                return AB.ArchiveCall("torch.backends.mha", "get_fastpath_enabled")
            return S.ScriptFunctionRef(self.unit.function(obj.qualname))
        elif isinstance(obj, ArchiveClass):
            if obj.ct is None:
                raise NotImplementedError(f"ember.jit.load: {obj.kind} classes "
                                          f"({obj.qualname}) are not supported")
            return S.ClassRef(obj.py_class, obj.ct)
        elif isinstance(obj, pytypes.BuiltinFunctionType) and \
                getattr(obj, "__module__", "") == "math":
            return S.Builtin(obj, obj.__name__, "math")
        elif _safe_constant(obj) or T.is_enum_class(type(obj)) and any(
                a.py_class is type(obj) for a in self.unit.classes.values()):
            return S.PythonConstant(obj)        # (an archive enum's member)
        raise CompileError(f"'{name}' is not a TorchScript builtin; ember.jit.load resolves "
                           f"only torch/ops builtins and the archive's own classes")

    def class_type(self, cls_or_name):
        if not isinstance(cls_or_name, str):
            return None
        if cls_or_name == "NoneType":
            return T.NoneType
        from ember.jit._namespaced import torchbind_type
        tb = torchbind_type(qualname=cls_or_name)
        if tb is not None:
            return tb
        acls = self.unit.classes.get(cls_or_name)
        if acls is None:
            return None
        if acls.ct is None and acls.kind == "namedtuple":
            self.unit._fill_type(acls)
        return acls.ct

    # modules -------------------------------------------------------------------------
    def submodule(self, mod, attr):
        acls = mod.module
        t = acls.ct.attributes.get(attr) if isinstance(acls, ArchiveClass) else None
        if isinstance(t, T.ClassType) and t.is_module:
            return S.ModuleValue(None, self.unit.by_ct[t], t)
        return None

    def module_method(self, mod, attr):
        acls = mod.module
        if isinstance(acls, ArchiveClass) and attr in acls.defs:
            return S.Method(mod, attr)
        return None

    def _method_call(self, c, acls, v, name, args, kwargs, e):
        from ember.jit._calls import bind_script_args
        if acls is None:
            c.error(f"Tried to access nonexistent attribute or method '{name}' of type "
                    f"'{v.type}'.", e)
        try:
            fn = self.unit.method(acls, name)
        except CompileError as err:
            if "Recursive" in str(err):
                c.error(str(err), e)
            raise
        if fn is None:
            c.error(f"Tried to access nonexistent attribute or method '{name}' of type "
                    f"'{acls.qualname}'.", e)
        vals = bind_script_args(c, name, fn.arg_schema, args, kwargs, e)
        n = c.emit("prim::CallMethod", [v] + vals, [fn.return_type], e, {"name": name})
        n.fn = fn
        return n.output

    def call_module(self, c, mod, name, args, kwargs, e):
        return self._method_call(c, mod.module, mod.value, name, args, kwargs, e)

    def call_method(self, c, v, name, args, kwargs, e):
        return self._method_call(c, self.unit.by_ct.get(v.type), v, name, args, kwargs, e)

    def construct(self, c, ref, args, kwargs, e):
        ct = ref.class_type
        if isinstance(ct, T.TupleType):
            from ember.jit._calls import bind_script_args
            schema = [(n, t, False, None, False) for n, t in zip(ct.names, ct.elems)]
            vals = bind_script_args(c, ref.cls.__name__, schema, args, kwargs, e)
            return c.emit("prim::TupleConstruct", vals, [ct], e).output
        cls = ref.cls

        def create():
            return object.__new__(cls)
        obj = c.emit("prim::CreateObject", [], [ct], e, fn=create).output
        if "__init__" in self.unit.by_ct[ct].defs:
            self.call_method(c, obj, "__init__", args, kwargs, e)
        return obj

    def create_object(self, c, qualname, e):
        acls = self.unit.classes.get(qualname)
        if acls is None or acls.kind != "class":
            c.error(f"cannot create an object of {qualname}", e)
        cls = acls.py_class

        def create():
            return object.__new__(cls)
        return c.emit("prim::CreateObject", [], [acls.ct], e, fn=create).output

    def fork(self, c, target, args, kwargs, e):
        """``fork(__forked_function)``: torch writes every fork as a nested closure."""
        from ember.jit._compiler import Closure
        if not isinstance(target, Closure) or args or kwargs:
            c.error("fork() in an archive takes one nested function (torch's "
                    "__forked_function)", e)
        return target.fork(c, e)


# --------------------------------------------------------------------------- pickles

class _ObjectStub:
    """An archive object while unpickling: its class and its state (an enum member: the
    value its REDUCE was called with)."""
    _qualname = None

    def __init__(self, *args):
        self._args = args

    def __setstate__(self, state):
        self._state = state


def _identity(x, *rest):
    return x


_PICKLE_GLOBALS = {
    ("collections", "OrderedDict"): collections.OrderedDict,
    ("torch.jit._pickle", "restore_type_tag"): _identity,
    ("torch.jit._pickle", "build_intlist"): _identity,
    ("torch.jit._pickle", "build_floatlist"): _identity,
    ("torch.jit._pickle", "build_boollist"): _identity,
    ("torch.jit._pickle", "build_doublelist"): _identity,
    ("torch.jit._pickle", "build_tensorlist"): _identity,
    ("torch.jit._pickle", "build_complexlist"): _identity,
}


_REBUILDS = {"torch._utils._rebuild_tensor", "torch._utils._rebuild_tensor_v2",
             "torch._utils._rebuild_tensor_v3", "torch._utils._rebuild_sparse_tensor",
             "torch._utils._rebuild_qtensor"}


class _ArchiveUnpickler(pickle.Unpickler):
    """Only the archive's classes, tensor rebuilds, storages, dtypes and OrderedDict."""

    def __init__(self, data, persistent_load):
        super().__init__(io.BytesIO(data), encoding="utf-8")
        self._persistent = persistent_load
        self._stubs = {}

    def find_class(self, module, name):
        from ember import serialization as ser
        if module == "__torch__" or module.startswith("__torch__."):
            qual = f"{module}.{name}"
            stub = self._stubs.get(qual)
            if stub is None:
                stub = self._stubs[qual] = type(name, (_ObjectStub,), {"_qualname": qual})
            return stub
        obj = _PICKLE_GLOBALS.get((module, name))
        if obj is not None:
            return obj
        full = f"{module}.{name}"
        table = ser._allowed_globals()
        ok = full in _REBUILDS or full in ("torch.device", "torch.Size") or \
            module == "torch" and (name.endswith("Storage") or isinstance(
                table.get(full), (ser._dtype.dtype, ser._dtype.qscheme)))
        obj = table.get(full) if ok else None
        if obj is not None:
            return obj
        raise RuntimeError(f"ember.jit.load: the archive's pickle names the global "
                           f"'{module}.{name}', which a TorchScript archive never needs; "
                           f"refusing to load it")

    def persistent_load(self, pid):
        return self._persistent(pid)


class _EnumArchiveUnpickler(pickle._Unpickler):
    """The Python unpickler with ``_ArchiveUnpickler``'s globals, for archives holding enum
    members: torch pickles one as GLOBAL, the bare value, REDUCE (no argument tuple), which
    the C unpickler refuses."""
    def __init__(self, data, persistent_load):
        super().__init__(io.BytesIO(data), encoding="utf-8")
        self._persistent = persistent_load
        self._stubs = {}

    find_class = _ArchiveUnpickler.find_class
    persistent_load = _ArchiveUnpickler.persistent_load
    dispatch = dict(pickle._Unpickler.dispatch)

    def load_reduce(self):
        args = self.stack.pop()
        func = self.stack[-1]
        self.stack[-1] = func(*(args if isinstance(args, tuple) else (args,)))

    dispatch[pickle.REDUCE[0]] = load_reduce


def _read_storages(zf, archive, folder, map_location):
    from ember import serialization as ser
    import numpy as np
    import sys
    names = set(zf.namelist())
    byteorder = "little"
    if f"{archive}/byteorder" in names:
        byteorder = ser._read_record(zf, archive, "byteorder").decode().strip()
    loaded = {}

    def persistent_load(pid):
        if not isinstance(pid, tuple) or not pid or pid[0] not in ("storage", b"storage"):
            raise pickle.UnpicklingError(f"unsupported persistent id {pid!r}")
        stype, key, location, numel = pid[1:5]
        key = key.decode() if isinstance(key, bytes) else str(key)
        if key in loaded:
            return loaded[key]
        dtype = stype.dtype if isinstance(stype, ser.StorageType) else None
        nbytes = int(numel) * (dtype.itemsize if dtype is not None else 1)
        arr = ser._read_record(zf, archive, f"{folder}/{key}", np.empty(nbytes, np.uint8))
        if byteorder != sys.byteorder and dtype is not None and dtype.itemsize > 1:
            arr = arr.view(dtype.np).byteswap().view(np.uint8)
        ls = ser._apply_map_location(ser._LoadedStorage(arr, dtype), location, map_location)
        loaded[key] = ls
        return ls
    return persistent_load


# --------------------------------------------------------------------------- modules

def _build(obj, unit, memo):
    """The Python value of an unpickled archive value (modules -> RecursiveScriptModule)."""
    key = id(obj)
    if key in memo:
        return memo[key]
    if isinstance(obj, _ObjectStub) and obj._qualname.startswith("__torch__.torch.classes."):
        from ember.jit._namespaced import rebuild_torchbind    # packed parameters
        inst = memo[key] = rebuild_torchbind(obj._qualname,
                                             _build(getattr(obj, "_state", None), unit, memo))
        return inst
    if isinstance(obj, _ObjectStub):
        acls = unit.classes.get(obj._qualname)
        if acls is None:
            raise RuntimeError(f"ember.jit.load: the pickle names class {obj._qualname}, "
                               f"which the archive's code does not define")
        state = getattr(obj, "_state", {})
        if acls.kind == "enum":
            args = getattr(obj, "_args", ())
            if len(args) != 1:
                raise RuntimeError(f"ember.jit.load: enum {acls.qualname} pickled without "
                                   f"its value")
            inst = memo[key] = acls.py_class(args[0])
            return inst
        if acls.kind == "module":
            return _build_module(acls, state, unit, memo, key)
        if acls.py_class is None:
            raise NotImplementedError(f"ember.jit.load: {acls.kind} objects ({acls.qualname}) "
                                      f"are not supported")
        inst = object.__new__(acls.py_class)
        memo[key] = inst
        for k, v in (state.items() if isinstance(state, dict) else ()):
            inst.__dict__[k] = _build(v, unit, memo)
        return inst
    if type(obj) is list:
        out = memo[key] = []
        out.extend(_build(x, unit, memo) for x in obj)
        return out
    if type(obj) in (dict, collections.OrderedDict):
        out = memo[key] = {}
        for k, v in obj.items():
            out[k] = _build(v, unit, memo)
        return out
    if type(obj) is tuple:
        out = tuple(_build(x, unit, memo) for x in obj)
        memo[key] = out
        return out
    return obj


def _build_module(acls, state, unit, memo, key):
    from ember import nn
    from ember.jit._modules import RecursiveScriptModule
    ct = acls.ct
    self = nn.Module.__new__(RecursiveScriptModule)
    nn.Module.__init__(self)
    memo[key] = self
    d = self.__dict__
    d["_ct"] = ct
    d["original_class"] = nn.Module
    d["original_name"] = acls.cdef.name
    d["_archive_qualname"] = acls.qualname
    slots = ct.constants.get("$slots", {})
    if not isinstance(state, dict):     # pickled by its __getstate__: __setstate__ after compile
        unit.pending_setstate.append((self, acls, _build(state, unit, memo)))
        state = {}
    for name, v in state.items():
        v = _build(v, unit, memo)
        where = slots.get(name)
        if where == "_parameters":
            self._parameters[name] = _as_parameter(v)
        elif where == "_buffers":
            self._buffers[name] = v
        elif where == "_modules":
            self._modules[name] = v
        elif name == "training":
            d["training"] = bool(v)
        else:
            d[name] = v
    for name, v in ct.constants.items():
        if not name.startswith("$"):
            d[name] = v
    return self


def _as_parameter(v):
    from ember import nn
    if v is None or isinstance(v, nn.Parameter):
        return v
    return nn.Parameter(v, requires_grad=v.requires_grad)


def _compile_all(unit, root):
    """Compile the methods of every module class used: ``forward`` (and what it calls)
    must compile; another method that does not is left out (``unit.failed`` says why)."""
    from ember.jit._modules import RecursiveScriptModule
    seen, classes = set(), []

    def visit(m):
        if id(m) in seen:
            return
        seen.add(id(m))
        acls = unit.by_ct.get(m._ct)
        if acls is not None and acls not in classes:
            classes.append(acls)
        for ch in m._modules.values():
            if isinstance(ch, RecursiveScriptModule):
                visit(ch)
    visit(root)
    for acls in classes:
        if "forward" in acls.defs:
            unit.method(acls, "forward")
    for acls in classes:
        for name in acls.defs:
            if name in acls.ct.methods:
                continue
            try:
                unit.method(acls, name)
            except RefusedArchive:
                raise
            except (CompileError, NotImplementedError, RuntimeError) as err:
                unit.failed[f"{acls.qualname}.{name}"] = err


# --------------------------------------------------------------------------- load

def load(f, map_location=None, _extra_files=None, _restore_shapes=False):
    """Load a TorchScript archive (a path or a binary file object) written by
    ``torch.jit.save`` or ``ember.jit.save``; returns a ``RecursiveScriptModule``."""
    from ember import serialization as ser
    if isinstance(map_location, str) or map_location is not None and \
            type(map_location).__name__ == "device":
        ser._check_location(map_location)
    elif map_location is not None:
        raise ValueError(f"map_location should be either None, string or torch.device, but "
                         f"got type: {type(map_location)}")
    if isinstance(f, (str, os.PathLike)):
        path = os.fspath(f)
        if not os.path.exists(path):
            raise ValueError(f"The provided filename {path} does not exist")
        if os.path.isdir(path):
            raise ValueError(f"The provided filename {path} is a directory")
        with open(path, "rb") as fh:
            data = fh.read()
    elif hasattr(f, "read"):
        data = f.read()
    else:
        raise AttributeError("expected 'f' to be string, path, or a file-like object with a "
                             "'read' attribute")
    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
    except zipfile.BadZipFile:
        raise RuntimeError("PytorchStreamReader failed reading zip archive: failed finding "
                           "central directory") from None
    with zf:
        return _load_zip(zf, map_location, _extra_files)


def _load_zip(zf, map_location, extra_files):
    from ember import serialization as ser
    names = zf.namelist()
    if not names or "/" not in names[0]:
        raise RuntimeError("PytorchStreamReader failed locating file constants.pkl: file "
                           "not found")
    archive = names[0].split("/", 1)[0]
    if f"{archive}/constants.pkl" not in names:
        raise RuntimeError("PytorchStreamReader failed locating file constants.pkl: file not "
                           "found" + (" (this is a torch.save file: use ember.load)"
                                      if f"{archive}/data.pkl" in names else ""))
    ser._check_version(zf, archive, names)
    code_prefix = f"{archive}/code/"
    sources = {n[len(f"{archive}/"):]: zf.read(n).decode("utf-8") for n in names
               if n.startswith(code_prefix) and n.endswith(".py")}
    cpickle = ser._read_record(zf, archive, "constants.pkl")
    constants = _ArchiveUnpickler(cpickle, _read_storages(zf, archive, "constants",
                                                          map_location)).load()
    constants = list(constants) if isinstance(constants, (tuple, list)) else []
    unit = Unit(sources, [_build(c, None, {}) if not isinstance(c, _ObjectStub) or
                          c._qualname.startswith("__torch__.torch.classes.") else c
                          for c in constants])
    unpickler = _EnumArchiveUnpickler if any(
        a.kind == "enum" for a in unit.classes.values()) else _ArchiveUnpickler
    up = unpickler(ser._read_record(zf, archive, "data.pkl"),
                           _read_storages(zf, archive, "data", map_location))
    raw = up.load()
    root = _build(raw, unit, {})
    from ember.jit._modules import RecursiveScriptModule
    if not isinstance(root, RecursiveScriptModule):
        raise RuntimeError(f"ember.jit.load: the archive holds a {type(root).__name__}, not "
                           f"a module")
    _compile_all(unit, root)
    for module, acls, state in unit.pending_setstate:   # torch's quantized Conv modules...
        unit.method(acls, "__setstate__").call_method(module, [state], {})
    root.__dict__["_archive_unit"] = unit
    if extra_files is not None:
        for name in list(extra_files):
            key = f"{archive}/extra/{name}"
            extra_files[name] = zf.read(key) if key in names else b""     # torch: b"" if absent
    return root
