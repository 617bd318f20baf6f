"""``load``/``save``/``info`` over ``soundfile`` (WAV, FLAC and whatever libsndfile reads),
returning torchaudio's ``(Tensor channels x frames, sample_rate)``."""
import os
from dataclasses import dataclass

import numpy as np

import ember


def _sf():
    try:
        import soundfile
    except ImportError as e:
        raise ImportError("ember.audio's load/save/info need the soundfile package: "
                          "pip install 'ember[audio]' (or pip install soundfile)") from e
    return soundfile


@dataclass
class AudioMetaData:
    """What ``info`` reports: ``sample_rate``, ``num_frames``, ``num_channels``,
    ``bits_per_sample`` (0 when not fixed) and ``encoding`` ("PCM_S", "PCM_U", "PCM_F",
    "FLAC", "ULAW", "ALAW", "VORBIS", ...)."""
    sample_rate: int
    num_frames: int
    num_channels: int
    bits_per_sample: int
    encoding: str


_BITS = {"PCM_S8": 8, "PCM_U8": 8, "PCM_16": 16, "PCM_24": 24, "PCM_32": 32, "FLOAT": 32,
         "DOUBLE": 64, "ULAW": 8, "ALAW": 8}


def _encoding(fmt, subtype):
    if fmt == "FLAC":
        return "FLAC"
    if subtype in ("PCM_S8", "PCM_16", "PCM_24", "PCM_32"):
        return "PCM_S"
    if subtype == "PCM_U8":
        return "PCM_U"
    if subtype in ("FLOAT", "DOUBLE"):
        return "PCM_F"
    return subtype or "UNKNOWN"


def _path(uri):
    return os.fspath(uri) if isinstance(uri, (str, os.PathLike)) else uri


def _info(sf, path):
    """soundfile's info, leaving a file object where it was."""
    if not hasattr(path, "seek"):
        return sf.info(path)
    pos = path.tell()
    try:
        return sf.info(path)
    finally:
        path.seek(pos)


def info(uri, format=None, buffer_size=4096, backend=None):
    """Metadata of an audio file (path or file object)."""
    i = _info(_sf(), _path(uri))
    return AudioMetaData(sample_rate=i.samplerate, num_frames=i.frames,
                         num_channels=i.channels, bits_per_sample=_BITS.get(i.subtype, 0),
                         encoding=_encoding(i.format, i.subtype))


def load(uri, frame_offset=0, num_frames=-1, normalize=True, channels_first=True,
         format=None, buffer_size=4096, backend=None):
    """Read ``num_frames`` frames (-1: all) from ``frame_offset``: ``(waveform, rate)``.

    ``normalize``: float32 in [-1, 1]; without it an integer WAV keeps its type (int16,
    int32, uint8). ``channels_first``: ``(channels, frames)``, else ``(frames, channels)``."""
    sf = _sf()
    path = _path(uri)
    meta = _info(sf, path)
    dtype = "float32"
    if not normalize and meta.format == "WAV":
        dtype = {"PCM_16": "int16", "PCM_32": "int32", "PCM_24": "int32", "PCM_U8": "int16",
                 "DOUBLE": "float64"}.get(meta.subtype, "float32")
    frames = -1 if num_frames is None or num_frames < 0 else num_frames
    if hasattr(path, "seek") and frame_offset:
        with sf.SoundFile(path) as f:
            f.seek(frame_offset)
            data = f.read(frames, dtype=dtype, always_2d=True)
        rate = meta.samplerate
    else:
        data, rate = sf.read(path, frames=frames, start=frame_offset, dtype=dtype,
                             always_2d=True)
    if not normalize and meta.format == "WAV" and meta.subtype == "PCM_U8":
        data = ((data.astype(np.int32) >> 8) + 128).astype(np.uint8)
    if channels_first:
        data = data.T
    return ember.from_numpy(np.ascontiguousarray(data)), rate


def _subtype(fmt, dtype, encoding, bits):
    if encoding is None and bits is None:
        if fmt == "FLAC":
            return "PCM_16"
        return {"float32": "FLOAT", "float64": "DOUBLE", "int32": "PCM_32",
                "int16": "PCM_16", "uint8": "PCM_U8"}.get(dtype, "FLOAT")
    if fmt == "FLAC":
        return {None: "PCM_16", 8: "PCM_S8", 16: "PCM_16", 24: "PCM_24"}[bits]
    if encoding in (None, "PCM_S"):
        return {None: "PCM_16" if encoding else {"int32": "PCM_32", "uint8": "PCM_U8"}.get(
            dtype, "PCM_16"), 8: "PCM_S8", 16: "PCM_16", 24: "PCM_24", 32: "PCM_32"}[bits]
    if encoding == "PCM_U":
        return "PCM_U8"
    if encoding == "PCM_F":
        return "DOUBLE" if bits == 64 else "FLOAT"
    if encoding in ("ULAW", "ALAW"):
        return encoding
    raise ValueError(f"save: unsupported encoding {encoding!r}")


def save(uri, src, sample_rate, channels_first=True, format=None, encoding=None,
         bits_per_sample=None, buffer_size=4096, backend=None, compression=None):
    """Write ``src`` (``(channels, frames)``, or ``(frames, channels)`` without
    ``channels_first``) as WAV/FLAC/... (format from ``format`` or the file suffix)."""
    sf = _sf()
    if src.ndim != 2:
        raise ValueError(f"Expected 2D Tensor, got {src.ndim}D.")
    data = src.detach().numpy()
    if channels_first:
        data = data.T
    path = _path(uri)
    if format is None:
        if not isinstance(path, str):
            raise RuntimeError("save: `format` is required when saving to a file object")
        format = os.path.splitext(path)[1][1:]
    fmt = format.upper()
    if fmt == "WAV" and data.dtype == np.uint8:
        data = (data.astype(np.int16) - 128) << 8
        subtype = "PCM_U8"
    else:
        subtype = _subtype(fmt, str(data.dtype), encoding, bits_per_sample)
    sf.write(path, np.ascontiguousarray(data), sample_rate, subtype=subtype, format=fmt)
