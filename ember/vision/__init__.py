"""ember.vision: the torchvision stand-in (``python -m ember.run`` maps ``torchvision`` here).

Submodules are imported lazily: ``transforms``, ``utils``, ``io``, ``models``, ``datasets``,
``ops``. Image decoding/encoding needs Pillow (``pip install 'ember[images]'``)."""
import importlib

__version__ = "0.28.0"

_SUBMODULES = ("transforms", "utils", "io", "models", "datasets", "ops")

_image_backend = "PIL"
_video_backend = "pyav"


def __getattr__(name):
    if name in _SUBMODULES:
        mod = importlib.import_module(f"{__name__}.{name}")
        globals()[name] = mod
        return mod
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_SUBMODULES))


def set_image_backend(backend):
    global _image_backend
    if backend not in ("PIL", "accimage"):
        raise ValueError(f"Invalid backend '{backend}'. Options are 'PIL' and 'accimage'")
    _image_backend = backend


def get_image_backend():
    return _image_backend


def set_video_backend(backend):
    global _video_backend
    _video_backend = backend


def get_video_backend():
    return _video_backend
