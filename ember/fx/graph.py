"""The FX IR: a Graph is a doubly linked list of Nodes; ``python_code`` turns it into the
source of a ``forward`` function."""
from __future__ import annotations

import builtins
import contextlib
import inspect
import keyword
import operator
import re

from ember.fx.node import Node, map_arg, _qualified_name, _type_repr

__all__ = ["Graph", "PythonCode"]

_BINARY = {operator.add: "+", operator.sub: "-", operator.mul: "*", operator.truediv: "/",
           operator.floordiv: "//", operator.mod: "%", operator.pow: "**",
           operator.lshift: "<<", operator.rshift: ">>", operator.and_: "&",
           operator.or_: "|", operator.xor: "^", operator.matmul: "@", operator.eq: "==",
           operator.ne: "!=", operator.lt: "<", operator.le: "<=", operator.gt: ">",
           operator.ge: ">="}
_UNARY = {operator.neg: "-", operator.pos: "+", operator.invert: "~"}
_RESERVED = set(dir(builtins)) | set(keyword.kwlist) | {"self", "torch", "operator",
                                                       "device", "inf", "nan", "NoneType"}


class PythonCode:
    """``src``: the function's source; ``globals``: the names it refers to."""

    def __init__(self, src, globals):
        self.src, self.globals = src, globals


class _Namespace:
    """Hands out unique, valid Python names: ``add``, ``add_1``, ``sum_1`` (builtins and
    keywords are never used bare)."""

    def __init__(self):
        self._used = set()
        self._counts = {}

    def create_name(self, candidate):
        candidate = re.sub(r"[^0-9a-zA-Z_]+", "_", candidate)
        candidate = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", candidate).lower() \
            if any(c.isupper() for c in candidate) and candidate[0].isupper() else candidate
        if not candidate or candidate[0].isdigit():
            candidate = "_" + candidate
        match = re.fullmatch(r"(.*)_(\d+)", candidate)
        base, num = (match.group(1), int(match.group(2))) if match else (candidate, None)
        if num is None and candidate not in self._used and candidate not in _RESERVED:
            self._used.add(candidate)
            return candidate
        n = self._counts.get(base, 0) if num is None else num
        name = candidate
        while name in self._used or name in _RESERVED:
            n += 1
            name = f"{base}_{n}"
        self._counts[base] = max(n, self._counts.get(base, 0))
        self._used.add(name)
        return name

    def forget(self, name):
        self._used.discard(name)


class _NodeList:
    def __init__(self, graph, reverse=False):
        self._graph, self._reverse = graph, reverse

    def __len__(self):
        return self._graph._len

    def __iter__(self):
        root = self._graph._root
        step = "_prev" if self._reverse else "_next"
        cur = getattr(root, step)
        while cur is not root:
            nxt = getattr(cur, step)
            if not cur._erased:
                yield cur
            cur = nxt

    def __reversed__(self):
        return iter(_NodeList(self._graph, not self._reverse))


class Graph:
    """A list of nodes with an insertion point; build it with ``placeholder``,
    ``call_function``... and ``output``, or let a Tracer build it."""

    def __init__(self, owning_module=None, tracer_cls=None, tracer_extras=None):
        self._root = Node(self, "", "root", "", (), {})
        self._insert = self._root.prepend
        self._len = 0
        self._namespace = _Namespace()
        self.owning_module = owning_module
        self._tracer_cls = tracer_cls
        self._tracer_extras = tracer_extras

    @property
    def nodes(self):
        return _NodeList(self)

    # ------------------------------------------------------------------ building
    def create_node(self, op, target, args=None, kwargs=None, name=None, type_expr=None):
        """Insert a new node at the insertion point and return it."""
        args = () if args is None else args
        kwargs = {} if kwargs is None else kwargs
        assert isinstance(args, tuple), "args must be a tuple"
        assert isinstance(kwargs, dict), "kwargs must be a dict"
        unique = self._namespace.create_name(name or self._target_to_name(target))
        node = Node(self, unique, op, target, args, kwargs, type_expr)
        self._insert(node)
        self._len += 1
        return node

    @staticmethod
    def _target_to_name(target):
        if callable(target):
            from ember.fx._names import public_name
            public = public_name(target)
            name = public.rsplit(".", 1)[1] if public else \
                getattr(target, "__name__", None) or type(target).__name__
            return name.lstrip("_") if name.startswith("__") else name
        return str(target).replace(".", "_")

    def placeholder(self, name, type_expr=None, default_value=inspect.Signature.empty):
        """An input of the graph; a default value is kept as the node's one argument."""
        has_default = default_value is not inspect.Signature.empty
        return self.create_node("placeholder", name, (default_value,) if has_default else (),
                                type_expr=type_expr)

    def get_attr(self, qualified_name, type_expr=None):
        return self.create_node("get_attr", qualified_name, type_expr=type_expr)

    def call_module(self, module_name, args=None, kwargs=None, type_expr=None):
        return self.create_node("call_module", module_name, args, kwargs, type_expr=type_expr)

    def call_method(self, method_name, args=None, kwargs=None, type_expr=None):
        return self.create_node("call_method", method_name, args, kwargs, type_expr=type_expr)

    def call_function(self, the_function, args=None, kwargs=None, type_expr=None):
        return self.create_node("call_function", the_function, args, kwargs,
                                type_expr=type_expr)

    def output(self, result, type_expr=None):
        return self.create_node("output", "output", (result,), type_expr=type_expr)

    def node_copy(self, node, arg_transform=lambda x: x):
        """Copy ``node`` (from any graph) here, its input nodes mapped by ``arg_transform``."""
        copied = self.create_node(node.op, node.target, map_arg(node.args, arg_transform),
                                  map_arg(node.kwargs, arg_transform), node.name, node.type)
        copied.meta = dict(node.meta)
        return copied

    def graph_copy(self, g, val_map, return_output_node=False):
        """Copy all nodes of ``g`` but its output here (``val_map`` maps old nodes to new
        ones and is filled in); returns the copied output value."""
        lookup = val_map.__getitem__
        for node in g.nodes:
            if node.op == "output":
                value = map_arg(node.args[0], lookup)
                return (value, node) if return_output_node else value
            if node not in val_map:
                val_map[node] = self.node_copy(node, lookup)
        return None

    def __deepcopy__(self, memo=None):
        g = Graph(tracer_cls=self._tracer_cls)
        out = g.graph_copy(self, {}, return_output_node=True)
        if out is not None:
            value, old = out
            g.output(value, type_expr=old.type)
        return g

    # ------------------------------------------------------------------ editing
    @contextlib.contextmanager
    def _inserting(self, insert):
        saved = self._insert
        self._insert = insert
        try:
            yield
        finally:
            self._insert = saved

    def inserting_before(self, n=None):
        """Context manager: new nodes go before ``n`` (the graph's start if None)."""
        if n is None:
            return self.inserting_after(self._root)
        assert n.graph is self, "Node to insert before is not in graph."
        return self._inserting(n.prepend)

    def inserting_after(self, n=None):
        """Context manager: new nodes go after ``n`` (the graph's end if None), in order."""
        if n is None:
            return self._inserting(self._root.prepend)
        assert n.graph is self, "Node to insert after is not in graph."
        anchor = [n]

        def insert(node):
            anchor[0].append(node)
            anchor[0] = node
        return self._inserting(insert)

    def erase_node(self, to_erase):
        """Remove a node that has no users."""
        if len(to_erase.users) > 0:
            raise RuntimeError(f"Tried to erase Node {to_erase} but it still had "
                               f"{len(to_erase.users)} users in the graph: {to_erase.users}!")
        if to_erase.graph is not self:
            raise RuntimeError(f"Attempting to remove {to_erase} from wrong graph!")
        if to_erase._erased:
            return
        to_erase._unlink()
        to_erase._erased = True
        self._len -= 1
        to_erase._set_arguments((), {})
        self._namespace.forget(to_erase.name)

    def eliminate_dead_code(self, is_impure_node=None):
        """Erase nodes with no users and no side effects; True if anything changed."""
        impure = is_impure_node or (lambda n: n.is_impure())
        changed = False
        for node in reversed(self.nodes):
            if not impure(node) and len(node.users) == 0:
                self.erase_node(node)
                changed = True
        return changed

    def find_nodes(self, *, op, target=None, sort=True):
        return [n for n in self.nodes if n.op == op and (target is None or n.target == target)]

    def lint(self):
        """Check the graph is well formed: inputs defined before use, names unique,
        targets present on the owning module."""
        seen, names = set(), set()
        for node in self.nodes:
            if node.graph is not self:
                raise RuntimeError(f"Node '{node}' does not belong to this Graph!")
            if node.name in names:
                raise RuntimeError(f"Node redefined name {node.name}!")
            for inp in node._input_nodes:
                if inp.graph is not self:
                    raise RuntimeError(f"Argument '{inp}' of Node '{node}' does not belong "
                                       f"to this Graph, but was used as an argument! If you "
                                       f"are copying nodes from another graph, make sure to "
                                       f"use ``arg_transform`` on node_copy() to remap values"
                                       f"\n{self}")
                if inp not in seen:
                    raise RuntimeError(f"Argument '{inp}' of Node '{node}' was used before "
                                       f"it has been defined! Please check that Nodes in the "
                                       f"graph are topologically ordered\n{self}")
            seen.add(node)
            names.add(node.name)
            mod = self.owning_module
            if mod is not None and node.op in ("get_attr", "call_module"):
                obj = mod
                for i, atom in enumerate(node.target.split(".")):
                    if not hasattr(obj, atom):
                        kind = "Module" if node.op == "call_module" else "attribute"
                        raise RuntimeError(f"Node {node} target {node.target} references "
                                           f"nonexistent {kind} "
                                           f"{'.'.join(node.target.split('.')[:i])}")
                    obj = getattr(obj, atom)

    # ------------------------------------------------------------------ printing
    def __str__(self):
        ret = [""]
        lines = [n.format_node(maybe_return_typename=ret) for n in self.nodes]
        body = "".join(f"\n    {line}" for line in lines if line)
        return f"graph():{body}"

    def print_tabular(self):
        """Print the nodes as a table: through ``tabulate`` when it is installed (rows as
        torch passes them), else as plain aligned columns."""
        headers = ["opcode", "name", "target", "args", "kwargs"]
        rows = [[n.op, n.name, n.target, n.args, n.kwargs] for n in self.nodes]
        try:
            from tabulate import tabulate
        except ImportError:
            pass
        else:
            print(tabulate(rows, headers=headers))
            return
        cells = [headers] + [[n.op, n.name, _qualified_name(n.target) if n.op ==
                              "call_function" else str(n.target), str(n.args), str(n.kwargs)]
                             for n in self.nodes]
        widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
        lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in cells]
        lines.insert(1, "  ".join("-" * w for w in widths))
        print("\n".join(lines))

    # ------------------------------------------------------------------ codegen
    def python_code(self, root_module, *, verbose=False, include_stride=False,
                    include_device=False, colored=False, _annotate_meta=False):
        """Source of ``forward`` for this graph (``root_module`` names the receiver);
        ``_annotate_meta`` (print_readable's form): values with a ``tensor_meta`` (from
        ShapeProp) annotated as ``x: "f32[2, 3]"``."""
        return _CodeGen(self, root_module, _annotate_meta).generate()

    def on_generate_code(self, make_transformer):
        yield


# dtypes as print_readable abbreviates them
_DTYPE_SHORT = {"torch.float32": "f32", "torch.float64": "f64", "torch.float16": "f16",
                "torch.bfloat16": "bf16", "torch.int64": "i64", "torch.int32": "i32",
                "torch.int16": "i16", "torch.int8": "i8", "torch.uint8": "u8",
                "torch.bool": "b8", "torch.complex64": "c64", "torch.complex128": "c128",
                "torch.complex32": "c32"}


class _CodeGen:
    """Writes one line per node, deleting each value after its last use
    (``a = b = None``) so intermediates are freed as early as eager mode frees them."""

    def __init__(self, graph, root, annotate_meta=False):
        import ember
        self.graph, self.root = graph, root
        self.annotate_meta = annotate_meta
        self.globals = {"torch": ember, "operator": operator, "device": ember.device,
                        "inf": float("inf"), "nan": float("nan"), "NoneType": type(None)}
        self.global_names = {}
        self.wrapped = {}        # global names to re-register with wrap() in the source
        self.node_names = {n.name for n in graph.nodes}

    def add_global(self, hint, obj):
        if obj is getattr(builtins, getattr(obj, "__name__", ""), None):
            return obj.__name__
        if id(obj) in self.global_names:
            return self.global_names[id(obj)]
        name = re.sub(r"[^0-9a-zA-Z_]", "_", hint) or "g"
        base, i = name, 0
        while name in self.globals or name in _RESERVED or name in self.node_names:
            i += 1
            name = f"{base}_{i}"
        self.globals[name] = obj
        self.global_names[id(obj)] = name
        return name

    def function_name(self, fn):
        from ember.fx._names import public_name
        from ember.fx._symbolic_trace import WRAPPED_FUNCTIONS
        name = public_name(fn)
        if name is not None:
            return name
        if fn is getattr(operator, getattr(fn, "__name__", ""), None):
            return f"operator.{fn.__name__}"
        global_name = self.add_global(_qualified_name(fn), fn)
        if id(fn) in WRAPPED_FUNCTIONS and fn is WRAPPED_FUNCTIONS[id(fn)]:
            self.wrapped.setdefault(global_name, None)
        return global_name

    def value(self, arg):
        """Python source for an argument value."""
        import ember
        if isinstance(arg, Node):
            return arg.name
        if isinstance(arg, tuple) and not hasattr(arg, "_fields"):
            inner = ", ".join(self.value(a) for a in arg)
            return f"({inner},)" if len(arg) == 1 else f"({inner})"
        if isinstance(arg, list):
            return "[" + ", ".join(self.value(a) for a in arg) + "]"
        if isinstance(arg, dict):
            return "{" + ", ".join(f"{k!r}: {self.value(v)}" for k, v in arg.items()) + "}"
        if isinstance(arg, slice):
            return f"slice({self.value(arg.start)}, {self.value(arg.stop)}, " \
                   f"{self.value(arg.step)})"
        if isinstance(arg, ember.dtype):
            return repr(arg)
        if isinstance(arg, (ember.device,)):
            return repr(arg)
        if arg is None or isinstance(arg, (bool, int, float, complex, str, bytes)) \
                or arg is Ellipsis:
            return repr(arg)
        if isinstance(arg, type) or callable(arg):
            return self.function_name(arg) if not isinstance(arg, type) else \
                self.add_global(arg.__name__, arg)
        return self.add_global(type(arg).__name__.lower(), arg)

    def meta_annotation(self, node):
        """``: "f32[2, 3]"`` for a value ShapeProp saw as a tensor (print_readable only)."""
        if not self.annotate_meta:
            return ""
        tm = node.meta.get("tensor_meta")
        short = _DTYPE_SHORT.get(str(getattr(tm, "dtype", None)))
        if short is None or not hasattr(tm, "shape"):
            return ""
        return f': "{short}[{", ".join(str(int(d)) for d in tm.shape)}]"'

    def type_name(self, t):
        """An annotation as source: ``torch.Tensor``, ``int``, else a global."""
        text = _type_repr(t)
        if text == "torch.Tensor" or (isinstance(t, type) and t.__module__ == "builtins"):
            return text
        return self.add_global(text, t)

    def call_args(self, args, kwargs):
        parts = [self.value(a) for a in args]
        parts += [f"{k} = {self.value(v)}" for k, v in kwargs.items()]
        return ", ".join(parts)

    def attribute(self, target):
        """``self.a.b``, with ``getattr(self.a, "0")`` for path parts that are not names."""
        expr = self.root
        for atom in target.split("."):
            expr = f"{expr}.{atom}" if atom.isidentifier() and not keyword.iskeyword(atom) \
                else f'getattr({expr}, "{atom}")'
        return expr

    def expression(self, node):
        op, target, args, kwargs = node.op, node.target, node.args, node.kwargs
        if op == "call_method":
            return f"{self.value(args[0])}.{target}({self.call_args(args[1:], kwargs)})"
        if op == "call_module":
            return f"{self.attribute(target)}({self.call_args(args, kwargs)})"
        if op == "get_attr":
            return self.attribute(target)
        if not kwargs:
            if target in _BINARY and len(args) == 2:
                return f"{self.value(args[0])} {_BINARY[target]} {self.value(args[1])}"
            if target in _UNARY and len(args) == 1:
                return f"{_UNARY[target]}{self.value(args[0])}"
            if target is operator.getitem and len(args) == 2:
                return f"{self.value(args[0])}[{self.value(args[1])}]"
            if target is builtins.getattr and len(args) == 2 and isinstance(args[1], str) \
                    and args[1].isidentifier():
                return f"{self.value(args[0])}.{args[1]}"
        return f"{self.function_name(target)}({self.call_args(args, kwargs)})"

    def generate(self):
        nodes = list(self.graph.nodes)
        last_uses = {}
        seen = set()
        for node in reversed(nodes):
            def register(n, user=node):
                if n not in seen:
                    seen.add(n)
                    last_uses.setdefault(user, []).append(n)
            map_arg((node.args, node.kwargs), register)
        params, body, ret = [], [], ""
        for node in nodes:
            if node.op == "placeholder":
                name = node.target
                annotation = "" if node.type is None else f" : {self.type_name(node.type)}"
                if not annotation:
                    annotation = self.meta_annotation(node)
                if name.startswith("*"):
                    params.append(name + annotation)
                elif node.args:
                    params.append(f"{name}{annotation} = {self.value(node.args[0])}")
                else:
                    params.append(name + annotation)
                if name.lstrip("*") != node.name:
                    body.append(f"{node.name} = {name.lstrip('*')}")
                continue
            if node.op == "output":
                if node.type is not None:
                    ret = f" -> {self.type_name(node.type)}"
                body.append(f"return {self.value(node.args[0])}")
                continue
            line = f"{node.name}{self.meta_annotation(node)} = {self.expression(node)}"
            dead = [n.name for n in last_uses.get(node, []) if n.op != "root"]
            if not node.users:
                dead.append(node.name)
            if dead:
                line += f";  {' = '.join(dead)} = None"
            body.append(line)
        if not any(n.op == "output" for n in nodes):
            body.append("pass")
        params = ", ".join([self.root] + params)
        header = "\n".join(f'torch.fx._symbolic_trace.wrap("{name}")' for name in self.wrapped)
        src = f"\n{header}\n\ndef forward({params}){ret}:\n" + \
              "".join(f"    {line}\n" for line in body) + "    "
        return PythonCode(src, self.globals)
