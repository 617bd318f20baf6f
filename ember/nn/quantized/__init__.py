"""ember.nn.quantized: an alias of ember.ao.nn.quantized (torch keeps this import path)."""
from ember.ao._alias import forward as _forward

__getattr__, __dir__ = _forward("ember.nn.quantized", "ember.ao.nn.quantized")
