"""torch.ao.nn.quantized.modules: each file's modules, imported here; ``Quantize`` and
``DeQuantize`` (what ``convert`` makes of the stubs) defined here, as torch does."""
import ember as _ember
from ember import nn as _nn

from ember.ao.nn.quantized.modules.activation import *  # noqa: F401,F403
from ember.ao.nn.quantized.modules.batchnorm import *  # noqa: F401,F403
from ember.ao.nn.quantized.modules.normalization import *  # noqa: F401,F403
from ember.ao.nn.quantized.modules.dropout import *  # noqa: F401,F403
from ember.ao.nn.quantized.modules.functional_modules import *  # noqa: F401,F403
from ember.ao.nn.quantized.modules.linear import Linear, LinearPackedParams  # noqa: F401
from ember.ao.nn.quantized.modules.conv import (  # noqa: F401
    Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d)
from ember.ao.nn.quantized.modules.embedding_ops import (  # noqa: F401
    Embedding, EmbeddingBag, EmbeddingPackedParams)
from ember.ao.nn.quantized.modules.rnn import LSTM  # noqa: F401
from ember.ao.nn.quantized.modules.activation_mha import MultiheadAttention  # noqa: F401
from ember.ao.nn.quantized.modules.prelu import PReLU  # noqa: F401
from ember.nn import MaxPool2d  # noqa: F401  (torch re-exports the float module)


class Quantize(_nn.Module):
    """Quantizes a float tensor per tensor with fixed ``scale``/``zero_point`` to ``dtype``."""

    def __init__(self, scale, zero_point, dtype, factory_kwargs=None):
        super().__init__()
        self.register_buffer("scale", _ember.tensor([scale]))
        self.register_buffer("zero_point", _ember.tensor([zero_point], dtype=_ember.long))
        self.dtype = dtype

    def forward(self, X):
        return _ember.quantize_per_tensor(X, float(self.scale), int(self.zero_point), self.dtype)

    @staticmethod
    def from_float(mod, use_precomputed_fake_quant=False):
        """From an observed QuantStub: its observer's parameters and dtype."""
        if not hasattr(mod, "activation_post_process"):
            raise AssertionError("QuantStub must have activation_post_process")
        scale, zero_point = mod.activation_post_process.calculate_qparams()
        return Quantize(scale.float().item(), zero_point.long().item(),
                        mod.activation_post_process.dtype)

    def extra_repr(self):
        return f"scale={self.scale}, zero_point={self.zero_point}, dtype={self.dtype}"


class DeQuantize(_nn.Module):
    """Dequantizes a quantized tensor to float32."""

    def forward(self, Xq):
        return Xq.dequantize()

    @staticmethod
    def from_float(mod, use_precomputed_fake_quant=False):
        return DeQuantize()
