"""Deterministic-algorithms switch (torch.use_deterministic_algorithms).

ember's CPU backend is bit-identical run to run; the switch exists for parity with torch:
ops whose records say ``nondeterministic=True`` (they would be nondeterministic on a GPU)
raise torch's RuntimeError — or warn with ``warn_only=True`` — while it is on (the check
lives in ``ember._dispatch``), and ``empty``-like factories fill their memory with NaN
(floating/complex) or the dtype's maximum (integers) when
``ember.utils.deterministic.fill_uninitialized_memory`` is True (the default; the fill is
part of those op records' kernels, ``ember/_ops/factory.py``). See
docs/DETERMINISM.md.
"""
from __future__ import annotations

import numpy as np

from ember import _dispatch
from ember.utils import deterministic as _flags

__all__ = ["use_deterministic_algorithms", "are_deterministic_algorithms_enabled",
           "is_deterministic_algorithms_warn_only_enabled"]


def use_deterministic_algorithms(mode, *, warn_only=False):
    """Turn deterministic algorithms on or off (``warn_only``: warn instead of raising)."""
    if not isinstance(mode, bool):
        raise TypeError(f"use_deterministic_algorithms(): argument 'mode' (position 1) must be "
                        f"bool, not {type(mode).__name__}")
    if not isinstance(warn_only, bool):
        raise TypeError(f"use_deterministic_algorithms(): argument 'warn_only' must be bool, "
                        f"not {type(warn_only).__name__}")
    _dispatch._deterministic[0] = mode
    _dispatch._deterministic[1] = bool(mode and warn_only)


def are_deterministic_algorithms_enabled():
    return bool(_dispatch._deterministic[0])


def is_deterministic_algorithms_warn_only_enabled():
    return bool(_dispatch._deterministic[1])


def _fill_value(dt):
    if dt.kind in "fc":
        return np.nan
    if dt.kind == "b":
        return True
    return np.iinfo(dt).max


def fill_uninitialized(arr):
    """``empty``'s memory under deterministic mode (torch's ``fill_uninitialized_memory``):
    NaN for floating/complex dtypes, the maximum for integers, True for bool. Called by the
    ``empty`` family's op records, so every way of reaching them fills."""
    if _dispatch._deterministic[0] and _flags.fill_uninitialized_memory and arr.size:
        arr[...] = _fill_value(arr.dtype)
    return arr
