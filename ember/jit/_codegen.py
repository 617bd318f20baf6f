"""Code generation: a Graph -> the source of one Python function, compiled once.

Op nodes become ``_dispatch(op, (args...))``: the dispatcher with schema-ordered
arguments, so modes (profiler, autocast, vmap), autograd and the fast path all apply, but
no front parses arguments. Python operators on numbers are written inline (``a + b``);
``prim::If`` becomes ``if``, ``prim::Loop`` a ``for``/``while``; constants are inlined as
literals or bound as globals of the generated code.

``LINE_MAP[filename][line]`` gives the SourceRange a generated line came from, for the
TorchScript traceback of run-time errors (``ember/jit/_errors.py``).
"""
from __future__ import annotations

import itertools
import keyword
import math

from ember.jit import _types as T

LINE_MAP: dict = {}
_file_ids = itertools.count()
_MAX_TRIP = 9223372036854775807


class ScriptRaise(Exception):
    """A ``raise`` in scripted code, before the boundary turns it into ``jit.Error``."""
    def __init__(self, msg, cls_name):
        super().__init__(msg)
        self.msg, self.cls_name = msg, cls_name


def _raise(msg, cls_name):
    raise ScriptRaise(msg, cls_name)


def _literal(v):
    if v is None or isinstance(v, (bool, int, str)):
        return repr(v)
    if isinstance(v, float) and math.isfinite(v):
        return repr(v)
    return None


class _Gen:
    def __init__(self, filename):
        self.filename = filename
        self.lines = []
        self.linemap = {}
        self.env = {"_raise": _raise}
        self.names = {}
        self.used = set()
        self.stash_ids = {}

    # -- names ---------------------------------------------------------------------------
    def new_name(self, hint):
        base = "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in (hint or "v"))
        if not base or base[0].isdigit() or keyword.iskeyword(base) or base.startswith("_"):
            base = "v_" + base
        n, k = base, 0
        while n in self.used:
            k += 1
            n = f"{base}_{k}"
        self.used.add(n)
        return n

    def name(self, v):
        n = self.names.get(v.id)
        if n is None:
            c = v.constant()
            if c is not _NOT:
                return self.const_expr(c)
            n = self.names[v.id] = self.new_name(v.debug_name)
        return n

    def stash(self, obj, hint="k"):
        key = id(obj)
        n = self.stash_ids.get(key)
        if n is None:
            n = f"_{hint}{len(self.stash_ids)}"
            self.stash_ids[key] = n
            self.env[n] = obj
        return n

    def const_expr(self, c):
        lit = _literal(c)
        if lit is not None:
            return lit
        if isinstance(c, (list, tuple)) and all(_literal(x) is not None for x in c):
            inner = ", ".join(_literal(x) for x in c)
            return f"[{inner}]" if isinstance(c, list) else f"({inner}{',' if len(c) == 1 else ''})"
        return self.stash(c, "c")

    def emit(self, depth, text, node=None):
        self.lines.append("    " * depth + text)
        if node is not None and node.source is not None:
            self.linemap[len(self.lines)] = node.source

    # -- blocks ----------------------------------------------------------------------------
    def block(self, block, depth):
        start = len(self.lines)
        for n in block.nodes:
            self.node(n, depth)
        return len(self.lines) - start

    def assign_returns(self, block, targets, depth):
        if not targets:
            return
        srcs = [self.name(v) for v in block.returns]
        pairs = [(t, s) for t, s in zip(targets, srcs) if t != s]
        if pairs:
            self.emit(depth, ", ".join(t for t, _ in pairs) + ", = " + ", ".join(s for _, s in pairs)
                      + ("," if len(pairs) == 1 else ""))

    def node(self, n, depth):
        k = n.kind
        m = getattr(self, "n_" + k.replace("::", "_"), None)
        if m is not None:
            m(n, depth)
            return
        args = [self.name(i) for i in n.inputs]
        outs = [self.name(o) for o in n.outputs]
        lhs = (", ".join(outs) + (", = " if len(outs) > 1 else " = ")) if outs else ""
        if len(outs) > 1:
            lhs = "(" + ", ".join(outs) + ",) = "
        if n.op is not None:
            op = self.stash(n.op, "op")
            self.emit(depth, f"{lhs}_dispatch({op}, ({', '.join(args)}{',' if len(args) == 1 else ''}))", n)
            return
        if "_index" in n.attrs:
            self.index(n, depth, lhs, args)
            return
        py = n.attrs.get("_py")
        if py is not None:
            if len(args) == 2:
                self.emit(depth, f"{lhs}{args[0]} {py} {args[1]}", n)
            else:
                self.emit(depth, f"{lhs}{py}{args[0]}", n)
            return
        if n.fn is not None:
            fn = self.stash(n.fn, "f")
            nkw = len(n.kwnames)
            pos = args[:len(args) - nkw] if nkw else args
            kws = [f"{kname}={a}" for kname, a in zip(n.kwnames, args[len(args) - nkw:])] if nkw else []
            self.emit(depth, f"{lhs}{fn}({', '.join(pos + kws)})", n)
            return
        raise NotImplementedError(f"ember.jit: no code generation for node kind {k}")

    # -- prim nodes -----------------------------------------------------------------------
    def n_prim_Constant(self, n, depth):
        v = n.outputs[0]
        if isinstance(v.type, T.FunctionType):
            self.names[v.id] = self.stash(n.fn, "fn")
        # other constants are inlined where used

    def n_prim_If(self, n, depth):
        outs = [self.name(o) for o in n.outputs]
        cond = self.name(n.inputs[0])
        self.emit(depth, f"if {cond}:", n)
        then, other = n.blocks
        k = self.block(then, depth + 1)
        before = len(self.lines)
        self.assign_returns(then, outs, depth + 1)
        if k == 0 and len(self.lines) == before:
            self.emit(depth + 1, "pass")
        start = len(self.lines)
        self.emit(depth, "else:")
        k = self.block(other, depth + 1)
        before = len(self.lines)
        self.assign_returns(other, outs, depth + 1)
        if k == 0 and len(self.lines) == before:
            del self.lines[start:]             # no else branch needed

    def n_prim_Loop(self, n, depth):
        trip, cond = n.inputs[0], n.inputs[1]
        init = n.inputs[2:]
        body = n.blocks[0]
        idx, params = body.params[0], body.params[1:]
        pnames = [self.name(p) for p in params]
        if pnames:
            self.emit(depth, ", ".join(pnames) + ", = " + ", ".join(self.name(v) for v in init)
                      + ("," if len(init) == 1 else ""))
        i = self.name(idx)
        c0 = cond.constant()
        cbody = body.returns[0]
        cb = cbody.constant()
        if trip.constant() == _MAX_TRIP:
            cname = self.new_name("cond")
            self.emit(depth, f"{cname} = {self.name(cond)}")
            self.emit(depth, f"{i} = -1")
            self.emit(depth, f"while {cname}:", n)
            self.emit(depth + 1, f"{i} += 1")
            self.block(body, depth + 1)
            self.emit(depth + 1, f"{cname} = {self.name(cbody)}")
            self.assign_returns_to(body.returns[1:], pnames, depth + 1)
        else:
            d = depth
            if c0 is not True:
                self.emit(depth, f"if {self.name(cond)}:", n)
                d = depth + 1
            self.emit(d, f"for {i} in range({self.name(trip)}):", n)
            k = self.block(body, d + 1)
            before = len(self.lines)
            self.assign_returns_to(body.returns[1:], pnames, d + 1)
            if cb is not True:
                self.emit(d + 1, f"if not {self.name(cbody)}:")
                self.emit(d + 2, "break")
            elif k == 0 and len(self.lines) == before:
                self.emit(d + 1, "pass")
        outs = [self.name(o) for o in n.outputs]
        if outs:
            self.emit(depth, ", ".join(outs) + ", = " + ", ".join(pnames) + ("," if len(outs) == 1 else ""))

    def assign_returns_to(self, values, targets, depth):
        srcs = [self.name(v) for v in values]
        pairs = [(t, s) for t, s in zip(targets, srcs) if t != s]
        if pairs:
            self.emit(depth, ", ".join(t for t, _ in pairs) + ", = " + ", ".join(s for _, s in pairs)
                      + ("," if len(pairs) == 1 else ""))

    def n_prim_With(self, n, depth):
        fn = self.stash(n.fn, "ctx")
        args = [self.name(i) for i in n.inputs]
        nkw = len(n.kwnames)
        pos = args[:len(args) - nkw]
        kws = [f"{k}={a}" for k, a in zip(n.kwnames, args[len(args) - nkw:])]
        self.emit(depth, f"with {fn}({', '.join(pos + kws)}):", n)
        k = self.block(n.blocks[0], depth + 1)
        outs = [self.name(o) for o in n.outputs]
        before = len(self.lines)
        self.assign_returns(n.blocks[0], outs, depth + 1)
        if k == 0 and len(self.lines) == before:
            self.emit(depth + 1, "pass")

    def n_prim_GetAttr(self, n, depth):
        obj = n.inputs[0]
        name = n.attrs["name"]
        out = self.name(n.outputs[0])
        t = obj.type
        where = "__dict__"
        if isinstance(t, T.ClassType) and t.is_module:
            where = (t.constants or {}).get("$slots", {}).get(name, "__dict__")
        if where == "__dict__" and isinstance(t, T.ClassType) and t.is_module:
            self.emit(depth, f"{out} = getattr({self.name(obj)}, {name!r})", n)
        elif where == "__dict__":
            self.emit(depth, f"{out} = {self.name(obj)}.{name}", n)
        else:
            self.emit(depth, f"{out} = {self.name(obj)}.{where}[{name!r}]", n)

    def n_prim_SetAttr(self, n, depth):
        self.emit(depth, f"setattr({self.name(n.inputs[0])}, {n.attrs['name']!r}, "
                         f"{self.name(n.inputs[1])})", n)

    def n_prim_CallMethod(self, n, depth):
        self._call_function(n, depth)

    def n_prim_CallFunction(self, n, depth):
        self._call_function(n, depth)

    def _call_function(self, n, depth):
        fn = self.stash(n.fn, "fn")
        args = ", ".join(self.name(i) for i in n.inputs)
        outs = [self.name(o) for o in n.outputs]
        lhs = f"{outs[0]} = " if outs else ""
        self.emit(depth, f"{lhs}{fn}.py({args})", n)

    def n_prim_TupleConstruct(self, n, depth):
        t = n.outputs[0].type
        args = [self.name(i) for i in n.inputs]
        if isinstance(t, T.TupleType) and t.py_class is not None:
            cls = self.stash(t.py_class, "cls")
            self.emit(depth, f"{self.name(n.outputs[0])} = {cls}({', '.join(args)})", n)
        else:
            self.emit(depth, f"{self.name(n.outputs[0])} = ({', '.join(args)}{',' if len(args) == 1 else ''})", n)

    def n_prim_ListConstruct(self, n, depth):
        self.emit(depth, f"{self.name(n.outputs[0])} = [{', '.join(self.name(i) for i in n.inputs)}]", n)

    def n_prim_DictConstruct(self, n, depth):
        ins = [self.name(i) for i in n.inputs]
        items = ", ".join(f"{ins[k]}: {ins[k + 1]}" for k in range(0, len(ins), 2))
        self.emit(depth, f"{self.name(n.outputs[0])} = {{{items}}}", n)

    def n_prim_TupleUnpack(self, n, depth):
        outs = [self.name(o) for o in n.outputs]
        self.emit(depth, f"{', '.join(outs)}{',' if len(outs) == 1 else ''} = {self.name(n.inputs[0])}", n)

    n_prim_ListUnpack = n_prim_TupleUnpack

    def n_prim_TupleIndex(self, n, depth):
        self.emit(depth, f"{self.name(n.outputs[0])} = {self.name(n.inputs[0])}[{self.name(n.inputs[1])}]", n)

    def n_prim_RaiseException(self, n, depth):
        self.emit(depth, f"_raise({self.name(n.inputs[0])}, {self.name(n.inputs[1])})", n)

    def n_prim_Print(self, n, depth):
        self.emit(depth, f"print({', '.join(self.name(i) for i in n.inputs)})", n)

    def n_prim_unchecked_cast(self, n, depth):
        self.names[n.outputs[0].id] = self.name(n.inputs[0])

    def n_prim_Uninitialized(self, n, depth):
        self.names[n.outputs[0].id] = "None"

    def _tensor_attr(self, n, depth, attr):
        self.emit(depth, f"{self.name(n.outputs[0])} = {self.name(n.inputs[0])}.{attr}", n)

    def n_prim_TensorAttr(self, n, depth):
        self._tensor_attr(n, depth, n.attrs["name"])

    def n_prim_NumAttr(self, n, depth):
        self._tensor_attr(n, depth, n.attrs["name"])

    def n_prim_dtype(self, n, depth):
        self._tensor_attr(n, depth, "dtype")

    def n_prim_device(self, n, depth):
        self._tensor_attr(n, depth, "device")

    def n_prim_shape(self, n, depth):
        self.emit(depth, f"{self.name(n.outputs[0])} = list({self.name(n.inputs[0])}.shape)", n)

    def n_prim_CallAny(self, n, depth):
        args = [self.name(i) for i in n.inputs]
        nkw = len(n.kwnames)
        pos = args[1:len(args) - nkw]
        kws = [f"{k}={a}" for k, a in zip(n.kwnames, args[len(args) - nkw:])]
        self.emit(depth, f"{self.name(n.outputs[0])} = {args[0]}.{n.attrs['name']}({', '.join(pos + kws)})", n)

    def n_aten_wait(self, n, depth):
        self.emit(depth, f"{self.name(n.outputs[0])} = {self.name(n.inputs[0])}.wait()", n)

    def n_prim_fork(self, n, depth):
        from ember.jit._futures import fork
        f = self.stash(fork, "fork")
        target = self.stash(n.fn, "fn")
        args = ", ".join(self.name(i) for i in n.inputs)
        self.emit(depth, f"{self.name(n.outputs[0])} = {f}({target}.py{', ' if args else ''}{args})", n)

    def index(self, n, depth, lhs, args):
        """Tensor indexing from its template (see ``Compiler.index_template``)."""
        tmpl = n.attrs["_index"]
        if n.kind == "aten::index_put_":
            target, value, rest = args[0], args[1], args[2:]
        else:
            target, value, rest = args[0], None, args[1:]

        def one(t):
            if t is None:
                return "None"
            if t is Ellipsis:
                return "..."
            if t[0] == "slice":
                parts = ["" if p is None else rest[p - 1] for p in t[1:]]
                s = f"{parts[0]}:{parts[1]}"
                return s + (f":{parts[2]}" if parts[2] else "")
            if t[0] == "splat":
                return f"*{rest[t[1] - 1]}"
            return rest[t[1] - 1]

        if isinstance(tmpl, tuple) and tmpl and isinstance(tmpl[0], str):
            expr = one(tmpl)
        elif isinstance(tmpl, tuple):
            parts = [one(t) for t in tmpl]
            expr = ", ".join(parts) + ("," if len(parts) == 1 else "")
            if not parts:
                expr = "()"
        else:
            expr = one(tmpl)
        if value is not None:
            self.emit(depth, f"{target}[{expr}] = {value}", n)
        else:
            self.emit(depth, f"{lhs}{target}[{expr}]", n)


_NOT = __import__("ember.jit._ir", fromlist=["NOT_CONSTANT"]).NOT_CONSTANT


def generate(graph, name, arg_names):
    """Compile ``graph`` into a Python function ``name(*arg_names)``."""
    from ember import _dispatch
    filename = f"<torchscript:{name}:{next(_file_ids)}>"
    g = _Gen(filename)
    g.env["_dispatch"] = _dispatch.dispatch
    params = []
    for v, hint in zip(graph.inputs(), arg_names):
        n = g.names[v.id] = g.new_name(hint)
        params.append(n)
    g.emit(0, f"def {g.new_name(name)}({', '.join(params)}):")
    g.block(graph.block, 1)
    rets = [g.name(v) for v in graph.outputs()]
    g.emit(1, f"return {rets[0]}" if len(rets) == 1 else f"return ({', '.join(rets)})")
    src = "\n".join(g.lines) + "\n"
    code = compile(src, filename, "exec")
    exec(code, g.env)
    LINE_MAP[filename] = g.linemap
    fn = [v for k, v in g.env.items() if callable(v) and getattr(v, "__code__", None) is not None
          and v.__code__.co_filename == filename][0]
    fn.__ember_source__ = src
    return fn, src
