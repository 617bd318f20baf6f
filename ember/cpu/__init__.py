"""torch.cpu: the CPU device namespace (ember's only backend). Streams and events are
no-ops there, as in torch: one default stream, ``stream(s)`` makes ``s`` current."""
from ember.cpu import amp  # noqa: F401

__all__ = ["is_available", "is_initialized", "synchronize", "current_device", "current_stream",
           "stream", "set_device", "device_count", "Stream", "StreamContext", "Event",
           "get_capabilities"]


def is_available():
    return True


def is_initialized():
    return True


def device_count():
    return 1


def current_device():
    return "cpu"


def set_device(device):
    """Ignored: there is one CPU device."""


def synchronize(device=None):
    pass


class Stream:
    """A CPU stream: work is done when issued."""

    def __init__(self, priority=-1):
        self.priority = priority

    def wait_stream(self, stream):
        pass

    def wait_event(self, event):
        pass

    def record_event(self):
        pass


class Event:
    """A CPU event: always complete."""

    def query(self):
        return True

    def record(self, stream=None):
        pass

    def synchronize(self):
        pass

    def wait(self, stream=None):
        pass


_default_stream = Stream()
_current = [_default_stream]


def current_stream(device=None):
    """The stream made current by ``stream(...)``, else the default one."""
    return _current[0]


class StreamContext:
    """``with StreamContext(s):`` makes ``s`` current (None: leaves it as is)."""

    def __init__(self, stream):
        self.stream = stream
        self._prev = None

    def __enter__(self):
        if self.stream is not None:
            self._prev = _current[0]
            _current[0] = self.stream

    def __exit__(self, *exc):
        if self.stream is not None:
            _current[0] = self._prev
        return False


def stream(stream):
    return StreamContext(stream)


def get_capabilities():
    """A few of torch's CPU capability entries (from the OS where known)."""
    import os
    import platform
    from types import MappingProxyType
    n = os.cpu_count() or 1
    return MappingProxyType({"architecture": platform.machine(), "num_logical_cores": n,
                             "cpu_name": platform.processor() or platform.machine()})
