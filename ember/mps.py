"""torch.mps as on a machine without Apple's Metal backend: nothing is available and
every call needing the device raises torch's RuntimeError."""
from __future__ import annotations


def is_available() -> bool:
    return False


def device_count() -> int:
    return 0


def manual_seed(seed) -> None:
    pass


def _needs_backend(name, call):
    def fn(*args, **kwargs):
        raise RuntimeError(f"Cannot execute {call}() without MPS backend.")
    fn.__name__ = fn.__qualname__ = name
    return fn


for _name, _call in (("synchronize", "deviceSynchronize"), ("empty_cache", "emptyCache"),
                     ("seed", "getDefaultGenerator"), ("get_rng_state", "getDefaultGenerator"),
                     ("current_allocated_memory", "getCurrentAllocatedMemory"),
                     ("driver_allocated_memory", "getDriverAllocatedMemory"),
                     ("recommended_max_memory", "getRecommendedMaxMemory")):
    globals()[_name] = _needs_backend(_name, _call)


def compile_shader(source):
    raise RuntimeError("MPS is not available")
