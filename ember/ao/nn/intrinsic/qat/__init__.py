"""torch.ao.nn.intrinsic.qat."""
from ember.ao.nn.intrinsic.qat.modules import *  # noqa: F401,F403
