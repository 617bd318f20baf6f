"""Decoders for ``(key, bytes or stream)`` samples, chosen by the key's file extension.

A handler is ``handler(extension, data) -> value or None``; the first handler with an
answer wins and data nobody takes is returned unchanged.
"""
import io
import json
import os
import pickle

import numpy as np

import ember
from ember.utils.data.datapipes.utils.common import StreamWrapper

__all__ = ["Decoder", "ImageHandler", "basichandlers", "extension_extract_fn",
           "imagehandler"]


def _int_or_none(data):
    try:
        return int(data)
    except ValueError:
        return None


# (extensions, decode). A str is matched by substring (so "" and "t" count as text, as in
# torch), a tuple by membership.
_BASIC_TABLE = (
    ("txt text transcript", lambda data: data.decode("utf-8")),
    (("cls", "cls2", "class", "count", "index", "inx", "id"), _int_or_none),
    ("json jsn", json.loads),
    (("pyd", "pickle"), pickle.loads),
    (("pt",), lambda data: ember.load(io.BytesIO(data))),
)


def basichandlers(extension: str, data):
    """Text, integers, JSON, pickles and ``ember.save`` files by extension; else None."""
    for extensions, decode in _BASIC_TABLE:
        if extension in extensions:
            return decode(data)
    return None


def _image_specs():
    """imagespec -> (result kind, element type, PIL mode): ``l8``/``rgb8``/``rgba8`` are
    uint8 numpy, ``l``/``rgb``/``rgba`` float numpy, ``torch*`` the same as ember tensors,
    ``pil*`` PIL images."""
    table = {}
    for mode in ("l", "rgb", "rgba"):
        for prefix, kind in (("", "numpy"), ("torch", "torch")):
            table[prefix + mode + "8"] = (kind, "uint8", mode)
            table[prefix + mode] = (kind, "float", mode)
        table["pil" + mode] = ("pil", None, mode)
    table["torch"] = ("torch", "float", "rgb")
    table["pil"] = ("pil", None, "rgb")
    return table


imagespecs = _image_specs()
_IMAGE_EXTENSIONS = frozenset(("jpg", "jpeg", "png", "ppm", "pgm", "pbm", "pnm"))


def _pil():
    try:
        import PIL.Image
    except ImportError as e:
        raise ModuleNotFoundError("Package `PIL` is required to be installed for default "
                                  "image decoder. Please use `pip install Pillow` to "
                                  "install the package") from e
    return PIL.Image


class ImageHandler:
    """Decode image files with PIL into ``imagespec``'s form: numpy HWC (uint8, or float
    in [0, 1]), ember CHW tensors (``torch*``) or a PIL image."""

    def __init__(self, imagespec):
        assert imagespec in imagespecs, f"unknown image specification: {imagespec}"
        self.imagespec = imagespec.lower()

    def __call__(self, extension, data):
        if extension.lower() not in _IMAGE_EXTENSIONS:
            return None
        kind, element, mode = imagespecs[self.imagespec]
        with io.BytesIO(data) as buffer:
            picture = _pil().open(buffer)
            picture.load()
        picture = picture.convert(mode.upper())
        if kind == "pil":
            return picture
        pixels = np.asarray(picture)
        if element == "float":
            pixels = pixels.astype(np.float32) / 255.0
        if kind == "numpy":
            return pixels
        as_tensor = ember.tensor(np.ascontiguousarray(pixels))
        return as_tensor if as_tensor.ndim != 3 else as_tensor.permute(2, 0, 1)


def imagehandler(imagespec):
    return ImageHandler(imagespec)


def extension_extract_fn(pathname):
    """``"a/b.tar.gz"`` -> ``"gz"``; ``""`` without an extension."""
    return os.path.splitext(pathname)[1][1:]


def _is_open_stream(data) -> bool:
    raw = data.file_obj if isinstance(data, StreamWrapper) else data
    return isinstance(raw, (io.BufferedIOBase, io.RawIOBase))


def _read_and_close(stream) -> bytes:
    content = b"".join(stream)
    stream.close()
    return content


class Decoder:
    """Decode ``(key, data)`` pairs: the first of ``handlers`` that answers for
    ``key_fn(key)`` wins. Keys starting with ``_`` holding bytes are decoded as UTF-8."""

    def __init__(self, *handler, key_fn=extension_extract_fn):
        self.handlers = list(handler)
        self.key_fn = key_fn

    def add_handler(self, *handler):
        """Put ``handler`` ahead of the present ones."""
        self.handlers[:0] = handler

    def decode1(self, key, data):
        """One value: ``data`` (read out first when it is an open stream) through the
        handlers; empty data comes back as is."""
        if not data:
            return data
        if _is_open_stream(data):
            data = _read_and_close(data)
        answers = (handler(key, data) for handler in self.handlers)
        return next((a for a in answers if a is not None), data)

    def decode(self, data):
        """``{key: decoded}`` for one ``(key, data)`` pair or an iterable of them."""
        pairs = [data] if isinstance(data, tuple) else (data or ())
        decoded = {}
        for key, value in pairs:
            if key.startswith("_") and isinstance(value, bytes):
                decoded[key] = value.decode("utf-8")
            else:
                decoded[key] = self.decode1(self.key_fn(key), value)
        return decoded

    def __call__(self, data):
        return self.decode(data)
