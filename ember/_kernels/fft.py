"""FFT kernels (NumPy arrays in, arrays out). scipy.fft (imported lazily) keeps
float32/complex64 precision; numpy.fft is the fallback."""
from __future__ import annotations

import numpy as np

from ember._kernels import fft_large as _large


def _lib():
    try:
        import scipy.fft as f
        return f
    except ImportError:                                 # pragma: no cover
        return np.fft


_CPLX = {np.dtype(np.float32): np.complex64, np.dtype(np.float64): np.complex128,
         np.dtype(np.float16): np.complex64}


def _as_complex(a):
    if a.dtype.kind == "c":
        return a
    return a.astype(_CPLX.get(a.dtype, np.complex128))


def _real_dtype(a):
    return np.float32 if a.dtype in (np.complex64, np.float32, np.float16) else np.float64


# scipy's ``workers`` (threads over the independent 1-D lines of a transform) only pays
# for its start-up once an array is this big.
_THREADED_SIZE = 1 << 16


def _kw(f, size):
    """Extra keyword arguments for a scipy.fft call on ``size`` output elements."""
    if f is np.fft or size < _THREADED_SIZE:
        return {}
    w = _large.num_workers()
    return {"workers": w} if w > 1 else {}


def _out_size(a, s, dim):
    size = 1
    shape = list(a.shape)
    for d, n in zip(dim, s):
        shape[d % a.ndim] = n
    for v in shape:
        size *= v
    return size


def _resized(a, d, n):
    """``a`` truncated or zero-padded to length ``n`` along axis ``d``."""
    m = a.shape[d]
    if m == n:
        return a
    idx = [slice(None)] * a.ndim
    idx[d] = slice(0, min(m, n))
    if n < m:
        return a[tuple(idx)]
    shape = list(a.shape)
    shape[d] = n
    out = np.zeros(shape, a.dtype)
    out[tuple(idx)] = a
    return out


def _large_c2c_1d(a, n, d, norm, forward):
    """The split transform of ``_large`` along axis ``d`` (length ``n`` after resizing)."""
    d %= a.ndim
    x = np.moveaxis(_resized(a, d, n), d, -1)
    r = _large.c2c_last(x, forward, norm)
    if d != a.ndim - 1:
        r = np.ascontiguousarray(np.moveaxis(r, -1, d))
    return r


def fft_c2c(a, s, dim, norm, forward):
    """n-dimensional complex transform over ``dim`` with signal sizes ``s``."""
    a = _as_complex(a)
    f = _lib()
    if len(dim) == 0:
        return a.copy()
    if len(dim) == 1 and f is not np.fft and a.size and _large.split(int(s[0])):
        return _large_c2c_1d(a, int(s[0]), dim[0], norm, forward)
    fn = f.fftn if forward else f.ifftn
    r = fn(a, s=tuple(s), axes=tuple(dim), norm=norm, **_kw(f, _out_size(a, s, dim)))
    return np.ascontiguousarray(r, dtype=a.dtype)


def fft_r2c(a, s, dim, norm, onesided):
    """Real-to-complex transform; the last of ``dim`` is halved when ``onesided``."""
    f = _lib()
    out_dt = _CPLX.get(a.dtype, np.complex128)
    if (len(dim) == 1 and f is not np.fft and a.size and a.dtype in (np.float32, np.float64)
            and _large.real_split(int(s[0]))):
        d = dim[0] % a.ndim
        r = _large.r2c_last(np.moveaxis(_resized(a, d, int(s[0])), d, -1), norm)
        r = np.moveaxis(r, -1, d)
        if not onesided:
            r = _fill_hermitian(r, s[-1], dim)
        return np.ascontiguousarray(r, dtype=out_dt)
    r = f.rfftn(a, s=tuple(s), axes=tuple(dim), norm=norm, **_kw(f, _out_size(a, s, dim)))
    if not onesided:
        r = _fill_hermitian(r, s[-1], dim)
    return np.ascontiguousarray(r, dtype=out_dt)


def _fill_hermitian(r, n, dim):
    """The full spectrum from the onesided one: X[k] = conj(X[-k]) (like torch, whose
    result then has +0 imaginary parts where a full complex FFT may give -0)."""
    last = dim[-1] % r.ndim
    h = r.shape[last]
    shape = list(r.shape)
    shape[last] = n
    full = np.empty(shape, r.dtype)
    idx = [slice(None)] * r.ndim
    idx[last] = slice(0, h)
    full[tuple(idx)] = r
    if n > h:
        others = [d % r.ndim for d in dim[:-1]]
        rr = r
        if others:
            rr = np.roll(np.flip(r, axis=others), 1, axis=others)
        src = [slice(None)] * r.ndim
        src[last] = slice(n - h, 0, -1)
        idx[last] = slice(h, n)
        full[tuple(idx)] = np.conj(rr[tuple(src)])
    return full


def fft_c2r(a, s, dim, norm):
    """Complex-to-real (Hermitian-halved last dim) transform; ``s`` are the output sizes."""
    f = _lib()
    a = _as_complex(a)
    if len(dim) == 1 and f is not np.fft and a.size and _large.real_split(int(s[0])):
        d, n = dim[0] % a.ndim, int(s[0])
        x = np.moveaxis(_resized(a, d, n // 2 + 1), d, -1)
        r = np.moveaxis(_large.c2r_last(x, n, norm), -1, d)
        return np.ascontiguousarray(r, dtype=_real_dtype(a))
    r = f.irfftn(a, s=tuple(s), axes=tuple(dim), norm=norm, **_kw(f, _out_size(a, s, dim)))
    return np.ascontiguousarray(r, dtype=_real_dtype(a))
