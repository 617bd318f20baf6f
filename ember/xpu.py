"""torch.xpu as on a torch build without XPU support: nothing is available; queries about
memory answer zero, and whatever needs a device raises torch's AssertionError."""
from __future__ import annotations

from collections import OrderedDict


def _not_compiled(*_, **__):
    raise AssertionError("Torch not compiled with XPU enabled")


def is_available() -> bool:
    return False


def is_initialized() -> bool:
    return False


def device_count() -> int:
    return 0


def is_bf16_supported(including_emulation: bool = True) -> bool:
    return False


def is_tf32_supported() -> bool:
    return False


def get_arch_list() -> list:
    return []


def get_gencode_flags() -> str:
    return ""


def _zero(device=None) -> int:
    return 0


memory_allocated = max_memory_allocated = memory_reserved = max_memory_reserved = _zero


def memory_stats(device=None):
    return OrderedDict()


def memory_stats_as_nested_dict(device=None):
    return {}


def memory_snapshot():
    return []


def get_rng_state_all():
    return []


def _nothing(*_, **__):
    """Without a device there is nothing to do."""


empty_cache = seed = seed_all = _nothing


def manual_seed(seed) -> None:
    pass


def manual_seed_all(seed) -> None:
    pass


def _needs_device(name):
    def fn(*args, **kwargs):
        _not_compiled()
    fn.__name__ = fn.__qualname__ = name
    return fn


for _name in ("init", "current_device", "current_stream", "synchronize", "get_device_name",
              "get_device_capability", "get_device_properties", "get_rng_state",
              "initial_seed", "set_device", "set_stream", "mem_get_info",
              "get_per_process_memory_fraction", "set_per_process_memory_fraction",
              "get_stream_from_external"):
    globals()[_name] = _needs_device(_name)
