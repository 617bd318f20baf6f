"""ember.quantization.quantization_mappings: an alias of ember.ao.quantization.quantization_mappings (torch keeps this import path)."""
from ember.ao._alias import forward as _forward

__getattr__, __dir__ = _forward("ember.quantization.quantization_mappings", "ember.ao.quantization.quantization_mappings")
