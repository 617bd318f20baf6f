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


def _options_text(name, dtype, layout, pin_memory):
    """torch's TensorOptions as its window functions print them (``(default)`` marks what
    the call left out; hann_window's default dtype is marked, the others' not)."""
    from ember._kernels.shape import _C_NAMES
    dt = dtype or _dtype.get_default_dtype()
    dt_text = _C_NAMES[str(dt).replace("torch.", "")]
    if dtype is None and name == "hann_window":
        dt_text += " (default)"
    lay = ("Strided (default)" if layout is None else
           "Strided" if str(layout) == "torch.strided" else "Sparse")
    return (f"TensorOptions(dtype={dt_text}, device=cpu, layout={lay}, requires_grad=false "
            f"(default), pinned_memory={'true' if pin_memory else 'false'}, "
            "memory_format=(nullopt))")


def _window(name, n, periodic, dtype, requires_grad, fn, layout=None, pin_memory=False):
    from ember._creation import tensor
    dt = dtype or _dtype.get_default_dtype()
    if layout is not None and str(layout) == "torch.sparse_coo":
        raise RuntimeError(f"{name} is not implemented for sparse types, got: "
                           + _options_text(name, dtype, layout, pin_memory))
    if not (dt.is_floating_point or dt.is_complex):
        raise RuntimeError(f"{name} expects floating point dtypes, got: "
                           + _options_text(name, dtype, layout, pin_memory))
    if n < 0:
        raise RuntimeError(f"{name} requires non-negative window_length, got window_length={n}")
    if dt.is_complex and n > 1:
        raise NotImplementedError(f'"arange_cpu" not implemented for '
                                  f"'{_dtype.scalar_type_name(dt.np)}'")
    if n == 0:
        w = np.zeros(0)
    elif n == 1:
        w = np.ones(1)
    else:
        m = n + 1 if periodic else n
        if getattr(fn, "in_dtype", False) and dt in (_dtype.float32, _dtype.float64):
            w = fn(m, dt.np)[:n]
        elif getattr(fn, "in_dtype", False) and dt in (_dtype.float16, _dtype.bfloat16):
            w = fn(m, np.dtype(np.float32), dt.np)[:n]
        else:
            w = fn(np.arange(m, dtype=np.float64), m)[:n]
    r = tensor(w, dtype=dt)
    if requires_grad:
        r.requires_grad_(True)
    return r


def _cos_window(coeffs):
    """A cosine-sum window, rounded step by step in float32/float64 as torch's kernel is
    (float64 otherwise): e.g. blackman(3)[0] is 0.08 - 0.5 + 0.42 = -2.98e-08 in float32."""
    def fn(m, dt, low=None):
        # float16/bfloat16 (``low``): each step in float32 with the scalars and results
        # rounded to ``low``, as torch's reduced-precision kernels give them
        # (hann_window(4, dtype=float16)[3] is 0.5005)
        dt = dt.type
        if low is None:
            r, sc = (lambda v: v), dt
        else:
            r, sc = (lambda v: v.astype(low).astype(dt)), (lambda v: dt(low.type(v)))
        if len(coeffs) == 2:                         # hann / hamming: a - b cos(2 pi k/(m-1))
            a, b = coeffs
            k = r(r(np.arange(m, dtype=dt)) * sc(2 * math.pi / (m - 1)))
            return r(r(r(_cos_in(k)) * sc(-b)) + sc(a))
        a, b, c = coeffs                             # blackman
        k = r(r(np.arange(m, dtype=dt)) * sc(math.pi / (m - 1)))
        return r(r(r(r(_cos_in(r(k * sc(4)))) * sc(c)) - r(r(_cos_in(r(k * sc(2)))) * sc(b)))
                 + sc(a))
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
    if not hasattr(window_length, "__index__"):
        from ember._legacy import type_name
        raise TypeError(f"{fname}(): argument 'window_length' (position 1) must be int, not "
                        f"{type_name(type(window_length))}")
    given = [v is not _UNSET for _, _, v, _ in optional]
    typed = all(v is _UNSET or t != "bool" or isinstance(v, (bool, np.bool_))
                for _, t, v, _ in optional)
    if not more and typed and given == sorted(given, reverse=True):
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
                   _cos_window((0.5, 0.5)), layout, pin_memory)


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
                   _cos_window((alpha, beta)), layout, pin_memory)


@public()
def blackman_window(window_length, periodic=_UNSET, *_more, dtype=None, layout=None,
                    device=None, pin_memory=False, requires_grad=False):
    """Blackman window: ``0.42 - 0.5 cos(2 pi n/(N-1)) + 0.08 cos(4 pi n/(N-1))``."""
    periodic, = _window_args("blackman_window", window_length,
                             [("periodic", "bool", periodic, True)], _more,
                             _extra(dtype, layout, device, pin_memory, requires_grad))
    return _window("blackman_window", window_length, periodic, dtype, requires_grad,
                   _cos_window((0.42, 0.5, 0.08)), layout, pin_memory)


@public()
def bartlett_window(window_length, periodic=_UNSET, *_more, dtype=None, layout=None,
                    device=None, pin_memory=False, requires_grad=False):
    """Bartlett (triangular) window: ``1 - |2n / (N - 1) - 1|``."""
    periodic, = _window_args("bartlett_window", window_length,
                             [("periodic", "bool", periodic, True)], _more,
                             _extra(dtype, layout, device, pin_memory, requires_grad))
    return _window("bartlett_window", window_length, periodic, dtype, requires_grad,
                   _bartlett, layout, pin_memory)


def _bartlett(m, dt, low=None):
    """``2k/(m-1)`` rising, ``2 - 2k/(m-1)`` past the middle, each step rounded in ``dt``
    (and to ``low`` for float16/bfloat16, scalars too), as torch's values are."""
    dt = dt.type
    if low is None:
        r, sc = (lambda v: v), dt
    else:
        r, sc = (lambda v: v.astype(low).astype(dt)), (lambda v: dt(low.type(v)))
    k = r(r(np.arange(m, dtype=dt)) * sc(2.0 / (m - 1)))
    half = (m - 1) // 2 + 1
    k[half:] = r(r(-k[half:]) + sc(2))
    return k


_bartlett.in_dtype = True


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
                                                             0, None))) / np.i0(beta),
                   layout, pin_memory)


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


# torch's C++ type strings in its stft/istft messages: legacy names where the dtype has a
# legacy tensor type, 'CPU<name>Type' otherwise (found by experiment)
_LEGACY = {"float32": "torch.FloatTensor", "float64": "torch.DoubleTensor",
           "float16": "torch.HalfTensor", "int64": "torch.LongTensor", "int32": "torch.IntTensor",
           "int16": "torch.ShortTensor", "int8": "torch.CharTensor", "uint8": "torch.ByteTensor",
           "bool": "torch.BoolTensor"}
_CPU_TYPE = {"bfloat16": "BFloat16", "complex64": "ComplexFloat", "complex128": "ComplexDouble",
             "complex32": "ComplexHalf"}


def _type_string(t, legacy=True):
    name = str(t.dtype).replace("torch.", "")
    if legacy and name in _LEGACY:
        return _LEGACY[name]
    return f"CPU{_CPU_TYPE.get(name, name)}Type"


def _flag(v):
    return "None" if v is None else str(int(bool(v)))


def _window_string(window):
    if window is None:
        return "None"
    return f"{_type_string(window)}{{{list(window.shape)}}}"


def _padded_window(window, win_length, n_fft, like):
    import ember
    if window is None:
        window = ember.ones(win_length, dtype=like.dtype.to_real())
    if win_length < n_fft:
        left = (n_fft - win_length) // 2
        window = ember.nn.functional.pad(window, (left, n_fft - win_length - left))
    return window


@public("stft", method=True)
def stft(input, n_fft, hop_length=None, win_length=None, window=None, center=True,
         pad_mode="reflect", normalized=False, onesided=None, return_complex=None,
         align_to_window=None):
    """Short-time Fourier transform: ``(*, n_fft // 2 + 1, n_frames)`` complex frames.
    ``align_to_window`` (``center=False`` only): frames start where the ``win_length``
    window starts rather than where its ``n_fft`` zero-padded frame does."""
    import ember
    from ember import fft as F
    if window is None:
        _warn_no_window("stft")
    if align_to_window is not None and center:
        raise RuntimeError("stft align_to_window should only be set when center = false")
    complex_in = input.is_complex() or (window is not None and window.is_complex())
    if return_complex is None:
        if not complex_in:
            raise RuntimeError("stft requires the return_complex parameter be given for real "
                               "inputs, and will further require that return_complex=True in a "
                               "future PyTorch release.")
        return_complex = True
    if not return_complex:
        from ember._runtime_flags import user_stacklevel, warn_once
        warn_once("stft_real", "stft with return_complex=False is deprecated. In a future "
                  "pytorch release, stft will return complex tensors for all inputs, and "
                  "return_complex=False will raise an error.\nNote: you can still call "
                  "torch.view_as_real on the complex output to recover the old return format.",
                  stacklevel=user_stacklevel() + 1)
    hop = n_fft // 4 if hop_length is None else hop_length
    win = n_fft if win_length is None else win_length
    x = input
    if center:                    # torch pads the signal as a (1, 1, L) / (1, B, L) batch
        shape = tuple(input.shape)
        p = n_fft // 2
        x = ember.nn.functional.pad(input.reshape((1,) * (3 - input.ndim) + shape), (p, p),
                                    mode=pad_mode)
        x = x.reshape(x.shape[-input.ndim:] if input.ndim else ())
    where = (f"stft({_type_string(x)}{list(x.shape)}, n_fft={n_fft}, hop_length={hop}, "
             f"win_length={win}, window={_window_string(window)}, normalized={_flag(normalized)}, "
             f"onesided={_flag(onesided)}, return_complex={_flag(return_complex)}, "
             f"align_to_window={_flag(align_to_window)}) : ")
    if not (x.is_floating_point() or x.is_complex()):
        raise RuntimeError(where + "expected a tensor of floating point or complex values")
    if x.ndim not in (1, 2):
        raise RuntimeError(where + "expected a 1D or 2D tensor")
    length = x.shape[-1]
    if n_fft <= 0 or n_fft > length:
        raise RuntimeError(where + f"expected 0 < n_fft < {length}, but got n_fft={n_fft}")
    if hop <= 0:
        raise RuntimeError(where + f"expected hop_length > 0, but got hop_length={hop}")
    if win <= 0 or win > n_fft:
        raise RuntimeError(where + f"expected 0 < win_length <= n_fft, but got win_length={win}")
    if window is not None and (window.ndim != 1 or window.shape[0] != win):
        raise RuntimeError(where + "expected a 1D window tensor of size equal to win_length="
                           f"{win}, but got window with size {list(window.shape)}")
    onesided = (not complex_in) if onesided is None else onesided
    if onesided and complex_in:
        raise RuntimeError("Cannot have onesided output if window or input is complex")
    x = x.unsqueeze(0) if x.ndim == 1 else x
    if x.dtype in (_dtype.float16, _dtype.bfloat16):
        raise RuntimeError("MKL FFT doesn't support tensors of type: "
                           + ("Half" if x.dtype is _dtype.float16 else "BFloat16"))
    if align_to_window and win < n_fft:
        left = (n_fft - win) // 2
        x = ember.nn.functional.pad(x, (left, n_fft - win - left))
    w = _padded_window(window, win, n_fft, x)
    frames = x.unfold(-1, n_fft, hop) * w                     # (B, n_frames, n_fft)
    norm = "ortho" if normalized else "backward"
    if onesided:
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
    real_dim = input.ndim + 1                # torch checks the view_as_real of the input
    if real_dim < 3:
        got = -2 if real_dim < 2 else -3
        raise IndexError(f"Dimension out of range (expected to be in range of [{-real_dim}, "
                         f"{real_dim - 1}], but got {got})")
    where = (f"istft({_type_string(input, legacy=False)}{list(input.shape)}, n_fft={n_fft}, "
             f"hop_length={hop}, win_length={win}, window={_window_string(window)}, "
             f"center={_flag(center)}, normalized={_flag(normalized)}, "
             f"onesided={_flag(onesided)}, length={length}, "
             f"return_complex={_flag(return_complex)})")
    if real_dim not in (3, 4):
        raise RuntimeError(f"{where} : expected a tensor with 3 or 4 dimensions, but got "
                           f"{real_dim}")
    x = input.unsqueeze(0) if input.ndim == 2 else input          # (B, freq, frames)
    n_frames, fft_size = x.shape[-1], x.shape[-2]
    if onesided is None:
        onesided = fft_size != n_fft
    if onesided and n_fft // 2 + 1 != fft_size:
        raise RuntimeError(f"{where} : expected the frequency dimension (3rd to the last) of the "
                           "input tensor to match n_fft / 2 + 1 when onesided=True, but got "
                           f"{fft_size}")
    if not onesided and n_fft != fft_size:
        raise RuntimeError(f"{where} : expected the frequency dimension (3rd to the last) of the "
                           f"input tensor to match n_fft when onesided=False, but got {fft_size}")
    if not 0 < hop <= win:
        raise RuntimeError(f"{where} : expected 0 < hop_length <= win_length")
    if not 0 < win <= n_fft:
        raise RuntimeError(f"{where} : expected 0 < win_length <= n_fft")
    if window is not None and (window.ndim != 1 or window.shape[0] != win):
        raise RuntimeError(f"{where} : Invalid window shape. window has to be 1D and length of "
                           "`win_length`")
    if window is not None and window.is_complex() and not return_complex:
        raise RuntimeError("Complex windows are incompatible with return_complex=False")
    if return_complex and onesided:
        raise RuntimeError("Cannot have onesided output if window or input is complex")
    if n_frames == 0:
        raise RuntimeError(f"{where} : input tensor cannot be empty.")
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
    if env.numel() == 0:          # torch takes the envelope's min: nothing to take it of
        raise RuntimeError("min(): Expected reduction dim to be specified for input.numel() == 0. "
                           "Specify the reduction dim with the 'dim' argument.")
    if bool((env.abs() < 1e-11).any()):
        raise RuntimeError(f"{where} window overlap add min: 1\n[ CPUBoolType{{}} ]")
    y = y / env
    if end > expected:
        y = ember.nn.functional.pad(y, (0, end - expected))
    if input.ndim == 2:
        y = y.squeeze(0)
    return y
