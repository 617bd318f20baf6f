"""``quantized::embedding*`` op records: row-wise quantized embedding tables.

Two forms, as in torch: a packed uint8 table (``embedding_bag_byte_prepack(float_weight)``,
each row its integers then its scale and bias) read by the ``*_rowwise_offsets`` ops, and an
:class:`EmbeddingPackedParamsBase` made by ``embedding_bag_prepack(qweight)`` from a quint8
or quint4x2 ``per_channel_affine_float_qparams`` tensor, read by ``embedding_byte``/
``embedding_4bit``/``embedding_bag_byte``/``embedding_bag_4bit``. Rules in
ember/_kernels/quantized_embedding.py.
"""
from __future__ import annotations

import numpy as np

from ember import _dtype
from ember._kernels import quantized_embedding as E
from ember._ops.quantized import defop, qparams, int_array, is_quantized
from ember._tensor import _make

_OPTS = dict(function=False, method=False, out=False, differentiable=False)


class EmbeddingPackedParamsBase:
    """torch.classes.quantized.EmbeddingPackedParamsBase: a quantized table (N, D) and its
    packed rows; ``unpack()`` gives the quantized tensor back."""

    def __init__(self, qweight):
        self._qweight = qweight
        self._bits = 4 if qweight.dtype is _dtype.quint4x2 else 8
        qp = qparams(qweight)
        self.packed = E.prepack_quantized(np.asarray(int_array(qweight)), qp.scale,
                                          qp.zero_point, self._bits)

    def unpack(self):
        return self._qweight

    def bit_rate(self):
        return self._bits

    def version(self):
        return 1

    def __getstate__(self):
        return (1, [self._qweight], [], [self._bits]), \
            "__torch__.torch.classes.quantized.EmbeddingPackedParamsBase"

    def __setstate__(self, state):
        (_, (qweight,), _, _), _ = state
        self.__init__(qweight)

    def __repr__(self):
        return "ScriptObject <__torch__.torch.classes.quantized.EmbeddingPackedParamsBase>"


def _embedding_bag_prepack(weight):
    if not is_quantized(weight) or weight.dtype not in (_dtype.quint8, _dtype.quint4x2):
        raise RuntimeError("Expected weight to be quantized to quint8 or quint4x2 for "
                           f"embedding_bag_prepack, got {weight.dtype}")
    if qparams(weight).qscheme is not _dtype.per_channel_affine_float_qparams:
        raise RuntimeError("Expected weight to have per_channel_affine_float_qparams "
                           "quantization scheme")
    if weight.dim() != 2:
        raise RuntimeError("quantized::embedding_bag_prepack expects a 2-d weight, got "
                           f"{weight.dim()}-d")
    return EmbeddingPackedParamsBase(weight)


def _float_table(weight, name):
    if weight.dtype not in (_dtype.float32, _dtype.float16):
        raise RuntimeError(f"quantized::{name}: expected a float weight, got {weight.dtype}")
    if weight.dim() < 2:
        raise RuntimeError(f"quantized::{name}: expected a weight of at least 2 dimensions, "
                           f"got {weight.dim()}")
    w = np.asarray(weight._data, np.float32)
    return w.reshape(-1, w.shape[-1]), w.shape


def _byte_prepack(weight):
    w, shape = _float_table(weight, "embedding_bag_byte_prepack")
    return _make(E.prepack_float(w, 8).reshape(shape[:-1] + (shape[-1] + 8,)))


def _4bit_prepack(weight, optimized_qparams=False, nbins=200, ratio=0.16):
    if optimized_qparams:
        raise NotImplementedError("quantized::embedding_bag_4bit_prepack: "
                                  "optimized_qparams=True (the greedy range search) is not "
                                  "supported in ember")
    w, shape = _float_table(weight, "embedding_bag_4bit_prepack")
    if shape[-1] % 2:
        raise RuntimeError("qembeddingbag_4bit_prepack only works for the number of columns a "
                           "multiple of 2")
    packed = E.prepack_float(w, 4)
    return _make(packed.reshape(shape[:-1] + (packed.shape[-1],)))


def _unpack_table(weight, bits):
    p = np.asarray(weight._data, np.uint8)
    rows = E.dequantize_rows(p.reshape(-1, p.shape[-1]), bits)
    return _make(rows.reshape(p.shape[:-1] + (rows.shape[-1],)))


def _offsets_for(indices, offsets):
    """(flat indices, offsets): 2-d indices without offsets are one bag a row."""
    idx = np.asarray(indices._data, np.int64)
    if offsets is None:
        if idx.ndim != 2:
            raise ValueError("offset has to be a 1D Tensor but got null")
        return idx.reshape(-1), np.arange(0, idx.size, max(idx.shape[1], 1), dtype=np.int64)
    return idx.reshape(-1), np.asarray(offsets._data, np.int64)


def _bag(packed, bits, indices, offsets, pruned_weights, per_sample_weights,
         compressed_indices_mapping, include_last_offset):
    if pruned_weights or compressed_indices_mapping is not None:
        raise NotImplementedError("quantized embedding bags over pruned tables are not "
                                  "supported in ember")
    idx, offs = _offsets_for(indices, offsets)
    if bits == 4 and include_last_offset and offsets is not None and offs.size and \
            offs[-1] != idx.size:
        raise RuntimeError("Yout input seems to be incorrect: the last offset value should be "
                           "the size of the indices tensor, but it appears not.")
    n = packed.shape[0]
    if idx.size and (idx.min() < 0 or idx.max() >= n):
        bad = idx[(idx < 0) | (idx >= n)][0]
        raise RuntimeError(f"Index {bad} is out of bounds: {n}")
    psw = None if per_sample_weights is None else np.asarray(per_sample_weights._data)
    return _make(E.bag_sum(packed, bits, idx, offs, psw, include_last_offset))


def _lookup(packed_params, indices, bits):
    if not isinstance(packed_params, EmbeddingPackedParamsBase):
        raise RuntimeError("expected an EmbeddingPackedParamsBase weight")
    idx = np.asarray(indices._data, np.int64)
    packed = packed_params.packed
    n = packed.shape[0]
    if idx.size and (idx.min() < 0 or idx.max() >= n):
        bad = idx[(idx < 0) | (idx >= n)][0]
        raise RuntimeError(f"Index {bad} is out of bounds: {n}")
    rows = E.dequantize_rows(packed[idx.reshape(-1)], bits)
    return _make(rows.reshape(idx.shape + (rows.shape[-1],)))


_BAG_ARGS = ("Tensor indices, Tensor? offsets=None, bool scale_grad_by_freq=False, "
             "int mode=0, bool pruned_weights=False, Tensor? per_sample_weights=None, "
             "Tensor? compressed_indices_mapping=None, bool include_last_offset=False")


def _rowwise(bits):
    def run(weight, indices, offsets=None, scale_grad_by_freq=False, mode=0,
            pruned_weights=False, per_sample_weights=None, compressed_indices_mapping=None,
            include_last_offset=False):
        p = np.asarray(weight._data, np.uint8)
        return _bag(p, bits, indices, offsets, pruned_weights, per_sample_weights,
                    compressed_indices_mapping, include_last_offset)
    return run


def _packed_bag(bits):
    def run(weight, indices, offsets=None, scale_grad_by_freq=False, mode=0,
            pruned_weights=False, per_sample_weights=None, compressed_indices_mapping=None,
            include_last_offset=False):
        return _bag(weight.packed, bits, indices, offsets, pruned_weights, per_sample_weights,
                    compressed_indices_mapping, include_last_offset)
    return run


embedding_bag_byte_prepack = defop("quantized::embedding_bag_byte_prepack(Tensor weight) -> "
                                   "Tensor", composite=_byte_prepack, **_OPTS)
embedding_bag_byte_unpack = defop("quantized::embedding_bag_byte_unpack(Tensor weight) -> "
                                  "Tensor", composite=lambda weight: _unpack_table(weight, 8),
                                  **_OPTS)
embedding_bag_4bit_prepack = defop(
    "quantized::embedding_bag_4bit_prepack(Tensor weight, bool optimized_qparams=False, "
    "int nbins=200, float ratio=0.16) -> Tensor", composite=_4bit_prepack, **_OPTS)
embedding_bag_4bit_unpack = defop("quantized::embedding_bag_4bit_unpack(Tensor weight) -> "
                                  "Tensor", composite=lambda weight: _unpack_table(weight, 4),
                                  **_OPTS)
embedding_bag_byte_rowwise_offsets = defop(
    f"quantized::embedding_bag_byte_rowwise_offsets(Tensor weight, {_BAG_ARGS}) -> Tensor",
    composite=_rowwise(8), **_OPTS)
embedding_bag_4bit_rowwise_offsets = defop(
    f"quantized::embedding_bag_4bit_rowwise_offsets(Tensor weight, {_BAG_ARGS}) -> Tensor",
    composite=_rowwise(4), **_OPTS)
embedding_bag_prepack = defop("quantized::embedding_bag_prepack(Tensor weight) -> Any",
                              composite=_embedding_bag_prepack, **_OPTS)
embedding_bag_unpack = defop("quantized::embedding_bag_unpack(Any W_prepack) -> Tensor",
                             composite=lambda W_prepack: W_prepack.unpack(), **_OPTS)
embedding_byte = defop("quantized::embedding_byte(Any weight, Tensor indices, "
                       "bool pruned_weights=False) -> Tensor",
                       composite=lambda weight, indices, pruned_weights=False:
                       _lookup(weight, indices, 8), **_OPTS)
embedding_4bit = defop("quantized::embedding_4bit(Any weight, Tensor indices, "
                       "bool pruned_weights=False) -> Tensor",
                       composite=lambda weight, indices, pruned_weights=False:
                       _lookup(weight, indices, 4), **_OPTS)
embedding_bag_byte = defop(f"quantized::embedding_bag_byte(Any weight, {_BAG_ARGS}) -> Tensor",
                           composite=_packed_bag(8), **_OPTS)
embedding_bag_4bit = defop(f"quantized::embedding_bag_4bit(Any weight, {_BAG_ARGS}) -> Tensor",
                           composite=_packed_bag(4), **_OPTS)
