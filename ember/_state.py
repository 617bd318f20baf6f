"""Per-thread dispatcher state: grad mode, the mode stack, anomaly detection.

Note [per-thread state]: like torch, each thread has its own grad mode and mode stack;
a new thread starts with grad enabled and no modes (DataLoader threads, RPC handlers).

Note [rare autograd features]: ``rare[0]`` counts, over all threads, those with anomaly
mode on plus the open ``saved_tensors_hooks`` contexts. While it is 0 the autograd
recorders skip both per-thread checks (one read of a global instead of two of a
thread-local); otherwise they take the general path, which checks each.
"""
import threading

rare = [0]
_rare_lock = threading.Lock()


def count_rare(delta):
    """Note [rare autograd features]: add ``delta`` to ``rare[0]``."""
    with _rare_lock:
        rare[0] += delta


class _State(threading.local):
    def __init__(self):
        self.grad_enabled = True
        self.inference_mode = False
        self.modes = ()          # tuple of active modes, innermost last
        self.handling = ()       # modes popped to run their handlers (Note [composite parts])
        self._anomaly = False
        self.anomaly_check_nan = True

    @property
    def anomaly(self):
        return self._anomaly

    @anomaly.setter
    def anomaly(self, on):
        if bool(on) != bool(self._anomaly):
            count_rare(1 if on else -1)
        self._anomaly = on


state = _State()
