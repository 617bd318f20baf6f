"""Kernels of the factory ops: new arrays from a size, a range or a fill value (NumPy only).

``dtype`` arguments arrive as ember dtypes (``dtype.np`` is the NumPy dtype).
"""
import math

import numpy as np

from ember import _dtype
from ember._kernels.layout import empty_preserving
from ember._kernels.util import check_storage_size

# C++ spellings torch uses in "value cannot be converted to type ... without overflow"
_C_NAMES = {"float32": "float", "float64": "double", "float16": "double",
            "bfloat16": "double", "int64": "int64_t", "int32": "int", "int16": "int16_t",
            "int8": "int8_t", "uint8": "uint8_t", "bool": "bool",
            "complex64": "c10::complex<float>", "complex128": "c10::complex<double>"}


_SMALL_BYTES = 1 << 62


def shape_of(size, name=None, dtype=None):
    """A tuple of ints; RuntimeError like torch for a negative dimension (and, given the
    dtype, for a byte count that overflows int64)."""
    if type(size) is tuple and all(type(s) is int and s > 0 for s in size) and \
            (dtype is None or math.prod(size) * dtype.np.itemsize < _SMALL_BYTES):
        return size                     # (the usual case: no overflow possible)
    shape = tuple(int(s) for s in size)
    for s in shape:
        if s < 0:
            if name == "zeros":
                raise RuntimeError("zeros: Dimension size must be non-negative.")
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: "
                               f"{list(shape)}")
    if dtype is not None:
        check_storage_size(shape, dtype.np.itemsize)
    return shape


def check_fill(value, dtype):
    """torch's overflow check when a Python number is converted to ``dtype``."""
    npd = dtype.np
    kind = npd.kind
    if isinstance(value, complex) or isinstance(value, np.complexfloating):
        if kind == "b":
            return bool(value)
        if kind != "c":
            if value.imag != 0:
                raise RuntimeError(f"value cannot be converted to type {_C_NAMES[dtype.name]} "
                                   f"without overflow")
            value = value.real
        return value
    if kind in "iu":
        v = value
        if isinstance(v, (float, np.floating)):
            if not math.isfinite(v):
                raise RuntimeError(f"value cannot be converted to type {_C_NAMES[dtype.name]} "
                                   f"without overflow")
            v = math.trunc(v)
        info = np.iinfo(npd)
        lo = -info.max - 1 if kind == "u" else info.min   # unsigned: negatives wrap
        if not lo <= int(v) <= info.max:
            raise RuntimeError(f"value cannot be converted to type {_C_NAMES[dtype.name]} "
                               f"without overflow")
        return int(v) if kind == "i" else int(v) % (info.max + 1)
    if kind == "f" or dtype.name == "bfloat16":
        v = float(value)
        if math.isfinite(v) and dtype.name in _FMAX and abs(v) > _FMAX[dtype.name][0]:
            raise RuntimeError(f"value cannot be converted to type {_FMAX[dtype.name][1]} "
                               f"without overflow")
        return v
    return value


_FMAX = {"float32": (3.4028234663852886e+38, "float"), "float16": (65504.0, "c10::Half"),
         "bfloat16": (3.3895313892515355e+38, "c10::BFloat16")}


# --------------------------------------------------------------------------- fills

def zeros(size, dtype):
    return np.zeros(shape_of(size, "zeros", dtype), dtype.np)


def ones(size, dtype):
    return np.ones(shape_of(size, dtype=dtype), dtype.np)


def full(size, fill_value, dtype):
    shape = shape_of(size, dtype=dtype)
    return np.full(shape, check_fill(fill_value, dtype), dtype.np)


def empty(size, dtype, memory_format=None):
    # ember fills "uninitialised" memory with zeros: cheap, and deterministic by design
    shape = shape_of(size, dtype=dtype)
    fmt = getattr(memory_format, "name", memory_format)
    if fmt == "channels_last":
        if len(shape) != 4:
            raise RuntimeError("required rank 4 tensor to use channels_last format")
        return np.zeros((shape[0], shape[2], shape[3], shape[1]), dtype.np).transpose(0, 3, 1, 2)
    if fmt == "channels_last_3d":
        if len(shape) != 5:
            raise RuntimeError("required rank 5 tensor to use channels_last_3d format")
        n, c, d, h, w = shape
        return np.zeros((n, d, h, w, c), dtype.np).transpose(0, 4, 1, 2, 3)
    return np.zeros(shape, dtype.np)


def _like_order(a, memory_format):
    """NumPy ``order`` for torch's memory formats: preserve_format keeps the strides of a
    dense input (NumPy's 'K'), contiguous_format is C order."""
    fmt = getattr(memory_format, "name", memory_format)
    if fmt in (None, "preserve_format"):
        return "K"
    if fmt == "contiguous_format":
        return "C"
    return fmt


def _like(fill, a, dtype, memory_format):
    npd = a.dtype if dtype is None else dtype.np
    order = _like_order(a, memory_format)
    if order in ("channels_last", "channels_last_3d"):
        from types import SimpleNamespace
        out = empty(a.shape, SimpleNamespace(np=npd), order)
        out[...] = fill
        return out
    if order == "K":                            # torch's strides (layout.empty_preserving)
        out = empty_preserving(a, npd)
    else:
        out = np.empty_like(a, dtype=npd, order=order)
    out.fill(fill)
    return out


def zeros_like(a, dtype=None, memory_format=None):
    return _like(0, a, dtype, memory_format)


def ones_like(a, dtype=None, memory_format=None):
    return _like(1, a, dtype, memory_format)


def empty_like(a, dtype=None, memory_format=None):
    return _like(0, a, dtype, memory_format)


def full_like(a, fill_value, dtype=None, memory_format=None):
    from types import SimpleNamespace
    npd = a.dtype if dtype is None else dtype.np
    name = dtype.name if dtype is not None else _np_name(npd)
    fill_value = check_fill(fill_value, SimpleNamespace(np=npd, name=name))
    return _like(fill_value, a, dtype, memory_format)


def _np_name(npd):
    return "bfloat16" if npd.name == "bfloat16" else npd.name


def empty_strided(size, stride, dtype):
    shape = tuple(int(s) for s in size)
    strides = tuple(int(s) for s in stride)
    if len(shape) != len(strides):
        raise RuntimeError(f"dimensionality of sizes ({len(shape)}) must match dimensionality of "
                           f"strides ({len(strides)})")
    shape_of(shape)
    if any(s < 0 for s in strides):
        raise RuntimeError(f"Storage size calculation overflowed with sizes={list(shape)} and "
                           f"strides={list(strides)}")
    check_storage_size(shape, dtype.np.itemsize, strides)
    if any(s == 0 for s in shape):
        storage = 0
    else:
        storage = 1 + sum((n - 1) * st for n, st in zip(shape, strides))
    buf = np.zeros(max(storage, 1), dtype.np)
    item = buf.itemsize
    return np.lib.stride_tricks.as_strided(buf, shape, tuple(st * item for st in strides),
                                           writeable=True)


def eye(n, m, dtype):
    if n < 0:
        raise RuntimeError(f"n must be greater or equal to 0, got {n}")
    if m < 0:
        raise RuntimeError(f"m must be greater or equal to 0, got {m}")
    check_storage_size((n, m), dtype.np.itemsize)
    return np.eye(n, m, dtype=dtype.np)


# --------------------------------------------------------------------------- ranges

def _acc(dtype):
    """torch's CPU accumulate type for a range kernel (as a NumPy dtype)."""
    if dtype.name in ("float16", "bfloat16"):
        return np.dtype(np.float32)
    if dtype.np.kind in "iub":
        return np.dtype(np.int64)
    if dtype.np.kind == "c":
        return np.dtype(np.complex128)
    return np.dtype(np.float64)


def _to_acc(v, acc):
    if acc.kind == "i":
        if isinstance(v, complex):
            v = v.real
        return int(math.trunc(v)) if isinstance(v, float) else int(v)
    return acc.type(v)


def range_size(start, end, step, dtype):
    """Number of elements of arange(start, end, step), computed as torch does."""
    acc = _acc(dtype)
    if isinstance(start, complex) or isinstance(end, complex) or isinstance(step, complex):
        raise RuntimeError("value cannot be converted to type double without overflow")
    xstart, xend, xstep = (_to_acc(v, acc) for v in (start, end, step))
    if not (step > 0 or step < 0):
        raise RuntimeError("step must be nonzero")
    if dtype.name == "int64" and not (xstep > 0 or xstep < 0):
        raise ValueError("step must be nonzero")    # (a fractional step truncated to 0)
    # other integer types check the bounds and count the elements in double precision,
    # then step by the truncated values (torch: arange(0, 2.5, 0.5, dtype=int32) is 5 zeros)
    lo, hi, st = (xstart, xend, xstep) if dtype.name == "int64" or acc.kind != "i" else \
        (float(start), float(end), float(step))
    if not (math.isfinite(float(lo)) and math.isfinite(float(hi))):
        raise RuntimeError(f"unsupported range: {_fmt(lo)} -> {_fmt(hi)}")
    if not ((st > 0 and hi >= lo) or (st < 0 and hi <= lo)):
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    if dtype.name == "int64":
        # ceil((end - start) / step) in exact integer arithmetic (either sign of step)
        size = -((int(xstart) - int(xend)) // int(xstep))
    else:
        size_d = math.ceil((float(end) - float(start)) / float(step))
        if not 0 <= size_d <= 2 ** 63 - 1:
            raise RuntimeError("invalid size, possible overflow?")
        size = int(size_d)
    return xstart, xstep, size


def _fmt(v):
    v = float(v)
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return f"{v:g}"


_INT64_BIG = 1 << 62            # integer bounds below this: no overflow to check


def arange(start, end, step, dtype):
    if dtype.np.kind == "b":
        raise NotImplementedError("\"arange_cpu\" not implemented for 'Bool'")
    if dtype.np.kind == "c":
        name = "ComplexFloat" if dtype.name == "complex64" else "ComplexDouble"
        raise NotImplementedError(f"\"arange_cpu\" not implemented for '{name}'")
    if type(start) is int and type(end) is int and type(step) is int and \
            dtype.name == "int64" and (0 < step and start <= end or step < 0 and end <= start) \
            and -_INT64_BIG < start < _INT64_BIG and -_INT64_BIG < end < _INT64_BIG:
        return np.arange(start, end, step, dtype=np.int64)   # arange(n): one NumPy call
    xstart, xstep, n = range_size(start, end, step, dtype)
    check_storage_size((n,), dtype.np.itemsize)
    acc = _acc(dtype)
    idx = np.arange(n, dtype=np.int64)
    if acc.kind == "i":
        vals = xstart + xstep * idx
    else:
        vals = acc.type(xstart) + acc.type(xstep) * idx.astype(acc)
    with np.errstate(all="ignore"):
        return vals.astype(dtype.np)


def range_(start, end, step, dtype):
    """torch.range: like arange but including ``end``."""
    if dtype.np.kind == "b":
        raise NotImplementedError("\"range_cpu\" not implemented for 'Bool'")
    acc = _acc(dtype)
    xstart, xend, xstep = (_to_acc(v, acc) for v in (start, end, step))
    if not (xstep > 0 or xstep < 0):
        raise RuntimeError("step must be nonzero")
    if not (math.isfinite(float(xstart)) and math.isfinite(float(xend))):
        raise RuntimeError(f"unsupported range: {_fmt(xstart)} -> {_fmt(xend)}")
    if not ((xstep > 0 and xend >= xstart) or (xstep < 0 and xend <= xstart)):
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    n = int(math.floor((float(xend) - float(xstart)) / float(xstep))) + 1
    idx = np.arange(n, dtype=np.int64)
    if acc.kind == "i":
        vals = xstart + xstep * idx
    else:
        vals = acc.type(xstart) + acc.type(xstep) * idx.astype(acc)
    with np.errstate(all="ignore"):
        return vals.astype(dtype.np)


def _space_type(dtype):
    """Arithmetic dtype of linspace/logspace: the output type (rounding after every
    operation for the half types too, like c10::Half arithmetic), float64 steps for integer
    outputs."""
    if dtype.np.kind in "iub":
        return np.dtype(np.float64)
    return dtype.np


def _check_steps(steps):
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")


def _symmetric(start, end, steps, ct):
    """torch's linspace formula: from ``start`` up to the middle, from ``end`` after it."""
    s, e = ct.type(start), ct.type(end)
    step = (e - s) / ct.type(steps - 1)
    i = np.arange(steps)
    half = steps // 2
    if ct == np.float32:    # torch's vector kernel: each point one fused multiply-add
        f64 = np.float64
        lo = (f64(s) + f64(step) * i[:half].astype(f64)).astype(ct)
        hi = (f64(e) - f64(step) * (steps - i[half:] - 1).astype(f64)).astype(ct)
        return np.concatenate([lo, hi])
    if ct == np.float64:    # (a fused multiply-add too: Dekker's exact product)
        from ember._kernels.elementwise import fma
        lo = fma(np.full(half, step), i[:half].astype(ct), np.full(half, s))
        hi = fma(np.full(steps - half, -step), (steps - i[half:] - 1).astype(ct),
                 np.full(steps - half, e))
        return np.concatenate([lo, hi])
    lo = s + step * i[:half].astype(ct)
    hi = e - step * (steps - i[half:] - 1).astype(ct)
    return np.concatenate([lo, hi])


def _int_val(v, dtype):
    """``Scalar.to<scalar_t>()`` for an integer output: truncate."""
    if isinstance(v, complex):
        v = v.real
    return int(math.trunc(v))


def _space_endpoints(start, end, steps, dtype):
    """linspace/logspace's shared checks and endpoint conversion (truncated for integer
    dtypes, real parts for real dtypes)."""
    _check_steps(steps)
    kind = dtype.np.kind
    if kind in "iub":
        return _int_val(start, dtype), _int_val(end, dtype)
    if kind != "c":
        return _real(start), _real(end)
    return start, end


def _int_ramp(start, end, steps):
    """``steps`` evenly spaced float64 values for integer dtypes, stepped from both ends
    towards the middle like torch's kernel (so both endpoints are exact)."""
    s, e = float(start), float(end)
    step = (e - s) / (steps - 1)
    i = np.arange(steps, dtype=np.float64)
    return np.where(i < steps // 2, s + step * i, e - step * (steps - i - 1))


def linspace(start, end, steps, dtype):
    start, end = _space_endpoints(start, end, steps, dtype)
    kind = dtype.np.kind
    if steps == 0:
        return np.empty((0,), dtype.np)
    if steps == 1:
        return np.full((1,), start, dtype.np)
    with np.errstate(all="ignore"):
        if kind in "iub":
            vals = np.trunc(_int_ramp(start, end, steps))
        else:
            vals = _symmetric(start, end, steps, _space_type(dtype))
        return vals.astype(dtype.np)


def _real(v):
    if isinstance(v, complex):
        return v.real
    return v


def logspace(start, end, steps, base, dtype):
    start, end = _space_endpoints(start, end, steps, dtype)
    kind = dtype.np.kind
    if steps == 0:
        return np.empty((0,), dtype.np)
    with np.errstate(all="ignore"):
        if steps == 1:
            return np.asarray([np.power(float(base) if kind != "c" else complex(base),
                                        start)]).astype(dtype.np)
        if kind in "iub":
            return np.power(float(base), _int_ramp(start, end, steps)).astype(dtype.np)
        if dtype.np.itemsize == 2 and kind in "fV":
            # half types: endpoints rounded to the dtype, then float32 math, one rounding
            f32 = np.dtype(np.float32)
            s, e = (np.asarray(v, dtype.np).astype(f32) for v in (start, end))
            expo = _symmetric(s, e, steps, f32)
            return np.power(np.float32(base), expo).astype(dtype.np)
        expo = _symmetric(start, end, steps, _space_type(dtype))
        b = complex(base) if kind == "c" else float(base)
        return np.power(b, expo.astype(np.complex128 if kind == "c" else np.float64)) \
            .astype(dtype.np)


# --------------------------------------------------------------------------- complex

def _check_complex_args(a, b, fname):
    da, db = np.asarray(a).dtype, np.asarray(b).dtype
    ok = ("float16", "float32", "float64")
    if da.name not in ok or db.name not in ok:
        raise RuntimeError(f"Expected both inputs to be Half, Float or Double tensors but got "
                           f"{_SCALAR[da.name]} and {_SCALAR[db.name]}")
    if da != db:
        raise RuntimeError(f"Expected object of scalar type {_SCALAR[da.name]} but got scalar "
                           f"type {_SCALAR[db.name]} for second argument")
    if da == np.float16:            # complex32 pairs (ember/_kernels/complex32.py)
        return _dtype._used(_dtype.complex32).np
    return np.dtype(np.complex128 if da == np.float64 else np.complex64)


_SCALAR = _dtype.TYPE_NAMES


def complex_(real, imag):
    ct = _check_complex_args(real, imag, "complex")
    real, imag = np.broadcast_arrays(real, imag)
    out = np.empty(real.shape, ct)
    if ct.names:                    # complex32: (real, imag) float16 pairs
        out["real"], out["imag"] = real, imag
        return out
    out.real = real
    out.imag = imag
    return out


def polar(abs, angle):
    ct = _check_complex_args(abs, angle, "polar")
    if ct.names:
        raise NotImplementedError("\"polar_cpu\" not implemented for 'Half'")
    abs, angle = np.broadcast_arrays(abs, angle)
    out = np.empty(abs.shape, ct)
    out.real = abs * np.cos(angle)
    out.imag = abs * np.sin(angle)
    return out
