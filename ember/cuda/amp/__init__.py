"""torch.cuda.amp: ``autocast``/``GradScaler``/``custom_fwd``/``custom_bwd`` bound to CUDA,
deprecated in favour of ``torch.amp`` (each warns so, as torch's do). ember has no CUDA
backend: autocast and the GradScaler warn and disable themselves, as torch's do on a
machine without CUDA."""
import warnings

from ember.amp import autocast as _autocast, GradScaler as _GradScaler
from ember.amp import custom_bwd as _custom_bwd, custom_fwd as _custom_fwd

__all__ = ["autocast", "GradScaler", "custom_fwd", "custom_bwd"]


def _deprecated(name, instead):
    warnings.warn(f"`torch.cuda.amp.{name}(args...)` is deprecated. Please use "
                  f"`torch.amp.{instead}` instead.", FutureWarning, stacklevel=3)


class autocast(_autocast):
    def __init__(self, enabled=True, dtype=None, cache_enabled=True):
        import ember
        _deprecated("autocast", "autocast('cuda', args...)")
        super().__init__("cuda", dtype=ember.float16 if dtype is None else dtype,
                         enabled=enabled, cache_enabled=cache_enabled)


class GradScaler(_GradScaler):
    def __init__(self, init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, enabled=True):
        _deprecated("GradScaler", "GradScaler('cuda', args...)")
        super().__init__("cuda", init_scale, growth_factor, backoff_factor, growth_interval,
                         enabled)


def custom_fwd(fwd=None, *, cast_inputs=None):
    """``torch.amp.custom_fwd(..., device_type='cuda')``."""
    _deprecated("custom_fwd", "custom_fwd(args..., device_type='cuda')")
    return _custom_fwd(fwd, device_type="cuda", cast_inputs=cast_inputs)


def custom_bwd(bwd):
    """``torch.amp.custom_bwd(..., device_type='cuda')``."""
    _deprecated("custom_bwd", "custom_bwd(args..., device_type='cuda')")
    return _custom_bwd(bwd, device_type="cuda")
