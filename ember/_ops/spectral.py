"""Window functions and the short-time Fourier transform (``ember.stft`` / ``istft``).

Windows are computed with torch's formulas: the cosine-sum ones in the requested float32 /
float64 (as torch rounds them), the others in float64 and cast.
``stft``/``istft`` are composites of ember ops (pad, unfold, fft, fold), so they are
differentiable through their parts.
"""
from __future__ import annotations

import math
import warnings

import numpy as np

from ember import _dtype
from ember._ops.registry import public


def _window(name, n, periodic, dtype, requires_grad, fn):
    from ember._creation import tensor
    dt = dtype or _dtype.get_default_dtype()
    if not (dt.is_floating_point or dt.is_complex):
        raise RuntimeError(f"{name} expects floating point dtypes, got: {dt}")
    if n < 0:
        raise RuntimeError(f"{name} requires non-negative window_length, got window_length={n}")
    if n == 0:
        w = np.zeros(0)
    elif n == 1:
        w = np.ones(1)
    else:
        m = n + 1 if periodic else n
        if getattr(fn, "in_dtype", False) and dt in (_dtype.float32, _dtype.float64):
            w = fn(m, dt.np)[:n]
        else:
            w = fn(np.arange(m, dtype=np.float64), m)[:n]
    r = tensor(w, dtype=dt)
    if requires_grad:
        r.requires_grad_(True)
    return r


def _cos_window(coeffs):
    """A cosine-sum window, rounded step by step in float32/float64 as torch's kernel is
    (float64 otherwise): e.g. blackman(3)[0] is 0.08 - 0.5 + 0.42 = -2.98e-08 in float32."""
    def fn(m, dt):
        dt = dt.type
        if len(coeffs) == 2:                         # hann / hamming: a - b cos(2 pi k/(m-1))
            a, b = coeffs
            k = np.arange(m, dtype=dt) * dt(2 * math.pi / (m - 1))
            return _cos_in(k) * dt(-b) + dt(a)
        a, b, c = coeffs                             # blackman
        k = np.arange(m, dtype=dt) * dt(math.pi / (m - 1))
        return _cos_in(k * dt(4)) * dt(c) - _cos_in(k * dt(2)) * dt(b) + dt(a)
    fn.in_dtype = True
    return fn


def _cos_in(x):
    """cos rounded once to ``x``'s dtype (through float64, not NumPy's float32 SIMD cos)."""
    return np.cos(x.astype(np.float64)).astype(x.dtype)


# torch's windows are overloads that each take a prefix of (periodic, alpha/beta, ...)
# positionally or by keyword: ``kaiser_window(6, beta=8.0)`` without ``periodic`` (or a
# Hamming ``beta`` without ``alpha``, or an argument too many) matches none and is torch's
# overload TypeError listing them (found by experiment).
_UNSET = object()
_WINDOW_TAIL = ("*, torch.dtype dtype = None, torch.layout layout = None, torch.device device "
                "= None, bool pin_memory = False, bool requires_grad = False)")


def _window_args(fname, window_length, optional, more, extra):
    """The values of ``optional`` [(name, type, value or _UNSET, default)] when they are a
    prefix of the window's overloads, else torch's overload TypeError. ``more``: extra
    positional values; ``extra``: the call's other keyword values by name."""
    given = [v is not _UNSET for _, _, v, _ in optional]
    if not more and given == sorted(given, reverse=True):
        return [d if v is _UNSET else v for _, _, v, d in optional]
    import sys
    from ember._dispatch import _call_keywords
    from ember._ops.parser_errors import overloaded_text
    _, kw_names = _call_keywords(sys._getframe(2))
    kw_names = kw_names or ()
    pos = [window_length] + [v for n, _, v, _ in optional if v is not _UNSET
                             and n not in kw_names] + list(more)
    values = dict(extra, **{n: v for n, _, v, _ in optional})
    kw = {n: values[n] for n in kw_names if n in values}
    sigs, head = [], "(int window_length, "
    sigs.append(head + _WINDOW_TAIL)
    for n, t, _, _ in optional:
        head += f"{t} {n}, "
        sigs.append(head + _WINDOW_TAIL)
    raise TypeError(overloaded_text(fname, sigs, pos, kw))


def _extra(dtype, layout, device, pin_memory, requires_grad):
    return dict(dtype=dtype, layout=layout, device=device, pin_memory=pin_memory,
                requires_grad=requires_grad)


@public()
def hann_window(window_length, periodic=_UNSET, *_more, dtype=None, layout=None, device=None,
                pin_memory=False, requires_grad=False):
    """Hann window: ``0.5 - 0.5 cos(2 pi n / (N - 1))``."""
    periodic, = _window_args("hann_window", window_length, [("periodic", "bool", periodic, True)],
                             _more, _extra(dtype, layout, device, pin_memory, requires_grad))
    return _window("hann_window", window_length, periodic, dtype, requires_grad,
                   _cos_window((0.5, 0.5)))


@public()
def hamming_window(window_length, periodic=_UNSET, alpha=_UNSET, beta=_UNSET, *_more,
                   dtype=None, layout=None, device=None, pin_memory=False,
                   requires_grad=False):
    """Hamming window: ``alpha - beta cos(2 pi n / (N - 1))``."""
    periodic, alpha, beta = _window_args(
        "hamming_window", window_length,
        [("periodic", "bool", periodic, True), ("alpha", "float", alpha, 0.54),
         ("beta", "float", beta, 0.46)], _more,
        _extra(dtype, layout, device, pin_memory, requires_grad))
    return _window("hamming_window", window_length, periodic, dtype, requires_grad,
                   _cos_window((alpha, beta)))


@public()
def blackman_window(window_length, periodic=_UNSET, *_more, dtype=None, layout=None,
                    device=None, pin_memory=False, requires_grad=False):
    """Blackman window: ``0.42 - 0.5 cos(2 pi n/(N-1)) + 0.08 cos(4 pi n/(N-1))``."""
    periodic, = _window_args("blackman_window", window_length,
                             [("periodic", "bool", periodic, True)], _more,
                             _extra(dtype, layout, device, pin_memory, requires_grad))
    return _window("blackman_window", window_length, periodic, dtype, requires_grad,
                   _cos_window((0.42, 0.5, 0.08)))


@public()
def bartlett_window(window_length, periodic=_UNSET, *_more, dtype=None, layout=None,
                    device=None, pin_memory=False, requires_grad=False):
    """Bartlett (triangular) window: ``1 - |2n / (N - 1) - 1|``."""
    periodic, = _window_args("bartlett_window", window_length,
                             [("periodic", "bool", periodic, True)], _more,
                             _extra(dtype, layout, device, pin_memory, requires_grad))
    return _window("bartlett_window", window_length, periodic, dtype, requires_grad,
                   lambda k, m: 1 - np.abs(2 * k / (m - 1) - 1))


@public()
def kaiser_window(window_length, periodic=_UNSET, beta=_UNSET, *_more, dtype=None, layout=None,
                  device=None, pin_memory=False, requires_grad=False):
    """Kaiser window: ``I0(beta sqrt(1 - (2n/(N-1) - 1)^2)) / I0(beta)``."""
    periodic, beta = _window_args(
        "kaiser_window", window_length,
        [("periodic", "bool", periodic, True), ("beta", "float", beta, 12.0)], _more,
        _extra(dtype, layout, device, pin_memory, requires_grad))
    return _window("kaiser_window", window_length, periodic, dtype, requires_grad,
                   lambda k, m: np.i0(beta * np.sqrt(np.clip(1 - (2 * k / (m - 1) - 1) ** 2,
                                                             0, None))) / np.i0(beta))


_NO_WINDOW = {
    "stft": "A window was not provided. A rectangular window will be applied,which is known to "
            "cause spectral leakage. Other windows such as torch.hann_window or "
            "torch.hamming_window are recommended to reduce spectral leakage.",
    "istft": "A window was not provided. A rectangular window will be applied.Please provide "
             "the same window used by stft to make the inversion lossless."}


def _warn_no_window(name):
    """torch's once-a-process warning of a missing window (before any other check)."""
    from ember._runtime_flags import user_stacklevel, warn_once
    warn_once(f"{name}_window", _NO_WINDOW[name] + "To suppress this warning and use a "
              "rectangular window, explicitly set `window=torch.ones(n_fft, device=<device>)`.",
              stacklevel=user_stacklevel() + 1)


def _padded_window(window, win_length, n_fft, like):
    import ember
    if window is None:
        window = ember.ones(win_length, dtype=like.dtype.to_real())
    if window.ndim != 1 or window.shape[0] != win_length:
        raise RuntimeError("stft: expected a 1D window tensor of size equal to win_length="
                           f"{win_length}, but got window with size {list(window.shape)}")
    if win_length < n_fft:
        left = (n_fft - win_length) // 2
        window = ember.nn.functional.pad(window, (left, n_fft - win_length - left))
    return window


@public("stft", method=True)
def stft(input, n_fft, hop_length=None, win_length=None, window=None, center=True,
         pad_mode="reflect", normalized=False, onesided=None, return_complex=None):
    """Short-time Fourier transform: ``(*, n_fft // 2 + 1, n_frames)`` complex frames."""
    import ember
    from ember import fft as F
    if window is None:
        _warn_no_window("stft")
    complex_in = input.is_complex() or (window is not None and window.is_complex())
    if return_complex is None:
        if not complex_in:
            raise RuntimeError("stft requires the return_complex parameter be given for real "
                               "inputs, and will further require that return_complex=True in a "
                               "future PyTorch release.")
        return_complex = True
    hop = n_fft // 4 if hop_length is None else hop_length
    win = n_fft if win_length is None else win_length
    if input.ndim not in (1, 2):
        raise RuntimeError(f"stft: expected a 1D or 2D tensor, but got {input.ndim}D tensor")
    x = input.unsqueeze(0) if input.ndim == 1 else input
    if center:
        p = n_fft // 2
        x = ember.nn.functional.pad(x.unsqueeze(1), (p, p), mode=pad_mode).squeeze(1)
    length = x.shape[-1]
    if n_fft <= 0 or n_fft > length:
        raise RuntimeError(f"stft: expected 0 < n_fft <= {length}, but got n_fft={n_fft}")
    if hop <= 0:
        raise RuntimeError(f"stft: expected hop_length > 0, but got hop_length={hop}")
    if win <= 0 or win > n_fft:
        raise RuntimeError(f"stft: expected 0 < win_length <= n_fft, but got win_length={win}")
    w = _padded_window(window, win, n_fft, x)
    frames = x.unfold(-1, n_fft, hop) * w                     # (B, n_frames, n_fft)
    onesided = (not complex_in) if onesided is None else onesided
    norm = "ortho" if normalized else "backward"
    if onesided:
        if complex_in:
            raise RuntimeError("Cannot have onesided output if window or input is complex")
        spec = F.rfft(frames, dim=-1, norm=norm)
    else:
        spec = F.fft(frames, dim=-1, norm=norm)
    spec = spec.transpose(-1, -2)
    if input.ndim == 1:
        spec = spec.squeeze(0)
    if not return_complex:
        from ember._ops.complex import view_as_real
        return view_as_real(spec.contiguous())
    return spec


@public("istft", method=True)
def istft(input, n_fft, hop_length=None, win_length=None, window=None, center=True,
          normalized=False, onesided=None, length=None, return_complex=False):
    """Inverse of stft: overlap-add of the inverse-transformed, windowed frames."""
    import ember
    from ember import fft as F
    hop = n_fft // 4 if hop_length is None else hop_length
    win = n_fft if win_length is None else win_length
    if window is None:
        _warn_no_window("istft")
    if not input.is_complex():
        raise RuntimeError("istft requires a complex-valued input tensor matching the output "
                           "from stft with return_complex=True.")
    if input.ndim not in (2, 3):
        raise RuntimeError(f"istft: expected a tensor with 2 or 3 dimensions of complex "
                           f"dtype, but got {input.ndim}")
    x = input.unsqueeze(0) if input.ndim == 2 else input          # (B, freq, frames)
    n_frames = x.shape[-1]
    if onesided is None:
        onesided = x.shape[-2] != n_fft
    if window is not None and (window.ndim != 1 or window.shape[0] != win):
        raise RuntimeError("Invalid window shape. window has to be 1D and length of "
                           "`win_length`")
    if window is None:
        window = ember.ones(win, dtype=x.dtype.to_real())
    w = _padded_window(window, win, n_fft, x)
    norm = "ortho" if normalized else "backward"
    xt = x.transpose(-1, -2)                                     # (B, frames, freq)
    if not onesided and not return_complex:
        # torch: a real output assumes a Hermitian spectrum; only the first n_fft//2+1 bins
        # are used (irfft), the rest of a two-sided input is ignored
        xt = xt[..., :n_fft // 2 + 1]
        onesided = True
    if onesided:
        if return_complex:
            raise RuntimeError("cannot have onesided output if window or input is complex")
        frames = F.irfft(xt, n=n_fft, dim=-1, norm=norm)
    else:
        frames = F.ifft(xt, n=n_fft, dim=-1, norm=norm)
        if not return_complex:
            frames = frames.real
    frames = frames * w                                          # (B, frames, n_fft)
    expected = n_fft + hop * (n_frames - 1)
    fold = ember.nn.functional.fold
    cols = frames.transpose(-1, -2)                              # (B, n_fft, frames)
    if cols.is_complex():
        y = ember.complex(fold(cols.real, (1, expected), (1, n_fft), stride=(1, hop)),
                          fold(cols.imag, (1, expected), (1, n_fft), stride=(1, hop)))
    else:
        y = fold(cols, (1, expected), (1, n_fft), stride=(1, hop))
    y = y.reshape(x.shape[0], expected)
    wsq = (w * w).reshape(1, n_fft, 1).expand(1, n_fft, n_frames)
    env = fold(wsq, (1, expected), (1, n_fft), stride=(1, hop)).reshape(expected)
    start = n_fft // 2 if center else 0
    if length is not None:
        end = start + length
    else:
        end = expected - n_fft // 2 if center else expected
    y = y[:, start:min(end, expected)]
    env = env[start:min(end, expected)]
    if bool((env.abs() < 1e-11).any()):
        raise RuntimeError("istft(...) window overlap add min: 1")
    y = y / env
    if end > expected:
        y = ember.nn.functional.pad(y, (0, end - expected))
    if input.ndim == 2:
        y = y.squeeze(0)
    return y
