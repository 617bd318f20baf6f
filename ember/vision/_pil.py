"""Lazy Pillow import with a clear hint naming the optional extra."""

_HINT = "pip install 'ember[images]'"


def pil():
    try:
        from PIL import Image
    except ImportError as e:
        raise ImportError(f"ember.vision needs Pillow for PIL images and image files: {_HINT}") from e
    return Image


def pil_module(name):
    pil()
    import importlib
    return importlib.import_module(f"PIL.{name}")


def is_pil_image(img):
    try:
        from PIL import Image
    except ImportError:
        return False
    return isinstance(img, Image.Image)
