"""ember.audio load/save/info round trips (WAV, FLAC) checked against soundfile, and the
dataset readers on folders this test writes in torchaudio's layouts."""
import os

import numpy as np
import pytest

import ember as torch
import ember.audio as ta
from ember.audio import datasets

sf = pytest.importorskip("soundfile")


def _signal(channels=2, frames=1000, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.uniform(-0.9, 0.9, (channels, frames))).astype(np.float32)


def test_wav_float_round_trip_and_info(tmp_path):
    x = _signal()
    path = tmp_path / "a.wav"
    ta.save(path, torch.from_numpy(x), 8000)
    y, sr = ta.load(path)
    assert sr == 8000 and y.dtype == torch.float32 and y.shape == (2, 1000)
    np.testing.assert_array_equal(y.numpy(), x)
    meta = ta.info(path)
    assert (meta.sample_rate, meta.num_frames, meta.num_channels, meta.bits_per_sample,
            meta.encoding) == (8000, 1000, 2, 32, "PCM_F")
    np.testing.assert_array_equal(sf.read(path, dtype="float32")[0].T, x)


def test_wav_int16_normalize_offset_and_layout(tmp_path):
    x = _signal()
    ints = np.round(x * 32767).astype(np.int16)
    path = tmp_path / "b.wav"
    ta.save(str(path), torch.from_numpy(ints), 16000)
    meta = ta.info(str(path))
    assert (meta.bits_per_sample, meta.encoding) == (16, "PCM_S")
    raw, _ = ta.load(path, normalize=False)
    assert raw.dtype == torch.int16
    np.testing.assert_array_equal(raw.numpy(), ints)
    norm, _ = ta.load(path)
    np.testing.assert_allclose(norm.numpy(), ints / 32768.0, atol=1e-7)
    part, _ = ta.load(path, frame_offset=100, num_frames=50, channels_first=False)
    assert part.shape == (50, 2)
    np.testing.assert_allclose(part.numpy(), ints[:, 100:150].T / 32768.0, atol=1e-7)
    with open(path, "rb") as f:                       # file objects too
        fo, sr = ta.load(f)
    assert sr == 16000 and fo.shape == (2, 1000)
    u8 = tmp_path / "u8.wav"
    ta.save(u8, torch.from_numpy((ints[:, :10] // 256 + 128).astype(np.uint8)), 8000)
    back, _ = ta.load(u8, normalize=False)
    assert back.dtype == torch.uint8 and ta.info(u8).encoding == "PCM_U"
    np.testing.assert_array_equal(back.numpy(), ints[:, :10] // 256 + 128)


def test_flac_round_trip(tmp_path):
    x = _signal(1, 2000)
    path = tmp_path / "c.flac"
    ta.save(path, torch.from_numpy(x.T.copy()), 22050, channels_first=False)
    meta = ta.info(path)
    assert (meta.sample_rate, meta.num_frames, meta.num_channels, meta.encoding) == \
        (22050, 2000, 1, "FLAC")
    y, sr = ta.load(path)
    assert sr == 22050 and y.shape == (1, 2000)
    np.testing.assert_allclose(y.numpy(), x, atol=1 / 32768 + 1e-7)    # 16-bit FLAC
    ta.save(tmp_path / "d.flac", torch.from_numpy(x), 22050, bits_per_sample=24)
    y24, _ = ta.load(tmp_path / "d.flac")
    assert ta.info(tmp_path / "d.flac").bits_per_sample == 24
    np.testing.assert_allclose(y24.numpy(), x, atol=2 ** -23 + 1e-7)
    with pytest.raises(ValueError):
        ta.save(path, torch.zeros(3), 8000)


def _write(path, frames=160, sr=16000, seed=0):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    sf.write(path, _signal(1, frames, seed)[0], sr, subtype="PCM_16")


def test_yesno(tmp_path):
    root = tmp_path / "waves_yesno"
    names = ["0_1_0_0_1_0_1_1", "1_1_1_0_0_0_0_1", "0_0_0_0_0_0_0_0"]
    for i, n in enumerate(names):
        _write(str(root / f"{n}.wav"), sr=8000, seed=i)
    ds = datasets.YESNO(tmp_path)
    assert len(ds) == 3
    wave, sr, labels = ds[0]
    assert sr == 8000 and wave.shape == (1, 160) and labels == [0] * 8
    assert ds[1][2] == [0, 1, 0, 0, 1, 0, 1, 1]
    np.testing.assert_allclose(ds[2][0].numpy()[0], sf.read(root / f"{names[1]}.wav")[0],
                               atol=1e-7)
    with pytest.raises(RuntimeError, match="download"):
        datasets.YESNO(tmp_path / "missing", download=True)
    with pytest.raises(RuntimeError):
        datasets.YESNO(tmp_path / "missing")


def test_speechcommands_subsets(tmp_path):
    base = tmp_path / "SpeechCommands" / "speech_commands_v0.02"
    files = ["yes/0a7c2a8d_nohash_0.wav", "yes/0a7c2a8d_nohash_1.wav", "no/1b4c9b89_nohash_0.wav",
             "no/c1d39ce8_nohash_3.wav", "_background_noise_/white_noise.wav"]
    for i, f in enumerate(files):
        _write(str(base / f), seed=i)
    (base / "validation_list.txt").write_text("no/1b4c9b89_nohash_0.wav\n")
    (base / "testing_list.txt").write_text("yes/0a7c2a8d_nohash_1.wav\n")
    full = datasets.SPEECHCOMMANDS(tmp_path)
    assert len(full) == 4
    wave, sr, label, speaker, utt = full[3]
    assert (sr, label, speaker, utt) == (16000, "yes", "0a7c2a8d", 1) and wave.shape == (1, 160)
    train = datasets.SPEECHCOMMANDS(tmp_path, subset="training")
    assert [train[i][2:] for i in range(len(train))] == [("no", "c1d39ce8", 3),
                                                        ("yes", "0a7c2a8d", 0)]
    assert datasets.SPEECHCOMMANDS(tmp_path, subset="validation")[0][2:] == \
        ("no", "1b4c9b89", 0)
    assert datasets.SPEECHCOMMANDS(tmp_path, subset="testing")[0][2:] == ("yes", "0a7c2a8d", 1)
    with pytest.raises(ValueError):
        datasets.SPEECHCOMMANDS(tmp_path, subset="train")


def test_gtzan(tmp_path):
    for g, k in (("blues", 0), ("blues", 1), ("jazz", 0)):
        _write(str(tmp_path / "genres" / g / f"{g}.{k:05d}.wav"), sr=22050, seed=k)
    ds = datasets.GTZAN(tmp_path)
    assert len(ds) == 3
    assert [ds[i][2] for i in range(3)] == ["blues", "blues", "jazz"]
    wave, sr, _ = ds[1]
    assert sr == 22050 and wave.shape == (1, 160)
    with pytest.raises(NotImplementedError):
        datasets.GTZAN(tmp_path, subset="training")


def test_cmuarctic(tmp_path):
    base = tmp_path / "ARCTIC" / "cmu_us_aew_arctic"
    (base / "etc").mkdir(parents=True)
    (base / "etc" / "txt.done.data").write_text(
        '( arctic_a0001 "Author of the danger trail, Philip Steels, etc." )\n'
        '( arctic_a0002 "Not at this particular case, Tom, apologized Whittemore." )\n')
    for i, u in enumerate(("arctic_a0001", "arctic_a0002")):
        _write(str(base / "wav" / f"{u}.wav"), seed=i)
    ds = datasets.CMUARCTIC(tmp_path)
    assert len(ds) == 2
    wave, sr, text, uid = ds[1]
    assert (sr, uid) == (16000, "arctic_a0002") and wave.shape == (1, 160)
    assert text == "Not at this particular case, Tom, apologized Whittemore."
    assert ds[0][2] == "Author of the danger trail, Philip Steels, etc."
