"""Affine quantization on NumPy arrays: the one place where rounding and saturation live.

Every quantized kernel ends in :func:`quantize` (or :func:`requantize`), so that its integers
equal those of torch's x86/fbgemm engine bit for bit. What that engine does, found by running
it on random inputs (tests/quantization/test_qtensor.py holds the evidence):

- ``q = clamp(nearbyint(x * (1/scale) + zero_point), qmin, qmax)`` with ``1/scale`` in
  float32. For 8-bit per-tensor quantization the multiply-add is fused (one rounding, as an
  FMA does); for qint32 and for per-channel quantization it rounds twice (product, then sum).
  ``nearbyint`` rounds half to even.
- ``x = float32(q - zero_point) * float32(scale)`` per tensor; per channel the product is
  taken in float64 and rounded to float32.

Quantized storage is a one-field NumPy record (``_dtype.quint8.np``...); :func:`ints` and
:func:`as_quantized` move between it and the plain integer array without copying.
"""
from __future__ import annotations

import numpy as np

from ember._kernels import compiled

_F32 = np.float32
_F64 = np.float64


def ints(q):
    """The integer array under a quantized record array (a view, no copy)."""
    return q.view(q.dtype[0])


def as_quantized(a, qnp):
    """An integer array viewed as quantized records of NumPy dtype ``qnp`` (no copy)."""
    return a.view(qnp)


def inverse_scale(scale):
    """``1/scale`` as the engine computes it: in float32."""
    return _F32(1.0) / np.asarray(scale, dtype=_F32)


def quantize(x, scale, zero_point, qmin, qmax, storage, *, fused=True):
    """float array -> integers of NumPy dtype ``storage``; ``scale``/``zero_point`` are scalars
    or arrays broadcasting against ``x`` (per channel). ``fused``: one rounding of the
    multiply-add (8-bit per-tensor), else two."""
    x = np.asarray(x, dtype=_F32)
    inv = inverse_scale(scale)
    if fused and np.dtype(storage).itemsize == 1 and not inv.ndim and not np.ndim(zero_point) \
            and x.size and compiled.kernels() is not None:
        out = np.empty(x.shape, storage)
        compiled.kernels().quantize_fused(np.ascontiguousarray(x).reshape(-1), _F64(inv),
                                          _F64(zero_point), _F32(qmin), _F32(qmax),
                                          out.reshape(-1))
        return out
    if fused:
        v = (x.astype(_F64) * inv.astype(_F64) + np.asarray(zero_point, _F64)).astype(_F32)
    else:
        v = x * inv + np.asarray(zero_point, dtype=_F32)
    v = np.asarray(np.rint(v))
    if np.dtype(storage).itemsize >= 4:     # qint32's bounds are not float32 numbers
        v = v.astype(np.float64)
    nan = np.isnan(v)
    out = np.asarray(np.clip(v, qmin, qmax)).astype(storage)
    if nan.any():
        # NaN: the fused 8-bit kernel gives qmax; the others convert NaN to int32's
        # minimum and keep its low bits (qint32: -2**31, 8-bit per channel: 0)
        out[nan] = qmax if fused else np.array(np.iinfo(np.int32).min).astype(storage)
    return out


def dequantize(q, scale, zero_point):
    """integers -> float32: ``(q - zero_point) * scale``, in float32 per tensor, in float64
    (then rounded) per channel; float zero points (``per_channel_affine_float_qparams``):
    all in float32."""
    if np.asarray(zero_point).dtype.kind == "f":
        return (np.asarray(q, _F32) - np.asarray(zero_point, _F32)) * np.asarray(scale, _F32)
    diff = np.asarray(q, dtype=np.int64) - np.asarray(zero_point, dtype=np.int64)
    if np.ndim(scale):
        return (diff * np.asarray(scale, dtype=_F64)).astype(_F32)
    return diff.astype(_F32) * _F32(scale)


def requantize(x, scale, zero_point, qmin, qmax, storage):
    """Float results of a quantized op onto the output's integer grid (the per-tensor rule)."""
    return quantize(x, scale, zero_point, qmin, qmax, storage, fused=storage.itemsize == 1)


def channel_shape(ndim, axis, n):
    """The broadcast shape of per-channel parameters: ``n`` along ``axis``, 1 elsewhere."""
    shape = [1] * ndim
    shape[axis] = n
    return tuple(shape)


def pack_4bit(values):
    """quint4x2 values (one per byte, 0..15) -> bytes holding two each, the even element in
    the low nibble (torch's storage of quint4x2)."""
    flat = np.ascontiguousarray(values).reshape(-1).astype(np.uint8)
    if flat.size % 2:
        flat = np.concatenate([flat, np.zeros(1, np.uint8)])
    return (flat[0::2] & 0xF) | ((flat[1::2] & 0xF) << 4)


def unpack_4bit(packed, numel):
    """The inverse of :func:`pack_4bit`: ``numel`` values, one per byte."""
    packed = np.asarray(packed, dtype=np.uint8).reshape(-1)
    out = np.empty(packed.size * 2, np.uint8)
    out[0::2] = packed & 0xF
    out[1::2] = packed >> 4
    return out[:numel]


def choose_qparams(min_val, max_val, qmin, qmax, *, symmetric=False, reduce_range=False,
                   preserve_sparsity=False):
    """(scale, zero_point) covering [min_val, max_val] (with 0 inside), torch's
    ``choose_qparams`` for dynamic quantization: float32 range, int zero point nudged into
    [qmin, qmax]."""
    if reduce_range:
        qmin, qmax = qmin // 2, qmax // 2
    min_val = min(float(min_val), 0.0)
    max_val = max(float(max_val), 0.0)
    if not min_val <= max_val:              # a NaN in the range
        raise RuntimeError("In ChooseQuantizationParams, min should be less than or equal "
                           "to max")
    if symmetric or preserve_sparsity:
        bound = max(abs(min_val), abs(max_val))
        min_val, max_val = -bound, bound
    scale = (max_val - min_val) / (qmax - qmin)
    if scale == 0.0 or not np.isfinite(_F32(1.0) / _F32(scale)):
        scale = 0.1
    zp_from_min = qmin - min_val / scale
    zp_from_max = qmax - max_val / scale
    err_min = abs(qmin) - abs(min_val / scale)
    err_max = abs(qmax) - abs(max_val / scale)
    initial = zp_from_min if err_min < err_max else zp_from_max
    if preserve_sparsity:
        initial = (qmin + qmax) / 2 if min_val < 0 < max_val else (qmin if min_val >= 0 else qmax)
    if initial < qmin:
        zero_point = qmin
    elif initial > qmax:
        zero_point = qmax
    else:
        zero_point = int(np.rint(initial))
    return scale, int(zero_point)


# ---------------------------------------------------------------- the vectorized kernels' rules
# The engine's elementwise kernels (quantized add, ...) read and write through its vector
# helpers, whose rounding differs from quantize_per_tensor's:

def dequantize_vec(q, scale, zero_point):
    """Integers -> float32 as the vector helpers do: ``fma(q, scale, -zero_point * scale)``
    with ``-zero_point * scale`` in float32 and one rounding of the multiply-add."""
    scale = _F32(scale)
    premul = _F32(-zero_point) * scale
    return (np.asarray(q, _F64) * _F64(scale) + _F64(premul)).astype(_F32)


def quantize_vec(x, scale, zero_point, qmin, qmax, storage):
    """float32 -> integers as the vector helpers do: ``nearbyint(x * (1/scale))`` in float32,
    then the zero point added as an integer, then saturation."""
    v = np.rint(np.asarray(x, _F32) * inverse_scale(scale)).astype(np.int64) + int(zero_point)
    np.clip(v, qmin, qmax, out=v)
    return v.astype(storage)


# ---------------------------------------------------------------- fake quantization
# torch's fake_quantize_per_tensor_affine / _per_channel_affine (found on random inputs with
# half-way ties, sizes 7/1000/4099, zero mismatches): ``q = nearbyint(x * float32(1/scale))``
# then the zero point added, clamped; out = ``(q - zero_point) * scale`` in float32. The mask
# (the straight-through gradient's) marks the unclamped ``q`` inside [qmin, qmax]. With float
# zero points (per_channel_affine_float_qparams) ``q = nearbyint(x * inv + zero_point)`` and
# the dequantization runs in float64.

def fake_quantize(x, scale, zero_point, qmin, qmax):
    """(out, mask) of fake quantization; ``scale``/``zero_point`` scalars or arrays broadcasting
    against ``x`` (per channel). Computes in float32 (float64 input: in float64)."""
    x = np.asarray(x)
    work = _F64 if x.dtype == _F64 else _F32
    s = np.asarray(scale, dtype=_F32)
    inv = (_F32(1.0) / s).astype(work)
    zp = np.asarray(zero_point)
    if zp.dtype.kind == "f":                      # float zero points: added before rounding
        q = np.rint(x.astype(work) * inv + zp.astype(work))
    else:
        q = np.rint(x.astype(work) * inv) + zp.astype(work)
    mask = (q >= qmin) & (q <= qmax)
    np.clip(q, qmin, qmax, out=q)
    if zp.dtype.kind == "f":                      # float zero points: dequantized in float64
        out = (q.astype(_F64) - zp.astype(_F64)) * s.astype(_F64)
    else:
        out = (q - zp.astype(work)) * s.astype(work)
    return out.astype(x.dtype, copy=False), mask


def choose_qparams_fused(min_val, max_val, qmin, qmax, *, symmetric=False):
    """(scale, zero_point) as torch's ``fused_moving_avg_obs_fake_quant`` picks them: the
    :func:`choose_qparams` rule, and for ``symmetric`` a range that keeps zero exact when it
    straddles zero: ``m = max(|min| / sqmin, max / sqmax)`` in float32, with
    ``sqmin = -((qmax - qmin) // 2 + 1)``, ``sqmax = (qmax - qmin) // 2``, then the range
    ``[m * sqmin, m * sqmax]`` (found on random ranges for [-128, 127], [-127, 127], [0, 255])."""
    lo, hi = min(float(min_val), 0.0), max(float(max_val), 0.0)
    if symmetric and lo < 0 < hi:
        sqmin, sqmax = -((qmax - qmin) // 2 + 1), (qmax - qmin) // 2
        m = max(abs(_F32(lo) / _F32(sqmin)), abs(_F32(hi) / _F32(sqmax)))
        lo, hi = _F32(m) * sqmin, _F32(m) * sqmax
    return choose_qparams(lo, hi, qmin, qmax)
