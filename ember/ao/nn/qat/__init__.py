"""torch.ao.nn.qat."""
from ember.ao.nn.qat.modules import *  # noqa: F401,F403
from ember.ao._alias import lazy_submodules as _lazy

__getattr__ = _lazy("ember.ao.nn.qat", ("dynamic", "modules"))
