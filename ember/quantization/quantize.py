"""ember.quantization.quantize: an alias of ember.ao.quantization.quantize (torch keeps this import path)."""
from ember.ao._alias import forward as _forward

__getattr__, __dir__ = _forward("ember.quantization.quantize", "ember.ao.quantization.quantize")
