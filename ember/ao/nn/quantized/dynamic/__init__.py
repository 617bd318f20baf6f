"""torch.ao.nn.quantized.dynamic: dynamically quantized modules (float in, float out)."""
from ember.ao.nn.quantized.dynamic.modules import *  # noqa: F401,F403
