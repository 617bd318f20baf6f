"""Long one-dimensional complex FFTs by a two-pass ("four-step") split.

A transform of length ``n = r * c`` is computed as

1. view the signal as an ``r x c`` row-major matrix ``A[i, j] = x[i * c + j]`` (copied
   into a buffer whose rows are padded, so walking down a column does not hit the same
   cache sets over and over when ``c`` is a power of two);
2. transform every column (length ``r``) in place -- many short transforms, run on
   several threads by scipy's ``workers``;
3. multiply element ``[k, j]`` by ``w**(k * j)`` with ``w = exp(-+2 pi i / n)``;
4. transform every row (length ``c``), reading the buffer transposed, which writes the
   result straight into natural order: ``X[q * r + k]`` lands at ``[q, k]`` of an
   ``c x r`` output.

Both sub-transforms take the caller's ``norm`` unchanged: their scale factors multiply to
the one the full length needs (``1/r * 1/c = 1/n`` and likewise for the square roots).
Single precision stays single precision; the twiddle factors are evaluated in double
precision and then rounded once, so the error stays at the level of a direct transform.
"""
from __future__ import annotations

import math
import threading
from functools import lru_cache

import numpy as np

# Below this many points the direct transform is as fast or faster (measured on a small
# multi-core x86 box: the split wins clearly from ~2**16 points on, more so with threads).
MIN_LENGTH = 1 << 16
# Extra (unused) elements per buffer row: one 64-byte cache line of complex64.
_PAD = 8
# Either factor of the split must be at least this fraction of sqrt(n); lengths that
# only split very unevenly (e.g. 2 * a large prime) stay on the direct path.
_BALANCE = 16

_lock = threading.Lock()
_twiddles: dict = {}
_sizes = [0]                       # bytes held in _twiddles
_TWIDDLE_BYTES = 96 << 20          # rough cap for the twiddle cache


def num_workers():
    """Threads to hand scipy: ``ember.get_num_threads()``."""
    from ember._threads import get_num_threads
    return get_num_threads()


@lru_cache(maxsize=256)
def split(n):
    """``(r, c)`` with ``r * c == n``, ``r <= c`` and both near ``sqrt(n)``, or ``None``."""
    if n < MIN_LENGTH:
        return None
    root = math.isqrt(n)
    lo = max(2, root // _BALANCE)
    for r in range(root, lo - 1, -1):
        if n % r == 0:
            return r, n // r
    return None


def _cached(key, make):
    """``make()`` (an array or a tuple of arrays), kept in a small size-capped cache."""
    with _lock:
        t = _twiddles.get(key)
    if t is not None:
        return t
    t = make()
    nbytes = sum(v.nbytes for v in (t if isinstance(t, tuple) else (t,)))
    with _lock:
        while _twiddles and _sizes[0] + nbytes > _TWIDDLE_BYTES:
            old = _twiddles.pop(next(iter(_twiddles)))
            _sizes[0] -= sum(v.nbytes for v in (old if isinstance(old, tuple) else (old,)))
        if key not in _twiddles:
            _twiddles[key] = t
            _sizes[0] += nbytes
    return t


def _twiddle(r, c, dtype, inverse):
    """Flat table of ``w**(k*j)`` laid out like the padded ``r x (c + _PAD)`` buffer."""

    def make():
        n = r * c
        k = np.arange(r, dtype=np.int64)[:, None]
        j = np.arange(c, dtype=np.int64)[None, :]
        # reduce the exponent mod n first so the angle stays in [0, 2 pi)
        ang = ((k * j) % n).astype(np.float64) * ((2.0 if inverse else -2.0) * math.pi / n)
        t = np.empty((r, c + _PAD), dtype)
        t[:, c:] = 1
        t.real[:, :c] = np.cos(ang)
        t.imag[:, :c] = np.sin(ang)
        t = t.reshape(-1)
        t.flags.writeable = False
        return t

    return _cached(("t", r, c, np.dtype(dtype).char, inverse), make)


def c2c_last(x, forward, norm, rc=None):
    """Complex transform of a complex array ``x`` along its last axis (length with a
    ``split``); returns a new C-contiguous array of the same shape and dtype."""
    import scipy.fft as sf
    n = x.shape[-1]
    r, c = rc or split(n)
    batch = x.shape[:-1]
    b = int(np.prod(batch, dtype=np.int64))
    workers = num_workers()
    fn = sf.fft if forward else sf.ifft

    buf = np.empty((b, r, c + _PAD), x.dtype)
    buf[:, :, c:] = 0
    view = buf[:, :, :c]
    view[...] = x.reshape(b, r, c)
    # pass 1: the c columns of every batch entry, each of length r, in place
    res = fn(view, axis=1, norm=norm, overwrite_x=True, workers=workers)
    if not np.may_share_memory(res, buf):        # pragma: no cover - scipy copied anyway
        view[...] = res
    del res
    flat = buf.reshape(b, -1)
    np.multiply(flat, _twiddle(r, c, x.dtype, not forward), out=flat)
    # pass 2: the r rows (length c), read transposed so the output is in natural order
    out = fn(view.transpose(0, 2, 1), axis=1, norm=norm, workers=workers)
    return np.ascontiguousarray(out).reshape(batch + (n,))


# ------------------------------------------------------------------ real transforms
#
# A real signal of even length n = 2m is handled as the complex signal
# z[j] = x[2j] + i x[2j+1] of length m (a free reinterpretation of the memory), whose
# transform Z gives the transforms of the even and odd samples, E and O:
#     E[k] = (Z[k] + conj(Z[m-k])) / 2,   O[k] = (Z[k] - conj(Z[m-k])) / (2i),
# and X[k] = E[k] + w**k O[k] (w = exp(-2 pi i / n)) for k = 0..m. Going back,
#     E[k] = (X[k] + conj(X[m-k])) / 2,   O[k] = (X[k] - conj(X[m-k])) w**-k / 2,
# and Z = E + i O. Both directions are "a * U + b * conj(V)" with per-k weights.

def real_split(n):
    """Whether a real transform of length ``n`` goes through a half-length split one."""
    return n % 2 == 0 and split(n // 2) is not None


def _scale(n, norm, forward):
    """Factor turning an unnormalised length-``n`` transform into the ``norm`` one."""
    if norm == "ortho":
        return 1.0 / math.sqrt(n)
    if (norm == "forward") == forward:
        return 1.0 / n
    return 1.0


def _weights(n, dtype, norm, forward):
    """The pair (a, b) of length m+1 (forward) or m (inverse) weight vectors."""
    m = n // 2

    def make():
        k = np.arange(m + 1 if forward else m, dtype=np.float64)
        ang = k * ((-2.0 if forward else 2.0) * math.pi / n)
        wk = np.cos(ang) + 1j * np.sin(ang)
        wk[0] = 1
        if forward:
            wk[m] = -1                                  # exactly, so bin m comes out real
        if forward:
            s = 0.5 * _scale(n, norm, True)
            a, b = s * (1 - 1j * wk), s * (1 + 1j * wk)
        else:
            # the half-length inverse below is unnormalised: fold in 1/m and the norm
            s = 0.5 * _scale(n, norm, False) * n / m
            a, b = s * (1 + 1j * wk), s * (1 - 1j * wk)
        a, b = a.astype(dtype), b.astype(dtype)
        a.flags.writeable = b.flags.writeable = False
        return a, b

    return _cached(("w", n, np.dtype(dtype).char, norm, forward), make)


def r2c_last(x, norm):
    """Onesided transform (``n // 2 + 1`` bins) of a real float32/float64 array along its
    last axis, whose even length passes ``real_split``."""
    n = x.shape[-1]
    m = n // 2
    cdt = np.complex64 if x.dtype == np.float32 else np.complex128
    z = np.ascontiguousarray(x).view(cdt)                  # (..., m)
    zf = c2c_last(z, True, "backward")                     # unnormalised, length m
    a, b = _weights(n, cdt, norm, True)
    ext = np.empty(x.shape[:-1] + (m + 1,), cdt)
    ext[..., :m] = zf
    ext[..., m] = zf[..., 0]
    rev = np.conj(ext[..., ::-1])                           # conj(Z[m-k]), k = 0..m
    np.multiply(ext, a, out=ext)
    np.multiply(rev, b, out=rev)
    ext += rev
    ext[..., 0].imag = 0                                    # bins 0 and m of a real signal
    ext[..., m].imag = 0
    return ext


def c2r_last(x, n, norm):
    """Real inverse of length ``n`` (even, passing ``real_split``) from a complex array
    whose last axis holds exactly the ``n // 2 + 1`` non-negative-frequency bins."""
    m = n // 2
    cdt = x.dtype
    a, b = _weights(n, cdt, norm, False)
    rev = np.conj(x[..., m:0:-1])                           # conj(X[m-k]), k = 0..m-1
    z = np.multiply(x[..., :m], a)
    np.multiply(rev, b, out=rev)
    z += rev
    # like a direct real inverse, ignore the imaginary parts of bins 0 and m
    z[..., 0] = a[0] * x[..., 0].real + b[0] * x[..., m].real
    out = c2c_last(z, False, "forward")                    # unnormalised inverse
    return out.view(np.float32 if cdt == np.complex64 else np.float64)
