"""torch.ao.nn.quantized.modules: the quantized module classes of this package's files,
gathered here, and the two that ``convert`` puts in place of the observer stubs
(``Quantize``: float -> quantized with fixed qparams; ``DeQuantize``: back to float)."""
import importlib as _importlib

import ember as _ember
from ember import nn as _nn

# file -> the names it contributes (None: its whole __all__)
_FILES = {
    "activation": None, "batchnorm": None, "normalization": None, "dropout": None,
    "functional_modules": None,
    "linear": ("Linear", "LinearPackedParams"),
    "conv": ("Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d",
             "ConvTranspose3d"),
    "embedding_ops": ("Embedding", "EmbeddingBag", "EmbeddingPackedParams"),
    "rnn": ("LSTM",), "activation_mha": ("MultiheadAttention",), "prelu": ("PReLU",),
}
for _file, _names in _FILES.items():
    _source = _importlib.import_module(f"{__name__}.{_file}")
    for _n in (_source.__all__ if _names is None else _names):
        globals()[_n] = getattr(_source, _n)
MaxPool2d = _nn.MaxPool2d          # torch re-exports the float module here


class Quantize(_nn.Module):
    """Float -> quantized per tensor, with the ``scale`` / ``zero_point`` (kept as buffers)
    and the ``dtype`` fixed at construction."""

    def __init__(self, scale, zero_point, dtype, factory_kwargs=None):
        super().__init__()
        for name, value, kind in (("scale", scale, None), ("zero_point", zero_point,
                                                            _ember.long)):
            self.register_buffer(name, _ember.tensor([value], dtype=kind))
        self.dtype = dtype

    def forward(self, X):
        qparams = float(self.scale), int(self.zero_point)
        return _ember.quantize_per_tensor(X, *qparams, self.dtype)

    @staticmethod
    def from_float(mod, use_precomputed_fake_quant=False):
        """The module an observed QuantStub becomes: its observer's qparams and dtype."""
        observer = getattr(mod, "activation_post_process", None)
        if observer is None:
            raise AssertionError("QuantStub must have activation_post_process")
        s, z = observer.calculate_qparams()
        return Quantize(s.float().item(), z.long().item(), observer.dtype)

    def extra_repr(self):
        return f"scale={self.scale}, zero_point={self.zero_point}, dtype={self.dtype}"


class DeQuantize(_nn.Module):
    """Quantized -> float32."""

    def forward(self, Xq):
        return Xq.dequantize()

    @staticmethod
    def from_float(mod, use_precomputed_fake_quant=False):
        return DeQuantize()
