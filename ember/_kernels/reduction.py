"""Kernels of the reductions, scans and softmax (NumPy only; see ember/_ops/reduction.py).

Conventions: ``dim`` arguments arrive as given by the user (None, an int or a sequence);
``reduce_axes`` normalises them (torch's errors for out-of-range or repeated dims). A 0-d
input accepts dim 0 / -1 and reduces to itself. Low-precision floats (float16, bfloat16)
accumulate in float32 and are cast back, like torch's CPU kernels.
"""
import math
import sys
import warnings

import numpy as np

from ember import _dtype
from ember._kernels import compiled, torch_sum
from ember._kernels.elementwise import exp as _exp, fma, log as _log
from ember._kernels.fast_elementwise import TANH_MIN, pooled_softmax, pooled_softmax_backward
from ember._kernels.layout import contiguous_result
from ember._kernels.util import half_in_float32, wrap_dim, wrap_dims
from ember._runtime_flags import user_stacklevel

_TORCH_NAMES = _dtype.TYPE_NAMES


def tname(dt):
    """torch's ScalarType name of a NumPy dtype ("Float", "Long"...)."""
    dt = np.dtype(dt)
    return _TORCH_NAMES.get(dt.name, str(dt))


def is_float(dt):
    """Floating point (float16/32/64 and bfloat16, whose NumPy kind is 'V')."""
    return dt.kind == "f" or dt.kind == "V"


def is_float_or_complex(dt):
    return dt.kind in "fcV"


def not_implemented(kernel, dt):
    return NotImplementedError(f"\"{kernel}\" not implemented for '{tname(dt)}'")


def real_dtype(dt):
    return {np.dtype(np.complex64): np.dtype(np.float32),
            np.dtype(np.complex128): np.dtype(np.float64)}.get(np.dtype(dt), np.dtype(dt))


def acc(a):
    """``a`` in a dtype fit to accumulate in (float32 for float16 / bfloat16)."""
    return a.astype(np.float32) if a.dtype.kind == "V" or a.dtype == np.float16 else a


def reduce_axes(dim, ndim):
    """None (reduce everything) or a tuple of wrapped axes; a 0-d input reduces to itself."""
    if dim is None:
        return None
    if isinstance(dim, (tuple, list)) and len(dim) == 0:
        return None
    axes = wrap_dims(dim, ndim)
    return None if ndim == 0 else axes


def numel_reduced(shape, axes):
    n = 1
    for i, s in enumerate(shape):
        if axes is None or i in axes:
            n *= s
    return n


def squeeze_axes(r, axes, keepdim, ndim):
    """Drop the kept (size-1) reduced axes of a keepdims=True result unless ``keepdim``."""
    if keepdim:
        return r
    if axes is None:
        return r.reshape(())
    return r.reshape(tuple(s for i, s in enumerate(r.shape) if i not in axes))


def _ignore():
    return np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore")


def _fresh(r, dtype=None):
    r = np.asarray(r)
    if dtype is not None and r.dtype != dtype:
        return r.astype(dtype)
    return r


# -------------------------------------------------------------------- sums and means

def mean(a, dim=None, keepdim=False, dtype=None):
    if dtype is not None:
        npd = dtype.np
        if not is_float_or_complex(npd):
            raise RuntimeError(f"mean(): could not infer output dtype. Optional dtype must be "
                               f"either a floating point or complex dtype. Got: {tname(npd)}")
    else:
        npd = a.dtype
        if not is_float_or_complex(npd):
            raise RuntimeError(f"mean(): could not infer output dtype. Input dtype must be either "
                               f"a floating point or complex dtype. Got: {tname(npd)}")
    axes = reduce_axes(dim, a.ndim)
    x = acc(a.astype(npd, copy=False))
    s = torch_sum.reduce_sum(x, axes, keepdim) if a.dtype == x.dtype or \
        (a.dtype == np.float32 and x.dtype == np.float64) else None   # torch's order
    if s is None:
        s = np.add.reduce(x, axis=axes, keepdims=keepdim)   # (np.sum's own path, less Python)
    n = numel_reduced(a.shape, axes)
    if n:
        return _fresh(np.true_divide(s, n), npd)        # (by a count >= 1: nothing to warn)
    with _ignore():
        return _fresh(s * np.nan, npd)


def nansum(a, dim=None, keepdim=False, dtype=None):
    if a.dtype.kind == "c":
        raise RuntimeError("nansum on CPU does not support complex inputs")
    axes = reduce_axes(dim, a.ndim)
    if dtype is not None:
        npd = dtype.np
    elif a.dtype.kind in "biu":
        npd = np.dtype(np.int64)
    else:
        npd = a.dtype
    x = acc(a.astype(npd) if dtype is not None and is_float_or_complex(npd) else a)
    if is_float(x.dtype):
        x = np.where(np.isnan(x), 0, x)
    return _fresh(np.sum(x, axis=axes, keepdims=keepdim, dtype=None if is_float(x.dtype)
                         else npd), npd)


def nanmean(a, dim=None, keepdim=False, dtype=None):
    if a.dtype.kind == "c":
        raise RuntimeError("nansum on CPU does not support complex inputs")
    if not is_float(a.dtype):
        raise RuntimeError(f"nanmean(): expected input to have floating point or complex dtype "
                           f"but got {tname(a.dtype)}")
    npd = dtype.np if dtype is not None else a.dtype
    axes = reduce_axes(dim, a.ndim)
    x = acc(a.astype(npd, copy=False))
    nan = np.isnan(x)
    s = np.sum(np.where(nan, 0, x), axis=axes, keepdims=keepdim)
    c = np.sum(~nan, axis=axes, keepdims=keepdim)
    with _ignore():
        r = np.true_divide(s, c)
    return _fresh(r, npd)


def prod(a, dtype=None):
    return prod_dim(a, None, False, dtype)


# Note [half prod as torch]: torch multiplies float16 / bfloat16 in the dtype, every product
# rounded (so a float16 product overflows to inf and underflows to 0 on the way), in its
# vectorised reduction's order, found by experiment on an AVX2 host: along a contiguous run of
# 64 or more values, four accumulators of 16 lanes take blocks of 64 in turn, are combined as
# (a0 * a1) * (a2 * a3), then the 16 lanes left to right, then the values after the last whole
# block one by one; a shorter run, or a reduced dimension that is not the innermost one, is
# multiplied left to right. A whole-tensor product from 32768 values is split into up to one
# piece per thread, each reduced so and the pieces multiplied in order.

_PROD_GRAIN = 32768


def _half_prod_rows(r, npd):
    """Products of the rows of 2-d ``r`` (float32 values of dtype ``npd``), rounded to
    ``npd`` after every multiplication, in torch's order (Note [half prod as torch])."""
    m, n = r.shape

    def mul(x, y):
        return (x * y).astype(npd).astype(np.float32)
    if n == 0:
        return np.ones(m, np.float32)
    if n < 64:
        out = r[:, 0]
        for j in range(1, n):
            out = mul(out, r[:, j])
        return out
    full = n // 64 * 64
    blocks = r[:, :full].reshape(m, full // 64, 4, 16)
    accs = blocks[:, 0]
    for c in range(1, full // 64):
        accs = mul(accs, blocks[:, c])
    lanes = mul(mul(accs[:, 0], accs[:, 1]), mul(accs[:, 2], accs[:, 3]))
    out = lanes[:, 0]
    for j in range(1, 16):
        out = mul(out, lanes[:, j])
    for j in range(full, n):
        out = mul(out, r[:, j])
    return out


def _half_prod(x, axes, keepdim, npd):
    """float16 / bfloat16 ``prod`` of ``x`` (already of dtype ``npd``) over ``axes`` (None:
    all, or one axis) as torch computes it; None for several axes."""
    from ember._threads import get_num_threads
    if axes is None:
        flat = np.ravel(x, order="K").astype(np.float32)
        n = flat.size
        pieces = 1 if n < _PROD_GRAIN else min(get_num_threads(), -(-n // _PROD_GRAIN))
        size = -(-n // pieces) if n else 0
        out = None
        for k in range(pieces):
            v = _half_prod_rows(flat[k * size:(k + 1) * size][None], npd)
            out = v if out is None else (out * v).astype(npd).astype(np.float32)
        r = out.reshape(()) if out is not None else np.float32(1)
        if keepdim:
            r = np.reshape(r, (1,) * x.ndim)
        return np.asarray(r).astype(npd)
    if len(axes) != 1:
        return None
    ax = axes[0]
    moved = np.moveaxis(x, ax, -1)
    rows = moved.reshape(math.prod(moved.shape[:-1]), x.shape[ax]).astype(np.float32)
    if x.shape[ax] >= 64 and x.strides[ax] == x.itemsize:
        out = _half_prod_rows(rows, npd)
    else:                   # not the innermost run: left to right, across the rest
        out = np.ones(rows.shape[0], np.float32)
        if rows.shape[1]:
            out = rows[:, 0]
            for j in range(1, rows.shape[1]):
                out = (out * rows[:, j]).astype(npd).astype(np.float32)
    out = out.reshape(moved.shape[:-1])
    if keepdim:
        out = np.expand_dims(out, ax)
    return out.astype(npd)


def prod_dim(a, dim, keepdim=False, dtype=None):
    if dtype is not None:
        npd = dtype.np
    elif a.dtype.kind in "biu":
        npd = np.dtype(np.int64)
    else:
        npd = a.dtype
    axes = None if dim is None else reduce_axes(dim, a.ndim)
    if is_float(npd) and npd.itemsize == 2:         # Note [half prod as torch]
        with _ignore():
            r = _half_prod(a.astype(npd, copy=False), axes, keepdim, npd)
        if r is not None:
            return r
    x = acc(a.astype(npd, copy=False)) if is_float(npd) else a
    with _ignore():
        r = np.prod(x, axis=axes, keepdims=keepdim, dtype=None if is_float(npd) else npd)
    return _fresh(r, npd)


# -------------------------------------------------------------------- max / min family

def _nonempty_dim(a, dim, name):
    d = wrap_dim(dim, a.ndim)
    if a.ndim and a.shape[d] == 0:
        raise IndexError(f"{name}(): Expected reduction dim {d} to have non-zero size.")
    return d


def _extreme_all(a, fn, name):
    if a.dtype.kind == "c":
        raise not_implemented(f"{name}_all", a.dtype)
    if a.size == 0:
        raise RuntimeError(f"{name}(): Expected reduction dim to be specified for input.numel() "
                           f"== 0. Specify the reduction dim with the 'dim' argument.")
    return _fresh(fn(a))


def max_all(a):
    return _extreme_all(a, np.max, "max")


def min_all(a):
    return _extreme_all(a, np.min, "min")


def _extreme_dim(a, dim, keepdim, argfn, name):
    if a.dtype.kind == "c":
        raise RuntimeError(f"{name}(): does not support complex input")
    d = _nonempty_dim(a, dim, name)
    if a.ndim == 0:
        return a.copy(), np.zeros((), np.int64)
    if d == a.ndim - 1 and a.flags.c_contiguous and a.size:     # rows: one gather, no
        i = (a.argmax if argfn is np.argmax else a.argmin)(axis=d)   # take_along_axis
        vals = a.reshape(-1, a.shape[-1])[np.arange(i.size), i.reshape(-1)].reshape(i.shape)
        if keepdim:
            vals, i = vals[..., None], i[..., None]
        return vals, i.astype(np.int64, copy=False)
    idx = argfn(a, axis=d, keepdims=True)
    vals = np.take_along_axis(a, idx, d)
    if not keepdim:
        vals, idx = np.squeeze(vals, d), np.squeeze(idx, d)
    return vals, idx.astype(np.int64)


def max_dim(a, dim, keepdim=False):
    return _extreme_dim(a, dim, keepdim, np.argmax, "max")


def min_dim(a, dim, keepdim=False):
    return _extreme_dim(a, dim, keepdim, np.argmin, "min")


def _extreme_values(a, dim, keepdim, fn, name, kname):
    if a.dtype.kind == "c":
        raise not_implemented(kname, a.dtype)
    axes = reduce_axes(dim, a.ndim)
    if axes is None:
        if a.size == 0:
            raise RuntimeError(f"{name}(): Expected reduction dim to be specified for "
                               f"input.numel() == 0. Specify the reduction dim with the 'dim' "
                               f"argument.")
    else:
        for d in axes:
            if a.shape[d] == 0:
                raise IndexError(f"{name}(): Expected reduction dim {d} to have non-zero size.")
    return _fresh(fn(a, axis=axes, keepdims=keepdim))


def amax(a, dim=(), keepdim=False):
    return _extreme_values(a, dim, keepdim, np.max, "amax", "max_values_cpu")


def amin(a, dim=(), keepdim=False):
    return _extreme_values(a, dim, keepdim, np.min, "amin", "min_values_cpu")


def _arg_extreme(a, dim, keepdim, argfn, name):
    if a.dtype.kind == "c":
        raise RuntimeError(f"{name}(): does not support complex input")
    if a.dtype == np.bool_:
        raise RuntimeError(f"{name}(): does not support bool input")
    if dim is None:
        if a.size == 0:
            raise IndexError(f"{name}(): Expected reduction dim to be specified for "
                             f"input.numel() == 0.")
        r = np.asarray(argfn(a), np.int64)
        return r.reshape((1,) * a.ndim) if keepdim else r
    d = _nonempty_dim(a, dim, name)
    if a.ndim == 0:
        return np.zeros((), np.int64)
    return argfn(a, axis=d, keepdims=keepdim).astype(np.int64)


def argmax(a, dim=None, keepdim=False):
    return _arg_extreme(a, dim, keepdim, np.argmax, "argmax")


def argmin(a, dim=None, keepdim=False):
    return _arg_extreme(a, dim, keepdim, np.argmin, "argmin")


def aminmax(a, dim=None, keepdim=False):
    if a.dtype.kind == "c":
        raise not_implemented("aminmax_cpu", a.dtype)
    if dim is None:
        if a.size == 0:
            raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as the "
                               "operation has no identity.")
        axes = None
    else:
        d = wrap_dim(dim, a.ndim)
        if a.ndim and a.shape[d] == 0:
            raise IndexError(f"aminmax: Expected reduction dim {d} to have non-zero size.")
        axes = None if a.ndim == 0 else (d,)
    mn = np.min(a, axis=axes, keepdims=keepdim)
    mx = np.max(a, axis=axes, keepdims=keepdim)
    if keepdim and dim is None:
        mn, mx = np.reshape(mn, (1,) * a.ndim), np.reshape(mx, (1,) * a.ndim)
    return _fresh(mn), _fresh(mx)


# -------------------------------------------------------------------- moments

def _moments(a, dim, correction, keepdim, name):
    if not is_float_or_complex(a.dtype):
        raise RuntimeError("std and var only support floating point and complex dtypes")
    axes = reduce_axes(dim, a.ndim)
    # torch's float32 (and complex64) variance is float64's two-pass value rounded once
    # (found by experiment); a float32 two-pass misses it in a few outputs in ten
    x = acc(a)
    if x.dtype == np.float32 or x.dtype == np.complex64:
        x = x.astype(np.complex128 if x.dtype.kind == "c" else np.float64)
    n = numel_reduced(a.shape, axes)
    c = 1 if correction is None else correction
    with _ignore():
        m = np.true_divide(np.sum(x, axis=axes, keepdims=True), n) if n else \
            np.sum(x, axis=axes, keepdims=True) * np.nan
        d = x - m
        sq = d.real * d.real + d.imag * d.imag if d.dtype.kind == "c" else d * d
        s = np.sum(sq, axis=axes, keepdims=keepdim)
        denom = max(0, n - c)
        if denom <= 0:
            warnings.warn(f"{name}(): degrees of freedom is <= 0. Correction should be strictly "
                          f"less than the reduction factor (input numel divided by output "
                          f"numel).", UserWarning, stacklevel=user_stacklevel())
        v = np.true_divide(s, denom)
    return v, squeeze_axes(m, axes, keepdim, a.ndim)



def var(a, dim=None, correction=None, keepdim=False):
    v, _ = _moments(a, dim, correction, keepdim, "var")
    return _fresh(v, real_dtype(a.dtype))


def std(a, dim=None, correction=None, keepdim=False):
    v, _ = _moments(a, dim, correction, keepdim, "std")
    return _fresh(np.sqrt(v), real_dtype(a.dtype))


def var_mean(a, dim=None, correction=None, keepdim=False):
    v, m = _moments(a, dim, correction, keepdim, "var_mean")
    return _fresh(v, real_dtype(a.dtype)), _fresh(m, a.dtype)


def std_mean(a, dim=None, correction=None, keepdim=False):
    v, m = _moments(a, dim, correction, keepdim, "std_mean")
    return _fresh(np.sqrt(v), real_dtype(a.dtype)), _fresh(m, a.dtype)


# -------------------------------------------------------------------- logsumexp, norms

def logsumexp(a, dim, keepdim=False):
    axes = reduce_axes(dim, a.ndim)
    x = acc(a)
    with _ignore():
        key = x.real if x.dtype.kind == "c" else x
        m = np.max(key, axis=axes, keepdims=True, initial=-np.inf)
        m = np.where(np.isfinite(m), m, 0)
        if x.dtype == np.float32 and a.dtype == np.float32 and x.ndim:
            # torch's: exp and log as its elementwise ones, the sum in torch.sum's order
            e = np.ascontiguousarray(_exp(x - m))
            t = torch_sum.reduce_sum(e, None if axes is None else tuple(axes), True)
            r = _log(np.sum(e, axis=axes, keepdims=True) if t is None else t) + m
        else:
            r = np.log(np.sum(np.exp(x - m), axis=axes, keepdims=True)) + m
    return _fresh(squeeze_axes(r, axes, keepdim, a.ndim), a.dtype)


def vector_norm(a, p=2, dim=None, keepdim=False, dtype=None):
    if dtype is not None:
        if not is_float_or_complex(dtype.np):
            raise RuntimeError(f"linalg.vector_norm: dtype should be floating point or complex, "
                               f"but got {tname(dtype.np)}")
        a = a.astype(dtype.np)
    if not is_float_or_complex(a.dtype):
        raise RuntimeError(f"linalg.vector_norm: Expected a floating point or complex tensor as "
                           f"input. Got {tname(a.dtype)}")
    p = 2.0 if p is None else float(p)
    axes = reduce_axes(dim, a.ndim)
    x = np.abs(acc(a))
    with _ignore():
        if np.isinf(p):
            if numel_reduced(a.shape, axes) == 0:
                raise RuntimeError(f"linalg.vector_norm cannot compute the {p:g} norm on an empty "
                                   f"tensor because the operation does not have an identity")
            r = (np.max if p > 0 else np.min)(x, axis=axes, keepdims=keepdim)
        elif p == 0:
            r = np.sum(x != 0, axis=axes, keepdims=keepdim).astype(x.dtype)
        elif p == 1:
            r = _sum_in_order(x, axes, keepdim)
        elif p == 2:
            r = _norm2_float32(a, axes, keepdim) if a.dtype == np.float32 else \
                _norm2_float64(a, axes, keepdim) if a.dtype == np.float64 else None
            if r is None:
                r = np.sqrt(np.sum(x * x, axis=axes, keepdims=keepdim))
        elif numel_reduced(a.shape, axes) == 1:      # (torch: |x| itself, no powers)
            r = np.sum(x, axis=axes, keepdims=keepdim)
        else:
            r = _libm_pow(_sum_in_order(_libm_pow(x, p), axes, keepdim), 1.0 / p)
    return _fresh(r, real_dtype(a.dtype))


def _libm_pow(x, q):
    """``x ** q`` as C's pow/powf computes it: NumPy takes a scalar exponent 0.5, 2 or -1
    as sqrt, a square or a reciprocal (correctly rounded, where powf is not always); an
    exponent array keeps it on pow/powf."""
    q = x.dtype.type(q)
    if q in (0.5, 2.0, -1.0, 1.0, 0.0) or np.ndim(x) == 0:
        return np.power(x, np.full(np.shape(x), q))
    return np.power(x, q)


# Note [p-norm order]: torch's CPU p-norms other than 0, 2 and +-inf (``vector_norm`` /
# ``norm`` with ord 1, 3, 0.5, -1, ...) add ``|x| ** p`` (each power rounded in the
# dtype) one after another in the dtype, then take ``** (1 / p)`` (found by experiment:
# (C's pow/powf, as NumPy's power with an exponent array computes it) every
# float32/float64 row of 1 to 4099 elements and every p tried bit for bit, rows
# over any dim alike; NumPy's pairwise sum missed about half); one value is |x| itself
# (no power and root). A full reduction of more than 32768 elements is cut
# as torch's sum cuts it (Note [torch's summation order]: k = min(threads,
# ceil(n / 32768)) chunks, each in order, the chunk sums added in order).
_PNORM_GRAIN = 32768


def _sum_in_order(x, axes, keepdim):
    """``np.sum(x, axis=axes, keepdims=keepdim)`` adding each output's values in order."""
    nd = x.ndim
    axes = tuple(range(nd)) if axes is None else tuple(sorted(a % nd for a in axes)) \
        if nd else ()
    if nd == 0 or not axes or x.size == 0:
        return np.sum(x, axis=axes, keepdims=keepdim)
    kept = tuple(i for i in range(nd) if i not in axes)
    n = math.prod(x.shape[i] for i in axes)
    rows = np.ascontiguousarray(np.transpose(x, axes + kept)).reshape(n, -1)
    if rows.shape[1] == 1:
        col = rows[:, 0]
        k = 1 if n <= _PNORM_GRAIN else min(torch_sum._threads(), -(-n // _PNORM_GRAIN))
        size = -(-n // k)
        r = np.zeros((), x.dtype)
        for i in range(0, n, size):
            r = r + np.add.accumulate(col[i:i + size])[-1]
        r = np.reshape(r, (1,))
    else:
        r = np.add.reduce(rows, axis=0)          # (over the outer axis: row after row)
    out_shape = tuple(1 if i in axes else x.shape[i] for i in range(nd)) if keepdim else \
        tuple(x.shape[i] for i in kept)
    return r.reshape(out_shape)


def _trailing_rows(a, axes, keepdim):
    """(row length, result shape) when ``axes`` are the trailing dims of a non-empty
    C-contiguous ``a`` (the rows a 2-norm in torch's order reduces), else None."""
    nd = a.ndim
    if axes is None:
        axes = tuple(range(nd))
    k = len(axes)
    if nd == 0 or a.size == 0 or not a.flags.c_contiguous or \
            tuple(sorted(axes)) != tuple(range(nd - k, nd)):
        return None
    return math.prod(a.shape[nd - k:]), a.shape[:nd - k] + ((1,) * k if keepdim else ())


# Note [float32 2-norm order]: torch's CPU 2-norm of float32 rows (a contiguous full
# reduction, or over the innermost dim) runs, per row (found by experiment): eight lanes
# accumulating squares (rounded, no multiply-add) over each full block of 8, the lanes
# summed left to right, then a tail of 4 or more adds 4 rounded squares one by one, and
# the last 0-3 elements are fused multiply-adds; sqrt last. NumPy's pairwise sum missed
# torch's value in about a third of short rows (gradient norms, F.normalize).
def _norm2_float32(a, axes, keepdim):
    """The float32 2-norm in torch's order where ``axes`` are ``a``'s trailing dims of a
    C-contiguous array (None otherwise: NumPy's sum serves)."""
    rows = _trailing_rows(a, axes, keepdim)
    if rows is None:
        return None
    n, out_shape = rows
    kernels = compiled.module("norm") if a.size >= 2048 or "numba" in sys.modules else None
    if kernels is not None:                     # the same additions in one compiled pass
        r = np.empty(a.size // n, np.float32)
        kernels.rows_norm2(a.reshape(-1), r.size, n, r)
        return r.reshape(out_shape)
    x = a.reshape(-1, n)
    m = n // 8 * 8
    if m:
        head = x[:, :m]
        lanes = np.add.reduce((head * head).reshape(x.shape[0], m // 8, 8), axis=1)
        s = lanes[:, 0].copy()
        for i in range(1, 8):
            s += lanes[:, i]
    else:
        s = np.zeros(x.shape[0], np.float32)
    j = m
    if n - m >= 4:
        for i in range(m, m + 4):
            s += x[:, i] * x[:, i]
        j = m + 4
    for i in range(j, n):       # multiply-adds, rounded once (elementwise.fma)
        s = fma(x[:, i], x[:, i], s)
    r = np.sqrt(s)
    return r.reshape(out_shape)


# float64 2-norms (found by experiment, as Note [float32 2-norm order]): four lanes of
# rounded squares over whole blocks of 4, the lanes added in order, the last 0-3 elements
# multiply-adds; sqrt last (bit for bit for rows of 1 to 1000 elements; NumPy's pairwise
# sum missed about a third, e.g. weight norm's float64 slices).
def _norm2_float64(a, axes, keepdim):
    """The float64 2-norm in torch's order where ``axes`` are ``a``'s trailing dims of a
    C-contiguous array (None otherwise: NumPy's sum serves)."""
    rows = _trailing_rows(a, axes, keepdim)
    if rows is None:
        return None
    n, out_shape = rows
    x = a.reshape(-1, n)
    m = n // 4 * 4
    if m:
        head = x[:, :m]
        lanes = np.add.reduce((head * head).reshape(x.shape[0], m // 4, 4), axis=1)
        s = lanes[:, 0] + lanes[:, 1]
        s += lanes[:, 2]
        s += lanes[:, 3]
    else:
        s = np.zeros(x.shape[0], np.float64)
    for i in range(m, n):
        s = fma(x[:, i], x[:, i], s)
    return np.sqrt(s).reshape(out_shape)


def abs_pow(a, p):
    """|a| ** p (real result)."""
    with _ignore():
        return _fresh(np.abs(a) ** p)


def sgn(a):
    """sign for real inputs, a / |a| (0 at 0) for complex ones."""
    if a.dtype.kind == "c":
        m = np.abs(a)
        with _ignore():
            return np.where(m == 0, 0, a / np.where(m == 0, 1, m)).astype(a.dtype)
    if a.dtype == np.bool_:
        return a.copy()
    return np.sign(a)


def compare_mask(a, b, op):
    """Boolean masks for backward rules: eq, eqnan (NaN equals NaN), ne, lt, le, gt, ge,
    isnan."""
    a = np.asarray(a)
    if op == "isnan":
        return np.isnan(a) if a.dtype.kind in "fcV" else np.zeros(a.shape, np.bool_)
    if op == "eqnan":
        r = np.equal(a, b)
        if a.dtype.kind in "fcV":
            r |= np.isnan(a) & np.isnan(b)
        return r
    return getattr(np, {"eq": "equal", "ne": "not_equal", "lt": "less", "le": "less_equal",
                        "gt": "greater", "ge": "greater_equal"}[op])(a, b)


# -------------------------------------------------------------------- all / any / counts

def all_(a, dim=None, keepdim=False):
    axes = reduce_axes(dim, a.ndim)
    r = np.all(a, axis=axes, keepdims=keepdim)
    return np.asarray(r, np.uint8 if a.dtype == np.uint8 else np.bool_)


def any_(a, dim=None, keepdim=False):
    axes = reduce_axes(dim, a.ndim)
    r = np.any(a, axis=axes, keepdims=keepdim)
    return np.asarray(r, np.uint8 if a.dtype == np.uint8 else np.bool_)


def count_nonzero(a, dim=None):
    axes = reduce_axes(dim, a.ndim)
    return np.asarray(np.count_nonzero(a, axis=axes), np.int64)


# -------------------------------------------------------------------- scans

def _scan_dtype(a, dtype):
    if dtype is not None:
        return dtype.np
    return np.dtype(np.int64) if a.dtype.kind in "biu" else a.dtype


# torch's CPU scans run float32 sums in float64 and half sums in float32 (then round each
# prefix): NumPy's own float32 scan drifts from torch's by ~1e-2 over a million terms
_SCAN_ACC = {np.dtype(np.float32): np.float64, np.dtype(np.float16): np.float32,
             _dtype.bfloat16.np: np.float32}


def cumsum(a, dim, dtype=None):
    d = wrap_dim(dim, a.ndim)
    npd = _scan_dtype(a, dtype)
    if a.ndim == 0:
        return a.astype(npd)
    acc = _SCAN_ACC.get(np.dtype(npd))
    if acc is None:
        return np.cumsum(a, axis=d, dtype=npd)
    if npd == np.float32 and a.size >= 1024:
        kernels = compiled.module("scan")
        if kernels is not None:
            x = np.ascontiguousarray(a, np.float32)
            shape = (math.prod(x.shape[:d]), x.shape[d], math.prod(x.shape[d + 1:]))
            out = np.empty(x.shape, np.float32)
            kernels.cumsum_f32(x.reshape(shape), out.reshape(shape))
            return out
    return np.cumsum(a, axis=d, dtype=acc).astype(npd)


def reverse_cumsum(a, dim):
    d = wrap_dim(dim, a.ndim)
    if a.ndim == 0:
        return a.copy()
    return np.ascontiguousarray(np.flip(cumsum(np.flip(a, d), d), d))


def cumprod(a, dim, dtype=None):
    d = wrap_dim(dim, a.ndim)
    npd = _scan_dtype(a, dtype)
    if a.ndim == 0:
        return a.astype(npd)
    with _ignore():
        acc_dt = _SCAN_ACC.get(np.dtype(npd))
        if acc_dt is None:
            return np.cumprod(a, axis=d, dtype=npd)
        return np.cumprod(a, axis=d, dtype=acc_dt).astype(npd)


def nth_zero_mask(a, dim, n):
    """True at the ``n``-th zero (1-based) of each slice along ``dim``."""
    d = wrap_dim(dim, a.ndim)
    z = a == 0
    if a.ndim == 0:
        return z if n == 1 else np.zeros((), np.bool_)
    return z & (np.cumsum(z, axis=d) == n)


def _cum_extreme(a, dim, ufunc, kname):
    if a.dtype.kind == "c":
        raise not_implemented(kname, a.dtype)
    if a.size == 0:                 # torch answers an empty input before checking ``dim``
        return a.copy(), np.zeros(a.shape, np.int64)
    if a.ndim == 0:
        if dim not in (0, -1):
            raise IndexError(f"{kname[:6]}(): Expected reduction dim -1 or 0 for scalar but "
                             f"got {dim}")
        return a.copy(), np.zeros((), np.int64)
    d = wrap_dim(dim, a.ndim)
    v = ufunc.accumulate(a, axis=d)
    mark = a == v
    if is_float(a.dtype):
        mark |= np.isnan(a)
    shape = [1] * a.ndim
    shape[d] = a.shape[d]
    pos = np.arange(a.shape[d], dtype=np.int64).reshape(shape)
    idx = np.maximum.accumulate(np.where(mark, pos, 0), axis=d)
    return v, idx


def cummax(a, dim):
    return _cum_extreme(a, dim, np.maximum, "cummax_cpu")


def cummin(a, dim):
    return _cum_extreme(a, dim, np.minimum, "cummin_cpu")


def logcumsumexp(a, dim):
    if not is_float_or_complex(a.dtype):
        raise not_implemented("logcumsumexp_out_cpu", a.dtype)
    d = wrap_dim(dim, a.ndim)
    if a.ndim == 0:
        return a.copy()
    if a.dtype.kind == "c":
        return _complex_logcumsumexp(a, d)
    with _ignore():         # (run in torch's accumulate type, as cumsum: see _SCAN_ACC)
        return _fresh(np.logaddexp.accumulate(a, axis=d, dtype=_SCAN_ACC.get(a.dtype, a.dtype)),
                      a.dtype)


def _complex_logaddexp(a, b):
    """torch's complex log-add-exp step: max + log1p(exp(min - max)), min/max by real part
    (so the imaginary part follows the dominant operand, not the principal branch)."""
    swap = b.real < a.real
    lo, hi = np.where(swap, b, a), np.where(swap, a, b)
    r = np.log1p(np.exp(lo - hi)) + hi
    inf = np.isinf(lo.real) & (lo.real == hi.real)
    r = np.where(inf & (lo.real < 0), lo, r)
    r = np.where(inf & (lo.real > 0), np.log(np.exp(lo) + np.exp(hi)), r)
    nan = np.isnan(lo.real) | np.isnan(lo.imag)
    return np.where(nan, np.complex128(complex(np.nan, np.nan)), r)


def _complex_logcumsumexp(a, d):
    """torch's sequential scan of the complex log-add-exp along ``d`` (vectorised over the
    other dims); its branch of the imaginary part depends on the scan order."""
    x = np.moveaxis(a, d, 0)
    out = np.empty(x.shape, a.dtype)
    with _ignore():
        r = x[0]
        out[0] = r
        for k in range(1, x.shape[0]):
            r = _complex_logaddexp(x[k], r).astype(a.dtype)
            out[k] = r
    return np.moveaxis(out, 0, d).copy()


def _complex_logcumsumexp_grad(g, x, r, d, reverse):
    """reverse: out_k = sum_{i>=k} g_i conj(e^(x_k - r_i)); forward: out_i = sum_{k<=i}
    g_k conj(e^(x_k - r_i)) (shifted by the largest real part to limit overflow)."""
    with _ignore():
        cx, cr = np.conj(x), np.conj(r)
        sx = np.max(cx.real, axis=d, keepdims=True, initial=-np.inf)
        sx = np.where(np.isfinite(sx), sx, 0)
        if reverse:
            w = g * np.exp(-cr + sx)
            t = np.flip(np.cumsum(np.flip(w, d), axis=d), d)
            out = np.exp(cx - sx) * t
        else:
            out = np.cumsum(g * np.exp(cx - sx), axis=d) * np.exp(-cr + sx)
    return _fresh(out, np.result_type(g.dtype, x.dtype))


def logcumsumexp_grad(g, x, r, dim, reverse):
    """reverse: out_k = sum_{i>=k} g_i exp(x_k - r_i); forward: out_i = sum_{k<=i} g_k
    exp(x_k - r_i). Stable: the sums run in log space on the positive and negative parts
    of ``g`` separately."""
    d = wrap_dim(dim, g.ndim)
    if np.iscomplexobj(x) or np.iscomplexobj(g):
        if g.ndim == 0:
            with _ignore():
                return _fresh(g * np.conj(np.exp(x - r)), np.result_type(g.dtype, x.dtype))
        return _complex_logcumsumexp_grad(g, x, r, d, reverse)
    with _ignore():
        if g.ndim == 0:
            return _fresh(g * np.exp(x - r), g.dtype)
        la = np.log(np.abs(g))
        lp = np.where(g > 0, la, -np.inf)
        ln = np.where(g < 0, la, -np.inf)
        if reverse:
            def part(lg):
                t = np.flip(np.logaddexp.accumulate(np.flip(lg - r, d), axis=d), d)
                return np.exp(t + x)
        else:
            def part(lg):
                return np.exp(np.logaddexp.accumulate(lg + x, axis=d) - r)
        return _fresh(part(lp) - part(ln), g.dtype)


# -------------------------------------------------------------------- softmax

def _softmax_prep(a, dim, dtype, kname):
    d = wrap_dim(dim, a.ndim)
    if dtype is not None:
        a = a.astype(dtype.np)
    elif not is_float(a.dtype):     # torch's kernel over the last dim has a name of its own
        last = d == a.ndim - 1 or a.ndim == 0
        raise not_implemented(kname.replace("_kernel", "_lastdim_kernel") if last else kname,
                              a.dtype)
    x = acc(a)
    if x.ndim == 0:
        x = x.reshape(1)
        d = 0
    return a, x, d


# Note [float32 softmax rows]: torch's float32 softmax / log_softmax over the last dim add a
# row's exponentials (found by experiment) left to right when the row is shorter than 8,
# else in 8 lanes over whole blocks of 8 with the tail added into the first lanes and the
# lanes halved pairwise (4 + 4, 2 + 2, 1 + 1); softmax then multiplies by the rounded
# reciprocal of the sum, log_softmax takes (x - max) - log(sum). With exp/log through
# ember's elementwise kernels (float64 rounded once for small arrays) 95% of log_softmax
# rows of 2-100 and 90% (2 wide) to 50% (8 wide) of softmax rows are torch's bits, where
# NumPy's float32 exp, pairwise sum and division gave 45-70% and 50% to 1%. Arrays below
# TANH_MIN elements only (the compiled row kernel takes large ones; between the two the lane
# sums cost several times NumPy's pass, so NumPy's pass stays), rows of up to _ROW_LANES_MAX.
_ROW_LANES_MAX = 1024


def _float32_rows(a, x, d):
    return a.dtype == np.float32 and d == x.ndim - 1 and 0 < x.shape[-1] <= _ROW_LANES_MAX \
        and x.size < TANH_MIN


def _row_sums(e):
    """(..., 1) float32 sums of the rows of ``e`` in torch's softmax order (Note [float32
    softmax rows])."""
    C = e.shape[-1]
    if C >= 8 and e.flags.c_contiguous:
        kernels = compiled.module("softmax") if e.size >= 4096 else compiled.loaded("softmax")
        if kernels is not None:                     # the same additions, one compiled pass
            out = np.empty(e.shape[:-1] + (1,), np.float32)
            kernels.lane_row_sums(e.reshape(-1, C), out.reshape(-1))
            return out
    if C < 8:
        s = e[..., :1].copy()
        for j in range(1, C):
            s += e[..., j:j + 1]
        return s
    whole = C // 8 * 8              # (NumPy adds along the outer axis in order)
    blocks = e[..., :whole].reshape((-1, whole // 8, 8)).transpose(1, 0, 2)
    acc = np.add.reduce(np.ascontiguousarray(blocks), axis=0).reshape(e.shape[:-1] + (8,))
    if whole < C:
        acc[..., :C - whole] += e[..., whole:]
    while acc.shape[-1] > 1:
        h = acc.shape[-1] // 2
        acc = acc[..., :h] + acc[..., h:]
    return acc


def softmax(a, dim, dtype=None):
    a, x, d = _softmax_prep(a, dim, dtype, "softmax_kernel_impl")
    if d == x.ndim - 1 and (r := pooled_softmax(x, False)) is not None:
        return _fresh(r.reshape(a.shape), a.dtype)     # (large float32: compiled rows)
    if _float32_rows(a, x, d):
        with _ignore():
            m = np.maximum.reduce(x, axis=d, keepdims=True, initial=-np.inf)
            r = _exp(np.subtract(x, m))
            r *= np.float32(1) / _row_sums(r)
        return _fresh(r.reshape(a.shape), a.dtype)
    with _ignore():
        m = np.maximum.reduce(x, axis=d, keepdims=True, initial=-np.inf)
        r = np.subtract(x, m)          # the one full-size buffer: exp and scale in place
        np.exp(r, out=r)
        r /= np.add.reduce(r, axis=d, keepdims=True)
    return _fresh(r.reshape(a.shape), a.dtype)


def log_softmax(a, dim, dtype=None):
    a, x, d = _softmax_prep(a, dim, dtype, "log_softmax_kernel_impl")
    if d == x.ndim - 1 and a.dtype.itemsize == 2 and is_float(a.dtype):
        # torch's last-dim kernel for float16/bfloat16 keeps the sum of exponentials and its
        # log in the dtype: (x - max) - round(log(round(sum exp(x - max)))), rounded once
        # more (found by experiment; other dims compute in float32 and round once)
        with _ignore():
            m = np.maximum.reduce(x, axis=d, keepdims=True, initial=-np.inf)
            r = np.subtract(x, m)
            s = np.add.reduce(np.exp(r), axis=d, keepdims=True)
            lse = np.log(s.astype(a.dtype).astype(np.float32)).astype(a.dtype)
            r -= lse.astype(np.float32)
        return _fresh(r.reshape(a.shape), a.dtype)
    if d == x.ndim - 1 and (r := pooled_softmax(x, True)) is not None:
        return _fresh(r.reshape(a.shape), a.dtype)
    if _float32_rows(a, x, d):
        with _ignore():
            m = np.maximum.reduce(x, axis=d, keepdims=True, initial=-np.inf)
            r = np.subtract(x, m)
            r -= _log(_row_sums(_exp(r)))
        return _fresh(r.reshape(a.shape), a.dtype)
    with _ignore():
        m = np.maximum.reduce(x, axis=d, keepdims=True, initial=-np.inf)
        r = np.subtract(x, m)          # the one full-size buffer: exp for the sum, then
        np.exp(r, out=r)               # (x - max) - log(sum)
        lse = np.log(np.add.reduce(r, axis=d, keepdims=True))
        np.subtract(x, m, out=r)
        r -= lse
    return _fresh(r.reshape(a.shape), a.dtype)


@half_in_float32          # torch: float32 math for half operands, one rounding
def softmax_backward_data(grad, output, dim, input_dtype=None):
    """y (g - sum(g y)) with one full-size buffer (``output`` is the softmax y), in
    ``input_dtype`` (the softmax input's dtype; default y's)."""
    g, y = np.asarray(grad), np.asarray(output)
    dtype = y.dtype if input_dtype is None else input_dtype.np
    d = wrap_dim(dim, max(y.ndim, 1))
    if d == y.ndim - 1 and (r := pooled_softmax_backward(g, y, False)) is not None:
        return _fresh(r, dtype)
    r = np.multiply(g, y)
    if r.ndim == 0:
        return _fresh(np.multiply(np.subtract(g, r), y), dtype)
    s = np.sum(r, axis=d, keepdims=True)
    np.subtract(g, s, out=r)
    r *= y
    return _fresh(r, dtype)


@half_in_float32          # torch: float32 math for half operands, one rounding
def log_softmax_backward_data(grad, output, dim, input_dtype=None):
    """g - exp(y) sum(g) with one full-size buffer (``output`` is the log-softmax y), in
    ``input_dtype`` (default y's)."""
    g, y = np.asarray(grad), np.asarray(output)
    dtype = y.dtype if input_dtype is None else input_dtype.np
    d = wrap_dim(dim, max(y.ndim, 1))
    if d == y.ndim - 1 and (r := pooled_softmax_backward(g, y, True)) is not None:
        return _fresh(r, dtype)
    with _ignore():
        r = np.exp(y)
        if r.ndim == 0:
            return _fresh(np.subtract(g, r * g), dtype)
        r *= np.sum(g, axis=d, keepdims=True)
        np.subtract(g, r, out=r)
    return _fresh(r, dtype)


# -------------------------------------------------------------------- output layout
# torch allocates these results contiguous whatever the input's layout (a channels-last
# input gives a contiguous ``amax(dim)``, ``cumsum``, ``softmax``); NumPy keeps the input's
# order in them.
(mean, nansum, nanmean, prod_dim, max_dim, min_dim, amax, amin, argmax, argmin, aminmax, var,
 std, var_mean, std_mean, logsumexp, vector_norm, all_, any_, count_nonzero, cumsum, cumprod,
 cummax, cummin, logcumsumexp, softmax, log_softmax, softmax_backward_data,
 log_softmax_backward_data) = map(contiguous_result, (
    mean, nansum, nanmean, prod_dim, max_dim, min_dim, amax, amin, argmax, argmin, aminmax, var,
    std, var_mean, std_mean, logsumexp, vector_norm, all_, any_, count_nonzero, cumsum, cumprod,
    cummax, cummin, logcumsumexp, softmax, log_softmax, softmax_backward_data,
    log_softmax_backward_data))
