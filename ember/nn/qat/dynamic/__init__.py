"""ember.nn.qat.dynamic: an alias of ember.ao.nn.qat.dynamic (torch keeps this import path)."""
from ember.ao._alias import forward as _forward

__getattr__, __dir__ = _forward("ember.nn.qat.dynamic", "ember.ao.nn.qat.dynamic")
