"""``.code`` and archive source: compiled functions and classes printed as TorchScript in
torch's style (two-space indents, ``torch.<aten op>(...)`` calls with schema-ordered
arguments and trailing defaults dropped, ``ops.prim.*`` primitives, ``annotate(T, [])``,
single-use values inlined where evaluation order allows, as torch's printer does).

    function_code(fn)            -> the ``def`` torch shows as ``scripted.code``
    class_code(ct, ctx)          -> ``class M(Module): ...`` as in an archive's ``code/``
    PrintContext                 -> archive-wide state: class names, tensor constants,
                                    free functions referenced, the file-format version

Nodes that call Python callables with no op record (``node.fn``: ``F.linear``, list
methods, ``len``...) are mapped to the aten call torch would write (``_printer_ops.py``);
anything with no TorchScript spelling raises NotImplementedError naming it.
"""
from __future__ import annotations

import keyword
import math

from ember.jit import _types as T
from ember.jit._ir import NOT_CONSTANT

_MAX_TRIP = 9223372036854775807

# aten ops whose archive needs a newer file-format version (torch's operator upgraders)
_OP_VERSIONS = {"div": 4, "div_": 4, "full": 5, "full_like": 5, "linspace": 8,
                "logspace": 9, "gelu": 10, "gelu_": 10}

# ops whose int argument picks an overload of its own in torch (``squeeze.dim``): an int
# stays an int there instead of becoming ``[int]``
_INT_OVERLOADS = {"squeeze"}

_RESERVED = set(keyword.kwlist) | {
    "torch", "ops", "CONSTANTS", "annotate", "uninitialized", "unchecked_cast", "getattr",
    "range", "int", "float", "bool", "str", "complex", "print", "len", "fork", "wait",
    "isinstance", "math", "Tensor", "List", "Dict", "Optional", "Tuple", "Final", "NoneType",
    "Module", "NamedTuple", "Future", "Any", "inf", "nan", "list", "tuple", "dict", "Device",
    "number", "min", "max", "abs", "builtins", "__torch__", "self", "infj", "nanj", "super"}


class PrintContext:
    """State shared by everything printed into one archive (or one ``.code``)."""

    def __init__(self):
        self.constants = []            # tensors referenced as CONSTANTS.c<k>
        self._constant_ids = {}
        self.functions = {}            # qualified name -> Function (free functions called)
        self._function_ids = {}
        self.named_tuples = {}         # qualified name -> TupleType
        self.classes = {}              # qualified name -> ClassType (non-module classes)
        self.enums = {}                # qualified name -> EnumType
        self.sources = {}              # qualified name -> fixed class source (no_grad)
        self.archive = False           # printing for jit.save (Python calls refused)
        self.version = 3

    def qualname(self, t):
        """The archive name of a ClassType / NamedTuple type (a NamedTuple is named by its
        module, as torch names it)."""
        return _named_tuple_qualname(t) or t.qualname

    def function_name(self, fn):
        """The archive name of a free function (distinct functions sharing a qualified
        name, e.g. made by one factory, get ``___torch_mangle_<k>``)."""
        key = self._function_ids.get(id(fn))
        if key is not None:
            return key
        name = base = _sanitize_qualname(_function_qualname(fn))
        k = 0
        while name in self.functions:
            prefix, _, last = base.rpartition(".")
            name = f"{prefix}.___torch_mangle_f{k}.{last}"
            k += 1
        self.functions[name] = fn
        self._function_ids[id(fn)] = name
        return name

    def tensor_constant(self, t):
        k = self._constant_ids.get(id(t))
        if k is None:
            k = self._constant_ids[id(t)] = len(self.constants)
            self.constants.append(t)
        return f"CONSTANTS.c{k}"

    def note_op(self, name):
        v = _OP_VERSIONS.get(name)
        if v is not None and v > self.version:
            self.version = v


def _function_qualname(fn):
    """A free function's name as torch gives it: a static method of a class is a function
    of the class's module (``__torch__.<module>.<name>``)."""
    from ember.jit import _script
    for pyfn, f in list(_script._FUNCTIONS.items()):
        if f is fn:
            qual = getattr(pyfn, "__qualname__", "")
            if "." in qual.replace(".<locals>.", "") and "<locals>" not in qual.split(".")[-2]:
                mod = _script.qualified_class_name(pyfn).rsplit(".", qual.count(".") + 1)[0]
                return f"{mod}.{pyfn.__name__}"
            break
    return fn.qualified_name


def _named_tuple_qualname(t):
    if isinstance(t, T.TupleType) and t.py_class is not None:
        from ember.jit._script import qualified_class_name
        return _sanitize_qualname(qualified_class_name(t.py_class))
    return None


def _sanitize_qualname(q):
    parts = [p for p in q.replace(".<locals>.", ".").split(".") if p]
    out = []
    for p in parts:
        p = "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in p)
        if p[:1].isdigit():
            p = "_" + p
        out.append(p)
    if out and out[0] != "__torch__":
        out.insert(0, "__torch__")
    return ".".join(out)


# ----------------------------------------------------------------------------- types

def type_str(t, ctx):
    """A type as TorchScript source writes it (``Optional[List[int]]``)."""
    if t is T.NoneType:
        return "NoneType"
    if isinstance(t, T.OptionalType):
        return f"Optional[{type_str(t.elem, ctx)}]"
    if isinstance(t, T.ListType):
        return f"List[{type_str(t.elem, ctx)}]"
    if isinstance(t, T.DictType):
        return f"Dict[{type_str(t.key, ctx)}, {type_str(t.value, ctx)}]"
    if isinstance(t, T.TupleType):
        if t.qualname:
            ctx.named_tuples.setdefault(ctx.qualname(t), t)
            return ctx.qualname(t)
        if not t.elems:
            return "Tuple[()]"
        return "Tuple[" + ", ".join(type_str(e, ctx) for e in t.elems) + "]"
    if isinstance(t, T.FutureType):
        return f"Future[{type_str(t.elem, ctx)}]"
    if isinstance(t, T.ClassType):
        if not t.is_module:
            ctx.classes.setdefault(ctx.qualname(t), t)
        return ctx.qualname(t)
    if isinstance(t, T.FunctionType):
        raise NotImplementedError("ember.jit.save: a function value has no TorchScript type")
    if isinstance(t, T.EnumType):
        ctx.enums.setdefault(t.qualname, t)
    return t.annotation


# ----------------------------------------------------------------------------- constants

def _float_literal(v):
    """torch's spelling: 17 significant digits, a trailing dot on integral values."""
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    r = "%.17g" % v
    if "e" not in r and "." not in r and "n" not in r:
        r += "."
    return r


def _str_literal(s):
    out = ['"']
    for ch in s:
        if ch == "\\":
            out.append("\\\\")
        elif ch == '"':
            out.append('\\"')
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\r":
            out.append("\\r")
        elif ord(ch) < 32:
            out.append(f"\\x{ord(ch):02x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def enum_class_code(t, ctx, name):
    """``class Color(Enum):`` with one ``NAME = value`` line per member, as in archives."""
    return f"class {name}(Enum):\n" + "".join(
        f"  {member} = {constant_str(value, ctx)}\n" for member, value in t.members())


def constant_str(v, ctx, t=None, as_list=False):
    """A Python constant as a TorchScript literal (``t``: its static type, for empties)."""
    import ember
    if v is None:
        return "None"
    if isinstance(v, bool):
        return "True" if v else "False"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return _float_literal(v)
    if isinstance(v, complex):
        return f"complex({_float_literal(v.real)}, {_float_literal(v.imag)})"
    if isinstance(v, str):
        return _str_literal(v)
    if isinstance(v, ember.dtype):
        from ember.jit._builtins import SCALAR_TYPE_CODE
        return str(SCALAR_TYPE_CODE[v])
    if isinstance(v, ember.device):
        return f"torch.device({_str_literal(str(v))})"
    if isinstance(v, ember.Tensor):
        return ctx.tensor_constant(v)
    if T.is_enum_class(type(v)):
        et = T.enum_type(type(v))
        ctx.enums.setdefault(et.qualname, et)
        return f"{et.qualname}.{v.name}"
    from ember.jit._namespaced import torchbind_type
    if torchbind_type(v) is not None:   # traced packed parameters: CONSTANTS.c<k> too
        return ctx.tensor_constant(v)
    if isinstance(v, (list, tuple)):
        elem_t = None
        if isinstance(t, T.ListType):
            elem_t = t.elem
        if not v:
            if isinstance(v, tuple) and not as_list:
                return "()"
            lt = t if isinstance(t, T.ListType) else T.ListType(T.IntType)
            return f"annotate({type_str(lt, ctx)}, [])"
        items = [constant_str(x, ctx, elem_t) for x in v]
        if isinstance(v, list) or as_list:
            return "[" + ", ".join(items) + "]"
        return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
    layout = getattr(ember, "layout", None)
    if layout is not None and isinstance(v, layout):
        return "0"
    raise NotImplementedError(f"ember.jit.save: no TorchScript literal for the constant {v!r} "
                              f"({type(v).__name__})")


# ----------------------------------------------------------------------------- functions

def function_code(fn, ctx=None):
    """TorchScript source of a compiled Function, as torch's ``.code`` shows it."""
    ctx = ctx or PrintContext()
    return _FunctionPrinter(fn, ctx, in_class=False).text(0)


def method_code(fn, ctx, indent=1):
    """A method inside a class body (``self`` annotated with the class)."""
    return _FunctionPrinter(fn, ctx, in_class=True).text(indent)


def free_function_code(fn, ctx):
    return _FunctionPrinter(fn, ctx, in_class=False).text(0)


class _Expr:
    """A printed argument: its text and, for constants, the Python value."""
    __slots__ = ("text", "const", "type")

    def __init__(self, text, const=NOT_CONSTANT, type_=None):
        self.text, self.const, self.type = text, const, type_


_NODEF = object()


class _FunctionPrinter:
    def __init__(self, fn, ctx, in_class):
        self.fn, self.ctx, self.in_class = fn, ctx, in_class
        self.names = {}                 # value id -> name
        self.used = set(_RESERVED)
        self.tmp = 0
        self.inline = set()             # ids of nodes printed inside their single use
        self.hoisted = set()            # inlined nodes split out, not yet written
        self.declared = set()           # names assigned by assign() (typed on first use)
        self._int_overload = False
        self._dry = False
        self.const_names = {}           # id(constant node) -> name of a hoisted long string
        self.lines = []

    # -- names -------------------------------------------------------------------------
    def fresh(self, hint=None):
        base = None
        if hint and not hint.isdigit():
            base = hint.split(".")[0] if "." in hint and hint.split(".")[-1].isdigit() else hint
            base = "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in base)
            if not base or base[0].isdigit():
                base = None
        if base is None:
            while f"_{self.tmp}" in self.used:
                self.tmp += 1
            n = f"_{self.tmp}"
            self.tmp += 1
        elif base not in self.used:
            n = base
        else:
            k = 0
            while f"{base}{k}" in self.used:
                k += 1
            n = f"{base}{k}"
        self.used.add(n)
        return n

    def var(self, v):
        n = self.names.get(v.id)
        if n is None:
            if self._dry:                 # measuring only: do not hand out the name yet
                return _debug_name(v) or f"_{self.tmp}"
            n = self.names[v.id] = self.fresh(_debug_name(v))
        return n

    # -- header --------------------------------------------------------------------------
    def text(self, indent):
        fn = self.fn
        g = fn.graph
        inputs = list(g.inputs())
        params = []
        if fn.owner is not None:
            if len(inputs) > len(fn.arg_schema):      # a free function saved as a method
                self.names[inputs.pop(0).id] = fn.self_name
            self.used.add(fn.self_name)
            params.append(f"{fn.self_name}: {type_str(fn.owner, self.ctx)}" if self.in_class
                          else fn.self_name)
        for v, (name, t, has_def, default, _kw) in zip(inputs, fn.arg_schema):
            self.names[v.id] = name
            self.used.add(name)
            p = f"{name}: {type_str(t, self.ctx)}"
            if has_def:
                p += "=" + constant_str(default, self.ctx, t)
            params.append(p)
        ind = "  " * indent
        head = f"{ind}def {fn.name}(" + ",\n    ".join(params) + \
            f") -> {type_str(fn.return_type, self.ctx)}:\n"
        self.scan_block(g.block)
        self.hoist_long_strings(g.block, indent + 1)
        self.block(g.block, indent + 1)
        rets = g.outputs()
        self.split_long(rets, indent + 1)
        self.emit(indent + 1, "return " + self.tuple_text([self.expr(v) for v in rets])
                  if len(rets) != 1 else "return " + self.expr(rets[0]))
        return head + "".join(self.lines)

    def tuple_text(self, items):
        return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"

    def emit(self, depth, text):
        self.lines.append("  " * depth + text + "\n")

    # -- inlining (torch's reverse scan: a single-use value is written inside its use when
    #    nothing with an effect runs between the two) ---------------------------------------
    def can_inline(self, v):
        n = v.node
        if n is None or n.kind in ("prim::Param",) or not hasattr(n, "outputs"):
            return False
        if len(n.outputs) != 1 or len(v.uses) != 1 or n.blocks:
            return False
        user, offset = v.uses[0]
        dn = _debug_name(v)
        if dn and not dn.isdigit() and user.kind != "prim::Return":
            return False
        if user.kind == "prim::Loop" and offset >= 2:
            return False
        if n.kind in ("prim::isinstance", "prim::Uninitialized", "prim::fork"):
            return False
        if user.kind in ("prim::fork",):
            return False
        from ember.jit._printer_ops import NAMED_INPUTS
        if getattr(getattr(user, "fn", None), "__name__", "") in NAMED_INPUTS or \
                getattr(getattr(user, "op", None), "name", "").split(".")[0] in NAMED_INPUTS:
            return False       # written with an input twice (or a rank test): inputs named
        return True

    @staticmethod
    def _constant_like(n):
        return n is not None and getattr(n, "kind", None) == "prim::Constant"

    def _previous(self, block, idx):
        idx -= 1
        while idx >= 0 and self._constant_like(block.nodes[idx]):
            idx -= 1
        return idx

    def scan_block(self, block):
        pos = {id(n): k for k, n in enumerate(block.nodes)}
        point = self._previous(block, len(block.nodes))
        for v in reversed(block.returns):
            point = self.scan_value(block, pos, point, v)
        for k in range(len(block.nodes) - 1, -1, -1):
            n = block.nodes[k]
            if id(n) in self.inline:
                continue
            for b in n.blocks:
                self.scan_block(b)
            self.scan_inputs(block, pos, n, k)

    def scan_inputs(self, block, pos, n, k):
        point = self._previous(block, k)
        for v in reversed(n.inputs):
            point = self.scan_value(block, pos, point, v)
        return point

    def scan_value(self, block, pos, point, v):
        n = v.node
        k = pos.get(id(n))
        if k is not None and k == point and self.can_inline(v):
            self.inline.add(id(n))
            for b in n.blocks:
                self.scan_block(b)
            return self.scan_inputs(block, pos, n, k)
        return point

    # -- statements ------------------------------------------------------------------------
    def block(self, block, depth):
        start = len(self.lines)
        for n in block.nodes:
            if id(n) in self.inline or n.kind == "prim::Constant":
                continue
            self.node(n, depth)
        return len(self.lines) - start

    def split_long(self, values, depth):
        """torch's rule for long inlines: an inlined input whose text (its own long parts
        already split out) is long -- its length plus the indent reaches 40 -- gets a
        statement of its own; so does everything inlined that runs before it."""
        self._dry = True
        try:
            hoist = self._mark_long(values, depth)
        finally:
            self._dry = False
        if hoist:
            self._emit_hoisted(values, depth)

    def _mark_long(self, values, depth):
        flags, texts = [], []
        for v in values:
            if id(v.node) in self.inline:
                flags.append(self._mark_long(v.node.inputs, depth))
                texts.append(self.node_expr(v.node))
            else:
                flags.append(False)
                texts.append(None)
        cut = -1
        for k, v in enumerate(values):
            if texts[k] is not None and len(texts[k]) + 2 * depth >= 40:
                cut = max(cut, k)
            elif flags[k]:
                cut = max(cut, k - 1)
        for v in values[:cut + 1]:
            if id(v.node) in self.inline:
                self.inline.discard(id(v.node))
                self.hoisted.add(id(v.node))
        return cut >= 0 or any(flags)

    def _emit_hoisted(self, values, depth):
        for v in values:
            n = v.node
            if id(n) in self.inline or id(n) in self.hoisted:
                self._emit_hoisted(n.inputs, depth)
                if id(n) in self.hoisted:
                    self.hoisted.discard(id(n))
                    self.emit(depth, f"{self.var(n.outputs[0])} = {self.node_expr(n)}")

    def node(self, n, depth):
        k = n.kind
        self.split_long(n.inputs if k != "prim::Loop" else n.inputs[:2], depth)
        special = _STATEMENTS.get(k)
        if special is not None:
            special(self, n, depth)
            return
        text = self.node_expr(n)
        outs = n.outputs
        if k == "aten::append" and not outs:           # torch's append returns the list
            self.emit(depth, f"{self.fresh()} = {text}")
        elif not outs or (len(outs) == 1 and outs[0].type is T.NoneType and not outs[0].uses
                          and k != "aten::append" and n.kind.startswith("aten::")):
            self.emit(depth, text)
        elif len(outs) == 1:
            self.emit(depth, f"{self.var(outs[0])} = {text}")
        else:
            self.emit(depth, ", ".join(self.var(o) for o in outs) + f" = {text}")

    def assign(self, depth, targets, values, target_types, sequential=False):
        """``a = x``, or one tuple assignment so swaps stay right (``sequential``: one line
        each); a first assignment of another type declares it (``y : Optional[T] = x``)."""
        self.split_long(values, depth)
        pairs = []
        for t, v, tt in zip(targets, values, target_types):
            e = self.expr(v)
            if e == t:
                continue
            pairs.append((t, e, v.type != tt and tt))
        if len(pairs) == 1 or sequential:
            for t, e, tt in pairs:
                if tt and t not in self.declared:
                    self.emit(depth, f"{t} : {type_str(tt, self.ctx)} = {e}")
                else:
                    self.emit(depth, f"{t} = {e}")
        elif pairs:
            self.emit(depth, ", ".join(t for t, _, _ in pairs) + " = " + ", ".join(
                f"annotate({type_str(tt, self.ctx)}, {e})" if tt else e for _, e, tt in pairs))
        self.declared.update(targets)
        return len(pairs)

    def s_if(self, n, depth):
        outs = [self.var(o) for o in n.outputs]
        types = [o.type for o in n.outputs]
        self.emit(depth, f"if {self.expr(n.inputs[0])}:")
        for k, b in enumerate(n.blocks):
            if k == 1:
                self.emit(depth, "else:")
            wrote = self.block(b, depth + 1)
            wrote += self.assign(depth + 1, outs, b.returns, types)
            if not wrote:
                self.emit(depth + 1, "pass")

    def s_loop(self, n, depth):
        trip, cond, init = n.inputs[0], n.inputs[1], n.inputs[2:]
        body = n.blocks[0]
        idx, params = body.params[0], body.params[1:]
        names = []
        for o, p in zip(n.outputs, params):
            name = self.var(o)
            self.names[p.id] = name
            names.append(name)
        types = [p.type for p in params]
        self.assign(depth, names, init, types, sequential=True)
        body_cond, carried = body.returns[0], list(body.returns[1:])
        if trip.constant() == _MAX_TRIP:
            c = self.fresh()
            self.emit(depth, f"{c} = {self.expr(cond)}")
            counter = None
            if idx.uses:
                counter = self.var(idx)
                self.emit(depth, f"{counter} = 0")
            self.emit(depth, f"while {c}:")
            self.block(body, depth + 1)
            self.assign(depth + 1, [c] + names, [body_cond] + carried,
                        [T.BoolType] + types)
            if counter is not None:
                self.emit(depth + 1, f"{counter} = torch.add({counter}, 1)")
            return
        d = depth
        if cond.constant() is not True:
            self.emit(depth, f"if {self.expr(cond)}:")
            d += 1
        i = self.var(idx)
        self.emit(d, f"for {i} in range({self.expr(trip)}):")
        wrote = self.block(body, d + 1)
        if body_cond.constant() is not True:
            c = self.fresh()
            wrote += self.assign(d + 1, [c] + names, [body_cond] + carried,
                                 [T.BoolType] + types)
            self.emit(d + 1, f"if torch.__not__({c}):")
            self.emit(d + 2, "break")
        else:
            wrote += self.assign(d + 1, names, carried, types)
        if not wrote:
            self.emit(d + 1, "pass")

    def s_with(self, n, depth):
        import ember
        fn = n.fn
        if fn in (ember.no_grad, getattr(ember, "enable_grad", None)) and not n.inputs:
            q = f"__torch__.torch.autograd.grad_mode.{fn.__name__}"
            self.ctx.sources.setdefault(q, _grad_mode_class(fn.__name__))
            obj = self.fresh()
            self.emit(depth, f"{obj} = {q}.__new__({q})")
            self.emit(depth, f"{self.fresh()} = ({obj}).__init__()")
            self.emit(depth, f"with {obj}:")
        else:
            raise NotImplementedError(f"ember.jit.save: 'with {getattr(fn, '__name__', fn)}' "
                                      f"has no TorchScript form")
        wrote = self.block(n.blocks[0], depth + 1)
        wrote += self.assign(depth + 1, [self.var(o) for o in n.outputs], n.blocks[0].returns,
                             [o.type for o in n.outputs])
        if not wrote:
            self.emit(depth + 1, "pass")

    def s_setattr(self, n, depth):
        obj, v = n.inputs
        self.emit(depth, f"{self.expr(obj)}.{n.attrs['name']} = {self.expr(v)}")

    def s_index_put(self, n, depth):
        target, value, *rest = n.inputs
        self.emit(depth, f"{self.expr(target)}[{self.index_text(n.attrs['_index'], rest)}] = "
                         f"{self.expr(value)}")

    def s_set_item(self, n, depth):
        self.emit(depth, "torch._set_item(" + ", ".join(self.expr(v) for v in n.inputs) + ")")

    def s_unpack(self, n, depth):
        outs = [self.var(o) for o in n.outputs]
        self.emit(depth, ", ".join(outs) + f", = {self.expr(n.inputs[0])}")

    def s_raise(self, n, depth):
        ins = list(n.inputs)
        if len(ins) == 2 and ins[1].constant() == "builtins.AssertionError":
            ins = ins[:1]          # torch writes asserts without the class
        args = ", ".join(self.expr(v) for v in ins)
        self.emit(depth, f"ops.prim.RaiseException({args})")

    def s_fork(self, n, depth):
        """torch's form: a nested ``__forked_function`` closure handed to ``fork``."""
        from ember.jit._script import Function
        fn = n.fn
        if not isinstance(fn, Function):
            raise NotImplementedError("ember.jit.save: fork of a non-scripted callable")
        if getattr(fn, "closure", False):
            return self.fork_closure(n, fn, depth)
        args = [self.expr(v) for v in n.inputs]
        if fn.owner is not None:
            call = f"({args[0]}).{fn.name}(" + "".join(a + ", " for a in args[1:]) + ")"
        else:
            call = f"{self.ctx.function_name(fn)}(" + "".join(a + ", " for a in args) + ")"
        name = self.fresh("__forked_function")     # torch numbers later ones: ...0, ...1
        self.emit(depth, f"def {name}():")
        if len(call) + 2 * (depth + 1) >= 40:          # torch's long-inline rule
            tmp = self.fresh()
            self.emit(depth + 1, f"{tmp} = {call}")
            call = tmp
        self.emit(depth + 1, f"return {call}")
        self.emit(depth, f"{self.var(n.outputs[0])} = fork({name})")

    def fork_closure(self, n, fn, depth):
        """A forked nested def (a loaded archive's ``__forked_function``): its body written
        inside this function, its inputs named by the enclosing values they capture."""
        sub = _FunctionPrinter(fn, self.ctx, self.in_class)
        sub.used = self.used                # inner names must not shadow the outer ones
        for inner, outer in zip(fn.graph.inputs(), n.inputs):
            text = self.expr(outer)
            if not text.isidentifier():
                name = self.fresh()
                self.emit(depth, f"{name} = {text}")
                text = name
            sub.names[inner.id] = text
        fname = self.fresh("__forked_function")
        self.emit(depth, f"def {fname}():")
        g = fn.graph
        sub.scan_block(g.block)
        sub.hoist_long_strings(g.block, depth + 1)
        sub.block(g.block, depth + 1)
        rets = g.outputs()
        sub.split_long(rets, depth + 1)
        sub.emit(depth + 1, "return " + sub.expr(rets[0]))
        self.lines.extend(sub.lines)
        self.emit(depth, f"{self.var(n.outputs[0])} = fork({fname})")

    def s_print(self, n, depth):
        self.emit(depth, "print(" + ", ".join(self.expr(v) for v in n.inputs) + ")")

    # -- expressions -----------------------------------------------------------------------
    def hoist_long_strings(self, block, depth):
        """torch's long-line rule on string constants: one used where its literal reaches
        40 columns is assigned at the top of the function (``_0 = "..."``)."""
        def walk(b, d):
            for n in b.nodes:
                for v in n.inputs:
                    c = v.constant()
                    if isinstance(c, str) and id(v.node) not in self.const_names and \
                            len(_str_literal(c)) + 2 * d >= 40 and n.kind != "prim::Constant":
                        name = self.fresh()
                        self.const_names[id(v.node)] = name
                        self.emit(depth, f"{name} = {_str_literal(c)}")
                for sub in n.blocks:
                    walk(sub, d + 1)
        walk(block, depth)

    def expr(self, v):
        n = v.node
        if self._constant_like(n):
            hoisted = self.const_names.get(id(n))
            return hoisted if hoisted is not None else self.constant_value(v)
        if id(n) in self.inline:
            return self.node_expr(n)
        return self.var(v)

    def constant_value(self, v):
        n = v.node
        if isinstance(v.type, T.FunctionType):
            return self.ctx.function_name(v.type.fn)
        val = n.attrs.get("value")
        if "value" not in n.attrs:
            val = None
        return constant_str(val, self.ctx, v.type)

    def arg(self, v):
        """An input as an _Expr (text + constant value)."""
        c = v.constant()
        return _Expr(self.expr(v), c, v.type)

    def node_expr(self, n):
        k = n.kind
        special = _EXPRESSIONS.get(k)
        if special is not None:
            return special(self, n)
        if "_index" in n.attrs:
            base, *rest = n.inputs
            calls = self.index_calls(n.attrs["_index"], base, rest)
            if calls is not None:
                return calls
            return f"{subscript_base(self.expr(base))}[{self.index_text(n.attrs['_index'], rest)}]"
        if n.op is not None:
            return self.op_call(n)
        if n.fn is not None:
            from ember.jit import _printer_ops
            return _printer_ops.fn_call(self, n)
        raise NotImplementedError(f"ember.jit.save: no TorchScript form for the node {k}")

    def call(self, name, args, kwargs=()):
        """``torch.name(args..., k=v)`` (args: texts)."""
        self.ctx.note_op(name)
        parts = list(args) + [f"{k}={v}" for k, v in kwargs]
        return f"torch.{name}(" + ", ".join(parts) + ")"

    def op_call(self, n):
        from ember.jit._printer_ops import public_name
        from ember.jit._namespaced import printed
        text = printed(self, n)
        if text is not None:        # ops.quantized.add(...)
            return text
        schema = n.op.schema
        args = [self.arg(v) for v in n.inputs]
        name = n.kind.split("::", 1)[1]
        if not public_name(None, name, check=True):
            name = n.op.name.split(".")[0]
        from ember.jit._printer_ops import INTERNAL_OPS
        internal = INTERNAL_OPS.get(name)
        if internal is not None:
            return internal(self, args)
        return self.schema_call(name, schema.args, args)

    def schema_call(self, name, sargs, args):
        """A call with schema-ordered arguments: trailing defaults dropped, kwarg-only ones
        written ``name=value`` when not their default."""
        pos, kws = [], []
        self._int_overload = name in _INT_OVERLOADS
        if name == "norm":            # Frobenius norm: the 2-norm over the same dims
            args = [_Expr("2", 2) if a.name == "p" and e.const == "fro" else e
                    for a, e in zip(sargs, args)]
            if any(a.name == "p" and e.const == "nuc" for a, e in zip(sargs, args)):
                raise NotImplementedError("ember.jit.save: the nuclear norm")
        for a, e in zip(sargs, args):
            if a.kwarg_only:
                if not _is_default(e, a):
                    kws.append((a.name, self.list_text(e, a)))
            else:
                pos.append((a, e))
        while pos and _is_default(pos[-1][1], pos[-1][0]):
            pos.pop()
        return self.call(name, [self.list_text(e, a) for a, e in pos], kws)

    def list_text(self, e, a):
        """Constant tuples passed where a list is expected are written as lists."""
        if getattr(a, "is_list", False) and isinstance(e.const, tuple):
            return constant_str(list(e.const), self.ctx, T.ListType(T.IntType))
        if getattr(a, "is_list", False) and a.type in ("int", "SymInt") and \
                e.type in (T.IntType,) and not self._int_overload:
            return f"[{e.text}]"
        return e.text

    def index_calls(self, tmpl, base, rest):
        """``x[0, 1:]`` as torch writes it, ``torch.slice(torch.select(x, 0, 0), 0, 1)``:
        integers select, slices slice, None unsqueezes, left to right (None when the index
        holds an Ellipsis, a tensor or a starred tuple: then it is written as a subscript)."""
        items = [tmpl] if isinstance(tmpl, tuple) and tmpl and isinstance(tmpl[0], str) else \
            list(tmpl) if isinstance(tmpl, tuple) else [tmpl]
        for t in items:
            if t is Ellipsis or (isinstance(t, tuple) and t[0] == "splat"):
                return None
            if isinstance(t, tuple) and t[0] == "value" and \
                    rest[t[1] - 1].type is not T.IntType:
                return None
        text, dim = self.expr(base), 0
        for t in items:
            if t is None:
                text = self.call("unsqueeze", [text, str(dim)])
                dim += 1
            elif t[0] == "value":
                text = self.call("select", [text, str(dim), self.expr(rest[t[1] - 1])])
            else:
                parts = [None if p is None else rest[p - 1] for p in t[1:]]
                args = [text, str(dim)] + ["None" if p is None else self.expr(p)
                                           for p in parts[:2]]
                if parts[2] is not None and parts[2].constant() != 1:
                    args.append(self.expr(parts[2]))
                while len(args) > 1 and args[-1] == "None" and len(args) > 2:
                    args.pop()
                if len(args) == 2 and dim == 0:
                    args.pop()
                text = self.call("slice", args)
                dim += 1
        return text

    def e_basic_index(self, n):
        """A traced basic index (``aten::_basic_index``, its index a constant list of ints,
        slices, None and Ellipsis) written as torch's trace writes it: integers select,
        slices slice, None unsqueezes, left to right (``h[-1]``: ``torch.select(h, 0, -1)``)."""
        base, idx = n.inputs
        items = idx.constant()
        items = list(items) if isinstance(items, (list, tuple)) else [items]
        if Ellipsis in items:
            k = items.index(Ellipsis)
            rest = items[k + 1:]
            if Ellipsis in rest:
                raise NotImplementedError("ember.jit.save: an index with two Ellipses")
            if rest:                    # (a trailing Ellipsis is no step)
                nd = _traced_ndim(base.type)
                if nd is None:
                    raise NotImplementedError("ember.jit.save: an Ellipsis index of a tensor "
                                              "of unknown rank")
                used = sum(1 for t in items if t is not None and t is not Ellipsis)
                items = items[:k] + [slice(None)] * (nd - used) + rest
            else:
                items = items[:k]
        text, dim = self.expr(base), 0
        for t in items:
            if t is None:
                text = self.call("unsqueeze", [text, str(dim)])
                dim += 1
            elif isinstance(t, slice):
                args = [text, str(dim)] + ["None" if p is None else constant_str(p, self.ctx)
                                           for p in (t.start, t.stop)]
                if t.step is not None and t.step != 1:
                    args.append(constant_str(t.step, self.ctx))
                while len(args) > 2 and args[-1] == "None":
                    args.pop()
                if len(args) == 2 and dim == 0:
                    args.pop()
                text = self.call("slice", args)
                dim += 1
            elif isinstance(t, int) and not isinstance(t, bool):
                text = self.call("select", [text, str(dim), str(t)])
            else:
                raise NotImplementedError(f"ember.jit.save: no TorchScript form for the index "
                                          f"{t!r}")
        return text

    def index_text(self, tmpl, rest):
        def one(t):
            if t is None:
                return "None"
            if t is Ellipsis:
                return "..."
            if t[0] == "slice":
                parts = ["" if p is None else self.expr(rest[p - 1]) for p in t[1:]]
                s = f"{parts[0]}:{parts[1]}"
                return s + (f":{parts[2]}" if parts[2] else "")
            if t[0] == "splat":
                raise NotImplementedError("ember.jit.save: indexing with a starred tuple")
            return self.expr(rest[t[1] - 1])

        if isinstance(tmpl, tuple) and tmpl and isinstance(tmpl[0], str):
            return one(tmpl)
        if isinstance(tmpl, tuple):
            parts = [one(t) for t in tmpl]
            return ", ".join(parts) + ("," if len(parts) == 1 else "") if parts else "()"
        return one(tmpl)

    # prim expressions
    def e_getattr(self, n):
        obj = self.expr(n.inputs[0])
        name = n.attrs["name"]
        if name.isidentifier() and not keyword.iskeyword(name):
            return f"{obj}.{name}"
        return f"getattr({obj}, {_str_literal(name)})"

    def e_call_method(self, n):
        obj, *args = n.inputs
        return f"({self.expr(obj)}).{n.attrs['name']}(" + "".join(
            self.expr(a) + ", " for a in args) + ")"

    def e_call_function(self, n):
        name = self.ctx.function_name(n.fn)
        return f"{name}(" + "".join(self.expr(a) + ", " for a in n.inputs) + ")"

    def e_tuple(self, n):
        t = n.outputs[0].type
        items = [self.expr(v) for v in n.inputs]
        if isinstance(t, T.TupleType) and t.qualname:
            return f"{type_str(t, self.ctx)}(" + ", ".join(items) + ")"
        return self.tuple_text(items)

    def e_list(self, n):
        if not n.inputs:
            return f"annotate({type_str(n.outputs[0].type, self.ctx)}, [])"
        return "[" + ", ".join(self.expr(v) for v in n.inputs) + "]"

    def e_dict(self, n):
        if not n.inputs:
            return f"annotate({type_str(n.outputs[0].type, self.ctx)}, {{}})"
        ins = [self.expr(v) for v in n.inputs]
        return "{" + ", ".join(f"{ins[k]}: {ins[k + 1]}" for k in range(0, len(ins), 2)) + "}"

    def e_tuple_index(self, n):
        return f"{subscript_base(self.expr(n.inputs[0]))}[{self.expr(n.inputs[1])}]"

    def e_unchecked_cast(self, n):
        if self.expr(n.inputs[0]) == "None":
            # torch's loader fails on a refinement of the None constant ("required keyword
            # attribute 'value' is undefined"): annotate it instead, or, cast to a type None is
            # not (a branch after a raise), an uninitialized value
            t = n.outputs[0].type
            if isinstance(t, T.OptionalType) or t is T.NoneType:
                return f"annotate({type_str(t, self.ctx)}, None)"
            return f"uninitialized({type_str(t, self.ctx)})"
        return f"unchecked_cast({type_str(n.outputs[0].type, self.ctx)}, {self.expr(n.inputs[0])})"

    def e_uninitialized(self, n):
        if n.outputs[0].type is T.NoneType:
            return "None"          # torch has no uninitialized None (no value to leave out)
        return f"uninitialized({type_str(n.outputs[0].type, self.ctx)})"

    def e_enum_attr(self, n):
        """``prim::EnumValue``/``EnumName``: ``(x).value`` / ``(x).name``."""
        return f"({self.expr(n.inputs[0])}).{'value' if n.kind == 'prim::EnumValue' else 'name'}"

    def e_tensor_attr(self, n):
        x = self.expr(n.inputs[0])
        name = n.attrs.get("name") or n.kind.split("::")[1]
        if name == "shape":
            return f"torch.size({x})"
        if name == "ndim":
            return f"torch.dim({x})"
        if name == "T":
            return f"torch.numpy_T({x})"
        if name == "mT":
            return f"torch.mT({x})"
        if name in ("real", "imag"):
            return f"torch.{name}({x})"
        return f"ops.prim.{name}({x})"

    def e_create_object(self, n):
        q = type_str(n.outputs[0].type, self.ctx)
        return f"{q}.__new__({q})"

    def e_prim_fn(self, n):
        return f"ops.prim.{n.kind.split('::')[1]}(" + ", ".join(
            self.expr(v) for v in n.inputs) + ")"

    def e_wait(self, n):
        return f"torch.wait({self.expr(n.inputs[0])})"

    def e_isinstance(self, n):
        types = [_graph_type_annotation(t) for t in n.attrs.get("types", ())]
        target = types[0] if len(types) == 1 else "(" + ", ".join(types) + ")"
        return f"isinstance({self.expr(n.inputs[0])}, {target})"

    def e_python_op(self, n):
        name = n.attrs.get("name", "python_function").split(".")[-1]
        if not self.ctx.archive:                      # .code shows it, as torch does
            return f"^{name}()(" + ", ".join(self.expr(v) for v in n.inputs) + ")"
        where = f":\n{n.source.traceback_compile()}" if n.source is not None else ""
        raise RuntimeError(f"\nCould not export Python function call '{name}'. Remove calls to "
                           f"Python functions before export. Did you forget to add @script or "
                           f"@script_method annotation? If this is a nn.ModuleList, add it to "
                           f"__constants__{where}")

    def e_unsupported(self, n):
        what = n.attrs.get("name", n.kind)
        raise NotImplementedError(f"ember.jit.save: {n.kind} ({what}) has no TorchScript "
                                  f"form that torch can load")


def _debug_name(v):
    """A value's variable name; a refinement (``unchecked_cast``) is named after what it
    refines, as torch names it."""
    kind = getattr(v.node, "kind", None)
    if v.debug_name is None and kind == "prim::unchecked_cast":
        return v.node.inputs[0].debug_name
    if v.debug_name is None and kind == "prim::GetAttr":
        return v.node.attrs["name"]              # torch names an attribute read after it
    return v.debug_name


def _graph_type_annotation(s):
    """A type's graph spelling (``int[]``, ``Tensor?``, ``Dict(str, int)``, ``(int, str)``)
    as an annotation (``List[int]``...)."""
    s = s.strip()
    if s.endswith("[]"):
        return f"List[{_graph_type_annotation(s[:-2])}]"
    if s.endswith("?"):
        return f"Optional[{_graph_type_annotation(s[:-1])}]"
    if s.startswith("Dict(") and s.endswith(")"):
        k, v = _split_top(s[5:-1])
        return f"Dict[{_graph_type_annotation(k)}, {_graph_type_annotation(v)}]"
    if s.startswith("(") and s.endswith(")"):
        parts = _split_top(s[1:-1])
        return "Tuple[" + ", ".join(_graph_type_annotation(x) for x in parts) + "]"
    if s in ("Tensor", "int", "float", "bool", "str", "complex", "NoneType", "Device", "Any"):
        return s
    raise NotImplementedError(f"ember.jit.save: isinstance against {s}")


def _split_top(s):
    """Split ``a, (b, c), d`` at its top-level commas."""
    out, depth, cur = [], 0, []
    for ch in s:
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        if ch == "," and depth == 0:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    out.append("".join(cur))
    return [x.strip() for x in out if x.strip()]


def subscript_base(text):
    """``x[0]`` but ``(torch.size(x))[0]``, as torch writes a subscripted expression."""
    return text if text.replace(".", "").replace("_", "a").isalnum() else f"({text})"


def _grad_mode_class(name):
    """torch's scripted ``no_grad`` / ``enable_grad`` context-manager classes."""
    q = f"__torch__.torch.autograd.grad_mode.{name}"
    on = "True" if name == "enable_grad" else "False"
    return (f"class {name}:\n  prev : bool\n"
            f"  def __enter__(self: {q}) -> NoneType:\n"
            f"    self.prev = torch.is_grad_enabled()\n"
            f"    torch.set_grad_enabled({on})\n    return None\n"
            f"  def __exit__(self: {q},\n    exc_type: Any,\n    exc_value: Any,\n"
            f"    traceback: Any) -> NoneType:\n    prev = self.prev\n"
            f"    torch.set_grad_enabled(prev)\n    return None\n"
            f"  def __init__(self: {q}) -> NoneType:\n    self.prev = False\n    return None\n")


def _is_default(e, a):
    if not getattr(a, "has_default", False):
        return False
    c, d = e.const, a.default
    if c is NOT_CONSTANT:
        return False
    if isinstance(d, (list, tuple)) and isinstance(c, (list, tuple)):
        return list(c) == list(d)
    if isinstance(d, (list, tuple)) and isinstance(c, int) and not isinstance(c, bool):
        return bool(d) and all(x == c for x in d)
    if c is None or d is None:
        return c is None and d is None
    if isinstance(c, bool) != isinstance(d, bool):
        return False
    try:
        return type(c) in (int, float, bool, str) and c == d
    except Exception:
        return False


_STATEMENTS = {
    "prim::If": _FunctionPrinter.s_if,
    "prim::Loop": _FunctionPrinter.s_loop,
    "prim::With": _FunctionPrinter.s_with,
    "prim::SetAttr": _FunctionPrinter.s_setattr,
    "aten::index_put_": _FunctionPrinter.s_index_put,
    "aten::_set_item": _FunctionPrinter.s_set_item,
    "prim::TupleUnpack": _FunctionPrinter.s_unpack,
    "prim::ListUnpack": _FunctionPrinter.s_unpack,
    "prim::RaiseException": _FunctionPrinter.s_raise,
    "prim::Print": _FunctionPrinter.s_print,
    "prim::fork": _FunctionPrinter.s_fork,
}

def _traced_ndim(t):
    """The rank a traced tensor type tells (``Float(3, 4, strides=[4, 1], ...)``), or None."""
    text = getattr(t, "text", None)
    if text is None:
        return None
    if "strides=[" in text:
        inner = text.split("strides=[", 1)[1].split("]", 1)[0]
        return len([p for p in inner.split(",") if p.strip()])
    return 0 if "(requires_grad" in text else None


_EXPRESSIONS = {
    "aten::_basic_index": _FunctionPrinter.e_basic_index,
    "prim::GetAttr": _FunctionPrinter.e_getattr,
    "prim::CallMethod": _FunctionPrinter.e_call_method,
    "prim::CallFunction": _FunctionPrinter.e_call_function,
    "prim::TupleConstruct": _FunctionPrinter.e_tuple,
    "prim::ListConstruct": _FunctionPrinter.e_list,
    "prim::DictConstruct": _FunctionPrinter.e_dict,
    "prim::TupleIndex": _FunctionPrinter.e_tuple_index,
    "prim::unchecked_cast": _FunctionPrinter.e_unchecked_cast,
    "prim::Uninitialized": _FunctionPrinter.e_uninitialized,
    "prim::TensorAttr": _FunctionPrinter.e_tensor_attr,
    "prim::NumAttr": _FunctionPrinter.e_tensor_attr,
    "prim::EnumValue": _FunctionPrinter.e_enum_attr,
    "prim::EnumName": _FunctionPrinter.e_enum_attr,
    "prim::dtype": _FunctionPrinter.e_tensor_attr,
    "prim::device": _FunctionPrinter.e_tensor_attr,
    "prim::shape": _FunctionPrinter.e_tensor_attr,
    "prim::CreateObject": _FunctionPrinter.e_create_object,
    "prim::min": _FunctionPrinter.e_prim_fn,
    "prim::abs": _FunctionPrinter.e_prim_fn,
    "prim::PythonOp": _FunctionPrinter.e_python_op,
    "prim::CallAny": _FunctionPrinter.e_unsupported,
    "aten::wait": _FunctionPrinter.e_wait,
    "prim::isinstance": _FunctionPrinter.e_isinstance,
    "prim::max": _FunctionPrinter.e_prim_fn,
}


# ----------------------------------------------------------------------------- classes

def class_code(ct, ctx, name, module=None):
    """The body torch writes for a scripted module's class in an archive's ``code/``:
    ``__parameters__``/``__buffers__``, attribute declarations, ``Final`` constants, then
    the compiled methods. ``name`` is the class's last name component."""
    from ember.jit._script import Function
    lines = [f"class {name}(Module):\n"]
    slots = (ct.constants or {}).get("$slots", {})
    params = [a for a, s in slots.items() if s == "_parameters"]
    buffers = [a for a, s in slots.items() if s == "_buffers"]
    lines.append("  __parameters__ = [" + "".join(f'"{p}", ' for p in params) + "]\n")
    lines.append("  __buffers__ = [" + "".join(f'"{b}", ' for b in buffers) + "]\n")
    rank = {"_parameters": 0, "_buffers": 1, None: 3, "_modules": 4}
    order = sorted(ct.attributes.items(), key=lambda kv: 2 if kv[0] == "training" else
                   rank.get(slots.get(kv[0]), 3))
    for attr, t in order:
        ts = type_str(t, ctx)
        if attr.isidentifier() and not keyword.iskeyword(attr):
            lines.append(f"  {attr} : {ts}\n")
        else:
            lines.append(f"  __annotations__[{_str_literal(attr)}] = {ts}\n")
    for cname, v in (ct.constants or {}).items():
        if cname.startswith("$"):
            continue
        try:
            t = T.type_of_value(v)
        except T.AnnotationError:
            raise NotImplementedError(f"ember.jit.save: the constant {cname} = {v!r} has no "
                                      f"TorchScript type") from None
        lines.append(f"  {cname} : Final[{type_str(t, ctx)}] = {constant_str(v, ctx, t)}\n")
    for mname, fn in (ct.methods or {}).items():
        if isinstance(fn, Function):
            lines.append(method_code(fn, ctx, 1))
    return "".join(lines)


def plain_class_code(ct, ctx, name):
    """A scripted (non-module) class: attribute declarations and methods."""
    from ember.jit._script import Function
    lines = [f"class {name}:\n"]
    for attr, t in (ct.attributes or {}).items():
        lines.append(f"  {attr} : {type_str(t, ctx)}\n")
    for mname, fn in (ct.methods or {}).items():
        if isinstance(fn, Function):
            lines.append(method_code(fn, ctx, 1))
    if len(lines) == 1:
        lines.append("  pass\n")
    return "".join(lines)


def named_tuple_code(t, ctx, name):
    lines = [f"class {name}(NamedTuple):\n"]
    for f, e in zip(t.names, t.elems):
        lines.append(f"  {f} : {type_str(e, ctx)}\n")
    return "".join(lines)

