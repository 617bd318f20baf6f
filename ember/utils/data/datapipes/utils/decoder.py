"""Decoders for ``(path, bytes or stream)`` samples, chosen by file extension.

A handler is ``handler(extension, data) -> value or None``; the first that answers wins,
and data no handler takes is returned as is.
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


def basichandlers(extension: str, data):
    """Text, integers, JSON, pickles and ``ember.save`` files. ``extension`` is matched as
    a substring of the text list (so ``""`` and ``"t"`` count as text), as torch does."""
    if extension in "txt text transcript":
        return data.decode("utf-8")
    if extension in "cls cls2 class count index inx id".split():
        try:
            return int(data)
        except ValueError:
            return None
    if extension in "json jsn":
        return json.loads(data)
    if extension in "pyd pickle".split():
        return pickle.loads(data)
    if extension in "pt".split():
        return ember.load(io.BytesIO(data))
    return None


# imagespec -> (result kind, element type, PIL mode)
imagespecs = {
    "l8": ("numpy", "uint8", "l"), "rgb8": ("numpy", "uint8", "rgb"),
    "rgba8": ("numpy", "uint8", "rgba"), "l": ("numpy", "float", "l"),
    "rgb": ("numpy", "float", "rgb"), "rgba": ("numpy", "float", "rgba"),
    "torchl8": ("torch", "uint8", "l"), "torchrgb8": ("torch", "uint8", "rgb"),
    "torchrgba8": ("torch", "uint8", "rgba"), "torchl": ("torch", "float", "l"),
    "torchrgb": ("torch", "float", "rgb"), "torch": ("torch", "float", "rgb"),
    "torchrgba": ("torch", "float", "rgba"), "pill": ("pil", None, "l"),
    "pil": ("pil", None, "rgb"), "pilrgb": ("pil", None, "rgb"),
    "pilrgba": ("pil", None, "rgba"),
}


class ImageHandler:
    """Decode jpg/png/ppm/pgm/pbm/pnm with PIL into ``imagespec``'s form: numpy HWC
    (uint8, or float in [0, 1]), ember CHW tensors (``torch*``), or a PIL image."""

    def __init__(self, imagespec):
        assert imagespec in imagespecs, f"unknown image specification: {imagespec}"
        self.imagespec = imagespec.lower()

    def __call__(self, extension, data):
        if extension.lower() not in "jpg jpeg png ppm pgm pbm pnm".split():
            return None
        try:
            import PIL.Image
        except ImportError as e:
            raise ModuleNotFoundError("Package `PIL` is required to be installed for default "
                                      "image decoder. Please use `pip install Pillow` to "
                                      "install the package") from e
        kind, etype, mode = imagespecs[self.imagespec]
        with io.BytesIO(data) as stream:
            img = PIL.Image.open(stream)
            img.load()
            img = img.convert(mode.upper())
        if kind == "pil":
            return img
        result = np.asarray(img)
        if etype == "float":
            result = result.astype(np.float32) / 255.0
        if kind == "numpy":
            return result
        tensor = ember.tensor(np.ascontiguousarray(result))
        return tensor.permute(2, 0, 1) if tensor.ndim == 3 else tensor


def imagehandler(imagespec):
    return ImageHandler(imagespec)


def extension_extract_fn(pathname):
    """``"a/b.tar.gz"`` -> ``"gz"``; ``""`` when there is no extension."""
    ext = os.path.splitext(pathname)[1]
    return ext[1:] if ext else ext


class Decoder:
    """Apply the first handler that accepts each ``(key, data)``; ``key_fn`` maps the key
    to what handlers see (for instance the extension)."""

    def __init__(self, *handler, key_fn=extension_extract_fn):
        self.handlers = list(handler) if handler else []
        self.key_fn = key_fn

    def add_handler(self, *handler):
        if not handler:
            return
        self.handlers = list(handler) + self.handlers

    @staticmethod
    def _is_stream_handle(data):
        obj_to_check = data.file_obj if isinstance(data, StreamWrapper) else data
        return isinstance(obj_to_check, (io.BufferedIOBase, io.RawIOBase))

    def decode1(self, key, data):
        if not data:
            return data
        if Decoder._is_stream_handle(data):
            ds = data
            data = b"".join(data)
            ds.close()
        for f in self.handlers:
            result = f(key, data)
            if result is not None:
                return result
        return data

    def decode(self, data):
        result = {}
        if isinstance(data, tuple):
            data = [data]
        if data is not None:
            for k, v in data:
                if k[0] == "_":
                    if isinstance(v, bytes):
                        v = v.decode("utf-8")
                        result[k] = v
                        continue
                result[k] = self.decode1(self.key_fn(k), v)
        return result

    def __call__(self, data):
        return self.decode(data)
