"""FFT kernels (NumPy arrays in, arrays out). scipy.fft (imported lazily) keeps
float32/complex64 precision; numpy.fft is the fallback."""
from __future__ import annotations

import numpy as np


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


def fft_c2c(a, s, dim, norm, forward):
    """n-dimensional complex transform over ``dim`` with signal sizes ``s``."""
    a = _as_complex(a)
    f = _lib()
    if len(dim) == 0:
        return a.copy()
    fn = f.fftn if forward else f.ifftn
    r = fn(a, s=tuple(s), axes=tuple(dim), norm=norm)
    return np.ascontiguousarray(r, dtype=a.dtype)


def fft_r2c(a, s, dim, norm, onesided):
    """Real-to-complex transform; the last of ``dim`` is halved when ``onesided``."""
    f = _lib()
    out_dt = _CPLX.get(a.dtype, np.complex128)
    r = f.rfftn(a, s=tuple(s), axes=tuple(dim), norm=norm)
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
    r = f.irfftn(a, s=tuple(s), axes=tuple(dim), norm=norm)
    return np.ascontiguousarray(r, dtype=_real_dtype(a))
