"""Quantized kernels of ATen ops: what ``torch.relu(qx)``, ``torch.cat([qa, qb])``... run when
an operand is quantized. Each reads the integers and parameters (ember/_ops/quantized.py), and
ends in the one requantization rule (ember/_kernels/quantized.py)."""
from __future__ import annotations

import numpy as np

from ember import _dtype
from ember._kernels import quantized as K
from ember._ops.quantized import (quantized_kernel, qparams, int_array, is_quantized,
                                  from_ints, per_tensor, float_array, QParams, could_not_run)
from ember._tensor import Tensor, _make
from ember.autograd.graph import bump_version


def _same_type(fname, tensors):
    first = tensors[0]
    for t in tensors[1:]:
        if not is_quantized(t) or t.dtype is not first.dtype:
            raise RuntimeError(f"{fname}: all tensors must have the same quantized dtype, got "
                               f"{first.dtype} and {t.dtype}")


@quantized_kernel("cat")
def cat(op, args, out):
    """torch.cat of quantized tensors: per tensor only; inputs with other parameters than the
    first are requantized to the first's (torch's ``quantized::cat`` with the first's qparams)."""
    tensors, dim = list(args[0]), args[1]
    _same_type("cat", tensors)
    qps = [qparams(t) for t in tensors]
    if any(qp.per_channel for qp in qps):
        raise RuntimeError("Only per-tensor quantization is supported in 'cat'!")
    qp = qps[0]
    if all(p == qp for p in qps):
        ints = np.concatenate([int_array(t) for t in tensors], axis=dim % tensors[0].dim())
        return from_ints(ints, tensors[0].dtype, qp)
    values = np.concatenate([float_array(t) for t in tensors], axis=dim % tensors[0].dim())
    return per_tensor(tensors[0].dtype, values, qp.scale, qp.zero_point)


@quantized_kernel("relu", "relu_")
def relu(op, args, out):
    """max(q, zero_point) on the integers: no requantization."""
    x = args[0]
    qp = qparams(x)
    ints = int_array(x)
    zero = qp.broadcast(x.dim())[1]
    result = np.maximum(ints, np.asarray(zero).astype(ints.dtype))
    if op.is_inplace:
        ints[...] = result
        bump_version(x)
        return x
    return from_ints(result, x.dtype, qp)


@quantized_kernel("equal")
def equal(op, args, out):
    a, b = args[0], args[1]
    if not (is_quantized(a) and is_quantized(b)):
        return False
    return a.dtype is b.dtype and a.shape == b.shape and qparams(a) == qparams(b) and \
        bool(np.array_equal(int_array(a), int_array(b)))


# ------------------------------------------------------------------ helpers

_F32 = np.float32


def _per_tensor_qp(fname, x):
    qp = qparams(x)
    if qp.per_channel:
        raise RuntimeError("Expected quantizer->qscheme() == kPerTensorAffine to be true, but "
                           "got false.  (Could this error message be improved?  If so, please "
                           "report an enhancement request to PyTorch.)")
    return qp


def _pointwise(x, fn, scale=None, zero_point=None):
    """``fn`` on the values of the per-tensor quantized ``x``, requantized to (scale,
    zero_point) (default: x's own) with the elementwise kernels' rounding."""
    from ember._ops.quantized_functional import apply_pointwise
    qp = _per_tensor_qp("", x)
    return apply_pointwise(x, fn, qp.scale if scale is None else scale,
                           qp.zero_point if zero_point is None else zero_point)


def _number(v):
    """A Python number of a number or a one-element tensor (None stays None)."""
    if v is None or not isinstance(v, Tensor):
        return v
    return v.item()


def _refuse(name):
    def kernel(op, args, out):
        raise could_not_run(name)
    return kernel


_PROMOTE = "promoteTypes with quantized numbers is not handled yet; figure out what the " \
    "correct rules should be, offending types: {} Float"
_QNAMES = {"quint8": "QUInt8", "qint8": "QInt8", "qint32": "QInt32", "quint4x2": "QUInt4x2"}


# ------------------------------------------------------------------ fixed-range activations
# sigmoid and hardsigmoid land in [0, 1], tanh in [-1, 1]: torch gives their results fixed
# parameters (scale 1/256 resp. 2/256, the zero point at the range's start resp. middle)

_FIXED = {
    "sigmoid": {"quint8": (1 / 256, 0), "qint8": (1 / 256, -128), "qint32": (2.0 ** -32, 0)},
    "hardsigmoid": {"quint8": (1 / 256, 0), "qint8": (1 / 256, -128),
                    "qint32": (2.0 ** -32, 0)},
    "tanh": {"quint8": (2 / 256, 128), "qint8": (2 / 256, 0), "qint32": (2.0 ** -31, 0)},
}


def _sigmoid(x):
    return (_F32(1) / (_F32(1) + np.exp(-x))).astype(_F32)


def _hardsigmoid(x):
    return (np.clip(x + _F32(3), _F32(0), _F32(6)) / _F32(6)).astype(_F32)


def fixed_range(name, fn, x):
    scale, zero_point = _FIXED[name][x.dtype.name]
    return _pointwise(x, fn, scale, zero_point)


@quantized_kernel("sigmoid")
def sigmoid(op, args, out):
    return fixed_range("sigmoid", _sigmoid, args[0])


@quantized_kernel("tanh")
def tanh(op, args, out):
    return fixed_range("tanh", lambda v: np.tanh(v).astype(_F32), args[0])


quantized_kernel("sigmoid_")(_refuse("sigmoid.out"))
quantized_kernel("tanh_")(_refuse("tanh.out"))


@quantized_kernel("gelu")
def gelu(op, args, out):
    from ember._kernels.elementwise import gelu as float_gelu
    x, approximate = args[0], args[1]
    qp = _per_tensor_qp("gelu", x)
    # torch's quantized gelu gives its output the input's scale rounded to float32
    return _pointwise(x, lambda v: np.asarray(float_gelu(v, approximate), _F32),
                      float(_F32(qp.scale)), qp.zero_point)


# ------------------------------------------------------------------ clamp

def clamp_values(x, lo, hi):
    """torch.clamp of a quantized tensor: the clamp of its values, requantized to its own
    parameters (per tensor)."""
    if lo is None and hi is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    lo = None if lo is None else _F32(lo)
    hi = None if hi is None else _F32(hi)
    return _pointwise(x, lambda v: np.clip(v, lo, hi))


@quantized_kernel("clamp.Tensor")
def clamp(op, args, out):
    x, lo, hi = args[0], args[1], args[2]
    # (ember's front passes numbers as 0-d tensors: only larger tensors are refused here)
    for bound in (lo, hi):
        if isinstance(bound, Tensor) and bound.dim() > 0:
            raise RuntimeError(_PROMOTE.format(_QNAMES[x.dtype.name]))
    return clamp_values(x, _number(lo), _number(hi))


@quantized_kernel("clamp_.Tensor", "clamp_min.Tensor", "clamp_max.Tensor", "clamp_min_.Tensor",
                  "clamp_max_.Tensor")
def clamp_refused(op, args, out):
    """torch takes only torch.clamp(qx, min, max) with numbers; the rest fail promoting."""
    raise RuntimeError(_PROMOTE.format(_QNAMES[args[0].dtype.name]))


# ------------------------------------------------------------------ comparisons

def _values(t):
    """float32 values of a quantized or plain operand (a number stays a number)."""
    if is_quantized(t):
        return float_array(t)
    if isinstance(t, Tensor):
        return np.asarray(t._data)
    return t


def _compare(np_fn):
    def kernel(op, args, out):
        return _make(np_fn(_values(args[0]), _values(args[1])))
    return kernel


for _name, _fn in (("eq", np.equal), ("ne", np.not_equal), ("lt", np.less),
                   ("le", np.less_equal), ("gt", np.greater), ("ge", np.greater_equal)):
    quantized_kernel(f"{_name}.Tensor", f"{_name}.Scalar")(_compare(_fn))


# ------------------------------------------------------------------ order: max, min, sort, topk

@quantized_kernel("max", "min")
def max_min_all(op, args, out):
    x = args[0]
    ints = int_array(x)
    if ints.size == 0:
        raise RuntimeError(f"{op.public_name}(): Expected reduction dim to be specified for "
                           "input.numel() == 0. Specify the reduction dim with the 'dim' "
                           "argument.")
    v = ints.max() if op.public_name == "max" else ints.min()
    return from_ints(np.asarray(v), x.dtype, qparams(x))


def _named(op, values, indices):
    from ember.return_types import wrap_returns
    return wrap_returns(op, (values, indices))


@quantized_kernel("max.dim", "min.dim")
def max_min_dim(op, args, out):
    x, dim, keepdim = args[0], args[1] % max(args[0].dim(), 1), args[2]
    ints = int_array(x)
    take = np.argmax if op.public_name == "max" else np.argmin
    idx = take(ints, axis=dim)
    vals = np.take_along_axis(ints, np.expand_dims(idx, dim), dim)
    if not keepdim:
        vals = vals.squeeze(dim)
    else:
        idx = np.expand_dims(idx, dim)
    return _named(op, from_ints(vals, x.dtype, qparams(x)), _make(idx.astype(np.int64)))


def _order(ints, dim, descending):
    """A stable order of ``ints`` along ``dim`` (descending: larger first, ties in order)."""
    key = -ints.astype(np.int64) if descending else ints
    return np.argsort(key, axis=dim, kind="stable")


@quantized_kernel("sort")
def sort(op, args, out):
    x, dim, descending = args[0], args[1] % max(args[0].dim(), 1), args[2]
    ints = int_array(x)
    idx = _order(ints, dim, descending)
    vals = np.take_along_axis(ints, idx, dim)
    return _named(op, from_ints(vals, x.dtype, qparams(x)), _make(idx.astype(np.int64)))


@quantized_kernel("argsort")
def argsort(op, args, out):
    x, dim, descending = args[0], args[1] % max(args[0].dim(), 1), args[2]
    return _make(_order(int_array(x), dim, descending).astype(np.int64))


@quantized_kernel("topk")
def topk(op, args, out):
    x, k, dim, largest = args[0], args[1], args[2] % max(args[0].dim(), 1), args[3]
    ints = int_array(x)
    if not 0 <= k <= (ints.shape[dim] if ints.ndim else 1):
        raise RuntimeError("selected index k out of range")
    idx = np.take(_order(ints, dim, largest), np.arange(k), axis=dim)
    vals = np.take_along_axis(ints, idx, dim)
    return _named(op, from_ints(vals, x.dtype, qparams(x)), _make(idx.astype(np.int64)))


# ------------------------------------------------------------------ means

@quantized_kernel("mean")
def mean(op, args, out):
    """Over trailing dimensions of a contiguous tensor: the integers' average,
    ``nearbyint(sum / count)``; else (as torch) the float mean of the values, quantized to the
    input's parameters (torch's float summation order is not reproduced: on exact half-way
    means the two may differ by one)."""
    from ember._kernels.quantized_ops import integer_mean
    x, dim, keepdim = args[0], args[1], args[2]
    dim = [dim] if isinstance(dim, int) else dim
    qp = _per_tensor_qp("mean", x)
    ints = int_array(x)
    nd = ints.ndim
    dims = tuple(range(nd)) if dim is None or len(dim) == 0 else \
        tuple(sorted({d % max(nd, 1) for d in dim}))
    count = int(np.prod([ints.shape[d] for d in dims])) if nd else 1
    if dims == tuple(range(nd - len(dims), nd)) and ints.flags.c_contiguous:
        result = integer_mean(ints.astype(np.int64).sum(axis=dims, keepdims=keepdim), count)
        lo, hi = _dtype.QRANGE[x.dtype]
        return from_ints(np.clip(result, lo, hi), x.dtype, qp)
    values = float_array(x).mean(axis=dims, keepdims=keepdim, dtype=_F32)
    return per_tensor(x.dtype, values, qp.scale, qp.zero_point)


@quantized_kernel("std.correction")
def std(op, args, out):
    """torch gives the standard deviation of the values quantized to the input's
    parameters."""
    x, dim, correction, keepdim = args[0], args[1], args[2], args[3]
    dim = [dim] if isinstance(dim, int) else dim
    qp = _per_tensor_qp("std", x)
    v = float_array(x).astype(np.float64)
    dims = None if dim is None or len(dim) == 0 else tuple(d % x.dim() for d in dim)
    ddof = 1 if correction is None else float(_number(correction))
    result = np.std(v, axis=dims, ddof=ddof, keepdims=keepdim).astype(_F32)
    return per_tensor(x.dtype, result, qp.scale, qp.zero_point)


# ------------------------------------------------------------------ writing values

def _quantize_into(x, values):
    """float values quantized with x's parameters (quantize_per_tensor's rule), as integers."""
    qp = _per_tensor_qp("", x)
    lo, hi = _dtype.QRANGE[x.dtype]
    values = np.asarray(values, _F32)
    return K.requantize(values.reshape(-1), qp.scale, qp.zero_point, lo, hi,
                        _dtype.QSTORAGE[x.dtype]).reshape(values.shape)


@quantized_kernel("fill_.Tensor", "fill_.Scalar")
def fill_(op, args, out):
    x = args[0]
    int_array(x)[...] = _quantize_into(x, _number(args[1]))
    bump_version(x)
    return x


@quantized_kernel("masked_fill.Tensor", "masked_fill_.Tensor", "masked_fill.Scalar",
                  "masked_fill_.Scalar")
def masked_fill(op, args, out):
    x, mask, value = args[0], args[1], _number(args[2])
    target = x if op.is_inplace else from_ints(int_array(x).copy(), x.dtype, qparams(x))
    ints = int_array(target)
    ints[...] = np.where(np.asarray(mask._data, bool), _quantize_into(x, value), ints)
    if op.is_inplace:
        bump_version(x)
    return target


@quantized_kernel("copy_")
def copy_(op, args, out):
    """Into a quantized tensor: a float source is quantized with the target's parameters; a
    quantized source brings its integers and parameters."""
    x, src = args[0], args[1]
    if not is_quantized(x):
        raise RuntimeError("Copying from quantized Tensor to non-quantized Tensor is not "
                           "allowed, please use dequantize to get a float Tensor from a "
                           "quantized Tensor")
    if is_quantized(src):
        if src.dtype is not x.dtype:
            raise RuntimeError("Quantized Copy only works with same qtype")
        int_array(x)[...] = np.broadcast_to(int_array(src), x.shape)
        x._qparams = qparams(src)
    else:
        int_array(x)[...] = np.broadcast_to(_quantize_into(x, np.asarray(src._data)), x.shape)
    bump_version(x)
    return x


@quantized_kernel("index_put_", "index_put")
def index_put(op, args, out):
    x, indices, values, accumulate = args[0], args[1], args[2], args[3]
    if is_quantized(values):
        raise RuntimeError("Value argument for quantized input_put should not be quantized")
    if accumulate:
        raise RuntimeError("Accumulate is not supported for quantized tensors")
    target = x if op.is_inplace else from_ints(int_array(x).copy(), x.dtype, qparams(x))
    key = tuple(None if i is None else np.asarray(i._data) for i in indices)
    int_array(target)[key] = _quantize_into(x, np.asarray(values._data))
    if op.is_inplace:
        bump_version(x)
    return target


@quantized_kernel("_to_copy")
def to_copy(op, args, out):
    """torch copies a quantized tensor only to its own dtype."""
    x, dtype = args[0], args[1]
    if dtype is None or dtype is x.dtype:
        from ember._kernels.core import clone
        ints = clone(int_array(x), args[2] if len(args) > 2 else None)
        return from_ints(ints, x.dtype, qparams(x))
    if dtype in _dtype.QUANTIZED:
        raise RuntimeError("Expected self.scalar_type() == src.scalar_type() to be true, but got "
                           "false.  (Could this error message be improved?  If so, please "
                           "report an enhancement request to PyTorch.)")
    raise RuntimeError("Creation of quantized tensor requires quantized dtype like torch.quint8")


@quantized_kernel("stack")
def stack(op, args, out):
    tensors, dim = list(args[0]), args[1]
    nd = tensors[0].dim() + 1
    return cat(op, ([t.unsqueeze(dim % nd) for t in tensors], dim % nd), out)


@quantized_kernel("constant_pad_nd")
def constant_pad_nd(op, args, out):
    """Padding with ``value`` quantized to the input's parameters."""
    x, pad, value = args[0], list(args[1]), args[2]
    qp = qparams(x)
    if qp.per_channel:
        raise RuntimeError("Only per-tensor padding is supported.")
    ints = int_array(x)
    widths = [(0, 0)] * ints.ndim
    for i in range(len(pad) // 2):
        widths[ints.ndim - 1 - i] = (pad[2 * i], pad[2 * i + 1])
    fill = _quantize_into(x, _number(value))
    if any(a < 0 or b < 0 for a, b in widths):
        raise NotImplementedError("constant_pad_nd of a quantized tensor: negative padding")
    return from_ints(np.pad(ints, widths, constant_values=fill), x.dtype, qp)


# ------------------------------------------------------------------ refusals under torch's names

for _record, _aten in (("softmax.int", "_softmax.out"), ("log_softmax.int", "_log_softmax.out"),
                       ("silu", "silu.out"), ("silu_", "silu.out"), ("mish", "mish.out"),
                       ("zeros_like", "zero_"), ("sum", "sum.IntList_out"),
                       ("neg", "neg.out"), ("abs", "abs.out")):
    quantized_kernel(_record)(_refuse(_aten))


@quantized_kernel("empty_like")
def empty_like(op, args, out):
    """A quantized tensor of the same shape and parameters (torch's contents are undefined;
    these are the zero point)."""
    x = args[0]
    if args[1] is not None and args[1] is not x.dtype:
        raise NotImplementedError(f"empty_like of a quantized tensor as {args[1]}")
    qp = qparams(x)
    zero = np.broadcast_to(np.asarray(qp.broadcast(x.dim())[1]), x.shape)
    return from_ints(np.array(zero, dtype=_dtype.QSTORAGE[x.dtype]), x.dtype, qp)
