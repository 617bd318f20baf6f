"""Deterministic-algorithms switch (torch.use_deterministic_algorithms).

ember's CPU backend is bit-identical run to run; the switch exists for parity with torch:
ops whose records say ``nondeterministic=True`` (they would be nondeterministic on a GPU)
raise torch's RuntimeError — or warn with ``warn_only=True`` — while it is on (the check
lives in ``ember._dispatch``), and ``empty``-like factories fill their memory with NaN
(floating/complex) or the dtype's maximum (integers) when
``ember.utils.deterministic.fill_uninitialized_memory`` is True (the default). See
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


def _fill(t):
    if _dispatch._deterministic[0] and _flags.fill_uninitialized_memory and t._data.size:
        t._data[...] = _fill_value(t._data.dtype)
    return t


def _wrap_empty(fn):
    import functools

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        r = fn(*args, **kwargs)
        return _fill(r)
    wrapper._ember_deterministic_fill = True
    return wrapper


def install(namespace, tensor_cls):
    """Wrap the ``empty`` family so it fills memory under deterministic mode."""
    for name in ("empty", "empty_like", "empty_strided"):
        f = namespace.get(name)
        if f is not None and not getattr(f, "_ember_deterministic_fill", False):
            namespace[name] = _wrap_empty(f)
    for name in ("new_empty", "new_empty_strided"):
        f = getattr(tensor_cls, name, None)
        if f is not None and not getattr(f, "_ember_deterministic_fill", False):
            setattr(tensor_cls, name, _wrap_empty(f))
