"""torch.accelerator: the device-agnostic accelerator API. ember has no accelerator (as a
CPU-only torch build): nothing is available, and anything needing a device raises."""
from __future__ import annotations

import warnings

__all__ = ["current_accelerator", "current_device_idx", "current_device_index",
           "current_stream", "device_count", "device_index", "empty_cache",
           "empty_host_cache", "get_device_capability", "get_memory_info", "is_available",
           "max_memory_allocated", "max_memory_reserved", "memory_allocated",
           "memory_reserved", "memory_stats", "reset_accumulated_memory_stats",
           "reset_peak_memory_stats", "set_device_idx", "set_device_index", "set_stream",
           "synchronize"]

_NONE = "Cannot access accelerator device when none is available."


def _no_accelerator(*_, **__):
    raise RuntimeError(_NONE)


def is_available() -> bool:
    return False


def device_count() -> int:
    return 0


def current_accelerator(check_available: bool = False):
    """The accelerator's device type; None on a build without one."""
    return None


def _unavailable(name, doc):
    def fn(device=None):
        _no_accelerator()
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc + " (raises: no accelerator)"
    return fn


current_device_index = _unavailable("current_device_index", "Index of the current device.")
current_stream = _unavailable("current_stream", "The current stream of ``device``.")
synchronize = _unavailable("synchronize", "Wait for the device's work to finish.")
get_device_capability = _unavailable("get_device_capability", "The device's capabilities.")
get_memory_info = _unavailable("get_memory_info", "Free and total device memory.")
max_memory_allocated = _unavailable("max_memory_allocated", "Peak allocated memory.")
max_memory_reserved = _unavailable("max_memory_reserved", "Peak reserved memory.")
memory_allocated = _unavailable("memory_allocated", "Allocated memory.")
memory_reserved = _unavailable("memory_reserved", "Reserved memory.")
memory_stats = _unavailable("memory_stats", "The allocator's statistics.")
reset_accumulated_memory_stats = _unavailable("reset_accumulated_memory_stats",
                                              "Reset the allocator's counters.")
reset_peak_memory_stats = _unavailable("reset_peak_memory_stats", "Reset the peak counters.")


def empty_cache() -> None:
    _no_accelerator()


def empty_host_cache() -> None:
    _no_accelerator()


def set_device_index(device, /) -> None:
    _no_accelerator()


def set_stream(stream) -> None:
    _no_accelerator()


def current_device_idx():
    warnings.warn("Use `current_device_index` instead.", FutureWarning, stacklevel=2)
    return current_device_index()


def set_device_idx(device, /):
    warnings.warn("Use `set_device_index` instead.", FutureWarning, stacklevel=2)
    return set_device_index(device)


class device_index:
    """Context manager making ``device`` current; ``None`` does nothing."""

    def __init__(self, device, /):
        self.idx = device

    def __enter__(self):
        if self.idx is not None:
            _no_accelerator()
        return self

    def __exit__(self, *exc):
        return False
