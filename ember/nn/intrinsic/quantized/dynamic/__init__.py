"""ember.nn.intrinsic.quantized.dynamic: an alias of ember.ao.nn.intrinsic.quantized.dynamic (torch keeps this import path)."""
from ember.ao._alias import forward as _forward

__getattr__, __dir__ = _forward("ember.nn.intrinsic.quantized.dynamic", "ember.ao.nn.intrinsic.quantized.dynamic")
