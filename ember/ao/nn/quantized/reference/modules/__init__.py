from ember.ao.nn.quantized.reference.modules.linear import Linear  # noqa: F401
from ember.ao.nn.quantized.reference.modules.conv import Conv1d, Conv2d, Conv3d  # noqa: F401

__all__ = ["Linear", "Conv1d", "Conv2d", "Conv3d"]
