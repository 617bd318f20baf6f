"""Integer GEMM and convolution for quantized linear/conv ops (NumPy only).

Accumulation is exact: the zero-point-shifted integers are multiplied in float64 by BLAS,
which is exact while every sum stays below 2**53 (255 * 128 * K is far below for any K a
model has), then rounded back to int64.

What torch's x86/fbgemm engine does with the int32 accumulator ``acc`` (found by running it
on random inputs, tests/quantization/test_qops_linear_conv.py):

- static (quint8 out): ``act_w = float32(x_scale) * float32(w_scale)`` (float32 product,
  per output channel for per-channel weights), ``mult = float32(act_w / out_scale)``;
  ``v = float32(float32(acc) + float32(bias / act_w))``; ``q = rint(v * mult) + out_zp``
  (half to even, float32 product), clamped to [0, 255] (to [out_zp, 255] with ReLU).
  Bit-exact for linear and for the convolutions torch packs for fbgemm.
- static convolutions that torch's x86 engine hands to oneDNN (symmetric weights, at most
  100 groups, no output padding; ``requantize_acc_onednn``): ``act_w = float32(x_scale *
  w_scale)`` (product in double), ``v = float32(float32(acc) * act_w) + bias`` (float32),
  ReLU, ``v = float32(v * float32(1 / out_scale)) + float32(out_zp)`` (``1 / out_scale``
  in double; the zero point added in float32, before rounding: ties can go the other way
  than fbgemm's), ``q = rint(v)`` clamped to [0, 255].
- dynamic (float out): the input is quantized with ``choose_qparams`` (quint8, range halved
  with ``reduce_range``), ``y = fma(float32(acc), act_w, bias)``: one rounding.
- float16 dynamic: weights rounded to float16; ``y`` accumulates over K in order with one
  fused multiply-add per step in float32, then ``+ bias`` in float32.
"""
from __future__ import annotations

import numpy as np

from ember._kernels import nn_conv

_F32 = np.float32
_F64 = np.float64


def shifted(ints, zero_point):
    """``ints - zero_point`` as float64 (exact), ``zero_point`` scalar or broadcastable."""
    return np.asarray(ints, _F64) - np.asarray(zero_point, _F64)


def int_linear(x, w):
    """(N, K) x (O, K) shifted integers (float64) -> exact (N, O) accumulator (int64)."""
    return np.rint(x @ w.T).astype(np.int64)


def int_conv(x, w, stride, padding, dilation, groups):
    """Exact integer convolution of shifted integers (float64) -> int64 (N, O, *out)."""
    return np.rint(nn_conv.conv_forward(x, w, stride, padding, dilation, groups)).astype(np.int64)


def int_conv_transpose(x, w, stride, padding, output_padding, dilation, groups):
    """Exact integer transposed convolution of shifted integers -> int64 (N, O, *out)."""
    out = nn_conv.conv_transpose_forward(x, w, stride, padding, dilation, groups,
                                         output_padding)
    return np.rint(out).astype(np.int64)


def fbgemm_depthwise(C_in, groups, w_shape, stride, padding, dilation):
    """Whether fbgemm runs this convolution with its depthwise kernel (found by probing):
    one input channel a group, groups a multiple of 8, one or two outputs each, stride 1 or
    2, no dilation, and a 3x3 or 5x5 kernel (3x3x3 or 5x5x5) padded by half its size."""
    k = tuple(w_shape[2:])
    square = k in ((3, 3), (5, 5), (3, 3, 3), (5, 5, 5))
    return square and groups == C_in and groups % 8 == 0 and w_shape[1] == 1 and \
        w_shape[0] in (groups, 2 * groups) and all(s in (1, 2) for s in stride) and \
        all(d == 1 for d in dilation) and all(p == (v - 1) // 2 for p, v in zip(padding, k))


def int_conv_depthwise_saturating(xi, x_zp, wi, w_zp, stride, padding):
    """fbgemm's depthwise accumulator: raw uint8 inputs (padded with ``x_zp``) times raw
    int8 weights, the kernel taps (row-major) summed in consecutive pairs that saturate to
    int16 (vpmaddubsw), the pairs summed exactly, then the zero points' terms subtracted.
    Equal to the exact sum unless two products together leave the int16 range (inputs
    under 128, as ``reduce_range`` observers give, never do)."""
    n = wi.ndim - 2
    xi = np.asarray(xi, np.int64)
    wi = np.asarray(wi, np.int64)
    O, k = wi.shape[0], wi.shape[2:]
    mult = O // xi.shape[1]
    xp = np.pad(xi, [(0, 0), (0, 0)] + [(p, p) for p in padding], constant_values=x_zp)
    xp = np.repeat(xp, mult, axis=1) if mult > 1 else xp
    out = [(xp.shape[2 + i] - k[i]) // stride[i] + 1 for i in range(n)]
    taps, xs = [], []
    for pos in np.ndindex(*k):
        sl = tuple(slice(pos[i], pos[i] + stride[i] * (out[i] - 1) + 1, stride[i])
                   for i in range(n))
        win = xp[(slice(None), slice(None)) + sl]
        w = wi[(slice(None), 0) + pos].reshape((1, O) + (1,) * n)
        taps.append(win * w)
        xs.append(win)
    acc = np.zeros(taps[0].shape, np.int64)
    for i in range(0, len(taps), 2):
        pair = taps[i] + taps[i + 1] if i + 1 < len(taps) else taps[i]
        acc += np.clip(pair, -32768, 32767)
    wz = np.reshape(w_zp, (1, -1) + (1,) * n) if np.ndim(w_zp) else w_zp
    wsum = wi.reshape(O, -1).sum(1).reshape((1, O) + (1,) * n)
    K = int(np.prod(k))
    return acc - wz * sum(xs) - x_zp * wsum + K * x_zp * wz


def onednn_transposed_weight(w, groups):
    """The weight torch's x86 engine's oneDNN transposed convolution actually applies
    (found by probing with one-hot inputs): per group, the (C_in/g, C_out/g) grid of kernels
    is read twice as if laid out (C_out/g, C_in/g) and transposed each time. Equal channel
    counts give the weight back; otherwise channels are mixed up, so torch's x86 results
    differ from the mathematical transposed convolution (the fbgemm engine's are right)."""
    cin, cout_g = w.shape[:2]
    cin_g = cin // groups
    k = w.shape[2:]
    out = np.empty_like(w)
    for g in range(groups):
        m = w[g * cin_g:(g + 1) * cin_g].reshape(cin_g * cout_g, -1)
        for _ in range(2):
            m = m.reshape(cout_g, cin_g, -1).transpose(1, 0, 2).reshape(cin_g * cout_g, -1)
        out[g * cin_g:(g + 1) * cin_g] = m.reshape((cin_g, cout_g) + k)
    return out


def act_times_w(x_scale, w_scale):
    """float32(x_scale) * float32(w_scale) (per channel: an array)."""
    return (_F32(x_scale) * np.asarray(w_scale, _F32)).astype(_F32)


def requantize_acc(acc, x_scale, w_scale, bias, out_scale, out_zp, relu, channel_axis=1):
    """The static rule (module docstring): int accumulator -> quint8 integers (uint8).
    ``w_scale``/``bias`` have one value per output channel along ``channel_axis``."""
    shape = [1] * acc.ndim
    shape[channel_axis] = -1
    aw = act_times_w(x_scale, w_scale)
    aw = aw.reshape(shape) if aw.ndim else aw
    mult = (aw / _F32(out_scale)).astype(_F32)
    v = acc.astype(_F32)
    if bias is not None:
        v = (v + (np.asarray(bias, _F32).reshape(shape) / aw).astype(_F32)).astype(_F32)
    q = np.rint(v * mult) + out_zp
    np.clip(q, out_zp if relu else 0, 255, out=q)
    return q.astype(np.uint8)


def requantize_acc_onednn(acc, x_scale, w_scale, bias, out_scale, out_zp, relu, accum=None,
                          eltwise=None):
    """oneDNN's rule (module docstring) for an (N, O, ...) accumulator. ``accum`` =
    (integers, scale, zero point) of a tensor added before requantizing (``conv2d_add``: its
    float32 dequantized values added to ``v`` in float32); ``eltwise``: a float32 function
    applied where ReLU would be (leaky ReLU, tanh)."""
    shape = [1] * acc.ndim
    shape[1] = -1
    aw = (_F64(x_scale) * np.asarray(w_scale, _F64)).astype(_F32)    # product in double
    aw = aw.reshape(shape) if aw.ndim else aw
    v = (acc.astype(_F32) * aw).astype(_F32)
    if bias is not None:
        v = (v + np.asarray(bias, _F32).reshape(shape)).astype(_F32)
    if accum is not None:
        ints, scale, zero_point = accum
        v = (v + (np.asarray(ints, np.int64) - zero_point).astype(_F32) * _F32(scale))
        v = v.astype(_F32)
    if relu:
        v = np.maximum(v, _F32(0))
    if eltwise is not None:
        v = np.asarray(eltwise(v), _F32)
    v = (v * _F32(1.0 / float(out_scale))).astype(_F32)     # 1/scale in double
    v = np.rint((v + _F32(out_zp)).astype(_F32))
    np.clip(v, 0, 255, out=v)
    return v.astype(np.uint8)


def dynamic_output(acc, x_scale, w_scale, bias, relu):
    """The dynamic rule: ``fma(float32(acc), act_w, bias)`` in float32 (ReLU after)."""
    aw = act_times_w(x_scale, w_scale)
    y = acc.astype(_F32).astype(_F64) * aw.astype(_F64)
    if bias is not None:
        y = y + np.asarray(bias, _F32).astype(_F64)
    y = y.astype(_F32)
    return np.maximum(y, _F32(0)) if relu else y


def fp16_linear(x, w16, bias, relu):
    """(N, K) float32 x (O, K) float16-valued weights: K steps of one fused multiply-add
    each, in order (the engine's float16 GEMM), then ``+ bias`` in float32."""
    x = np.asarray(x, _F32).astype(_F64)
    w = np.asarray(w16, _F32).astype(_F64)
    y = np.zeros((x.shape[0], w.shape[0]), _F32)
    for k in range(x.shape[1]):
        y = (y.astype(_F64) + np.multiply.outer(x[:, k], w[:, k])).astype(_F32)
    if bias is not None:
        y = (y + np.asarray(bias, _F32)).astype(_F32)
    return np.maximum(y, _F32(0)) if relu else y
