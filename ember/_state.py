"""Per-thread dispatcher state: grad mode, the mode stack, anomaly detection.

Note [per-thread state]: like torch, each thread has its own grad mode and mode stack;
a new thread starts with grad enabled and no modes (DataLoader threads, RPC handlers).
"""
import threading


class _State(threading.local):
    def __init__(self):
        self.grad_enabled = True
        self.inference_mode = False
        self.modes = ()          # tuple of active modes, innermost last
        self.handling = ()       # modes popped to run their handlers (Note [composite parts])
        self.anomaly = False
        self.anomaly_check_nan = True


state = _State()
