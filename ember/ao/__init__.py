"""torch.ao: quantization (``ember.ao.quantization``), its modules (``ember.ao.nn``), the
Numeric Suite (``ember.ao.ns``). Subpackages load on first use."""
from ember.ao._alias import lazy_submodules as _lazy

__getattr__ = _lazy("ember.ao", ("nn", "quantization", "ns"))
