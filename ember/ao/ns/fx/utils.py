"""Comparison functions of the Numeric Suite (torch.ao.ns.fx.utils): signal-to-quantization
noise ratio, normalized L2 error, cosine similarity.

Each takes two tensors (quantized ones are dequantized first) or two lists/tuples of them
(compared pairwise, a list back); a pair that is not float32 after dequantizing gives None,
as torch's comparison wrapper does."""
from __future__ import annotations

import functools

import ember
import ember.nn.functional as F

__all__ = ["compute_sqnr", "compute_normalized_l2_error", "compute_cosine_similarity"]


def _dequantize_pairs(fn):
    @functools.wraps(fn)
    def inner(x, y):
        if isinstance(x, (list, tuple)):
            return [inner(a, b) for a, b in zip(x, y)]
        if not (isinstance(x, ember.Tensor) and isinstance(y, ember.Tensor)):
            return None
        x = x.dequantize() if x.is_quantized else x
        y = y.dequantize() if y.is_quantized else y
        if x.dtype is not ember.float32 or y.dtype is not ember.float32:
            return None
        return fn(x, y)
    return inner


@_dequantize_pairs
def compute_sqnr(x, y):
    """20 log10(||x|| / ||x - y||) in dB (0-d float32 tensor)."""
    signal = ember.norm(x)
    noise = ember.norm(x - y)
    return 20 * ember.log10(signal / noise)


@_dequantize_pairs
def compute_normalized_l2_error(x, y):
    """sqrt(sum((x - y)^2) / sum(x^2)) (0-d float32 tensor)."""
    return ember.sqrt(((x - y) ** 2).sum() / (x ** 2).sum())


@_dequantize_pairs
def compute_cosine_similarity(x, y):
    """Cosine similarity of the flattened tensors (shape (1,))."""
    return F.cosine_similarity(x.reshape(1, -1), y.reshape(1, -1))
