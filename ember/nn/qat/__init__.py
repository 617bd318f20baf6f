"""ember.nn.qat: an alias of ember.ao.nn.qat (torch keeps this import path)."""
from ember.ao._alias import forward as _forward

__getattr__, __dir__ = _forward("ember.nn.qat", "ember.ao.nn.qat")
