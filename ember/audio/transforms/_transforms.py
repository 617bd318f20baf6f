"""The transform modules; each ``forward`` is the functional op of the same name."""
import math

import ember
from ember import nn
from ember.audio import functional as F


def _window(window_fn, win_length, wkwargs):
    return window_fn(win_length) if wkwargs is None else window_fn(win_length, **wkwargs)


class Spectrogram(nn.Module):
    """``(..., time)`` -> ``(..., n_fft // 2 + 1, n_frames)``."""

    def __init__(self, n_fft=400, win_length=None, hop_length=None, pad=0,
                 window_fn=ember.hann_window, power=2.0, normalized=False, wkwargs=None,
                 center=True, pad_mode="reflect", onesided=True, return_complex=None):
        super().__init__()
        self.n_fft = n_fft
        self.win_length = win_length if win_length is not None else n_fft
        self.hop_length = hop_length if hop_length is not None else self.win_length // 2
        self.register_buffer("window", _window(window_fn, self.win_length, wkwargs))
        self.pad, self.power, self.normalized = pad, power, normalized
        self.center, self.pad_mode, self.onesided = center, pad_mode, onesided

    def forward(self, waveform):
        return F.spectrogram(waveform, self.pad, self.window, self.n_fft, self.hop_length,
                             self.win_length, self.power, self.normalized, self.center,
                             self.pad_mode, self.onesided)


class InverseSpectrogram(nn.Module):
    """Complex ``(..., freq, time)`` -> ``(..., time)``."""

    def __init__(self, n_fft=400, win_length=None, hop_length=None, pad=0,
                 window_fn=ember.hann_window, normalized=False, wkwargs=None, center=True,
                 pad_mode="reflect", onesided=True):
        super().__init__()
        self.n_fft = n_fft
        self.win_length = win_length if win_length is not None else n_fft
        self.hop_length = hop_length if hop_length is not None else self.win_length // 2
        self.register_buffer("window", _window(window_fn, self.win_length, wkwargs))
        self.pad, self.normalized = pad, normalized
        self.center, self.pad_mode, self.onesided = center, pad_mode, onesided

    def forward(self, spectrogram, length=None):
        return F.inverse_spectrogram(spectrogram, length, self.pad, self.window, self.n_fft,
                                     self.hop_length, self.win_length, self.normalized,
                                     self.center, self.pad_mode, self.onesided)


class GriffinLim(nn.Module):
    """Magnitude ``(..., freq, time)`` -> waveform ``(..., time)``."""

    def __init__(self, n_fft=400, n_iter=32, win_length=None, hop_length=None,
                 window_fn=ember.hann_window, power=2.0, wkwargs=None, momentum=0.99,
                 length=None, rand_init=True):
        super().__init__()
        if not 0 <= momentum < 1:
            raise ValueError(f"momentum must be in the range [0, 1). Found: {momentum}")
        self.n_fft, self.n_iter = n_fft, n_iter
        self.win_length = win_length if win_length is not None else n_fft
        self.hop_length = hop_length if hop_length is not None else self.win_length // 2
        self.register_buffer("window", _window(window_fn, self.win_length, wkwargs))
        self.length, self.power, self.momentum, self.rand_init = length, power, momentum, \
            rand_init

    def forward(self, specgram):
        return F.griffinlim(specgram, self.window, self.n_fft, self.hop_length,
                            self.win_length, self.power, self.n_iter, self.momentum,
                            self.length, self.rand_init)


class AmplitudeToDB(nn.Module):
    """Power (``stype="power"``) or amplitude spectrogram to decibels."""

    def __init__(self, stype="power", top_db=None):
        super().__init__()
        self.stype = stype
        if top_db is not None and top_db < 0:
            raise ValueError("top_db must be positive value")
        self.top_db = top_db
        self.multiplier = 10.0 if stype == "power" else 20.0
        self.amin = 1e-10
        self.ref_value = 1.0
        self.db_multiplier = math.log10(max(self.amin, self.ref_value))

    def forward(self, x):
        return F.amplitude_to_DB(x, self.multiplier, self.amin, self.db_multiplier,
                                 self.top_db)


class MelScale(nn.Module):
    """``(..., n_stft, time)`` -> ``(..., n_mels, time)`` through the mel filter bank."""

    def __init__(self, n_mels=128, sample_rate=16000, f_min=0.0, f_max=None, n_stft=201,
                 norm=None, mel_scale="htk"):
        super().__init__()
        self.n_mels, self.sample_rate = n_mels, sample_rate
        self.f_max = f_max if f_max is not None else float(sample_rate // 2)
        self.f_min, self.norm, self.mel_scale = f_min, norm, mel_scale
        if f_min > self.f_max:
            raise ValueError(f"Require f_min: {f_min} <= f_max: {self.f_max}")
        self.register_buffer("fb", F.melscale_fbanks(n_stft, self.f_min, self.f_max,
                                                     n_mels, sample_rate, norm, mel_scale))

    def forward(self, specgram):
        return ember.matmul(specgram.transpose(-1, -2), self.fb).transpose(-1, -2)


class InverseMelScale(nn.Module):
    """Mel ``(..., n_mels, time)`` -> linear ``(..., n_stft, time)`` by least squares
    (negative values clipped)."""

    def __init__(self, n_stft, n_mels=128, sample_rate=16000, f_min=0.0, f_max=None,
                 norm=None, mel_scale="htk", driver="gels"):
        super().__init__()
        self.n_mels, self.sample_rate = n_mels, sample_rate
        self.f_max = f_max or float(sample_rate // 2)
        self.f_min, self.driver = f_min, driver
        if f_min > self.f_max:
            raise ValueError(f"Require f_min: {f_min} <= f_max: {self.f_max}")
        if driver not in ("gels", "gelsy", "gelsd", "gelss"):
            raise ValueError(f'driver must be one of ["gels", "gelsy", "gelsd", "gelss"]. '
                             f"Found {driver}.")
        self.register_buffer("fb", F.melscale_fbanks(n_stft, self.f_min, self.f_max,
                                                     n_mels, sample_rate, norm, mel_scale))

    def forward(self, melspec):
        shape = melspec.shape
        mel = melspec.reshape(-1, shape[-2], shape[-1])
        n_mels, time = shape[-2], shape[-1]
        freq, _ = self.fb.shape
        if self.n_mels != n_mels:
            raise ValueError(f"Expected an input with {self.n_mels} mel bins. Found: {n_mels}")
        A = self.fb.transpose(-1, -2).to(mel.dtype).unsqueeze(0).expand(mel.shape[0], -1, -1)
        spec = ember.linalg.lstsq(A, mel, driver=self.driver).solution
        spec = ember.relu(spec)
        return spec.reshape(tuple(shape[:-2]) + (freq, time))


class MelSpectrogram(nn.Module):
    """``(..., time)`` -> mel spectrogram ``(..., n_mels, n_frames)``."""

    def __init__(self, sample_rate=16000, n_fft=400, win_length=None, hop_length=None,
                 f_min=0.0, f_max=None, pad=0, n_mels=128, window_fn=ember.hann_window,
                 power=2.0, normalized=False, wkwargs=None, center=True, pad_mode="reflect",
                 onesided=None, norm=None, mel_scale="htk"):
        super().__init__()
        self.sample_rate, self.n_fft = sample_rate, n_fft
        self.win_length = win_length if win_length is not None else n_fft
        self.hop_length = hop_length if hop_length is not None else self.win_length // 2
        self.pad, self.power, self.normalized, self.n_mels = pad, power, normalized, n_mels
        self.f_max, self.f_min = f_max, f_min
        self.spectrogram = Spectrogram(n_fft=n_fft, win_length=self.win_length,
                                       hop_length=self.hop_length, pad=pad,
                                       window_fn=window_fn, power=power,
                                       normalized=normalized, wkwargs=wkwargs, center=center,
                                       pad_mode=pad_mode, onesided=True)
        self.mel_scale = MelScale(n_mels, sample_rate, f_min, f_max, n_fft // 2 + 1, norm,
                                  mel_scale)

    def forward(self, waveform):
        return self.mel_scale(self.spectrogram(waveform))


def _dct_check(dct_type):
    if dct_type != 2:
        raise ValueError(f"DCT type not supported: {dct_type}")


class MFCC(nn.Module):
    """``(..., time)`` -> MFCCs ``(..., n_mfcc, n_frames)``: DCT of the dB (or log) mel
    spectrogram."""

    def __init__(self, sample_rate=16000, n_mfcc=40, dct_type=2, norm="ortho",
                 log_mels=False, melkwargs=None):
        super().__init__()
        _dct_check(dct_type)
        self.sample_rate, self.n_mfcc, self.dct_type = sample_rate, n_mfcc, dct_type
        self.norm, self.top_db, self.log_mels = norm, 80.0, log_mels
        self.amplitude_to_DB = AmplitudeToDB("power", self.top_db)
        self.MelSpectrogram = MelSpectrogram(sample_rate=sample_rate, **(melkwargs or {}))
        if n_mfcc > self.MelSpectrogram.n_mels:
            raise ValueError("Cannot select more MFCC coefficients than # mel bins")
        self.register_buffer("dct_mat", F.create_dct(n_mfcc, self.MelSpectrogram.n_mels,
                                                     norm))

    def forward(self, waveform):
        mel = self.MelSpectrogram(waveform)
        mel = ember.log(mel + 1e-6) if self.log_mels else self.amplitude_to_DB(mel)
        return ember.matmul(mel.transpose(-1, -2), self.dct_mat).transpose(-1, -2)


class LFCC(nn.Module):
    """``(..., time)`` -> linear-frequency cepstral coefficients ``(..., n_lfcc, frames)``."""

    def __init__(self, sample_rate=16000, n_filter=128, f_min=0.0, f_max=None, n_lfcc=40,
                 dct_type=2, norm="ortho", log_lf=False, speckwargs=None):
        super().__init__()
        _dct_check(dct_type)
        self.sample_rate, self.f_min = sample_rate, f_min
        self.f_max = f_max if f_max is not None else float(sample_rate // 2)
        self.n_filter, self.n_lfcc, self.dct_type, self.norm = n_filter, n_lfcc, dct_type, norm
        self.log_lf, self.top_db = log_lf, 80.0
        self.amplitude_to_DB = AmplitudeToDB("power", self.top_db)
        self.Spectrogram = Spectrogram(**(speckwargs or {}))
        if n_lfcc > self.Spectrogram.n_fft:
            raise ValueError("Cannot select more LFCC coefficients than # fft bins")
        self.register_buffer("filter_mat", F.linear_fbanks(
            self.Spectrogram.n_fft // 2 + 1, f_min, self.f_max, n_filter, sample_rate))
        self.register_buffer("dct_mat", F.create_dct(n_lfcc, n_filter, norm))

    def forward(self, waveform):
        spec = self.Spectrogram(waveform)
        spec = ember.matmul(spec.transpose(-1, -2), self.filter_mat).transpose(-1, -2)
        spec = ember.log(spec + 1e-6) if self.log_lf else self.amplitude_to_DB(spec)
        return ember.matmul(spec.transpose(-1, -2), self.dct_mat).transpose(-1, -2)


class MuLawEncoding(nn.Module):
    def __init__(self, quantization_channels=256):
        super().__init__()
        self.quantization_channels = quantization_channels

    def forward(self, x):
        return F.mu_law_encoding(x, self.quantization_channels)


class MuLawDecoding(nn.Module):
    def __init__(self, quantization_channels=256):
        super().__init__()
        self.quantization_channels = quantization_channels

    def forward(self, x_mu):
        return F.mu_law_decoding(x_mu, self.quantization_channels)


class Resample(nn.Module):
    """Resample ``(..., time)`` from ``orig_freq`` to ``new_freq``; the sinc kernel is
    computed once."""

    def __init__(self, orig_freq=16000, new_freq=16000, resampling_method="sinc_interp_hann",
                 lowpass_filter_width=6, rolloff=0.99, beta=None, *, dtype=None):
        super().__init__()
        self.orig_freq, self.new_freq = orig_freq, new_freq
        self.gcd = math.gcd(int(orig_freq), int(new_freq))
        self.resampling_method = resampling_method
        self.lowpass_filter_width, self.rolloff, self.beta = lowpass_filter_width, rolloff, beta
        if orig_freq != new_freq:
            from ember.audio.functional._effects import _sinc_kernel
            kernel, self.width = _sinc_kernel(orig_freq, new_freq, self.gcd,
                                              lowpass_filter_width, rolloff,
                                              resampling_method, beta, dtype)
            self.register_buffer("kernel", kernel, persistent=False)

    def forward(self, waveform):
        if self.orig_freq == self.new_freq:
            return waveform
        from ember.audio.functional._effects import _apply_sinc
        return _apply_sinc(waveform, self.orig_freq, self.new_freq, self.gcd, self.kernel,
                           self.width)


class ComputeDeltas(nn.Module):
    def __init__(self, win_length=5, mode="replicate"):
        super().__init__()
        self.win_length, self.mode = win_length, mode

    def forward(self, specgram):
        return F.compute_deltas(specgram, win_length=self.win_length, mode=self.mode)


class TimeStretch(nn.Module):
    """Phase-vocoder time stretch of a complex ``(..., freq, time)`` spectrogram."""

    def __init__(self, hop_length=None, n_freq=201, fixed_rate=None):
        super().__init__()
        self.fixed_rate = fixed_rate
        n_fft = (n_freq - 1) * 2
        hop_length = hop_length if hop_length is not None else n_fft // 2
        self.register_buffer("phase_advance",
                             ember.linspace(0, math.pi * hop_length, n_freq)[..., None])

    def forward(self, complex_specgrams, overriding_rate=None):
        if not complex_specgrams.is_complex():
            raise ValueError("TimeStretch expects a complex-valued spectrogram")
        if overriding_rate is None:
            if self.fixed_rate is None:
                raise ValueError("If no fixed_rate is specified, must pass a valid rate to "
                                 "the forward method.")
            rate = self.fixed_rate
        else:
            rate = overriding_rate
        return F.phase_vocoder(complex_specgrams, rate, self.phase_advance)


class Fade(nn.Module):
    """Fade in over the first ``fade_in_len`` and out over the last ``fade_out_len``
    samples; shapes "linear", "exponential", "logarithmic", "quarter_sine", "half_sine"."""

    _SHAPES = ("quarter_sine", "half_sine", "linear", "logarithmic", "exponential")

    def __init__(self, fade_in_len=0, fade_out_len=0, fade_shape="linear"):
        super().__init__()
        if fade_shape not in self._SHAPES:
            raise ValueError(f"fade_shape must be one of {list(self._SHAPES)}, got "
                             f"{fade_shape!r}")
        self.fade_in_len, self.fade_out_len, self.fade_shape = fade_in_len, fade_out_len, \
            fade_shape

    def forward(self, waveform):
        n = waveform.shape[-1]
        return self._fade_in(n, waveform.dtype) * self._fade_out(n, waveform.dtype) * waveform

    def _fade_in(self, n, dtype):
        fade = ember.linspace(0, 1, self.fade_in_len, dtype=dtype)
        s = self.fade_shape
        if s == "exponential":
            fade = ember.pow(2, (fade - 1) * 5)
        elif s == "logarithmic":
            fade = ember.log10(0.1 + fade) + 1
        elif s == "quarter_sine":
            fade = ember.sin(fade * math.pi / 2)
        elif s == "half_sine":
            fade = ember.sin(fade * math.pi - math.pi / 2) / 2 + 0.5
        return ember.cat((fade, ember.ones(n - self.fade_in_len, dtype=dtype))).clamp(0, 1)

    def _fade_out(self, n, dtype):
        fade = ember.linspace(0, 1, self.fade_out_len, dtype=dtype)
        s = self.fade_shape
        if s == "linear":
            fade = -fade + 1
        elif s == "exponential":
            fade = ember.pow(2, -fade * 5)
        elif s == "logarithmic":
            fade = ember.log10(1.1 - fade) + 1
        elif s == "quarter_sine":
            fade = ember.sin(fade * math.pi / 2 + math.pi / 2)
        else:
            fade = ember.sin(fade * math.pi + math.pi / 2) / 2 + 0.5
        return ember.cat((ember.ones(n - self.fade_out_len, dtype=dtype), fade)).clamp(0, 1)


class _AxisMasking(nn.Module):
    def __init__(self, mask_param, axis, iid_masks, p=1.0):
        super().__init__()
        self.mask_param, self.axis, self.iid_masks, self.p = mask_param, axis, iid_masks, p

    def forward(self, specgram, mask_value=0.0):
        axis = self.axis + specgram.ndim - 3
        if self.iid_masks:
            return F.mask_along_axis_iid(specgram, self.mask_param, mask_value, axis, p=self.p)
        return F.mask_along_axis(specgram, self.mask_param, mask_value, axis, p=self.p)


class FrequencyMasking(_AxisMasking):
    """SpecAugment frequency mask of width < ``freq_mask_param``."""

    def __init__(self, freq_mask_param, iid_masks=False):
        super().__init__(freq_mask_param, 1, iid_masks)


class TimeMasking(_AxisMasking):
    """SpecAugment time mask of width < ``time_mask_param`` (at most ``p`` of the frames)."""

    def __init__(self, time_mask_param, iid_masks=False, p=1.0):
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"The value of p must be between 0.0 and 1.0 ({p} given).")
        super().__init__(time_mask_param, 2, iid_masks, p=p)


class Vol(nn.Module):
    """Scale by ``gain`` ("amplitude" ratio, "power" ratio or "db"), clipped to [-1, 1]."""

    def __init__(self, gain, gain_type="amplitude"):
        super().__init__()
        if gain_type not in ("amplitude", "power", "db"):
            raise ValueError(f"gain_type must be one of amplitude, power, db; got {gain_type}")
        if gain_type in ("amplitude", "power") and gain < 0:
            raise ValueError("If gain_type = amplitude or power, gain must be positive.")
        self.gain, self.gain_type = gain, gain_type

    def forward(self, waveform):
        if self.gain_type == "amplitude":
            waveform = waveform * self.gain
        elif self.gain_type == "db":
            waveform = F.gain(waveform, self.gain)
        else:
            waveform = F.gain(waveform, 10 * math.log10(self.gain))
        return ember.clamp(waveform, -1, 1)


class SlidingWindowCmn(nn.Module):
    def __init__(self, cmn_window=600, min_cmn_window=100, center=False, norm_vars=False):
        super().__init__()
        self.cmn_window, self.min_cmn_window = cmn_window, min_cmn_window
        self.center, self.norm_vars = center, norm_vars

    def forward(self, specgram):
        return F.sliding_window_cmn(specgram, self.cmn_window, self.min_cmn_window,
                                    self.center, self.norm_vars)


class Vad(nn.Module):
    """sox ``vad``: trims leading silence (see ``functional.vad``)."""

    def __init__(self, sample_rate, trigger_level=7.0, trigger_time=0.25, search_time=1.0,
                 allowed_gap=0.25, pre_trigger_time=0.0, boot_time=0.35, noise_up_time=0.1,
                 noise_down_time=0.01, noise_reduction_amount=1.35, measure_freq=20.0,
                 measure_duration=None, measure_smooth_time=0.4, hp_filter_freq=50.0,
                 lp_filter_freq=6000.0, hp_lifter_freq=150.0, lp_lifter_freq=2000.0):
        super().__init__()
        self.sample_rate = sample_rate
        self.kwargs = dict(
            trigger_level=trigger_level, trigger_time=trigger_time, search_time=search_time,
            allowed_gap=allowed_gap, pre_trigger_time=pre_trigger_time, boot_time=boot_time,
            noise_up_time=noise_up_time, noise_down_time=noise_down_time,
            noise_reduction_amount=noise_reduction_amount, measure_freq=measure_freq,
            measure_duration=measure_duration, measure_smooth_time=measure_smooth_time,
            hp_filter_freq=hp_filter_freq, lp_filter_freq=lp_filter_freq,
            hp_lifter_freq=hp_lifter_freq, lp_lifter_freq=lp_lifter_freq)

    def forward(self, waveform):
        return F.vad(waveform, self.sample_rate, **self.kwargs)


class SpectralCentroid(nn.Module):
    def __init__(self, sample_rate, n_fft=400, win_length=None, hop_length=None, pad=0,
                 window_fn=ember.hann_window, wkwargs=None):
        super().__init__()
        self.sample_rate, self.n_fft = sample_rate, n_fft
        self.win_length = win_length if win_length is not None else n_fft
        self.hop_length = hop_length if hop_length is not None else self.win_length // 2
        self.register_buffer("window", _window(window_fn, self.win_length, wkwargs))
        self.pad = pad

    def forward(self, waveform):
        return F.spectral_centroid(waveform, self.sample_rate, self.pad, self.window,
                                   self.n_fft, self.hop_length, self.win_length)
