"""torch.ao.nn: quantized, fused (intrinsic) and QAT modules. Subpackages load on first use."""
from ember.ao._alias import lazy_submodules as _lazy

__getattr__ = _lazy("ember.ao.nn", ("quantized", "intrinsic", "qat", "quantizable"))
