"""Deterministic-algorithms switch (torch.use_deterministic_algorithms).

ember's CPU backend is bit-identical run to run; the switch exists for parity with torch on
the CPU: the few ops torch refuses there (``put_`` without ``accumulate``, ``max_unpool``;
their records say ``nondeterministic=``, or they call ``alert_not_deterministic``) raise
torch's RuntimeError — or warn with ``warn_only=True`` — while it is on, and ``empty``-like factories fill their memory with NaN
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
           "is_deterministic_algorithms_warn_only_enabled", "set_deterministic_debug_mode",
           "get_deterministic_debug_mode"]

_ALERT = ("{} does not have a deterministic implementation, but you set "
          "'torch.use_deterministic_algorithms(True)'. You can turn off determinism just for "
          "this operation, or you can use the 'warn_only=True' option, if that's acceptable "
          "for your application. You can also file an issue at "
          "https://github.com/pytorch/pytorch/issues to help us prioritize adding "
          "deterministic support for this operation.")


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


_DEBUG_MODES = {"default": 0, "warn": 1, "error": 2}


def set_deterministic_debug_mode(debug_mode):
    """The switch as a level: "default"/0 off, "warn"/1 on with warnings, "error"/2 on."""
    if isinstance(debug_mode, str):
        if debug_mode not in _DEBUG_MODES:
            raise RuntimeError(f"invalid value of debug_mode, expected one of `default`, "
                               f"`warn`, `error`, but got {debug_mode}")
        debug_mode = _DEBUG_MODES[debug_mode]
    elif not isinstance(debug_mode, int) or isinstance(debug_mode, bool):
        raise TypeError(f"debug_mode must be str or int, but got {type(debug_mode)}")
    if debug_mode not in (0, 1, 2):
        raise RuntimeError(f"invalid value of debug_mode, expected 0, 1, or 2, but got "
                           f"{debug_mode}")
    use_deterministic_algorithms(debug_mode > 0, warn_only=debug_mode == 1)


def get_deterministic_debug_mode():
    """0, 1 or 2 (see ``set_deterministic_debug_mode``)."""
    if not are_deterministic_algorithms_enabled():
        return 0
    return 1 if is_deterministic_algorithms_warn_only_enabled() else 2


def alert_not_deterministic(name, stacklevel=3):
    """While the switch is on: raise torch's RuntimeError for op ``name`` (a UserWarning with
    ``warn_only``)."""
    enabled, warn_only = _dispatch._deterministic
    if not enabled:
        return
    if warn_only:
        import warnings
        warnings.warn(_ALERT.format(name), UserWarning, stacklevel=stacklevel)
    else:
        raise RuntimeError(_ALERT.format(name))


def _fill_value(dt):
    if dt.kind in "fc":
        return np.nan
    if dt.kind == "b":
        return True
    return np.iinfo(dt).max


def fill_uninitialized(arr):
    """``empty``'s memory under deterministic mode (torch's ``fill_uninitialized_memory``):
    NaN for floating/complex dtypes, the maximum for integers, True for bool. Called by the
    ``empty`` family's op records, so every way of reaching them fills, and by ``resize_``
    on the elements it adds."""
    if _dispatch._deterministic[0] and _flags.fill_uninitialized_memory and arr.size:
        arr[...] = _fill_value(arr.dtype)
    return arr
