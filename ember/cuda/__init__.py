"""torch.cuda on a build without CUDA (ember has no CUDA backend), as a CPU-only torch
answers: queries report nothing available (``is_available()`` False, zero devices, zero
memory), housekeeping calls a GPU-written program makes unconditionally do nothing
(``empty_cache``, seeding, ``get_rng_state_all``), and anything that needs a device raises
torch's "Torch not compiled with CUDA enabled" (an AssertionError that is also a
RuntimeError)."""
from ember.cuda import amp  # noqa: F401

_NOT_COMPILED = "Torch not compiled with CUDA enabled"


def _not_compiled(*args, **kwargs):
    from ember._device import NotCompiledError
    raise NotCompiledError(_NOT_COMPILED)


# ------------------------------------------------------------------ what there is: nothing

def is_available():
    return False


def device_count():
    return 0


def is_initialized():
    return False


def is_bf16_supported(including_emulation=True):
    return False


def get_arch_list():
    return []


def get_gencode_flags():
    return ""


default_generators = ()


# ------------------------------------------------------------------ housekeeping: no-ops

def manual_seed(seed):
    pass


def manual_seed_all(seed):
    pass


def seed():
    pass


def seed_all():
    pass


def empty_cache():
    pass


def get_rng_state_all():
    return []


def set_rng_state_all(new_states):
    pass


def memory_allocated(device=None):
    return 0


def max_memory_allocated(device=None):
    return 0


def memory_reserved(device=None):
    return 0


def max_memory_reserved(device=None):
    return 0


memory_cached = memory_reserved
max_memory_cached = max_memory_reserved


def stream(stream):
    """``with torch.cuda.stream(s)``: without CUDA only ``None`` is accepted (a no-op)."""
    import contextlib
    if stream is not None:
        _not_compiled()
    return contextlib.nullcontext()


# ------------------------------------------------------------------ needs a device: raises

current_device = get_device_name = get_device_capability = get_device_properties = \
    current_stream = default_stream = get_rng_state = set_rng_state = mem_get_info = \
    ipc_collect = init = synchronize = _not_compiled


def set_device(device):
    _not_compiled()


class _NeedsCUDA:
    """Event / Stream / CUDAGraph: torch's dummy classes refuse to be made."""

    def __init__(self, *args, **kwargs):
        raise RuntimeError(f"Tried to instantiate dummy base class {type(self).__name__}")


class Event(_NeedsCUDA):
    pass


class Stream:
    def __init__(self, *args, **kwargs):
        raise RuntimeError("torch.cuda.Stream requires CUDA support")


class CUDAGraph(_NeedsCUDA):
    pass


class device:
    """``with torch.cuda.device(i)``: refused without CUDA."""

    def __init__(self, device):
        self.idx = device

    def __enter__(self):
        raise RuntimeError("PyTorch was compiled without CUDA support")

    def __exit__(self, *exc):
        return False


class nvtx:
    """``torch.cuda.nvtx``: NVIDIA's range markers, absent without a CUDA build."""

    @staticmethod
    def _missing(*args, **kwargs):
        raise RuntimeError("NVTX functions not installed. Are you sure you have a CUDA build?")

    range_push = range_pop = range_start = range_end = mark = range = _missing


class _CUDATensorType(type):
    def __call__(cls, *args, **kwargs):
        raise TypeError(f"type torch.cuda.{cls.__name__} not available. Torch not compiled with "
                        f"CUDA enabled.")


# the legacy CUDA tensor types: isinstance answers False, constructing one refuses
for _name in ("FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "ByteTensor",
              "CharTensor", "ShortTensor", "IntTensor", "LongTensor", "BoolTensor"):
    globals()[_name] = _CUDATensorType(_name, (), {"__module__": "torch.cuda"})
del _name
