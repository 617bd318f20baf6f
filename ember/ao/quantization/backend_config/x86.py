"""torch.ao.quantization.backend_config.x86."""
from ember.ao.quantization.backend_config.native import get_x86_backend_config  # noqa: F401

__all__ = ["get_x86_backend_config"]
