"""torch.ao.quantization.backend_config.fbgemm."""
from ember.ao.quantization.backend_config.native import get_fbgemm_backend_config  # noqa: F401

__all__ = ["get_fbgemm_backend_config"]
