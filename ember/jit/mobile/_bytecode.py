"""A register-machine code generator: an ``ember.jit`` Graph -> torch's mobile bytecode
(version 8) for ``bytecode.pkl``.

Every value gets its own register (graph inputs 1..n via ``STOREN``); constants are
``LOADC``-ed where used; ``prim::If`` becomes ``JF``/``JMP`` with both branches storing into
the If's output registers; ``prim::Loop`` becomes torch's ``LOOP`` (stack: trip counter,
max, condition, carried values; the body starts with ``STOREN`` of its parameters and ends
with ``JMP`` back). Operators are named as torch names them (``_ops.torch_op``) and called
with every argument given, so the table's argument count is the schema's.
"""
from __future__ import annotations

from ember.jit import _types as T
from ember.jit._ir import Node
from ember.jit.mobile._ops import IntList, Literal, is_tensor, torch_op

BYTECODE_VERSION = 8


def type_str(t, names=None):
    """torch's mobile type string (``List[int]``, ``Optional[Tensor]``, a class qualname)."""
    simple = {T.TensorType: "Tensor", T.IntType: "int", T.FloatType: "float", T.BoolType: "bool",
              T.StrType: "str", T.NoneType: "NoneType"}
    if t in simple:
        return simple[t]
    if is_tensor(t):
        return "Tensor"
    if isinstance(t, T.OptionalType):
        return f"Optional[{type_str(t.elem, names)}]"
    if isinstance(t, T.ListType):
        return f"List[{type_str(t.elem, names)}]"
    if isinstance(t, T.TupleType):
        return "Tuple[" + ", ".join(type_str(e, names) for e in t.elems) + "]"
    if isinstance(t, T.DictType):
        return f"Dict[{type_str(t.key, names)}, {type_str(t.value, names)}]"
    if isinstance(t, T.ClassType):
        return (names or {}).get(id(t), t.qualname)
    return str(t)


class Code:
    """One function's instructions, operators, constants, types and register count."""

    def __init__(self, encode):
        self.instructions = []
        self.operators, self._op_index = [], {}
        self.constants, self._const_index = [], {}
        self.types = []
        self.regs = {}
        self.nregs = 0
        self.encode = encode

    # -- tables ---------------------------------------------------------------------------
    def const(self, value):
        key = _const_key(value)
        if key is not None and key in self._const_index:
            return self._const_index[key]
        self.constants.append(self.encode(value))
        k = len(self.constants) - 1
        if key is not None:
            self._const_index[key] = k
        return k

    def op(self, name, overload, nargs):
        key = (name, overload, nargs)
        k = self._op_index.get(key)
        if k is None:
            k = self._op_index[key] = len(self.operators)
            self.operators.append(key)
        return k

    def emit(self, op, x=0, n=0):
        self.instructions.append((op, x, n))
        return len(self.instructions) - 1

    def alloc(self, values):
        """Consecutive fresh registers for ``values``; returns the first."""
        first = self.nregs + 1
        for v in values:
            self.nregs += 1
            self.regs[v.id] = self.nregs
        return first

    # -- values ---------------------------------------------------------------------------
    def push(self, v):
        if isinstance(v, Literal):
            self.emit("LOADC", self.const(v.value))
        elif isinstance(v, IntList):
            for x in v.values:
                self.push(x)
            self.types.append("List[int]")
            self.emit("LIST_CONSTRUCT", len(self.types) - 1, len(v.values))
        elif v.id in self.regs:
            self.emit("LOAD", self.regs[v.id])
        elif isinstance(v.node, Node) and v.node.kind == "prim::Constant":
            self.emit("LOADC", self.const(v.node.attrs.get("value")))
        else:
            raise RuntimeError(f"ember.jit.mobile: value {v} used before it is defined")

    def store(self, outputs):
        if not outputs:
            return
        first = self.alloc(outputs)
        if len(outputs) == 1:
            self.emit("STORE", first)
        else:
            self.emit("STOREN", first, len(outputs))

    def store_into(self, outputs):
        if len(outputs) == 1:
            self.emit("STORE", self.regs[outputs[0].id])
        elif outputs:
            self.emit("STOREN", self.regs[outputs[0].id], len(outputs))


def _const_key(v):
    if v is None or isinstance(v, (bool, int, float, str)):
        return (type(v).__name__, v)
    if isinstance(v, (list, tuple)):
        keys = tuple(_const_key(e) for e in v)
        return None if None in keys else (type(v).__name__,) + keys
    return None


class Generator:
    """Emits one graph; ``names`` maps id(ClassType) to archive qualnames."""

    def __init__(self, encode, names):
        self.encode, self.names = encode, names

    def function(self, graph):
        c = Code(self.encode)
        params = graph.inputs()
        c.alloc(params)
        c.emit("STOREN", 1, len(params))
        self.block(c, graph.block)
        outs = graph.outputs()
        for v in outs:
            c.push(v)
        if len(outs) > 1:
            c.emit("TUPLE_CONSTRUCT", len(outs))
        c.emit("RET")
        return c

    def block(self, c, block):
        for n in block.nodes:
            self.node(c, n)

    def node(self, c, n):
        kind = str(n.kind)
        handler = getattr(self, "n_" + kind.replace("::", "_"), None)
        if handler is not None:
            return handler(c, n)
        from ember.utils.mobile_optimizer import FUSED_KINDS
        if kind in FUSED_KINDS:
            return self.fused(c, n, *FUSED_KINDS[kind])
        name, overload, args = torch_op(n)
        out_t = n.outputs[0].type if len(n.outputs) == 1 else None
        elems = getattr(out_t, "elems", None)
        if elems and len(elems) > 1 and type(out_t).__name__ == "TupleType":
            # an operator returning several values (max.dim, sort, topk) pushes them all;
            # ember's graph holds one tuple: build it
            for a in args:
                c.push(a)
            c.emit("OP", c.op(name, overload, len(args)))
            c.emit("TUPLE_CONSTRUCT", len(elems))
            c.store(n.outputs)
            return
        self.call(c, name, overload, args, n.outputs)

    def n_prim_TupleIndex(self, c, n):
        self.call(c, "prim::TupleIndex", "", list(n.inputs), n.outputs)

    def call(self, c, name, overload, args, outputs):
        for a in args:
            c.push(a)
        c.emit("OP", c.op(name, overload, len(args)))
        c.store(outputs)

    # -- prim nodes ----------------------------------------------------------------------
    def n_prim_Constant(self, c, n):
        pass

    def _slot(self, n):
        t = n.inputs[0].type
        if not isinstance(t, T.ClassType):
            raise NotImplementedError(f"ember.jit.mobile: attribute {n.attrs['name']} of {t}")
        return list(t.attributes).index(n.attrs["name"])

    def n_prim_GetAttr(self, c, n):
        c.push(n.inputs[0])
        c.emit("GET_ATTR", self._slot(n))
        c.store(n.outputs)

    def n_prim_SetAttr(self, c, n):
        c.push(n.inputs[0])
        c.push(n.inputs[1])
        c.emit("SET_ATTR", self._slot(n))

    def n_prim_If(self, c, n):
        c.push(n.inputs[0])
        jf = c.emit("JF")
        c.alloc(n.outputs)
        then, other = n.blocks
        self.block(c, then)
        for v in then.returns:
            c.push(v)
        c.store_into(n.outputs)
        jmp = c.emit("JMP")
        c.instructions[jf] = ("JF", len(c.instructions) - jf, 0)
        self.block(c, other)
        for v in other.returns:
            c.push(v)
        c.store_into(n.outputs)
        c.instructions[jmp] = ("JMP", len(c.instructions) - jmp, 0)

    def n_prim_Loop(self, c, n):
        trip, cond, *carried = n.inputs
        c.push(Literal(0))
        c.push(trip)
        c.push(cond)
        for v in carried:
            c.push(v)
        loop = c.emit("LOOP")
        body = n.blocks[0]
        first = c.alloc(body.params)
        c.emit("STOREN", first, len(body.params))
        self.block(c, body)
        for v in body.returns:
            c.push(v)
        c.emit("JMP", loop - len(c.instructions))
        c.instructions[loop] = ("LOOP", len(c.instructions) - loop, 2 + len(carried))
        c.store(n.outputs)

    def n_prim_ListConstruct(self, c, n):
        for v in n.inputs:
            c.push(v)
        c.types.append(type_str(n.outputs[0].type, self.names))
        c.emit("LIST_CONSTRUCT", len(c.types) - 1, len(n.inputs))
        c.store(n.outputs)

    def n_prim_TupleConstruct(self, c, n):
        for v in n.inputs:
            c.push(v)
        c.emit("TUPLE_CONSTRUCT", len(n.inputs))
        c.store(n.outputs)

    def n_prim_TupleUnpack(self, c, n):
        self.call(c, "prim::TupleUnpack", "", [n.inputs[0]], n.outputs)

    def n_prim_TensorAttr(self, c, n):
        self.call(c, "prim::" + n.attrs["name"], "", list(n.inputs), n.outputs)

    def n_prim_Uninitialized(self, c, n):
        c.emit("UN_INITIALIZED")
        c.store(n.outputs)

    def n_prim_unchecked_cast(self, c, n):
        c.push(n.inputs[0])
        c.store(n.outputs)

    def n_prim_RaiseException(self, c, n):
        for v in n.inputs:
            c.push(v)
        if len(n.inputs) == 1:
            c.push(Literal("builtins.RuntimeError"))
        c.emit("RAISE_EXCEPTION")

    def n_aten_format(self, c, n):
        for v in n.inputs:
            c.push(v)
        c.emit("FORMAT", len(n.inputs))
        c.store(n.outputs)

    def _unary_instruction(self, c, n, instruction):
        for v in n.inputs:
            c.push(v)
        c.emit(instruction)
        c.store(n.outputs)

    def n_aten_dim(self, c, n):
        if not is_tensor(n.inputs[0].type):
            return self.call(c, "aten::dim", "", list(n.inputs), n.outputs)
        self._unary_instruction(c, n, "DIM")

    def n_aten___not__(self, c, n):
        self._unary_instruction(c, n, "__NOT__")

    def n_aten___is__(self, c, n):
        self._unary_instruction(c, n, "__IS__")

    def n_aten___isnot__(self, c, n):
        self._unary_instruction(c, n, "__ISNOT__")

    def fused(self, c, n, base, nargs):
        """A fused ``ember::`` node: the conv/linear/add op, then relu or hardtanh."""
        args, bounds = n.inputs[:nargs], n.inputs[nargs:]
        tmp = Node("prim::Tmp")
        v = tmp.add_output(T.TensorType)
        fixed = list(args)
        if base == "aten::conv2d":
            fixed[3:6] = [Literal(_pair(a.constant())) if _constant(a) else a for a in args[3:6]]
        self.call(c, base, "Tensor" if base == "aten::add" else "", fixed, [v])
        if not bounds:
            return self.call(c, "aten::relu", "", [v], n.outputs)
        lo, hi = bounds
        if _constant(hi) and hi.constant() is None and _constant(lo) and lo.constant() == 0.0:
            self.call(c, "aten::relu", "", [v], n.outputs)
        else:
            self.call(c, "aten::hardtanh", "", [v, lo, hi], n.outputs)


def _constant(v):
    return isinstance(v.node, Node) and v.node.kind == "prim::Constant"


def _pair(v):
    if isinstance(v, int) and not isinstance(v, bool):
        return [v, v]
    return list(v)
