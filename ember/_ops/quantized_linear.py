"""``quantized::linear*`` op records and their packed weights.

``ember.ops.quantized.linear_prepack(qweight, bias)`` returns a :class:`LinearPackedParamsBase`
(torch's ``ScriptObject`` of that class: ``unpack()`` -> (qweight, bias)) that ``linear``,
``linear_relu``, ``linear_dynamic``... take. The integer arithmetic and torch's rounding
rules are in ember/_kernels/quantized_gemm.py.
"""
from __future__ import annotations

import numpy as np

from ember import _dtype
from ember._kernels import integer_gemm as IG
from ember._kernels import quantized_gemm as G
from ember._ops.quantized import defop, qparams, int_array, from_ints, QParams, is_quantized
from ember._tensor import _make

_OPTS = dict(function=False, method=False, out=False, differentiable=False)
_TYPE_NAME = {"quint8": "QUInt8", "qint8": "QInt8", "qint32": "QInt32", "quint4x2": "QUInt4x2"}


def _qname(t):
    return _TYPE_NAME.get(t.dtype.name, _dtype.TYPE_NAMES.get(t.dtype.name, str(t.dtype)))


def not_for_cpu(op_name):
    """torch's refusal of a ``quantized::`` op given float tensors."""
    return NotImplementedError(
        f"Could not run 'quantized::{op_name}' with arguments from the 'CPU' backend. This "
        "could be because the operator doesn't exist for this backend, or was omitted during "
        "the selective/custom build process (if using custom build).")


def check_input(x, op_name):
    """Activations of static quantized ops: quint8 tensors."""
    if not is_quantized(x):
        raise not_for_cpu(op_name)
    if x.dtype is not _dtype.quint8:
        raise RuntimeError(f"Expected input data type QUInt8 but got {_qname(x)}")


def require_onednn(op_name, sep=" "):
    """torch has some fused ops only in its 'onednn' engine; elsewhere it refuses them."""
    from ember.backends import quantized as engine
    if engine.engine != "onednn":
        raise RuntimeError(f"Didn't find engine for operation quantized::{op_name}{sep}"
                           f"{engine.engine.upper()}")


def check_weight(w, op_name):
    """Weights of quantized linear/conv: qint8 tensors."""
    if not is_quantized(w):
        raise not_for_cpu(op_name)
    if w.dtype is not _dtype.qint8:
        raise RuntimeError(f"expected scalar type QInt8 but found {_qname(w)}")


def weight_params(w):
    """(scale, zero_point) of a qint8 weight: scalars, or per output channel arrays."""
    qp = qparams(w)
    if qp.per_channel:
        return np.asarray(qp.scale, np.float64), np.asarray(qp.zero_point, np.int64)
    return qp.scale, qp.zero_point


def out_per_tensor(ints, scale, zero_point):
    """A quint8 tensor of ``ints`` with per-tensor parameters."""
    return from_ints(ints, _dtype.quint8, QParams(_dtype.per_tensor_affine, float(scale),
                                                  int(zero_point)))


class LinearPackedParamsBase:
    """torch.classes.quantized.LinearPackedParamsBase: a linear layer's weight and bias.

    ``weight`` is a qint8 tensor (O, K) (per tensor or per channel), or, for the float16
    packing, a float32 tensor holding float16 values; ``bias`` a float32 (O,) tensor or
    None."""

    def __init__(self, weight, bias, fp16=False):
        self.weight, self.bias, self.fp16 = weight, bias, fp16

    def _gemm_weight(self):
        """(float32 (K, O) shifted weight ``(w - w_zp).T``, max |w - w_zp|), built once
        for the weight it was made from."""
        cached = self.__dict__.get("_matrix")
        if cached is None or cached[0] is not self.weight:
            w = self.weight
            ws, wz = weight_params(w)
            wz = np.reshape(wz, (-1, 1)) if np.ndim(wz) else wz
            m = np.asarray(int_array(w), np.float32) - np.asarray(wz, np.float32)
            cached = self._matrix = (w, np.ascontiguousarray(m.T),
                                     int(np.max(np.abs(m))) if m.size else 0)
        return cached[1], cached[2]

    def _int8_weight(self):
        """(int8 (K, O) weight ``w.T``, its zero point(s)) for the integer GEMM, built once
        for the weight it was made from (None for a weight that is not qint8)."""
        cached = self.__dict__.get("_int8")
        if cached is None or cached[0] is not self.weight:
            w = self.weight
            ok = w.dtype is _dtype.qint8
            cached = self._int8 = (w, np.ascontiguousarray(int_array(w).T) if ok else None,
                                   IG.zero_points(weight_params(w)[1]))
        return cached[1], cached[2]

    def unpack(self):
        return self.weight, self.bias

    def _weight_bias(self):
        return self.weight, self.bias

    def __getstate__(self):
        return (self.weight, self.bias), \
            "__torch__.torch.classes.quantized.LinearPackedParamsBase"

    def __setstate__(self, state):
        (self.weight, self.bias), _ = state
        self.fp16 = not is_quantized(self.weight)

    def __repr__(self):
        return "ScriptObject <__torch__.torch.classes.quantized.LinearPackedParamsBase>"


def detached(bias):
    """The bias as the packed parameters keep it: the tensor given (torch keeps a
    Parameter's ``requires_grad`` too)."""
    return bias


def float32_scales(W):
    """``W`` with its scale(s) rounded to float32, as the fbgemm packing stores them."""
    qp = qparams(W)
    if qp.per_channel:
        qp = QParams(qp.qscheme, np.asarray(qp.scale, np.float32).astype(np.float64),
                     qp.zero_point, qp.axis)
    else:
        qp = QParams(qp.qscheme, float(np.float32(qp.scale)), int(qp.zero_point))
    return from_ints(np.array(int_array(W)), _dtype.qint8, qp)


def _linear_prepack(W, B=None):
    check_weight(W, "linear_prepack")
    from ember.backends import quantized as engine
    if engine.engine == "onednn" and np.any(qparams(W).zero_point):
        zp = qparams(W).zero_point
        raise RuntimeError("quantized::linear_prepack: ONEDNN only supports symmetric "
                           "quantization of weight, whose zero point must be 0, but got "
                           f"{int(np.asarray(zp).reshape(-1)[np.flatnonzero(zp)[0]])}")
    # fbgemm's packing keeps float32 scales; the 'onednn' engine's keeps them as given
    weight = W if engine.engine == "onednn" else float32_scales(W)
    return LinearPackedParamsBase(weight, detached(B))


def _linear_prepack_fp16(W, B=None):
    w16 = np.asarray(W._data, np.float32)
    lim = float(np.finfo(np.float16).max)
    w16 = np.clip(w16, -lim, lim).astype(np.float16).astype(np.float32)
    return LinearPackedParamsBase(_make(w16), detached(B), fp16=True)


def _check_packed(p, fp16=False):
    if not isinstance(p, LinearPackedParamsBase):
        raise RuntimeError(f"expected a LinearPackedParamsBase, got {type(p).__name__}")
    if p.fp16 != fp16:
        raise RuntimeError("quantized::linear_dynamic_fp16 expects a float16 packed weight"
                           if fp16 else "quantized linear expects a qint8 packed weight, got "
                           "a float16 one (use linear_dynamic_fp16)")


def _rows(x, K):
    """(N, K) view of the (..., K) array ``x``."""
    if x.shape[-1] != K:
        raise RuntimeError(f"The number of rows in the packB should be equal to K: "
                           f"{x.shape[-1]}")
    return x.reshape(-1, K)


# Below this many multiply-adds (N * K * O) the float32 path beats onnxruntime's integer
# GEMM, whose call costs about 15 us (measured: 64x256 by 256x10 11 us against 18 us,
# 196x64 by 64x64 about even, 49x960 by 960x160 196 us against 57 us).
INT_GEMM_MIN_WORK = 600_000


def int_rows_times_weight(xi, x_zp, packed):
    """Exact accumulator (N, O) of integer rows ``xi`` (N, K) shifted by ``x_zp`` times
    the packed weight: onnxruntime's int32 GEMM for large products, else one float32
    conversion and an exact sgemm (quantized_gemm.int_matmul)."""
    N, K = xi.shape
    if xi.dtype == np.uint8 and N * K * packed.weight.shape[0] >= INT_GEMM_MIN_WORK and \
            IG.available(K):     # onnxruntime's int8 GEMM
        b, b_zp = packed._int8_weight()
        if b is not None:
            return IG.matmul(xi, x_zp, b, b_zp)
    mat, w_max = packed._gemm_weight()
    x_max = max(int(x_zp), 255 - int(x_zp))      # bound of |x - x_zp| for any uint8 x
    if xi.shape[1] > G.exact_chunk(x_max, w_max) and xi.size:
        x_max = G.shifted_max(xi.min(), xi.max(), x_zp)
    a = np.subtract(xi, np.float32(x_zp), dtype=np.float32)
    return G.int_matmul(a, mat, x_max, w_max)


def _linear_static(X, W_prepack, Y_scale_i, Y_zero_point_i, relu):
    check_input(X, "linear")
    _check_packed(W_prepack)
    w, bias = W_prepack.unpack()
    O, K = w.shape
    xp = qparams(X)
    acc = int_rows_times_weight(_rows(int_array(X), K), xp.zero_point, W_prepack)
    ws = weight_params(w)[0]
    b = None if bias is None else np.asarray(bias._data, np.float32)
    ints = G.requantize_acc(acc, xp.scale, ws, b, Y_scale_i, Y_zero_point_i, relu, own=True)
    return out_per_tensor(ints.reshape(X.shape[:-1] + (O,)), Y_scale_i, Y_zero_point_i)


def _engine():
    import ember.backends.quantized
    return ember.backends.quantized.engine


def _linear_dynamic(X, W_prepack, reduce_range, relu):
    from ember._kernels import quantized as K_
    _check_packed(W_prepack)
    w, bias = W_prepack.unpack()
    O, K = w.shape
    x = _rows(np.asarray(X._data, np.float32), K)
    lo_v = float(x.min()) if x.size else 0.0
    hi_v = float(x.max()) if x.size else 0.0
    if reduce_range and _engine() == "qnnpack":
        reduce_range = False        # torch's QNNPACK kernel ignores reduce_range (it says so)
    xs, xz = K_.choose_qparams(lo_v, hi_v, 0, 255, reduce_range=reduce_range)
    xi = K_.quantize(x, xs, xz, 0, 255, np.uint8)
    acc = int_rows_times_weight(xi, xz, W_prepack)
    ws = weight_params(w)[0]
    b = None if bias is None else np.asarray(bias._data, np.float32)
    y = G.dynamic_output(acc, xs, ws, b, relu)
    return _make(y.reshape(X.shape[:-1] + (O,)))


def _linear_fp16(X, W_prepack, relu):
    _check_packed(W_prepack, fp16=True)
    w, bias = W_prepack.unpack()
    O, K = w.shape
    x = _rows(np.asarray(X._data, np.float32), K)
    b = None if bias is None else np.asarray(bias._data, np.float32)
    y = G.fp16_linear(x, np.asarray(w._data), b, relu)
    return _make(y.reshape(X.shape[:-1] + (O,)))


_P = "Any W_prepack"
linear_prepack = defop("quantized::linear_prepack(Tensor W, Tensor? B=None) -> Any",
                       composite=_linear_prepack, **_OPTS)
linear_prepack_fp16 = defop("quantized::linear_prepack_fp16(Tensor W, Tensor? B=None) -> Any",
                            composite=_linear_prepack_fp16, **_OPTS)
linear = defop(f"quantized::linear(Tensor X, {_P}, float Y_scale_i, int Y_zero_point_i) -> "
               "Tensor", composite=lambda X, W_prepack, Y_scale_i, Y_zero_point_i:
               _linear_static(X, W_prepack, Y_scale_i, Y_zero_point_i, False), **_OPTS)
linear_relu = defop(f"quantized::linear_relu(Tensor X, {_P}, float Y_scale_i, "
                    "int Y_zero_point_i) -> Tensor",
                    composite=lambda X, W_prepack, Y_scale_i, Y_zero_point_i:
                    _linear_static(X, W_prepack, Y_scale_i, Y_zero_point_i, True), **_OPTS)
def _linear_onednn_fused(X, W_prepack, Y_scale_i, Y_zero_point_i, op_name, eltwise):
    """``linear_leaky_relu``/``linear_tanh``: torch has them in its 'onednn' engine only;
    oneDNN's rounding (``requantize_acc_onednn``) with the activation applied in float32.
    (torch caches oneDNN's fused primitive per packed weight: a packed weight first used by
    another fused op keeps that op's activation; ember always applies the op's own.)"""
    require_onednn(op_name)
    check_input(X, op_name)
    _check_packed(W_prepack)
    w, bias = W_prepack.unpack()
    O, K = w.shape
    xp = qparams(X)
    ws = weight_params(w)[0]
    acc = int_rows_times_weight(_rows(int_array(X), K), xp.zero_point, W_prepack)
    b = None if bias is None else np.asarray(bias._data, np.float32)
    ints = G.requantize_acc_onednn(acc, xp.scale, ws, b, Y_scale_i, Y_zero_point_i, False,
                                   eltwise=eltwise)
    return out_per_tensor(ints.reshape(X.shape[:-1] + (O,)), Y_scale_i, Y_zero_point_i)


def _leaky(slope):
    slope = np.float32(slope)
    return lambda v: np.where(v < 0, (v * slope).astype(np.float32), v)


linear_leaky_relu = defop(f"quantized::linear_leaky_relu(Tensor X, {_P}, float Y_scale_i, "
                          "int Y_zero_point_i, float negative_slope) -> Tensor",
                          composite=lambda X, W_prepack, Y_scale_i, Y_zero_point_i,
                          negative_slope: _linear_onednn_fused(X, W_prepack, Y_scale_i,
                                                               Y_zero_point_i,
                                                               "linear_leaky_relu",
                                                               _leaky(negative_slope)),
                          **_OPTS)
linear_tanh = defop(f"quantized::linear_tanh(Tensor X, {_P}, float Y_scale_i, "
                    "int Y_zero_point_i) -> Tensor",
                    composite=lambda X, W_prepack, Y_scale_i, Y_zero_point_i:
                    _linear_onednn_fused(X, W_prepack, Y_scale_i, Y_zero_point_i,
                                         "linear_tanh", np.tanh), **_OPTS)
linear_dynamic = defop(f"quantized::linear_dynamic(Tensor X, {_P}, bool reduce_range=False) "
                       "-> Tensor", composite=lambda X, W_prepack, reduce_range=False:
                       _linear_dynamic(X, W_prepack, reduce_range, False), **_OPTS)
linear_relu_dynamic = defop(f"quantized::linear_relu_dynamic(Tensor X, {_P}, "
                            "bool reduce_range=False) -> Tensor",
                            composite=lambda X, W_prepack, reduce_range=False:
                            _linear_dynamic(X, W_prepack, reduce_range, True), **_OPTS)
linear_dynamic_fp16 = defop(f"quantized::linear_dynamic_fp16(Tensor X, {_P}) -> Tensor",
                            composite=lambda X, W_prepack: _linear_fp16(X, W_prepack, False),
                            **_OPTS)
linear_relu_dynamic_fp16 = defop(f"quantized::linear_relu_dynamic_fp16(Tensor X, {_P}) -> "
                                 "Tensor", composite=lambda X, W_prepack:
                                 _linear_fp16(X, W_prepack, True), **_OPTS)
linear_unpack = defop(f"quantized::linear_unpack({_P}) -> (Tensor, Tensor?)",
                      composite=lambda W_prepack: W_prepack.unpack(), **_OPTS)
linear_unpack_fp16 = defop(f"quantized::linear_unpack_fp16({_P}) -> (Tensor, Tensor?)",
                           composite=lambda W_prepack: W_prepack.unpack(), **_OPTS)
