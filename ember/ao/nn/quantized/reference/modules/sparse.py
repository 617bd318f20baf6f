"""Reference quantized Embedding/EmbeddingBag: the float lookup run on the weight after a
quantize-dequantize round trip (``get_weight()``), so conversion sees the lowered numerics.
Indices ``(*)`` give ``(*, embedding_dim)``; bags ``(B, embedding_dim)``."""
from __future__ import annotations

import ember.nn as nn
import ember.nn.functional as F
from ember.ao.nn.quantized.reference.modules.utils import ReferenceQuantizedModule

__all__ = ["Embedding", "EmbeddingBag"]

# the float module's attributes the lookup needs, besides the weight
_LOOKUP = ("max_norm", "norm_type", "scale_grad_by_freq", "sparse")


def _reference_name(self):
    return "QuantizedEmbedding(Reference)"            # torch keeps it for the bag too


class _ReferenceLookup(ReferenceQuantizedModule):
    """Shared by both: ``from_float`` copying ``_CTOR`` attributes by name."""
    _CTOR = ()

    @classmethod
    def _from(cls, mod, weight_qparams):
        config = {name: getattr(mod, name) for name in cls._CTOR}
        return cls(_weight=mod.weight.detach(), weight_qparams=weight_qparams, **config)


class Embedding(nn.Embedding, _ReferenceLookup):
    _CTOR = ("num_embeddings", "embedding_dim", "padding_idx") + _LOOKUP
    _get_name = _reference_name

    def __init__(self, num_embeddings, embedding_dim, padding_idx=None,
                 max_norm=None, norm_type=2.0, scale_grad_by_freq=False,
                 sparse=False, _weight=None, device=None, dtype=None,
                 weight_qparams=None):
        nn.Embedding.__init__(self, num_embeddings, embedding_dim, padding_idx=padding_idx,
                              max_norm=max_norm, norm_type=norm_type, sparse=sparse,
                              scale_grad_by_freq=scale_grad_by_freq, _weight=_weight,
                              device=device, dtype=dtype)
        self._init_weight_qparams(weight_qparams, device)

    def forward(self, input):
        options = {name: getattr(self, name) for name in _LOOKUP}
        return F.embedding(input, self.get_weight(), padding_idx=self.padding_idx, **options)

    @classmethod
    def from_float(cls, mod, weight_qparams):
        return cls._from(mod, weight_qparams)


class EmbeddingBag(nn.EmbeddingBag, _ReferenceLookup):
    _CTOR = ("num_embeddings", "embedding_dim", "mode", "include_last_offset",
             "padding_idx") + _LOOKUP
    _get_name = _reference_name

    def __init__(self, num_embeddings, embedding_dim, max_norm=None,
                 norm_type=2.0, scale_grad_by_freq=False, mode="mean",
                 sparse=False, _weight=None, include_last_offset=False,
                 padding_idx=None, device=None, dtype=None, weight_qparams=None):
        nn.EmbeddingBag.__init__(
            self, num_embeddings, embedding_dim, max_norm=max_norm, norm_type=norm_type,
            scale_grad_by_freq=scale_grad_by_freq, mode=mode, sparse=sparse,
            _weight=_weight, include_last_offset=include_last_offset,
            padding_idx=padding_idx, device=device, dtype=dtype)
        self._init_weight_qparams(weight_qparams, device)

    def forward(self, input, offsets=None, per_sample_weights=None):
        options = {name: getattr(self, name) for name in _LOOKUP}
        return F.embedding_bag(input, self.get_weight(), offsets, mode=self.mode,
                               per_sample_weights=per_sample_weights,
                               include_last_offset=self.include_last_offset,
                               padding_idx=self.padding_idx, **options)

    @classmethod
    def from_float(cls, mod, weight_qparams, use_precomputed_fake_quant=False):
        return cls._from(mod, weight_qparams)
