"""torch.set_float32_matmul_precision / get_float32_matmul_precision.

ember's float32 matmuls always run in full float32 (NumPy's BLAS): the setting is recorded
and mirrored into ``torch.backends.cuda.matmul.allow_tf32`` (True below "highest") as torch
does, and changes no result.
"""
from __future__ import annotations

import warnings

__all__ = ["set_float32_matmul_precision", "get_float32_matmul_precision"]

_PRECISIONS = ("highest", "high", "medium")
_current = ["highest"]


def set_float32_matmul_precision(precision):
    """Record ``precision`` ("highest", "high" or "medium"); another string warns and is
    ignored, like torch."""
    if not isinstance(precision, str):
        raise RuntimeError(f"set_float32_matmul_precision expects a str, but got "
                           f"{type(precision).__name__}")
    if precision not in _PRECISIONS:
        warnings.warn(f"{precision} is not one of 'highest', 'high', or 'medium'; the current "
                      f"setFloat32MatmulPrecision call has no effect.", UserWarning,
                      stacklevel=2)
        return
    _current[0] = precision
    from ember.backends import cuda
    cuda.matmul.allow_tf32 = precision != "highest"


def get_float32_matmul_precision():
    """The precision last set (default "highest")."""
    return _current[0]
