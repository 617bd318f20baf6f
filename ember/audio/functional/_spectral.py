"""Spectral features: spectrograms and their inverses, filter banks, DCT, decibels,
phase vocoder, deltas, pitch, centroid, SpecAugment masks. Spectrograms are
``(..., freq, time)``."""
import math
import warnings

import ember
import ember.nn.functional as F


def _spec_norms(normalized):
    """(frame_length_norm, window_norm) from ``normalized`` (bool or str)."""
    if isinstance(normalized, str):
        if normalized not in ("window", "frame_length"):
            raise ValueError(f"Invalid normalized parameter: {normalized}")
        return normalized == "frame_length", normalized == "window"
    return False, bool(normalized)


def spectrogram(waveform, pad, window, n_fft, hop_length, win_length, power, normalized,
                center=True, pad_mode="reflect", onesided=True, return_complex=None):
    """``(..., time)`` -> ``(..., n_fft // 2 + 1, n_frames)``: |STFT|**power (complex when
    ``power`` is None)."""
    if return_complex is not None:
        warnings.warn("`return_complex` argument is now deprecated and is not effective. "
                      "`torchaudio.functional.spectrogram(power=None)` always returns a "
                      "tensor with complex dtype. Please remove the argument in the function "
                      "call.")
    if pad > 0:
        waveform = F.pad(waveform, (pad, pad), "constant")
    frame_length_norm, window_norm = _spec_norms(normalized)
    shape = waveform.shape
    spec = ember.stft(waveform.reshape(-1, shape[-1]), n_fft=n_fft, hop_length=hop_length,
                      win_length=win_length, window=window, center=center,
                      pad_mode=pad_mode, normalized=frame_length_norm, onesided=onesided,
                      return_complex=True)
    spec = spec.reshape(tuple(shape[:-1]) + tuple(spec.shape[-2:]))
    if window_norm:
        spec = spec / window.pow(2.0).sum().sqrt()
    if power is None:
        return spec
    if power == 1.0:
        return spec.abs()
    return spec.abs().pow(power)


def inverse_spectrogram(spectrogram, length, pad, window, n_fft, hop_length, win_length,
                        normalized, center=True, pad_mode="reflect", onesided=True):
    """Complex ``(..., freq, time)`` -> ``(..., length)`` by overlap-add (istft)."""
    frame_length_norm, window_norm = _spec_norms(normalized)
    if not spectrogram.is_complex():
        raise ValueError("Expected `spectrogram` to be complex dtype.")
    if window_norm:
        spectrogram = spectrogram * window.pow(2.0).sum().sqrt()
    shape = spectrogram.shape
    wave = ember.istft(spectrogram.reshape(-1, shape[-2], shape[-1]), n_fft=n_fft,
                       hop_length=hop_length, win_length=win_length, window=window,
                       center=center, normalized=frame_length_norm, onesided=onesided,
                       length=length + 2 * pad if length is not None else None,
                       return_complex=False)
    if length is not None and pad > 0:
        wave = wave[:, pad:-pad]
    return wave.reshape(tuple(shape[:-2]) + tuple(wave.shape[-1:]))


def _complex_of(dtype):
    return ember.complex128 if dtype == ember.float64 else ember.complex64


def griffinlim(specgram, window, n_fft, hop_length, win_length, power, n_iter, momentum,
               length, rand_init):
    """Waveform ``(..., time)`` whose magnitude spectrogram is ``specgram ** (1/power)``
    (fast Griffin-Lim with ``momentum``)."""
    if not 0 <= momentum:
        raise ValueError(f"momentum must be non-negative, got {momentum}")
    shape = specgram.shape
    specgram = specgram.reshape((-1,) + tuple(shape[-2:])).pow(1 / power)
    cdt = _complex_of(specgram.dtype)
    if rand_init:
        angles = ember.rand(specgram.shape, dtype=cdt)
    else:
        angles = ember.full(specgram.shape, 1, dtype=cdt)
    tprev = ember.tensor(0.0, dtype=specgram.dtype)
    kw = dict(n_fft=n_fft, hop_length=hop_length, win_length=win_length, window=window)
    for _ in range(n_iter):
        inverse = ember.istft(specgram * angles, length=length, **kw)
        rebuilt = ember.stft(inverse, center=True, pad_mode="reflect", normalized=False,
                             onesided=True, return_complex=True, **kw)
        angles = rebuilt
        if momentum:
            angles = angles - tprev * (momentum / (1 + momentum))
        angles = angles / (angles.abs() + 1e-16)
        tprev = rebuilt
    wave = ember.istft(specgram * angles, length=length, **kw)
    return wave.reshape(tuple(shape[:-2]) + tuple(wave.shape[-1:]))


def _hz_to_mel(freq, mel_scale="htk"):
    if mel_scale not in ("slaney", "htk"):
        raise ValueError('mel_scale should be one of "htk" or "slaney".')
    if mel_scale == "htk":
        return 2595.0 * math.log10(1.0 + freq / 700.0)
    f_sp = 200.0 / 3
    mels = freq / f_sp
    if freq >= 1000.0:
        mels = 1000.0 / f_sp + math.log(freq / 1000.0) / (math.log(6.4) / 27.0)
    return mels


def _mel_to_hz(mels, mel_scale="htk"):
    if mel_scale not in ("slaney", "htk"):
        raise ValueError('mel_scale should be one of "htk" or "slaney".')
    if mel_scale == "htk":
        return 700.0 * (10.0 ** (mels / 2595.0) - 1.0)
    f_sp = 200.0 / 3
    min_log_mel = 1000.0 / f_sp
    freqs = f_sp * mels
    return ember.where(mels >= min_log_mel,
                       1000.0 * ember.exp(math.log(6.4) / 27.0 * (mels - min_log_mel)), freqs)


def _triangular_filterbank(all_freqs, f_pts):
    """(n_freqs, n_filter): triangles with corners at consecutive ``f_pts``."""
    f_diff = f_pts[1:] - f_pts[:-1]
    slopes = f_pts.unsqueeze(0) - all_freqs.unsqueeze(1)
    down = (-1.0 * slopes[:, :-2]) / f_diff[:-1]
    up = slopes[:, 2:] / f_diff[1:]
    return ember.clamp(ember.minimum(down, up), min=0.0)


def melscale_fbanks(n_freqs, f_min, f_max, n_mels, sample_rate, norm=None, mel_scale="htk"):
    """Triangular mel filter bank ``(n_freqs, n_mels)``; ``norm="slaney"`` divides each
    triangle by its width (constant energy)."""
    if norm is not None and norm != "slaney":
        raise ValueError('norm must be one of None or "slaney"')
    all_freqs = ember.linspace(0, sample_rate // 2, n_freqs)
    m_min, m_max = _hz_to_mel(f_min, mel_scale), _hz_to_mel(f_max, mel_scale)
    m_pts = ember.linspace(m_min, m_max, n_mels + 2)
    f_pts = _mel_to_hz(m_pts, mel_scale)
    fb = _triangular_filterbank(all_freqs, f_pts)
    if norm == "slaney":
        fb = fb * (2.0 / (f_pts[2:n_mels + 2] - f_pts[:n_mels])).unsqueeze(0)
    if bool((fb.max(dim=0).values == 0.0).any()):
        warnings.warn("At least one mel filterbank has all zero values. The value for "
                      f"`n_mels` ({n_mels}) may be set too high. Or, the value for `n_freqs` "
                      f"({n_freqs}) may be set too low.")
    return fb


def linear_fbanks(n_freqs, f_min, f_max, n_filter, sample_rate):
    """Triangular filter bank with linearly spaced centres ``(n_freqs, n_filter)``."""
    all_freqs = ember.linspace(0, sample_rate // 2, n_freqs)
    f_pts = ember.linspace(f_min, f_max, n_filter + 2)
    return _triangular_filterbank(all_freqs, f_pts)


def create_dct(n_mfcc, n_mels, norm):
    """DCT-II matrix ``(n_mels, n_mfcc)`` (``norm`` None or "ortho"), applied on the right."""
    if norm is not None and norm != "ortho":
        raise ValueError('norm must be either "ortho" or None')
    n = ember.arange(float(n_mels))
    k = ember.arange(float(n_mfcc)).unsqueeze(1)
    dct = ember.cos(math.pi / float(n_mels) * (n + 0.5) * k)
    if norm is None:
        dct = dct * 2.0
    else:
        scale = ember.full((n_mfcc, 1), math.sqrt(2.0 / n_mels))
        scale[0] = 1.0 / math.sqrt(n_mels)
        dct = dct * scale
    return dct.t()


def amplitude_to_DB(x, multiplier, amin, db_multiplier, top_db=None):
    """``multiplier * log10(max(x, amin)) - multiplier * db_multiplier``, floored at
    ``max - top_db`` per spectrogram (the last three dims: channel, freq, time)."""
    x_db = multiplier * ember.log10(ember.clamp(x, min=amin))
    x_db = x_db - multiplier * db_multiplier
    if top_db is not None:
        shape = x_db.shape
        channels = shape[-3] if x_db.ndim > 2 else 1
        x_db = x_db.reshape(-1, channels, shape[-2], shape[-1])
        x_db = ember.maximum(x_db, (x_db.amax(dim=(-3, -2, -1)) - top_db).view(-1, 1, 1, 1))
        x_db = x_db.reshape(shape)
    return x_db


def DB_to_amplitude(x, ref, power):
    """``ref * (10 ** (x / 10)) ** power``."""
    return ref * ember.pow(ember.pow(10.0, 0.1 * x), power)


def mu_law_encoding(x, quantization_channels):
    """[-1, 1] -> integers in [0, quantization_channels) (mu-law companding)."""
    mu = quantization_channels - 1.0
    if not x.is_floating_point():
        warnings.warn("The input Tensor must be of floating type. This will be an error in "
                      "the v0.12 release.")
        x = x.to(ember.float)
    mu_t = ember.tensor(mu, dtype=x.dtype)
    x_mu = ember.sign(x) * ember.log1p(mu_t * ember.abs(x)) / ember.log1p(mu_t)
    return ((x_mu + 1) / 2 * mu + 0.5).to(ember.int64)


def mu_law_decoding(x_mu, quantization_channels):
    """Inverse of ``mu_law_encoding``: integers -> [-1, 1]."""
    mu = quantization_channels - 1.0
    if not x_mu.is_floating_point():
        x_mu = x_mu.to(ember.float)
    mu_t = ember.tensor(mu, dtype=x_mu.dtype)
    x = x_mu / mu_t * 2 - 1.0
    return ember.sign(x) * (ember.exp(ember.abs(x) * ember.log1p(mu_t)) - 1.0) / mu_t


def phase_vocoder(complex_specgrams, rate, phase_advance):
    """Time-stretch a complex ``(..., freq, time)`` spectrogram by ``rate`` (> 1 faster);
    ``phase_advance`` ``(freq, 1)`` is the expected phase advance per hop."""
    if rate == 1.0:
        return complex_specgrams
    shape = complex_specgrams.shape
    spec = complex_specgrams.reshape((-1,) + tuple(shape[-2:]))
    real_dtype = spec.real.dtype
    steps = ember.arange(0, spec.shape[-1], rate, dtype=real_dtype)
    alphas = steps % 1.0
    phase_0 = spec[..., :1].angle()
    spec = F.pad(spec, [0, 2])
    s0 = spec.index_select(-1, steps.long())
    s1 = spec.index_select(-1, (steps + 1).long())
    phase = s1.angle() - s0.angle() - phase_advance
    phase = phase - 2 * math.pi * ember.round(phase / (2 * math.pi))
    phase = phase + phase_advance
    phase = ember.cat([phase_0, phase[..., :-1]], dim=-1)
    phase_acc = ember.cumsum(phase, -1)
    mag = alphas * s1.abs() + (1 - alphas) * s0.abs()
    out = ember.polar(mag, phase_acc)
    return out.reshape(tuple(shape[:-2]) + tuple(out.shape[1:]))


def compute_deltas(specgram, win_length=5, mode="replicate"):
    """Regression deltas along time: ``sum_n n (c[t+n] - c[t-n]) / (2 sum_n n**2)``."""
    if win_length < 3:
        raise ValueError(f"Window length should be greater than or equal to 3. "
                         f"Found win_length {win_length}")
    shape = specgram.shape
    spec = specgram.reshape(1, -1, shape[-1])
    n = (win_length - 1) // 2
    denom = n * (n + 1) * (2 * n + 1) / 3
    spec = F.pad(spec, (n, n), mode=mode)
    kernel = ember.arange(-n, n + 1, 1, dtype=spec.dtype).repeat(spec.shape[1], 1, 1)
    out = F.conv1d(spec, kernel, groups=spec.shape[1]) / denom
    return out.reshape(shape)


def _nccf(waveform, sample_rate, frame_time, freq_low):
    eps = 1e-9
    lags = int(math.ceil(sample_rate / freq_low))
    frame_size = int(math.ceil(sample_rate * frame_time))
    length = waveform.shape[-1]
    num_frames = int(math.ceil(length / frame_size))
    waveform = F.pad(waveform, (0, lags + num_frames * frame_size - length))
    out = []
    for lag in range(1, lags + 1):
        s1 = waveform[..., :-lag].unfold(-1, frame_size, frame_size)[..., :num_frames, :]
        s2 = waveform[..., lag:].unfold(-1, frame_size, frame_size)[..., :num_frames, :]
        out.append(((s1 * s2).sum(-1)
                    / (eps + ember.linalg.vector_norm(s1, ord=2, dim=-1)).pow(2)
                    / (eps + ember.linalg.vector_norm(s2, ord=2, dim=-1)).pow(2)
                    ).unsqueeze(-1))
    return ember.cat(out, -1)


def _best_lag(nccf, sample_rate, freq_high):
    lag_min = int(math.ceil(sample_rate / freq_high))
    best_v, best_i = ember.max(nccf[..., lag_min:], -1)
    half_v, half_i = ember.max(nccf[..., lag_min:nccf.shape[-1] // 2], -1)
    prefer_half = half_v > 0.99 * best_v          # favour the shorter period (octave errors)
    return ember.where(prefer_half, half_i, best_i) + lag_min + 1


def _median_smoothing(indices, win_length):
    pad = (win_length - 1) // 2
    if pad > 0:
        indices = ember.cat([indices[..., :1].expand(*indices.shape[:-1], pad), indices], -1)
    return ember.median(indices.unfold(-1, win_length, 1), -1).values


def detect_pitch_frequency(waveform, sample_rate, frame_time=10 ** (-2), win_length=30,
                           freq_low=85, freq_high=3400):
    """Pitch per frame ``(..., n_frames)`` in Hz from the normalised cross-correlation,
    median-smoothed over ``win_length`` frames."""
    shape = waveform.shape
    wave = waveform.reshape(-1, shape[-1])
    lag = _best_lag(_nccf(wave, sample_rate, frame_time, freq_low), sample_rate, freq_high)
    lag = _median_smoothing(lag, win_length)
    freq = sample_rate / (1e-9 + lag.to(ember.float))
    return freq.reshape(tuple(shape[:-1]) + tuple(freq.shape[-1:]))


def spectral_centroid(waveform, sample_rate, pad, window, n_fft, hop_length, win_length):
    """Magnitude-weighted mean frequency per frame ``(..., n_frames)``."""
    spec = spectrogram(waveform, pad=pad, window=window, n_fft=n_fft, hop_length=hop_length,
                       win_length=win_length, power=1.0, normalized=False)
    freqs = ember.linspace(0, sample_rate // 2, steps=1 + n_fft // 2,
                           dtype=spec.dtype).reshape(-1, 1)
    return (freqs * spec).sum(dim=-2) / spec.sum(dim=-2)


def _mask_param(mask_param, p, axis_length):
    return mask_param if p == 1.0 else min(mask_param, int(axis_length * p))


def _check_mask_args(dim, axis, p, least):
    if dim < least:
        raise ValueError(f"Spectrogram must have at least {'two' if least == 2 else 'three'}"
                         f" dimensions ({dim} given).")
    if axis not in (dim - 2, dim - 1):
        raise ValueError(f"Only Frequency and Time masking are supported (axis {dim - 2} and "
                         f"axis {dim - 1} supported; {axis} given).")
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"The value of p must be between 0.0 and 1.0 ({p} given).")


def mask_along_axis(specgram, mask_param, mask_value, axis, p=1.0):
    """One band ``[v0, v0 + v)`` with ``v ~ U(0, mask_param)``, shared by every spectrogram
    in the batch, set to ``mask_value`` along ``axis`` (freq or time)."""
    dim = specgram.ndim
    _check_mask_args(dim, axis, p, 2)
    mask_param = _mask_param(mask_param, p, specgram.shape[axis])
    if mask_param < 1:
        return specgram
    value = ember.rand(1) * mask_param
    min_value = ember.rand(1) * (specgram.shape[axis] - value)
    start = int(min_value.long())
    end = int(min_value.long() + value.long())
    idx = ember.arange(0, specgram.shape[axis])
    mask = (idx >= start) & (idx < end)
    if axis == dim - 2:
        mask = mask.unsqueeze(-1)
    return specgram.masked_fill(mask, mask_value)


def mask_along_axis_iid(specgrams, mask_param, mask_value, axis, p=1.0):
    """As ``mask_along_axis`` with an independent band per leading index
    (``specgrams`` ``(..., freq, time)``, at least 3-D)."""
    dim = specgrams.ndim
    _check_mask_args(dim, axis, p, 3)
    mask_param = _mask_param(mask_param, p, specgrams.shape[axis])
    if mask_param < 1:
        return specgrams
    dtype = specgrams.dtype if specgrams.is_floating_point() else ember.float32
    lead = tuple(specgrams.shape[:dim - 2])
    value = ember.rand(lead, dtype=dtype) * mask_param
    min_value = ember.rand(lead, dtype=dtype) * (specgrams.shape[axis] - value)
    start = min_value.long()[..., None, None]
    end = (min_value.long() + value.long())[..., None, None]
    idx = ember.arange(0, specgrams.shape[axis], dtype=dtype)
    out = specgrams.transpose(axis, -1)
    out = out.masked_fill((idx >= start) & (idx < end), mask_value)
    return out.transpose(axis, -1)
