"""ember.quantization.fuser_method_mappings: an alias of ember.ao.quantization.fuser_method_mappings (torch keeps this import path)."""
from ember.ao._alias import forward as _forward

__getattr__, __dir__ = _forward("ember.quantization.fuser_method_mappings", "ember.ao.quantization.fuser_method_mappings")
