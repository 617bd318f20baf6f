"""Sample-domain effects (sox's ``contrast``, ``dcshift``, ``overdrive``, ``phaser``,
``flanger``, ``gain``), dithering, resampling and sliding-window CMN. Waveforms are
``(..., time)`` in [-1, 1]."""
import math

import numpy as np

import ember
import ember.nn.functional as F
from ember.autograd import Function

from ember.audio.functional._filtering import lfilter


def gain(waveform, gain_db=1.0):
    """Amplify by ``gain_db`` decibels (no clipping)."""
    if gain_db == 0:
        return waveform
    return waveform * (10 ** (gain_db / 20))


def contrast(waveform, enhancement_amount=75.0):
    """sox ``contrast``: ``sin(x pi/2 + a/750 sin(2 pi x))`` (louder-sounding, same peak)."""
    if not 0 <= enhancement_amount <= 100:
        raise ValueError("Allowed range of values for enhancement_amount : 0-100")
    t1 = waveform * (math.pi / 2)
    return ember.sin(t1 + enhancement_amount / 750.0 * ember.sin(t1 * 4))


def dcshift(waveform, shift, limiter_gain=None):
    """sox ``dcshift``: add ``shift`` (clipped to [-1, 1]); with ``limiter_gain`` the peaks
    beyond the limiter threshold are compressed instead of clipped."""
    if limiter_gain is None:
        return (waveform + shift).clamp(-1, 1)
    thr = 1.0 - (abs(shift) - limiter_gain)
    if shift > 0:
        over = waveform > thr
        limited = ((waveform - thr) * limiter_gain / (1 - thr) + thr + shift).clamp(max=thr)
    elif shift < 0:
        over = waveform < -thr
        limited = ((waveform + thr) * limiter_gain / (1 - thr) - thr + shift).clamp(min=-thr)
    else:
        return waveform.clamp(-1, 1)
    return ember.where(over, limited, (waveform + shift).clamp(-1, 1))


def overdrive(waveform, gain=20, colour=20):
    """sox ``overdrive``: cubic soft clipping of ``x * 10**(gain/20) + colour/200``, then a
    DC-blocking filter ``y[n] = v[n] - v[n-1] + 0.995 y[n-1]``; out ``x/2 + 3y/4``."""
    v = waveform * (10 ** (gain / 20)) + colour / 200
    v = ember.where(v < -1, ember.full_like(v, -2.0 / 3),
                    ember.where(v > 1, ember.full_like(v, 2.0 / 3), v - v ** 3 / 3))
    a = ember.tensor([1.0, -0.995], dtype=v.dtype)
    b = ember.tensor([1.0, -1.0], dtype=v.dtype)
    return (waveform * 0.5 + lfilter(v, a, b, clamp=False) * 0.75).clamp(-1, 1)


def _wave_table(kind, size, lo, hi, phase, as_int):
    """sox's modulation table: sine or triangle in [lo, hi], starting at ``phase``."""
    offset = int(phase / math.pi / 2 * size + 0.5)
    point = (np.arange(size) + offset) % size
    if kind == "sine":
        d = (np.sin(point / size * 2 * math.pi) + 1) / 2
    else:
        d = point * 2 / size
        quarter = 4 * point // size
        d = np.where(quarter == 0, d + 0.5, np.where(quarter == 3, d - 1.5, 1.5 - d))
    d = d * (hi - lo) + lo
    if as_int:
        return np.trunc(d + np.where(d < 0, -0.5, 0.5)).astype(np.int64)
    return d.astype(np.float32).astype(np.float64)


class _Delays(Function):
    """``d[t] = x[t] + decay * d[t - delay[t]]`` (delay >= 1, zero history); linear in x,
    so the backward runs the transposed recurrence from the end."""
    _functorch_exempt = True

    @staticmethod
    def forward(ctx, x, delay, decay):
        xs = x.detach().numpy()
        T = xs.shape[-1]
        d = np.zeros_like(xs)
        src = np.arange(T) - delay[:T]
        for t in range(T):
            s = src[t]
            d[..., t] = xs[..., t] + (decay * d[..., s] if s >= 0 else 0)
        ctx.delay, ctx.decay = delay, decay
        return ember.from_numpy(d)

    @staticmethod
    def backward(ctx, g):
        gs = g.detach().numpy()
        T = gs.shape[-1]
        acc = np.zeros_like(gs)
        src = np.arange(T) - ctx.delay[:T]
        for t in range(T - 1, -1, -1):
            acc[..., t] += gs[..., t]
            if src[t] >= 0:
                acc[..., src[t]] += ctx.decay * acc[..., t]
        return ember.from_numpy(acc), None, None


def phaser(waveform, sample_rate, gain_in=0.4, gain_out=0.74, delay_ms=3.0, decay=0.4,
           mod_speed=0.5, sinusoidal=True):
    """sox ``phaser``: feedback through a delay line swept by a sine/triangle LFO."""
    delay_len = int(delay_ms * 0.001 * sample_rate + 0.5)
    mod_len = int(sample_rate / mod_speed + 0.5)
    mod = _wave_table("sine" if sinusoidal else "triangle", mod_len, 1.0, float(delay_len),
                      math.pi / 2, as_int=True)
    T = waveform.shape[-1]
    mods = mod[(np.arange(T)) % mod_len]
    delay = delay_len + 1 - mods          # how far back the fed-back sample lies
    d = _Delays.apply(waveform * gain_in, delay, float(decay))
    return (d * gain_out).clamp(-1, 1)


class _Flanger(Function):
    """Per channel: ``buf[t] = x[t] + fb * dd[t-1]``, ``dd[t] = sum_k w[t, k] buf[t - lag[t]
    - k]``, ``out[t] = in_gain x[t] + delay_gain dd[t]``; linear in x, so the backward runs
    the transposed recurrence from the end. x ``(B, C, T)``; lag, w ``(T, C)``, ``(T, C, K)``."""
    _functorch_exempt = True

    @staticmethod
    def forward(ctx, x, lag, w, buf_len, fb, in_gain, delay_gain):
        xs = x.detach().numpy().astype(np.float64)
        B, C, T = xs.shape
        K = w.shape[-1]
        buf = np.zeros((B, C, T))
        dd = np.zeros((B, C, T))
        last = np.zeros((B, C))
        cidx = np.arange(C)
        for t in range(T):
            buf[..., t] = xs[..., t] + last * fb
            acc = 0.0
            for k in range(K):
                src = t - (lag[t] + k) % buf_len          # sox's circular read
                vals = np.where(src >= 0, buf[:, cidx, np.maximum(src, 0)], 0.0)
                acc = acc + w[t, :, k] * vals
            dd[..., t] = last = acc
        ctx.saved = (lag, w, buf_len, fb, in_gain, delay_gain, x.dtype)
        out = xs * in_gain + dd * delay_gain
        return ember.from_numpy(out.astype(xs.dtype)).to(x.dtype)

    @staticmethod
    def backward(ctx, g):
        lag, w, buf_len, fb, in_gain, delay_gain, dtype = ctx.saved
        gs = g.detach().numpy().astype(np.float64)
        B, C, T = gs.shape
        K = w.shape[-1]
        g_buf = np.zeros((B, C, T + 1))
        cidx = np.arange(C)
        for t in range(T - 1, -1, -1):
            g_dd = delay_gain * gs[..., t] + fb * g_buf[..., t + 1]
            for k in range(K):
                src = t - (lag[t] + k) % buf_len
                ok = src >= 0
                if ok.any():
                    c = cidx[ok]
                    g_buf[:, c, src[ok]] += w[t, ok, k] * g_dd[:, ok]
        gx = in_gain * gs + g_buf[..., :T]
        return ember.from_numpy(gx).to(dtype), None, None, None, None, None, None


def flanger(waveform, sample_rate, delay=0.0, depth=2.0, regen=0.0, width=71.0, speed=0.5,
            phase=25.0, modulation="sinusoidal", interpolation="linear"):
    """sox ``flanger`` on ``(..., channel, time)``: a swept short delay (``delay`` ms plus
    up to ``depth`` ms, LFO at ``speed`` Hz) mixed back in at ``width`` percent, with
    ``regen`` percent feedback; channel c's LFO runs ``c * phase`` percent ahead."""
    if modulation not in ("sinusoidal", "triangular"):
        raise ValueError("Only 'sinusoidal' or 'triangular' modulation allowed")
    if interpolation not in ("linear", "quadratic"):
        raise ValueError("Only 'linear' or 'quadratic' interpolation allowed")
    if waveform.ndim < 2:
        raise ValueError(f"flanger: expected a waveform (..., channel, time), got "
                         f"{list(waveform.shape)}")
    shape = waveform.shape
    C, T = shape[-2], shape[-1]
    fb_gain = regen / 100
    delay_gain = width / 100
    buf_len = int((delay + depth) / 1000 * sample_rate + 0.5) + 2
    lfo_len = int(sample_rate / speed)
    lfo = _wave_table("sine" if modulation == "sinusoidal" else "triangle", lfo_len,
                      float(math.floor(delay / 1000 * sample_rate + 0.5)), buf_len - 2.0,
                      3 * math.pi / 2, as_int=False)
    in_gain = 1 / (1 + delay_gain)
    delay_gain = delay_gain / (1 + delay_gain) * (1 - abs(fb_gain))
    phases = (np.arange(C) * lfo_len * (phase / 100) + 0.5).astype(np.int64)
    dl = lfo[(np.arange(T)[:, None] % lfo_len + phases) % lfo_len]         # (T, C)
    lag = np.floor(dl).astype(np.int64)
    f = dl - lag
    if interpolation == "linear":
        w = np.stack([1 - f, f], -1)
    else:
        w = np.stack([1 - 1.5 * f + 0.5 * f * f, 2 * f - f * f, 0.5 * f * f - 0.5 * f], -1)
    out = _Flanger.apply(waveform.reshape(-1, C, T), lag, w, buf_len, fb_gain, in_gain,
                         delay_gain)
    return out.clamp(-1, 1).reshape(shape)


def dither(waveform, density_function="TPDF", noise_shaping=False):
    """Requantise to 16 bits after adding dither: "TPDF" (a triangular ramp), "RPDF" or
    "GPDF" (drawn from the signal itself, as torchaudio does); ``noise_shaping`` adds the
    previous sample's quantisation error."""
    shape = waveform.shape
    wave = waveform.reshape(-1, shape[-1])
    channels, times = wave.shape[0] - 1, wave.shape[-1] - 1
    rc = int(ember.randint(channels, [1]).item()) if channels > 0 else 0
    rt = int(ember.randint(times, [1]).item()) if times > 0 else 0
    scaled = wave * (2 ** 15 - 2)
    if density_function == "RPDF":
        scaled = scaled + (wave[rc][rt] - 0.5)
    elif density_function == "GPDF":
        gaussian = wave[rc][rt]
        for _ in range(6):
            ch = int(ember.randint(channels, [1]).item()) if channels > 0 else 0
            tt = int(ember.randint(times, [1]).item()) if times > 0 else 0
            gaussian = gaussian + wave[ch][tt]
        scaled = scaled + gaussian
    else:
        scaled = scaled + ember.bartlett_window(times + 1, dtype=scaled.dtype).repeat(
            channels + 1, 1)
    dithered = ember.round(scaled) / 2 ** 15
    if noise_shaping:
        err = dithered - wave
        dithered = dithered + F.pad(err, (1, 0))[..., :wave.shape[-1]]
    return dithered.reshape(shape)


def _sinc_kernel(orig, new, gcd, lowpass_filter_width, rolloff, method, beta, dtype):
    if not (int(orig) == orig and int(new) == new):
        raise Exception("Frequencies must be of integer type to ensure quality resampling "
                        "computation. To work around this, manually convert both frequencies "
                        "to integer values that maintain their resampling rate ratio before "
                        "passing them into the function. Example: To downsample a 44100 hz "
                        "waveform by a factor of 8, use `orig_freq=8` and `new_freq=1` "
                        "instead of `orig_freq=44100` and `new_freq=5512.5`. For more "
                        "information, please refer to "
                        "https://github.com/pytorch/audio/issues/1487.")
    if method not in ("sinc_interp_hann", "sinc_interp_kaiser"):
        raise ValueError(f"Invalid resampling method: {method}")
    orig, new = int(orig) // gcd, int(new) // gcd
    if lowpass_filter_width <= 0:
        raise ValueError("Low pass filter width should be positive.")
    base = min(orig, new) * rolloff
    width = math.ceil(lowpass_filter_width * orig / base)
    idx = ember.arange(-width, width + orig, dtype=ember.float64)[None, None] / orig
    t = ember.arange(0, -new, -1, dtype=ember.float64)[:, None, None] / new + idx
    t = (t * base).clamp(-lowpass_filter_width, lowpass_filter_width)
    if method == "sinc_interp_hann":
        window = ember.cos(t * math.pi / lowpass_filter_width / 2) ** 2
    else:
        beta = 14.769656459379492 if beta is None else beta
        b = ember.tensor(float(beta), dtype=ember.float64)
        window = ember.i0(b * ember.sqrt(1 - (t / lowpass_filter_width) ** 2)) / ember.i0(b)
    t = t * math.pi
    kernels = ember.where(t == 0, ember.ones_like(t), ember.sin(t) / t)
    kernels = kernels * window * (base / orig)
    return kernels.to(dtype if dtype is not None else ember.float32), width


def _apply_sinc(waveform, orig, new, gcd, kernel, width):
    orig, new = int(orig) // gcd, int(new) // gcd
    shape = waveform.shape
    wave = waveform.reshape(-1, shape[-1])
    n, length = wave.shape
    wave = F.pad(wave, (width, width + orig))
    out = F.conv1d(wave[:, None], kernel.to(wave.dtype), stride=orig)
    out = out.transpose(1, 2).reshape(n, -1)
    out = out[..., :int(math.ceil(new * length / orig))]
    return out.reshape(tuple(shape[:-1]) + tuple(out.shape[-1:]))


def resample(waveform, orig_freq, new_freq, lowpass_filter_width=6, rolloff=0.99,
             resampling_method="sinc_interp_hann", beta=None):
    """Band-limited (windowed-sinc) resampling of ``(..., time)`` from ``orig_freq`` to
    ``new_freq`` Hz; output length ``ceil(time * new / orig)``."""
    if orig_freq <= 0.0 or new_freq <= 0.0:
        raise ValueError("Original frequency and desired frequecy should be positive")
    if orig_freq == new_freq:
        return waveform
    gcd = math.gcd(int(orig_freq), int(new_freq))
    kernel, width = _sinc_kernel(orig_freq, new_freq, gcd, lowpass_filter_width, rolloff,
                                 resampling_method, beta, waveform.dtype)
    return _apply_sinc(waveform, orig_freq, new_freq, gcd, kernel, width)


def _cmn_windows(num_frames, cmn_window, min_cmn_window, center):
    """Kaldi's sliding CMN window [start, end) for each frame."""
    starts, ends = [], []
    for t in range(num_frames):
        if center:
            start = t - cmn_window // 2
            end = start + cmn_window
        else:
            start, end = t - cmn_window, t + 1
        if start < 0:
            end -= start
            start = 0
        if not center and end > t:
            end = max(t + 1, min_cmn_window)
        if end > num_frames:
            start -= end - num_frames
            end = num_frames
            start = max(start, 0)
        starts.append(start)
        ends.append(end)
    return starts, ends


def sliding_window_cmn(specgram, cmn_window=600, min_cmn_window=100, center=False,
                       norm_vars=False):
    """Kaldi's sliding-window cepstral mean (and variance) normalisation of
    ``(..., time, freq)`` features."""
    shape = specgram.shape
    T, Fq = shape[-2], shape[-1]
    x = specgram.reshape(-1, T, Fq)
    starts, ends = _cmn_windows(T, cmn_window, min_cmn_window, center)
    s_idx = ember.tensor(starts)
    e_idx = ember.tensor(ends)
    count = (e_idx - s_idx).to(x.dtype).unsqueeze(-1)
    zero = ember.zeros(x.shape[0], 1, Fq, dtype=x.dtype)
    cs = ember.cat([zero, x.cumsum(1)], 1)
    total = cs[:, e_idx] - cs[:, s_idx]
    out = x - total / count
    if norm_vars:
        cs2 = ember.cat([zero, (x * x).cumsum(1)], 1)
        total2 = cs2[:, e_idx] - cs2[:, s_idx]
        var = total2 / count - total ** 2 / count ** 2
        out = ember.where(count == 1, ember.zeros_like(out), out * var.pow(-0.5))
    return out.reshape(shape)
