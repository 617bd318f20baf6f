"""torch.ao: quantization (``ember.ao.quantization``) and its modules (``ember.ao.nn``).
Subpackages load on first use."""
from ember.ao._alias import lazy_submodules as _lazy

__getattr__ = _lazy("ember.ao", ("nn", "quantization"))
