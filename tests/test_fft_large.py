"""Long 1-D transforms, which ember computes by a two-pass split (ember/_kernels/fft_large.py):
values against numpy.fft in float64, for every norm, dtype, resizing, dim and batch."""
import numpy as np
import pytest

import ember
from ember._kernels import fft_large

NORMS = [None, "backward", "ortho", "forward"]
TOL = {np.complex64: 3e-6, np.float32: 3e-6, np.complex128: 1e-12, np.float64: 1e-12}

# 2**16 and 2**17: powers of two; 196608 = 3 * 2**16 and 78125 = 5**7: other composites;
# 65537 is prime and 2 * 65537 only splits unevenly, so both stay on the direct path
SPLIT_LENGTHS = [1 << 16, 1 << 17, 3 << 16, 5 ** 7]
DIRECT_LENGTHS = [65537, 2 * 65537]


def _rng():
    return np.random.default_rng(1234)


def _data(shape, dtype, rng=None):
    rng = rng or _rng()
    x = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


def _close(got, ref, dtype):
    got = np.asarray(got)
    assert got.shape == ref.shape
    scale = max(np.abs(ref).max(), 1e-300)
    err = np.abs(got.astype(np.complex128) - ref).max() / scale
    assert err < TOL[dtype], err


def _np_norm(norm):
    return norm or "backward"


def test_split_choice():
    assert fft_large.split(1 << 20) == (1024, 1024)
    assert fft_large.split(1 << 17) == (256, 512)
    for n in SPLIT_LENGTHS:
        r, c = fft_large.split(n)
        assert r * c == n and r <= c
    for n in DIRECT_LENGTHS + [1 << 10, 4096]:
        assert fft_large.split(n) is None
    assert fft_large.real_split(1 << 17) and not fft_large.real_split((1 << 17) + 1)


@pytest.mark.parametrize("n", SPLIT_LENGTHS + DIRECT_LENGTHS)
@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
@pytest.mark.parametrize("norm", NORMS)
def test_fft_ifft_complex(n, dtype, norm):
    x = _data(n, dtype)
    ref64 = x.astype(np.complex128)
    r = ember.fft.fft(ember.from_numpy(x), norm=norm)
    assert r.dtype == ember.from_numpy(x).dtype
    _close(r.numpy(), np.fft.fft(ref64, norm=_np_norm(norm)), dtype)
    r = ember.fft.ifft(ember.from_numpy(x), norm=norm)
    _close(r.numpy(), np.fft.ifft(ref64, norm=_np_norm(norm)), dtype)


@pytest.mark.parametrize("n", [1 << 17, 3 << 16, 2 * 65537])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("norm", NORMS)
def test_real_variants(n, dtype, norm):
    rng = _rng()
    x = _data(n, dtype, rng)
    x64 = x.astype(np.float64)
    nn = _np_norm(norm)
    ex = ember.from_numpy(x)
    cdt = np.complex64 if dtype == np.float32 else np.complex128
    r = ember.fft.rfft(ex, norm=norm)
    assert r.numpy().dtype == cdt
    _close(r.numpy(), np.fft.rfft(x64, norm=nn), dtype)
    half = r.numpy()
    assert half[0].imag == 0 and half[-1].imag == 0
    _close(ember.fft.fft(ex, norm=norm).numpy(), np.fft.fft(x64, norm=nn), dtype)
    _close(ember.fft.ifft(ex, norm=norm).numpy(), np.fft.ifft(x64, norm=nn), dtype)
    _close(ember.fft.ihfft(ex, norm=norm).numpy(), np.fft.ihfft(x64, norm=nn), dtype)
    # Hermitian-halved inputs with arbitrary (ignored) imaginary parts at bins 0 and n/2
    h = _data(n // 2 + 1, cdt, rng)
    h64 = h.astype(np.complex128)
    eh = ember.from_numpy(h)
    got = ember.fft.irfft(eh, n=n, norm=norm).numpy()
    assert got.dtype == dtype
    _close(got, np.fft.irfft(h64, n=n, norm=nn), dtype)
    _close(ember.fft.hfft(eh, n=n, norm=norm).numpy(), np.fft.hfft(h64, n=n, norm=nn), dtype)


@pytest.mark.parametrize("dtype", [np.complex64, np.float64])
@pytest.mark.parametrize("m", [100000, 150000])
def test_n_padding_and_truncation(dtype, m):
    n = 1 << 17
    x = _data(m, dtype)
    x64 = x.astype(np.complex128 if np.dtype(dtype).kind == "c" else np.float64)
    ex = ember.from_numpy(x)
    for norm in ("backward", "ortho"):
        _close(ember.fft.fft(ex, n=n, norm=norm).numpy(), np.fft.fft(x64, n=n, norm=norm),
               dtype)
        _close(ember.fft.ifft(ex, n=n, norm=norm).numpy(), np.fft.ifft(x64, n=n, norm=norm),
               dtype)
        if np.dtype(dtype).kind == "f":
            _close(ember.fft.rfft(ex, n=n, norm=norm).numpy(),
                   np.fft.rfft(x64, n=n, norm=norm), dtype)
    # irfft: the input half-spectrum is padded/truncated to n//2 + 1 bins
    h = _data(m // 2, np.complex128)
    _close(ember.fft.irfft(ember.from_numpy(h), n=n).numpy(), np.fft.irfft(h, n=n),
           np.float64)


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128, np.float32])
def test_batched_and_non_last_dims(dtype):
    n = 1 << 16
    rng = _rng()
    ref_dt = np.complex128 if np.dtype(dtype).kind == "c" else np.float64
    # batched along the last dim
    x = _data((3, n), dtype, rng)
    r = ember.fft.fft(ember.from_numpy(x), norm="ortho").numpy()
    _close(r, np.fft.fft(x.astype(ref_dt), axis=-1, norm="ortho"), dtype)
    # transform over dim 0 of an (n, 3) array and dim 1 of a (2, n, 2) array
    y = _data((n, 3), dtype, rng)
    r = ember.fft.ifft(ember.from_numpy(y), dim=0).numpy()
    assert r.flags.c_contiguous
    _close(r, np.fft.ifft(y.astype(ref_dt), axis=0), dtype)
    w = _data((2, n, 2), dtype, rng)
    r = ember.fft.fft(ember.from_numpy(w), dim=1, norm="forward").numpy()
    _close(r, np.fft.fft(w.astype(ref_dt), axis=1, norm="forward"), dtype)
    if np.dtype(dtype).kind == "f":
        r = ember.fft.rfft(ember.from_numpy(w), dim=1).numpy()
        _close(r, np.fft.rfft(w.astype(ref_dt), axis=1), dtype)
        h = np.fft.rfft(w.astype(np.float64), axis=1).astype(np.complex64)
        r = ember.fft.irfft(ember.from_numpy(h), n=n, dim=1).numpy()
        _close(r, np.fft.irfft(h.astype(np.complex128), n=n, axis=1), np.float32)
    # a non-contiguous (transposed) input
    t = _data((n, 2), dtype, rng).T
    r = ember.fft.fft(ember.from_numpy(np.ascontiguousarray(t)).t().contiguous().t()).numpy()
    _close(r, np.fft.fft(t.astype(ref_dt), axis=-1), dtype)


def test_gradient_complex():
    n = 1 << 16
    rng = _rng()
    z = _data(n, np.complex128, rng)
    a, b = rng.standard_normal(n), rng.standard_normal(n)
    ez = ember.from_numpy(z).requires_grad_(True)
    y = ember.fft.fft(ez)
    loss = (y.real * ember.from_numpy(a)).sum() + (y.imag * ember.from_numpy(b)).sum()
    loss.backward()
    # d loss / d Re z + i d loss / d Im z = sum_k (a_k + i b_k) exp(+2 pi i k t / n)
    _close(ez.grad.numpy(), n * np.fft.ifft(a + 1j * b), np.complex128)


def test_gradient_real():
    n = 1 << 17
    rng = _rng()
    x = rng.standard_normal(n)
    h = n // 2 + 1
    a, b = rng.standard_normal(h), rng.standard_normal(h)
    ex = ember.from_numpy(x).requires_grad_(True)
    y = ember.fft.rfft(ex)
    loss = (y.real * ember.from_numpy(a)).sum() + (y.imag * ember.from_numpy(b)).sum()
    loss.backward()
    c = np.zeros(n, np.complex128)
    c[:h] = a + 1j * b
    _close(ex.grad.numpy(), np.real(n * np.fft.ifft(c)), np.float64)
