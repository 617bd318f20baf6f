"""The ``quantized::`` op records (``ember.ops.quantized.add`` ...): the kernels that
``ember.ao.nn.quantized`` modules and converted graphs call. Each is one record, so the
profiler, tracer and JIT see it like any other op; each computes torch's x86/fbgemm integers
(the rules in ember/_kernels/quantized.py and quantized_ops.py, found by running torch on
random inputs). Arithmetic and activations here; pooling and normalization in
quantized_pooling.py / quantized_norm.py."""
from __future__ import annotations

import warnings

import numpy as np

from ember import _dtype
from ember._kernels import quantized as K
from ember._kernels import quantized_ops as QK
from ember._ops.quantized import defop, qparams, int_array, from_ints, QParams, is_quantized
from ember._tensor import Tensor

_OPTS = dict(function=False, method=False, out=False, differentiable=False)
_F32 = np.float32


def not_for_cpu(op_name):
    """torch's refusal of a ``quantized::`` op given float tensors."""
    return NotImplementedError(
        f"Could not run 'quantized::{op_name}' with arguments from the 'CPU' backend. This "
        "could be because the operator doesn't exist for this backend, or was omitted during "
        "the selective/custom build process (if using custom build).")


def _check(fname, qx):
    if not is_quantized(qx):
        raise not_for_cpu(fname)
    qp = qparams(qx)
    if qp.per_channel:
        raise RuntimeError("Expected quantizer->qscheme() == kPerTensorAffine to be true, but "
                           "got false.  (Could this error message be improved?  If so, please "
                           "report an enhancement request to PyTorch.)")
    return qp


def _check_pair(fname, qa, qb):
    if not (is_quantized(qa) and is_quantized(qb)):
        raise RuntimeError(f"quantized::{fname} expects quantized tensors, got {qa.dtype} and "
                           f"{qb.dtype}")
    if qa.dtype is not qb.dtype:
        raise RuntimeError(f"quantized::{fname}: both inputs must have the same dtype, got "
                           f"{qa.dtype} and {qb.dtype}")


def per_tensor_result(ints, qdtype, scale, zero_point):
    return from_ints(ints, qdtype, QParams(_dtype.per_tensor_affine, float(scale),
                                           int(zero_point)))


def apply_pointwise(qx, fn, scale, zero_point, inverse_in_double=False):
    """``fn`` (float32 array -> float32 array) on a per-tensor quantized tensor, requantized
    to (scale, zero_point) with the elementwise kernels' rounding (quantized_ops.pointwise)."""
    qp = qparams(qx)
    lo, hi = _dtype.QRANGE[qx.dtype]
    ints = QK.pointwise(int_array(qx), qp.scale, qp.zero_point, fn, scale, zero_point, lo, hi,
                        _dtype.QSTORAGE[qx.dtype], inverse_in_double)
    return per_tensor_result(ints, qx.dtype, scale, zero_point)


def write_into(out, result):
    """Copy ``result``'s integers and parameters into the quantized tensor ``out``."""
    int_array(out)[...] = int_array(result)
    out._qparams = qparams(result)
    return out


# ------------------------------------------------------------------ two-tensor arithmetic

def _binary(fname, qa, qb, scale, zero_point, combine, relu):
    """dequantize both, ``combine`` in float32, requantize: the elementwise kernels' rounding
    (vector body, scalar tail: quantized_ops.pointwise_n)."""
    _check_pair(fname, qa, qb)
    pa, pb = qparams(qa), qparams(qb)
    lo, hi = _dtype.QRANGE[qa.dtype]
    ints = QK.pointwise_n([(int_array(qa), pa.scale, pa.zero_point),
                           (int_array(qb), pb.scale, pb.zero_point)], combine, scale,
                          zero_point, lo, hi, _dtype.QSTORAGE[qa.dtype])
    if relu:
        np.maximum(ints, np.asarray(zero_point).astype(ints.dtype), out=ints)
    return per_tensor_result(ints, qa.dtype, scale, zero_point)


def _binary_out(fname, qa, qb, out, combine, relu):
    qp = qparams(out)
    return write_into(out, _binary(fname, qa, qb, qp.scale, qp.zero_point, combine, relu))


def _def_binary(name, combine, relu):
    defop(f"quantized::{name}(Tensor qa, Tensor qb, float scale, int zero_point) -> Tensor qc",
          composite=lambda qa, qb, scale, zero_point:
          _binary(name, qa, qb, scale, zero_point, combine, relu), **_OPTS)
    defop(f"quantized::{name}.out(Tensor qa, Tensor qb, Tensor(a!) out) -> Tensor(a!) out",
          composite=lambda qa, qb, out: _binary_out(name, qa, qb, out, combine, relu), **_OPTS)


# ------------------------------------------------------------------ tensor and scalar

def _scalar(b):
    return float(b.item()) if isinstance(b, Tensor) else float(b)


def _add_scalar(fname, qa, b, relu):
    """Adding a number moves the zero point by ``round(b / scale)`` while it stays in range
    (integers unchanged); past the range the output takes the range's end as zero point and a
    scale covering the shifted range, ``(qmax - zp + c) / (qmax - qmin) * scale`` (float64), and
    the shifted integers ``q - zp + c`` are requantized onto it with a float32 multiplier.
    ``_relu``: then max(q, zp)."""
    qp = _check(fname, qa)
    b = _scalar(b)
    lo, hi = _dtype.QRANGE[qa.dtype]
    s, z = qp.scale, qp.zero_point
    c = int(np.rint(b / s))
    q = int_array(qa)
    if lo <= z - c <= hi:
        out_s, out_z, ints = s, z - c, q.copy()
    else:
        if c > 0:
            out_s, out_z = float(hi - z + c) / (hi - lo) * s, lo
        else:
            out_s, out_z = float(z - lo - c) / (hi - lo) * s, hi
        # requantized from the integers: nearbyint(float32(q - zp + c) * multiplier) + zp',
        # multiplier = float32(scale) * (1 / float32(scale')) in float32
        multiplier = _F32(s) * (_F32(1) / _F32(out_s))
        shifted = (q.astype(np.int64) - z + c).astype(_F32) * multiplier
        ints = np.clip(np.rint(shifted).astype(np.int64) + out_z, lo, hi).astype(q.dtype)
    if relu:
        np.maximum(ints, np.asarray(out_z).astype(ints.dtype), out=ints)
    return per_tensor_result(ints, qa.dtype, out_s, out_z)


def _mul_scalar(fname, qa, b, relu):
    """Multiplying by a number keeps the integers and scales the scale by ``|b|``; a negative
    ``b`` mirrors them (``q -> qmin + qmax - q``, same for the zero point); ``b == 0`` gives
    zeros with scale 1, zero point 0. ``_relu``: then max(q, zero_point)."""
    qp = _check(fname, qa)
    b = _scalar(b)
    lo, hi = _dtype.QRANGE[qa.dtype]
    q = int_array(qa)
    if b == 0.0:
        return per_tensor_result(np.zeros_like(q), qa.dtype, 1.0, 0)
    if b > 0:
        ints, out_z = q.copy(), qp.zero_point
    else:
        ints = (lo + hi - q.astype(np.int64)).astype(q.dtype)
        out_z = lo + hi - qp.zero_point
    if relu:
        np.maximum(ints, np.asarray(out_z).astype(ints.dtype), out=ints)
    return per_tensor_result(ints, qa.dtype, qp.scale * abs(b), out_z)


def _def_scalar(name, fn, relu):
    defop(f"quantized::{name}(Tensor qa, Scalar b) -> Tensor qc",
          composite=lambda qa, b: fn(name, qa, b, relu), **_OPTS)
    # torch's add_scalar_relu.Tensor skips the relu (mul_scalar_relu.Tensor applies it)
    tensor_relu = relu and fn is _mul_scalar
    defop(f"quantized::{name}.Tensor(Tensor qa, Tensor b) -> Tensor qc",
          composite=lambda qa, b: fn(name, qa, b, tensor_relu), **_OPTS)


def _def_scalar_overloads(name, fn, relu):
    """``quantized::add.Scalar`` / ``.Scalar2`` (number first) / ``.Scalar_out``."""
    defop(f"quantized::{name}.Scalar(Tensor qa, Scalar b) -> Tensor qc",
          composite=lambda qa, b: fn(name, qa, b, relu), **_OPTS)
    defop(f"quantized::{name}.Scalar2(Scalar b, Tensor qa) -> Tensor qc",
          composite=lambda b, qa: fn(name, qa, b, relu), **_OPTS)
    defop(f"quantized::{name}.Scalar_out(Tensor qa, Scalar b, Tensor(a!) out) -> "
          "Tensor(a!) out", composite=lambda qa, b, out: write_into(out, fn(name, qa, b, relu)),
          **_OPTS)


for _name, _combine, _relu in (("add", np.add, False), ("add_relu", np.add, True),
                               ("mul", np.multiply, False), ("mul_relu", np.multiply, True)):
    _def_binary(_name, _combine, _relu)
    _def_scalar_overloads(_name, _add_scalar if _name.startswith("add") else _mul_scalar, _relu)
for _name, _fn, _relu in (("add_scalar", _add_scalar, False),
                          ("add_scalar_relu", _add_scalar, True),
                          ("mul_scalar", _mul_scalar, False),
                          ("mul_scalar_relu", _mul_scalar, True)):
    _def_scalar(_name, _fn, _relu)
defop("quantized::add_out(Tensor qa, Tensor qb, Tensor(a!) out) -> Tensor(a!) out",
      composite=lambda qa, qb, out: _binary_out("add_out", qa, qb, out, np.add, False), **_OPTS)
defop("quantized::add_relu_out(Tensor qa, Tensor qb, Tensor(a!) out) -> Tensor(a!) out",
      composite=lambda qa, qb, out: _binary_out("add_relu_out", qa, qb, out, np.add, True),
      **_OPTS)
defop("quantized::mul_out(Tensor qa, Tensor qb, Tensor(a!) out) -> Tensor(a!) out",
      composite=lambda qa, qb, out: _binary_out("mul_out", qa, qb, out, np.multiply, False),
      **_OPTS)
defop("quantized::add_scalar_out(Tensor qa, Scalar b, Tensor(a!) out) -> Tensor(a!) out",
      composite=lambda qa, b, out: write_into(out, _add_scalar("add_scalar_out", qa, b, False)),
      **_OPTS)


# ------------------------------------------------------------------ matmul

def _matmul(qa, qb, scale, zero_point):
    """Both dequantized, multiplied (float64 sums, rounded to float32), quantized with
    quantize_per_tensor's rule (batched as torch.matmul)."""
    if not (is_quantized(qa) and is_quantized(qb)) or qa.dtype is not qb.dtype:
        raise RuntimeError("MatMul operands should have same data type.")
    _check("matmul", qa)
    _check("matmul", qb)
    a = K.dequantize(int_array(qa), qparams(qa).scale, qparams(qa).zero_point)
    b = K.dequantize(int_array(qb), qparams(qb).scale, qparams(qb).zero_point)
    y = np.matmul(a.astype(np.float64), b.astype(np.float64)).astype(_F32)
    lo, hi = _dtype.QRANGE[qa.dtype]
    ints = K.requantize(y, scale, zero_point, lo, hi, _dtype.QSTORAGE[qa.dtype])
    return per_tensor_result(ints, qa.dtype, scale, zero_point)


defop("quantized::matmul(Tensor qa, Tensor qb, float scale, int zero_point) -> Tensor qc",
      composite=_matmul, **_OPTS)


# ------------------------------------------------------------------ cat

def _cat(fname, qx, dim, scale, zero_point, relu):
    """Each input dequantized and quantized onto the output's parameters (the first input's
    when not given) with quantize_per_tensor's rule; ``_relu`` clamps at zero first."""
    qx = list(qx)
    if not qx:
        raise RuntimeError(f"quantized::{fname}: expected a non-empty list of tensors")
    for t in qx:
        _check(fname, t)
        if t.dtype is not qx[0].dtype:
            raise RuntimeError(f"quantized::{fname}: all tensors must have the same dtype, got "
                               f"{qx[0].dtype} and {t.dtype}")
    first = qparams(qx[0])
    scale = first.scale if scale is None else scale
    zero_point = first.zero_point if zero_point is None else zero_point
    lo, hi = _dtype.QRANGE[qx[0].dtype]
    storage = _dtype.QSTORAGE[qx[0].dtype]
    parts = []
    for t in qx:
        qp = qparams(t)
        x = K.dequantize(int_array(t), qp.scale, qp.zero_point)
        if relu:
            x = np.maximum(x, _F32(0))
        parts.append(K.requantize(x, scale, zero_point, lo, hi, storage))
    ints = np.concatenate(parts, axis=dim % qx[0].dim())
    return per_tensor_result(ints, qx[0].dtype, scale, zero_point)


defop("quantized::cat(Tensor[] qx, int dim, float? scale, int? zero_point) -> Tensor",
      composite=lambda qx, dim, scale, zero_point: _cat("cat", qx, dim, scale, zero_point,
                                                        False), **_OPTS)
defop("quantized::cat_relu(Tensor[] qx, int dim, float? scale, int? zero_point) -> Tensor",
      composite=lambda qx, dim, scale, zero_point: _cat("cat_relu", qx, dim, scale,
                                                        zero_point, True), **_OPTS)


# ------------------------------------------------------------------ activations

def leaky_relu_fn(slope):
    slope = _F32(slope)
    return lambda x: np.where(x > 0, x, x * slope)


def elu_fn(alpha, scale=1.0, input_scale=1.0):
    """torch's elu: ``x * scale`` for x > 0, else ``(exp(x * input_scale) - 1) * alpha*scale``
    (exp, then minus one, in float32: not expm1)."""
    neg, pos, inp = _F32(alpha * scale), _F32(scale), _F32(input_scale)
    return lambda x: np.where(x > 0, x * pos, (np.exp(x * inp) - _F32(1)) * neg).astype(_F32)


def sigmoid_fn(x):
    return (_F32(1) / (_F32(1) + np.exp(-x))).astype(_F32)


def hardswish_fn(x):
    return (x * np.clip(x + _F32(3), _F32(0), _F32(6)) / _F32(6)).astype(_F32)


def clamp_fn(lo, hi):
    lo = None if lo is None else _F32(lo)
    hi = None if hi is None else _F32(hi)
    return lambda x: np.clip(x, lo, hi)


def _inplace_or_new(qx, result, inplace):
    if inplace:
        return write_into(qx, result)
    return result


def _relu6(qx, inplace):
    qp = _check("relu6", qx)
    return _inplace_or_new(qx, apply_pointwise(qx, clamp_fn(0.0, 6.0), qp.scale,
                                               qp.zero_point), inplace)


def _leaky_relu(qx, negative_slope, inplace, output_scale, output_zero_point):
    """A new tensor even with ``inplace`` (torch warns that it does not support it)."""
    _check("leaky_relu", qx)
    if inplace:
        warnings.warn("inplace=True is not supported for quantized::leaky_relu yet")
    return apply_pointwise(qx, leaky_relu_fn(float(negative_slope)), output_scale,
                           output_zero_point)


def _unary(fname, fn):
    def run(qx, output_scale, output_zero_point, *args):
        _check(fname, qx)
        return apply_pointwise(qx, fn(*args), output_scale, output_zero_point)
    return run


def _threshold(qx, threshold, value):
    qp = _check("threshold", qx)
    t, v = _F32(threshold), _F32(value)
    return apply_pointwise(qx, lambda x: np.where(x > t, x, v), qp.scale, qp.zero_point)


def _clamp(qx, min=None, max=None):
    qp = _check("clamp", qx)
    if min is None and max is None:
        raise RuntimeError("At least one of 'min' or 'max' must not be None")
    return apply_pointwise(qx, clamp_fn(min, max), qp.scale, qp.zero_point)


def _dropout(self, output_scale, output_zero_point, p=0.5, training=False):
    """Inference: the input itself (torch's quantized dropout ignores the output parameters)."""
    _check("dropout", self)
    if training:
        raise NotImplementedError("quantized::dropout: training mode is not supported")
    return self


defop("quantized::relu6(Tensor qx, bool inplace=False) -> Tensor",
      composite=_relu6, **_OPTS)
defop("quantized::leaky_relu(Tensor qx, Scalar negative_slope, bool inplace, "
      "float output_scale, int output_zero_point) -> Tensor", composite=_leaky_relu, **_OPTS)
defop("quantized::sigmoid(Tensor qx, float output_scale, int output_zero_point) -> Tensor",
      composite=_unary("sigmoid", lambda: sigmoid_fn), **_OPTS)
def _hardswish(input, output_scale, output_zero_point):
    """``x * clamp(x + 3, 0, 6) / 6``; its vector body multiplies by ``float32(1.0 / scale)``
    taken in float64 (the other kernels: the float32 quotient)."""
    _check("hardswish", input)
    return apply_pointwise(input, hardswish_fn, output_scale, output_zero_point,
                           inverse_in_double=True)


defop("quantized::hardswish(Tensor input, float output_scale, int output_zero_point) -> "
      "Tensor", composite=_hardswish, **_OPTS)
defop("quantized::elu(Tensor self, float output_scale, int output_zero_point, Scalar alpha=1, "
      "Scalar scale=1, Scalar input_scale=1) -> Tensor",
      composite=_unary("elu", lambda alpha=1, scale=1, input_scale=1:
                       elu_fn(float(alpha), float(scale), float(input_scale))), **_OPTS)
defop("quantized::celu(Tensor self, float output_scale, int output_zero_point, Scalar alpha=1)"
      " -> Tensor", composite=_unary("celu", lambda alpha=1:
                                     elu_fn(float(alpha), 1.0, 1.0 / float(alpha))), **_OPTS)
defop("quantized::threshold(Tensor qx, Scalar threshold, Scalar value) -> Tensor qy",
      composite=_threshold, **_OPTS)
defop("quantized::clamp(Tensor qx, Scalar? min=None, Scalar? max=None) -> Tensor qy",
      composite=_clamp, **_OPTS)
defop("quantized::dropout(Tensor self, float output_scale, int output_zero_point, "
      "Scalar p=0.5, bool training=False) -> Tensor", composite=_dropout, **_OPTS)


from ember._ops import quantized_norm  # noqa: E402,F401  (norms, softmax, pooling records)
