"""torch.ao.nn.quantized.reference: float modules that quantize and dequantize their weight
(what convert_to_reference_fx puts in place of Linear/Conv)."""
from ember.ao.nn.quantized.reference.modules import *  # noqa: F401,F403
from ember.ao.nn.quantized.reference import modules  # noqa: F401

__all__ = ["Linear", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d",
           "ConvTranspose3d", "Embedding", "EmbeddingBag"]
