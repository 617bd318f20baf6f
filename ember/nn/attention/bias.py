"""torch.nn.attention.bias: causal masks for scaled_dot_product_attention.

``causal_upper_left(L, S)`` keeps key j for query i when j <= i; ``causal_lower_right(L, S)``
aligns the diagonal to the bottom-right corner (j <= i + S - L). A CausalBias is the
(L, S) bool mask as a tensor; passed as ``attn_mask`` it runs SDPA with the mask (upper-left:
``is_causal=True``).
"""
import warnings
from enum import IntEnum

import ember
from ember import Tensor
from ember.nn import functional as F

__all__ = ["causal_upper_left", "causal_lower_right", "CausalVariant", "CausalBias"]


class CausalVariant(IntEnum):
    UPPER_LEFT = 1
    LOWER_RIGHT = 2


def _mask(variant, seq_len_q, seq_len_kv):
    ones = ember.ones(seq_len_q, seq_len_kv, dtype=ember.bool)
    if variant == CausalVariant.UPPER_LEFT:
        return ones.tril()
    return ones.tril(diagonal=seq_len_kv - seq_len_q)


class CausalBias(Tensor):
    """A (seq_len_q, seq_len_kv) causal bool mask that SDPA recognises."""

    def __new__(cls, variant, seq_len_q, seq_len_kv):
        self = _mask(variant, seq_len_q, seq_len_kv).as_subclass(cls)
        self.variant, self.seq_len_q, self.seq_len_kv = variant, seq_len_q, seq_len_kv
        return self

    def __init__(self, variant, seq_len_q, seq_len_kv):
        pass

    def __repr__(self):
        return repr(self._materialize())

    def _materialize(self, device=None):
        """The plain (seq_len_q, seq_len_kv) bool mask."""
        return _mask(self.variant, self.seq_len_q, self.seq_len_kv)

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        if func is F.scaled_dot_product_attention:
            return _sdpa(*args, **kwargs)
        return super().__torch_function__(func, types, args, kwargs)


def _sdpa(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
          enable_gqa=False):
    if is_causal:
        raise ValueError("CausalBias should not be used with causal=True")
    same = attn_mask.seq_len_q == attn_mask.seq_len_kv
    if attn_mask.variant == CausalVariant.UPPER_LEFT or same:
        return F.scaled_dot_product_attention(query, key, value, None, dropout_p, True, scale,
                                              enable_gqa)
    return F.scaled_dot_product_attention(query, key, value, attn_mask._materialize(),
                                          dropout_p, False, scale, enable_gqa)


def causal_upper_left(*size):
    """CausalBias with the diagonal from the top-left corner; size = (seq_len_q, seq_len_kv)."""
    if len(size) != 2:
        raise AssertionError("causal_upper_left only supports 2D tensors")
    return CausalBias(CausalVariant.UPPER_LEFT, size[0], size[1])


def causal_lower_right(*size):
    """CausalBias with the diagonal to the bottom-right corner; size = (seq_len_q, seq_len_kv)."""
    if len(size) != 2:
        raise AssertionError("causal_lower_right only supports 2D tensors")
    if size[0] > size[1]:
        warnings.warn("Lower right causal bias will produce NaNs in the output when "
                      "seq_len_q > seq_len_kv!", UserWarning, stacklevel=2)
    return CausalBias(CausalVariant.LOWER_RIGHT, size[0], size[1])
