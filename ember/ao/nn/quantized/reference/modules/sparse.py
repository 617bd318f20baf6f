"""Reference quantized Embedding/EmbeddingBag: the float lookup on the quantized-then-
dequantized weight."""
from __future__ import annotations

import ember.nn as nn
import ember.nn.functional as F
from ember.ao.nn.quantized.reference.modules.utils import ReferenceQuantizedModule

__all__ = ["Embedding", "EmbeddingBag"]


class Embedding(nn.Embedding, ReferenceQuantizedModule):
    def __init__(self, num_embeddings, embedding_dim, padding_idx=None, max_norm=None,
                 norm_type=2.0, scale_grad_by_freq=False, sparse=False, _weight=None,
                 device=None, dtype=None, weight_qparams=None):
        super().__init__(num_embeddings, embedding_dim, padding_idx, max_norm, norm_type,
                         scale_grad_by_freq, sparse, _weight, device=device, dtype=dtype)
        self._init_weight_qparams(weight_qparams, device)

    def _get_name(self):
        return "QuantizedEmbedding(Reference)"

    def forward(self, input):
        return F.embedding(input, self.get_weight(), self.padding_idx, self.max_norm,
                           self.norm_type, self.scale_grad_by_freq, self.sparse)

    @classmethod
    def from_float(cls, mod, weight_qparams):
        return cls(mod.num_embeddings, mod.embedding_dim, mod.padding_idx, mod.max_norm,
                   mod.norm_type, mod.scale_grad_by_freq, mod.sparse, mod.weight.detach(),
                   weight_qparams=weight_qparams)


class EmbeddingBag(nn.EmbeddingBag, ReferenceQuantizedModule):
    def __init__(self, num_embeddings, embedding_dim, max_norm=None, norm_type=2.0,
                 scale_grad_by_freq=False, mode="mean", sparse=False, _weight=None,
                 include_last_offset=False, padding_idx=None, device=None, dtype=None,
                 weight_qparams=None):
        super().__init__(num_embeddings, embedding_dim, max_norm, norm_type,
                         scale_grad_by_freq, mode, sparse, _weight, include_last_offset,
                         padding_idx, device=device, dtype=dtype)
        self._init_weight_qparams(weight_qparams, device)

    def _get_name(self):
        return "QuantizedEmbedding(Reference)"       # torch's name, Bag not said

    def forward(self, input, offsets=None, per_sample_weights=None):
        return F.embedding_bag(input, self.get_weight(), offsets, self.max_norm,
                               self.norm_type, self.scale_grad_by_freq, self.mode,
                               self.sparse, per_sample_weights, self.include_last_offset,
                               self.padding_idx)

    @classmethod
    def from_float(cls, mod, weight_qparams, use_precomputed_fake_quant=False):
        return cls(mod.num_embeddings, mod.embedding_dim, mod.max_norm, mod.norm_type,
                   mod.scale_grad_by_freq, mod.mode, mod.sparse, mod.weight.detach(),
                   mod.include_last_offset, mod.padding_idx, weight_qparams=weight_qparams)
