"""torch.ao.nn.intrinsic.quantized.dynamic."""
from ember.ao.nn.intrinsic.quantized.dynamic.modules import *  # noqa: F401,F403
