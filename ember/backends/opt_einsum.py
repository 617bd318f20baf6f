"""torch.backends.opt_einsum: whether the ``opt_einsum`` package can order einsum
contractions. ember's einsum goes through NumPy; the flags are recorded."""
from __future__ import annotations

import contextlib
import importlib.util

__all__ = ["is_available", "get_opt_einsum", "enabled", "strategy", "flags", "set_flags"]

_available = importlib.util.find_spec("opt_einsum") is not None


def is_available():
    """True when the ``opt_einsum`` package is installed."""
    return _available


def get_opt_einsum():
    """The ``opt_einsum`` module when installed, else ``None``."""
    if not _available:
        return None
    import opt_einsum
    return opt_einsum


enabled = _available
strategy = "auto" if _available else None

_STRATEGIES = ("auto", "greedy", "optimal")


def set_flags(_enabled=None, _strategy=None):
    global enabled, strategy
    orig = (enabled, strategy)
    if _enabled is not None:
        if _enabled and not _available:
            raise ValueError("opt_einsum is not available, so setting `enabled` to True "
                             "will not reap the benefits of calculating an optimal path "
                             "for einsum. Install opt_einsum to use it.")
        enabled = bool(_enabled)
    if _strategy is not None:
        if not _available:
            raise ValueError("opt_einsum is not available, so setting `strategy` will "
                             "not meaningfully change anything.")
        if _strategy not in _STRATEGIES:
            raise ValueError(f"strategy must be one of the following: {_STRATEGIES} "
                             f"but got {_strategy}")
        strategy = _strategy
    return orig


@contextlib.contextmanager
def flags(enabled=None, strategy=None):
    """Set the flags inside a ``with`` block and restore them afterwards."""
    orig = set_flags(enabled, strategy)
    try:
        yield
    finally:
        globals().update(enabled=orig[0], strategy=orig[1])
