"""ember.nn.intrinsic: an alias of ember.ao.nn.intrinsic (torch keeps this import path)."""
from ember.ao._alias import forward as _forward

__getattr__, __dir__ = _forward("ember.nn.intrinsic", "ember.ao.nn.intrinsic")
