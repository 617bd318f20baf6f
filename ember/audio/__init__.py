"""ember.audio: the torchaudio stand-in (``python -m ember.run`` maps ``torchaudio`` here).

Submodules load on first use: ``functional``, ``transforms``, ``datasets``, ``models``.
``load``/``save``/``info`` read and write WAV and FLAC through ``soundfile``
(``pip install 'ember[audio]'``)."""
import importlib

__version__ = "2.13.0"

_SUBMODULES = ("functional", "transforms", "datasets", "models")

from ember.audio._io import AudioMetaData, info, load, save  # noqa: E402,F401


def __getattr__(name):
    if name in _SUBMODULES:
        mod = importlib.import_module(f"{__name__}.{name}")
        globals()[name] = mod
        return mod
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_SUBMODULES))


def list_audio_backends():
    """``["soundfile"]`` when soundfile imports, else ``[]``."""
    try:
        import soundfile  # noqa: F401
    except ImportError:
        return []
    return ["soundfile"]
