"""Fuser settings of ``torch.jit``. ember's compiler has no fusion backend — its array fast
path plays that part (``_fastpath.py``) — so these record and report settings exactly as
torch's API does, and change nothing else."""
from __future__ import annotations

import contextlib

_strategy = [("STATIC", 2), ("DYNAMIC", 10)]
_onednn = [False]


def set_fusion_strategy(strategy):
    """Set the list of (``"STATIC"``|``"DYNAMIC"``, depth) pairs; returns the previous one."""
    global _strategy
    for kind, _depth in strategy:
        if kind not in ("STATIC", "DYNAMIC"):
            raise ValueError(f"FusionBehavior only supported 'STATIC' or 'DYNAMIC', got: {kind}")
    previous, _strategy = _strategy, [tuple(s) for s in strategy]
    return previous


def enable_onednn_fusion(enabled: bool):
    _onednn[0] = bool(enabled)


def onednn_fusion_enabled():
    return _onednn[0]


class strict_fusion:
    """``with torch.jit.strict_fusion():`` — a no-op outside scripted code, as in torch."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


@contextlib.contextmanager
def fuser(name):
    """``with torch.jit.fuser("fuser0"|"fuser1"|"fuser2"|"fuser3"|"none"):``."""
    if name not in ("fuser0", "fuser1", "fuser2", "fuser3", "none"):
        raise Exception(f"unrecognized fuser option (name: {name})")   # torch's class
    yield


def interface(obj):
    """``@torch.jit.interface``: declares a module or class interface (scripted code may
    then annotate values with it). ember types such values by their methods when called."""
    if not isinstance(obj, type):
        raise RuntimeError("interface must be applied to a class")
    obj.__torch_script_interface__ = True
    return obj
