"""torch.ao.nn.qat.dynamic."""
from ember.ao.nn.qat.dynamic.modules import *  # noqa: F401,F403
