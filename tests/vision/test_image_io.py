"""ember.vision.io: PNG byte-exactness against an independent PNG codec written here (zlib
plus the five row filters; torchvision's own image extension cannot load beside the CPU-only
torch), JPEG within rounding, scripted pipelines equal eager, and the errors."""
import io
import struct
import zlib

import numpy as np
import pytest

import ember
from ember import Tensor
import ember.vision.io as eio

Image = pytest.importorskip("PIL.Image")

# PNG colour types by channel count: gray, gray+alpha, RGB, RGBA
_COLOR_TYPE = {1: 0, 2: 4, 3: 2, 4: 6}
_CHANNELS = {v: k for k, v in _COLOR_TYPE.items()}


def _chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def _paeth(a, b, c):
    p = a + b - c
    pa, pb, pc = np.abs(p - a), np.abs(p - b), np.abs(p - c)
    return np.where((pa <= pb) & (pa <= pc), a, np.where(pb <= pc, b, c))


def _filter_row(kind, row, prev, bpp):
    """PNG filter ``kind`` (0 none, 1 sub, 2 up, 3 average, 4 Paeth) of one row of bytes."""
    r, p = row.astype(np.int64), prev.astype(np.int64)
    left = np.concatenate([np.zeros(bpp, np.int64), r[:-bpp]])
    up_left = np.concatenate([np.zeros(bpp, np.int64), p[:-bpp]])
    predictor = [0 * r, left, p, (left + p) // 2, _paeth(left, p, up_left)][kind]
    return ((r - predictor) % 256).astype(np.uint8)


def write_png_by_hand(array):
    """(H, W, C) uint8 or (H, W, 1) uint16 -> PNG bytes, cycling through the five filters."""
    h, w, c = array.shape
    depth = 16 if array.dtype == np.uint16 else 8
    rows = array.astype(">u2").view(np.uint8).reshape(h, -1) if depth == 16 else array.reshape(h, -1)
    bpp = c * depth // 8
    raw, prev = b"", np.zeros(rows.shape[1], np.uint8)
    for y in range(h):
        kind = y % 5
        raw += bytes([kind]) + _filter_row(kind, rows[y], prev, bpp).tobytes()
        prev = rows[y]
    header = struct.pack(">IIBBBBB", w, h, depth, _COLOR_TYPE[c], 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", header) + _chunk(b"IDAT", zlib.compress(raw, 9))
            + _chunk(b"IEND", b""))


def read_png_by_hand(data):
    """PNG bytes (8-bit, non-interlaced, no palette) -> (H, W, C) uint8."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat = 8, b""
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, color, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and interlace == 0
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    c = _CHANNELS[color]
    raw = np.frombuffer(zlib.decompress(idat), np.uint8).reshape(h, 1 + w * c)
    out, prev = np.zeros((h, w * c), np.uint8), np.zeros(w * c, np.int64)
    for y in range(h):
        kind, row = raw[y, 0], raw[y, 1:].astype(np.int64)
        cur = np.zeros(w * c, np.int64)
        for i in range(w * c):                         # byte by byte: sub/average/Paeth look left
            left = cur[i - c] if i >= c else 0
            up_left = prev[i - c] if i >= c else 0
            pred = [0, left, prev[i], (left + prev[i]) // 2, int(_paeth(np.int64(left), prev[i], np.int64(up_left)))][kind]
            cur[i] = (row[i] + pred) % 256
        out[y], prev = cur, cur
    return out.reshape(h, w, c)


def _pixels(shape, seed=0, dtype=np.uint8):
    return np.random.RandomState(seed).randint(0, np.iinfo(dtype).max + 1, size=shape).astype(dtype)


@pytest.mark.parametrize("channels", [1, 2, 3, 4])
def test_decode_png_is_byte_exact_on_an_independent_encoding(channels, tmp_path):
    hwc = _pixels((7, 11, channels), seed=channels)
    data = write_png_by_hand(hwc)
    expected = hwc.transpose(2, 0, 1)
    encoded = ember.from_numpy(np.frombuffer(data, np.uint8).copy())
    for decoded in (eio.decode_png(encoded), eio.decode_image(encoded)):
        assert decoded.dtype == ember.uint8 and tuple(decoded.shape) == expected.shape
        np.testing.assert_array_equal(decoded.numpy(), expected)
    path = tmp_path / "x.png"
    path.write_bytes(data)
    np.testing.assert_array_equal(eio.read_image(str(path)).numpy(), expected)
    np.testing.assert_array_equal(eio.read_file(str(path)).numpy(), np.frombuffer(data, np.uint8))


def test_decode_16_bit_png_keeps_the_values():
    hwc = _pixels((5, 6, 1), seed=1, dtype=np.uint16)
    decoded = eio.decode_png(ember.from_numpy(np.frombuffer(write_png_by_hand(hwc), np.uint8).copy()))
    assert decoded.dtype == ember.uint16
    np.testing.assert_array_equal(decoded.numpy(), hwc.transpose(2, 0, 1))


@pytest.mark.parametrize("channels", [1, 3])
@pytest.mark.parametrize("level", [0, 6, 9])
def test_encode_png_decodes_exactly_with_an_independent_decoder(channels, level):
    chw = _pixels((channels, 6, 9), seed=level)
    data = eio.encode_png(ember.from_numpy(chw), compression_level=level)
    assert data.dtype == ember.uint8 and data.dim() == 1
    np.testing.assert_array_equal(read_png_by_hand(data.numpy().tobytes()), chw.transpose(1, 2, 0))


def test_read_modes_on_png():
    rgba = _pixels((4, 5, 4), seed=2)
    data = ember.from_numpy(np.frombuffer(write_png_by_hand(rgba), np.uint8).copy())
    rgb = eio.decode_png(data, eio.ImageReadMode.RGB).numpy()
    np.testing.assert_array_equal(rgb, rgba[..., :3].transpose(2, 0, 1))
    # grey pixels stay themselves whatever the luma weights
    levels = _pixels((4, 5, 1), seed=3)
    grey_rgb = ember.from_numpy(np.frombuffer(write_png_by_hand(np.repeat(levels, 3, axis=2)), np.uint8).copy())
    gray = eio.decode_png(grey_rgb, "GRAY")
    assert tuple(gray.shape) == (1, 4, 5)
    np.testing.assert_array_equal(gray.numpy(), levels.transpose(2, 0, 1))
    assert tuple(eio.decode_image(data, eio.ImageReadMode.GRAY_ALPHA).shape) == (2, 4, 5)


def test_jpeg_within_rounding():
    y, x = np.mgrid[0:32, 0:40]
    smooth = np.stack([(x * 6) % 256, (y * 7) % 256, ((x + y) * 3) % 256]).astype(np.uint8)
    data = eio.encode_jpeg(ember.from_numpy(smooth), quality=95)
    assert bytes(data.numpy()[:2]) == b"\xff\xd8"
    decoded = eio.decode_jpeg(data)
    assert decoded.dtype == ember.uint8 and tuple(decoded.shape) == (3, 32, 40)
    err = np.abs(decoded.numpy().astype(np.int64) - smooth)
    assert err.mean() < 3.0
    # the decoder is the codec's: equal to Pillow's decoding of the same bytes
    pil = np.asarray(Image.open(io.BytesIO(data.numpy().tobytes())).convert("RGB")).transpose(2, 0, 1)
    np.testing.assert_array_equal(decoded.numpy(), pil)
    gray = eio.decode_jpeg(eio.encode_jpeg(ember.from_numpy(smooth[:1].copy()), quality=90))
    assert tuple(gray.shape) == (1, 32, 40)
    both = eio.decode_jpeg([data, data])
    assert len(both) == 2 and bool((both[0] == both[1]).all())


def _scripted_pipeline(path: str, out: str) -> Tensor:
    data = eio.read_file(path)
    img = eio.decode_image(data, eio.ImageReadMode.RGB)
    flipped = img.flip(-1)
    eio.write_png(flipped, out, 6)
    return eio.read_image(out)


def _scripted_jpeg(img: Tensor) -> Tensor:
    return eio.decode_jpeg(eio.encode_jpeg(img, 80))


def test_io_functions_script(tmp_path):
    rgb = _pixels((3, 6, 8), seed=5)
    src = tmp_path / "src.png"
    src.write_bytes(write_png_by_hand(rgb.transpose(1, 2, 0)))
    scripted = ember.jit.script(_scripted_pipeline)
    out = scripted(str(src), str(tmp_path / "a.png"))
    eager = _scripted_pipeline(str(src), str(tmp_path / "b.png"))
    np.testing.assert_array_equal(out.numpy(), rgb[..., ::-1])
    np.testing.assert_array_equal(out.numpy(), eager.numpy())
    assert (tmp_path / "a.png").read_bytes() == (tmp_path / "b.png").read_bytes()
    img = ember.from_numpy(rgb)
    np.testing.assert_array_equal(ember.jit.script(_scripted_jpeg)(img).numpy(), _scripted_jpeg(img).numpy())


def test_io_errors():
    png = eio.encode_png(ember.zeros(1, 2, 2, dtype=ember.uint8))
    jpeg = eio.encode_jpeg(ember.zeros(3, 8, 8, dtype=ember.uint8))
    with pytest.raises(RuntimeError):
        eio.decode_png(jpeg)
    with pytest.raises(RuntimeError):
        eio.decode_jpeg(png)
    with pytest.raises(RuntimeError):
        eio.decode_image(ember.tensor([1, 2, 3], dtype=ember.uint8))
    with pytest.raises(RuntimeError):
        eio.decode_image(ember.zeros(2, 3, dtype=ember.uint8))
    with pytest.raises(RuntimeError):
        eio.encode_png(ember.zeros(3, 2, 2))                  # float input
    with pytest.raises(RuntimeError):
        eio.encode_png(ember.zeros(3, 2, 2, dtype=ember.uint8), compression_level=10)
    with pytest.raises(ValueError):
        eio.encode_jpeg(ember.zeros(3, 2, 2, dtype=ember.uint8), quality=101)
