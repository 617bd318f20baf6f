"""ember.quantization.qconfig: an alias of ember.ao.quantization.qconfig (torch keeps this import path)."""
from ember.ao._alias import forward as _forward

__getattr__, __dir__ = _forward("ember.quantization.qconfig", "ember.ao.quantization.qconfig")
