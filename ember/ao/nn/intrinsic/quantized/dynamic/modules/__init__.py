"""torch.ao.nn.intrinsic.quantized.dynamic.modules: each file's modules, imported here."""
from ember.ao.nn.intrinsic.quantized.dynamic.modules.linear_relu import LinearReLU  # noqa
