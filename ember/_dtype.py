"""dtypes, torch's type-promotion lattice, finfo/iinfo.

An ember ``dtype`` wraps a NumPy dtype (bfloat16 comes from ml_dtypes). Promotion
follows torch: categories bool < integer < floating < complex; tensors with dims
outrank 0-dim tensors, which outrank Python numbers, unless a lower group has a
higher category.
"""
from __future__ import annotations

import builtins
import numpy as np
import ml_dtypes

__all__ = [
    "dtype", "bool", "uint8", "int8", "int16", "int32", "int64", "uint16", "uint32", "uint64",
    "float16", "bfloat16", "float32", "float64", "complex32", "complex64", "complex128",
    "quint8", "qint8", "qint32", "quint4x2", "qscheme", "per_tensor_affine", "per_channel_affine",
    "per_tensor_symmetric", "per_channel_symmetric", "per_channel_affine_float_qparams",
    "promote_types", "result_type",
    "can_cast", "get_default_dtype", "set_default_dtype", "finfo", "iinfo",
]


class dtype:
    """A tensor element type (``ember.float32`` ...)."""
    __slots__ = ("name", "np", "itemsize", "is_floating_point", "is_complex", "is_signed",
                 "_rank", "_category", "__weakref__")

    def __init__(self, name, np_dtype, rank, category, is_signed):
        self.name = name
        self.np = np.dtype(np_dtype)
        self.itemsize = self.np.itemsize
        self.is_floating_point = category == 2
        self.is_complex = category == 3
        self.is_signed = is_signed
        self._rank = rank
        self._category = category  # 0 bool, 1 integer, 2 floating, 3 complex

    def __repr__(self):
        return "torch." + self.name

    def __reduce__(self):
        return (_dtype_by_name, (self.name,))

    def to_real(self):
        return {complex32: float16, complex64: float32, complex128: float64}.get(self, self)

    def to_complex(self):
        """The complex dtype of matching precision (complex32 for float16, complex64 for
        bfloat16, as torch's)."""
        if self._category == 3:
            return self
        if self._category != 2:
            raise RuntimeError(f"Unknown Complex ScalarType for {_SCALAR_TYPE_NAMES[self.name]}")
        return complex128 if self is float64 else complex32 if self is float16 else complex64

    @property
    def abbr(self):
        return _ABBR[self.name]

    @property
    def is_integer(self):  # not a torch attribute; handy internally
        return self._category == 1


bool = dtype("bool", np.bool_, 0, 0, False)
uint8 = dtype("uint8", np.uint8, 1, 1, False)
int8 = dtype("int8", np.int8, 2, 1, True)
int16 = dtype("int16", np.int16, 3, 1, True)
int32 = dtype("int32", np.int32, 4, 1, True)
int64 = dtype("int64", np.int64, 5, 1, True)
# the "barebones" unsigned types: torch promotes them only with themselves and floats, and
# most of its CPU kernels refuse them (ember/_ops/unsigned.py)
uint16 = dtype("uint16", np.uint16, 6, 1, False)
uint32 = dtype("uint32", np.uint32, 7, 1, False)
uint64 = dtype("uint64", np.uint64, 8, 1, False)
float16 = dtype("float16", np.float16, 9, 2, True)
bfloat16 = dtype("bfloat16", ml_dtypes.bfloat16, 10, 2, True)
float32 = dtype("float32", np.float32, 11, 2, True)
float64 = dtype("float64", np.float64, 12, 2, True)
# NumPy has no complex-half: (real, imag) float16 pairs (ember/_kernels/complex32.py)
complex32 = dtype("complex32", [("real", np.float16), ("imag", np.float16)], 13, 3, True)
complex64 = dtype("complex64", np.complex64, 14, 3, True)
complex128 = dtype("complex128", np.complex128, 15, 3, True)

# quantized types: integer storage read through a scale and zero point held by the tensor
# (ember/_ops/quantized.py). Each is a one-field NumPy record so that a quantized array is
# never mistaken for a plain integer one, while views, copies and indexing work on it as is.
# quint4x2 keeps one 4-bit value per byte; int_repr() packs two to a byte as torch stores them.
quint8 = dtype("quint8", [("quint8", np.uint8)], 16, 1, False)
qint8 = dtype("qint8", [("qint8", np.int8)], 17, 1, True)
qint32 = dtype("qint32", [("qint32", np.int32)], 18, 1, True)
quint4x2 = dtype("quint4x2", [("quint4x2", np.uint8)], 19, 1, False)
QUANTIZED = (quint8, qint8, qint32, quint4x2)
QUANTIZED_NP = frozenset(d.np for d in QUANTIZED)
# the integer range and storage of each quantized type
QRANGE = {quint8: (0, 255), qint8: (-128, 127), qint32: (-2 ** 31, 2 ** 31 - 1),
          quint4x2: (0, 15)}
QSTORAGE = {quint8: np.dtype(np.uint8), qint8: np.dtype(np.int8), qint32: np.dtype(np.int32),
            quint4x2: np.dtype(np.uint8)}


class qscheme:
    """A quantization scheme (``ember.per_tensor_affine`` ...)."""
    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return "torch." + self.name

    def __reduce__(self):
        return (_qscheme_by_name, (self.name,))


per_tensor_affine = qscheme("per_tensor_affine")
per_channel_affine = qscheme("per_channel_affine")
per_tensor_symmetric = qscheme("per_tensor_symmetric")
per_channel_symmetric = qscheme("per_channel_symmetric")
per_channel_affine_float_qparams = qscheme("per_channel_affine_float_qparams")
QSCHEMES = {q.name: q for q in (per_tensor_affine, per_channel_affine, per_tensor_symmetric,
                                per_channel_symmetric, per_channel_affine_float_qparams)}


def _qscheme_by_name(name):
    return QSCHEMES[name]


ALL = (bool, uint8, int8, int16, int32, int64, uint16, uint32, uint64, float16, bfloat16,
       float32, float64, complex32, complex64, complex128)
WIDE_UNSIGNED = frozenset((uint16, uint32, uint64))
half, float, double, cfloat, cdouble = float16, float32, float64, complex64, complex128
chalf = complex32
short, int, long = int16, int32, int64
_ALIASES = {"half": float16, "float": float32, "double": float64, "cfloat": complex64,
            "chalf": complex32,
            "cdouble": complex128, "short": int16, "int": int32, "long": int64}

_QUANTIZED_SET = frozenset(QUANTIZED)
_ABBR = {"quint8": "qu8", "qint8": "qi8", "qint32": "qi32", "quint4x2": "qu4x2", "bool": "b8", "uint8": "u8", "int8": "i8", "int16": "i16", "int32": "i32",
         "int64": "i64", "uint16": "u16", "uint32": "u32", "uint64": "u64", "float16": "f16",
         "bfloat16": "bf16", "float32": "f32", "float64": "f64", "complex32": "c32", "complex64": "c64",
         "complex128": "c128"}
_SCALAR_TYPE_NAMES = {"quint8": "QUInt8", "qint8": "QInt8", "qint32": "QInt32",
                      "quint4x2": "QUInt4x2","float32": "Float", "float64": "Double", "float16": "Half",
                      "bfloat16": "BFloat16", "int64": "Long", "int32": "Int", "int16": "Short",
                      "int8": "Char", "uint8": "Byte", "bool": "Bool",
                      "complex32": "ComplexHalf", "complex64": "ComplexFloat",
                      "complex128": "ComplexDouble",
                      "uint16": "UInt16", "uint32": "UInt32", "uint64": "UInt64"}
TYPE_NAMES = _SCALAR_TYPE_NAMES     # keyed by NumPy dtype name too (kernels' messages)
_BY_NAME = {d.name: d for d in ALL + QUANTIZED}
_BY_NP = {d.np: d for d in ALL + QUANTIZED}


def _dtype_by_name(name):
    return _BY_NAME[name]


def _used(d):
    """``d`` once a tensor of it may be made: uint16/32/64 and complex32 turn on their
    dispatcher layers (ember/_ops/unsigned.py, ember/_ops/complex32.py)."""
    if d in WIDE_UNSIGNED:
        from ember._ops.unsigned import enable
        enable()
    elif d is complex32:
        from ember._ops.complex32 import enable
        enable()
    elif d in _QUANTIZED_SET:
        from ember._ops.quantized import enable
        enable()
    return d


def from_numpy_dtype(np_dtype) -> dtype:
    """The ember dtype of a NumPy dtype; TypeError for ones torch lacks."""
    try:
        return _used(_BY_NP[np_dtype])
    except KeyError:
        pass
    np_dtype = np.dtype(np_dtype)
    if np_dtype in _BY_NP:
        return _used(_BY_NP[np_dtype])
    raise TypeError(f"can't convert np.ndarray of type {np_dtype}. The only supported types are: "
                    "float64, float32, float16, complex64, complex128, int64, int32, int16, int8, "
                    "uint64, uint32, uint16, uint8, and bool.")


def to_dtype(d) -> dtype:
    """Accept an ember dtype, a Python type (``float`` is float64, ``int`` int64, ``complex``
    complex128, as in torch) or, more leniently than torch, a NumPy dtype or a name."""
    if type(d) is dtype:
        return _used(d)
    if d is builtins.float:
        return float64
    if d is builtins.int:
        return int64
    if d is builtins.bool:
        return bool
    if d is builtins.complex:
        return complex128
    if isinstance(d, str):
        d = d.replace("torch.", "")
        if d in _BY_NAME:
            return _used(_BY_NAME[d])
        if d in _ALIASES:
            return _ALIASES[d]
    try:
        return from_numpy_dtype(np.dtype(d))
    except TypeError:
        raise TypeError(f"expected a dtype, but got {d!r}") from None


def dtype_argument(d, fname, argname="dtype", position=None):
    """A ``dtype=`` argument as torch's parser takes it: a dtype or a Python number type
    (TypeError naming the function and the argument otherwise); a positional one
    (``position``, from 1) is required (None refused) and named with its position."""
    if type(d) is dtype or d is None and position is None:
        return _used(d)
    if d in (builtins.float, builtins.int, builtins.bool, builtins.complex):
        return to_dtype(d)
    tp = type(d)
    name = tp.__name__ if tp.__module__ == "builtins" else f"{tp.__module__}.{tp.__name__}"
    where = "" if position is None else f" (position {position})"
    raise TypeError(f"{fname}(): argument '{argname}'{where} must be torch.dtype, not {name}")


# ---------------------------------------------------------------------------- promotion

def _promote_pair(a: dtype, b: dtype) -> dtype:
    if a is b:
        return a
    ca, cb = a._category, b._category
    if a in _QUANTIZED_SET or b in _QUANTIZED_SET:
        raise RuntimeError("promoteTypes with quantized numbers is not handled yet; figure out "
                           "what the correct rules should be, offending types: "
                           f"{_SCALAR_TYPE_NAMES[a.name]} {_SCALAR_TYPE_NAMES[b.name]}")
    if a in WIDE_UNSIGNED or b in WIDE_UNSIGNED:   # only with themselves and floats
        if ca == 2 or cb == 2:
            return a if ca == 2 else b
        raise RuntimeError(f"Promotion for uint16, uint32, uint64 types is not supported, "
                           f"attempted to promote {_SCALAR_TYPE_NAMES[a.name]} and "
                           f"{_SCALAR_TYPE_NAMES[b.name]}")
    if ca != cb:
        hi, lo = (a, b) if ca > cb else (b, a)
        if hi._category == 3 and lo._category == 2:  # complex(float16) vs float64
            if hi is complex32 and lo in (bfloat16, float32):
                return complex64
            return complex128 if lo is float64 or hi is complex128 else hi
        return hi
    if ca == 1:
        if a.is_signed == b.is_signed:
            return a if a._rank > b._rank else b
        u, s = (a, b) if not a.is_signed else (b, a)
        # uint8 with a signed type: the signed type if wider than 8 bits, else int16
        return s if s.itemsize > u.itemsize else int16
    if ca == 2:
        if {a, b} == {float16, bfloat16}:
            return float32
        return a if a._rank > b._rank else b
    return a if a._rank > b._rank else b


class _PromotionTable(dict):
    """(dtype, dtype) -> promoted dtype; the pairs torch refuses raise its RuntimeError."""

    def __missing__(self, key):
        return _promote_pair(*key)


def _table():
    table = _PromotionTable()
    for a in ALL:
        for b in ALL:
            try:
                table[a, b] = _promote_pair(a, b)
            except RuntimeError:
                pass
    return table


_PROMOTE = _table()


def promote_types(type1, type2) -> dtype:
    """The smallest dtype both can be cast to (torch.promote_types)."""
    return _PROMOTE[dtype_argument(type1, "promote_types", "type1", 1),
                    dtype_argument(type2, "promote_types", "type2", 2)]


def _default_complex():
    return complex128 if _default[0] is float64 else complex64


def _combine(higher, lower):
    """torch's combine_categories for the three priority groups."""
    if higher is None:
        return lower
    if lower is None:
        return higher
    if higher._category == 3:
        return higher
    if higher._category == 2:
        if lower._category == 3:
            if higher is float16:           # float16 with any complex: complex32 (torch)
                return complex32
            return higher.to_complex() if higher is not float64 else complex128
        return higher
    if higher in WIDE_UNSIGNED and lower._category == 3:
        return lower
    if higher is bool or lower._category >= 2:
        return _PROMOTE[higher, lower]
    return higher


def scalar_dtype(value) -> dtype:
    """The dtype a Python number takes as a wrapped number."""
    t = type(value)
    if t is builtins.bool or t is np.bool_:
        return bool
    if t is builtins.int:
        return int64
    if t is builtins.float:
        return _default[0]
    if t is builtins.complex:
        return _default_complex()
    if isinstance(value, np.generic):
        return from_numpy_dtype(value.dtype)
    raise TypeError(f"unsupported scalar type {t.__name__}")


def promote_operands(dtypes_dim, dtypes_zero, dtypes_wrapped) -> dtype:
    """Result dtype from the three groups (dtypes of dim>0 tensors, 0-dim tensors,
    Python numbers), as torch's ``result_type`` computes it."""
    groups = []
    for group in (dtypes_dim, dtypes_zero, dtypes_wrapped):
        r = None
        for d in group:
            r = d if r is None else _PROMOTE[r, d]
        groups.append(r)
    dim_r, zero_r, wrapped_r = groups
    return _combine(dim_r, _combine(zero_r, wrapped_r))


def result_type(tensor1=None, tensor2=None, **kwargs) -> dtype:
    """torch.result_type for tensors and/or Python numbers (the dtype an arithmetic op on
    them computes in)."""
    from ember._tensor import Tensor
    if kwargs:
        vals = [kwargs.pop(k) for k in ("tensor", "scalar", "scalar1", "other", "scalar2")
                if k in kwargs]
        if kwargs:
            raise TypeError(f"result_type() got an unexpected keyword argument "
                            f"'{next(iter(kwargs))}'")
        args = [a for a in (tensor1, tensor2) if a is not None] + vals
        if len(args) != 2:
            raise TypeError("result_type() missing required argument")
        tensor1, tensor2 = args
    groups = ([], [], [])
    for x in (tensor1, tensor2):
        if isinstance(x, Tensor):
            groups[0 if x.ndim else 1].append(x.dtype)
        else:
            try:
                groups[2].append(scalar_dtype(x))
            except TypeError:
                got = ", ".join("Tensor" if isinstance(v, Tensor) else type(v).__name__
                                for v in (tensor1, tensor2))
                raise TypeError(f"result_type() received an invalid combination of arguments - "
                                f"got ({got}), but expected one of:\n"
                                f" * (Tensor tensor, Tensor other)\n"
                                f" * (Number scalar, Tensor tensor)\n"
                                f" * (Tensor tensor, Number other)\n"
                                f" * (Number scalar1, Number scalar2)\n") from None
    return promote_operands(*groups)


def can_cast(from_, to) -> builtins.bool:
    """torch.can_cast: no downcast across categories (complex→float, float→int, int→bool)."""
    from_ = dtype_argument(from_, "can_cast", "from_", 1)
    to = dtype_argument(to, "can_cast", "to", 2)
    return from_._category <= to._category



def scalar_type_name(d) -> str:
    """torch's C++ ScalarType name ("Float", "Long") used in error messages."""
    d = d if type(d) is dtype else from_numpy_dtype(d)
    return _SCALAR_TYPE_NAMES[d.name]


# ---------------------------------------------------------------------------- defaults

_default = [float32]


def get_default_dtype() -> dtype:
    return _default[0]


def set_default_dtype(d) -> None:
    """Set the dtype of Python floats (``tensor(1.)``, ``zeros``, ``arange(1.)`` ...);
    complex numbers then default to the matching complex dtype."""
    if type(d) is not dtype:
        raise TypeError("invalid dtype object: only floating-point types are supported as the "
                        "default type")
    if d not in (float16, bfloat16, float32, float64):
        raise TypeError("only floating-point types are supported as the default type")
    _default[0] = d


def default_float():
    return _default[0]


# ---------------------------------------------------------------------------- finfo / iinfo

class finfo:
    """Machine limits of a floating-point dtype (torch.finfo)."""

    def __init__(self, type=None):
        d = _default[0] if type is None else to_dtype(type)
        if not (d.is_floating_point or d.is_complex):
            raise TypeError("torch.finfo() requires a floating point input type. Use torch.iinfo "
                            "to handle 'torch.finfo'")
        d = d.to_real()
        info = ml_dtypes.finfo(d.np) if d is bfloat16 else np.finfo(d.np)
        self.dtype = d.name
        self.bits = d.itemsize * 8
        self.eps = builtins.float(info.eps)
        self.max = builtins.float(info.max)
        self.min = builtins.float(info.min)
        self.tiny = builtins.float(info.tiny)
        self.smallest_normal = self.tiny
        self.resolution = 10.0 ** -builtins.int(info.precision)

    def __eq__(self, other):
        return isinstance(other, finfo) and self.dtype == other.dtype

    __hash__ = None

    def __repr__(self):
        return (f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, "
                f"eps={self.eps:g}, smallest_normal={self.tiny:g}, tiny={self.tiny:g}, "
                f"dtype={self.dtype})")


class iinfo:
    """Machine limits of an integer dtype (torch.iinfo)."""

    def __init__(self, type):
        d = to_dtype(type)
        if d is bool:
            raise TypeError("torch.bool is not supported by torch.iinfo")
        if d._category > 1:
            raise TypeError("torch.iinfo() requires an integer input type. Use torch.finfo to "
                            "handle 'torch.iinfo'")
        info = np.iinfo(d.np)
        self.bits, self.min, self.max = info.bits, builtins.int(info.min), builtins.int(info.max)
        self.dtype = d.name

    def __eq__(self, other):
        return isinstance(other, iinfo) and self.dtype == other.dtype

    __hash__ = None

    def __repr__(self):
        return f"iinfo(min={builtins.float(self.min):g}, max={builtins.float(self.max):g}, " \
               f"dtype={self.dtype})"
