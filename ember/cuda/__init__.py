"""torch.cuda: ember has no CUDA backend, so nothing is available."""
from ember.cuda import amp  # noqa: F401


def is_available():
    return False


def device_count():
    return 0


def is_initialized():
    return False


def synchronize(device=None):
    pass


def manual_seed(seed):
    pass


def manual_seed_all(seed):
    pass


def current_device():
    from ember._device import NotCompiledError
    raise NotCompiledError("Torch not compiled with CUDA enabled (ember has no CUDA backend)")
