"""ember.nn.intrinsic.quantized: an alias of ember.ao.nn.intrinsic.quantized (torch keeps this import path)."""
from ember.ao._alias import forward as _forward

__getattr__, __dir__ = _forward("ember.nn.intrinsic.quantized", "ember.ao.nn.intrinsic.quantized")
