"""ember.audio effects and filters against the ``sox`` program (as torchaudio's own
compatibility tests do) and ``scipy.signal``; gradients by gradcheck (float64).

Tolerance against sox: 1e-5 absolute (sox computes in 32-bit fixed point and writes
32-bit float; the observed gap is below 5e-6)."""
import shutil
import subprocess

import numpy as np
import pytest

import ember as torch
import ember.audio.functional as AF
from ember.autograd import gradcheck

sf = pytest.importorskip("soundfile")
scipy_signal = pytest.importorskip("scipy.signal")

SR = 8000
SOX_ATOL = 1e-5


@pytest.fixture(scope="module")
def wav(tmp_path_factory):
    """Two channels, 0.5 s: a 440 Hz tone plus noise, written as 32-bit float WAV."""
    rng = np.random.default_rng(0)
    t = np.arange(SR // 2) / SR
    x = (0.5 * np.sin(2 * np.pi * 440 * t) + 0.2 * rng.uniform(-1, 1, t.size))
    x = np.stack([x, 0.8 * np.roll(x, 100)]).astype(np.float32)
    path = tmp_path_factory.mktemp("sox") / "in.wav"
    sf.write(path, x.T, SR, subtype="FLOAT")
    return path, x


def _sox(path, effect):
    if shutil.which("sox") is None:
        pytest.skip("the sox program is not installed")
    out = path.with_name("out.wav")
    subprocess.run(["sox", "-D", "-V1", str(path), "-e", "floating-point", "-b", "32",
                    str(out), *map(str, effect)], check=True)
    return sf.read(out, dtype="float32")[0].T


EFFECTS = [
    (["lowpass", 1000, "0.707q"], lambda x: AF.lowpass_biquad(x, SR, 1000, 0.707)),
    (["highpass", 1500, "1.2q"], lambda x: AF.highpass_biquad(x, SR, 1500, 1.2)),
    (["bandpass", 1000, "0.707q"], lambda x: AF.bandpass_biquad(x, SR, 1000, 0.707)),
    (["bandpass", "-c", 1000, "2q"], lambda x: AF.bandpass_biquad(x, SR, 1000, 2, True)),
    (["bandreject", 1000, "0.707q"], lambda x: AF.bandreject_biquad(x, SR, 1000, 0.707)),
    (["allpass", 700, "0.9q"], lambda x: AF.allpass_biquad(x, SR, 700, 0.9)),
    (["equalizer", 1000, "0.707q", 5], lambda x: AF.equalizer_biquad(x, SR, 1000, 5, 0.707)),
    (["bass", 5, 100, "0.707q"], lambda x: AF.bass_biquad(x, SR, 5, 100, 0.707)),
    (["treble", -4, 3000, "0.707q"], lambda x: AF.treble_biquad(x, SR, -4, 3000, 0.707)),
    (["band", 1000, "0.707q"], lambda x: AF.band_biquad(x, SR, 1000, 0.707)),
    (["band", "-n", 1000, "0.707q"], lambda x: AF.band_biquad(x, SR, 1000, 0.707, True)),
    (["contrast", 75], lambda x: AF.contrast(x, 75)),
    (["contrast", 20], lambda x: AF.contrast(x, 20)),
    (["dcshift", 0.3], lambda x: AF.dcshift(x, 0.3)),
    (["dcshift", 0.3, 0.05], lambda x: AF.dcshift(x, 0.3, 0.05)),
    (["dcshift", -0.3, 0.05], lambda x: AF.dcshift(x, -0.3, 0.05)),
    (["overdrive", 20, 20], lambda x: AF.overdrive(x, 20, 20)),
    (["overdrive", 10, 40], lambda x: AF.overdrive(x, 10, 40)),
    (["gain", 3], lambda x: AF.gain(x, 3)),
    (["phaser", 0.4, 0.74, 3, 0.4, 0.5, "-s"], lambda x: AF.phaser(x, SR)),
    (["phaser", 0.8, 0.6, 2, 0.5, 1.5, "-t"],
     lambda x: AF.phaser(x, SR, 0.8, 0.6, 2, 0.5, 1.5, sinusoidal=False)),
    (["flanger", 0, 2, 0, 71, 0.5, "sine", 25, "linear"], lambda x: AF.flanger(x, SR)),
    (["flanger", 1, 3, 20, 50, 1, "triangle", 60, "quadratic"],
     lambda x: AF.flanger(x, SR, 1, 3, 20, 50, 1, 60, "triangular", "quadratic")),
]


@pytest.mark.parametrize("effect,fn", EFFECTS, ids=[" ".join(map(str, e)) for e, _ in EFFECTS])
def test_effect_matches_sox(wav, effect, fn):
    path, x = wav
    out = fn(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(out, _sox(path, effect), rtol=0, atol=SOX_ATOL)


def test_riaa_matches_sox(tmp_path):
    rng = np.random.default_rng(1)
    x = (0.3 * rng.uniform(-1, 1, (1, 4410))).astype(np.float32)
    path = tmp_path / "in.wav"
    sf.write(path, x.T, 44100, subtype="FLOAT")
    ref = _sox(path, ["riaa"])[None] if x.shape[0] == 1 else _sox(path, ["riaa"])
    out = AF.riaa_biquad(torch.from_numpy(x), 44100).numpy()
    np.testing.assert_allclose(out, ref.reshape(out.shape), rtol=0, atol=SOX_ATOL)
    with pytest.raises(ValueError):
        AF.riaa_biquad(torch.from_numpy(x), 22050)


def _coeffs(seed=0):
    b, a = scipy_signal.butter(3, 0.2)
    return a, b


def test_lfilter_matches_scipy():
    a, b = _coeffs()
    x = np.random.default_rng(0).standard_normal((2, 3, 300)) * 0.1
    out = AF.lfilter(torch.from_numpy(x), torch.from_numpy(a), torch.from_numpy(b),
                     clamp=False)
    np.testing.assert_allclose(out.numpy(), scipy_signal.lfilter(b, a, x), atol=1e-12)
    # unnormalised a[0] and clamping
    big = AF.lfilter(torch.from_numpy(x * 50), torch.from_numpy(2 * a), torch.from_numpy(b))
    np.testing.assert_allclose(big.numpy(),
                               np.clip(scipy_signal.lfilter(b, 2 * a, x * 50), -1, 1),
                               atol=1e-12)
    assert out.dtype == torch.float64


def test_lfilter_filter_banks():
    x = np.random.default_rng(1).standard_normal((4, 2, 100)) * 0.1
    bank = [scipy_signal.butter(2, w) for w in (0.1, 0.3)]
    a = torch.tensor(np.stack([ai for _, ai in bank]))
    b = torch.tensor(np.stack([bi for bi, _ in bank]))
    per_row = AF.lfilter(torch.from_numpy(x), a, b, clamp=False, batching=True)
    for f, (bi, ai) in enumerate(bank):
        np.testing.assert_allclose(per_row.numpy()[:, f], scipy_signal.lfilter(bi, ai, x[:, f]),
                                   atol=1e-12)
    every = AF.lfilter(torch.from_numpy(x[:, 0]), a, b, clamp=False, batching=False)
    assert every.shape == (4, 2, 100)
    for f, (bi, ai) in enumerate(bank):
        np.testing.assert_allclose(every.numpy()[:, f], scipy_signal.lfilter(bi, ai, x[:, 0]),
                                   atol=1e-12)
    with pytest.raises(ValueError):
        AF.lfilter(torch.from_numpy(x), a[:, :2], b)
    with pytest.raises(ValueError):
        AF.lfilter(torch.zeros(4, 3, 10, dtype=torch.float64), a, b)


def test_filtfilt_is_forward_then_backward_lfilter():
    a, b = _coeffs()
    x = np.random.default_rng(2).standard_normal((3, 200)) * 0.1
    ref = scipy_signal.lfilter(b, a, scipy_signal.lfilter(b, a, x)[..., ::-1])[..., ::-1]
    out = AF.filtfilt(torch.from_numpy(x), torch.from_numpy(a), torch.from_numpy(b))
    np.testing.assert_allclose(out.numpy(), ref, atol=1e-12)


def test_biquad_coefficients_are_the_cookbook_lowpass():
    x = np.random.default_rng(3).standard_normal(400) * 0.1
    w0 = 2 * np.pi * 1000 / SR
    alpha = np.sin(w0) / 2 / 0.707
    b = [(1 - np.cos(w0)) / 2, 1 - np.cos(w0), (1 - np.cos(w0)) / 2]
    a = [1 + alpha, -2 * np.cos(w0), 1 - alpha]
    out = AF.lowpass_biquad(torch.from_numpy(x), SR, 1000)
    np.testing.assert_allclose(out.numpy(), scipy_signal.lfilter(b, a, x), atol=1e-12)


def _x(*shape, seed=0, scale=0.3):
    g = torch.Generator().manual_seed(seed)
    return ((torch.rand(*shape, generator=g, dtype=torch.float64) - 0.5) * scale).requires_grad_()


def test_gradcheck_lfilter_and_filtfilt():
    x = _x(2, 3, 15)
    a = torch.tensor([1.0, -0.5, 0.2], dtype=torch.float64, requires_grad=True)
    b = torch.tensor([0.3, 0.2, 0.1], dtype=torch.float64, requires_grad=True)
    assert gradcheck(lambda x, a, b: AF.lfilter(x, a, b, clamp=False), (x, a, b))
    assert gradcheck(lambda x, a, b: AF.filtfilt(x, a, b, clamp=False), (x, a, b))
    a2 = torch.tensor([[1.0, -0.5, 0.2], [1.2, 0.1, 0.05], [0.9, 0.3, -0.1]],
                      dtype=torch.float64, requires_grad=True)
    b2 = _x(3, 3, seed=4, scale=1.0)
    assert gradcheck(lambda x, a, b: AF.lfilter(x, a, b, clamp=False), (x, a2, b2))
    assert gradcheck(lambda x, a, b: AF.lfilter(x[0, 0], a, b, batching=False), (x, a2, b2))


@pytest.mark.parametrize("fn", [
    lambda x, f: AF.lowpass_biquad(x, SR, f),
    lambda x, f: AF.bandpass_biquad(x, SR, f, 2.0, True),
    lambda x, f: AF.equalizer_biquad(x, SR, f, 4.0),
    lambda x, f: AF.bass_biquad(x, SR, 3.0, f / 10),
    lambda x, f: AF.treble_biquad(x, SR, -3.0, f),
    lambda x, f: AF.band_biquad(x, SR, f, noise=True),
], ids=["lowpass", "bandpass", "equalizer", "bass", "treble", "band"])
def test_gradcheck_biquads_in_waveform_and_frequency(fn):
    f = torch.tensor(1000.0, dtype=torch.float64, requires_grad=True)
    assert gradcheck(fn, (_x(2, 12), f))


@pytest.mark.parametrize("fn", [
    lambda x: AF.contrast(x, 50),
    lambda x: AF.dcshift(x, 0.2, 0.05),
    lambda x: AF.overdrive(x * 0.05, 10, 20),
    lambda x: AF.phaser(x, SR, delay_ms=1.0),
    lambda x: AF.gain(x, 2.5),
    lambda x: AF.flanger(x, SR, 0.5, 1.0, 30, 60, 5, 25),
    lambda x: AF.flanger(x, SR, 0.5, 1.0, -40, 60, 5, 25, "triangular", "quadratic"),
], ids=["contrast", "dcshift", "overdrive", "phaser", "gain", "flanger", "flanger-quad"])
def test_gradcheck_effects(fn):
    assert gradcheck(fn, (_x(2, 30),))


def test_effects_are_batched_over_leading_dims():
    x = torch.rand(2, 3, 400) - 0.5
    for fn in (lambda w: AF.lowpass_biquad(w, SR, 900), lambda w: AF.overdrive(w),
               lambda w: AF.phaser(w, SR), lambda w: AF.flanger(w, SR)):
        whole = fn(x)
        assert whole.shape == x.shape
        torch.testing.assert_close(whole[1], fn(x[1]))


def test_effect_argument_errors():
    x = torch.zeros(1, 10)
    with pytest.raises(ValueError):
        AF.contrast(x, 101)
    with pytest.raises(ValueError):
        AF.flanger(x, SR, modulation="square")
    with pytest.raises(ValueError):
        AF.flanger(torch.zeros(10), SR)


def _speechlike(sr, onset, seconds=2.0, seed=0):
    rng = np.random.default_rng(seed)
    t = np.arange(int(sr * seconds)) / sr
    x = 0.005 * rng.standard_normal(t.size)
    on = (t > onset) & (t < onset + 0.7)
    x[on] += 0.5 * np.sin(2 * np.pi * 220 * t[on]) * (1 + 0.5 * np.sin(2 * np.pi * 3 * t[on])) \
        + 0.3 * np.sin(2 * np.pi * 660 * t[on])
    return x.astype(np.float32)


@pytest.mark.parametrize("sr,onset,args,kw", [
    (8000, 0.9, [], {}),
    (16000, 0.9, ["-p", "0.1"], {"pre_trigger_time": 0.1}),
    (16000, 1.2, ["-t", "5", "-g", "0.1", "-s", "0.5"],
     {"trigger_level": 5.0, "allowed_gap": 0.1, "search_time": 0.5}),
    (8000, 0.45, ["-p", "0.6"], {"pre_trigger_time": 0.6}),     # starts before time 0
])
def test_vad_matches_sox(tmp_path, sr, onset, args, kw):
    x = _speechlike(sr, onset)
    path = tmp_path / "in.wav"
    sf.write(path, x, sr, subtype="FLOAT")
    ref = _sox(path, ["vad", *args])
    out = AF.vad(torch.from_numpy(x), sr, **kw).numpy()
    assert out.shape == ref.shape and out.size > 0
    np.testing.assert_allclose(out, ref, rtol=0, atol=SOX_ATOL)
    two = AF.vad(torch.from_numpy(np.stack([x * 0.01, x])), sr, **kw)   # earliest channel
    np.testing.assert_allclose(two.numpy()[1], ref, rtol=0, atol=SOX_ATOL)


def test_vad_without_activity_is_empty():
    quiet = torch.from_numpy(0.001 * np.random.default_rng(0).standard_normal(8000))
    assert AF.vad(quiet, 8000).shape == (0,)


def test_vad_transform_equals_functional():
    import ember.audio.transforms as T
    x = torch.from_numpy(_speechlike(8000, 0.9))
    torch.testing.assert_close(T.Vad(8000, trigger_level=6.0)(x),
                               AF.vad(x, 8000, trigger_level=6.0))
