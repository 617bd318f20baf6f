"""ember.quantization.observer: an alias of ember.ao.quantization.observer (torch keeps this import path)."""
from ember.ao._alias import forward as _forward

__getattr__, __dir__ = _forward("ember.quantization.observer", "ember.ao.quantization.observer")
