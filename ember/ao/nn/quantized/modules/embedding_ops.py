"""Quantized Embedding and EmbeddingBag: a row-wise quantized table (quint8 or quint4x2,
``per_channel_affine_float_qparams``; one scale / zero point per row) kept packed by
``embedding_bag_prepack``. Indices ``(*)`` -> float32 ``(*, embedding_dim)``; bags
``(B, embedding_dim)``. state_dict keys ``_packed_params.dtype`` and
``_packed_params._packed_weight``."""
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


def _zero_table(rows, cols, dtype):
    """``(rows, cols)`` zeros quantized per row with scale 1, zero point 0."""
    return ember.quantize_per_channel(ember.zeros(rows, cols), ember.ones(rows),
                                      ember.zeros(rows, dtype=ember.float), 0, dtype)


class EmbeddingPackedParams(nn.Module):
    """The packed ``(num_embeddings, embedding_dim)`` table; identity forward."""
    _version = 1

    def __init__(self, num_embeddings, embedding_dim, dtype=ember.quint8):
        nn.Module.__init__(self)
        _check_dtype(dtype)
        self.dtype = dtype
        self.set_weight(_zero_table(num_embeddings, embedding_dim, dtype))

    def set_weight(self, weight):
        _check_dtype(self.dtype)
        self._packed_weight = Q.embedding_bag_prepack(weight)

    def _weight(self):
        """The unpacked quantized table."""
        return Q.embedding_bag_unpack(self._packed_weight)

    def forward(self, x):
        """Identity: the module only holds the table."""
        return x

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        nn.Module._save_to_state_dict(self, destination, prefix, keep_vars)
        destination.update({f"{prefix}dtype": self.dtype,
                            f"{prefix}_packed_weight": self._weight()})

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict,
                              missing_keys, unexpected_keys, error_msgs):
        self.dtype = state_dict.pop(f"{prefix}dtype")
        self.set_weight(state_dict.pop(f"{prefix}_packed_weight"))
        nn.Module._load_from_state_dict(self, state_dict, prefix, local_metadata, False,
                                        missing_keys, unexpected_keys, error_msgs)

    def __repr__(self):
        return repr(self._weight())


def _float_weight_observer(cls, mod, float_cls):
    """The weight observer ``from_float`` quantizes ``mod``'s table with: a QAT module's
    ``weight_fake_quant``, else ``mod.qconfig.weight()`` (float-qparams default)."""
    if hasattr(mod, "weight_fake_quant"):
        return mod.weight_fake_quant
    if type(mod) is not float_cls:
        raise AssertionError(f"nnq.{cls.__name__}.from_float only works for "
                             f"{float_cls.__name__}")
    if not hasattr(mod, "qconfig"):
        raise AssertionError(f"{cls.__name__} input float module must have qconfig "
                             "defined")
    qconfig = mod.qconfig
    if qconfig is None or qconfig.weight is None:
        from ember.ao.quantization.qconfig import float_qparams_weight_only_qconfig as qconfig
    return qconfig.weight()


class Embedding(nn.Module):
    """Quantized lookup table: int64 indices ``(*)`` -> float32 ``(*, embedding_dim)``."""
    _version = 1
    # constructor arguments in order, as read off a reference module by from_reference
    _REFERENCE_ARGS = ("num_embeddings", "embedding_dim", "padding_idx", "max_norm",
                       "norm_type", "scale_grad_by_freq", "sparse")

    def __init__(self, num_embeddings, embedding_dim, padding_idx=None,
                 max_norm=None, norm_type=2.0, scale_grad_by_freq=False,
                 sparse=False, _weight=None, dtype=ember.quint8):
        nn.Module.__init__(self)
        _check_dtype(dtype)
        self.num_embeddings, self.embedding_dim, self.dtype = \
            num_embeddings, embedding_dim, dtype
        if _weight is None:
            _weight = _zero_table(num_embeddings, embedding_dim, dtype)
        elif tuple(_weight.shape) != (num_embeddings, embedding_dim):
            raise AssertionError("Shape of weight does not match num_embeddings and "
                                 "embedding_dim")
        packed = EmbeddingPackedParams(num_embeddings, embedding_dim, dtype)
        packed.set_weight(_weight)
        self._packed_params = packed

    def forward(self, indices):
        packed = self._packed_params._packed_weight     # (scriptable: plain branches)
        if packed.bit_rate() != 4:
            return Q.embedding_byte(packed, indices)
        return Q.embedding_4bit(packed, indices)

    def _get_name(self):
        return "QuantizedEmbedding"

    def __repr__(self):
        return _hide_packed_params_repr(self, EmbeddingPackedParams)

    def extra_repr(self):
        return (f"num_embeddings={self.num_embeddings}, embedding_dim={self.embedding_dim}, "
                f"dtype={self._packed_params.dtype}, qscheme={self.weight().qscheme()}")

    def set_weight(self, w):
        """Pack the quantized ``(num_embeddings, embedding_dim)`` table ``w``."""
        self._packed_params.set_weight(w)

    def weight(self):
        """The quantized table, unpacked."""
        return self._packed_params._weight()

    @classmethod
    def _check_float(cls, mod, float_cls):
        """The quantized table of ``mod`` (float with ``qconfig``, or QAT) and its dtype."""
        observer = _float_weight_observer(cls, mod, float_cls)
        if observer.qscheme is not ember.per_channel_affine_float_qparams:
            raise AssertionError(f"{cls.__name__} quantization is only supported with "
                                 "float_qparams_weight_only_qconfig.")
        if observer.dtype not in _DTYPES:
            raise AssertionError(f"The only supported dtype for nnq.{cls.__name__} is "
                                 "torch.quint8 and torch.quint4x2")
        observer(mod.weight)
        return _quantize_weight(mod.weight.float(), observer), observer.dtype

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        """From ``nn.Embedding`` with a float-qparams weight observer in ``qconfig``
        (``float_qparams_weight_only_qconfig`` when None), or a QAT Embedding."""
        qweight, _ = cls._check_float(mod, nn.Embedding)
        # as torch: the default dtype (quint8) stays in repr and state even for a quint4x2
        # table; forward follows the packed table's bit rate
        qemb = cls(mod.num_embeddings, mod.embedding_dim)
        qemb.set_weight(qweight)
        return qemb

    @classmethod
    def from_reference(cls, ref_embedding):
        return cls._from_reference_args(ref_embedding)

    @classmethod
    def _from_reference_args(cls, ref):
        """Constructor arguments read off a reference module, its table quantized."""
        config = {name: getattr(ref, name) for name in cls._REFERENCE_ARGS}
        return cls(_weight=ref.get_quantized_weight(), dtype=ref.weight_dtype, **config)


class EmbeddingBag(Embedding):
    """Quantized bags (``mode``): indices + offsets -> float32 ``(B, embedding_dim)``."""
    _version = 1
    _REFERENCE_ARGS = ("num_embeddings", "embedding_dim", "max_norm", "norm_type",
                       "scale_grad_by_freq", "mode", "sparse", "include_last_offset")

    def __init__(self, num_embeddings, embedding_dim, max_norm=None,
                 norm_type=2.0, scale_grad_by_freq=False, mode="sum",
                 sparse=False, _weight=None, include_last_offset=False,
                 dtype=ember.quint8):
        Embedding.__init__(self, num_embeddings, embedding_dim, _weight=_weight,
                           dtype=dtype)
        self.mode, self.include_last_offset = mode, include_last_offset
        self.pruned_weights = False

    def forward(self, indices: Tensor, offsets: Optional[Tensor] = None,
                per_sample_weights: Optional[Tensor] = None,
                compressed_indices_mapping: Optional[Tensor] = None) -> Tensor:
        packed = self._packed_params._packed_weight
        scale_grad_by_freq, mode_code = False, 0       # the kernels' fixed sum mode
        if packed.bit_rate() != 4:
            return Q.embedding_bag_byte(
                packed, indices, offsets, scale_grad_by_freq, mode_code,
                self.pruned_weights, per_sample_weights, compressed_indices_mapping,
                self.include_last_offset)
        return Q.embedding_bag_4bit(
            packed, indices, offsets, scale_grad_by_freq, mode_code, self.pruned_weights,
            per_sample_weights, compressed_indices_mapping, self.include_last_offset)

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        """From ``nn.EmbeddingBag`` (float-qparams weight observer in ``mod.qconfig``)."""
        qweight, dtype = cls._check_float(mod, nn.EmbeddingBag)
        qbag = cls(mod.num_embeddings, mod.embedding_dim, mode=mod.mode,
                   include_last_offset=mod.include_last_offset, dtype=dtype)
        qbag.set_weight(qweight)
        return qbag

    @classmethod
    def from_reference(cls, ref_embedding_bag):
        return cls._from_reference_args(ref_embedding_bag)

    def _get_name(self):
        return "QuantizedEmbeddingBag"
