"""ember.nn.quantized.functional: an alias of ember.ao.nn.quantized.functional (torch keeps this import path)."""
from ember.ao._alias import forward as _forward

__getattr__, __dir__ = _forward("ember.nn.quantized.functional", "ember.ao.nn.quantized.functional")
