"""ember.nn.intrinsic.qat: an alias of ember.ao.nn.intrinsic.qat (torch keeps this import path)."""
from ember.ao._alias import forward as _forward

__getattr__, __dir__ = _forward("ember.nn.intrinsic.qat", "ember.ao.nn.intrinsic.qat")
