"""Row-wise quantized embedding tables (NumPy only).

A packed table is a uint8 array, one row per embedding: the row's integers, then its scale
and bias. 8-bit rows: D bytes + float32 scale + float32 bias; 4-bit rows: ceil(D/2) bytes
(two values a byte, the even one in the low nibble) + float16 scale + float16 bias. A value
reads back as ``fma(q, scale, bias)`` (one rounding).

torch's rules, found by running it on random tables:

- from float rows (``embedding_bag_byte_prepack``): ``bias = min(row)``,
  ``scale = (max - min) / 255`` in float32, ``q = rint((x - bias) * (1 / (scale + 1e-8)))``.
- 4-bit (``embedding_bag_4bit_prepack``): ``bias = float16(min)``; ``scale =
  float16((max - float(bias)) / 15)`` (1 when the row is constant);
  ``q = rint((x - bias) * (1 / scale))`` clamped to [0, 15].
- from a ``per_channel_affine_float_qparams`` tensor (scale s, float zero point z per row):
  ``bias = -(z * s)`` in float32 (8-bit) or rounded to float16 (4-bit).
- bags: ``out = fma(scale_i, q_i, out + bias_i)`` over the bag's rows in order, with
  ``scale_i``/``bias_i`` first multiplied (float32) by the per-sample weight if given; the
  ``mode`` argument of the ``quantized::`` bag ops is ignored (they always sum).
"""
from __future__ import annotations

import numpy as np

from ember._kernels.quantized import pack_4bit, unpack_4bit

_F16, _F32, _F64 = np.float16, np.float32, np.float64


def fma(a, b, c):
    """float32 ``a * b + c`` with one rounding."""
    return (np.asarray(a, _F32).astype(_F64) * np.asarray(b, _F32).astype(_F64) +
            np.asarray(c, _F32).astype(_F64)).astype(_F32)


def _pack_rows(q, scale, bias, bits):
    """(N, D) integers and per-row scale/bias -> the packed uint8 table."""
    N = q.shape[0]
    if bits == 8:
        tail = np.stack([np.asarray(scale, _F32), np.asarray(bias, _F32)], 1).view(np.uint8)
        return np.concatenate([q.astype(np.uint8), tail.reshape(N, 8)], 1)
    body = np.stack([pack_4bit(r) for r in q]) if N else np.zeros((0, (q.shape[1] + 1) // 2),
                                                                 np.uint8)
    tail = np.stack([np.asarray(scale, _F16), np.asarray(bias, _F16)], 1).view(np.uint8)
    return np.concatenate([body.reshape(N, -1), tail.reshape(N, 4)], 1)


def unpack_rows(packed, bits):
    """packed table -> (q int64 (N, D), scale float32 (N,), bias float32 (N,))."""
    packed = np.ascontiguousarray(packed, np.uint8)
    N, cols = packed.shape
    if bits == 8:
        D = cols - 8
        tail = packed[:, D:].copy().view(_F32)
        return packed[:, :D].astype(np.int64), tail[:, 0], tail[:, 1]
    H = cols - 4
    tail = packed[:, H:].copy().view(_F16).astype(_F32)
    q = np.stack([unpack_4bit(r, 2 * H) for r in packed[:, :H]]) if N else \
        np.zeros((0, 2 * H), np.uint8)
    return q.astype(np.int64).reshape(N, 2 * H), tail[:, 0], tail[:, 1]


def prepack_float(w, bits):
    """float32 (N, D) rows -> packed table (the rules in the module docstring)."""
    w = np.asarray(w, _F32)
    lo = w.min(1) if w.shape[1] else np.zeros(w.shape[0], _F32)
    hi = w.max(1) if w.shape[1] else np.zeros(w.shape[0], _F32)
    if bits == 8:
        scale = ((hi - lo) / _F32(255)).astype(_F32)
        inv = (_F32(1) / (scale + _F32(1e-8))).astype(_F32)
        q = np.rint(((w - lo[:, None]) * inv[:, None]).astype(_F32))
        return _pack_rows(np.clip(q, 0, 255), scale, lo, 8)
    bias = lo.astype(_F16)
    span = (hi - bias.astype(_F32)).astype(_F32)
    scale = np.where(span == 0, _F32(1), span / _F32(15)).astype(_F16)
    inv = (_F32(1) / scale.astype(_F32)).astype(_F32)
    q = np.rint(((w - bias.astype(_F32)[:, None]) * inv[:, None]).astype(_F32))
    return _pack_rows(np.clip(q, 0, 15), scale, bias, 4)


def prepack_quantized(q, scale, zero_point, bits):
    """A float-qparams quantized table (integers, per-row scale and float zero point) ->
    packed table."""
    s = np.asarray(scale, _F32)
    bias = (-(np.asarray(zero_point, _F32) * s)).astype(_F32)
    if bits == 4:
        return _pack_rows(q, s.astype(_F16), bias.astype(_F16), 4)
    return _pack_rows(q, s, bias, 8)


def dequantize_rows(packed, bits):
    """The table's float32 values (N, D)."""
    q, scale, bias = unpack_rows(packed, bits)
    return fma(q, scale[:, None], bias[:, None])


def bag_sum(packed, bits, indices, offsets, per_sample_weights, include_last_offset):
    """Sums of the rows ``indices[offsets[b]:offsets[b+1]]`` (float32 (B, D))."""
    q, scale, bias = unpack_rows(packed, bits)
    D = q.shape[1]
    indices = np.asarray(indices, np.int64).reshape(-1)
    offsets = np.asarray(offsets, np.int64).reshape(-1)
    L = indices.size
    starts = offsets[:-1] if include_last_offset else offsets
    ends = np.append(offsets[1:], L) if not include_last_offset else offsets[1:]
    ends = np.minimum(ends, L)
    B = starts.size
    out = np.zeros((B, D), _F32)
    lengths = np.maximum(ends - starts, 0)
    for step in range(int(lengths.max()) if B else 0):
        bags = np.nonzero(lengths > step)[0]
        pos = starts[bags] + step
        rows = indices[pos]
        s, b = scale[rows], bias[rows]
        if per_sample_weights is not None:
            w = np.asarray(per_sample_weights, _F32).reshape(-1)[pos]
            s, b = (s * w).astype(_F32), (b * w).astype(_F32)
        out[bags] = fma(s[:, None], q[rows], (out[bags] + b[:, None]).astype(_F32))
    return out
