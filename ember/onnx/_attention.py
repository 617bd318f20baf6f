"""``F.multi_head_attention_forward`` during export, written without sizes.

ember's attention reshapes with the batch and sequence sizes of the run, which a trace
records as constants; this version splits and merges heads with ``unflatten``/``flatten``
and ``permute`` only, so the exported graph takes any batch and sequence length. Calls it
does not cover (bias_k/v, static k/v, add_zero_attn, dropout in training, unbatched input,
separate projection weights) run the original.
"""
from __future__ import annotations

import math

import ember
from ember.nn import functional as F


def covered(query, key, value, bias_k, bias_v, add_zero_attn, dropout_p, training,
            use_separate_proj_weight, static_k, static_v, is_causal, attn_mask, **_):
    return (query.dim() == 3 and bias_k is None and bias_v is None and not add_zero_attn
            and not (training and dropout_p > 0) and not use_separate_proj_weight
            and static_k is None and static_v is None
            and not (is_causal and attn_mask is None))


def multi_head_attention(query, key, value, num_heads, in_proj_weight, in_proj_bias,
                         out_proj_weight, out_proj_bias, key_padding_mask=None,
                         need_weights=True, attn_mask=None, average_attn_weights=True, **_):
    """query (L, B, E), key/value (S, B, E) -> (output (L, B, E), weights or None)."""
    from ember.nn.functional._attention import _additive_mask
    E = query.shape[-1]
    head_dim = E // num_heads
    wq, wk, wv = in_proj_weight.chunk(3)
    bq, bk, bv = (None, None, None) if in_proj_bias is None else in_proj_bias.chunk(3)

    def heads(x, w, b):                       # (T, B, E) -> (B, H, T, head_dim)
        y = F.linear(x.transpose(0, 1), w, b)
        return y.unflatten(-1, (num_heads, head_dim)).transpose(1, 2)
    q, k, v = heads(query, wq, bq), heads(key, wk, bk), heads(value, wv, bv)
    scores = ember.matmul(q * (1.0 / math.sqrt(head_dim)), k.transpose(-2, -1))
    kpm = _additive_mask(key_padding_mask, "key_padding_mask", query.dtype, attn_mask,
                         "attn_mask")
    mask = _additive_mask(attn_mask, "attn_mask", query.dtype)
    if mask is not None:                      # (L, S) or (B*H, L, S)
        scores = scores + (mask if mask.dim() == 2 else
                           mask.unflatten(0, (-1, num_heads)))
    if kpm is not None:                       # (B, S)
        scores = scores + kpm.unsqueeze(1).unsqueeze(2)
    weights = F.softmax(scores, dim=-1)
    out = ember.matmul(weights, v).transpose(1, 2).flatten(-2)      # (B, L, E)
    out = F.linear(out, out_proj_weight, out_proj_bias).transpose(0, 1)
    if not need_weights:
        return out, None
    return out, (weights.mean(dim=1) if average_attn_weights else weights)
