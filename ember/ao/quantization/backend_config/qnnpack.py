"""torch.ao.quantization.backend_config.qnnpack."""
from ember.ao.quantization.backend_config.native import get_qnnpack_backend_config  # noqa: F401

__all__ = ["get_qnnpack_backend_config"]
