"""ember.quantization.fuse_modules: an alias of ember.ao.quantization.fuse_modules (torch keeps this import path)."""
from ember.ao._alias import forward as _forward

__getattr__, __dir__ = _forward("ember.quantization.fuse_modules", "ember.ao.quantization.fuse_modules")
