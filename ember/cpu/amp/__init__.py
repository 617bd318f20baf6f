"""torch.cpu.amp: ``autocast`` and ``GradScaler`` bound to device_type='cpu', deprecated
in favour of ``torch.amp`` (each warns so, as torch's do)."""
import warnings

from ember.amp import autocast as _autocast, GradScaler as _GradScaler

__all__ = ["autocast", "GradScaler"]


def _deprecated(name):
    warnings.warn(f"`torch.cpu.amp.{name}(args...)` is deprecated. Please use "
                  f"`torch.amp.{name}('cpu', args...)` instead.", FutureWarning, stacklevel=3)


class autocast(_autocast):
    def __init__(self, enabled=True, dtype=None, cache_enabled=True):
        _deprecated("autocast")
        super().__init__("cpu", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)


class GradScaler(_GradScaler):
    def __init__(self, init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, enabled=True):
        _deprecated("GradScaler")
        super().__init__("cpu", init_scale, growth_factor, backoff_factor, growth_interval,
                         enabled)
