"""Lookup tables: ``Embedding`` (index -> row) and ``EmbeddingBag`` (sum/mean/max of the
rows of each bag)."""
from typing import Optional

import ember
from ember import Tensor
from ember.nn import functional as F, init
from ember.nn.parameter import Parameter
from ember.nn.modules.module import Module

__all__ = ["Embedding", "EmbeddingBag"]


def _check_padding_idx(padding_idx, num_embeddings, name):
    """Validate ``padding_idx`` against the table size; negative values count from the end."""
    if padding_idx is None:
        return None
    if (padding_idx > 0 and padding_idx >= num_embeddings) or padding_idx < -num_embeddings:
        raise AssertionError(f"{name} must be within num_embeddings")
    return padding_idx + num_embeddings if padding_idx < 0 else padding_idx


def _checked_weight(weight, num_embeddings, embedding_dim):
    if list(weight.shape) != [num_embeddings, embedding_dim]:
        raise AssertionError("Shape of weight does not match num_embeddings and embedding_dim")
    return weight


def _check_2d(embeddings):
    if embeddings.dim() != 2:
        raise AssertionError("Embeddings parameter is expected to be 2-dimensional")
    return embeddings.shape


class _Table(Module):
    """Shared parts: ``weight`` of shape ``(num_embeddings, embedding_dim)`` drawn from
    N(0, 1), with the ``padding_idx`` row zeroed."""

    def _set_table(self, num_embeddings, embedding_dim, given, trainable, device, dtype):
        """Store the sizes and ``weight``: ``given`` (shape-checked) or a fresh draw."""
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        table = given if given is not None else \
            ember.empty((num_embeddings, embedding_dim), device=device, dtype=dtype)
        self.weight = Parameter(_checked_weight(table, num_embeddings, embedding_dim),
                                requires_grad=trainable)
        if given is None:
            self.reset_parameters()

    def reset_parameters(self):
        init.normal_(self.weight)
        self._fill_padding_idx_with_zero()

    def _fill_padding_idx_with_zero(self):
        if self.padding_idx is None:
            return
        with ember.no_grad():
            self.weight[self.padding_idx] = 0


class Embedding(_Table):
    """``(*) int -> (*, embedding_dim)``: rows of ``weight`` picked by index."""
    __constants__ = ["num_embeddings", "embedding_dim", "padding_idx", "max_norm", "norm_type",
                     "scale_grad_by_freq", "sparse"]

    def __init__(self, num_embeddings, embedding_dim, padding_idx=None, max_norm=None,
                 norm_type=2.0, scale_grad_by_freq=False, sparse=False, _weight=None,
                 _freeze=False, device=None, dtype=None):
        super().__init__()
        self.padding_idx = _check_padding_idx(padding_idx, num_embeddings, "Padding_idx")
        self.max_norm, self.norm_type, self.sparse = max_norm, norm_type, sparse
        self.scale_grad_by_freq = scale_grad_by_freq
        self._set_table(num_embeddings, embedding_dim, _weight, not _freeze, device, dtype)

    def forward(self, input):
        return F.embedding(input, self.weight, padding_idx=self.padding_idx,
                           max_norm=self.max_norm, norm_type=self.norm_type,
                           scale_grad_by_freq=self.scale_grad_by_freq, sparse=self.sparse)

    def extra_repr(self):
        parts = [f"{self.num_embeddings}", f"{self.embedding_dim}"]
        if self.padding_idx is not None:
            parts.append(f"padding_idx={self.padding_idx}")
        if self.max_norm is not None:
            parts.append(f"max_norm={self.max_norm}")
        if self.norm_type != 2:
            parts.append(f"norm_type={self.norm_type}")
        if self.scale_grad_by_freq is not False:
            parts.append(f"scale_grad_by_freq={self.scale_grad_by_freq}")
        if self.sparse is not False:
            parts.append("sparse=True")
        return ", ".join(parts)

    @classmethod
    def from_pretrained(cls, embeddings, freeze=True, padding_idx=None, max_norm=None,
                        norm_type=2.0, scale_grad_by_freq=False, sparse=False):
        """An Embedding using ``embeddings`` (2-D) as its weight; frozen by default."""
        rows, cols = _check_2d(embeddings)
        return cls(rows, cols, padding_idx, max_norm, norm_type, scale_grad_by_freq, sparse,
                   embeddings, freeze)


class EmbeddingBag(_Table):
    """Reduce (``mode`` = 'sum', 'mean' or 'max') the embeddings of each bag: a 2-D input
    ``(B, L)`` is B bags of length L; a 1-D input is cut into bags at ``offsets``.
    Output ``(B, embedding_dim)``."""
    __constants__ = ["num_embeddings", "embedding_dim", "max_norm", "norm_type",
                     "scale_grad_by_freq", "mode", "sparse", "include_last_offset",
                     "padding_idx"]

    def __init__(self, num_embeddings, embedding_dim, max_norm=None, norm_type=2.0,
                 scale_grad_by_freq=False, mode="mean", sparse=False, _weight=None,
                 include_last_offset=False, padding_idx=None, device=None, dtype=None):
        super().__init__()
        self.padding_idx = _check_padding_idx(padding_idx, num_embeddings, "padding_idx")
        self.max_norm, self.norm_type, self.mode, self.sparse = max_norm, norm_type, mode, sparse
        self.scale_grad_by_freq, self.include_last_offset = scale_grad_by_freq, include_last_offset
        self._set_table(num_embeddings, embedding_dim, _weight, True, device, dtype)

    def forward(self, input, offsets: Optional[Tensor] = None,
                per_sample_weights: Optional[Tensor] = None):
        return F.embedding_bag(input, self.weight, offsets, self.max_norm, self.norm_type,
                               self.scale_grad_by_freq, self.mode, self.sparse,
                               per_sample_weights, self.include_last_offset, self.padding_idx)

    def extra_repr(self):
        # torch formats these fields with repr() (so mode prints quoted)
        parts = [repr(self.num_embeddings), repr(self.embedding_dim)]
        if self.max_norm is not None:
            parts.append(f"max_norm={self.max_norm!r}")
        if self.norm_type != 2:
            parts.append(f"norm_type={self.norm_type!r}")
        if self.scale_grad_by_freq is not False:
            parts.append(f"scale_grad_by_freq={self.scale_grad_by_freq!r}")
        parts.append(f"mode={self.mode!r}")
        if self.padding_idx is not None:
            parts.append(f"padding_idx={self.padding_idx!r}")
        return ", ".join(parts)

    @classmethod
    def from_pretrained(cls, embeddings, freeze=True, max_norm=None, norm_type=2.0,
                        scale_grad_by_freq=False, mode="mean", sparse=False,
                        include_last_offset=False, padding_idx=None):
        """An EmbeddingBag using ``embeddings`` (2-D) as its weight; frozen by default."""
        rows, cols = _check_2d(embeddings)
        bag = cls(rows, cols, max_norm, norm_type, scale_grad_by_freq, mode, sparse, embeddings,
                  include_last_offset, padding_idx)
        bag.weight.requires_grad_(not freeze)
        return bag
