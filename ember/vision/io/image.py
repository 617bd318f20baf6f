"""Image file I/O on uint8 tensors (C, H, W), backed by Pillow.

The public functions are scriptable (``ember.jit.script(read_image)``, as torchvision's
are): typed, with ``mode`` an ``ImageReadMode`` enum, each calling a private
``ember.jit.ignore``d kernel that scripted code runs as Python (where TorchScript calls
torchvision's C++ ``torch.ops.image`` ops). Eager calls also take paths, bytes and mode
names ("RGB")."""
import io as _io
import os
from enum import Enum

import numpy as np

import ember
from ember import Tensor
from ember.jit import ignore as _jit_ignore
from .._pil import pil as _pil, pil_module as _pil_module


class ImageReadMode(Enum):
    """How to convert decoded images: UNCHANGED keeps the file's channels."""
    UNCHANGED = 0
    GRAY = 1
    GRAY_ALPHA = 2
    RGB = 3
    RGB_ALPHA = 4
    RGBA = RGB_ALPHA


_MODE_TO_PIL = {ImageReadMode.GRAY: "L", ImageReadMode.GRAY_ALPHA: "LA",
                ImageReadMode.RGB: "RGB", ImageReadMode.RGB_ALPHA: "RGBA"}


def _read_mode(mode):
    if isinstance(mode, str):
        mode = ImageReadMode[mode.upper()]
    return mode


@_jit_ignore
def _read_file(path) -> Tensor:
    with open(os.fspath(path), "rb") as f:
        data = f.read()
    return ember.from_numpy(np.frombuffer(data, dtype=np.uint8).copy())


@_jit_ignore
def _write_file(filename, data) -> None:
    with open(os.fspath(filename), "wb") as f:
        f.write(data.detach().numpy().astype(np.uint8).tobytes())


def read_file(path: str) -> Tensor:
    """Bytes of a file as a 1-D uint8 tensor."""
    return _read_file(path)


def write_file(filename: str, data: Tensor) -> None:
    """Write a 1-D uint8 tensor to a file."""
    _write_file(filename, data)


def _as_bytes(input):
    if isinstance(input, (str, os.PathLike)):
        input = read_file(input)
    if isinstance(input, (bytes, bytearray)):
        return bytes(input)
    if not isinstance(input, ember.Tensor) or input.dtype != ember.uint8 or input.dim() != 1:
        raise RuntimeError("Expected a 1 dimensional uint8 tensor with the encoded image bytes")
    return input.detach().numpy().tobytes()


def _decode(data, mode, apply_exif_orientation, expect=None):
    Image = _pil()
    mode = _read_mode(mode)
    try:
        im = Image.open(_io.BytesIO(data))
        im.load()
    except Exception as e:
        raise RuntimeError(f"Unsupported image file or corrupt data: {e}") from e
    if expect is not None and im.format != expect:
        raise RuntimeError(f"Expected a {expect} image, got {im.format}")
    if apply_exif_orientation:
        im = _pil_module("ImageOps").exif_transpose(im)
    if mode != ImageReadMode.UNCHANGED:
        im = im.convert(_MODE_TO_PIL[mode])
    elif im.mode == "P":
        im = im.convert("RGBA" if "transparency" in im.info else "RGB")
    elif im.mode in ("1", "CMYK", "YCbCr"):
        im = im.convert("L" if im.mode == "1" else "RGB")
    elif im.mode == "PA":
        im = im.convert("RGBA")
    if im.mode.startswith("I;16"):
        arr = np.array(im, dtype=np.uint16)
        dtype = np.uint16 if hasattr(ember, "uint16") else np.int32
        arr = arr.astype(dtype)
    elif im.mode == "I":
        arr = np.array(im).astype(np.uint16 if hasattr(ember, "uint16") else np.int32)
    else:
        arr = np.array(im, dtype=np.uint8)
    if arr.ndim == 2:
        arr = arr[:, :, None]
    return ember.from_numpy(np.ascontiguousarray(arr.transpose(2, 0, 1)))


@_jit_ignore
def _decode_image(input, mode, apply_exif_orientation, expect=None) -> Tensor:
    return _decode(_as_bytes(input), mode, apply_exif_orientation, expect)


@_jit_ignore
def _decode_jpeg(input, mode, device, apply_exif_orientation) -> Tensor:
    if isinstance(input, list):
        return [_decode_jpeg(x, mode, device, apply_exif_orientation) for x in input]
    return _decode(_as_bytes(input), mode, apply_exif_orientation, expect="JPEG")


def decode_image(input: Tensor, mode: ImageReadMode = ImageReadMode.UNCHANGED,
                 apply_exif_orientation: bool = False) -> Tensor:
    """Decode PNG/JPEG/GIF/WEBP/... bytes (1-D uint8 tensor) or a path into a (C, H, W) tensor."""
    return _decode_image(input, mode, apply_exif_orientation)


def decode_png(input: Tensor, mode: ImageReadMode = ImageReadMode.UNCHANGED,
               apply_exif_orientation: bool = False) -> Tensor:
    """PNG bytes (1-D uint8 tensor) -> (C, H, W) tensor."""
    return _decode_image(input, mode, apply_exif_orientation, "PNG")


def decode_jpeg(input: Tensor, mode: ImageReadMode = ImageReadMode.UNCHANGED, device: str = "cpu",
                apply_exif_orientation: bool = False) -> Tensor:
    """JPEG bytes (1-D uint8 tensor; eager: or a list of them) -> (C, H, W) uint8 tensor."""
    return _decode_jpeg(input, mode, device, apply_exif_orientation)


def read_image(path: str, mode: ImageReadMode = ImageReadMode.UNCHANGED,
               apply_exif_orientation: bool = False) -> Tensor:
    """The image file at ``path`` as a (C, H, W) tensor (uint8; 16-bit PNGs: uint16)."""
    data = read_file(path)
    return decode_image(data, mode, apply_exif_orientation)


def _to_pil(input, allow_16bit=False):
    Image = _pil()
    if not isinstance(input, ember.Tensor) or input.dim() != 3:
        raise RuntimeError("Input should be a 3 dimensional (C, H, W) tensor")
    if input.dtype != ember.uint8 and not (allow_16bit and input.dtype == getattr(ember, "uint16", None)):
        raise RuntimeError(f"Input tensor dtype should be uint8, got {input.dtype}")
    c = input.shape[0]
    arr = np.ascontiguousarray(input.detach().permute(1, 2, 0).numpy())
    if arr.dtype == np.uint16:
        if c != 1:
            raise RuntimeError("16-bit images must have a single channel")
        return Image.fromarray(arr[:, :, 0])
    if c == 1:
        return Image.fromarray(arr[:, :, 0])
    if c == 2:
        return Image.frombuffer(
            "LA", (arr.shape[1], arr.shape[0]), arr.tobytes(), "raw", "LA", 0, 1)
    if c in (3, 4):
        return Image.fromarray(arr)
    raise RuntimeError(f"The number of channels should be 1, 2, 3 or 4, got {c}")


@_jit_ignore
def _encode_png(input, compression_level) -> Tensor:
    if not 0 <= compression_level <= 9:
        raise RuntimeError("Compression level should be between 0 and 9")
    buf = _io.BytesIO()
    _to_pil(input, allow_16bit=True).save(buf, format="PNG", compress_level=compression_level)
    return ember.from_numpy(np.frombuffer(buf.getvalue(), dtype=np.uint8).copy())


@_jit_ignore
def _encode_jpeg(input, quality) -> Tensor:
    if isinstance(input, list):
        return [_encode_jpeg(x, quality) for x in input]
    if not 1 <= quality <= 100:
        raise ValueError("Image quality should be a positive number between 1 and 100")
    if input.dim() == 3 and input.shape[0] not in (1, 3):
        raise RuntimeError("The number of channels should be 1 or 3")
    buf = _io.BytesIO()
    _to_pil(input).save(buf, format="JPEG", quality=quality)
    return ember.from_numpy(np.frombuffer(buf.getvalue(), dtype=np.uint8).copy())


def encode_png(input: Tensor, compression_level: int = 6) -> Tensor:
    """(C, H, W) uint8 tensor -> 1-D uint8 tensor holding PNG bytes."""
    return _encode_png(input, compression_level)


def encode_jpeg(input: Tensor, quality: int = 75) -> Tensor:
    """(C, H, W) uint8 tensor (1 or 3 channels; eager: or a list) -> 1-D uint8 JPEG bytes."""
    return _encode_jpeg(input, quality)


def write_png(input: Tensor, filename: str, compression_level: int = 6) -> None:
    """Encode (C, H, W) uint8 ``input`` as PNG into the file ``filename``."""
    write_file(filename, encode_png(input, compression_level))


def write_jpeg(input: Tensor, filename: str, quality: int = 75) -> None:
    """Encode (C, H, W) uint8 ``input`` as JPEG into the file ``filename``."""
    write_file(filename, encode_jpeg(input, quality))
