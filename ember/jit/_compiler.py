"""The frontend: a Python function's ``ast`` -> a typed ``Graph``.

``Compiler(fn_def, env, ...)`` walks the statements with an ``Env`` (name -> Value or
Sugar) per block. Assignments rebind names (SSA); ``if`` makes a ``prim::If`` whose outputs
are the names either branch assigns; loops make ``prim::Loop`` with the names the body
assigns carried. Before compiling, ``_normalize`` moves the statements that follow an
``if`` holding ``return``/``break``/``continue`` into that ``if``'s branches that fall
through, so every exit is the last statement of its block; ``return v`` then just binds
the hidden name ``$ret`` and ``break`` binds ``$cond`` to False.
"""
from __future__ import annotations

import ast
import operator

from ember.jit import _builtins as B
from ember.jit import _sugar as S
from ember.jit import _types as T
from ember.jit._ir import Graph, Node, SourceRange
from ember.jit.frontend import CompileError, NotSupportedError, Span, UnsupportedNodeError

_RET, _COND, _HAS_RET = "$ret", "$cond", "$has_ret"


# --------------------------------------------------------------------------- environment

class Env:
    def __init__(self, block, parent=None):
        self.block, self.parent = block, parent
        self.vars = {}          # name -> Value or Sugar
        self.declared = {}      # name -> declared type (annotated assignments)
        self.defined_at = {}    # name -> SourceRange of the assignment (error messages)
        self.refined = {}       # name -> the Sugar a type refinement bound (not an assignment)

    def lookup(self, name):
        e = self
        while e is not None:
            if name in e.vars:
                return e.vars[name]
            e = e.parent
        return None

    def declared_type(self, name):
        e = self
        while e is not None:
            if name in e.declared:
                return e.declared[name]
            e = e.parent
        return None


class _Exit(Exception):
    pass


# --------------------------------------------------------------------------- normalization

def _exits(stmts, loop_level=True):
    """Does this statement list hold a return (or, in a loop body, break/continue) outside
    nested loops/functions?"""
    for s in stmts:
        for n in _walk_no_nested(s, loop_level):
            if isinstance(n, ast.Return) or loop_level and isinstance(n, (ast.Break, ast.Continue)):
                return True
    return False


def _walk_no_nested(node, loop_level):
    yield node
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.FunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        if isinstance(child, (ast.For, ast.While)) and loop_level:
            # a nested loop's break/continue are its own; returns still count
            for n in ast.walk(child):
                if isinstance(n, ast.Return):
                    yield n
            continue
        yield from _walk_no_nested(child, loop_level)


def _terminates(stmts):
    return bool(stmts) and isinstance(stmts[-1], (ast.Return, ast.Raise, ast.Break, ast.Continue))


def _normalize(stmts, cont):
    """Move the continuation ``cont`` (and the statements after an exiting ``if``) into the
    branches that fall through, so that exits end their blocks."""
    out = []
    stmts = list(stmts) + list(cont)
    for i, s in enumerate(stmts):
        if isinstance(s, (ast.Return, ast.Raise, ast.Break, ast.Continue)):
            out.append(s)
            return out
        if isinstance(s, (ast.For, ast.While)) and _returns_in(s.body):
            # `return` inside the loop: it sets $has_ret and breaks (see s_Return); what
            # follows the loop runs only when the loop did not return
            rest = stmts[i + 1:]
            flag = ast.Name(id=_HAS_RET, ctx=ast.Load())
            ret = ast.Return(value=ast.Name(id=_RET, ctx=ast.Load()))
            new = ast.If(test=flag, body=[ret], orelse=_normalize(rest, []) or [ast.Pass()])
            for n in (flag, ret, ret.value, new):
                ast.copy_location(n, s)
                n.end_lineno, n.end_col_offset = s.lineno, None
            out += [s, new]
            return out
        if isinstance(s, ast.If) and (_exits(s.body) or _exits(s.orelse)):
            rest = stmts[i + 1:]
            body = _normalize(s.body, rest)
            orelse = _normalize(s.orelse, rest)
            new = ast.If(test=s.test, body=body or [ast.Pass()], orelse=orelse)
            ast.copy_location(new, s)
            new.end_lineno, new.end_col_offset = s.end_lineno, s.end_col_offset
            new._normalized = True
            out.append(new)
            return out
        out.append(s)
    return out


def _returns_in(stmts):
    """Does a loop body hold a ``return`` (nested loops included, nested defs not)?"""
    for s in stmts:
        for n in _walk_no_nested(s, False):
            if isinstance(n, ast.Return):
                return True
    return False


def _assigned_names(stmts):
    """Names a statement list may assign (for loop-carried values)."""
    names = []

    def add_target(t):
        if isinstance(t, ast.Name):
            if t.id not in names:
                names.append(t.id)
        elif isinstance(t, (ast.Tuple, ast.List)):
            for e in t.elts:
                add_target(e)
        elif isinstance(t, ast.Starred):
            add_target(t.value)

    for s in stmts:
        for n in ast.walk(s):
            if isinstance(n, (ast.FunctionDef, ast.Lambda)):
                continue
            if isinstance(n, ast.Assign):
                for t in n.targets:
                    add_target(t)
            elif isinstance(n, (ast.AugAssign, ast.AnnAssign)):
                add_target(n.target)
            elif isinstance(n, ast.For):
                add_target(n.target)
            elif isinstance(n, ast.NamedExpr):
                add_target(n.target)
    return names


# --------------------------------------------------------------------------- the compiler

_UNSUPPORTED = {
    ast.Try: "try blocks aren't supported", ast.Lambda: "Lambda aren't supported",
    ast.Global: "global variables aren't supported", ast.Nonlocal: "nonlocal variables aren't supported",
    ast.ClassDef: "class definitions aren't supported", ast.Yield: "yield aren't supported",
    ast.YieldFrom: "yield from aren't supported", ast.Await: "await aren't supported",
    ast.AsyncFunctionDef: "async function definitions aren't supported",
    ast.GeneratorExp: "GeneratorExp aren't supported", ast.Set: "Set aren't supported",
    ast.SetComp: "SetComp aren't supported", ast.Import: "import statements aren't supported",
    ast.ImportFrom: "import statements aren't supported", ast.FunctionDef: "function definitions aren't supported",
    ast.Starred: "Starred expressions aren't supported",
}
_UNSUPPORTED[ast.Yield] = "Yield aren't supported"
# torch underlines an unsupported statement's keyword (an expression's first character)
_KEYWORD_WIDTH = {ast.Try: 3, ast.Global: 6, ast.Nonlocal: 8, ast.FunctionDef: 3,
                  ast.AsyncFunctionDef: 5, ast.ClassDef: 5, ast.Import: 6, ast.ImportFrom: 4,
                  ast.For: 3, ast.While: 5, ast.With: 4, ast.Delete: 3, ast.AsyncFor: 5,
                  ast.AsyncWith: 5}
if hasattr(ast, "Match"):
    _UNSUPPORTED[ast.Match] = "Match aren't supported"
    _KEYWORD_WIDTH[ast.Match] = 1
if hasattr(ast, "TryStar"):
    _UNSUPPORTED[ast.TryStar] = "try blocks aren't supported"


class Compiler:
    """Compile one function definition into ``self.graph``.

    ``resolver`` answers names not bound locally (globals, closures, builtins) with Sugar;
    ``self_sugar`` is the method's ``self`` (a ModuleValue or a class instance type);
    ``src`` holds the source lines for error messages."""

    def __init__(self, fn_def, resolver, src, *, self_type=None, self_module=None,
                 arg_types=None, return_type=None, defaults=None, name=None, owner=None,
                 captures=None):
        self.fn_def = fn_def
        self.captures = captures or {}      # a closure's enclosing names (see Closure)
        self.resolver = resolver
        self.src = src
        self.graph = Graph()
        self.self_type = self_type
        self.self_module = self_module
        self.name = name or fn_def.name
        self.owner = owner
        self.arg_types = arg_types or {}
        self.declared_return = return_type
        self.defaults = defaults or {}
        self.arg_names = []
        self.arg_schema = []    # (name, type, has_default, default)
        self._one_sided = {}    # name -> (node, message): assigned on one path of an if only
        self._inferred = set()  # argument Values typed Tensor by default (not annotated)
        self._returns = []      # (return statement, type) in source order
        self._last_return = None
        self.loop_depth = 0     # loops (not unrolled) around the statement being compiled
        self.loop_index = None  # the innermost loop's index Value

    # -- source ranges and errors -------------------------------------------------
    def where(self, node):
        """The SourceRange an IR node keeps (run-time tracebacks): a call points at its
        callee, as torch's do."""
        if node is None or not hasattr(node, "lineno"):
            return None
        if isinstance(node, ast.Call) and hasattr(node.func, "lineno"):
            node = node.func
        s = self.src
        end = getattr(node, "end_col_offset", None)
        if getattr(node, "end_lineno", node.lineno) != node.lineno:
            end = None
        ind = getattr(s, "indent", 0)
        return SourceRange(s.filename, node.lineno + s.line_offset, node.col_offset + ind,
                           None if end is None else end + ind, s.lines, s.first_line,
                           self.name)

    def span(self, node, width=None):
        """The source range of an ast node for error messages (several lines if it has)."""
        if node is None or not hasattr(node, "lineno"):
            return None
        s = self.src
        line = node.lineno + s.line_offset
        end_line = (getattr(node, "end_lineno", None) or node.lineno) + s.line_offset
        end_col = getattr(node, "end_col_offset", None)
        if width is not None:
            end_line, end_col = line, node.col_offset + width
        ind = getattr(s, "indent", 0)
        return Span(s.filename, line, node.col_offset + ind, end_line,
                    None if end_col is None else end_col + ind, s.lines, s.first_line,
                    self.name)

    def error(self, msg, node, also=None):
        raise CompileError(msg, self.span(node), self.span(also) if also is not None else None)

    def unsupported(self, node, msg=None):
        width = _KEYWORD_WIDTH.get(type(node), 1 if isinstance(node, ast.expr) else None)
        raise UnsupportedNodeError(msg or _UNSUPPORTED.get(type(node),
                                                           f"{type(node).__name__} aren't supported"),
                                   self.span(node, width))

    def type_name(self, v):
        """A value's type as torch names it in messages (``Tensor (inferred)`` for an
        unannotated argument)."""
        if v.type is T.TensorType and v in self._inferred:
            return "Tensor (inferred)"
        return v.type.annotation

    # -- emitting nodes ---------------------------------------------------------------
    def emit(self, kind, inputs, out_types=(), node=None, attrs=None, *, op=None, fn=None,
             kwnames=(), names=None):
        n = Node(kind, inputs, attrs, self.where(node) if node is not None else None)
        n.op, n.fn, n.kwnames = op, fn, tuple(kwnames)
        for k, t in enumerate(out_types):
            n.add_output(t, names[k] if names else None)
        self.block.append(n)
        return n

    def const(self, value, node=None):
        """A ``prim::Constant`` Value (dtypes and devices too)."""
        import ember
        if isinstance(value, ember.Tensor):
            t = T.TensorType
        else:
            t = T.type_of_value(value)
        n = Node("prim::Constant", (), {} if value is None else {"value": value})
        n.add_output(t)
        self.block.append(n)
        return n.output

    # -- entry ----------------------------------------------------------------------------
    def compile(self):
        fd = self.fn_def
        a = fd.args
        if a.vararg or a.kwarg:
            star = a.vararg or a.kwarg
            sp = self.span(star, len(star.arg))
            sp.col -= 1                     # torch: one character before the name
            raise NotSupportedError("Compiled functions can't take variable number of "
                                    "arguments or use keyword-only arguments with defaults", sp)
        self.block = self.graph.block
        env = self.env = Env(self.block)
        params = a.posonlyargs + a.args + a.kwonlyargs
        for k, p in enumerate(params):
            if k == 0 and self.self_type is not None:
                v = self.graph.add_input(self.self_type, p.arg)
                env.vars[p.arg] = (S.ModuleValue(v, self.self_module, self.self_type)
                                   if self.self_module is not None else S.SimpleValue(v))
                continue
            t = self.arg_types.get(p.arg, T.TensorType)
            v = self.graph.add_input(t, p.arg)
            if p.arg not in self.arg_types:
                self._inferred.add(v)
            env.vars[p.arg] = S.SimpleValue(v)
            self.arg_names.append(p.arg)
            has_def = p.arg in self.defaults
            self.arg_schema.append((p.arg, t, has_def, self.defaults.get(p.arg),
                                    p in a.kwonlyargs))
        for name, sugar in self.captures.items():
            env.vars[name] = _capture_input(self, name, sugar)
        body = list(fd.body)
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                and isinstance(body[0].value.value, str):
            body = body[1:]                     # docstring
        body = _normalize(body, [ast.Return(value=None, lineno=fd.lineno, col_offset=fd.col_offset)])
        self.stmts(body)
        ret = env.lookup(_RET)
        if ret is None:
            rv = self.const(None)
        else:
            rv = self.value(ret, fd)
        if self.declared_return is not None:
            rv = self.coerce(rv, self.declared_return, self._last_return or fd,
                             "Return value was annotated as having type "
                             f"{self.declared_return.annotation} but is actually of type")
        self.graph.block.add_return(rv)
        self.return_type = rv.type
        return self.graph

    # -- statements ---------------------------------------------------------------------
    def stmts(self, stmts):
        """Compile a list; returns the kind of exit that ends it (None: falls through)."""
        for s in stmts:
            r = self.stmt(s)
            if r is not None:
                return r
        return None

    def stmt(self, s):
        m = getattr(self, "s_" + type(s).__name__, None)
        if m is None:
            self.unsupported(s)
        return m(s)

    def s_Pass(self, s):
        return None

    def s_FunctionDef(self, s):
        """A nested ``def`` without parameters whose body reads enclosing variables, used as
        ``fork(name)`` (torch's archives write ``def __forked_function(): ...`` so; only
        archive code, whose resolver sets ``allows_closures``). Any other nested def is
        unsupported, as in torch."""
        a = s.args
        if not getattr(self.resolver, "allows_closures", False) or a.posonlyargs or a.args \
                or a.kwonlyargs or a.vararg or a.kwarg or s.decorator_list:
            self.unsupported(s)     # torch's scripted source has no nested defs either
        stored = set(_assigned_names(s.body))
        captured = {}
        names = sorted((n for n in ast.walk(s) if isinstance(n, ast.Name)),
                       key=lambda n: (n.lineno, n.col_offset))
        for n in names:
            if isinstance(n.ctx, ast.Load) and \
                    n.id not in stored and n.id not in captured:
                v = self.env.lookup(n.id)
                if v is not None and v is not _POISONED:
                    captured[n.id] = v
        self.env.vars[s.name] = Closure(s, captured)
        return None

    def s_Expr(self, s):
        if isinstance(s.value, ast.Constant) and isinstance(s.value.value, str):
            return None     # a string statement (docstring, comment)
        self.expr(s.value)
        return None

    def s_Return(self, s):
        v = self.const(None) if s.value is None else self.value(self.expr(s.value), s.value)
        if getattr(s, "end_col_offset", None) is not None:
            self._last_return = s
            self._returns.append((s, v.type))
        if self.declared_return is not None:
            v = self.coerce(v, self.declared_return, s, "Return value was annotated as "
                            f"having type {self.declared_return.annotation} but is "
                            f"actually of type")
        if self.loop_depth:
            # inside a loop: remember the value, flag it and break (see _normalize)
            self.env.vars[_RET] = S.SimpleValue(v)
            self.env.vars[_HAS_RET] = S.SimpleValue(self.const(True))
            self.env.vars[_COND] = S.SimpleValue(self.const(False))
            return "break"
        self.env.vars[_RET] = S.SimpleValue(v)
        return "return"

    def s_Assign(self, s):
        rhs = self.expr(s.value)
        for target in s.targets:
            self.assign(target, rhs, s)
        return None

    def s_AnnAssign(self, s):
        t = self.annotation(s.annotation)
        if s.value is None:
            self.unsupported(s, "Annotated declarations without a value aren't supported")
        rhs = self.expr(s.value, type_hint=t)
        v = self.coerce(self.value(rhs, s.value), t, s.target,
                        f"Variable '{ast.unparse(s.target)}' is annotated with type "
                        f"{t.annotation} but is being assigned to a value of type")
        if isinstance(s.target, ast.Name):
            self.env.declared[s.target.id] = t
        self.assign(s.target, S.SimpleValue(v), s)
        return None

    def s_AugAssign(self, s):
        opname = type(s.op).__name__
        target = s.target
        cur = self.expr(ast.Name(id=target.id, ctx=ast.Load(), lineno=s.lineno,
                                 col_offset=s.col_offset)) if isinstance(target, ast.Name) \
            else self.expr(_as_load(target))
        cv = self.value(cur, target)
        rhs = self.value(self.expr(s.value), s.value)
        if cv.type is T.TensorType and opname in B.BINARY_OPERATORS:
            name = B.BINARY_OPERATORS[opname][0]
            res = self.call_tensor_method(cv, name + "_", [rhs], {}, s)     # in place
        elif isinstance(cv.type, T.ListType) and opname == "Add":
            self.emit("aten::extend", [cv, rhs], (), s, fn=list.extend)
            res = cv
        else:
            res = self.binary(opname, cv, rhs, s)
        self.assign(target, S.SimpleValue(res), s)
        return None

    def s_If(self, s):
        test = s.test
        # compile-time conditions (constants, isinstance, `is None` on non-optionals)
        cond = self.expr(test)
        refine_then, refine_else = self.refinements(test)
        cv = self.value(cond, test)
        cst = cv.constant()
        if cst is not _NOT and cst is not None and type(cst) is bool:
            self._drop_if_const(cv)
            branch = s.body if cst else s.orelse
            return self.stmts_refined(branch, refine_then if cst else refine_else)
        cv = self.to_bool(cv, test)
        return self.emit_if(cv, s.body, s.orelse, s, refine_then, refine_else)

    def return_mismatch(self, node):
        rets = self._returns
        for k, (s, t) in enumerate(rets[1:], 1):
            if T.unify(rets[0][1], t) is None:
                self.error(f"Previous return statement returned a value of type "
                           f"{rets[0][1].annotation} but this return statement returns a value "
                           f"of type {t.annotation}", s)
        self.error("Return statements return values of different types", node)

    def _drop_if_const(self, v):
        n = v.node
        if n is not None and n.kind == "prim::Constant" and not v.uses and n.owner is self.block:
            n.destroy()

    def stmts_refined(self, stmts, refine):
        self.refine(refine)
        return self.stmts(stmts)

    def refine(self, refine):
        """Bind refined types (``x is not None`` -> x : T) in the current block."""
        for name, t in refine.items():
            cur = self.env.lookup(name)
            if isinstance(cur, S.SimpleValue):
                sv = S.SimpleValue(self.cast(cur.value, t))
                self.env.vars[name] = sv
                self.env.refined[name] = sv

    def cast(self, v, t):
        if v.type == t:
            return v
        n = self.emit("prim::unchecked_cast", [v], [t])
        return n.output

    def emit_if(self, cond, then_stmts, else_stmts, node, refine_then=None, refine_else=None,
                then_fn=None, else_fn=None):
        """``prim::If`` over two statement lists (or two callables emitting into the
        current block); returns the exit kind when both branches exit."""
        n = self.emit("prim::If", [cond], (), node)
        outer_env, outer_block = self.env, self.block
        results = []
        for k, (stmts, refine, fn) in enumerate(((then_stmts, refine_then, then_fn),
                                                  (else_stmts, refine_else, else_fn))):
            b = n.add_block()
            self.block, self.env = b, Env(b, outer_env)
            if fn is not None:
                exit_ = fn()
            else:
                exit_ = self.stmts_refined(stmts or [], refine or {})
            results.append((self.env, b, exit_))
            self.block, self.env = outer_block, outer_env
        (env_t, b_t, ex_t), (env_f, b_f, ex_f) = results
        names = []
        for e in (env_t, env_f):
            for name, v in e.vars.items():
                if e.refined.get(name) is v:     # only refined, not assigned
                    continue
                if name not in names and isinstance(v, S.SimpleValue):
                    names.append(name)
        outs = []
        for name in names:
            in_t, in_f = name in env_t.vars, name in env_f.vars
            outer = outer_env.lookup(name)
            if not ((in_t or ex_t == "raise") and (in_f or ex_f == "raise")) and outer is None:
                # defined on one path only: usable only if the other raised
                self._one_sided[name] = (node, f"{name} is not defined in the "
                                               f"{'true' if not in_t else 'false'} branch")
                continue
            if name in (_RET,) and not (in_t or ex_t in ("raise",)) and outer is None:
                continue
            vt = env_t.vars.get(name, outer)
            vf = env_f.vars.get(name, outer)
            if not isinstance(vt, (S.SimpleValue, type(None))) or not isinstance(vf, (S.SimpleValue, type(None))):
                continue
            if vt is vf:
                continue
            outs.append((name, vt, vf))
        merged = []
        for name, vt, vf in outs:
            tt = vt.value.type if vt is not None else None
            tf = vf.value.type if vf is not None else None
            declared = outer_env.declared_type(name)
            if declared is not None:
                t = declared
            elif tt is None:
                t = tf
            elif tf is None:
                t = tt
            else:
                t = T.unify(tt, tf)
                if t is None and name == _RET:
                    self.return_mismatch(node)
                if t is None:
                    # an error only if the name is used after the if (torch)
                    self._one_sided[name] = (node, f"Type mismatch: {name} is set to type "
                                                   f"{tt.annotation} in the true branch and type "
                                                   f"{tf.annotation} in the false branch")
                    outer_env.vars[name] = _POISONED
                    continue
            merged.append((name, t))
            for (b, v) in ((b_t, vt), (b_f, vf)):
                if v is None:
                    self.block = b
                    u = self.emit("prim::Uninitialized", [], [t]).output
                    self.block = outer_block
                    b.add_return(u)
                else:
                    b.add_return(v.value)
        for name, t in merged:
            o = n.add_output(t, None if name.startswith("$") else name)
            outer_env.vars[name] = S.SimpleValue(o)
        if ex_t and ex_f:
            if "return" in (ex_t, ex_f):
                return "return"
            if ex_t == ex_f:
                return ex_t
            return "break" if "break" in (ex_t, ex_f) else ex_t
        return None

    def s_While(self, s):
        if s.orelse:
            raise NotSupportedError("else branches of while loops aren't supported",
                                    self.span(s, 5))
        cond = self.to_bool(self.value(self.expr(s.test), s.test), s.test)

        def body_cond(env):
            # evaluated at the end of each iteration (short-circuits after a break)
            return self.value(self.expr(s.test), s.test)

        self.emit_loop(None, cond, s.body, s, lambda env: None, body_cond)
        return None

    def s_For(self, s):
        if s.orelse:
            raise NotSupportedError("else branches of for loops aren't supported",
                                    self.span(s, 3))
        it = self.expr(s.iter)
        items = self.unrolled_items(it, s.iter)
        if items is not None:                     # ModuleList, tuples: unroll
            self.unrolled_loop(s, items)
            return None
        trip, bind = self.iteration(it, s.iter)
        true = self.const(True)
        self.emit_loop(trip, true, s.body, s, lambda env: self.assign(s.target, bind(), s), None)
        return None

    def unrolled_loop(self, s, items):
        """``for`` over a module container or a tuple: the body once per item. After a
        ``return`` (which sets ``$cond``, see s_Return) the remaining items run under
        ``if $cond``. break/continue are refused there, as torch does."""
        for st in s.body:
            for n in _walk_no_nested(st, True):
                if isinstance(n, (ast.Break, ast.Continue)):
                    self.error("Because we emit iteration over modulelists or tuples as "
                               "unrolled loops, we do not support break or continue inside "
                               "the body of these loops", n)
        body = _normalize(list(s.body), [])
        if not _exits(s.body):
            for item in items:
                self.assign(s.target, item, s)
                self.stmts(body)
            return
        init = None
        if _returns_in(s.body) and self.env.lookup(_HAS_RET) is None:
            self.env.vars[_HAS_RET] = S.SimpleValue(self.const(False))
            rt = self.declared_return or T.PendingType
            init = self.emit("prim::Uninitialized", [], [rt]).output
            self.env.vars[_RET] = S.SimpleValue(init)
        outer_cond = self.env.lookup(_COND)

        def run(k):
            if k == len(items):
                return None
            self.assign(s.target, items[k], s)
            self.env.vars[_COND] = S.SimpleValue(self.const(True))
            self.loop_depth += 1
            try:
                self.stmts(body)
            finally:
                self.loop_depth -= 1
            go = self.env.lookup(_COND).value
            if go.constant() is True:
                return run(k + 1)
            self.emit_if(go, None, None, s, then_fn=lambda: run(k + 1), else_fn=lambda: None)
            return None

        run(0)
        if init is not None and init.type is T.PendingType:
            t = self.env.lookup(_RET).value.type
            if t is T.PendingType:
                t = ([r for _, r in self._returns] or [T.NoneType])[-1]
            init.set_type(t)
            if self.env.lookup(_RET).value.type is T.PendingType:
                self.env.lookup(_RET).value.set_type(t)
        if outer_cond is None:
            self.env.vars.pop(_COND, None)
        else:
            self.env.vars[_COND] = outer_cond

    def emit_loop(self, trip, cond, body, node, bind_target, body_cond):
        returns = _returns_in(body)
        if returns and self.env.lookup(_HAS_RET) is None:
            self.env.vars[_HAS_RET] = S.SimpleValue(self.const(False))
            rt = self.declared_return or T.PendingType
            self.env.vars[_RET] = S.SimpleValue(self.emit("prim::Uninitialized", [], [rt]).output)
        carried = [n for n in _assigned_names(body) if self.env.lookup(n) is not None
                   and isinstance(self.env.lookup(n), S.SimpleValue)]
        if returns:
            carried += [_RET, _HAS_RET]
        if trip is None:
            trip = self.const(9223372036854775807)
        init = [self.env.lookup(n).value for n in carried]
        loop = self.emit("prim::Loop", [trip, cond] + init, (), node)
        b = loop.add_block()
        outer_env, outer_block = self.env, self.block
        self.block, self.env = b, Env(b, outer_env)
        saved_index = self.loop_index
        self.loop_index = b.add_param(T.IntType, "i")
        params = []
        for name, v in zip(carried, init):
            t = outer_env.declared_type(name) or v.type
            p = b.add_param(t, None if name[0] == "$" else name)
            params.append(p)
            self.env.vars[name] = S.SimpleValue(p)
        self.env.vars[_COND] = S.SimpleValue(self.const(True))
        bind_target(self.env)
        self.loop_depth += 1
        try:
            self.stmts(_normalize(list(body), []))
        finally:
            self.loop_depth -= 1
        brk = self.env.vars[_COND].value
        if body_cond is not None:
            c = brk.constant()
            if c is True:
                nc = self.to_bool(body_cond(self.env), node)
            else:
                res = []
                self.emit_if(brk, None, None, node,
                             then_fn=lambda: self._bind_tmp(res, self.to_bool(body_cond(self.env), node)),
                             else_fn=lambda: self._bind_tmp(res, self.const(False)))
                nc = self.env.vars.pop("$tmp").value
        else:
            nc = brk
        outs = []
        for name, p in zip(carried, params):
            v = self.value(self.env.lookup(name), node)
            if p.type is T.PendingType and v.type is not T.PendingType:
                _resolve_pending(loop, v.type)
            if not T.is_subtype(v.type, p.type):
                self.error(f"Variable '{name}' previously had type {p.type.annotation} but is "
                           f"now being assigned to a value of type {v.type.annotation}\n",
                           _last_store(body, name) or node)
            outs.append(v)
        b.set_returns([nc] + outs)
        self.block, self.env = outer_block, outer_env
        self.loop_index = saved_index
        for name, p in zip(carried, params):
            o = loop.add_output(p.type, None if name[0] == "$" else name)
            outer_env.vars[name] = S.SimpleValue(o)

    def _bind_tmp(self, res, v):
        self.env.vars["$tmp"] = S.SimpleValue(v)
        return None

    def s_Break(self, s):
        self.env.vars[_COND] = S.SimpleValue(self.const(False))
        return "break"

    def s_Continue(self, s):
        return "continue"

    def s_Raise(self, s):
        exc = s.exc
        name, msg = "Exception", None
        if isinstance(exc, ast.Call):
            name = ast.unparse(exc.func).split(".")[-1]
            if exc.args:
                msg = self.value(self.expr(exc.args[0]), exc.args[0])
        elif exc is not None:
            name = ast.unparse(exc).split(".")[-1]
        if msg is None:
            msg = self.const("")
        elif msg.type is not T.StrType:
            msg = self.emit("aten::str", [msg], [T.StrType], fn=B.script_str).output
        self.emit("prim::RaiseException", [msg, self.const(f"builtins.{name}")], (), s)
        return "raise"

    def s_Assert(self, s):
        cond = self.to_bool(self.value(self.expr(s.test), s.test), s.test)
        refine_then, _ = self.refinements(s.test)

        def fail():
            msg = (self.value(self.expr(s.msg), s.msg) if s.msg is not None else None)
            text = self.const("AssertionError: ") if msg is not None else self.const("AssertionError: ")
            if msg is not None:
                if msg.type is not T.StrType:
                    msg = self.emit("aten::str", [msg], [T.StrType], fn=B.script_str).output
                text = self.emit("aten::add", [text, msg], [T.StrType], fn=operator.add).output
            self.emit("prim::RaiseException", [text, self.const("builtins.AssertionError")], (), s)
            return "raise"

        self.emit_if(cond, None, None, s, then_fn=lambda: None, else_fn=fail)
        self.refine(refine_then)
        return None

    def s_With(self, s):
        if len(s.items) > 1:          # with a, b: -> with a: with b:
            inner = ast.With(items=s.items[1:], body=s.body)
            ast.copy_location(inner, s)
            outer = ast.With(items=s.items[:1], body=[inner])
            ast.copy_location(outer, s)
            return self.s_With(outer)
        if s.items[0].optional_vars is not None:
            self.assign(s.items[0].optional_vars, S.SimpleValue(self.const(None)), s)
        ctx = s.items[0].context_expr
        if not isinstance(ctx, ast.Call):
            self.unsupported(s, "with statements need a call to a context manager")
        fn = self.expr(ctx.func)
        if not isinstance(fn, (S.Builtin, S.PythonConstant)):
            self.unsupported(s, "only torch's context managers (no_grad, enable_grad, "
                                "autocast...) are supported in with statements")
        target = fn.fn if isinstance(fn, S.Builtin) else fn.value
        args = [self.value(self.expr(a), a) for a in ctx.args]
        kw = [self.value(self.expr(k.value), k.value) for k in ctx.keywords]
        n = self.emit("prim::With", args + kw, (), s, fn=target,
                      kwnames=[k.arg for k in ctx.keywords])
        b = n.add_block()
        outer_env, outer_block = self.env, self.block
        self.block, self.env = b, Env(b, outer_env)
        ex = self.stmts(list(s.body))
        inner = self.env
        self.block, self.env = outer_block, outer_env
        # names assigned inside are visible after: make them the With node's outputs
        names = [k for k, v in inner.vars.items() if isinstance(v, S.SimpleValue)]
        for name in names:
            b.add_return(inner.vars[name].value)
            outer_env.vars[name] = S.SimpleValue(n.add_output(inner.vars[name].value.type,
                                                              None if name[0] == "$" else name))
        return ex

    def s_Delete(self, s):
        for t in s.targets:
            if isinstance(t, ast.Subscript):
                obj = self.value(self.expr(t.value), t.value)
                key = self.value(self.expr(t.slice), t.slice)
                self.emit("aten::Delete", [obj, key], (), s, fn=operator.delitem)
            elif isinstance(t, ast.Name):
                self.env.vars.pop(t.id, None)
            else:
                self.unsupported(s)
        return None

    # -- assignment -------------------------------------------------------------------------
    def assign(self, target, rhs, node):
        if isinstance(target, ast.Name):
            declared = self.env.declared_type(target.id)
            if declared is not None and isinstance(rhs, S.SimpleValue):
                v = rhs.value
                if not T.is_subtype(v.type, declared):
                    self.error(f"Variable '{target.id}' is annotated with type "
                               f"{declared.annotation} but is being assigned to a value of type "
                               f"{v.type.annotation}", node)
            self.env.vars[target.id] = rhs
            self.env.defined_at[target.id] = node
            self._one_sided.pop(target.id, None)
            if isinstance(rhs, S.SimpleValue) and rhs.value.debug_name is None:
                rhs.value.debug_name = target.id
            return
        if isinstance(target, (ast.Tuple, ast.List)):
            if any(isinstance(e, ast.Starred) for e in target.elts):
                self.error("cannot statically infer the expected size of a list in this "
                           "context", getattr(node, "value", target))
            items = self.unpack(rhs, len(target.elts), node)
            for t, item in zip(target.elts, items):
                self.assign(t, item, node)
            return
        if isinstance(target, ast.Attribute):
            obj = self.expr(target.value)
            v = self.value(rhs, node)
            if isinstance(obj, S.ModuleValue):
                self.set_module_attr(obj, target.attr, v, node)
                return
            ov = self.value(obj, target.value)
            if isinstance(ov.type, T.ClassType):
                attrs = ov.type.attributes
                if target.attr not in attrs:
                    if self.name != "__init__":
                        self.error(f"Tried to set nonexistent attribute: {target.attr}. Did you "
                                   f"forget to initialize it in __init__()?", node)
                    attrs[target.attr] = v.type
                self.emit("prim::SetAttr", [ov, v], (), node, {"name": target.attr})
                return
            if ov.type is T.TensorType and target.attr in ("grad", "data", "requires_grad"):
                self.emit("prim::SetAttr", [ov, v], (), node, {"name": target.attr})
                return
            self.error(f"Cannot set attribute '{target.attr}' of a value of type {ov.type}", node)
        if isinstance(target, ast.Subscript):
            obj = self.value(self.expr(target.value), target.value)
            v = self.value(rhs, node)
            if obj.type is T.TensorType:
                tmpl, inputs = self.index_template(target.slice)
                self.emit("aten::index_put_", [obj, v] + inputs, (), node, {"_index": tmpl})
                return
            key = self.value(self.expr(target.slice), target.slice)
            if isinstance(obj.type, (T.ListType, T.DictType)):
                et = obj.type.elem if isinstance(obj.type, T.ListType) else obj.type.value
                if not T.is_subtype(v.type, et):
                    if et is T.FloatType and v.type is T.IntType:
                        v = self.coerce(v, et, node, "")
                    else:
                        self.error(f"Arguments for call are not valid.\nThe following variants "
                                   f"are available:\n  aten::_set_item(...)\n  Expected a value "
                                   f"of type '{et.annotation}' for the item but instead found "
                                   f"type '{self.type_name(v)}'.\n", node)
                self.emit("aten::_set_item", [obj, key, v], (), node, fn=operator.setitem)
            else:
                self.error(f"'{obj.type}' object does not support item assignment", node)
            return
        self.unsupported(target)

    def set_module_attr(self, mod, name, v, node):
        ct = mod.class_type
        attrs = ct.attributes
        if name not in attrs or name in (ct.constants or {}):
            self.error(f"Tried to set nonexistent attribute: {name}. Did you forget to "
                       f"initialize it in __init__()?", node)
        if not T.is_subtype(v.type, attrs[name]):
            self.error(f"Wrong type for attribute assignment. Expected {attrs[name].annotation} "
                       f"but got {v.type.annotation}", node)
        self.emit("prim::SetAttr", [mod.value, v], (), node, {"name": name})

    def unpack(self, rhs, n, node):
        if isinstance(rhs, S.TupleSugar):
            if len(rhs.items) != n:
                self.error(f"too many values to unpack: need {n} but found {len(rhs.items)}", node)
            return rhs.items
        if isinstance(rhs, S.ModuleList):
            return [i for i in rhs.items]
        v = self.value(rhs, node)
        t = v.type
        if isinstance(t, T.TupleType):
            if len(t.elems) != n:
                self.error(f"too many values to unpack: need {n} but found {len(t.elems)}"
                           if len(t.elems) > n else
                           f"need {n} values to unpack but found only {len(t.elems)}", node)
            un = self.emit("prim::TupleUnpack", [v], t.elems, node)
            return [S.SimpleValue(o) for o in un.outputs]
        if isinstance(t, T.ListType) or t is T.AnyType:
            et = t.elem if isinstance(t, T.ListType) else T.AnyType
            un = self.emit("prim::ListUnpack", [v], [et] * n, node)
            return [S.SimpleValue(o) for o in un.outputs]
        if t is T.TensorType:
            un = self.emit("prim::ListUnpack", [v], [T.TensorType] * n, node)
            return [S.SimpleValue(o) for o in un.outputs]
        self.error(f"cannot unpack a value of type {t.annotation}", node)

    # -- expressions ---------------------------------------------------------------------
    def expr(self, e, type_hint=None):
        m = getattr(self, "e_" + type(e).__name__, None)
        if m is None:
            self.unsupported(e)
        if type_hint is not None and type(e).__name__ in ("List", "Dict", "ListComp", "DictComp",
                                                           "Constant", "Call"):
            return m(e, type_hint=type_hint)
        return m(e)

    def value(self, sugar, node):
        """The SSA Value of a sugared thing (a constant becomes ``prim::Constant``)."""
        if isinstance(sugar, S.SimpleValue):
            return sugar.value
        if isinstance(sugar, S.PythonConstant):
            return self.const_value(sugar.value, node)
        if isinstance(sugar, S.ModuleValue):
            return sugar.value
        if isinstance(sugar, S.TupleSugar):
            vals = [self.value(i, node) for i in sugar.items]
            return self.emit("prim::TupleConstruct", vals,
                             [T.TupleType(tuple(v.type for v in vals))], node).output
        if isinstance(sugar, S.ScriptFunctionRef):
            n = self.emit("prim::Constant", [], [T.FunctionType(sugar.function)], node,
                          {"name": sugar.function.name})
            n.fn = sugar.function
            return n.output
        if isinstance(sugar, S.ModuleList):
            vals = [self.value(i, node) for i in sugar.items]
            return self.emit("prim::TupleConstruct", vals,
                             [T.TupleType(tuple(v.type for v in vals))], node).output
        desc = sugar.describe() if isinstance(sugar, S.Sugar) else repr(sugar)
        self.error(f"{desc} cannot be used as a value", node)

    def const_value(self, value, node):
        import ember
        if isinstance(value, (tuple, list)) and not isinstance(value, ember.Size) and \
                not hasattr(type(value), "_fields") and any(
                    not isinstance(x, (int, float, bool, str, type(None))) for x in value):
            vals = [self.const_value(x, node) for x in value]
            kind = "prim::TupleConstruct" if isinstance(value, tuple) else "prim::ListConstruct"
            t = T.TupleType(tuple(v.type for v in vals)) if isinstance(value, tuple) \
                else T.ListType(vals[0].type if vals else T.TensorType)
            return self.emit(kind, vals, [t], node).output
        if isinstance(value, ember.Size):
            value = list(value)
        try:
            return self.const(value, node)
        except T.AnnotationError:
            self.error(f"Python value of type '{type(value).__name__}' cannot be used as a "
                       f"value", node)

    def e_Constant(self, e, type_hint=None):
        if e.value is Ellipsis:
            return S.PythonConstant(Ellipsis)
        return S.SimpleValue(self.const(e.value, e))

    def e_Name(self, e):
        v = self.env.lookup(e.id)
        if v is not None and v is not _POISONED:
            return v
        if e.id in self._one_sided and (v is None or v is _POISONED):
            node, msg = self._one_sided[e.id]
            raise CompileError(("\n" if "defined" in msg else "") + msg, self.span(node),
                               self.span(e))
        from ember.jit._script import RecursiveCall
        try:
            r = self.resolver(e.id)
        except RecursiveCall as err:
            self.error(err.msg, e)
        if r is None:
            self.error(f"undefined value {e.id}", e)
        return r

    def e_NamedExpr(self, e):
        v = self.expr(e.value)
        self.assign(e.target, v, e)
        return v

    def e_Attribute(self, e):
        base = self.expr(e.value)
        return self.attribute(base, e.attr, e)

    def attribute(self, base, attr, e):
        if isinstance(base, S.PyModule):
            return self.resolve_module_attr(base.module, attr, e)
        if isinstance(base, S.ModuleValue):
            return self.module_attr(base, attr, e)
        if isinstance(base, S.PythonConstant) and not isinstance(
                base.value, (str, int, float, bool, list, tuple)):
            try:
                return self.resolver.wrap(getattr(base.value, attr), attr)
            except AttributeError:
                self.error(f"object has no attribute {attr}", e)
        if isinstance(base, S.ClassRef):
            try:
                return self.resolver.wrap(getattr(base.cls, attr), attr)
            except AttributeError:
                self.error(f"class has no attribute {attr}", e)
        v = self.value(base, e)
        t = v.type
        if t is T.TensorType:
            if attr in B.TENSOR_ATTRIBUTES:
                return S.SimpleValue(self.emit("prim::TensorAttr" if attr not in ("dtype", "device", "shape") else f"prim::{attr}", [v], [B.TENSOR_ATTRIBUTES[attr]], e,
                                               {"name": attr} if attr not in ("dtype", "device", "shape") else None).output)
            return S.Method(v, attr)
        if isinstance(t, T.ClassType):
            if t.attributes and attr in t.attributes:
                return S.SimpleValue(self.emit("prim::GetAttr", [v], [t.attributes[attr]], e,
                                               {"name": attr}).output)
            return S.Method(v, attr)
        if isinstance(t, T.TupleType) and t.names and attr in t.names:
            k = t.names.index(attr)
            return S.SimpleValue(self.emit("prim::TupleIndex", [v, self.const(k)], [t.elems[k]],
                                           e).output)
        if t is T.ComplexType and attr in ("real", "imag"):
            return S.SimpleValue(self.emit("prim::NumAttr", [v], [T.FloatType], e,
                                           {"name": attr}).output)
        if t is T.DeviceType and attr in ("type", "index"):
            return S.SimpleValue(self.emit("prim::NumAttr", [v], [T.StrType if attr == "type" else
                                                                  T.OptionalType(T.IntType)], e,
                                           {"name": attr}).output)
        return S.Method(v, attr)

    def resolve_module_attr(self, module, attr, e):
        obj = getattr(module, attr, _MISSING)
        if obj is _MISSING:
            self.error(f"Unknown builtin op: {module.__name__}.{attr}", e)
        return self.resolver.wrap(obj, attr)

    def module_attr(self, mod, attr, e):
        """``self.<attr>`` on a scripted module."""
        ct = mod.class_type
        if ct.constants and attr in ct.constants:
            return S.PythonConstant(ct.constants[attr])
        sub = self.resolver.submodule(mod, attr)
        if sub is not None:
            if isinstance(sub, S.ModuleList):
                return sub
            v = self.emit("prim::GetAttr", [mod.value], [sub.class_type], e, {"name": attr},
                          names=[attr]).output
            return S.ModuleValue(v, sub.module, sub.class_type)
        if ct.attributes and attr in ct.attributes:
            return S.SimpleValue(self.emit("prim::GetAttr", [mod.value], [ct.attributes[attr]],
                                           e, {"name": attr}, names=[attr]).output)
        fns = (ct.constants or {}).get("$functions") or {}
        if attr in fns:                     # a function stored on the module
            return self.resolver.wrap(fns[attr], attr)
        meth = self.resolver.module_method(mod, attr)
        if isinstance(meth, S.PropertyGet):
            return S.SimpleValue(self.resolver.call_module(self, mod, f"__{attr}_getter", [], {},
                                                           e))
        if meth is not None:
            return meth
        name = getattr(mod.module, "original_name", type(mod.module).__name__)
        failed = (ct.constants or {}).get("$failed", {}).get(attr)
        hint = "" if failed is None else (
            f"(This attribute exists on the Python module, but we failed to convert Python "
            f"type: '{failed}' to a TorchScript type. Only tensors and (possibly nested) "
            f"tuples of tensors, lists, or dicts are supported as inputs or outputs of traced "
            f"functions, but instead got value of type {failed}.. Its type was inferred; try "
            f"adding a type annotation for the attribute.)")
        self.error(f"Module '{name}' has no attribute '{attr}' {hint}", e)

    def e_Tuple(self, e):
        items = [self.expr(x) for x in e.elts]
        if any(isinstance(i, (S.ModuleValue, S.ModuleList, S.PyModule, S.Builtin)) for i in items):
            return S.TupleSugar(items)
        vals = [self.value(i, x) for i, x in zip(items, e.elts)]
        return S.SimpleValue(self.emit("prim::TupleConstruct", vals,
                                       [T.TupleType(tuple(v.type for v in vals))], e).output)

    def e_List(self, e, type_hint=None):
        vals = [self.value(self.expr(x), x) for x in e.elts]
        if type_hint is not None and isinstance(T.unwrap_optional(type_hint), T.ListType):
            t = T.unwrap_optional(type_hint)
        elif not vals:
            t = T.ListType(T.TensorType)
        else:
            et = vals[0].type
            for v in vals[1:]:
                u = T.unify(et, v.type)
                if u is None:
                    if B.is_number(et) and B.is_number(v.type):
                        u = T.NumberType
                    else:
                        self.error(f"Lists must contain only a single type, first element had "
                                   f"type {et.annotation} and element {vals.index(v)} had type "
                                   f"{v.type.annotation}", e)
                et = u
            t = T.ListType(et)
        return S.SimpleValue(self.emit("prim::ListConstruct", vals, [t], e).output)

    def e_Dict(self, e, type_hint=None):
        if any(k is None for k in e.keys):
            raise NotSupportedError("Dict expansion (e.g. `{**dict}`) is not supported",
                                    self.span(e, 1))
        keys = [self.value(self.expr(k), k) for k in e.keys]
        vals = [self.value(self.expr(v), v) for v in e.values]
        if type_hint is not None and isinstance(T.unwrap_optional(type_hint), T.DictType):
            t = T.unwrap_optional(type_hint)
        elif not keys:
            t = T.DictType(T.StrType, T.TensorType)
        else:
            vt = vals[0].type
            for v in vals[1:]:
                vt = T.unify(vt, v.type) or self.error("Dict values must contain only a single "
                                                       "type", e)
            t = T.DictType(keys[0].type, vt)
        inputs = [x for kv in zip(keys, vals) for x in kv]
        return S.SimpleValue(self.emit("prim::DictConstruct", inputs, [t], e).output)

    def e_ListComp(self, e, type_hint=None):
        return self.comprehension(e, type_hint, is_dict=False)

    def e_GeneratorExp(self, e, type_hint=None):
        return self.comprehension(e, type_hint, is_dict=False)      # torch: a list

    def e_DictComp(self, e, type_hint=None):
        return self.comprehension(e, type_hint, is_dict=True)

    def comprehension(self, e, type_hint, is_dict):
        if len(e.generators) != 1 or e.generators[0].is_async:
            self.unsupported(e, "Comprehensions with several for clauses aren't supported")
        gen = e.generators[0]
        hint = T.unwrap_optional(type_hint) if type_hint is not None else None
        t = hint or (T.DictType(T.StrType, T.TensorType) if is_dict else T.ListType(T.TensorType))
        kind = "prim::DictConstruct" if is_dict else "prim::ListConstruct"
        it = self.expr(gen.iter)
        if not gen.ifs and not isinstance(it, S.SimpleValue):
            items = self.unrolled_items(it, gen.iter)     # module containers, constant tuples
            if items is not None:
                return self.unrolled_comprehension(e, gen, items, is_dict, hint)
        result = self.emit(kind, [], [t], e).output
        trip, bind = self.iteration(it, gen.iter)
        outer_env = self.env
        loop = self.emit("prim::Loop", [trip, self.const(True)], (), e)
        b = loop.add_block()
        outer_block = self.block
        self.block, self.env = b, Env(b, outer_env)
        saved_index = self.loop_index
        self.loop_index = b.add_param(T.IntType, "i")
        self.assign(gen.target, bind(), e)
        seen = {}

        def body():
            if is_dict:
                k = self.value(self.expr(e.key), e.key)
                v = self.value(self.expr(e.value), e.value)
                seen["t"] = T.DictType(k.type, v.type)
                self.emit("aten::_set_item", [result, k, v], (), e, fn=operator.setitem)
            else:
                v = self.value(self.expr(e.elt), e.elt)
                seen["t"] = T.ListType(v.type)
                self.emit("aten::append", [result, v], (), e, fn=list.append)
            return None

        if gen.ifs:
            cond = None
            for c in gen.ifs:
                cv = self.to_bool(self.value(self.expr(c), c), c)
                cond = cv if cond is None else self.emit("aten::__and__", [cond, cv], [T.BoolType],
                                                          fn=operator.and_).output
            self.emit_if(cond, None, None, e, then_fn=body, else_fn=lambda: None)
        else:
            body()
        b.set_returns([self.const(True)])
        self.block, self.env = outer_block, outer_env
        self.loop_index = saved_index
        if hint is None and "t" in seen:
            result.set_type(seen["t"])
        return S.SimpleValue(result)

    def unrolled_comprehension(self, e, gen, items, is_dict, hint):
        """A comprehension over a compile-time sequence: one element per item."""
        outer_env = self.env
        self.env = Env(self.block, outer_env)
        keys, vals = [], []
        try:
            for item in items:
                self.assign(gen.target, item, e)
                if is_dict:
                    keys.append(self.value(self.expr(e.key), e.key))
                vals.append(self.value(self.expr(e.value if is_dict else e.elt),
                                       e.value if is_dict else e.elt))
        finally:
            self.env = outer_env
        if hint is not None:
            t = hint
        elif is_dict:
            t = T.DictType(keys[0].type, vals[0].type) if keys else \
                T.DictType(T.StrType, T.TensorType)
        else:
            et = vals[0].type if vals else T.TensorType
            for v in vals[1:]:
                et = T.unify(et, v.type) or self.error(
                    "Lists must contain only a single type", e)
            t = T.ListType(et)
        if is_dict:
            return S.SimpleValue(self.emit("prim::DictConstruct",
                                           [x for kv in zip(keys, vals) for x in kv], [t],
                                           e).output)
        return S.SimpleValue(self.emit("prim::ListConstruct", vals, [t], e).output)

    def e_JoinedStr(self, e):
        fmt, args = [], []
        for part in e.values:
            if isinstance(part, ast.Constant):
                fmt.append(str(part.value).replace("{", "{{").replace("}", "}}"))
            elif isinstance(part, ast.FormattedValue):
                spec = ""
                if part.format_spec is not None:
                    spec = ":" + "".join(str(p.value) for p in part.format_spec.values
                                         if isinstance(p, ast.Constant))
                conv = {-1: "", 115: "!s", 114: "!r", 97: "!a"}[part.conversion]
                fmt.append("{" + conv + spec + "}")
                args.append(self.value(self.expr(part.value), part.value))
        return S.SimpleValue(self.emit("aten::format", [self.const("".join(fmt))] + args,
                                       [T.StrType], e, fn=B.script_format).output)

    def e_IfExp(self, e):
        cond = self.value(self.expr(e.test), e.test)
        c = cond.constant()
        rt, rf = self.refinements(e.test)
        if type(c) is bool:
            return self.expr(e.body if c else e.orelse)
        cond = self.to_bool(cond, e.test)

        def branch(x, refine):
            def run():
                self.refine(refine)
                self.env.vars["$tmp"] = S.SimpleValue(self.value(self.expr(x), x))
            return run
        self.emit_if(cond, None, None, e, then_fn=branch(e.body, rt), else_fn=branch(e.orelse, rf))
        return self.env.vars.pop("$tmp")

    def e_BoolOp(self, e):
        # short-circuit: a and b -> if a: b else: False
        is_and = isinstance(e.op, ast.And)
        acc = self.to_bool(self.value(self.expr(e.values[0]), e.values[0]), e.values[0])
        for rhs in e.values[1:]:
            c = acc.constant()
            if type(c) is bool:
                if c == is_and:
                    acc = self.to_bool(self.value(self.expr(rhs), rhs), rhs)
                continue
            refine = self.refinements(e.values[0])[0 if is_and else 1]

            def evaluate(rhs=rhs, refine=refine):
                self.refine(refine)
                self.env.vars["$tmp"] = S.SimpleValue(self.to_bool(self.value(self.expr(rhs), rhs), rhs))

            def short(val=not is_and):
                self.env.vars["$tmp"] = S.SimpleValue(self.const(val))
            if is_and:
                self.emit_if(acc, None, None, e, then_fn=evaluate, else_fn=short)
            else:
                self.emit_if(acc, None, None, e, then_fn=short, else_fn=evaluate)
            acc = self.env.vars.pop("$tmp").value
        return S.SimpleValue(acc)

    def e_UnaryOp(self, e):
        v = self.value(self.expr(e.operand), e.operand)
        name, fn, sym = B.UNARY_OPERATORS[type(e.op).__name__]
        if isinstance(e.op, ast.Not):
            c = v.constant()
            if type(c) is bool:
                return S.SimpleValue(self.const(not c))
            v = self.to_bool(v, e.operand)
            return S.SimpleValue(self.emit("aten::__not__", [v], [T.BoolType], e, fn=fn,
                                           attrs={"_py": sym}).output)
        if v.type is T.TensorType:
            return S.SimpleValue(self.call_tensor_method(v, {"neg": "neg", "pos": "positive",
                                                             "__invert__": "bitwise_not"}[name],
                                                         [], {}, e))
        c = v.constant()
        if c is not _NOT and isinstance(c, (int, float)) and not isinstance(c, bool):
            return S.SimpleValue(self.const(fn(c)))
        t = v.type if v.type is not T.BoolType else T.IntType
        return S.SimpleValue(self.emit(f"aten::{name}", [v], [t], e, fn=fn,
                                       attrs={"_py": sym}).output)

    def e_BinOp(self, e):
        a = self.value(self.expr(e.left), e.left)
        b = self.value(self.expr(e.right), e.right)
        return S.SimpleValue(self.binary(type(e.op).__name__, a, b, e))

    def binary(self, opname, a, b, e):
        name, fn, sym = B.BINARY_OPERATORS[opname]
        ta, tb = a.type, b.type
        if ta is T.TensorType or tb is T.TensorType:
            if ta is not T.TensorType:      # 2 - x -> rsub / reflected dunder
                return self.emit(f"aten::{name}", [a, b], [T.TensorType], e, fn=fn,
                                 attrs={"_py": sym}).output
            mname = {"floordiv": "floor_divide", "__and__": "bitwise_and", "__or__": "bitwise_or",
                     "__xor__": "bitwise_xor", "__lshift__": "bitwise_left_shift",
                     "__rshift__": "bitwise_right_shift"}.get(name, name)
            if opname == "Mod":
                mname = "remainder"
            if not (tb is T.TensorType or B.is_number(tb) or tb is T.AnyType):
                self.error(f"Arguments for call are not valid: unsupported operand type(s) for "
                           f"{sym}: 'Tensor' and '{tb.annotation}'", e)
            return self.call_tensor_method(a, mname, [b], {}, e)
        rt = B.number_result(name, ta, tb)
        if rt is None:
            if ta == tb and ta is T.StrType and name in ("add", "mul"):
                rt = T.StrType
            elif isinstance(ta, T.ListType) and ta == tb and name == "add":
                rt = ta
            elif isinstance(ta, T.ListType) and tb is T.IntType and name == "mul":
                rt = ta
            elif isinstance(ta, T.TupleType) and isinstance(tb, T.TupleType) and name == "add":
                rt = T.TupleType(ta.elems + tb.elems)
            elif T.AnyType in (ta, tb):
                rt = T.AnyType
            else:
                self.error(f"Arguments for call are not valid.\nThe following variants are "
                           f"available:\n  aten::{name}(...)\n  Expected a value of type "
                           f"'{ta.annotation}' for argument 'b' but instead found type "
                           f"'{tb.annotation}'", e)
        attrs = {"_py": sym}
        if name == "pow" and rt is T.FloatType:
            fn, attrs = B.float_pow, {}
        ca, cb = a.constant(), b.constant()
        if ca is not _NOT and cb is not _NOT and isinstance(ca, (int, float, str)) \
                and isinstance(cb, (int, float, str)):
            try:
                return self.const(fn(ca, cb))
            except Exception:
                pass
        return self.emit(f"aten::{name}", [a, b], [rt], e, fn=fn, attrs=attrs).output

    def e_Compare(self, e):
        left = self.value(self.expr(e.left), e.left)
        result = None
        for op, right_node in zip(e.ops, e.comparators):
            right = self.value(self.expr(right_node), right_node)
            r = self.compare(type(op).__name__, left, right, e)
            result = r if result is None else self.emit(
                "aten::__and__", [result, r], [T.BoolType], e, fn=operator.and_).output
            left = right
        return S.SimpleValue(result)

    def compare(self, opname, a, b, e):
        name, fn, sym = B.COMPARE_OPERATORS[opname]
        ta, tb = a.type, b.type
        if opname in ("Is", "IsNot"):
            # statically known: `x is None` where x cannot be None
            none_a, none_b = ta is T.NoneType, tb is T.NoneType
            may_a = none_a or isinstance(ta, T.OptionalType) or ta is T.AnyType or \
                isinstance(ta, T.UnionType) and T.NoneType in ta.elems
            may_b = none_b or isinstance(tb, T.OptionalType) or tb is T.AnyType or \
                isinstance(tb, T.UnionType) and T.NoneType in tb.elems
            if (none_a and not may_b) or (none_b and not may_a):
                return self.const(opname == "IsNot")
            if none_a and none_b:
                return self.const(opname == "Is")
            return self.emit(f"aten::{name}", [a, b], [T.BoolType], e, fn=fn,
                             attrs={"_py": sym}).output
        if opname in ("In", "NotIn"):
            if isinstance(tb, T.ClassType) and not tb.is_module:
                r = self.resolver.call_method(self, b, "__contains__", [a], {}, e)
            else:
                r = self.emit("aten::__contains__", [b, a], [T.BoolType], e,
                              fn=operator.contains).output
            if opname == "NotIn":
                r = self.emit("aten::__not__", [r], [T.BoolType], e, fn=operator.not_,
                              attrs={"_py": "not "}).output
            return r
        if ta is T.TensorType or tb is T.TensorType:
            if ta is not T.TensorType:
                return self.emit(f"aten::{name}", [a, b], [T.TensorType], e, fn=fn,
                                 attrs={"_py": sym}).output
            return self.call_tensor_method(a, name, [b], {}, e)
        ca, cb = a.constant(), b.constant()
        if ca is not _NOT and cb is not _NOT and isinstance(ca, (int, float, str, type(None))) \
                and isinstance(cb, (int, float, str, type(None))):
            return self.const(bool(fn(ca, cb)))
        return self.emit(f"aten::{name}", [a, b], [T.BoolType], e, fn=fn,
                         attrs={"_py": sym}).output

    def e_Subscript(self, e):
        base = self.expr(e.value)
        if isinstance(base, S.ModuleValue) and self._is_container(base):
            items = self.resolver.container_items(self, base, e)
            if isinstance(e.slice, ast.Constant) and isinstance(e.slice.value, str):
                keys = list(base.module._modules)
                if e.slice.value not in keys:
                    self.error(f"Key Error, {e.slice.value}", e)
                return items[keys.index(e.slice.value)]
            k = self.constant_int(e.slice)
            if k is None:
                self.error("Expected an integer constant index into a module list", e)
            if not -len(items) <= k < len(items):
                self.error(f"index {k} is out of range", e)
            return items[k]
        if isinstance(base, (S.ModuleList, S.TupleSugar)):
            k = self.constant_int(e.slice)
            if k is None:
                if isinstance(e.slice, ast.Constant) and isinstance(e.slice.value, str) \
                        and isinstance(base, S.ModuleList) and base.keys:
                    return base.items[base.keys.index(e.slice.value)]
                self.error("Expected an integer constant index into a module list or tuple", e)
            return base.items[k]
        if isinstance(base, S.PythonConstant) and isinstance(base.value, (tuple, list)):
            k = self.constant_int(e.slice)
            if k is not None:
                return self.resolver.wrap(base.value[k], None)
        v = self.value(base, e.value)
        t = v.type
        if t is T.TensorType:
            tmpl, inputs = self.index_template(e.slice)
            kind = _index_kind(tmpl)
            return S.SimpleValue(self.emit(kind, [v] + inputs, [T.TensorType], e,
                                           {"_index": tmpl}).output)
        if isinstance(t, T.TupleType):
            if isinstance(e.slice, ast.Slice):
                lo, hi, st = (self.constant_int(x) if x is not None else None
                              for x in (e.slice.lower, e.slice.upper, e.slice.step))
                idx = range(len(t.elems))[slice(lo, hi, st)]
                vals = [self.emit("prim::TupleIndex", [v, self.const(i)], [t.elems[i]], e).output
                        for i in idx]
                return S.SimpleValue(self.emit("prim::TupleConstruct", vals,
                                               [T.TupleType(tuple(x.type for x in vals))], e).output)
            k = self.constant_int(e.slice)
            if k is None:
                self.error("tuple indices must be integer constants", e)
            if not -len(t.elems) <= k < len(t.elems):
                self.error(f"Tuple index out of range. Tuple is length {len(t.elems)} and index "
                           f"is {k}", e)
            return S.SimpleValue(self.emit("prim::TupleIndex", [v, self.const(k)],
                                           [t.elems[k]], e).output)
        if isinstance(t, T.ClassType) and not t.is_module:      # obj[k] -> __getitem__
            key = self.value(self.expr(e.slice), e.slice)
            return S.SimpleValue(self.resolver.call_method(self, v, "__getitem__", [key], {}, e))
        if isinstance(e.slice, ast.Slice):
            parts = [self.value(self.expr(x), x) if x is not None else self.const(None)
                     for x in (e.slice.lower, e.slice.upper, e.slice.step)]
            if isinstance(t, T.ListType) or t is T.StrType:
                return S.SimpleValue(self.emit("aten::slice", [v] + parts, [t], e,
                                               fn=_py_slice).output)
        key = self.value(self.expr(e.slice), e.slice)
        if isinstance(t, T.ListType):
            et = t.elem
        elif isinstance(t, T.DictType):
            et = t.value
        elif t is T.StrType:
            et = T.StrType
        elif t is T.AnyType:
            et = T.AnyType
        else:
            self.error(f"'{t.annotation}' object is not subscriptable", e)
        kind = "aten::__getitem__"
        return S.SimpleValue(self.emit(kind, [v, key], [et], e, fn=operator.getitem).output)

    def constant_int(self, node):
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            return node.value
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and \
                isinstance(node.operand, ast.Constant):
            return -node.operand.value
        try:
            v = self.expr(node)
        except CompileError:
            return None
        if isinstance(v, S.PythonConstant) and isinstance(v.value, int):
            return v.value
        if isinstance(v, S.SimpleValue):
            c = v.value.constant()
            if isinstance(c, int):
                return c
        return None

    def index_template(self, sl):
        """A Tensor index as a template the code generator writes out (``x[a, 1:b, None]``):
        ``("slice", lo, hi, step)`` / ``("value", k)`` / ``None`` / ``Ellipsis``, with ``k``
        positions into the returned input list."""
        inputs = []

        def one(node):
            if isinstance(node, ast.Slice):
                parts = []
                for x in (node.lower, node.upper, node.step):
                    if x is None:
                        parts.append(None)
                    else:
                        inputs.append(self.value(self.expr(x), x))
                        parts.append(len(inputs))
                return ("slice",) + tuple(parts)
            if isinstance(node, ast.Constant) and node.value is None:
                return None
            if isinstance(node, ast.Constant) and node.value is Ellipsis:
                return Ellipsis
            item = self.expr(node)
            if isinstance(item, S.PythonConstant) and item.value is Ellipsis:
                return Ellipsis
            v = self.value(item, node)
            if isinstance(v.type, T.TupleType) and not isinstance(node, ast.Tuple):
                inputs.append(v)
                return ("splat", len(inputs))
            inputs.append(v)
            return ("value", len(inputs))

        if isinstance(sl, ast.Tuple):
            tmpl = tuple(one(x) for x in sl.elts)
        else:
            tmpl = one(sl)
        return tmpl, inputs

    # -- conditions ----------------------------------------------------------------------
    def to_bool(self, v, node):
        t = v.type
        if t is T.BoolType:
            return v
        if t is T.TensorType:
            return self.emit("aten::Bool", [v], [T.BoolType], node, fn=bool).output
        if t in (T.IntType, T.FloatType, T.NumberType, T.AnyType) or isinstance(
                t, (T.ListType, T.DictType, T.OptionalType)) or t is T.StrType:
            return self.emit("aten::Bool", [v], [T.BoolType], node, fn=bool).output
        if t is T.NoneType:
            return self.const(False)
        self.error(f"Could not cast value of type {t.annotation} to bool", node)

    def refinements(self, test):
        """Type refinements a condition implies: ({name: type if true}, {name: if false})."""
        rt, rf = {}, {}
        if isinstance(test, ast.Compare) and len(test.ops) == 1:
            left, right, op = test.left, test.comparators[0], test.ops[0]
            if isinstance(op, (ast.Is, ast.IsNot)):
                name_node = left if isinstance(right, ast.Constant) and right.value is None else \
                    right if isinstance(left, ast.Constant) and left.value is None else None
                if isinstance(name_node, ast.Name):
                    cur = self.env.lookup(name_node.id)
                    if isinstance(cur, S.SimpleValue) and isinstance(cur.value.type, T.OptionalType):
                        target = rt if isinstance(op, ast.IsNot) else rf
                        target[name_node.id] = cur.value.type.elem
                        other = rf if isinstance(op, ast.IsNot) else rt
                        other[name_node.id] = T.NoneType
                    elif isinstance(cur, S.SimpleValue) and isinstance(cur.value.type, T.UnionType) \
                            and T.NoneType in cur.value.type.elems:
                        target = rt if isinstance(op, ast.IsNot) else rf
                        target[name_node.id] = cur.value.type.without(T.NoneType)
                        other = rf if isinstance(op, ast.IsNot) else rt
                        other[name_node.id] = T.NoneType
        elif isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
            for v in test.values:
                rt.update(self.refinements(v)[0])
        elif isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or):
            for v in test.values:
                rf.update(self.refinements(v)[1])
        elif isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            a, b = self.refinements(test.operand)
            rt, rf = b, a
        elif isinstance(test, ast.Call) and isinstance(test.func, (ast.Name, ast.Attribute)) \
                and ast.unparse(test.func).split(".")[-1] == "isinstance" and len(test.args) == 2 \
                and isinstance(test.args[0], ast.Name):
            cur = self.env.lookup(test.args[0].id)
            if isinstance(cur, S.SimpleValue):
                try:
                    t = self.isinstance_types(test.args[1])
                except Exception:
                    t = None
                ct = cur.value.type
                if t is not None and len(t) == 1 and (ct is T.AnyType or isinstance(
                        ct, T.OptionalType)):
                    rt[test.args[0].id] = t[0]
                elif t is not None and isinstance(ct, T.UnionType):
                    hit = T.make_union([x for x in ct.elems if any(T.is_subtype(x, u) for u in t)])
                    rt[test.args[0].id] = hit
                    rest = ct
                    for u in t:
                        rest = rest.without(u) if isinstance(rest, T.UnionType) else rest
                    rf[test.args[0].id] = rest
        return rt, rf

    # -- calls ---------------------------------------------------------------------------
    def e_Call(self, e, type_hint=None):
        for kw in e.keywords:
            if kw.arg is None:
                raise NotSupportedError("keyword-arg expansion is not supported",
                                        self.span(kw.value))
        fn = self.expr(e.func)
        return self.call(fn, e.args, {k.arg: k.value for k in e.keywords}, e, type_hint)

    def call(self, fn, arg_nodes, kw_nodes, e, type_hint=None):
        from ember.jit import _calls
        return _calls.call(self, fn, arg_nodes, kw_nodes, e, type_hint)

    def call_tensor_method(self, v, name, args, kwargs, e):
        from ember.jit import _calls
        return _calls.tensor_method(self, v, name, args, kwargs, e)

    def iteration(self, it, node):
        from ember.jit import _calls
        return _calls.iteration(self, it, node)

    def _is_container(self, mod):
        from ember.jit._modules import is_container
        return is_container(mod.module)

    def unrolled_items(self, it, node):
        if isinstance(it, S.ModuleValue) and self._is_container(it):
            from ember import nn
            kind = "keys" if issubclass(it.module.original_class, nn.ModuleDict) else "values"
            return self.resolver.container_items(self, it, node, kind)
        if isinstance(it, S.ModuleList):
            return list(it.items)
        if isinstance(it, S.TupleSugar):
            return list(it.items)
        if isinstance(it, S.PythonConstant) and isinstance(it.value, (tuple, list)):
            return [self.resolver.wrap(x, None) for x in it.value]
        if isinstance(it, S.SimpleValue) and isinstance(it.value.type, T.TupleType) \
                and not it.value.type.names:
            t = it.value.type
            return [S.SimpleValue(self.emit("prim::TupleIndex", [it.value, self.const(k)],
                                            [et], node).output) for k, et in enumerate(t.elems)]
        from ember.jit import _calls
        return _calls.unrolled_call_items(self, it, node)

    def annotation(self, node):
        from ember.jit import _calls
        return _calls.annotation(self, node)

    def isinstance_types(self, node):
        from ember.jit import _calls
        return _calls.isinstance_types(self, node)

    def coerce(self, v, t, node, msg):
        """Check ``v`` fits type ``t``; an int/float literal list or None is retyped."""
        if T.is_subtype(v.type, t):
            return v
        tt = T.unwrap_optional(t)
        if v.node is not None and v.node.kind in ("prim::ListConstruct", "prim::DictConstruct") \
                and not v.node.inputs and isinstance(tt, (T.ListType, T.DictType)):
            v.set_type(tt)
            return v
        if t is T.FloatType and v.type is T.IntType:
            return self.emit("aten::Float", [v], [T.FloatType], node, fn=float).output
        if v.type is T.TensorType and tt in (T.IntType, T.FloatType):
            return self.implicit_scalar(v, tt, node)
        if v.type is T.AnyType:
            return self.cast(v, t)
        if isinstance(tt, T.ListType) and isinstance(v.type, T.TupleType) and all(
                T.is_subtype(x, tt.elem) for x in v.type.elems):
            return self.tuple_to_list(v, tt, node)
        if isinstance(tt, T.ListType) and isinstance(v.type, T.ListType) and \
                v.node is not None and v.node.kind == "prim::ListConstruct" and all(
                    T.is_subtype(i.type, tt.elem) for i in v.node.inputs):
            v.set_type(tt)
            return v
        self.error(f"{msg} {self.type_name(v)}", node)

    def tuple_to_list(self, v, t, node):
        """torch turns a tuple into a list where a list is expected (``self.stride``)."""
        c = v.constant()
        if isinstance(c, tuple):
            return self.const(list(c)).set_type(t)
        items = [self.emit("prim::TupleIndex", [v, self.const(k)], [et], node).output
                 for k, et in enumerate(v.type.elems)]
        return self.emit("prim::ListConstruct", items, [t], node).output

    def implicit_scalar(self, v, t, node):
        """torch converts a one-element Tensor to an int/float where one is expected."""
        kind, fn = ("aten::IntImplicit", _int_implicit) if t is T.IntType else \
            ("aten::FloatImplicit", _float_implicit)
        return self.emit(kind, [v], [t], node, fn=fn).output


def _int_implicit(x):
    if x.dim() != 0:
        raise RuntimeError("Cannot input a tensor of dimension other than 0 as a scalar "
                           "argument")
    if x.is_floating_point():
        raise RuntimeError("Cannot input a tensor of type Float as an integral argument")
    return int(x)


def _float_implicit(x):
    if x.dim() != 0:
        raise RuntimeError("Cannot input a tensor of dimension other than 0 as a scalar "
                           "argument")
    return float(x)


def _last_store(stmts, name):
    found = None
    for st in stmts:
        for n in ast.walk(st):
            if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store):
                found = n
    return found


def _resolve_pending(loop, t):
    """The type of a value returned from inside a loop is known once its body is compiled:
    give it to the placeholder values (the initial value, the body's parameter, the If
    outputs in between)."""
    init = loop.inputs[-2]
    if init.type is T.PendingType:
        init.set_type(t)

    def walk(block):
        for v in block.params:
            if v.type is T.PendingType:
                v.set_type(t)
        for n in block.nodes:
            for o in n.outputs:
                if o.type is T.PendingType:
                    o.set_type(t)
            for b in n.blocks:
                walk(b)
    for b in loop.blocks:
        walk(b)


def _as_load(node):
    n = ast.parse(ast.unparse(node), mode="eval").body
    ast.copy_location(n, node)
    for child in ast.walk(n):
        child.lineno, child.col_offset = node.lineno, node.col_offset
        child.end_lineno = getattr(node, "end_lineno", node.lineno)
        child.end_col_offset = getattr(node, "end_col_offset", None)
    return n


def _format(fmt, *args):
    return fmt.format(*args)


def _py_slice(seq, lo, hi, step):
    return seq[lo:hi:step]


def _index_kind(tmpl):
    if isinstance(tmpl, tuple) and tmpl and tmpl[0] == "slice":
        return "aten::slice"
    if isinstance(tmpl, tuple) and tmpl and tmpl[0] == "value":
        return "aten::select"
    return "aten::index"


_MISSING = object()
_POISONED = S.Sugar()


class Closure(S.Sugar):
    """A nested parameterless ``def`` (see ``Compiler.s_FunctionDef``): usable only as
    ``fork(name)``, which compiles its body as a function of the enclosing values it reads
    (``captured``: name -> Sugar at the def) and forks that with those values as inputs."""

    def __init__(self, fd, captured):
        self.fd, self.captured = fd, captured

    def describe(self):
        return f"function '{self.fd.name}'"

    def fork(self, c, e):
        from ember.jit._script import Function
        sub = Compiler(self.fd, c.resolver, c.src, name=self.fd.name, captures=self.captured)
        graph = sub.compile()
        fn = Function(self.fd.name, f"{c.name}.{self.fd.name}", graph, sub.arg_schema,
                      sub.return_type).finish()
        fn.closure = True
        inputs = [s.value for s in self.captured.values() if _runtime_value(s)]
        n = c.emit("prim::fork", inputs, [T.FutureType(fn.return_type)], e,
                   {"name": self.fd.name})
        n.fn = fn
        return n.output


def _runtime_value(sugar):
    return isinstance(sugar, (S.SimpleValue, S.ModuleValue))


def _capture_input(c, name, sugar):
    """A closure's view of an enclosing name: run-time values become inputs of its graph
    (modules stay modules), compile-time ones are shared as they are."""
    if not _runtime_value(sugar):
        return sugar
    t = sugar.value.type
    v = c.graph.add_input(t, name)
    c.arg_names.append(name)
    c.arg_schema.append((name, t, False, None, False))
    if isinstance(sugar, S.ModuleValue):
        return S.ModuleValue(v, sugar.module, sugar.class_type)
    return S.SimpleValue(v)      # a name whose branches gave it types that do not unify
_NOT = __import__("ember.jit._ir", fromlist=["NOT_CONSTANT"]).NOT_CONSTANT
