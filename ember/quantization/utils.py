"""ember.quantization.utils: an alias of ember.ao.quantization.utils (torch keeps this import path)."""
from ember.ao._alias import forward as _forward

__getattr__, __dir__ = _forward("ember.quantization.utils", "ember.ao.quantization.utils")
