"""ember.quantization: an alias of ember.ao.quantization (torch keeps this import path)."""
from ember.ao._alias import forward as _forward

__getattr__, __dir__ = _forward("torch.quantization", "ember.ao.quantization")
