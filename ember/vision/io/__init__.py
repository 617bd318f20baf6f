"""torchvision.io image functions for ember, via Pillow (``pip install 'ember[images]'``)."""
from .image import (ImageReadMode, decode_image, decode_jpeg, decode_png, encode_jpeg, encode_png,
                    read_file, read_image, write_file, write_jpeg, write_png)

__all__ = ["ImageReadMode", "decode_image", "decode_jpeg", "decode_png", "encode_jpeg",
           "encode_png", "read_file", "read_image", "write_file", "write_jpeg", "write_png"]
