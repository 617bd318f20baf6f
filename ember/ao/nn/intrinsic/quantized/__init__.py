"""torch.ao.nn.intrinsic.quantized."""
from ember.ao.nn.intrinsic.quantized.modules import *  # noqa: F401,F403
from ember.ao._alias import lazy_submodules as _lazy

__getattr__ = _lazy("ember.ao.nn.intrinsic.quantized", ("dynamic", "modules"))
