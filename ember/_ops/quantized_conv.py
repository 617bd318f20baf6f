"""``quantized::conv*`` and ``quantized::conv_transpose*`` op records and packed weights.

``conv2d_prepack(qweight, bias, stride, padding, dilation, groups)`` returns a
:class:`ConvPackedParamsBase` that ``conv2d(qx, packed, scale, zero_point)`` takes. As in
torch, 1-d convolutions are packed as 2-d ones (weight (O, C/g, 1, k), stride ``[1, s]``...).
Rounding: the static rule of ember/_kernels/quantized_gemm.py.
"""
from __future__ import annotations

import numpy as np

from ember import _dtype
from ember._kernels import integer_gemm as IG
from ember._kernels import quantized_gemm as G
from ember._ops.quantized import defop, qparams, int_array, from_ints
from ember._tensor import _make
from ember._ops.quantized_linear import check_input, check_weight, weight_params, \
    out_per_tensor, float32_scales, detached, require_onednn

_OPTS = dict(function=False, method=False, out=False, differentiable=False)
_CLASS = {1: "Conv2dPackedParamsBase", 2: "Conv2dPackedParamsBase",
          3: "Conv3dPackedParamsBase"}


def _last(a):
    """(N, C, *S) -> (N, *S, C) view (np.moveaxis without its argument checks)."""
    return a.transpose((0,) + tuple(range(2, a.ndim)) + (1,))


# Convolutions with fewer taps (K = C/g * prod(k)) than this accumulate on the float32 path:
# there the GEMM costs about the same and its float32 accumulator saves the int32 one's
# conversion (measured: 1 input channel, 3x3, 64x8x8 -> 32 channels, with requantization
# 125 us against 150 us; from K = 16 on onnxruntime's integer GEMM is faster).
INT_GEMM_MIN_K = 16


def _first(a):
    """(N, *S, C) -> (N, C, *S) view."""
    return a.transpose((0, a.ndim - 1) + tuple(range(1, a.ndim - 1)))


class ConvPackedParamsBase:
    """torch.classes.quantized.Conv{2,3}dPackedParamsBase: weight, bias and geometry.

    ``weight``: qint8 (O, C/g, *k) (transposed: (C, O/g, *k)); ``bias``: float32 (O,) or
    None; ``stride``/``padding``/``output_padding``/``dilation``: lists, one per spatial dim
    (a 1-d convolution is stored as a 2-d one)."""

    def __init__(self, weight, bias, stride, padding, output_padding, dilation, groups,
                 transpose, onednn=None):
        self._w, self._b = weight, bias
        self._stride, self._padding = list(stride), list(padding)
        self._output_padding, self._dilation = list(output_padding), list(dilation)
        self._groups, self._transpose = int(groups), bool(transpose)
        if onednn is None:      # rebuilt from a saved state: the current engine decides
            onednn = uses_onednn(weight, groups, output_padding)
        self._onednn = bool(onednn)     # which engine's rounding (quantized_gemm.py)
        self._matrix = None             # the weight's GEMM form, made on first use

    def _gemm_weight(self):
        """(float32 (groups, prod(k)*C/g, O/g) shifted weight matrix, max |w - w_zp|),
        built once (quantized_gemm.conv_weight_matrix)."""
        if self._matrix is None:
            self._matrix = G.conv_weight_matrix(np.asarray(int_array(self._w)),
                                                weight_params(self._w)[1], self._groups)
        return self._matrix

    def _int8_weight(self):
        """(int8 (groups, prod(k)*C/g, O/g) weight matrices, zero point(s)) for the integer
        GEMM (integer_gemm.py), built once; None where the weight is not qint8."""
        if self.__dict__.get("_int8") is None:
            ok = self._w.dtype is _dtype.qint8
            self._int8 = (G.conv_weight_ints(np.asarray(int_array(self._w)), self._groups)
                          if ok else None, IG.zero_points(weight_params(self._w)[1]))
        return self._int8 if self._int8[0] is not None else None

    def unpack(self):
        return self._w, self._b

    def _weight_bias(self):
        return self._w, self._b

    def stride(self):
        return list(self._stride)

    def padding(self):
        return list(self._padding)

    def output_padding(self):
        return list(self._output_padding)

    def dilation(self):
        return list(self._dilation)

    def groups(self):
        return self._groups

    def transpose(self):
        return int(self._transpose)

    def __getstate__(self):
        return (self._w, self._b, self._stride, self._padding, self._output_padding,
                self._dilation, self._groups, self._transpose, self._onednn)

    def __setstate__(self, state):
        self.__init__(*state)

    def __repr__(self):
        return ("ScriptObject <__torch__.torch.classes.quantized."
                f"{_CLASS[len(self._stride)]}>")


def _check_list(name, values, n):
    values = list(values)
    if len(values) != n:
        raise RuntimeError(f"{name} should contain {n} elements for {n}D convolution.")
    return values


def uses_onednn(weight, groups, output_padding):
    """Whether torch runs this convolution through oneDNN: always under the 'onednn' engine;
    under 'x86' for symmetric weights (all zero points 0), at most 100 groups and no output
    padding (found by probing: other convolutions, and every one under 'fbgemm', go to
    fbgemm)."""
    from ember.backends import quantized as engine
    if engine.engine == "onednn":
        return True
    return engine.engine == "x86" and groups <= 100 and not any(output_padding) and \
        not bool(np.any(qparams(weight).zero_point))


def _check_onednn_engine(weight, output_padding, transpose):
    """The 'onednn' engine's refusals at packing."""
    from ember.backends import quantized as engine
    if engine.engine != "onednn":
        return
    if np.any(qparams(weight).zero_point):
        raise RuntimeError("quantized::qconv_prepack: ONEDNN only supports symmetric "
                           "quantization of weight, whose zero point must be 0.")
    if transpose and any(output_padding):
        raise RuntimeError("quantized::conv_prepack: ONEDNN only supports zero "
                           "output_padding.")


def _unsqueezed(w):
    """A (O, C, k) quantized weight as (O, C, 1, k), keeping its parameters."""
    ints = np.array(int_array(w))
    return from_ints(ints.reshape(ints.shape[:2] + (1,) + ints.shape[2:]), w.dtype, qparams(w))


def _prepack(n, weight, bias, stride, padding, output_padding, dilation, groups, transpose):
    name = f"conv{'_transpose' if transpose else ''}{n}d_prepack"
    check_weight(weight, name)
    if weight.dim() != n + 2:
        raise RuntimeError(f"quantized::{name}: expected a weight with {n + 2} dimensions, "
                           f"got {weight.dim()}")
    if transpose and qparams(weight).per_channel:
        raise RuntimeError("Per Channel Quantization is currently disabled for transposed conv")
    stride, padding, dilation = (_check_list(k, v, n) for k, v in
                                 (("stride", stride), ("padding", padding),
                                  ("dilation", dilation)))
    output_padding = _check_list("output_padding", output_padding, n) if transpose else [0] * n
    _check_onednn_engine(weight, output_padding, transpose)
    onednn = uses_onednn(weight, groups, output_padding)
    if not onednn:      # fbgemm keeps float32 scales; oneDNN keeps them as given
        weight = float32_scales(weight)
    if n == 1:
        weight = _unsqueezed(weight)
        stride, padding, dilation = [1] + stride, [0] + padding, [1] + dilation
        output_padding = [0] + output_padding
    return ConvPackedParamsBase(weight, detached(bias), stride, padding, output_padding, dilation,
                                groups, transpose, onednn)


def _accumulate(n, qx, packed, name, transpose, requant=None):
    """The exact integer accumulator of a quantized convolution (1-d as 2-d), with the
    input's parameters, the weight's scale(s) and the accumulator's channel axis: 1 for
    transposed convolutions (N, O, ...), else -1 (channels-last (N, ..., O)).
    ``requant`` = (output scale, zero point, relu): a depthwise convolution may come back
    already requantized (uint8: the compiled kernel, quantized_gemm.depthwise_requantized)."""
    check_input(qx, name)
    if qx.dim() != n + 2:
        raise RuntimeError(f"quantized::{name}(): Expected activation tensor to have {n + 2} "
                           f"dimensions, got {qx.dim()}")
    w, _ = packed.unpack()
    xp = qparams(qx)
    xi = np.asarray(int_array(qx))
    if n == 1:
        xi = xi[:, :, None, :]
    ws, wz = weight_params(w)
    if transpose:
        wsh = np.reshape(wz, (-1,) + (1,) * (w.dim() - 1)) if np.ndim(wz) else wz
        wshift = G.shifted(int_array(w), wsh)
        if packed._onednn:      # torch's x86 oneDNN route mixes channels up (see there)
            wshift = G.onednn_transposed_weight(wshift, packed._groups)
        acc = G.int_conv_transpose(G.shifted(xi, xp.zero_point), wshift, packed._stride,
                                   packed._padding, packed._output_padding, packed._dilation,
                                   packed._groups)
        return acc, xp, ws, 1
    C, Cw = xi.shape[1], w.shape[1] * packed._groups
    if C != Cw:
        raise RuntimeError(f"quantized::{name}: expected {Cw} input channels (weight "
                           f"{tuple(w.shape)}, groups {packed._groups}), got {C}")
    xl = np.ascontiguousarray(_last(xi))        # (N, *S, C)
    if packed._groups == C > 1:      # one input channel a group: tap by tap
        saturate = not packed._onednn and G.fbgemm_depthwise(
            C, packed._groups, w.shape, packed._stride, packed._padding, packed._dilation)
        ints = None if requant is None else G.depthwise_requantized(
            xl, xp.zero_point, np.asarray(int_array(w)), wz, packed._stride, packed._padding,
            packed._dilation, saturate, packed._onednn, xp.scale, ws, _bias(packed), *requant)
        if ints is not None:
            return ints, xp, ws, -1
        acc = G.depthwise_last(xl, xp.zero_point, np.asarray(int_array(w)), wz,
                               packed._stride, packed._padding, packed._dilation, saturate)
    else:
        mat, w_max = packed._gemm_weight()
        ints = packed._int8_weight() if xl.dtype == np.uint8 and \
            mat.shape[1] >= INT_GEMM_MIN_K and IG.available(mat.shape[1]) else None
        acc = G.conv_last(xl, xp.zero_point, mat, w_max, tuple(w.shape[2:]), packed._stride,
                          packed._padding, packed._dilation, packed._groups, ints)
    return acc, xp, ws, -1


def _bias(packed):
    bias = packed.unpack()[1]
    return None if bias is None else np.asarray(bias._data, np.float32)


def _channels_last(ints, axis, n):
    """Output integers as torch lays them out: channels-last (N, C, *S) with the channels
    innermost in memory; a 1-d convolution's (N, C, 1, L) back to (N, C, L)."""
    if axis == 1:
        ints = np.ascontiguousarray(_last(ints))
    ints = _first(ints)
    return ints[:, :, 0, :] if n == 1 else ints


def _conv(n, qx, packed, output_scale, output_zero_point, relu, transpose):
    name = f"conv{'_transpose' if transpose else ''}{n}d"
    acc, xp, ws, axis = _accumulate(n, qx, packed, name, transpose,
                                    (output_scale, output_zero_point, relu))
    if acc.dtype == np.uint8:       # requantized already
        ints = acc
    else:
        rule = G.requantize_acc_onednn if packed._onednn else G.requantize_acc
        ints = rule(acc, xp.scale, ws, _bias(packed), output_scale, output_zero_point, relu,
                    channel_axis=axis, own=True)
    return out_per_tensor(_channels_last(ints, axis, n), output_scale, output_zero_point)


def _conv_dynamic(n, x, packed, reduce_range, transpose):
    """The dynamic convolution as torch computes it: the float input quantized per tensor
    (``quantize_per_tensor_dynamic``, quint8, ``reduce_range``), the static convolution
    requantized with the input's own scale and zero point, dequantized (found by probing:
    equal bit for bit)."""
    from ember._ops.quantized import _quantize_per_tensor_dynamic, float_array
    qx = _quantize_per_tensor_dynamic(x, _dtype_quint8(), reduce_range)
    xp = qparams(qx)
    y = _conv(n, qx, packed, xp.scale, xp.zero_point, False, transpose)
    return _make(float_array(y))


def _dtype_quint8():
    from ember import _dtype
    return _dtype.quint8


def _conv2d_add(qx, qaccum, packed_weight, output_scale, output_zero_point, name, relu):
    """``conv2d(qx) + qaccum`` (then ReLU) requantized with oneDNN's sum; torch has it in
    its 'onednn' engine only. (torch caches oneDNN's fused primitive per packed weight: one
    first used by ``conv2d_add`` keeps no ReLU in ``conv2d_add_relu``; ember always applies
    the op's own.)"""
    require_onednn(name, ".")
    acc, xp, ws, axis = _accumulate(2, qx, packed_weight, name, False)
    check_input(qaccum, name)
    out_shape = (acc.shape[0], acc.shape[-1]) + acc.shape[1:-1]
    if tuple(qaccum.shape) != out_shape:
        raise RuntimeError(f"quantized::{name}: the accumulated tensor's shape "
                           f"{tuple(qaccum.shape)} differs from the output's {out_shape}")
    ap = qparams(qaccum)
    ints = G.requantize_acc_onednn(acc, xp.scale, ws, _bias(packed_weight), output_scale,
                                   output_zero_point, relu,
                                   accum=(_last(np.asarray(int_array(qaccum))),
                                          ap.scale, ap.zero_point), channel_axis=axis)
    return out_per_tensor(_channels_last(ints, axis, 2), output_scale, output_zero_point)


conv2d_add = defop("quantized::conv2d_add(Tensor qx, Tensor qaccum, Any packed_weight, "
                   "float output_scale, int output_zero_point) -> Tensor",
                   composite=lambda qx, qaccum, packed_weight, output_scale, output_zero_point:
                   _conv2d_add(qx, qaccum, packed_weight, output_scale, output_zero_point,
                               "conv2d_add", False), **_OPTS)
conv2d_add_relu = defop("quantized::conv2d_add_relu(Tensor qx, Tensor qaccum, Any "
                        "packed_weight, float output_scale, int output_zero_point) -> Tensor",
                        composite=lambda qx, qaccum, packed_weight, output_scale,
                        output_zero_point: _conv2d_add(qx, qaccum, packed_weight,
                                                       output_scale, output_zero_point,
                                                       "conv2d_add_relu", True), **_OPTS)


def _register(n):
    P = "Any packed_weight"
    conv_prepack = ("(Tensor weight, Tensor? bias, int[] stride, int[] padding, "
                    "int[] dilation, int groups) -> Any")
    tr_prepack = ("(Tensor weight, Tensor? bias, int[] stride, int[] padding, "
                  "int[] output_padding, int[] dilation, int groups) -> Any")
    run = f"(Tensor qx, {P}, float output_scale, int output_zero_point) -> Tensor"
    ops = {}
    ops[f"conv{n}d_prepack"] = defop(
        f"quantized::conv{n}d_prepack{conv_prepack}",
        composite=lambda weight, bias, stride, padding, dilation, groups:
        _prepack(n, weight, bias, stride, padding, [0] * n, dilation, groups, False), **_OPTS)
    ops[f"conv_transpose{n}d_prepack"] = defop(
        f"quantized::conv_transpose{n}d_prepack{tr_prepack}",
        composite=lambda weight, bias, stride, padding, output_padding, dilation, groups:
        _prepack(n, weight, bias, stride, padding, output_padding, dilation, groups, True),
        **_OPTS)
    for relu in (False, True):
        ops[f"conv{n}d{'_relu' if relu else ''}"] = defop(
            f"quantized::conv{n}d{'_relu' if relu else ''}{run}",
            composite=lambda qx, packed_weight, output_scale, output_zero_point, relu=relu:
            _conv(n, qx, packed_weight, output_scale, output_zero_point, relu, False), **_OPTS)
    ops[f"conv_transpose{n}d"] = defop(
        f"quantized::conv_transpose{n}d{run}",
        composite=lambda qx, packed_weight, output_scale, output_zero_point:
        _conv(n, qx, packed_weight, output_scale, output_zero_point, False, True), **_OPTS)
    for kind, transpose in (("conv", False), ("conv_transpose", True)):
        ops[f"{kind}{n}d_dynamic"] = defop(
            f"quantized::{kind}{n}d_dynamic(Tensor qx, {P}, bool reduce_range=False) -> Tensor",
            composite=lambda qx, packed_weight, reduce_range=False, transpose=transpose:
            _conv_dynamic(n, qx, packed_weight, reduce_range, transpose), **_OPTS)
    for kind in ("conv", "conv_transpose"):
        ops[f"{kind}{n}d_unpack"] = defop(
            f"quantized::{kind}{n}d_unpack(Any packed_weights) -> (Tensor, Tensor?)",
            composite=lambda packed_weights: packed_weights.unpack(), **_OPTS)
    return ops


OPS = {}
for _n in (1, 2, 3):
    OPS.update(_register(_n))

for _attr, _ret in (("stride", "int[]"), ("padding", "int[]"), ("dilation", "int[]"),
                    ("output_padding", "int[]"), ("groups", "int"), ("transpose", "int")):
    for _n in (2, 3):
        OPS[f"conv{_n}d_{_attr}"] = defop(
            f"quantized::conv{_n}d_{_attr}(Any packed_weights) -> {_ret}",
            composite=lambda packed_weights, _attr=_attr: getattr(packed_weights, _attr)(),
            **_OPTS)
