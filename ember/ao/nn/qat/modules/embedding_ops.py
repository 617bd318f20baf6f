"""QAT Embedding and EmbeddingBag (torch.ao.nn.qat): the table passes ``weight_fake_quant``
(per-row float qparams) on every forward."""
from __future__ import annotations

import ember
from ember import nn
from ember.nn import functional as F
from ember.nn.parameter import Parameter

__all__ = ["Embedding", "EmbeddingBag"]


def _check_embedding_qconfig(qconfig):
    if not qconfig:
        raise AssertionError("qconfig must be provided for QAT module")
    scheme = qconfig.weight().qscheme
    if scheme is not ember.per_channel_affine_float_qparams:
        raise AssertionError(f"Embedding weights requires a qscheme of "
                             f"torch.per_channel_affine_float_qparams Got {scheme}")


class Embedding(nn.Embedding):
    """Embedding over ``weight_fake_quant(weight)``."""
    _FLOAT_MODULE = nn.Embedding

    def __init__(self, num_embeddings, embedding_dim, padding_idx=None, max_norm=None,
                 norm_type=2.0, scale_grad_by_freq=False, sparse=False, _weight=None,
                 device=None, dtype=None, qconfig=None):
        super().__init__(num_embeddings, embedding_dim, padding_idx, max_norm, norm_type,
                         scale_grad_by_freq, sparse, _weight)
        _check_embedding_qconfig(qconfig)
        self.qconfig = qconfig
        self.weight_fake_quant = qconfig.weight(factory_kwargs=None)

    def forward(self, input):
        return F.embedding(input, self.weight_fake_quant(self.weight), self.padding_idx,
                           self.max_norm, self.norm_type, self.scale_grad_by_freq, self.sparse)

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        if type(mod) is not cls._FLOAT_MODULE:
            raise AssertionError(f" qat.{cls.__name__}.from_float only works for "
                                 f"{cls._FLOAT_MODULE.__name__}")
        if not getattr(mod, "qconfig", None):
            raise AssertionError("Input float module must have a valid qconfig")
        qat = cls(mod.num_embeddings, mod.embedding_dim, mod.padding_idx, mod.max_norm,
                  mod.norm_type, mod.scale_grad_by_freq, mod.sparse, mod.weight,
                  qconfig=mod.qconfig)
        return qat

    def to_float(self):
        emb = nn.Embedding(self.num_embeddings, self.embedding_dim, self.padding_idx,
                           self.max_norm, self.norm_type, self.scale_grad_by_freq, self.sparse)
        emb.weight = Parameter(self.weight.detach())
        emb.train(self.training)
        return emb


class EmbeddingBag(nn.EmbeddingBag):
    """EmbeddingBag over ``weight_fake_quant(weight)``."""
    _FLOAT_MODULE = nn.EmbeddingBag

    def __init__(self, num_embeddings, embedding_dim, max_norm=None, norm_type=2.0,
                 scale_grad_by_freq=False, mode="mean", sparse=False, _weight=None,
                 include_last_offset=False, padding_idx=None, qconfig=None, device=None,
                 dtype=None):
        super().__init__(num_embeddings, embedding_dim, max_norm, norm_type,
                         scale_grad_by_freq, mode, sparse, _weight, include_last_offset,
                         padding_idx)
        _check_embedding_qconfig(qconfig)
        self.qconfig = qconfig
        self.weight_fake_quant = qconfig.weight(factory_kwargs=None)

    def forward(self, input, offsets=None, per_sample_weights=None):
        return F.embedding_bag(input, self.weight_fake_quant(self.weight), offsets,
                               self.max_norm, self.norm_type, self.scale_grad_by_freq,
                               self.mode, self.sparse, per_sample_weights,
                               self.include_last_offset, self.padding_idx)

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        if type(mod) is not cls._FLOAT_MODULE:
            raise AssertionError(f" qat.{cls.__name__}.from_float only works for "
                                 f"{cls._FLOAT_MODULE.__name__}")
        if not getattr(mod, "qconfig", None):
            raise AssertionError("Input float module must have a valid qconfig")
        return cls(mod.num_embeddings, mod.embedding_dim, mod.max_norm, mod.norm_type,
                   mod.scale_grad_by_freq, mod.mode, mod.sparse, mod.weight,
                   mod.include_last_offset, mod.padding_idx, qconfig=mod.qconfig)

    def to_float(self):
        bag = nn.EmbeddingBag(self.num_embeddings, self.embedding_dim, self.max_norm,
                              self.norm_type, self.scale_grad_by_freq, self.mode, self.sparse,
                              None, self.include_last_offset, self.padding_idx)
        bag.weight = Parameter(self.weight.detach())
        bag.train(self.training)
        return bag
