"""FX graph mode quantization's passes: tracing with scopes, pattern matching, fusion,
observer insertion (prepare) and conversion/lowering (convert)."""
from ember.ao.quantization.fx.prepare import prepare  # noqa: F401
from ember.ao.quantization.fx.convert import convert  # noqa: F401
from ember.ao.quantization.fx.fuse import fuse  # noqa: F401
