"""torch.ao.nn.intrinsic.modules: each file's modules, imported here."""
from ember.ao.nn.intrinsic.modules.fused import *  # noqa: F401,F403
from ember.ao.nn.intrinsic.modules.fused import _FusedModule  # noqa: F401
