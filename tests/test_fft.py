"""torch.fft parity: values, dtypes, gradients (vs torch), gradcheck, errors, printing."""
from __future__ import annotations

import time

import numpy as np
import pytest

import ember
import ember.fft
from helpers import torch

pytestmark = pytest.mark.skipif(torch is None, reason="needs the torch oracle")

RNG = np.random.default_rng(0)


def _c(shape, dt=np.complex128):
    return (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(dt)


def _r(shape, dt=np.float64):
    return RNG.standard_normal(shape).astype(dt)


# (name, input maker, kwargs)
CASES = []
for norm in (None, "backward", "ortho", "forward"):
    CASES += [
        ("fft", _c((5,)), dict(norm=norm)),
        ("fft", _r((6,)), dict(norm=norm)),
        ("fft", _c((3, 6)), dict(n=4, dim=0, norm=norm)),
        ("fft", _r((3, 5)), dict(n=8, norm=norm)),
        ("ifft", _c((3, 5)), dict(n=7, norm=norm)),
        ("ifft", _r((6,)), dict(norm=norm)),
        ("fft2", _c((3, 4, 5)), dict(norm=norm)),
        ("ifft2", _c((4, 5)), dict(s=(3, 6), norm=norm)),
        ("fftn", _c((3, 4, 5)), dict(norm=norm)),
        ("fftn", _r((3, 4, 5)), dict(dim=(0, 2), norm=norm)),
        ("fftn", _r((3, 4, 5)), dict(s=(6, -1), norm=norm)),
        ("ifftn", _c((3, 4, 5)), dict(s=(2, 3), dim=(2, 0), norm=norm)),
        ("rfft", _r((7,)), dict(norm=norm)),
        ("rfft", _r((3, 8)), dict(n=5, dim=1, norm=norm)),
        ("rfft", _r((6, 3)), dict(n=10, dim=0, norm=norm)),
        ("irfft", _c((5,)), dict(norm=norm)),
        ("irfft", _c((3, 5)), dict(n=9, norm=norm)),
        ("irfft", _c((3, 5)), dict(n=4, norm=norm)),
        ("irfft", _c((4, 3)), dict(n=7, dim=0, norm=norm)),
        ("rfft2", _r((3, 4, 6)), dict(norm=norm)),
        ("irfft2", _c((3, 4, 4)), dict(norm=norm)),
        ("rfftn", _r((3, 4, 5)), dict(s=(4, 6), norm=norm)),
        ("irfftn", _c((3, 4, 5)), dict(s=(3, 7), dim=(0, 2), norm=norm)),
        ("irfftn", _c((2, 3, 4)), dict(norm=norm)),
        ("hfft", _c((5,)), dict(norm=norm)),
        ("hfft", _c((3, 4)), dict(n=7, norm=norm)),
        ("ihfft", _r((7,)), dict(norm=norm)),
        ("ihfft", _r((3, 8)), dict(n=6, dim=1, norm=norm)),
        ("hfft2", _c((3, 4, 4)), dict(norm=norm)),
        ("hfftn", _c((3, 4, 5)), dict(s=(4, 7), norm=norm)),
        ("ihfft2", _r((3, 4, 6)), dict(norm=norm)),
        ("ihfftn", _r((3, 4, 5)), dict(dim=(0, 2), norm=norm)),
    ]
IDS = [f"{n}-{i}" for i, (n, _, _) in enumerate(CASES)]


@pytest.mark.parametrize("name,x,kw", CASES, ids=IDS)
def test_forward_and_grad_match_torch(name, x, kw):
    e = ember.tensor(x, requires_grad=True)
    t = torch.tensor(x, requires_grad=True)
    re = getattr(ember.fft, name)(e, **kw)
    rt = getattr(torch.fft, name)(t, **kw)
    assert str(re.dtype) == str(rt.dtype)
    assert tuple(re.shape) == tuple(rt.shape)
    np.testing.assert_allclose(re.detach().numpy(), rt.detach().resolve_conj().numpy(), rtol=1e-10,
                               atol=1e-10)
    # a real loss that weights every output entry differently (catches halving mistakes)
    w = _c(tuple(rt.shape)) if rt.is_complex() else _r(tuple(rt.shape))
    le = (re * ember.tensor(w)).real.sum() if re.is_complex() else (re * ember.tensor(w)).sum()
    lt = (rt * torch.tensor(w)).real.sum() if rt.is_complex() else (rt * torch.tensor(w)).sum()
    le.backward()
    lt.backward()
    np.testing.assert_allclose(e.grad.numpy(), t.grad.resolve_conj().numpy(), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("name,x,kw", CASES[::3], ids=IDS[::3])
def test_gradcheck(name, x, kw):
    e = ember.tensor(x, requires_grad=True)
    fn = getattr(ember.fft, name)
    assert ember.autograd.gradcheck(lambda a: fn(a, **kw), (e,))


@pytest.mark.parametrize("name", ["fft", "rfft", "irfft", "hfft", "ihfft"])
def test_gradgradcheck(name):
    x = _c((5,)) if name in ("fft", "irfft", "hfft") else _r((5,))
    e = ember.tensor(x, requires_grad=True)
    fn = getattr(ember.fft, name)
    assert ember.autograd.gradgradcheck(lambda a: fn(a, norm="ortho"), (e,))


@pytest.mark.parametrize("dt,expected", [("float32", "complex64"), ("float64", "complex128"),
                                         ("int64", "complex64"), ("bool", "complex64"),
                                         ("complex64", "complex64")])
def test_dtypes(dt, expected):
    x = np.arange(4).astype(dt)
    assert str(ember.fft.fft(ember.tensor(x)).dtype) == "ember." + expected or \
        ember.fft.fft(ember.tensor(x)).dtype == getattr(ember, expected)
    assert ember.fft.fft(ember.tensor(x)).dtype == getattr(ember, expected)
    if dt != "complex64":
        r = ember.fft.rfft(ember.tensor(x))
        assert str(r.dtype) == str(torch.fft.rfft(torch.tensor(x)).dtype).replace("torch.",
                                                                                   "torch.")
        assert ember.fft.irfft(r).dtype == getattr(ember, "float32" if expected == "complex64"
                                                   else "float64")


def test_float32_precision_kept():
    x = _r((64,), np.float32)
    r = ember.fft.fft(ember.tensor(x))
    np.testing.assert_allclose(r.numpy(), torch.fft.fft(torch.tensor(x)).numpy(), rtol=1e-5,
                               atol=1e-5)


def test_example_printing():
    assert str(ember.fft.fft(ember.arange(4))) == \
        "tensor([ 6.+0.j, -2.+2.j, -2.+0.j, -2.-2.j])"
    assert str(ember.fft.fft(ember.arange(4))) == str(torch.fft.fft(torch.arange(4)))


def test_matches_numpy():
    x = _c((4, 6))
    np.testing.assert_allclose(ember.fft.fftn(ember.tensor(x)).numpy(), np.fft.fftn(x),
                               atol=1e-12)
    np.testing.assert_allclose(ember.fft.rfft(ember.tensor(x.real)).numpy(),
                               np.fft.rfft(x.real), atol=1e-12)
    np.testing.assert_allclose(ember.fft.hfft(ember.tensor(x[0]), n=9).numpy(),
                               np.fft.hfft(x[0], n=9), atol=1e-12)


@pytest.mark.parametrize("n,d", [(1, 1.0), (5, 1.0), (8, 0.1), (0, 1.0)])
def test_freqs(n, d):
    for f in ("fftfreq", "rfftfreq"):
        e, t = getattr(ember.fft, f)(n, d), getattr(torch.fft, f)(n, d)
        assert str(e.dtype).split(".")[1] == str(t.dtype).split(".")[1]
        np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-6)
    e = ember.fft.fftfreq(n, d, dtype=ember.float64)
    assert e.dtype == ember.float64


@pytest.mark.parametrize("shape,dim", [((5,), None), ((4, 5), None), ((4, 5), 1),
                                        ((4, 5, 3), (0, 2)), ((4, 5), -1)])
def test_shifts(shape, dim):
    x = _r(shape)
    for f in ("fftshift", "ifftshift"):
        np.testing.assert_array_equal(getattr(ember.fft, f)(ember.tensor(x), dim).numpy(),
                                      getattr(torch.fft, f)(torch.tensor(x), dim).numpy())
    e = ember.tensor(x, requires_grad=True)
    assert ember.autograd.gradcheck(lambda a: ember.fft.fftshift(a, dim), (e,))


def test_grad_fn_names():
    e = ember.randn(4, requires_grad=True)
    assert type(ember.fft.fft(e).grad_fn).__name__ == "FftR2CBackward0"
    assert type(ember.fft.rfft(e).grad_fn).__name__ == "FftR2CBackward0"
    c = ember.randn(4, dtype=ember.complex64, requires_grad=True)
    assert type(ember.fft.fft(c).grad_fn).__name__ == "FftC2CBackward0"
    assert type(ember.fft.irfft(c).grad_fn).__name__ == "FftC2RBackward0"


ERRORS = [
    (lambda m, x: m.fft.fft(x, n=0), RuntimeError),
    (lambda m, x: m.fft.fft(x, norm="foo"), RuntimeError),
    (lambda m, x: m.fft.rfft(x.to(m.complex64)), RuntimeError),
    (lambda m, x: m.fft.ihfft(x.to(m.complex64)), RuntimeError),
    (lambda m, x: m.fft.fft(x, dim=3), IndexError),
    (lambda m, x: m.fft.fftn(x, s=(2, 2)), RuntimeError),
    (lambda m, x: m.fft.fftn(x, s=(2,), dim=(0, 1)), (RuntimeError, IndexError)),
    (lambda m, x: m.fft.fftn(x.reshape(2, 2), dim=(0, 0)), RuntimeError),
    (lambda m, x: m.fft.irfft(x[:1].to(m.complex64)), RuntimeError),
]


@pytest.mark.parametrize("i", range(len(ERRORS)))
def test_errors_match_torch(i):
    f, exc = ERRORS[i]
    with pytest.raises(exc) as te:
        f(torch, torch.randn(4))
    with pytest.raises(exc) as ee:
        f(ember, ember.randn(4))
    assert type(ee.value) is type(te.value)
    assert str(ee.value) == str(te.value)


def test_out():
    x = ember.tensor(_c((6,)))
    out = ember.empty(0, dtype=ember.complex128)
    r = ember.fft.fft(x, out=out)
    assert r is out
    np.testing.assert_allclose(out.numpy(), np.fft.fft(x.numpy()))


def test_timing_2_20_complex64(capsys):
    x = _c((2 ** 20,), np.complex64)
    e, t = ember.tensor(x), torch.tensor(x)
    ember.fft.fft(e), torch.fft.fft(t)

    def best(f):
        ts = []
        for _ in range(5):
            t0 = time.perf_counter()
            f()
            ts.append(time.perf_counter() - t0)
        return min(ts)
    te, tt = best(lambda: ember.fft.fft(e)), best(lambda: torch.fft.fft(t))
    with capsys.disabled():
        print(f"\nfft 2^20 complex64: ember {te * 1e3:.2f} ms, torch {tt * 1e3:.2f} ms")
    np.testing.assert_allclose(ember.fft.fft(e).numpy(), torch.fft.fft(t).numpy(), rtol=1e-3,
                               atol=1e-1)


@pytest.mark.parametrize("name", ["hann_window", "hamming_window", "blackman_window",
                                  "bartlett_window", "kaiser_window"])
@pytest.mark.parametrize("n,periodic", [(0, True), (1, True), (7, True), (8, False)])
def test_windows(name, n, periodic):
    e = getattr(ember, name)(n, periodic)
    t = getattr(torch, name)(n, periodic)
    assert e.dtype == ember.float32
    np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-5, atol=1e-6)
    e = getattr(ember, name)(n, periodic, dtype=ember.float64)
    np.testing.assert_allclose(e.numpy(), getattr(torch, name)(n, periodic,
                                                               dtype=torch.float64).numpy(),
                               rtol=1e-6, atol=1e-6)


def test_window_errors():
    with pytest.raises(RuntimeError, match="requires non-negative window_length"):
        ember.hann_window(-1)
    with pytest.raises(RuntimeError, match="expects floating point dtypes"):
        ember.hann_window(4, dtype=ember.int64)


@pytest.mark.parametrize("kw", [dict(), dict(hop_length=5, win_length=12, normalized=True),
                                dict(center=False, hop_length=4),
                                dict(pad_mode="constant", onesided=False)])
def test_stft_istft_match_torch(kw):
    x = _r((2, 100))
    wl = kw.get("win_length", 16)
    e = ember.stft(ember.tensor(x), 16, window=ember.hann_window(wl, dtype=ember.float64),
                   return_complex=True, **kw)
    t = torch.stft(torch.tensor(x), 16, window=torch.hann_window(wl, dtype=torch.float64),
                   return_complex=True, **kw)
    assert tuple(e.shape) == tuple(t.shape)
    np.testing.assert_allclose(e.numpy(), t.numpy(), atol=1e-12)
    ikw = {k: v for k, v in kw.items() if k != "pad_mode"}
    if kw.get("center", True):
        ie = ember.istft(e, 16, window=ember.hann_window(wl, dtype=ember.float64), length=100,
                         **ikw)
        it = torch.istft(t, 16, window=torch.hann_window(wl, dtype=torch.float64), length=100,
                         **ikw)
        np.testing.assert_allclose(ie.numpy(), it.numpy(), atol=1e-12)
        np.testing.assert_allclose(ie.numpy(), x, atol=1e-12)
    xe = ember.tensor(x[0], requires_grad=True)
    assert ember.autograd.gradcheck(
        lambda a: a.stft(16, window=ember.hann_window(wl, dtype=ember.float64),
                         return_complex=True, **kw), (xe,))


def test_stft_requires_return_complex_and_real_view():
    x = ember.randn(64)
    with pytest.raises(RuntimeError, match="requires the return_complex parameter"):
        ember.stft(x, 16)
    r = ember.stft(x, 16, window=ember.hann_window(16), return_complex=False)
    t = torch.stft(torch.tensor(x.numpy()), 16, window=torch.hann_window(16),
                   return_complex=False)
    assert tuple(r.shape) == tuple(t.shape)
    np.testing.assert_allclose(r.numpy(), t.numpy(), atol=1e-5)


def test_signal_windows():
    for n in ("hann", "hamming", "blackman", "bartlett", "kaiser", "cosine", "gaussian",
              "nuttall", "general_hamming", "exponential"):
        np.testing.assert_allclose(getattr(ember.signal.windows, n)(7).numpy(),
                                   getattr(torch.signal.windows, n)(7).numpy(), atol=1e-6)
        np.testing.assert_allclose(getattr(ember.signal.windows, n)(6, sym=False).numpy(),
                                   getattr(torch.signal.windows, n)(6, sym=False).numpy(),
                                   atol=1e-6)
