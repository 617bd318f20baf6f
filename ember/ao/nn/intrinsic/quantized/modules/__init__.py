"""torch.ao.nn.intrinsic.quantized.modules: each file's modules, imported here."""
from ember.ao.nn.intrinsic.quantized.modules.linear_relu import (  # noqa: F401
    LinearReLU, LinearLeakyReLU, LinearTanh)
from ember.ao.nn.intrinsic.quantized.modules.conv_relu import (  # noqa: F401
    ConvReLU1d, ConvReLU2d, ConvReLU3d)
from ember.ao.nn.intrinsic.quantized.modules.conv_add import ConvAdd2d, ConvAddReLU2d  # noqa
from ember.ao.nn.intrinsic.quantized.modules.bn_relu import BNReLU2d, BNReLU3d  # noqa: F401
