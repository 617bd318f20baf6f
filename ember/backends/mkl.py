"""torch.backends.mkl: whether ember's BLAS is Intel MKL (NumPy's BLAS decides)."""
from __future__ import annotations

import contextlib

__all__ = ["is_available", "verbose", "VERBOSE_OFF", "VERBOSE_ON"]

VERBOSE_OFF = 0
VERBOSE_ON = 1

_available = None


def is_available():
    """True when the NumPy ember runs on is linked against Intel MKL."""
    global _available
    if _available is None:
        try:
            import numpy as np
            cfg = np.show_config(mode="dicts")
            blas = cfg.get("Build Dependencies", {}).get("blas", {})
            _available = "mkl" in str(blas.get("name", "")).lower()
        except Exception:
            _available = False
    return _available


class verbose(contextlib.ContextDecorator):
    """On-demand MKL verbose output: accepted and ignored."""

    def __init__(self, enable):
        self.enable = enable

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False
