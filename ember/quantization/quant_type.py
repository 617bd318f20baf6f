"""ember.quantization.quant_type: an alias of ember.ao.quantization.quant_type (torch keeps this import path)."""
from ember.ao._alias import forward as _forward

__getattr__, __dir__ = _forward("ember.quantization.quant_type", "ember.ao.quantization.quant_type")
