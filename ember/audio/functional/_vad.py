"""Voice activity detection: sox's ``vad`` effect (trim leading silence/noise)."""
import math
import warnings

import numpy as np

import ember


def _sym_hann(n):
    return 0.5 - 0.5 * np.cos(2 * math.pi * np.arange(n) / (n - 1))


class _Measurer:
    """sox's per-measurement cepstral power with running spectrum and noise estimates,
    one row per channel."""

    def __init__(self, channels, sample_rate, measure_len, p):
        self.measure_len = measure_len
        self.dft_len = 16
        while self.dft_len < measure_len:
            self.dft_len <<= 1
        self.window = 2.0 / math.sqrt(measure_len) * _sym_hann(measure_len)
        self.s0 = max(int(p["hp_filter_freq"] / sample_rate * self.dft_len + 0.5), 1)
        self.s1 = min(int(p["lp_filter_freq"] / sample_rate * self.dft_len + 0.5),
                      self.dft_len // 2)
        self.cep_window = 2.0 / math.sqrt(self.s1 - self.s0) * _sym_hann(self.s1 - self.s0)
        self.c0 = int(math.ceil(sample_rate * 0.5 / p["lp_lifter_freq"]))
        self.c1 = min(int(math.floor(sample_rate * 0.5 / p["hp_lifter_freq"])),
                      self.dft_len // 4)
        if self.c1 <= self.c0:
            raise ValueError("vad: the lifter band (hp_lifter_freq, lp_lifter_freq) is empty "
                             f"at sample rate {sample_rate}")
        mf = p["measure_freq"]
        self.noise_up = math.exp(-1 / (p["noise_up_time"] * mf))
        self.noise_down = math.exp(-1 / (p["noise_down_time"] * mf))
        self.measure_tc = math.exp(-1 / (p["measure_smooth_time"] * mf))
        self.reduction = p["noise_reduction_amount"]
        self.spectrum = np.zeros((channels, self.s1 - self.s0))
        self.noise = np.zeros((channels, self.s1 - self.s0))

    def __call__(self, frames, boot_count):
        """frames (channels, measure_len) -> (channels,) measures."""
        mag = np.abs(np.fft.rfft(frames * self.window, n=self.dft_len)[:, self.s0:self.s1])
        mult = boot_count / (1.0 + boot_count) if boot_count >= 0 else self.measure_tc
        self.spectrum = self.spectrum * mult + mag * (1 - mult)
        power = self.spectrum ** 2
        if boot_count >= 0:
            self.noise = power
        else:
            mult = np.where(power > self.noise, self.noise_up, self.noise_down)
            self.noise = self.noise * mult + power * (1 - mult)
        d = np.sqrt(np.maximum(0.0, power - self.reduction * self.noise)) * self.cep_window
        half = np.zeros((frames.shape[0], self.dft_len // 2))
        half[:, self.s0:self.s1] = d
        cep = np.fft.rfft(half)[:, self.c0:self.c1]
        total = (np.abs(cep) ** 2).sum(-1) / (self.c1 - self.c0)
        with np.errstate(divide="ignore"):
            return np.maximum(0.0, 21 + np.log(total))


def _keep_measures(measures, index, trigger_level, gap_len):
    """How many measurement periods before the current one to keep (sox's jZero)."""
    n = measures.shape[-1]
    keep = 0
    for row in measures:
        j_trigger = j_zero = n
        k = index
        for j in range(n):
            if row[k] >= trigger_level and j <= j_trigger + gap_len:
                j_zero = j_trigger = j
            elif row[k] == 0 and j_trigger >= j_zero:
                j_zero = j
            k = (k + n - 1) % n
        keep = max(keep, min(n, j_zero))
    return keep


def vad(waveform, sample_rate, trigger_level=7.0, trigger_time=0.25, search_time=1.0,
        allowed_gap=0.25, pre_trigger_time=0.0, boot_time=0.35, noise_up_time=0.1,
        noise_down_time=0.01, noise_reduction_amount=1.35, measure_freq=20.0,
        measure_duration=None, measure_smooth_time=0.4, hp_filter_freq=50.0,
        lp_filter_freq=6000.0, hp_lifter_freq=150.0, lp_lifter_freq=2000.0):
    """sox ``vad``: drop the audio before the first voice activity (``(channels, time)`` or
    ``(time)``; channels are one recording, trimmed at the earliest activity of any).

    Every ``1/measure_freq`` s a cepstral power measure of the last ``measure_duration`` s
    (noise-reduced) is taken; once its smoothed value reaches ``trigger_level`` the output
    starts ``search_time`` s back at the first quiet measure before the activity (gaps of
    ``allowed_gap`` s bridged), less ``pre_trigger_time``. No activity: empty output."""
    if waveform.ndim > 2:
        warnings.warn("Expected input tensor dimension of 1 for single channel or 2 for "
                      "multi-channel. Got {} instead. Batch semantics is not supported. "
                      "Please refer to https://github.com/pytorch/audio/issues/1348 and "
                      "https://github.com/pytorch/audio/issues/1468.".format(waveform.ndim))
    shape = waveform.shape
    x = waveform.detach().reshape(-1, shape[-1]).numpy().astype(np.float64)
    channels, length = x.shape
    if measure_duration is None:
        measure_duration = 2.0 / measure_freq
    p = dict(hp_filter_freq=hp_filter_freq, lp_filter_freq=lp_filter_freq,
             hp_lifter_freq=hp_lifter_freq, lp_lifter_freq=lp_lifter_freq,
             measure_freq=measure_freq, noise_up_time=noise_up_time,
             noise_down_time=noise_down_time, measure_smooth_time=measure_smooth_time,
             noise_reduction_amount=noise_reduction_amount)
    fixed_pre = int(pre_trigger_time * sample_rate + 0.5)
    measure_len = int(sample_rate * measure_duration + 0.5)
    period = int(sample_rate / measure_freq + 0.5)
    n_measures = int(math.ceil(search_time * measure_freq))
    gap_len = int(allowed_gap * measure_freq + 0.5)
    boot_max = int(boot_time * measure_freq - 0.5)
    trigger_mult = math.exp(-1 / (trigger_time * measure_freq))
    measure = _Measurer(channels, sample_rate, measure_len, p)
    measures = np.zeros((channels, n_measures))
    mean = np.zeros(channels)
    boot, index, end = 0, 0, measure_len
    while end <= length:
        meas = measure(x[:, end - measure_len:end], boot)
        measures[:, index] = meas
        mean = mean * trigger_mult + meas * (1 - trigger_mult)
        triggered = mean >= trigger_level
        if triggered.any():
            keep = _keep_measures(measures[triggered], index, trigger_level, gap_len)
            start = end - fixed_pre - measure_len - keep * period
            out = waveform.reshape(-1, shape[-1])[:, max(start, 0):]
            if start < 0:         # sox's buffer was still zero there
                out = ember.cat([ember.zeros(channels, -start, dtype=out.dtype), out], -1)
            return out.reshape(tuple(shape[:-1]) + (out.shape[-1],))
        index = (index + 1) % n_measures
        if boot >= 0:
            boot = -1 if boot == boot_max else boot + 1
        end += period
    return waveform[..., :0]
