"""torch.ao.nn.intrinsic.qat.modules: each file's modules, imported here."""
from ember.ao.nn.intrinsic.qat.modules.linear_relu import LinearReLU  # noqa: F401
from ember.ao.nn.intrinsic.qat.modules.linear_fused import LinearBn1d  # noqa: F401
from ember.ao.nn.intrinsic.qat.modules.conv_fused import (  # noqa: F401
    ConvBn1d, ConvBn2d, ConvBn3d, ConvBnReLU1d, ConvBnReLU2d, ConvBnReLU3d, ConvReLU1d,
    ConvReLU2d, ConvReLU3d, freeze_bn_stats, update_bn_stats)
