"""ember.nn.quantized.dynamic: an alias of ember.ao.nn.quantized.dynamic (torch keeps this import path)."""
from ember.ao._alias import forward as _forward

__getattr__, __dir__ = _forward("ember.nn.quantized.dynamic", "ember.ao.nn.quantized.dynamic")
