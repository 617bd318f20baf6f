"""Backend configs: which patterns a backend quantizes and how (torch's
``torch.ao.quantization.backend_config``)."""
from ember.ao.quantization.backend_config.backend_config import (  # noqa: F401
    BackendConfig, BackendPatternConfig, DTypeConfig, DTypeWithConstraints, ObservationType)
from ember.ao.quantization.backend_config.native import (  # noqa: F401
    get_native_backend_config, get_native_backend_config_dict, get_fbgemm_backend_config,
    get_x86_backend_config, get_qnnpack_backend_config)

__all__ = ["get_fbgemm_backend_config", "get_native_backend_config",
           "get_native_backend_config_dict", "get_qnnpack_backend_config",
           "BackendConfig", "BackendPatternConfig", "DTypeConfig", "DTypeWithConstraints",
           "ObservationType"]
