"""IIR filtering: ``lfilter`` (one autograd record over scipy's recurrence), ``filtfilt``
and the sox/Audio-EQ-cookbook biquads. Waveforms are ``(..., time)``."""
import math

import numpy as np
import scipy.signal

import ember
from ember.autograd import Function


def _np(t):
    return t.detach().numpy()


def _run(x, a, b):
    """y[..., f, :] = scipy lfilter(b[f], a[f]) of x[..., f, :] (zero initial state)."""
    y = np.empty(np.broadcast_shapes(x.shape), dtype=np.result_type(x, a, b))
    for f in range(a.shape[0]):
        y[..., f, :] = scipy.signal.lfilter(b[f], a[f], x[..., f, :], axis=-1)
    return y


def _xcorr(u, v, order):
    """c[f, k] = sum over leading dims and n of u[..., f, n] * v[..., f, n - k]."""
    T = u.shape[-1]
    lead = tuple(range(u.ndim - 2))
    cols = [(u[..., k:] * v[..., :T - k]).sum(dim=lead + (-1,)) if k < T
            else ember.zeros(u.shape[-2], dtype=u.dtype) for k in range(order)]
    return ember.stack(cols, dim=-1)


class _LFilter(Function):
    """y = B(z)/A(z) x per filter row; x (..., F, T), a and b (F, K)."""
    _functorch_exempt = True        # torchaudio's lfilter is a C++ op there

    @staticmethod
    def forward(ctx, x, a, b):
        y = _run(_np(x), _np(a), _np(b)).astype(_np(x).dtype, copy=False)
        out = ember.from_numpy(np.ascontiguousarray(y))
        ctx.save_for_backward(x, a, b, out)
        return out

    @staticmethod
    def backward(ctx, g):
        x, a, b, y = ctx.saved_tensors
        K = a.shape[-1]
        one = ember.zeros_like(b)
        one[:, 0] = 1
        gx = ga = gb = None
        if ctx.needs_input_grad[0]:       # the adjoint of a causal filter runs backwards
            gx = _LFilter.apply(g.flip(-1), a, b).flip(-1)
        if ctx.needs_input_grad[1] or ctx.needs_input_grad[2]:
            u = _LFilter.apply(g.flip(-1), a, one).flip(-1)     # (1/A)^T g
            if ctx.needs_input_grad[2]:
                gb = _xcorr(u, x, K)
            if ctx.needs_input_grad[1]:
                ga = -_xcorr(u, y, K)
        return gx, ga, gb


def lfilter(waveform, a_coeffs, b_coeffs, clamp=True, batching=True):
    """IIR filter ``a[0] y[n] = sum b[k] x[n-k] - sum_{k>0} a[k] y[n-k]`` along the last dim.

    waveform ``(..., time)``; coefficients ``(order+1,)`` or ``(num_filters, order+1)``.
    With 2-D coefficients and ``batching`` the waveform is ``(..., num_filters, time)`` and
    row f gets filter f; without ``batching`` every filter runs on every waveform and the
    result is ``(..., num_filters, time)``. ``clamp`` clips the output to [-1, 1]."""
    if a_coeffs.shape != b_coeffs.shape:
        raise ValueError(f"lfilter: a_coeffs and b_coeffs must have the same shape, got "
                         f"{list(a_coeffs.shape)} and {list(b_coeffs.shape)}")
    if a_coeffs.ndim not in (1, 2):
        raise ValueError(f"lfilter: expected 1D or 2D coefficients, got {a_coeffs.ndim}D")
    if waveform.ndim < 1 or waveform.shape[-1] == 0:
        raise ValueError("lfilter: expected a non-empty waveform of shape (..., time)")
    a = a_coeffs.to(waveform.dtype)
    b = b_coeffs.to(waveform.dtype)
    if a.ndim == 1:
        x, a, b = waveform.unsqueeze(-2), a.unsqueeze(0), b.unsqueeze(0)
        squeeze = True
    else:
        squeeze = False
        if batching:
            if waveform.ndim < 2 or waveform.shape[-2] != a.shape[0]:
                raise ValueError(f"lfilter: with batching, waveform {list(waveform.shape)} "
                                 f"needs shape (..., {a.shape[0]}, time)")
            x = waveform
        else:
            x = waveform.unsqueeze(-2).expand(*waveform.shape[:-1], a.shape[0],
                                               waveform.shape[-1])
    y = _LFilter.apply(x, a, b)
    if squeeze:
        y = y.squeeze(-2)
    return y.clamp(-1.0, 1.0) if clamp else y


def filtfilt(waveform, a_coeffs, b_coeffs, clamp=True):
    """Zero-phase filtering: ``lfilter`` forwards, then backwards over the result."""
    forward = lfilter(waveform, a_coeffs, b_coeffs, clamp=False, batching=True)
    back = lfilter(forward.flip(-1), a_coeffs, b_coeffs, clamp=clamp, batching=True)
    return back.flip(-1)


def _as_coeffs(vals, like):
    parts = [v if isinstance(v, ember.Tensor) else ember.tensor(float(v))
             for v in vals]
    return ember.stack([p.to(like.dtype).reshape(()) for p in parts])


def biquad(waveform, b0, b1, b2, a0, a1, a2):
    """Second-order IIR filter with the given coefficients (tensors or numbers)."""
    return lfilter(waveform, _as_coeffs((a0, a1, a2), waveform),
                   _as_coeffs((b0, b1, b2), waveform))


def _w0(sample_rate, freq):
    return 2 * math.pi * ember.as_tensor(freq, dtype=ember.float64) / sample_rate


def _cossin(w0):
    return ember.cos(w0), ember.sin(w0)


def _t(x):
    return x if isinstance(x, ember.Tensor) else ember.tensor(float(x), dtype=ember.float64)


def lowpass_biquad(waveform, sample_rate, cutoff_freq, Q=0.707):
    """sox ``lowpass f Qq`` (2-pole)."""
    c, s = _cossin(_w0(sample_rate, cutoff_freq))
    alpha = s / 2 / _t(Q)
    b0 = (1 - c) / 2
    return biquad(waveform, b0, 1 - c, b0, 1 + alpha, -2 * c, 1 - alpha)


def highpass_biquad(waveform, sample_rate, cutoff_freq, Q=0.707):
    """sox ``highpass f Qq`` (2-pole)."""
    c, s = _cossin(_w0(sample_rate, cutoff_freq))
    alpha = s / 2 / _t(Q)
    b0 = (1 + c) / 2
    return biquad(waveform, b0, -1 - c, b0, 1 + alpha, -2 * c, 1 - alpha)


def bandpass_biquad(waveform, sample_rate, central_freq, Q=0.707, const_skirt_gain=False):
    """sox ``bandpass [-c] f Qq``: peak gain Q with ``const_skirt_gain``, else 0 dB."""
    c, s = _cossin(_w0(sample_rate, central_freq))
    alpha = s / 2 / _t(Q)
    temp = s / 2 if const_skirt_gain else alpha
    return biquad(waveform, temp, 0.0, -temp, 1 + alpha, -2 * c, 1 - alpha)


def bandreject_biquad(waveform, sample_rate, central_freq, Q=0.707):
    """sox ``bandreject f Qq``."""
    c, s = _cossin(_w0(sample_rate, central_freq))
    alpha = s / 2 / _t(Q)
    return biquad(waveform, 1.0, -2 * c, 1.0, 1 + alpha, -2 * c, 1 - alpha)


def allpass_biquad(waveform, sample_rate, central_freq, Q=0.707):
    """sox ``allpass f Qq``."""
    c, s = _cossin(_w0(sample_rate, central_freq))
    alpha = s / 2 / _t(Q)
    return biquad(waveform, 1 - alpha, -2 * c, 1 + alpha, 1 + alpha, -2 * c, 1 - alpha)


def equalizer_biquad(waveform, sample_rate, center_freq, gain, Q=0.707):
    """sox ``equalizer f Qq gain``: a peaking filter of ``gain`` dB."""
    c, s = _cossin(_w0(sample_rate, center_freq))
    A = ember.exp(_t(gain) / 40.0 * math.log(10))
    alpha = s / 2 / _t(Q)
    return biquad(waveform, 1 + alpha * A, -2 * c, 1 - alpha * A,
                  1 + alpha / A, -2 * c, 1 - alpha / A)


def _shelf(waveform, sample_rate, gain, freq, Q, sign):
    c, s = _cossin(_w0(sample_rate, freq))
    A = ember.exp(_t(gain) / 40.0 * math.log(10))
    alpha = s / 2 / _t(Q)
    t1 = 2 * ember.sqrt(A) * alpha
    cs = sign * c
    b0 = A * ((A + 1) - (A - 1) * cs + t1)
    b1 = sign * 2 * A * ((A - 1) - (A + 1) * cs)
    b2 = A * ((A + 1) - (A - 1) * cs - t1)
    a0 = (A + 1) + (A - 1) * cs + t1
    a1 = -sign * 2 * ((A - 1) + (A + 1) * cs)
    a2 = (A + 1) + (A - 1) * cs - t1
    return biquad(waveform, b0, b1, b2, a0, a1, a2)


def bass_biquad(waveform, sample_rate, gain, central_freq=100, Q=0.707):
    """sox ``bass gain f Qq``: low shelf."""
    return _shelf(waveform, sample_rate, gain, central_freq, Q, 1.0)


def treble_biquad(waveform, sample_rate, gain, central_freq=3000, Q=0.707):
    """sox ``treble gain f Qq``: high shelf."""
    return _shelf(waveform, sample_rate, gain, central_freq, Q, -1.0)


def band_biquad(waveform, sample_rate, central_freq, Q=0.707, noise=False):
    """sox ``band [-n] f Qq``: a resonator; ``noise`` keeps unpitched audio's power."""
    w0 = _w0(sample_rate, central_freq)
    bw_hz = ember.as_tensor(central_freq, dtype=ember.float64) / _t(Q)
    a2 = ember.exp(-2 * math.pi * bw_hz / sample_rate)
    a1 = -4 * a2 / (1 + a2) * ember.cos(w0)
    b0 = ember.sqrt(1 - a1 * a1 / (4 * a2)) * (1 - a2)
    if noise:
        b0 = ember.sqrt(((1 + a2) ** 2 - a1 ** 2) * (1 - a2) / (1 + a2))
    return biquad(waveform, b0, 0.0, 0.0, 1.0, a1, a2)


_RIAA = {44100: ((-0.2014898, 0.9233820), (0.7083149, 0.9924091)),
         48000: ((-0.1766069, 0.9321590), (0.7396325, 0.9931330)),
         88200: ((-0.1168735, 0.9648312), (0.8590646, 0.9964002)),
         96000: ((-0.1141486, 0.9676817), (0.8699137, 0.9966946))}


def riaa_biquad(waveform, sample_rate):
    """sox ``riaa``: vinyl playback equalisation, 0 dB at 1 kHz (44.1/48/88.2/96 kHz only)."""
    if sample_rate not in _RIAA:
        raise ValueError("Sample rate must be 44.1k, 48k, 88.2k, or 96k")
    (z0, z1), (p0, p1) = _RIAA[sample_rate]
    b = [1.0, -(z0 + z1), z0 * z1]
    a = [1.0, -(p0 + p1), p0 * p1]
    y = 2 * math.pi * 1000 / sample_rate
    b_re = b[0] + b[1] * math.cos(-y) + b[2] * math.cos(-2 * y)
    a_re = a[0] + a[1] * math.cos(-y) + a[2] * math.cos(-2 * y)
    b_im = b[1] * math.sin(-y) + b[2] * math.sin(-2 * y)
    a_im = a[1] * math.sin(-y) + a[2] * math.sin(-2 * y)
    g = 1 / math.sqrt((b_re ** 2 + b_im ** 2) / (a_re ** 2 + a_im ** 2))
    return biquad(waveform, b[0] * g, b[1] * g, b[2] * g, *a)
