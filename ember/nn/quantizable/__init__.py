"""ember.nn.quantizable: an alias of ember.ao.nn.quantizable (torch keeps this import path)."""
from ember.ao._alias import forward as _forward

__getattr__, __dir__ = _forward("ember.nn.quantizable", "ember.ao.nn.quantizable")
