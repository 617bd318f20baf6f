"""torch.ao.nn.quantized: modules on quantized tensors; ``functional``, ``dynamic``,
``reference`` load on first use."""
from ember.ao.nn.quantized.modules import *  # noqa: F401,F403
from ember.ao._alias import lazy_submodules as _lazy

__getattr__ = _lazy("ember.ao.nn.quantized", ("functional", "dynamic", "modules", "reference"))
