"""Quantized tensors through the dispatcher.

A quantized tensor holds integers in a one-field NumPy record array (``_dtype.quint8.np``...,
so its ``dtype`` reads ``torch.quint8``) and its scheme and parameters in a :class:`QParams`
(``tensor._qparams``). The first quantized dtype used turns on :func:`route` in the
dispatcher chain (as complex32 and the wide unsigned types do); until then the dense path pays
nothing. For an op with a quantized operand :func:`route`

- runs the op's quantized kernel where one is registered (:func:`quantized_kernel`: ``relu``
  on a quint8 tensor requantizes, ``cat`` checks the operands' parameters...);
- runs storage-only ops (views, copies, indexing: :data:`KEEPS`) on the integers as they are,
  and gives the result the operand's parameters;
- refuses everything else with torch's message for an op the QuantizedCPU backend lacks.

Quantization's arithmetic (rounding, saturation) lives in ``ember/_kernels/quantized.py``.
"""
from __future__ import annotations

import warnings

import numpy as np

from ember import _dtype
from ember._kernels import quantized as K
from ember._ops.registry import defop as _defop, public
from ember._state import state
from ember._tensor import Tensor, _make

_QNP = _dtype.QUANTIZED_NP
_QTYPES = frozenset(_dtype.QUANTIZED)
_F32 = np.dtype(np.float32)
_next_call = None


class QParams:
    """A quantized tensor's scheme and parameters.

    per tensor: ``scale`` (float), ``zero_point`` (int), ``axis`` None;
    per channel: ``scale`` (float64 array), ``zero_point`` (int64 array; float for
    ``per_channel_affine_float_qparams``), ``axis`` (int)."""
    __slots__ = ("qscheme", "scale", "zero_point", "axis")

    def __init__(self, qscheme, scale, zero_point, axis=None):
        self.qscheme = qscheme
        self.scale = scale
        self.zero_point = zero_point
        self.axis = axis

    @property
    def per_channel(self):
        return self.axis is not None

    def __repr__(self):
        return f"QParams({self.qscheme}, {self.scale}, {self.zero_point}, {self.axis})"

    def __eq__(self, other):
        if not isinstance(other, QParams) or self.qscheme is not other.qscheme:
            return False
        if self.per_channel:
            return self.axis == other.axis and np.array_equal(self.scale, other.scale) and \
                np.array_equal(self.zero_point, other.zero_point)
        return self.scale == other.scale and self.zero_point == other.zero_point

    def broadcast(self, ndim):
        """(scale, zero_point) shaped to broadcast against an ``ndim``-d array."""
        if not self.per_channel:
            return self.scale, self.zero_point
        shape = K.channel_shape(ndim, self.axis, len(self.scale))
        return self.scale.reshape(shape), self.zero_point.reshape(shape)


# records that take quantized tensors themselves (quantize/dequantize, int_repr, the
# ``quantized::`` ops): the layer passes them straight on
NATIVE: set = set()


def native(op):
    """Mark ``op`` as taking quantized operands itself; returns it."""
    NATIVE.add(op.name)
    return op


def defop(schema, kernel=None, **opts):
    """A record that takes quantized tensors itself. Its float outputs stay connected to
    float inputs that require grad through a node whose backward warns and passes no
    gradient: torch's behaviour for ops with no autograd kernel (``WarnNotImplemented``)."""
    composite = opts.get("composite")
    if composite is not None:
        opts["composite"] = _without_autograd_kernel(composite, schema.split("(")[0])
    return native(_defop(schema, kernel, **opts))


def _without_autograd_kernel(fn, name):
    def run(*args):
        result = fn(*args)
        if not state.grad_enabled:
            return result
        inputs = [t for a in args for t in (a if isinstance(a, (list, tuple)) else (a,))
                  if isinstance(t, Tensor) and t._requires_grad]
        if not inputs or not _float_outputs(result):
            return result
        from ember.autograd.no_autograd import WarnNotImplemented
        return WarnNotImplemented.connect(name, result, inputs)
    run.__name__ = getattr(fn, "__name__", name)
    run.__doc__ = fn.__doc__
    return run


def _float_outputs(result):
    items = result if isinstance(result, (list, tuple)) else (result,)
    return any(isinstance(r, Tensor) and r.dtype.is_floating_point for r in items)


# ------------------------------------------------------------------ tensors <-> integers

def qparams(t) -> QParams:
    """The parameters of a quantized tensor."""
    return t.__dict__["_qparams"]


def is_quantized(t):
    return isinstance(t, Tensor) and t._data.dtype in _QNP


def int_array(t):
    """The integers of a quantized tensor, as a plain NumPy array view (one per element)."""
    return K.ints(t._data)


def attach(t, qp):
    """Give ``t`` (whose data is quantized records) the parameters ``qp``; returns ``t``."""
    t._qparams = qp
    return t


def from_ints(ints, qdtype, qp):
    """A quantized tensor of dtype ``qdtype`` over the integer array ``ints`` (no copy when it
    already has the storage type)."""
    if _next_call is None:
        enable()
    _warn_deprecated()
    ints = np.asarray(ints)
    if ints.dtype != _dtype.QSTORAGE[qdtype]:
        ints = ints.astype(_dtype.QSTORAGE[qdtype])
    return attach(_make(K.as_quantized(ints, qdtype.np)), qp)


def rebuild_for_pickle(data, qp):
    """Target of ``Tensor.__reduce_ex__`` for a quantized tensor (pickle, multiprocessing)."""
    if _next_call is None:
        enable()
    return attach(_make(np.asarray(data)), qp)


def per_tensor(qdtype, values, scale, zero_point):
    """Quantize float32 ``values`` (array) per tensor: the rule every kernel ends with."""
    lo, hi = _dtype.QRANGE[qdtype]
    ints = K.requantize(values, scale, zero_point, lo, hi, _dtype.QSTORAGE[qdtype])
    return from_ints(ints, qdtype, QParams(_dtype.per_tensor_affine, float(scale),
                                           int(zero_point)))


def float_array(t):
    """The dequantized values of a quantized tensor (float32 array)."""
    qp = qparams(t)
    scale, zero_point = qp.broadcast(t._data.ndim)
    return K.dequantize(int_array(t), scale, zero_point)


_warned = []


def _op_caller_level():
    """``stacklevel`` naming the line that called the op (the user's ``quantize_per_tensor``,
    or the library module's): torch's C++ warning names the Python frame calling the op."""
    import os
    import sys
    ember_dir = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    machinery = (os.path.join(ember_dir, "_ops") + os.sep, os.path.join(ember_dir, "_dispatch.py"),
                 os.path.join(ember_dir, "ops.py"), "<ember")
    f, level = sys._getframe(2), 2
    while f is not None and f.f_code.co_filename.startswith(machinery):
        f, level = f.f_back, level + 1
    return level


def _warn_deprecated():
    """torch 2.13 warns once a process on the first quantized tensor it creates."""
    if not _warned:
        _warned.append(True)
        warnings.warn(
            "torch.quantize_per_tensor, torch.quantize_per_channel and other quantized tensor "
            "creation functions that produce tensors with dtype torch.quint8, torch.qint8, and "
            "torch.qint32 are deprecated and will be removed in a future PyTorch release. "
            "Please see https://github.com/pytorch/pytorch/issues/184982 for more information.",
            UserWarning, stacklevel=_op_caller_level())


# ------------------------------------------------------------------ checks

def _type_name(d):
    return _dtype.TYPE_NAMES[d.name]


def _check_float_input(x):
    if x.dtype is not _dtype.float32:
        raise RuntimeError(f"Quantize only works on Float Tensor, got {_type_name(x.dtype)}")


def _check_qdtype(d):
    if d not in _QTYPES:
        raise RuntimeError(f"ScalarType {_type_name(d)} is not supported in new_qtensor.")


def _check_zero_point(fname, zero_point, qdtype):
    """torch's range check of zero point(s) (``fname``: its kernel's name)."""
    lo, hi = _dtype.QRANGE[qdtype]
    for z in np.asarray(zero_point).reshape(-1).tolist():
        if z > hi:
            raise RuntimeError(f"{fname} zero_point {z} is above upper bound.")
        if z < lo:
            raise RuntimeError(f"{fname} zero_point {z} is below lower bound.")


def _require_quantized(fname, t):
    if not is_quantized(t):
        raise could_not_run(fname, "CPU")


def _qp_of(fname, t, per_channel):
    _require_quantized(fname, t)
    qp = qparams(t)
    if per_channel and not qp.per_channel:
        raise RuntimeError("Expected quantizer->qscheme() == kPerChannelAffine || "
                           "quantizer->qscheme() == kPerChannelAffineFloatQParams to be true, "
                           "but got false.  (Could this error message be improved?  If so, "
                           "please report an enhancement request to PyTorch.)")
    if not per_channel and qp.per_channel:
        raise RuntimeError("Expected quantizer->qscheme() == kPerTensorAffine to be true, but "
                           "got false.  (Could this error message be improved?  If so, please "
                           "report an enhancement request to PyTorch.)")
    return qp


# ------------------------------------------------------------------ creation

def _quantize_per_tensor(self, scale, zero_point, dtype):
    _check_float_input(self)
    _check_qdtype(dtype)
    if isinstance(scale, Tensor):
        scale = float(scale.item())
    if isinstance(zero_point, Tensor):
        zero_point = int(zero_point.item())
    _check_zero_point("quantize_tensor_per_tensor_affine", zero_point, dtype)
    lo, hi = _dtype.QRANGE[dtype]
    storage = _dtype.QSTORAGE[dtype]
    x = np.asarray(self._data)
    ints = K.quantize(x, scale, zero_point, lo, hi, storage, fused=storage.itemsize == 1)
    return from_ints(ints, dtype, QParams(_dtype.per_tensor_affine, float(scale),
                                          int(zero_point)))


quantize_per_tensor_op = defop(
    "quantize_per_tensor(Tensor self, float scale, int zero_point, ScalarType dtype) -> Tensor",
    composite=_quantize_per_tensor, function=False, method=False, out=False,
    differentiable=False)
quantize_per_tensor_tensor_qparams = defop(
    "quantize_per_tensor.tensor_qparams(Tensor self, Tensor scale, Tensor zero_point, "
    "ScalarType dtype) -> Tensor", composite=_quantize_per_tensor, function=False,
    method=False, out=False, differentiable=False)


def _quantize_per_tensor_list(tensors, scales, zero_points, dtype):
    n = len(tensors)
    if scales.numel() != n or zero_points.numel() != n:
        raise RuntimeError("quantize_per_tensor(): expected one scale and one zero_point per "
                           f"tensor, got {scales.numel()} and {zero_points.numel()} for {n}")
    s = scales.reshape(-1)._data
    z = zero_points.reshape(-1)._data
    return [_quantize_per_tensor(t, float(s[i]), int(z[i]), dtype)
            for i, t in enumerate(tensors)]


quantize_per_tensor_tensors = defop(
    "quantize_per_tensor.tensors(Tensor[] tensors, Tensor scales, Tensor zero_points, "
    "ScalarType dtype) -> Tensor[]", composite=_quantize_per_tensor_list, function=False,
    method=False, out=False, differentiable=False)


@public("quantize_per_tensor")
def quantize_per_tensor(input, scale, zero_point, dtype):
    """Quantize a float32 tensor with one ``scale`` and ``zero_point`` (numbers or 1-element
    tensors); a list of tensors takes tensors of scales and zero points, one each."""
    if isinstance(input, (list, tuple)):
        return quantize_per_tensor_tensors(list(input), scale, zero_point, dtype)
    if isinstance(scale, Tensor) or isinstance(zero_point, Tensor):
        if not isinstance(scale, Tensor):
            scale = _make(np.array(scale, np.float64))
        if not isinstance(zero_point, Tensor):
            zero_point = _make(np.array(zero_point, np.int64))
        return quantize_per_tensor_tensor_qparams(input, scale, zero_point, dtype)
    return quantize_per_tensor_op(input, scale, zero_point, dtype)


def _quantize_per_channel(self, scales, zero_points, axis, dtype):
    _check_float_input(self)
    _check_qdtype(dtype)
    ndim = self.dim()
    if not -ndim <= axis < max(ndim, 1):
        raise RuntimeError(f"Channel axis out of range in per channel affine quantization. Got: "
                           f"{axis}Expected: [0, {ndim})")
    axis = axis % ndim
    n = self.shape[axis]
    if scales.numel() != zero_points.numel():
        raise RuntimeError("number of elements in scales and zero_points must match")
    if scales.dim() != 1 or scales.numel() != n:
        raise RuntimeError(f"length of scales must equal to channel, expected {n} got, "
                           f"{scales.numel()}")
    if zero_points.dim() != 1 or zero_points.numel() != n:
        raise RuntimeError(f"length of zero_points must equal to channel expected {n} got, "
                           f"{zero_points.numel()}")
    float_qparams = zero_points.dtype.is_floating_point
    # float zero points: scales and zero points kept in float32, as torch keeps them
    s = np.asarray(scales._data, np.float32 if float_qparams else np.float64).copy()
    z = np.asarray(zero_points._data).astype(np.float32 if float_qparams else np.int64)
    if not float_qparams:
        _check_zero_point("quantize_tensor_per_channel_affine", z, dtype)
    lo, hi = _dtype.QRANGE[dtype]
    shape = K.channel_shape(ndim, axis, n)
    x = np.asarray(self._data)
    if float_qparams:       # zero points are float offsets: q = round(x / s + z)
        ints = np.clip(np.rint(x * K.inverse_scale(s.reshape(shape)) +
                               z.reshape(shape).astype(np.float32)), lo, hi)
        ints = ints.astype(_dtype.QSTORAGE[dtype])
        scheme = _dtype.per_channel_affine_float_qparams
    else:
        ints = K.quantize(x, s.reshape(shape), z.reshape(shape), lo, hi,
                          _dtype.QSTORAGE[dtype], fused=False)
        scheme = _dtype.per_channel_affine
    return from_ints(ints, dtype, QParams(scheme, s, z, axis))


quantize_per_channel = defop(
    "quantize_per_channel(Tensor self, Tensor scales, Tensor zero_points, int axis, "
    "ScalarType dtype) -> Tensor", composite=_quantize_per_channel, method=False, out=False,
    differentiable=False)


def _quantize_per_tensor_dynamic(self, dtype, reduce_range):
    if dtype not in (_dtype.quint8, _dtype.qint8, _dtype.float16):
        raise RuntimeError("dtype must be torch.quint8, torch.qint8 or torch.float16 for "
                           f"quantize_per_tensor_dynamic, got {dtype}")
    if dtype is _dtype.float16:
        return self.to(_dtype.float16)
    _check_float_input(self)
    x = np.asarray(self._data)
    lo_v = float(x.min()) if x.size else 0.0
    hi_v = float(x.max()) if x.size else 0.0
    lo, hi = _dtype.QRANGE[dtype]
    scale, zero_point = K.choose_qparams(lo_v, hi_v, lo, hi, reduce_range=reduce_range)
    return _quantize_per_tensor(self, scale, zero_point, dtype)


quantize_per_tensor_dynamic = defop(
    "quantize_per_tensor_dynamic(Tensor self, ScalarType dtype, bool reduce_range) -> Tensor",
    composite=_quantize_per_tensor_dynamic, method=False, out=False, differentiable=False)


def _make_per_tensor_quantized_tensor(self, scale, zero_point):
    qdtype = {np.dtype(np.uint8): _dtype.quint8, np.dtype(np.int8): _dtype.qint8,
              np.dtype(np.int32): _dtype.qint32}.get(self._data.dtype)
    if qdtype is None:
        raise RuntimeError(f"Expected self.scalar_type() to be one of Byte, Char or Int, but "
                           f"got {_type_name(self.dtype)}")
    return from_ints(np.array(self._data), qdtype,
                     QParams(_dtype.per_tensor_affine, float(scale), int(zero_point)))


_make_per_tensor_quantized_tensor_op = defop(
    "_make_per_tensor_quantized_tensor(Tensor self, float scale, int zero_point) -> Tensor",
    composite=_make_per_tensor_quantized_tensor, method=False, out=False,
    differentiable=False)


def _make_per_channel_quantized_tensor(self, scale, zero_point, axis):
    qdtype = {np.dtype(np.uint8): _dtype.quint8, np.dtype(np.int8): _dtype.qint8,
              np.dtype(np.int32): _dtype.qint32}.get(self._data.dtype)
    if qdtype is None:
        raise RuntimeError(f"Expected self.scalar_type() to be one of Byte, Char or Int, but "
                           f"got {_type_name(self.dtype)}")
    axis = axis % self.dim()
    s = np.asarray(scale._data, np.float64).copy()
    z = np.asarray(zero_point._data).astype(np.int64)
    return from_ints(np.array(self._data), qdtype,
                     QParams(_dtype.per_channel_affine, s, z, axis))


_make_per_channel_quantized_tensor_op = defop(
    "_make_per_channel_quantized_tensor(Tensor self, Tensor scale, Tensor zero_point, "
    "int axis) -> Tensor", composite=_make_per_channel_quantized_tensor, method=False,
    out=False, differentiable=False)


def _empty_affine_quantized(size, dtype=None, layout=None, device=None, pin_memory=None,
                            scale=1.0, zero_point=0, memory_format=None):
    qdtype = _dtype.quint8 if dtype is None else dtype
    _check_qdtype(qdtype)
    return from_ints(np.zeros(tuple(size), _dtype.QSTORAGE[qdtype]), qdtype,
                     QParams(_dtype.per_tensor_affine, float(scale), int(zero_point)))


_empty_affine_quantized_op = defop(
    "_empty_affine_quantized(int[] size, *, ScalarType? dtype=None, Layout? layout=None, "
    "Device? device=None, bool? pin_memory=None, float scale=1, int zero_point=0, "
    "MemoryFormat? memory_format=None) -> Tensor", composite=_empty_affine_quantized,
    method=False, out=False, differentiable=False)


def _empty_per_channel_affine_quantized(size, scales, zero_points, axis, dtype=None,
                                        layout=None, device=None, pin_memory=None,
                                        memory_format=None):
    qdtype = _dtype.quint8 if dtype is None else dtype
    _check_qdtype(qdtype)
    return from_ints(np.zeros(tuple(size), _dtype.QSTORAGE[qdtype]), qdtype,
                     QParams(_dtype.per_channel_affine,
                             np.asarray(scales._data, np.float64).copy(),
                             np.asarray(zero_points._data).astype(np.int64), axis))


_empty_per_channel_affine_quantized_op = defop(
    "_empty_per_channel_affine_quantized(int[] size, *, Tensor scales, Tensor zero_points, "
    "int axis, ScalarType? dtype=None, Layout? layout=None, Device? device=None, "
    "bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor",
    composite=_empty_per_channel_affine_quantized, method=False, out=False,
    differentiable=False)


# ------------------------------------------------------------------ reading them back

def _dequantize(self):
    if not is_quantized(self):      # torch: any other tensor is converted to float32
        return self.to(_dtype.float32)
    return _make(float_array(self))


dequantize_self = defop("dequantize.self(Tensor self) -> Tensor", composite=_dequantize,
                        function=False, method=False, out=False, differentiable=False)
dequantize_tensors = defop("dequantize.tensors(Tensor[] tensors) -> Tensor[]",
                           composite=lambda tensors: [_dequantize(t) for t in tensors],
                           function=False, method=False, out=False, differentiable=False)


@public("dequantize", method=True)
def dequantize(tensor):
    """The float32 values a quantized tensor stands for (a list: one for each)."""
    if isinstance(tensor, (list, tuple)):
        return dequantize_tensors(list(tensor))
    return dequantize_self(tensor)


def _int_repr(self):
    _require_quantized("int_repr", self)
    ints = np.array(int_array(self))
    if self.dtype is _dtype.quint4x2:
        return _make(K.pack_4bit(ints))
    return _make(ints)


int_repr = defop("int_repr(Tensor self) -> Tensor", composite=_int_repr, out=False,
                 differentiable=False)
q_scale = defop("q_scale(Tensor self) -> float",
                composite=lambda self: _qp_of("q_scale", self, False).scale,
                out=False, differentiable=False)
q_zero_point = defop("q_zero_point(Tensor self) -> int",
                     composite=lambda self: _qp_of("q_zero_point", self, False).zero_point,
                     out=False, differentiable=False)
q_per_channel_scales = defop(
    "q_per_channel_scales(Tensor self) -> Tensor",
    composite=lambda self: _make(_qp_of("q_per_channel_scales", self, True).scale.copy()),
    out=False, differentiable=False)
q_per_channel_zero_points = defop(
    "q_per_channel_zero_points(Tensor self) -> Tensor",
    composite=lambda self: _make(_qp_of("q_per_channel_zero_points", self,
                                        True).zero_point.copy()),
    out=False, differentiable=False)
q_per_channel_axis = defop(
    "q_per_channel_axis(Tensor self) -> int",
    composite=lambda self: _qp_of("q_per_channel_axis", self, True).axis,
    out=False, differentiable=False)


def _qscheme(self):
    _require_quantized("qscheme", self)
    return qparams(self).qscheme


qscheme = defop("qscheme(Tensor self) -> QScheme", composite=_qscheme, function=False,
                out=False, differentiable=False)


# ------------------------------------------------------------------ the dispatcher layer

# ops that move or copy integers without reading them: the result keeps the parameters
KEEPS = frozenset((
    "view", "reshape", "_unsafe_view", "transpose.int", "permute", "t", "select.int",
    "slice.Tensor", "squeeze", "unsqueeze", "flatten.using_ints", "unflatten.int", "clone",
    "alias", "expand", "narrow", "index_select", "flip", "repeat", "chunk", "split.Tensor",
    "split_with_sizes", "unbind.int", "movedim.intlist", "as_strided", "index.Tensor",
    "tensor_split.indices", "tensor_split.sections", "diagonal", "unfold", "squeeze_",
    "unsqueeze_", "t_", "transpose_", "detach_copy", "expand_as", "view_as", "_basic_index",
))
# of those, what a per-channel tensor may go through (its channel axis stays where it was)
KEEPS_PER_CHANNEL = frozenset(("view", "reshape", "_unsafe_view", "clone", "alias",
                               "flatten.using_ints", "detach_copy"))

KERNELS: dict = {}      # record name (or public name) -> fn(op, args, out) on Tensors


def quantized_kernel(*names):
    """Register ``fn(op, args, out)`` as the quantized kernel of the records ``names``."""
    def deco(fn):
        for n in names:
            KERNELS[n] = fn
        return fn
    return deco


def enable():
    """Put :func:`route` in front of the dispatcher's call (once)."""
    global _next_call
    if _next_call is None:
        from ember import _dispatch
        _next_call = _dispatch.add_call_layer(route)
        from ember._ops import quantized_kernels  # noqa: F401  (registers the kernels)


def _quantized_operand(op, args):
    for i, is_list, _ in op.tensor_args:
        a = args[i]
        if isinstance(a, Tensor):
            if a._data.dtype in _QNP:
                return a
        elif is_list and isinstance(a, (list, tuple)):
            for x in a:
                if isinstance(x, Tensor) and x._data.dtype in _QNP:
                    return x
    return None


def could_not_run(name, backend="QuantizedCPU"):
    """torch's error for an op ``backend`` has no kernel for."""
    return NotImplementedError(
        f"Could not run 'aten::{name}' with arguments from the '{backend}' backend. This "
        "could be because the operator doesn't exist for this backend, or was omitted during "
        "the selective/custom build process (if using custom build).")


def _keep(result, qp):
    if isinstance(result, Tensor):
        if result._data.dtype in _QNP:
            attach(result, qp)
    elif isinstance(result, (list, tuple)):
        for r in result:
            _keep(r, qp)
    return result


@quantized_kernel("empty_like")
def _empty_like(op, args, out):
    """An uninitialized tensor of the same shape and quantization (zeros, in fact)."""
    x = args[0]
    if args[op.argnames.index("dtype")] not in (None, x.dtype):
        raise RuntimeError("empty_like: a quantized tensor's copy keeps its dtype")
    return from_ints(np.zeros(x.shape, int_array(x).dtype), x.dtype, qparams(x))


@quantized_kernel("linear", "addmm", "mm", "matmul", "bmm", "baddbmm")
def _float_matmul(op, args, out):
    """A float matrix product given a quantized operand (a float model fed quantized input):
    torch's dtype check, else its missing kernel."""
    tensors = [args[i] for i, _, _ in op.tensor_args if isinstance(args[i], Tensor)]
    with_bias = op.name in ("addmm", "baddbmm") or op.name == "linear" and len(tensors) > 2
    if op.name in ("addmm", "baddbmm"):
        tensors = tensors[1:] + tensors[:1]         # mat1, mat2 before the added input
    a, b = tensors[0], tensors[1]
    if with_bias and a.dtype is not b.dtype:       # (torch's addmm checks dtypes first)
        raise RuntimeError(f"mat1 and mat2 must have the same dtype, but got "
                           f"{_type_name(a.dtype)} and {_type_name(b.dtype)}")
    raise could_not_run("mm.out" if op.name != "bmm" else "bmm.out")


# Views of a per-channel tensor that move or cut its channel axis, as torch's: selecting a
# channel gives that channel's per-tensor parameters, slicing the channel axis keeps the
# sliced channels' parameters, other dims removed or added shift the axis.

def _one_channel(qp, index):
    z = qp.zero_point[index]
    scheme = _dtype.per_tensor_affine
    return QParams(scheme, float(qp.scale[index]), float(z) if z.dtype.kind == "f" else int(z))


def _sliced_channels(qp, sl):
    return QParams(qp.qscheme, qp.scale[sl].copy(), qp.zero_point[sl].copy(), qp.axis)


def _after_index(items, ndim, qp):
    """Parameters after a basic index ``items`` (ints, slices, one Ellipsis) on ``ndim``
    dims."""
    if any(i is Ellipsis for i in items):
        k = items.index(Ellipsis)
        rest = items[k + 1:]
        items = items[:k] + (slice(None),) * (ndim - len(items) + 1) + rest
    axis, dropped = qp.axis, 0
    for dim, item in enumerate(items):
        if dim == qp.axis:
            if isinstance(item, slice):
                qp = _sliced_channels(qp, item)
            else:
                return _one_channel(qp, int(item) % len(qp.scale))
        elif dim < qp.axis and not isinstance(item, slice):
            dropped += 1
    return QParams(qp.qscheme, qp.scale, qp.zero_point, axis - dropped)


def _after_select(args, qp):
    dim = args[1] % args[0].dim()
    if dim == qp.axis:
        return _one_channel(qp, args[2] % len(qp.scale))
    return QParams(qp.qscheme, qp.scale, qp.zero_point, qp.axis - (dim < qp.axis))


def _after_slice(args, qp, start_end_step):
    dim = args[1] % args[0].dim()
    if dim != qp.axis:
        return qp
    return _sliced_channels(qp, slice(*start_end_step))


def _after_unsqueeze(args, qp):
    dim = args[1] % (args[0].dim() + 1)
    return QParams(qp.qscheme, qp.scale, qp.zero_point, qp.axis + (dim <= qp.axis))


_PER_CHANNEL_VIEWS = {
    "select.int": _after_select,
    "slice.Tensor": lambda a, qp: _after_slice(a, qp, (a[2], a[3], a[4])),
    "narrow": lambda a, qp: _after_slice(a, qp, (a[2], a[2] + a[3])),
    "unsqueeze": _after_unsqueeze,
    "_basic_index": lambda a, qp: _after_index(tuple(a[1]), a[0].dim(), qp),
}


def _refuse_quantized_dtype(op, args):
    """A plain op asked for a quantized result dtype (``zeros(2, dtype=torch.quint8)``,
    ``x.to(torch.quint8)``): torch refuses these; ``empty`` gives per-tensor parameters
    scale 1, zero point 0 (torch's ``_empty_affine_quantized`` defaults)."""
    name = op.functional.name
    if name == "_to_copy":
        raise RuntimeError("empty_strided not supported on quantized tensors yet see "
                           "https://github.com/pytorch/pytorch/issues/74540")
    raise could_not_run(_FILLED_BY.get(name, name))


# factories torch runs as an empty tensor then a fill: the fill is what it refuses
_FILLED_BY = {"zeros": "zero_", "zeros_like": "zero_", "ones": "fill_.Scalar",
              "ones_like": "fill_.Scalar", "full": "fill_.Scalar", "full_like": "fill_.Scalar"}
_EMPTY = frozenset(("empty", "empty.memory_format", "new_empty", "empty_strided"))


def _cloned_ints(q, memory_format):
    """``clone`` of a quantized tensor's records: the plain integer view copied (NumPy
    copies one-field record arrays about 3x slower than plain integers), seen as records
    again. Without a memory format torch's quantized clone is contiguous (found by running
    it: a channels-last tensor's ``clone()`` has contiguous strides, unlike a float one's)."""
    from ember._kernels.core import clone
    ints = int_array(q)
    copy = clone(ints, "contiguous_format" if memory_format is None else memory_format)
    if np.may_share_memory(copy, ints):     # a layout the kernel's reordering kept
        copy = copy.copy(order="K")
    return copy.view(q._data.dtype)


def route(op, args, out):
    """The dispatcher's call once quantized tensors exist."""
    q = _quantized_operand(op, args)
    if q is None or op.name in NATIVE:
        if q is None and "dtype" in op.argnames and op.name not in NATIVE and \
                args[op.argnames.index("dtype")] in _QTYPES:
            if op.functional.name in _EMPTY:
                return attach(_next_call(op, args, out), QParams(_dtype.per_tensor_affine,
                                                                 1.0, 0))
            _refuse_quantized_dtype(op, args)
        return _next_call(op, args, out)
    name = op.name
    kernel = KERNELS.get(name) or KERNELS.get(op.public_name)
    if kernel is not None:
        return kernel(op, args, out)
    if name in KEEPS and out is None:
        qp = qparams(q)
        if qp.per_channel:
            moved = _PER_CHANNEL_VIEWS.get(name)
            if moved is not None:
                return _keep(_next_call(op, args, out), moved(args, qp))
            if name not in KEEPS_PER_CHANNEL:
                raise RuntimeError("Setting strides is possible only on uniformly quantized "
                                   "tensor")
        if name == "clone":     # fresh storage (reshapes that copy come here too)
            return attach(_make(_cloned_ints(q, args[1])), qp)
        return _keep(_next_call(op, args, out), qp)
    if out is not None:
        name = f"{op.functional.name.split('.')[0]}.out"
    elif op.functional is not op or op.is_inplace:
        name = op.name
    elif op.promote is not None:
        raise _elementwise_refusal(op, args, q)
    raise could_not_run(_MATMUL_KERNEL.get(name, name))


_MATMUL_KERNEL = {"matmul": "mm.out", "mm": "mm.out", "linear": "mm.out"}


def _elementwise_refusal(op, args, q):
    """torch's error for an elementwise op on a quantized tensor: its type promotion fails
    first with a float operand (or a true division), its output allocation with a number,
    else the missing ``.out`` kernel."""
    others = [args[i] for i in op.promote_args if args[i] is not q]
    floats = [a for a in others if isinstance(a, float) or isinstance(a, Tensor) and
              a.dtype.is_floating_point]
    if floats or others and op.promote == "int_to_float":
        other = floats[0].dtype if floats and isinstance(floats[0], Tensor) else \
            _dtype.get_default_dtype()
        return RuntimeError("promoteTypes with quantized numbers is not handled yet; figure "
                            "out what the correct rules should be, offending types: "
                            f"{_type_name(q.dtype)} {_type_name(other)}")
    if any(isinstance(a, (int, bool)) for a in others):
        return RuntimeError("empty_strided not supported on quantized tensors yet see "
                            "https://github.com/pytorch/pytorch/issues/74540")
    return could_not_run(f"{op.public_name}.out")
