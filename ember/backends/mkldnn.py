"""torch.backends.mkldnn: ember does not use oneDNN (all kernels are NumPy)."""
from __future__ import annotations

import contextlib

__all__ = ["is_available", "enabled", "deterministic", "allow_tf32", "flags", "set_flags"]

enabled = True
deterministic = False
allow_tf32 = False
fp32_precision = "none"

_FLAG_NAMES = ("enabled", "deterministic", "allow_tf32", "fp32_precision")


def is_available():
    """Whether oneDNN (MKL-DNN) kernels are available: not in ember."""
    return False


def set_flags(_enabled=None, _deterministic=None, _allow_tf32=None, _fp32_precision="none"):
    g = globals()
    orig = tuple(g[n] for n in _FLAG_NAMES)
    for name, value in zip(_FLAG_NAMES[:3], (_enabled, _deterministic, _allow_tf32)):
        if value is not None:
            g[name] = value
    if _fp32_precision is not None and _fp32_precision != "none":
        g["fp32_precision"] = _fp32_precision
    return orig


@contextlib.contextmanager
def flags(enabled=False, deterministic=False, allow_tf32=True, fp32_precision="none"):
    """Set the flags inside a ``with`` block and restore them afterwards."""
    g = globals()
    old = {n: g[n] for n in _FLAG_NAMES}
    try:
        g.update(enabled=enabled, deterministic=deterministic, allow_tf32=allow_tf32,
                 fp32_precision=fp32_precision)
        yield
    finally:
        g.update(old)
