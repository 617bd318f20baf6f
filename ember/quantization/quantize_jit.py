"""ember.quantization.quantize_jit: an alias of ember.ao.quantization.quantize_jit (torch keeps this import path)."""
from ember.ao._alias import forward as _forward

__getattr__, __dir__ = _forward("ember.quantization.quantize_jit", "ember.ao.quantization.quantize_jit")
