"""ember.quantization.quantize_fx: an alias of ember.ao.quantization.quantize_fx (torch keeps this import path)."""
from ember.ao._alias import forward as _forward

__getattr__, __dir__ = _forward("ember.quantization.quantize_fx", "ember.ao.quantization.quantize_fx")
