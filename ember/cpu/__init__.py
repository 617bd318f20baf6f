"""torch.cpu: the CPU device namespace (ember's only backend)."""
from ember.cpu import amp  # noqa: F401


def is_available():
    return True


def device_count():
    return 1


def current_device():
    return "cpu"


def synchronize(device=None):
    pass
