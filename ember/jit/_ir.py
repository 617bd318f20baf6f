"""The IR: a ``Graph`` of ``Node``s in SSA form, as TorchScript's.

    Graph  -> one top ``Block`` (its params are the graph's inputs, its returns the outputs)
    Block  -> params, an ordered list of Nodes, returns
    Node   -> kind ("aten::add", "prim::If", ...), input Values, output Values, attributes,
              nested Blocks (If: then/else; Loop: the body), where it came from in the source
    Value  -> one SSA value: its type, the node that makes it, its uses

``prim::If(cond)`` runs block 0 or 1; each block returns the If's outputs.
``prim::Loop(max_trip_count, cond, *carried)``: the body block takes (i, *carried) and
returns (cond, *carried); the Loop's outputs are the final carried values.

A node that calls an op carries ``op`` (an ember op record, called with schema-ordered
arguments through the dispatcher) or ``fn`` (a Python callable, with ``kwnames`` naming its
trailing keyword inputs). ``str(graph)`` prints torch's textual form.
"""
from __future__ import annotations

import itertools


_ids = itertools.count()


class SourceRange:
    """Where a node came from: a file, a line (1-based), a column, and the source lines."""
    __slots__ = ("filename", "line", "col", "end_col", "lines", "first_line", "fn_name")

    def __init__(self, filename, line, col, end_col, lines, first_line, fn_name=None):
        self.filename, self.line, self.col, self.end_col = filename, line, col, end_col
        self.lines, self.first_line, self.fn_name = lines, first_line, fn_name

    def __str__(self):
        return f"{self.filename}:{self.line}:{self.col}"

    def highlight(self, context=2):
        """The source around the range with torch's ``~~~~ <--- HERE`` underline."""
        idx = self.line - self.first_line
        lo = max(0, idx - context)
        out = self.lines[lo:idx + 1]
        width = max(1, (self.end_col if self.end_col and self.end_col > self.col else
                        len(self.lines[idx].rstrip()) if idx < len(self.lines) else 1) - self.col)
        out = out + [" " * self.col + "~" * width + " <--- HERE"]
        out += self.lines[idx + 1: idx + 1 + context]
        return "\n".join(line.rstrip("\n") for line in out)

    def traceback(self):
        """The run-time form: ``File "...", line N, in fn`` then the underlined source."""
        where = f", in {self.fn_name}" if self.fn_name else ""
        return f'  File "{self.filename}", line {self.line}{where}\n{self.highlight()}'

    def traceback_compile(self):
        """The compile-time form torch prints under a frontend error."""
        text = "\n".join("    " + line if line else line
                         for line in self.highlight().split("\n"))
        return f'  File "{self.filename}", line {self.line}\n{text}'


class Value:
    __slots__ = ("type", "node", "offset", "uses", "debug_name", "id")

    def __init__(self, type_, node=None, offset=0, debug_name=None):
        self.type = type_
        self.node = node
        self.offset = offset
        self.uses = []           # (node, input index)
        self.debug_name = debug_name
        self.id = next(_ids)

    def __repr__(self):
        return f"%{self.debug_name or self.id} : {self.type}"

    def set_type(self, t):
        self.type = t
        return self

    def replace_all_uses_with(self, other):
        for node, i in list(self.uses):
            node.replace_input(i, other)

    def constant(self):
        """The value of a ``prim::Constant`` output, else ``_NOT_CONSTANT``."""
        n = self.node
        if n is not None and n.kind == "prim::Constant":
            return n.attrs.get("value")
        return NOT_CONSTANT


NOT_CONSTANT = object()


class Kind(str):
    """A node's kind ("aten::add"): a string that can also be called, as torch's
    ``Node.kind()`` is (``[n.kind() for n in graph.nodes()]``)."""
    __slots__ = ()

    def __call__(self):
        return str(self)

    def __reduce__(self):            # pickles (archives, lite bytecode) hold a plain str
        return str, (str(self),)


class Node:
    __slots__ = ("kind", "inputs", "outputs", "blocks", "attrs", "source", "op", "fn",
                 "kwnames", "owner", "__weakref__")

    def __init__(self, kind, inputs=(), attrs=None, source=None):
        self.kind = Kind(kind)
        self.inputs = []
        self.outputs = []
        self.blocks = []
        self.attrs = dict(attrs or {})
        self.source = source
        self.op = None
        self.fn = None
        self.kwnames = ()
        self.owner = None        # the Block holding this node
        for v in inputs:
            self.add_input(v)

    def add_input(self, v):
        v.uses.append((self, len(self.inputs)))
        self.inputs.append(v)
        return v

    def replace_input(self, i, v):
        old = self.inputs[i]
        old.uses.remove((self, i))
        self.inputs[i] = v
        v.uses.append((self, i))

    def add_output(self, type_, debug_name=None):
        v = Value(type_, self, len(self.outputs), debug_name)
        self.outputs.append(v)
        return v

    def add_block(self):
        b = Block(owner_node=self)
        self.blocks.append(b)
        return b

    @property
    def output(self):
        assert len(self.outputs) == 1, self.kind
        return self.outputs[0]

    def drop_inputs(self):
        for i, v in enumerate(self.inputs):
            v.uses.remove((self, i))
        self.inputs = []
        for b in self.blocks:
            for n in list(b.nodes):
                n.drop_inputs()
            for i, v in enumerate(b.returns):
                v.uses.remove((b.return_node, i))
            b.returns = []

    def destroy(self):
        """Remove this node (its outputs must be unused)."""
        self.drop_inputs()
        if self.owner is not None:
            self.owner.nodes.remove(self)
            self.owner = None

    def has_side_effects(self):
        return self.kind in SIDE_EFFECTS or (self.op is not None and self.op.is_inplace) or \
            (self.kind.startswith("aten::") and self.kind.endswith("_")
             and not self.kind.endswith("__")) or self.attrs.get("side_effects", False)

    def __repr__(self):
        return f"<Node {self.kind}>"


# kinds whose nodes are kept even with unused outputs
SIDE_EFFECTS = {"prim::RaiseException", "prim::Print", "aten::warn", "prim::SetAttr",
                "aten::append", "aten::insert", "aten::extend", "aten::pop", "aten::clear",
                "aten::_set_item", "aten::remove", "aten::reverse", "aten::sort",
                "aten::copy_", "prim::CallMethod", "prim::CallFunction", "prim::PythonOp",
                "aten::update", "aten::setdefault", "aten::Delete", "aten::wait",
                "prim::fork", "aten::_grad_sum_to_size", "prim::Loop", "prim::If"}


class _ReturnNode:
    """Stands for a block's return statement in Value.uses."""
    __slots__ = ("block", "__weakref__")
    kind = Kind("prim::Return")

    def __init__(self, block):
        self.block = block

    def replace_input(self, i, v):
        b = self.block
        b.returns[i].uses.remove((self, i))
        b.returns[i] = v
        v.uses.append((self, i))


class Block:
    def __init__(self, owner_node=None):
        self.params = []
        self.nodes = []
        self.returns = []
        self.owner_node = owner_node
        self.return_node = _ReturnNode(self)

    def add_param(self, type_, debug_name=None):
        v = Value(type_, None, len(self.params), debug_name)
        v.node = _ParamNode(self)
        self.params.append(v)
        return v

    def append(self, node):
        node.owner = self
        self.nodes.append(node)
        return node

    def insert_before(self, anchor, node):
        node.owner = self
        self.nodes.insert(self.nodes.index(anchor), node)
        return node

    def add_return(self, v):
        v.uses.append((self.return_node, len(self.returns)))
        self.returns.append(v)

    def set_returns(self, values):
        for i, v in enumerate(self.returns):
            v.uses.remove((self.return_node, i))
        self.returns = []
        for v in values:
            self.add_return(v)

    def all_nodes(self):
        """Every node in this block and the blocks nested in it, in order."""
        for n in self.nodes:
            yield n
            for b in n.blocks:
                yield from b.all_nodes()


class _ParamNode:
    """The 'producer' of a block parameter."""
    __slots__ = ("block",)
    kind = Kind("prim::Param")

    def __init__(self, block):
        self.block = block


class Graph:
    def __init__(self):
        self.block = Block()

    def inputs(self):
        return self.block.params

    def outputs(self):
        return self.block.returns

    def nodes(self):
        return self.block.nodes

    def all_nodes(self):
        return self.block.all_nodes()

    def add_input(self, type_, debug_name=None):
        return self.block.add_param(type_, debug_name)

    def copy(self):
        from ember.jit._passes import clone_graph
        return clone_graph(self)

    def __str__(self):
        return _Printer().graph(self)

    __repr__ = __str__

    def str(self, print_source_locations=True):
        return _Printer(print_source_locations).graph(self)


def _fmt_attr(v):
    if isinstance(v, bool):
        return str(int(v))
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'
    if isinstance(v, float):
        r = repr(v)
        return r if ("." in r or "e" in r or "n" in r) else r + "."
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_fmt_attr(e) for e in v) + "]"
    import ember
    if isinstance(v, ember.Tensor):
        return "<Tensor>"
    if isinstance(v, ember.dtype):
        from ember.jit._builtins import SCALAR_TYPE_CODE
        return str(SCALAR_TYPE_CODE.get(v, v))
    if isinstance(v, ember.device):
        return f'"{v}"'
    from ember.jit import _types as T
    if T.is_enum_class(type(v)):
        return f"{T.enum_type(type(v)).qualname}.{v.name}"
    return str(v)


class _Printer:
    def __init__(self, locations=True):
        self.names = {}
        self.used = {}
        self.counter = itertools.count(0)
        self.locations = locations

    def name(self, v):
        n = self.names.get(v.id)
        if n is None:
            base = v.debug_name
            if base is None or base.isdigit():
                n = str(next(self.counter))
                while n in self.used:
                    n = str(next(self.counter))
            else:
                k = self.used.get(base, 0)
                n = base if k == 0 else f"{base}.{k}"
                while n in self.used:
                    k += 1
                    n = f"{base}.{k}"
                self.used[base] = k + 1
            self.used[n] = 1
            self.names[v.id] = n
        return "%" + n

    def decl(self, v):
        return f"{self.name(v)} : {v.type}"

    def graph(self, g):
        params = g.inputs()
        head = "graph(" + (",\n      ".join(self.decl(p) for p in params)) + "):\n"
        body = self.block_body(g.block, 1)
        ret = "  return (" + ", ".join(self.name(v) for v in g.outputs()) + ")\n"
        return head + body + ret

    def block_body(self, block, depth):
        out = []
        ind = "  " * depth
        for n in block.nodes:
            outs = ", ".join(self.decl(o) for o in n.outputs)
            attrs = ""
            if n.attrs:
                shown = {k: v for k, v in n.attrs.items() if not k.startswith("_")
                         and k != "side_effects"}
                if shown:
                    attrs = "[" + ", ".join(f"{k}={_fmt_attr(v)}" for k, v in shown.items()) + "]"
            args = ", ".join(self.name(i) for i in n.inputs)
            loc = f" # {n.source}" if self.locations and n.source is not None else ""
            line = f"{ind}{outs + ' = ' if outs else ''}{n.kind}{attrs}({args}){loc}\n"
            out.append(line)
            for k, b in enumerate(n.blocks):
                ps = ", ".join(self.decl(p) for p in b.params)
                out.append(f"{ind}  block{k}({ps}):\n")
                out.append(self.block_body(b, depth + 2))
                out.append(f"{ind}    -> (" + ", ".join(self.name(v) for v in b.returns) + ")\n")
        return "".join(out)
