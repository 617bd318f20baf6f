"""ember IR nodes -> torch's operators: ``(name, overload, argument list)``.

An argument is a graph Value or a ``Literal`` (a default the node left out). Nodes calling
``ember.nn.functional`` functions are bound by parameter name and reordered to torch's
ATen schema; op-record nodes use their schema with torch's overload names (``.Scalar`` when
the other operand is a number).
"""
from __future__ import annotations

import inspect

from ember.jit import _types as T
from ember.jit._ir import NOT_CONSTANT, Value


class Literal:
    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value


class IntList:
    """An ``int[]`` argument built at run time from int values (``x.view(x.size(0), -1)``)."""
    __slots__ = ("values",)

    def __init__(self, values):
        self.values = list(values)


# kind -> (torch overload, [(ember parameter, torch default, int-list length or 0)...],
#          inplace name when ``inplace`` is True)
_FUNCTIONAL = {
    "aten::conv2d": ("", [("input", None, 0), ("weight", None, 0), ("bias", None, 0),
                          ("stride", 1, 2), ("padding", 0, 2), ("dilation", 1, 2),
                          ("groups", 1, 0)], None),
    "aten::linear": ("", [("input", None, 0), ("weight", None, 0), ("bias", None, 0)], None),
    "aten::batch_norm": ("", [("input", None, 0), ("weight", None, 0), ("bias", None, 0),
                              ("running_mean", None, 0), ("running_var", None, 0),
                              ("training", False, 0), ("momentum", 0.1, 0), ("eps", 1e-5, 0),
                              ("cudnn_enabled", True, 0)], None),
    "aten::relu": ("", [("input", None, 0)], "aten::relu_"),
    "aten::relu6": ("", [("input", None, 0)], "aten::relu6_"),
    "aten::hardtanh": ("", [("input", None, 0), ("min_val", -1.0, 0), ("max_val", 1.0, 0)],
                       "aten::hardtanh_"),
    "aten::hardswish": ("", [("input", None, 0)], "aten::hardswish_"),
    "aten::hardsigmoid": ("", [("input", None, 0)], "aten::hardsigmoid_"),
    "aten::max_pool2d": ("", [("input", None, 0), ("kernel_size", None, 2), ("stride", [], 2),
                              ("padding", 0, 2), ("dilation", 1, 2), ("ceil_mode", False, 0)],
                         None),
    "aten::avg_pool2d": ("", [("input", None, 0), ("kernel_size", None, 2), ("stride", [], 2),
                              ("padding", 0, 2), ("ceil_mode", False, 0),
                              ("count_include_pad", True, 0), ("divisor_override", None, 0)],
                         None),
    "aten::adaptive_avg_pool2d": ("", [("input", None, 0), ("output_size", None, 2)], None),
    "aten::dropout": ("", [("input", None, 0), ("p", 0.5, 0), ("training", True, 0)], None),
    "aten::softmax": ("int", [("input", None, 0), ("dim", None, 0), ("dtype", None, 0)], None),
    "aten::flatten": ("using_ints", [("input", None, 0), ("start_dim", 0, 0),
                                     ("end_dim", -1, 0)], None),
    "aten::cat": ("", [("tensors", None, 0), ("dim", 0, 0)], None),
    "aten::stack": ("", [("tensors", None, 0), ("dim", 0, 0)], None),
    "aten::gelu": ("", [("input", None, 0), ("approximate", "none", 0)], None),
    "aten::pad": ("", [("input", None, 0), ("pad", None, 0), ("mode", "constant", 0),
                       ("value", None, 0)], None),
}
_ALIASES = {"aten::_cat_front": "aten::cat"}
# ember's internal ops (traced graphs record them) -> torch's ops of the same schema
_INTERNAL = {"aten::_batch_norm_impl": "aten::native_batch_norm",
             "aten::_max_pool_with_indices": "aten::max_pool2d_with_indices"}

_SCALAR_OVERLOAD = {"add", "sub", "mul", "div", "gt", "lt", "ge", "le", "eq", "ne", "add_",
                    "sub_", "mul_", "div_", "remainder", "pow", "rsub"}

_SCALAR_KINDS = {"int": T.IntType, "float": T.FloatType, "bool": T.BoolType}


def is_tensor(t):
    """Tensor types, refined ones (traced graphs' ``Float(1, 3, ...)``) included."""
    return t is T.TensorType or type(t).__name__.endswith("TensorType")


def _scalar_name(t):
    for name, st in _SCALAR_KINDS.items():
        if t is st:
            return name
    return None


def _int_list(v, n):
    if isinstance(v, int) and not isinstance(v, bool):
        return [v] * n
    if isinstance(v, tuple):
        return list(v)
    return v


def _bind(node):
    sig = inspect.signature(node.fn)
    nkw = len(node.kwnames)
    pos = node.inputs[:len(node.inputs) - nkw] if nkw else node.inputs
    return dict(sig.bind_partial(*pos, **dict(zip(node.kwnames, node.inputs[len(node.inputs) - nkw:]))).arguments), sig


def _functional(node, kind):
    overload, params, inplace_kind = _FUNCTIONAL[kind]
    bound, sig = _bind(node)
    args = []
    for name, default, n in params:
        v = bound.get(name)
        if v is None:
            p = sig.parameters.get(name)
            value = p.default if p is not None and p.default is not inspect.Parameter.empty \
                else default
            if n and value is None:
                value = default
            args.append(Literal(_int_list(value, n) if n else value))
            continue
        if n and _is_const(v) and v.constant() is not None:
            args.append(Literal(_int_list(v.constant(), n)))
        else:
            args.append(v)
    name = kind
    ip = bound.get("inplace")
    if inplace_kind and ip is not None and _is_const(ip) and ip.constant():
        name = inplace_kind
    return name, overload, args


# Tensor.float() ... -> torch's to.dtype with these ScalarType codes
_CONVERSIONS = {"aten::byte": 0, "aten::char": 1, "aten::short": 2, "aten::int": 3,
                "aten::long": 4, "aten::half": 5, "aten::float": 6, "aten::double": 7,
                "aten::bool": 11}
_SIZE_METHODS = {"aten::flip", "aten::new_zeros", "aten::new_ones", "aten::view",
                 "aten::reshape", "aten::permute", "aten::expand", "aten::repeat", "aten::tile"}
_METHODS = {"aten::contiguous", "aten::chunk", "aten::split", "aten::size", "aten::select",
            "aten::max", "aten::min",
            *_SIZE_METHODS, *_CONVERSIONS}


def _int_args(vals):
    """Varargs ints (constants) or one int[] value -> a list argument."""
    if len(vals) == 1 and not _scalar_name(vals[0].type):
        return vals[0]
    if all(_is_const(v) and type(v.constant()) is int for v in vals):
        return Literal([v.constant() for v in vals])
    if all(_scalar_name(v.type) == "int" for v in vals):
        return IntList(vals)
    return None


def _method(node, kind):
    """Tensor methods ember runs as Python functions, as torch's operators."""
    x, rest = node.inputs[0], list(node.inputs[1:])
    if kind in _CONVERSIONS:
        return ("aten::to", "dtype", [x, Literal(_CONVERSIONS[kind])]) if not rest else None
    if kind == "aten::contiguous":
        return (kind, "", [x]) if not rest else None
    if kind == "aten::select" and len(rest) in (1, 2):     # x[i]: dim 0
        return kind, "int", [x] + ([Literal(0)] if len(rest) == 1 else []) + rest
    if kind in ("aten::max", "aten::min") and len(rest) in (1, 2) and \
            _scalar_name(rest[0].type) == "int":           # x.max(dim[, keepdim]): a tuple
        return kind, "dim", [x] + rest
    if kind == "aten::size" and len(rest) <= 1:
        return kind, ("int" if rest else ""), [x] + rest
    if kind in _SIZE_METHODS:            # varargs ints or one list: torch's int[] argument
        arg = _int_args(rest) if rest else None
        return None if arg is None else (kind, "", [x, arg])
    if kind == "aten::chunk" and len(rest) in (1, 2):
        return kind, "", [x] + rest + ([Literal(0)] if len(rest) == 1 else [])
    if kind == "aten::split" and len(rest) in (1, 2):
        overload = "Tensor" if _scalar_name(rest[0].type) == "int" else "sizes"
        return "aten::split", overload, [x] + rest + ([Literal(0)] if len(rest) == 1 else [])
    return None


def _reduction_or_where(node, kind):
    """torch.where / Tensor.where (torch's ``where.self(condition, self, other)``), and var /
    std / norm in their plain forms (constant dims, default correction and p)."""
    bound, _ = _bind(node)
    if kind == "aten::where":
        if "self" in bound:                             # x.where(condition, other)
            args = [bound.get("condition"), bound["self"], bound.get("other")]
        else:
            args = [bound.get("condition"), bound.get("input"), bound.get("other")]
        return (kind, "self", args) if all(a is not None for a in args) else None

    def const(name, default=None):
        v = bound.get(name)
        if v is None:
            return default
        return v.constant() if _is_const(v) else NOT_CONSTANT
    x = bound.get("input")
    if kind == "aten::norm":
        p = const("p", "fro")
        if const("dim") is None and not const("keepdim", False) and const("dtype") is None \
                and p in ("fro", 2, 2.0):
            return kind, "Scalar", [x, Literal(2)]
        return None
    if const("correction") is not None or const("unbiased") not in (None, True, False):
        return None
    unbiased = const("unbiased")
    unbiased = True if unbiased is None else unbiased
    dim, keepdim = const("dim"), const("keepdim", False)
    if dim is NOT_CONSTANT or keepdim is NOT_CONSTANT:
        return None
    if dim is None and not keepdim:
        return kind, "", [x, Literal(unbiased)]
    dims = [dim] if isinstance(dim, int) else list(dim)
    return kind, "dim", [x, Literal(dims), Literal(unbiased), Literal(keepdim)]


def _is_const(v):
    n = v.node
    return getattr(n, "kind", None) == "prim::Constant"


def _op_record(node):
    """A node calling an ember op record: torch's name, overload and arguments."""
    base = str(_INTERNAL.get(node.kind, node.kind))     # a plain str for the pickles
    short = base.split("::", 1)[1]
    overload = node.op.name.partition(".")[2]
    args = list(node.inputs)
    if short in ("mean", "sum") and overload == "":
        dim = args[1] if len(args) > 1 else None
        if dim is None or (_is_const(dim) and dim.constant() is None):
            return base, "", [args[0], args[3] if len(args) > 3 else Literal(None)]
        return base, ("dim" if short == "mean" else "dim_IntList"), _int_lists(node, args)
    if short in _SCALAR_OVERLOAD and overload == "Tensor" and len(args) > 1 \
            and not is_tensor(args[1].type) and _scalar_name(args[1].type):
        overload = "Scalar"
    if short == "rsub":
        overload = "Scalar" if not is_tensor(args[1].type) else "Tensor"
    if short in ("clamp", "clamp_") and overload == "Tensor" and not any(
            is_tensor(a.type) for a in args[1:]):
        overload = ""
    if short in ("masked_fill", "masked_fill_", "index_fill", "index_fill_") and \
            len(args) > 2 and not is_tensor(args[-1].type):
        overload = ("int_" if short.startswith("index") else "") + "Scalar"
    if short == "sort" and len(args) == 4 and _is_const(args[3]) and not args[3].constant():
        return base, "", _int_lists(node, args[:3])     # torch's sort has no ``stable`` here
    if short == "squeeze" and len(args) == 2:   # torch: squeeze(), squeeze.dim, squeeze.dims
        dim = args[1]
        if _is_const(dim) and dim.constant() is None:
            return base, "", args[:1]
        if _scalar_name(dim.type) == "int":
            return base, "dim", args
        return base, "dims", args
    return base, overload, _int_lists(node, args)


def _int_lists(node, args):
    """A constant int where the op's schema takes ``int[]`` (``sum(x, 0)``, ``roll(x, 1,
    0)``) becomes the one-element list torch's operator expects."""
    out = list(args)
    for i, (a, v) in enumerate(zip(node.op.schema.args, args)):
        if a.is_list and a.type in ("int", "SymInt") and isinstance(v, Value) and \
                _is_const(v) and type(v.constant()) is int:
            out[i] = Literal([v.constant()])
    return out


def _scalar_op(node):
    """aten::add / eq / lt ... over numbers: torch's ``.int`` / ``.float`` / mixed names."""
    kinds = [_scalar_name(v.type) for v in node.inputs]
    if None in kinds:
        return None
    if len(set(kinds)) == 1:
        overload = kinds[0]
    else:
        overload = "_".join(kinds)
    return str(node.kind), overload, list(node.inputs)


def torch_op(node):
    """(name, overload, args) of ``node`` in torch's operator set, or raise."""
    kind = str(_ALIASES.get(node.kind, node.kind))
    if kind in _FUNCTIONAL and node.fn is not None:
        return _functional(node, kind)
    if kind in _METHODS and node.op is None and not node.kwnames and \
            (node.fn is not None or kind == "aten::select"):        # x[i] has no fn
        r = _method(node, kind)
        if r is not None:
            return r
    if kind in ("aten::where", "aten::var", "aten::std", "aten::norm") and node.fn is not None \
            and node.op is None:
        r = _reduction_or_where(node, kind)
        if r is not None:
            return r
    if node.op is not None:
        return _op_record(node)
    if kind == "aten::__contains__":
        lst = node.inputs[0].type
        elem = getattr(lst, "elem", None) or (lst.elems[0] if getattr(lst, "elems", None) else None)
        return kind, ("str_list" if elem is T.StrType else "int_list"), list(node.inputs)
    if kind == "aten::join":
        return kind, "", list(node.inputs)
    if kind == "aten::detach":
        return kind, "", list(node.inputs[:1])
    if kind in ("aten::Bool", "aten::Int", "aten::Float"):
        t = node.inputs[0].type
        return kind, "Tensor" if is_tensor(t) else (_scalar_name(t) or "Scalar"), list(node.inputs)
    if kind in ("aten::len", "aten::__getitem__", "aten::append", "aten::list"):
        return kind, "t", list(node.inputs)
    if kind == "aten::add" and len(node.inputs) == 2 and \
            all(str(v.type).endswith("[]") for v in node.inputs):       # list + list
        return kind, "t", list(node.inputs)
    op = _scalar_op(node) if kind.startswith("aten::") and node.inputs else None
    if op is not None:
        return op
    raise NotImplementedError(f"ember.jit.mobile: no lite-interpreter operator for {kind} "
                              f"(inputs {[str(v.type) for v in node.inputs]})")
