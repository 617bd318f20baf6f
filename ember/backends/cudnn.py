"""torch.backends.cudnn: ember has no cuDNN. The flags keep torch's defaults and are settable
(``torch.backends.cudnn.benchmark = True`` is recorded and changes nothing)."""
from __future__ import annotations

import contextlib

__all__ = ["enabled", "benchmark", "benchmark_limit", "deterministic", "allow_tf32",
           "fp32_precision", "is_available", "version", "is_acceptable", "flags", "set_flags"]

enabled = True
benchmark = False
benchmark_limit = None       # torch reports None when cuDNN is not compiled in
deterministic = False
allow_tf32 = True
fp32_precision = "none"

_FLAG_NAMES = ("enabled", "benchmark", "benchmark_limit", "deterministic", "allow_tf32",
               "fp32_precision")


def is_available():
    """Whether cuDNN can be used: never in ember."""
    return False


def version():
    """The cuDNN version; ``None`` since ember has no cuDNN."""
    return None


def is_acceptable(tensor):
    """Whether cuDNN would accept ``tensor``: never (no CUDA tensors exist in ember)."""
    return False


def set_flags(_enabled=None, _benchmark=None, _benchmark_limit=None, _deterministic=None,
              _allow_tf32=None, _fp32_precision="none"):
    """Set the flags given (``None`` leaves one as is); returns the previous values."""
    g = globals()
    orig = tuple(g[n] for n in _FLAG_NAMES)
    for name, value in zip(_FLAG_NAMES, (_enabled, _benchmark, _benchmark_limit,
                                         _deterministic, _allow_tf32, None)):
        if value is not None:
            g[name] = value
    if _fp32_precision is not None and _fp32_precision != "none":
        g["fp32_precision"] = _fp32_precision
    return orig


@contextlib.contextmanager
def flags(enabled=False, benchmark=False, benchmark_limit=10, deterministic=False,
          allow_tf32=True, fp32_precision="none"):
    """Set the cuDNN flags inside a ``with`` block and restore them afterwards."""
    g = globals()
    old = {n: g[n] for n in _FLAG_NAMES}
    try:
        g.update(enabled=enabled, benchmark=benchmark, deterministic=deterministic,
                 allow_tf32=allow_tf32, fp32_precision=fp32_precision)
        if benchmark_limit is not None:
            g["benchmark_limit"] = benchmark_limit if old["benchmark_limit"] is not None \
                else None
        yield
    finally:
        g.update(old)
