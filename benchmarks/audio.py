"""MelSpectrogram and MFCC over one minute of 16 kHz audio: ember.audio beside librosa.

torchaudio cannot be installed beside torch 2.13's CPU wheel in this environment (no
matching torchaudio build), so the comparison is with librosa, computing the same features
(n_fft 400, hop 160, 80 mel bands, HTK mel scale without normalisation, reflect padding;
MFCC: 40 coefficients of the 80 dB-floored power-to-dB mel spectrogram). The script checks
the two agree before timing. Reported: best wall time per call (float32, batch of 1).

    python benchmarks/audio.py
"""
from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import ember  # noqa: E402
import ember.audio.transforms as T  # noqa: E402
from common import bench_interleaved, fmt_time, machine  # noqa: E402

try:
    import librosa
except ImportError:                     # the comparison is optional
    librosa = None

SR = 16000
MEL = dict(n_fft=400, hop_length=160, n_mels=80)


def _audio():
    rng = np.random.default_rng(0)
    t = np.arange(60 * SR) / SR
    return (0.4 * np.sin(2 * np.pi * 220 * t) * np.sin(2 * np.pi * 0.5 * t)
            + 0.05 * rng.standard_normal(t.size)).astype(np.float32)


def _librosa_mel(x):
    return librosa.feature.melspectrogram(y=x, sr=SR, pad_mode="reflect", htk=True, norm=None,
                                          **MEL)


def _librosa_mfcc(x):
    return librosa.feature.mfcc(S=librosa.power_to_db(_librosa_mel(x), top_db=80.0),
                                n_mfcc=40)


def main():
    x = _audio()
    xt = ember.from_numpy(x)
    mel = T.MelSpectrogram(SR, **MEL)
    mfcc = T.MFCC(SR, n_mfcc=40, melkwargs=MEL)
    print(f"# ember.audio vs librosa {getattr(librosa, '__version__', '(absent)')}: "
          f"60 s of {SR} Hz audio; {machine()}")
    cases = [("MelSpectrogram", lambda: mel(xt), lambda: _librosa_mel(x)),
             ("MFCC", lambda: mfcc(xt), lambda: _librosa_mfcc(x))]
    print(f"{'feature':16s} {'ember':>12s} {'librosa':>12s} {'ember/librosa':>14s}")
    for name, e_fn, l_fn in cases:
        fns = {"ember": e_fn}
        if librosa is not None:
            ours, ref = e_fn().numpy(), l_fn()
            scale = np.abs(ref).max()
            assert np.abs(ours - ref).max() <= 1e-3 * scale, f"{name}: results differ"
            fns["librosa"] = l_fn
        t = bench_interleaved(fns, min_time=1.0, repeat=5, warmup=1)
        lib = t.get("librosa")
        print(f"{name:16s} {fmt_time(t['ember']):>12s} "
              f"{fmt_time(lib) if lib else '-':>12s} "
              f"{t['ember'] / lib if lib else float('nan'):13.2f}x")


if __name__ == "__main__":
    main()
