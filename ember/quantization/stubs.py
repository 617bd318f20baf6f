"""ember.quantization.stubs: an alias of ember.ao.quantization.stubs (torch keeps this import path)."""
from ember.ao._alias import forward as _forward

__getattr__, __dir__ = _forward("ember.quantization.stubs", "ember.ao.quantization.stubs")
