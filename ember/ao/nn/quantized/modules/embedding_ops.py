"""torch.ao.nn.quantized Embedding and EmbeddingBag: a row-wise quantized table (quint8 or
quint4x2, ``per_channel_affine_float_qparams``) packed by ``quantized::embedding_bag_prepack``;
float32 out. state_dict keys ``_packed_params.dtype`` and ``_packed_params._packed_weight``,
as torch's."""
from __future__ import annotations

from typing import Optional

import ember
from ember import Tensor, nn
from ember.ops import quantized as Q
from ember.ao.nn.quantized.modules.linear import _quantize_weight, _hide_packed_params_repr

__all__ = ["EmbeddingPackedParams", "Embedding", "EmbeddingBag"]

_DTYPES = (ember.quint8, ember.quint4x2)


def _check_dtype(dtype):
    if dtype not in _DTYPES:
        raise NotImplementedError("Unsupported dtype on quantized embedding! Supports quint8 "
                                  f"and quint4x2. Got dtype: {dtype}")


def _default_weight(num_embeddings, embedding_dim, dtype):
    """A table of zeros with scale 1 and zero point 0 on every row."""
    return ember.quantize_per_channel(
        ember.zeros(num_embeddings, embedding_dim), ember.ones(num_embeddings),
        ember.zeros(num_embeddings, dtype=ember.float), 0, dtype)


class EmbeddingPackedParams(nn.Module):
    """Holds the packed table (``quantized::embedding_bag_prepack``)."""
    _version = 1

    def __init__(self, num_embeddings, embedding_dim, dtype=ember.quint8):
        super().__init__()
        self.dtype = dtype
        _check_dtype(dtype)
        self.set_weight(_default_weight(num_embeddings, embedding_dim, dtype))

    def set_weight(self, weight):
        _check_dtype(self.dtype)
        self._packed_weight = Q.embedding_bag_prepack(weight)

    def _weight(self):
        return Q.embedding_bag_unpack(self._packed_weight)

    def forward(self, x):
        return x

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        super()._save_to_state_dict(destination, prefix, keep_vars)
        destination[prefix + "dtype"] = self.dtype
        destination[prefix + "_packed_weight"] = self._weight()

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs):
        self.dtype = state_dict.pop(prefix + "dtype")
        self.set_weight(state_dict.pop(prefix + "_packed_weight"))
        super()._load_from_state_dict(state_dict, prefix, local_metadata, False, missing_keys,
                                      unexpected_keys, error_msgs)

    def __repr__(self):
        return repr(self._weight())


class Embedding(nn.Module):
    """Quantized lookup table: int64 indices (*) -> float32 (*, embedding_dim)."""
    _version = 1

    def __init__(self, num_embeddings, embedding_dim, padding_idx=None, max_norm=None,
                 norm_type=2.0, scale_grad_by_freq=False, sparse=False, _weight=None,
                 dtype=ember.quint8):
        super().__init__()
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        self.dtype = dtype
        _check_dtype(dtype)
        if _weight is None:
            qweight = _default_weight(num_embeddings, embedding_dim, dtype)
        else:
            if list(_weight.shape) != [num_embeddings, embedding_dim]:
                raise AssertionError("Shape of weight does not match num_embeddings and "
                                     "embedding_dim")
            qweight = _weight
        self._packed_params = EmbeddingPackedParams(num_embeddings, embedding_dim, dtype)
        self._packed_params.set_weight(qweight)

    def forward(self, indices):
        if self._packed_params._packed_weight.bit_rate() == 4:
            return Q.embedding_4bit(self._packed_params._packed_weight, indices)
        return Q.embedding_byte(self._packed_params._packed_weight, indices)

    def _get_name(self):
        return "QuantizedEmbedding"

    def __repr__(self):
        return _hide_packed_params_repr(self, EmbeddingPackedParams)

    def extra_repr(self):
        return (f"num_embeddings={self.num_embeddings}, embedding_dim={self.embedding_dim}, "
                f"dtype={self._packed_params.dtype}, qscheme={self.weight().qscheme()}")

    def set_weight(self, w):
        self._packed_params.set_weight(w)

    def weight(self):
        return self._packed_params._weight()

    @classmethod
    def _check_float(cls, mod, float_cls):
        """The quantized table of ``mod`` (float with ``qconfig``, or QAT) and its dtype."""
        if hasattr(mod, "weight_fake_quant"):       # a QAT Embedding/EmbeddingBag
            weight_observer = mod.weight_fake_quant
        else:
            if type(mod) is not float_cls:
                raise AssertionError(f"nnq.{cls.__name__}.from_float only works for "
                                     f"{float_cls.__name__}")
            if not hasattr(mod, "qconfig"):
                raise AssertionError(f"{cls.__name__} input float module must have qconfig "
                                     "defined")
            if mod.qconfig is not None and mod.qconfig.weight is not None:
                weight_observer = mod.qconfig.weight()
            else:
                from ember.ao.quantization.qconfig import float_qparams_weight_only_qconfig
                weight_observer = float_qparams_weight_only_qconfig.weight()
        dtype = weight_observer.dtype
        if weight_observer.qscheme is not ember.per_channel_affine_float_qparams:
            raise AssertionError(f"{cls.__name__} quantization is only supported with "
                                 "float_qparams_weight_only_qconfig.")
        if dtype not in _DTYPES:
            raise AssertionError(f"The only supported dtype for nnq.{cls.__name__} is "
                                 "torch.quint8 and torch.quint4x2")
        weight_observer(mod.weight)
        return _quantize_weight(mod.weight.float(), weight_observer), dtype

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        """A quantized Embedding from ``nn.Embedding`` whose ``qconfig`` has a float-qparams
        weight observer (``float_qparams_weight_only_qconfig``; that one when ``qconfig`` is
        None), or from a QAT Embedding (its ``weight_fake_quant``)."""
        qweight, _ = cls._check_float(mod, nn.Embedding)
        # as torch: the module keeps the default dtype (quint8) in its repr and state even
        # for a quint4x2 table; ember's forward follows the table itself
        qemb = cls(mod.num_embeddings, mod.embedding_dim)
        qemb.set_weight(qweight)
        return qemb

    @classmethod
    def from_reference(cls, ref_embedding):
        qemb = cls(ref_embedding.num_embeddings, ref_embedding.embedding_dim,
                   ref_embedding.padding_idx, ref_embedding.max_norm, ref_embedding.norm_type,
                   ref_embedding.scale_grad_by_freq, ref_embedding.sparse,
                   ref_embedding.get_quantized_weight(), ref_embedding.weight_dtype)
        return qemb


class EmbeddingBag(Embedding):
    """Quantized bag sums: indices + offsets -> float32 (bags, embedding_dim)."""
    _version = 1

    def __init__(self, num_embeddings, embedding_dim, max_norm=None, norm_type=2.0,
                 scale_grad_by_freq=False, mode="sum", sparse=False, _weight=None,
                 include_last_offset=False, dtype=ember.quint8):
        super().__init__(num_embeddings, embedding_dim, _weight=_weight, dtype=dtype)
        self.mode = mode
        self.pruned_weights = False
        self.include_last_offset = include_last_offset
        self.dtype = dtype

    def forward(self, indices: Tensor, offsets: Optional[Tensor] = None,
                per_sample_weights: Optional[Tensor] = None,
                compressed_indices_mapping: Optional[Tensor] = None) -> Tensor:
        if self._packed_params._packed_weight.bit_rate() == 4:
            return Q.embedding_bag_4bit(self._packed_params._packed_weight, indices, offsets,
                                        False, 0, self.pruned_weights, per_sample_weights,
                                        compressed_indices_mapping, self.include_last_offset)
        return Q.embedding_bag_byte(self._packed_params._packed_weight, indices, offsets,
                                    False, 0, self.pruned_weights, per_sample_weights,
                                    compressed_indices_mapping, self.include_last_offset)

    def _get_name(self):
        return "QuantizedEmbeddingBag"

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        """A quantized EmbeddingBag from ``nn.EmbeddingBag`` (float-qparams weight
        observer in ``mod.qconfig``)."""
        qweight, dtype = cls._check_float(mod, nn.EmbeddingBag)
        qbag = cls(mod.num_embeddings, mod.embedding_dim, max_norm=None, norm_type=2.0,
                   scale_grad_by_freq=False, mode=mod.mode, sparse=False, _weight=None,
                   include_last_offset=mod.include_last_offset, dtype=dtype)
        qbag.set_weight(qweight)
        return qbag

    @classmethod
    def from_reference(cls, ref_embedding_bag):
        return cls(ref_embedding_bag.num_embeddings, ref_embedding_bag.embedding_dim,
                   ref_embedding_bag.max_norm, ref_embedding_bag.norm_type,
                   ref_embedding_bag.scale_grad_by_freq, ref_embedding_bag.mode,
                   ref_embedding_bag.sparse, ref_embedding_bag.get_quantized_weight(),
                   ref_embedding_bag.include_last_offset, ref_embedding_bag.weight_dtype)
