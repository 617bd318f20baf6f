"""What the compiler knows of the callables scripted code may call: ember's functions and
Tensor methods (typed from their op records' schemas), Python's operators and builtins on
numbers, strings and containers, and ``math``.

``call_signature`` answers, for a callee and the types of its arguments, the IR kind
(``aten::add``), the op record or Python callable to run, and the result type.
"""
from __future__ import annotations

import math
import operator

from ember.jit import _types as T

# torch's ScalarType numbering (a dtype is an int in TorchScript graphs and archives)
_SCALAR_TYPE_ORDER = ["uint8", "int8", "int16", "int32", "int64", "float16", "float32",
                      "float64", "complex32", "complex64", "complex128", "bool", "qint8",
                      "quint8", "qint32", "bfloat16", "quint4x2"]


def _scalar_type_codes():
    import ember
    out = {}
    for k, name in enumerate(_SCALAR_TYPE_ORDER):
        d = getattr(ember, name, None)
        if d is not None and isinstance(d, ember.dtype):
            out[d] = k
    return out


class _LazyCodes(dict):
    def _fill(self):
        if not dict.__len__(self):
            self.update(_scalar_type_codes())

    def get(self, k, default=None):
        self._fill()
        return dict.get(self, k, default)

    def __getitem__(self, k):
        self._fill()
        return dict.__getitem__(self, k)

    def items(self):
        self._fill()
        return dict.items(self)


SCALAR_TYPE_CODE = _LazyCodes()


def dtype_from_code(code):
    for d, k in SCALAR_TYPE_CODE.items():
        if k == code:
            return d
    raise RuntimeError(f"unknown ScalarType {code}")


_SCHEMA_TYPES = {"Tensor": T.TensorType, "int": T.IntType, "SymInt": T.IntType,
                 "float": T.FloatType, "bool": T.BoolType, "str": T.StrType,
                 "Scalar": T.NumberType, "ScalarType": T.DtypeType, "Layout": T.LayoutType,
                 "Device": T.DeviceType, "MemoryFormat": T.IntType, "Generator": T.GeneratorType,
                 "Any": T.AnyType, "complex": T.ComplexType}


def schema_type(base, is_list=False, optional=False):
    t = _SCHEMA_TYPES.get(base, T.AnyType)
    if is_list:
        t = T.ListType(t)
    if optional:
        t = T.OptionalType(t)
    return t


def schema_returns(op):
    rets = [schema_type(r[0].rstrip("[]"), r[0].endswith("[]")) for r in op.schema.returns]
    if not rets:
        return T.NoneType
    if len(rets) == 1:
        return rets[0]
    return T.TupleType(tuple(rets))


# results of the fronts written by hand (overloaded names), by name; a callable takes the
# argument types and the number of positional arguments
_TT = T.TensorType
_PAIR = T.TupleType((_TT, _TT))
_LT = T.ListType(_TT)


def _pair_if_dim(types, nargs, kw):
    return _PAIR if nargs > 1 or "dim" in kw else _TT


FUNCTION_RESULTS = {
    "max": _pair_if_dim, "min": _pair_if_dim, "median": _pair_if_dim,
    "nanmedian": _pair_if_dim, "mode": _PAIR, "sort": _PAIR, "topk": _PAIR,
    "kthvalue": _PAIR, "cummax": _PAIR, "cummin": _PAIR, "var_mean": _PAIR, "std_mean": _PAIR,
    "aminmax": _PAIR, "frexp": _PAIR, "slogdet": _PAIR, "qr": _PAIR, "eig": _PAIR,
    "eigh": _PAIR, "lu_unpack": T.TupleType((_TT, _TT, _TT)), "svd": T.TupleType((_TT, _TT, _TT)),
    "split": _LT, "chunk": _LT, "unbind": _LT, "tensor_split": _LT, "meshgrid": _LT,
    "broadcast_tensors": _LT, "split_with_sizes": _LT, "hsplit": _LT, "vsplit": _LT,
    "dsplit": _LT, "unsafe_split": _LT, "unsafe_chunk": _LT, "atleast_1d": _TT,
    "broadcast_shapes": T.ListType(T.IntType), "is_tensor": T.BoolType,
    "is_floating_point": T.BoolType, "is_complex": T.BoolType, "numel": T.IntType,
    "is_grad_enabled": T.BoolType, "equal": T.BoolType, "allclose": T.BoolType,
    "result_type": T.DtypeType, "promote_types": T.DtypeType, "can_cast": T.BoolType,
    "get_default_dtype": T.DtypeType, "is_nonzero": T.BoolType, "unique_consecutive": _TT,
    "lstm": T.TupleType((_TT, _TT, _TT)), "gru": _PAIR, "lstm_cell": _PAIR,
    "multi_head_attention_forward": T.TupleType((_TT, T.OptionalType(_TT))),
    "max_pool1d_with_indices": _PAIR, "max_pool2d_with_indices": _PAIR,
    "max_pool3d_with_indices": _PAIR, "adaptive_max_pool2d_with_indices": _PAIR,
    "_additive_mask": T.OptionalType(_TT),
}


def _size_like(types, nargs, kw):
    return T.IntType if nargs > 1 or "dim" in kw else T.ListType(T.IntType)


METHOD_RESULTS = dict(FUNCTION_RESULTS, **{
    "size": _size_like, "stride": _size_like, "dim": T.IntType, "ndimension": T.IntType,
    "numel": T.IntType, "nelement": T.IntType, "element_size": T.IntType,
    "get_device": T.IntType, "data_ptr": T.IntType, "storage_offset": T.IntType,
    "item": T.NumberType, "tolist": T.AnyType, "is_contiguous": T.BoolType,
    "is_floating_point": T.BoolType, "is_complex": T.BoolType, "is_signed": T.BoolType,
    "equal": T.BoolType, "allclose": T.BoolType, "__len__": T.IntType,
    "is_set_to": T.BoolType, "requires_grad_": _TT, "type": T.StrType,
    "is_pinned": T.BoolType, "is_nonzero": T.BoolType, "__contains__": T.BoolType,
    "backward": T.NoneType, "retain_grad": T.NoneType,
})

TENSOR_ATTRIBUTES = {
    "shape": T.ListType(T.IntType), "dtype": T.DtypeType, "device": T.DeviceType,
    "ndim": T.IntType, "grad": T.OptionalType(_TT), "requires_grad": T.BoolType,
    "is_cuda": T.BoolType, "is_cpu": T.BoolType, "is_sparse": T.BoolType,
    "is_quantized": T.BoolType, "is_meta": T.BoolType, "is_mkldnn": T.BoolType,
    "is_leaf": T.BoolType, "data": _TT, "T": _TT, "mT": _TT, "H": _TT, "mH": _TT,
    "real": _TT, "imag": _TT, "layout": T.LayoutType, "names": T.ListType(T.OptionalType(T.StrType)),
    "output_nr": T.IntType, "_version": T.IntType, "is_nested": T.BoolType,
    "grad_fn": T.AnyType,
}


def function_result(name, op, arg_types, nargs, kwnames, method=False):
    """The static result type of calling an ember function or Tensor method."""
    table = METHOD_RESULTS if method else FUNCTION_RESULTS
    r = table.get(name)
    if r is not None:
        return r(arg_types, nargs, kwnames) if callable(r) else r
    if op is not None:
        return schema_returns(op)
    from ember._ops.registry import OPS
    rec = OPS.get(name)
    if rec is not None:
        return schema_returns(rec)
    return T.TensorType


# ------------------------------------------------------------------- numbers and operators

BINARY_OPERATORS = {
    "Add": ("add", operator.add, "+"), "Sub": ("sub", operator.sub, "-"),
    "Mult": ("mul", operator.mul, "*"), "Div": ("div", operator.truediv, "/"),
    "FloorDiv": ("floordiv", operator.floordiv, "//"), "Mod": ("remainder", operator.mod, "%"),
    "Pow": ("pow", operator.pow, "**"), "MatMult": ("matmul", operator.matmul, "@"),
    "BitAnd": ("__and__", operator.and_, "&"), "BitOr": ("__or__", operator.or_, "|"),
    "BitXor": ("__xor__", operator.xor, "^"), "LShift": ("__lshift__", operator.lshift, "<<"),
    "RShift": ("__rshift__", operator.rshift, ">>"),
}
COMPARE_OPERATORS = {
    "Eq": ("eq", operator.eq, "=="), "NotEq": ("ne", operator.ne, "!="),
    "Lt": ("lt", operator.lt, "<"), "LtE": ("le", operator.le, "<="),
    "Gt": ("gt", operator.gt, ">"), "GtE": ("ge", operator.ge, ">="),
    "Is": ("__is__", operator.is_, "is"), "IsNot": ("__isnot__", operator.is_not, "is not"),
    "In": ("__contains__", None, "in"), "NotIn": ("__contains__", None, "not in"),
}
UNARY_OPERATORS = {
    "USub": ("neg", operator.neg, "-"), "UAdd": ("pos", operator.pos, "+"),
    "Not": ("__not__", operator.not_, "not "), "Invert": ("__invert__", operator.invert, "~"),
}

_NUM_RANK = {T.BoolType: 0, T.IntType: 1, T.FloatType: 2, T.ComplexType: 3}


def is_number(t):
    return t in _NUM_RANK or t is T.NumberType


def float_pow(a, b):
    """``a ** b`` of numbers as TorchScript computes it: a float unless complex."""
    r = a ** b
    return r if isinstance(r, complex) else float(r)


def number_result(opname, a, b):
    """Result type of a Python operator on two numbers (None: not defined)."""
    if not (is_number(a) and is_number(b)):
        return None
    if a is T.NumberType or b is T.NumberType:
        return T.NumberType
    if opname in ("div", "pow"):      # TorchScript: int ** int is a float (aten::pow.int)
        return T.ComplexType if T.ComplexType in (a, b) else T.FloatType
    if opname in ("__and__", "__or__", "__xor__") and a is T.BoolType and b is T.BoolType:
        return T.BoolType
    r = max(_NUM_RANK[a], _NUM_RANK[b], 1)
    return {1: T.IntType, 2: T.FloatType, 3: T.ComplexType}[r]


MATH_RESULTS = {
    "floor": T.IntType, "ceil": T.IntType, "trunc": T.IntType, "factorial": T.IntType,
    "gcd": T.IntType, "isnan": T.BoolType, "isinf": T.BoolType, "isfinite": T.BoolType,
    "isclose": T.BoolType, "comb": T.IntType, "perm": T.IntType, "isqrt": T.IntType,
}
MATH_CONSTANTS = {"pi": math.pi, "e": math.e, "inf": math.inf, "nan": math.nan, "tau": math.tau}


def math_result(name):
    return MATH_RESULTS.get(name, T.FloatType)


# ------------------------------------------------------------------- str() in scripted code

def script_str(v):
    """``str(v)`` as TorchScript writes it: floats with 17 significant digits and a trailing
    ``.`` when integral (``2.``, ``0.10000000000000001``), inside lists too."""
    if isinstance(v, float):
        if v != v or v in (math.inf, -math.inf):
            return str(v)
        s = "%.17g" % v
        if v == int(v) and "e" not in s:
            return f"{int(v)}."
        return s
    if isinstance(v, list):
        return "[" + ", ".join(script_str(x) for x in v) + "]"
    if isinstance(v, tuple):
        return "(" + ", ".join(script_str(x) for x in v) + ("," if len(v) == 1 else "") + ")"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{script_str(k)}: {script_str(x)}" for k, x in v.items()) + "}"
    if isinstance(v, str) and False:
        return v
    return str(v)


class _Fmt:
    """An argument of ``str.format`` in scripted code: written by ``script_str`` unless a
    format spec is given."""
    __slots__ = ("v",)

    def __init__(self, v):
        self.v = v

    def __format__(self, spec):
        return format(self.v, spec) if spec else script_str(self.v)

    def __str__(self):
        return script_str(self.v)

    def __repr__(self):
        return repr(self.v)


def script_format(fmt, *args):
    """``fmt.format(*args)`` (f-strings too) with TorchScript's way of writing values."""
    return fmt.format(*[_Fmt(a) for a in args])
