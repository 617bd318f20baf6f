"""ember.audio spectral functions against librosa (and NumPy/scipy formulas), transforms
equal to their functional ops, gradients by gradcheck (float64)."""
import math

import numpy as np
import pytest

import ember as torch
import ember.audio.functional as AF
import ember.audio.transforms as T
from ember.autograd import gradcheck

librosa = pytest.importorskip("librosa")
scipy_fft = pytest.importorskip("scipy.fft")

SR = 16000


def _wave(n=8000, seed=0, channels=None):
    rng = np.random.default_rng(seed)
    t = np.arange(n) / SR
    x = 0.5 * np.sin(2 * np.pi * 330 * t) + 0.3 * np.sin(2 * np.pi * 2100 * t) \
        + 0.05 * rng.standard_normal(n)
    return x if channels is None else np.stack([x * (1 - 0.2 * c) for c in range(channels)])


def _t(x):
    return torch.from_numpy(np.ascontiguousarray(x))


def test_spectrogram_matches_librosa_stft():
    x = _wave()
    win = torch.hann_window(400, dtype=torch.float64)
    for power in (1.0, 2.0):
        out = AF.spectrogram(_t(x), 0, win, 400, 160, 400, power, False)
        ref = np.abs(librosa.stft(x, n_fft=400, hop_length=160, pad_mode="reflect")) ** power
        np.testing.assert_allclose(out.numpy(), ref, rtol=1e-9, atol=1e-9)
    cplx = AF.spectrogram(_t(x), 0, win, 400, 160, 400, None, "window")
    ref = librosa.stft(x, n_fft=400, hop_length=160, pad_mode="reflect")
    np.testing.assert_allclose(cplx.numpy(), ref / np.sqrt((win.numpy() ** 2).sum()),
                               atol=1e-9)


def test_inverse_spectrogram_round_trip_and_librosa_istft():
    x = _wave(4000, channels=2)
    win = torch.hann_window(256, dtype=torch.float64)
    spec = AF.spectrogram(_t(x), 0, win, 256, 64, 256, None, False)
    back = AF.inverse_spectrogram(spec, 4000, 0, win, 256, 64, 256, False)
    np.testing.assert_allclose(back.numpy(), x, atol=1e-9)
    ref = librosa.istft(spec.numpy(), hop_length=64, n_fft=256, length=4000)
    np.testing.assert_allclose(back.numpy(), ref, atol=1e-9)
    padded = AF.spectrogram(_t(x), 7, win, 256, 64, 256, None, True)
    np.testing.assert_allclose(AF.inverse_spectrogram(padded, 4000, 7, win, 256, 64, 256,
                                                      True).numpy(), x, atol=1e-9)
    with pytest.raises(ValueError):
        AF.inverse_spectrogram(spec.abs(), 4000, 0, win, 256, 64, 256, False)


def test_griffinlim_matches_librosa():
    x = _wave(4000)
    S = np.abs(librosa.stft(x, n_fft=256, hop_length=64, pad_mode="reflect"))
    win = torch.hann_window(256, dtype=torch.float64)
    out = AF.griffinlim(_t(S), win, 256, 64, 256, 1.0, 8, 0.99, 4000, False)
    ref = librosa.griffinlim(S, n_iter=8, hop_length=64, n_fft=256, length=4000,
                             pad_mode="reflect", momentum=0.99, init=None)
    np.testing.assert_allclose(out.numpy(), ref, atol=1e-6)


@pytest.mark.parametrize("norm,scale", [(None, "htk"), ("slaney", "slaney"),
                                        ("slaney", "htk")])
def test_melscale_fbanks_match_librosa(norm, scale):
    fb = AF.melscale_fbanks(257, 20.0, 7600.0, 40, SR, norm, scale)
    ref = librosa.filters.mel(sr=SR, n_fft=512, n_mels=40, fmin=20.0, fmax=7600.0,
                              htk=scale == "htk", norm=norm, dtype=np.float64)
    np.testing.assert_allclose(fb.numpy(), ref.T, rtol=1e-4, atol=1e-5)  # float32 bank


def test_linear_fbanks_are_triangles():
    fb = AF.linear_fbanks(9, 0.0, 8000.0, 3, 16000).numpy()    # bins every 1 kHz
    np.testing.assert_allclose(fb[:, 0], [0, 0.5, 1, 0.5, 0, 0, 0, 0, 0], atol=1e-6)
    np.testing.assert_allclose(fb[:, 2], [0, 0, 0, 0, 0, 0.5, 1, 0.5, 0], atol=1e-6)


@pytest.mark.parametrize("norm", [None, "ortho"])
def test_create_dct_is_scipy_dct2(norm):
    m = np.random.default_rng(0).standard_normal((5, 32))
    out = _t(m).float() @ AF.create_dct(13, 32, norm)
    ref = scipy_fft.dct(m, type=2, norm=norm, axis=-1)[:, :13]
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-4, atol=1e-4)


def test_amplitude_to_db_matches_librosa_and_inverts():
    S = np.abs(librosa.stft(_wave(), n_fft=512)) ** 2
    db = AF.amplitude_to_DB(_t(S), 10.0, 1e-10, 0.0, top_db=80.0)
    np.testing.assert_allclose(db.numpy(), librosa.power_to_db(S, amin=1e-10, top_db=80.0),
                               rtol=1e-9, atol=1e-9)
    adb = AF.amplitude_to_DB(_t(np.sqrt(S)), 20.0, 1e-10, 0.0)
    np.testing.assert_allclose(adb.numpy(), librosa.amplitude_to_db(np.sqrt(S), amin=1e-10,
                                                                    top_db=None), atol=1e-8)
    back = AF.DB_to_amplitude(AF.amplitude_to_DB(_t(S), 10.0, 1e-10, 0.0), 1.0, 1.0)
    np.testing.assert_allclose(back.numpy(), np.maximum(S, 1e-10), rtol=1e-9)
    # top_db is applied per spectrogram of a batch (channel, freq, time)
    batch = _t(np.stack([S[None], 1e-6 * S[None]]))
    per = AF.amplitude_to_DB(batch, 10.0, 1e-10, 0.0, top_db=80.0)
    np.testing.assert_allclose(per.numpy()[1, 0], librosa.power_to_db(1e-6 * S, top_db=80.0,
                                                                      amin=1e-10), atol=1e-8)


def test_mu_law_matches_formula_and_round_trips():
    x = np.linspace(-1, 1, 101)
    enc = AF.mu_law_encoding(_t(x), 256)
    ref = ((np.sign(x) * np.log1p(255 * np.abs(x)) / np.log1p(255) + 1) / 2 * 255
           + 0.5).astype(np.int64)
    np.testing.assert_array_equal(enc.numpy(), ref)
    dec = AF.mu_law_decoding(enc, 256)
    comp = librosa.mu_expand(enc.numpy() / 255 * 2 - 1, mu=255, quantize=False)
    np.testing.assert_allclose(dec.numpy(), comp, atol=1e-6)
    assert np.abs(dec.numpy() - x).max() < 0.021


@pytest.mark.parametrize("orig,new", [(16000, 8000), (8000, 16000), (44100, 16000)])
def test_resample_reproduces_a_band_limited_tone(orig, new):
    n = orig // 10
    t = np.arange(n) / orig
    x = np.sin(2 * np.pi * 440 * t)
    out = AF.resample(_t(x), orig, new).numpy()
    assert out.shape == (math.ceil(n * new / orig),)
    tt = np.arange(out.size) / new
    mid = slice(out.size // 4, 3 * out.size // 4)              # away from the zero padding
    np.testing.assert_allclose(out[mid], np.sin(2 * np.pi * 440 * tt)[mid], atol=2e-3)
    kais = AF.resample(_t(x), orig, new, resampling_method="sinc_interp_kaiser").numpy()
    np.testing.assert_allclose(kais[mid], np.sin(2 * np.pi * 440 * tt)[mid], atol=2e-3)
    assert AF.resample(_t(x), orig, orig) is not None
    with pytest.raises(ValueError):
        AF.resample(_t(x), orig, new, resampling_method="linear")


def test_compute_deltas_matches_librosa_delta():
    m = np.random.default_rng(0).standard_normal((2, 13, 50))
    for win in (3, 5, 9):
        out = AF.compute_deltas(_t(m), win_length=win)
        ref = librosa.feature.delta(m, width=win, mode="nearest")
        np.testing.assert_allclose(out.numpy(), ref, atol=1e-9)
    with pytest.raises(ValueError):
        AF.compute_deltas(_t(m), win_length=2)


def test_spectral_centroid_matches_librosa():
    x = _wave()
    win = torch.hann_window(512, dtype=torch.float64)
    out = AF.spectral_centroid(_t(x), SR, 0, win, 512, 128, 512)
    S = np.abs(librosa.stft(x, n_fft=512, hop_length=128, pad_mode="reflect"))
    freqs = librosa.fft_frequencies(sr=SR, n_fft=512)[:, None]
    ref = (freqs * S).sum(0) / S.sum(0)          # librosa's spectral_centroid, without numba
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-7)


def test_phase_vocoder_matches_librosa():
    x = _wave(4000)
    D = librosa.stft(x, n_fft=256, hop_length=64, pad_mode="reflect")
    adv = torch.linspace(0, math.pi * 64, 129, dtype=torch.float64)[..., None]
    for rate in (1.3, 0.8):
        out = AF.phase_vocoder(_t(D), rate, adv)
        ref = librosa.phase_vocoder(D, rate=rate, hop_length=64)
        np.testing.assert_allclose(out.numpy(), ref, atol=1e-8)


def test_detect_pitch_frequency_finds_the_tone():
    sr = 44100
    t = np.arange(sr) / sr
    for f0 in (100.0, 440.0):
        x = np.stack([np.sin(2 * np.pi * f0 * t), 0.5 * np.sin(2 * np.pi * f0 * t)])
        freq = AF.detect_pitch_frequency(_t(x).float(), sr).numpy()
        assert freq.shape == (2, 85)    # 100 frames, median over 30 padded 14 on the left
        assert np.abs(freq - f0).max() <= 1.0          # the period rounds to whole samples


def test_sliding_window_cmn_matches_a_per_frame_numpy_mean():
    x = np.random.default_rng(0).standard_normal((2, 40, 5))
    for center in (False, True):
        for norm_vars in (False, True):
            out = AF.sliding_window_cmn(_t(x), cmn_window=10, min_cmn_window=4, center=center,
                                        norm_vars=norm_vars).numpy()
            for t in range(40):
                if center:
                    s = min(max(t - 5, 0), 30)
                    e = s + 10
                else:
                    s = max(t - 10, 0)
                    e = max(t + 1, 4) if t < 10 else t + 1
                w = x[:, s:e]
                ref = x[:, t] - w.mean(1)
                if norm_vars:
                    ref = ref / w.std(1)
                np.testing.assert_allclose(out[:, t], ref, atol=1e-9, err_msg=f"t={t}")


def test_dither_tpdf_formula_and_noise_shaping():
    x = np.random.default_rng(0).uniform(-0.5, 0.5, (2, 64))
    out = AF.dither(_t(x)).numpy()
    tri = np.bartlett(65)[:-1]                  # torch's periodic Bartlett window
    ref = np.round(x * (2 ** 15 - 2) + tri) / 2 ** 15
    np.testing.assert_allclose(out, ref, atol=1e-12)
    shaped = AF.dither(_t(x), noise_shaping=True).numpy()
    err = ref - x
    np.testing.assert_allclose(shaped, ref + np.pad(err, ((0, 0), (1, 0)))[:, :64], atol=1e-12)
    for kind in ("RPDF", "GPDF"):       # quantised to the 16-bit grid (plus a constant)
        q = AF.dither(_t(x), kind).numpy() * 2 ** 15
        frac = q - np.floor(q)
        assert np.allclose(frac, frac[0, 0])


def test_masks_are_single_bands():
    torch.manual_seed(0)
    spec = torch.ones(3, 2, 20, 30)
    for axis, size in ((2, 20), (3, 30)):
        m = AF.mask_along_axis(spec, 10, 0.0, axis)
        hit = (m == 0).any(dim=tuple(i for i in range(4) if i != axis)).numpy()
        assert hit.sum() < 10 and (hit.sum() == 0 or np.diff(np.flatnonzero(hit)).max(
            initial=1) == 1)
        assert bool((m == 0).all(dim=tuple(i for i in range(4) if i != axis)).eq(
            torch.from_numpy(hit)).all())          # the same band in every spectrogram
        mi = AF.mask_along_axis_iid(spec, 10, -1.0, axis)
        assert set(np.unique(mi.numpy())) <= {-1.0, 1.0}
        assert ((mi == -1).sum(dim=(-2, -1)) % (30 if axis == 2 else 20) == 0).all()
    with pytest.raises(ValueError):
        AF.mask_along_axis(spec, 10, 0.0, 1)
    with pytest.raises(ValueError):
        AF.mask_along_axis_iid(torch.ones(5, 5), 3, 0.0, 1)
    assert AF.mask_along_axis(spec, 0, 0.0, 3) is spec


def _x(*shape, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.rand(*shape, generator=g, dtype=torch.float64).requires_grad_()


def test_gradcheck_spectral():
    win = torch.hann_window(16, dtype=torch.float64)
    assert gradcheck(lambda x: AF.spectrogram(x, 0, win, 16, 4, 16, 2.0, False), (_x(2, 40),))
    spec = AF.spectrogram(_x(40), 0, win, 16, 4, 16, None, False).detach().requires_grad_()
    assert gradcheck(lambda s: AF.inverse_spectrogram(s, 40, 0, win, 16, 4, 16, False),
                     (spec,))
    assert gradcheck(lambda x: AF.amplitude_to_DB(x + 0.1, 10.0, 1e-10, 0.0, 80.0),
                     (_x(1, 4, 5),))
    assert gradcheck(lambda x: AF.DB_to_amplitude(x, 1.0, 0.5), (_x(3, 4),))
    assert gradcheck(lambda x: AF.compute_deltas(x), (_x(2, 3, 9),))
    assert gradcheck(lambda x: AF.resample(x, 3, 2), (_x(2, 30),))
    assert gradcheck(lambda x: AF.spectral_centroid(x, 8000, 0, win, 16, 4, 16),
                     (_x(40),))
    assert gradcheck(lambda x: AF.sliding_window_cmn(x, 6, 3, norm_vars=True), (_x(12, 3),))
    assert gradcheck(lambda x: AF.mu_law_decoding(x * 255, 256), (_x(5),))
    assert gradcheck(lambda x: AF.griffinlim(x + 0.1, win, 16, 4, 16, 2.0, 2, 0.9, None,
                                             False), (_x(9, 6),))


def test_transforms_equal_functional():
    x = torch.from_numpy(_wave(4000, channels=2)).float()
    spec_t = T.Spectrogram(n_fft=256, hop_length=64)
    win = torch.hann_window(256)
    spec = AF.spectrogram(x, 0, win, 256, 64, 256, 2.0, False)
    torch.testing.assert_close(spec_t(x), spec)
    mel = T.MelSpectrogram(SR, n_fft=256, hop_length=64, n_mels=40)
    fb = AF.melscale_fbanks(129, 0.0, 8000.0, 40, SR)
    torch.testing.assert_close(mel(x), (spec.transpose(-1, -2) @ fb).transpose(-1, -2))
    assert list(mel.state_dict()) == ["spectrogram.window", "mel_scale.fb"]
    db = T.AmplitudeToDB(top_db=80.0)
    torch.testing.assert_close(db(spec), AF.amplitude_to_DB(spec, 10.0, 1e-10, 0.0, 80.0))
    torch.testing.assert_close(T.ComputeDeltas()(spec), AF.compute_deltas(spec))
    torch.testing.assert_close(T.Resample(16000, 8000)(x), AF.resample(x, 16000, 8000))
    torch.testing.assert_close(T.MuLawDecoding()(T.MuLawEncoding()(x)),
                               AF.mu_law_decoding(AF.mu_law_encoding(x, 256), 256))
    torch.testing.assert_close(T.SpectralCentroid(SR, n_fft=256, hop_length=64)(x),
                               AF.spectral_centroid(x, SR, 0, win, 256, 64, 256))
    torch.testing.assert_close(T.SlidingWindowCmn(20, 5)(spec.transpose(-1, -2)),
                               AF.sliding_window_cmn(spec.transpose(-1, -2), 20, 5))
    cspec = T.Spectrogram(n_fft=256, hop_length=64, power=None)(x)
    torch.testing.assert_close(T.InverseSpectrogram(n_fft=256, hop_length=64)(cspec, 4000), x,
                               atol=1e-5, rtol=1e-5)
    stretch = T.TimeStretch(hop_length=64, n_freq=129)
    torch.testing.assert_close(stretch(cspec, 1.2), AF.phase_vocoder(
        cspec, 1.2, torch.linspace(0, math.pi * 64, 129)[..., None]))
    gl = T.GriffinLim(n_fft=256, hop_length=64, n_iter=3, rand_init=False)
    torch.testing.assert_close(gl(spec), AF.griffinlim(spec, win, 256, 64, 256, 2.0, 3, 0.99,
                                                       None, False))


def test_mfcc_and_lfcc_match_librosa():
    x = _wave(8000)
    kw = dict(n_fft=512, hop_length=160, n_mels=40)
    out = T.MFCC(SR, n_mfcc=13, melkwargs=kw)(_t(x).float()).numpy()
    mel = librosa.feature.melspectrogram(y=x, sr=SR, pad_mode="reflect", htk=True, norm=None,
                                         **kw)
    ref = librosa.feature.mfcc(S=librosa.power_to_db(mel, top_db=80.0), n_mfcc=13)
    np.testing.assert_allclose(out, ref, rtol=1e-3, atol=2e-3)
    logm = T.MFCC(SR, n_mfcc=13, log_mels=True, melkwargs=kw)(_t(x).float()).numpy()
    np.testing.assert_allclose(logm, librosa.feature.mfcc(S=np.log(mel + 1e-6), n_mfcc=13),
                               rtol=1e-3, atol=2e-3)
    lf = T.LFCC(SR, n_filter=64, n_lfcc=20, speckwargs=dict(n_fft=512, hop_length=160))
    spec = np.abs(librosa.stft(x, n_fft=512, hop_length=160, pad_mode="reflect")) ** 2
    lin = AF.linear_fbanks(257, 0.0, 8000.0, 64, SR).numpy().T @ spec
    ref = scipy_fft.dct(librosa.power_to_db(lin, top_db=80.0), axis=0, norm="ortho")[:20]
    np.testing.assert_allclose(lf(_t(x).float()).numpy(), ref, rtol=1e-3, atol=2e-3)
    with pytest.raises(ValueError):
        T.MFCC(n_mfcc=50, melkwargs=dict(n_mels=40))


def test_inverse_mel_scale_recovers_a_spectrogram():
    torch.manual_seed(0)                 # (unseeded, about one run in three missed)
    spec = torch.rand(2, 65, 7, dtype=torch.float64)
    ms = T.MelScale(n_mels=20, sample_rate=8000, n_stft=65).double()
    inv = T.InverseMelScale(n_stft=65, n_mels=20, sample_rate=8000).double()
    back = inv(ms(spec))
    assert back.shape == spec.shape and bool((back >= 0).all())
    torch.testing.assert_close(ms(back), ms(spec), atol=0.05, rtol=0.05)


def test_fade_vol_masking_modules():
    x = torch.ones(2, 100)
    lin = T.Fade(10, 20, "linear")(x)
    np.testing.assert_allclose(lin[0, :10].numpy(), np.linspace(0, 1, 10), atol=1e-6)
    np.testing.assert_allclose(lin[0, 80:].numpy(), np.linspace(1, 0, 20), atol=1e-6)
    q = T.Fade(10, 0, "quarter_sine")(x)
    np.testing.assert_allclose(q[0, :10].numpy(), np.sin(np.linspace(0, 1, 10) * np.pi / 2),
                               atol=1e-6)
    for shape in ("half_sine", "logarithmic", "exponential"):
        f = T.Fade(10, 10, shape)(x)
        assert float(f[0, 0]) < 0.1 and float(f[0, 50]) == 1.0 and float(f[0, -1]) < 0.1
    torch.testing.assert_close(T.Vol(2.0)(x * 0.3), x * 0.6)
    torch.testing.assert_close(T.Vol(6.0, "db")(x * 0.1), x * 0.1 * 10 ** 0.3)
    torch.testing.assert_close(T.Vol(4.0, "power")(x * 0.1), x * 0.2)
    assert float(T.Vol(10.0)(x).max()) == 1.0
    with pytest.raises(ValueError):
        T.Vol(-1.0)
    torch.manual_seed(0)
    spec = torch.ones(4, 1, 30, 40)
    fm = T.FrequencyMasking(8)(spec)
    assert bool((fm == 0).all(dim=-1).any(dim=-1).eq((fm == 0).any(dim=(-1, -2))).all())
    tm = T.TimeMasking(8, iid_masks=True)(spec, 5.0)
    assert set(np.unique(tm.numpy())) <= {1.0, 5.0}
