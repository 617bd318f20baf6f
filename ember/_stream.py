"""``torch.Stream`` and ``torch.Event`` as torch has them on a CPU-only build: one CPU
stream (id 0) on which work is always finished, and events that cannot be recorded
(torch's CPU backend has no events)."""
from __future__ import annotations

_NO_EVENTS = "cpu backend doesn't support events."


def _cpu_device(device):
    from ember._device import device as Device
    if device is None:
        return Device("cpu")
    if isinstance(device, int):
        raise RuntimeError("Cannot access accelerator device when none is available.")
    d = device if isinstance(device, Device) else Device(device)
    if d.type != "cpu":
        raise RuntimeError(f"PyTorch is not linked with support for {d.type} devices")
    return d


class Stream:
    """A device stream; on the CPU all work runs in order and is done when issued."""

    def __init__(self, device=None, *, priority=0):
        self._device = _cpu_device(device)
        self.priority = priority

    device = property(lambda self: self._device)
    device_type = property(lambda self: 0)          # c10::DeviceType::CPU
    device_index = property(lambda self: -1)
    stream_id = property(lambda self: 0)

    @property
    def native_handle(self):
        raise RuntimeError("Backend doesn't support getting stream native handle.")

    def query(self):
        """Whether all work on the stream has finished: always, on the CPU."""
        return True

    def synchronize(self):
        pass

    def is_capturing(self):
        return False

    def wait_event(self, event):
        pass

    def wait_stream(self, stream):
        raise RuntimeError(_NO_EVENTS)

    def record_event(self, event=None):
        raise RuntimeError(_NO_EVENTS)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def __eq__(self, other):
        return isinstance(other, Stream) and other.device == self.device

    def __hash__(self):
        return hash(("stream", str(self.device), 0))

    def __repr__(self):
        return "torch.Stream device_type=cpu, device_index=-1, stream_id=0"


class Event:
    """A synchronization marker; the CPU backend cannot record one."""

    def __init__(self, device=None, *, enable_timing=False, blocking=False, interprocess=False):
        self._device = _cpu_device(device)
        self.enable_timing = enable_timing
        self.blocking = blocking
        self.interprocess = interprocess

    device = property(lambda self: self._device)
    event_id = property(lambda self: 0)

    def query(self):
        return True

    def synchronize(self):
        pass

    def wait(self, stream=None):
        pass

    def record(self, stream=None):
        raise RuntimeError(_NO_EVENTS)

    def elapsed_time(self, end_event):
        if not (self.enable_timing and end_event.enable_timing):
            raise ValueError("Both events must be created with argument 'enable_timing=True'.")
        raise ValueError("Both events must be recorded before calculating elapsed time.")

    def ipc_handle(self):
        raise NotImplementedError("torch.Event ipc is not supported yet, please open an issue "
                                  "if you need this!")

    @classmethod
    def from_ipc_handle(cls, device, ipc_handle):
        raise NotImplementedError("torch.Event ipc is not supported yet, please open an issue "
                                  "if you need this!")

    def __repr__(self):
        return (f"torch.Event device_type=cpu, device_index=-1, "
                f"event_flag={int(bool(self.enable_timing))}, event_id=0")
