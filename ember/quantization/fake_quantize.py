"""ember.quantization.fake_quantize: an alias of ember.ao.quantization.fake_quantize (torch keeps this import path)."""
from ember.ao._alias import forward as _forward

__getattr__, __dir__ = _forward("ember.quantization.fake_quantize", "ember.ao.quantization.fake_quantize")
