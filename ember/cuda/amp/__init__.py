"""torch.cuda.amp: ``autocast``/``GradScaler`` bound to CUDA. ember has no CUDA backend:
an enabled autocast raises, an enabled GradScaler warns and disables itself (as torch's
does on a machine without CUDA)."""
from ember.amp import autocast as _autocast, GradScaler as _GradScaler


class autocast(_autocast):
    def __init__(self, enabled=True, dtype=None, cache_enabled=True):
        import ember
        super().__init__("cuda", dtype=ember.float16 if dtype is None else dtype,
                         enabled=enabled, cache_enabled=cache_enabled)


class GradScaler(_GradScaler):
    def __init__(self, init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, enabled=True):
        super().__init__("cuda", init_scale, growth_factor, backoff_factor, growth_interval,
                         enabled)
