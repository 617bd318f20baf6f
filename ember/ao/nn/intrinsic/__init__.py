"""torch.ao.nn.intrinsic."""
from ember.ao.nn.intrinsic.modules import *  # noqa: F401,F403
from ember.ao._alias import lazy_submodules as _lazy

__getattr__ = _lazy("ember.ao.nn.intrinsic", ("qat", "quantized", "modules"))
