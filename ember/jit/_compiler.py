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
from ember.jit._env import POISONED as _POISONED, Env
from ember.jit._expressions import Expressions
from ember.jit._ir import NOT_CONSTANT as _NOT, Graph, Node, SourceRange
from ember.jit.frontend import CompileError, NotSupportedError, Span, UnsupportedNodeError

_RET, _COND, _HAS_RET = "$ret", "$cond", "$has_ret"


# --------------------------------------------------------------------------- environment

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


class Compiler(Expressions):
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
        self.loop_index = b.add_param(T.IntType, None)   # named by a target it binds
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
            if isinstance(rhs, S.SimpleValue) and rhs.value.debug_name is None \
                    and target.id != "_":      # torch prints a ``_`` target as a temporary
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
