from ember.ao.nn.quantized.reference.modules.linear import Linear  # noqa: F401
from ember.ao.nn.quantized.reference.modules.conv import (  # noqa: F401
    Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d)
from ember.ao.nn.quantized.reference.modules.sparse import Embedding, EmbeddingBag  # noqa

__all__ = ["Linear", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d",
           "ConvTranspose3d", "Embedding", "EmbeddingBag"]
