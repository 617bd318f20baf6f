"""torch.multiprocessing: Python's ``multiprocessing`` API plus ``spawn`` /
``start_processes`` and the tensor sharing-strategy switches.

A tensor moved into shared memory (``Tensor.share_memory_``, ``Module.share_memory``) is
shared with the processes forked after it (Hogwild training works as torch's); a tensor
sent to a spawned process, or through a queue, is pickled by value (no storage handle is
handed over), so the sharing strategy is recorded only.
"""
from __future__ import annotations

import multiprocessing
import sys
from multiprocessing import *  # noqa: F401,F403

from ember.multiprocessing.spawn import (  # noqa: F401
    ProcessContext, ProcessException, ProcessExitedException, ProcessRaisedException,
    SpawnContext, spawn, start_processes)

__all__ = ["set_sharing_strategy", "get_sharing_strategy", "get_all_sharing_strategies",
           "spawn", "start_processes", "ProcessContext", "SpawnContext",
           "ProcessException", "ProcessRaisedException", "ProcessExitedException",
           "init_reductions"]
__all__ += multiprocessing.__all__  # type: ignore[attr-defined]

# macOS and Windows offer only the file-system strategy; the first entry is the default
_STRATEGIES = ("file_system",) if sys.platform in ("darwin", "win32") else \
    ("file_descriptor", "file_system")
_current = {"strategy": _STRATEGIES[0]}


def set_sharing_strategy(new_strategy):
    """Set the strategy for sharing CPU tensors between processes (recorded only: ember
    pickles tensors by value)."""
    if new_strategy in _STRATEGIES:
        _current["strategy"] = new_strategy
        return
    raise AssertionError(f"invalid sharing strategy {new_strategy!r}; choose from "
                         f"{sorted(_STRATEGIES)}")


def get_sharing_strategy():
    """The current strategy for sharing CPU tensors."""
    return _current["strategy"]


def get_all_sharing_strategies():
    """The set of sharing strategies this platform supports."""
    return set(_STRATEGIES)


def init_reductions():
    """torch registers tensor reducers for shared memory here; ember needs none."""
