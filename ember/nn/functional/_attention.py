"""ember.nn.functional attention: scaled_dot_product_attention and
multi_head_attention_forward (torch.nn.functional), written in ember ops."""
import math
import warnings
from typing import Optional

import ember as torch
from ember import Tensor
from ember._dtype import dtype as _dtype
from ember.overrides import has_torch_function, handle_torch_function
from ember.nn.functional._linear import linear, dropout
from ember.nn.functional._activation import softmax
from ember.nn.functional._vision import pad

__all__ = ["scaled_dot_product_attention", "multi_head_attention_forward"]


def _check_key_padding_mask(key_padding_mask, src_len, bsz):
    if key_padding_mask.shape[0] != bsz:
        raise AssertionError(f"Expected key_padded_mask.shape[0] to be {bsz}, but got "
                             f"{key_padding_mask.shape[0]}")
    if key_padding_mask.shape[1] != src_len:
        raise AssertionError(f"Expected key_padded_mask.shape[1] to be {src_len}, but got "
                             f"{key_padding_mask.shape[1]}")


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
                                 is_causal=False, scale=None, enable_gqa=False):
    """softmax(Q K^T * scale + mask) V, with torch's conventions: a bool ``attn_mask`` marks
    the positions that take part (True = attend), a float mask is added to the scores,
    ``is_causal`` applies a lower-triangular mask, rows with every position masked give 0
    (as torch's CPU kernels do), ``enable_gqa`` repeats key/value heads to match query's."""
    tens = tuple(t for t in (query, key, value, attn_mask) if t is not None)
    if has_torch_function(tens):
        return handle_torch_function(scaled_dot_product_attention, tens, query, key, value,
                                     attn_mask=attn_mask, dropout_p=dropout_p,
                                     is_causal=is_causal, scale=scale, enable_gqa=enable_gqa)
    if query.dim() < 2 or key.dim() < 2 or value.dim() < 2:
        raise RuntimeError("scaled_dot_product_attention: query, key and value must have at "
                           "least 2 dimensions")
    L, S, E = query.size(-2), key.size(-2), query.size(-1)
    if key.size(-1) != E:
        raise RuntimeError(f"Expected query and key to have the same embedding dimension, but "
                           f"got {E} and {key.size(-1)}")
    if key.size(-2) != value.size(-2):
        raise RuntimeError(f"Expected key and value to have the same sequence length, but got "
                           f"{key.size(-2)} and {value.size(-2)}")
    scale_factor = 1.0 / math.sqrt(E) if scale is None else scale
    if enable_gqa and query.dim() >= 3 and key.dim() >= 3:
        hq, hk, hv = query.size(-3), key.size(-3), value.size(-3)
        if hq % hk or hq % hv:
            raise RuntimeError("Number of heads in key and value must divide the number of "
                               "heads in query")
        if hk != hq:
            key = key.repeat_interleave(hq // hk, -3)
        if hv != hq:
            value = value.repeat_interleave(hq // hv, -3)
    scores = torch.matmul(query * scale_factor, key.transpose(-2, -1))
    masked = False
    if is_causal:
        causal = torch.ones(L, S, dtype=torch.bool).tril(0)
        scores = scores.masked_fill(causal.logical_not(), float("-inf"))
        masked = True
    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            scores = scores.masked_fill(attn_mask.logical_not(), float("-inf"))
        else:
            scores = scores + attn_mask
        masked = True
    if masked:
        dead = (scores.detach() == float("-inf")).all(-1, keepdim=True)
        if bool(dead.any()):
            scores = scores.masked_fill(dead, 0.0)
            attn = softmax(scores, -1).masked_fill(dead, 0.0)
        else:
            attn = softmax(scores, -1)
    else:
        attn = softmax(scores, -1)
    if dropout_p > 0.0:
        attn = dropout(attn, dropout_p, True)
    return torch.matmul(attn, value)


def _in_projection_packed(q: Tensor, k: Tensor, v: Tensor, w: Tensor, b: Tensor | None=None):
    E = q.size(-1)
    if k is v:
        if q is k:
            proj = linear(q, w, b)
            proj = proj.unflatten(-1, (3, E)).unsqueeze(0).transpose(0, -2).squeeze(-2).contiguous()
            return (proj[0], proj[1], proj[2])
        else:
            w_q, w_kv = w.split([E, E * 2])
            if b is None:
                b_q = b_kv = None
            else:
                b_q, b_kv = b.split([E, E * 2])
            q_proj = linear(q, w_q, b_q)
            kv_proj = linear(k, w_kv, b_kv)
            kv_proj = kv_proj.unflatten(-1, (2, E)).unsqueeze(0).transpose(0, -2).squeeze(-2).contiguous()
            return (q_proj, kv_proj[0], kv_proj[1])
    else:
        w_q, w_k, w_v = w.chunk(3)
        if b is None:
            b_q = b_k = b_v = None
        else:
            b_q, b_k, b_v = b.chunk(3)
        return (linear(q, w_q, b_q), linear(k, w_k, b_k), linear(v, w_v, b_v))

def _in_projection(q: Tensor, k: Tensor, v: Tensor, w_q: Tensor, w_k: Tensor, w_v: Tensor, b_q: Tensor | None=None, b_k: Tensor | None=None, b_v: Tensor | None=None) -> tuple[Tensor, Tensor, Tensor]:
    Eq, Ek, Ev = (q.size(-1), k.size(-1), v.size(-1))
    if w_q.shape != (Eq, Eq):
        raise AssertionError(f'expecting query weights shape of {(Eq, Eq)}, but got {w_q.shape}')
    if w_k.shape != (Eq, Ek):
        raise AssertionError(f'expecting key weights shape of {(Eq, Ek)}, but got {w_k.shape}')
    if w_v.shape != (Eq, Ev):
        raise AssertionError(f'expecting value weights shape of {(Eq, Ev)}, but got {w_v.shape}')
    if b_q is not None and b_q.shape != (Eq,):
        raise AssertionError(f'expecting query bias shape of {(Eq,)}, but got {b_q.shape}')
    if b_k is not None and b_k.shape != (Eq,):
        raise AssertionError(f'expecting key bias shape of {(Eq,)}, but got {b_k.shape}')
    if b_v is not None and b_v.shape != (Eq,):
        raise AssertionError(f'expecting value bias shape of {(Eq,)}, but got {b_v.shape}')
    return (linear(q, w_q, b_q), linear(k, w_k, b_k), linear(v, w_v, b_v))

def _mha_shape_check(query: Tensor, key: Tensor, value: Tensor, key_padding_mask: Tensor | None, attn_mask: Tensor | None, num_heads: int):
    if query.dim() == 3:
        is_batched = True
        if key.dim() != 3 or value.dim() != 3:
            raise AssertionError(f'For batched (3-D) `query`, expected `key` and `value` to be 3-D but found {key.dim()}-D and {value.dim()}-D tensors respectively')
        if key_padding_mask is not None:
            if key_padding_mask.dim() != 2:
                raise AssertionError(f'For batched (3-D) `query`, expected `key_padding_mask` to be `None` or 2-D but found {key_padding_mask.dim()}-D tensor instead')
        if attn_mask is not None:
            if attn_mask.dim() not in (2, 3):
                raise AssertionError(f'For batched (3-D) `query`, expected `attn_mask` to be `None`, 2-D or 3-D but found {attn_mask.dim()}-D tensor instead')
    elif query.dim() == 2:
        is_batched = False
        if key.dim() != 2 or value.dim() != 2:
            raise AssertionError(f'For unbatched (2-D) `query`, expected `key` and `value` to be 2-D but found {key.dim()}-D and {value.dim()}-D tensors respectively')
        if key_padding_mask is not None:
            if key_padding_mask.dim() != 1:
                raise AssertionError(f'For unbatched (2-D) `query`, expected `key_padding_mask` to be `None` or 1-D but found {key_padding_mask.dim()}-D tensor instead')
        if attn_mask is not None:
            if attn_mask.dim() not in (2, 3):
                raise AssertionError(f'For unbatched (2-D) `query`, expected `attn_mask` to be `None`, 2-D or 3-D but found {attn_mask.dim()}-D tensor instead')
            if attn_mask.dim() == 3:
                expected_shape = (num_heads, query.shape[0], key.shape[0])
                if attn_mask.shape != expected_shape:
                    raise AssertionError(f'Expected `attn_mask` shape to be {expected_shape} but got {attn_mask.shape}')
    else:
        raise AssertionError(f'query should be unbatched 2D or batched 3D tensor but received {query.dim()}-D query tensor')
    return is_batched

def _canonical_mask(mask: Tensor | None, mask_name: str, other_type: Optional[_dtype], other_name: str, target_type, check_other: bool=True) -> Tensor | None:
    if mask is not None:
        _mask_dtype = mask.dtype
        _mask_is_float = torch.is_floating_point(mask)
        if _mask_dtype != torch.bool and (not _mask_is_float):
            raise AssertionError(f'only bool and floating types of {mask_name} are supported')
        if check_other and other_type is not None:
            if _mask_dtype != other_type:
                warnings.warn(f'Support for mismatched {mask_name} and {other_name} is deprecated. Use same type for both instead.', stacklevel=2)
        if not _mask_is_float:
            mask = torch.zeros_like(mask, dtype=target_type).masked_fill_(mask, float('-inf'))
    return mask

def _none_or_dtype(input: Tensor | None) -> Optional[_dtype]:
    if input is None:
        return None
    elif isinstance(input, torch.Tensor):
        return input.dtype
    raise RuntimeError('input to _none_or_dtype() must be None or torch.Tensor')

def multi_head_attention_forward(query: Tensor, key: Tensor, value: Tensor, embed_dim_to_check: int, num_heads: int, in_proj_weight: Tensor | None, in_proj_bias: Tensor | None, bias_k: Tensor | None, bias_v: Tensor | None, add_zero_attn: bool, dropout_p: float, out_proj_weight: Tensor, out_proj_bias: Tensor | None, training: bool=True, key_padding_mask: Tensor | None=None, need_weights: bool=True, attn_mask: Tensor | None=None, use_separate_proj_weight: bool=False, q_proj_weight: Tensor | None=None, k_proj_weight: Tensor | None=None, v_proj_weight: Tensor | None=None, static_k: Tensor | None=None, static_v: Tensor | None=None, average_attn_weights: bool=True, is_causal: bool=False) -> tuple[Tensor, Tensor | None]:
    tens_ops = (query, key, value, in_proj_weight, in_proj_bias, bias_k, bias_v, out_proj_weight, out_proj_bias)
    if has_torch_function(tuple(t for t in tens_ops if t is not None)):
        return handle_torch_function(multi_head_attention_forward, tens_ops, query, key, value, embed_dim_to_check, num_heads, in_proj_weight, in_proj_bias, bias_k, bias_v, add_zero_attn, dropout_p, out_proj_weight, out_proj_bias, training=training, key_padding_mask=key_padding_mask, need_weights=need_weights, attn_mask=attn_mask, is_causal=is_causal, use_separate_proj_weight=use_separate_proj_weight, q_proj_weight=q_proj_weight, k_proj_weight=k_proj_weight, v_proj_weight=v_proj_weight, static_k=static_k, static_v=static_v, average_attn_weights=average_attn_weights)
    is_batched = _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads)
    if not is_batched:
        query = query.unsqueeze(1)
        key = key.unsqueeze(1)
        value = value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    tgt_len, bsz, embed_dim = query.shape
    src_len, _, _ = key.shape
    key_padding_mask = _canonical_mask(mask=key_padding_mask, mask_name='key_padding_mask', other_type=_none_or_dtype(attn_mask), other_name='attn_mask', target_type=query.dtype)
    if is_causal and attn_mask is None:
        raise RuntimeError('Need attn_mask if specifying the is_causal hint. You may use the Transformer module method `generate_square_subsequent_mask` to create this mask.')
    if is_causal and key_padding_mask is None and (not need_weights):
        attn_mask = None
    else:
        attn_mask = _canonical_mask(mask=attn_mask, mask_name='attn_mask', other_type=None, other_name='', target_type=query.dtype, check_other=False)
        if key_padding_mask is not None:
            is_causal = False
    if embed_dim != embed_dim_to_check:
        raise AssertionError(f'was expecting embedding dimension of {embed_dim_to_check}, but got {embed_dim}')
    if isinstance(embed_dim, torch.Tensor):
        head_dim = embed_dim // num_heads
    else:
        head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AssertionError(f'embed_dim {embed_dim} not divisible by num_heads {num_heads}')
    if use_separate_proj_weight:
        if key.shape[:2] != value.shape[:2]:
            raise AssertionError(f"key's sequence and batch dims {key.shape[:2]} do not match value's {value.shape[:2]}")
    elif key.shape != value.shape:
        raise AssertionError(f'key shape {key.shape} does not match value shape {value.shape}')
    if not use_separate_proj_weight:
        if in_proj_weight is None:
            raise AssertionError('use_separate_proj_weight is False but in_proj_weight is None')
        q, k, v = _in_projection_packed(query, key, value, in_proj_weight, in_proj_bias)
    else:
        if q_proj_weight is None:
            raise AssertionError('use_separate_proj_weight is True but q_proj_weight is None')
        if k_proj_weight is None:
            raise AssertionError('use_separate_proj_weight is True but k_proj_weight is None')
        if v_proj_weight is None:
            raise AssertionError('use_separate_proj_weight is True but v_proj_weight is None')
        if in_proj_bias is None:
            b_q = b_k = b_v = None
        else:
            b_q, b_k, b_v = in_proj_bias.chunk(3)
        q, k, v = _in_projection(query, key, value, q_proj_weight, k_proj_weight, v_proj_weight, b_q, b_k, b_v)
    if attn_mask is not None:
        if attn_mask.dim() == 2:
            correct_2d_size = (tgt_len, src_len)
            if attn_mask.shape != correct_2d_size:
                raise RuntimeError(f'The shape of the 2D attn_mask is {attn_mask.shape}, but should be {correct_2d_size}.')
            attn_mask = attn_mask.unsqueeze(0)
        elif attn_mask.dim() == 3:
            correct_3d_size = (bsz * num_heads, tgt_len, src_len)
            if attn_mask.shape != correct_3d_size:
                raise RuntimeError(f'The shape of the 3D attn_mask is {attn_mask.shape}, but should be {correct_3d_size}.')
        else:
            raise RuntimeError(f"attn_mask's dimension {attn_mask.dim()} is not supported")
    if bias_k is not None and bias_v is not None:
        if static_k is not None:
            raise AssertionError('bias cannot be added to static key.')
        if static_v is not None:
            raise AssertionError('bias cannot be added to static value.')
        k = torch.cat([k, bias_k.repeat(1, bsz, 1)])
        v = torch.cat([v, bias_v.repeat(1, bsz, 1)])
        if attn_mask is not None:
            attn_mask = pad(attn_mask, (0, 1))
        if key_padding_mask is not None:
            key_padding_mask = pad(key_padding_mask, (0, 1))
    else:
        if bias_k is not None:
            raise AssertionError('bias_k is set but bias_v is None')
        if bias_v is not None:
            raise AssertionError('bias_v is set but bias_k is None')
    q = q.view(tgt_len, bsz * num_heads, head_dim).transpose(0, 1)
    if static_k is None:
        k = k.view(k.shape[0], bsz * num_heads, head_dim).transpose(0, 1)
    else:
        if static_k.size(0) != bsz * num_heads:
            raise AssertionError(f'expecting static_k.size(0) of {bsz * num_heads}, but got {static_k.size(0)}')
        if static_k.size(2) != head_dim:
            raise AssertionError(f'expecting static_k.size(2) of {head_dim}, but got {static_k.size(2)}')
        k = static_k
    if static_v is None:
        v = v.view(v.shape[0], bsz * num_heads, head_dim).transpose(0, 1)
    else:
        if static_v.size(0) != bsz * num_heads:
            raise AssertionError(f'expecting static_v.size(0) of {bsz * num_heads}, but got {static_v.size(0)}')
        if static_v.size(2) != head_dim:
            raise AssertionError(f'expecting static_v.size(2) of {head_dim}, but got {static_v.size(2)}')
        v = static_v
    if add_zero_attn:
        zero_attn_shape = (bsz * num_heads, 1, head_dim)
        k = torch.cat([k, torch.zeros(zero_attn_shape, dtype=k.dtype, device=k.device)], dim=1)
        v = torch.cat([v, torch.zeros(zero_attn_shape, dtype=v.dtype, device=v.device)], dim=1)
        if attn_mask is not None:
            attn_mask = pad(attn_mask, (0, 1))
        if key_padding_mask is not None:
            key_padding_mask = pad(key_padding_mask, (0, 1))
    src_len = k.size(1)
    if key_padding_mask is not None:
        if True:
            _check_key_padding_mask(key_padding_mask, src_len, bsz)
        key_padding_mask = key_padding_mask.view(bsz, 1, 1, src_len).expand(-1, num_heads, -1, -1).reshape(bsz * num_heads, 1, src_len)
        if attn_mask is None:
            attn_mask = key_padding_mask
        else:
            attn_mask = attn_mask + key_padding_mask
    if not training:
        dropout_p = 0.0
    if need_weights:
        _B, _Nt, E = q.shape
        q_scaled = q * math.sqrt(1.0 / float(E))
        if is_causal and attn_mask is None:
            raise AssertionError('FIXME: is_causal not implemented for need_weights')
        if attn_mask is not None:
            attn_output_weights = torch.baddbmm(attn_mask, q_scaled, k.transpose(-2, -1))
        else:
            attn_output_weights = torch.bmm(q_scaled, k.transpose(-2, -1))
        if True:
            del q_scaled, k
        attn_output_weights = softmax(attn_output_weights, dim=-1)
        if dropout_p > 0.0:
            attn_output_weights = dropout(attn_output_weights, p=dropout_p)
        attn_output = torch.bmm(attn_output_weights, v)
        if True:
            del v
        attn_output = attn_output.transpose(0, 1).reshape(tgt_len * bsz, embed_dim)
        attn_output = linear(attn_output, out_proj_weight, out_proj_bias)
        attn_output = attn_output.view(tgt_len, bsz, attn_output.size(1))
        attn_output_weights = attn_output_weights.view(bsz, num_heads, tgt_len, src_len)
        if average_attn_weights:
            attn_output_weights = attn_output_weights.mean(dim=1)
        if not is_batched:
            attn_output = attn_output.squeeze(1)
            attn_output_weights = attn_output_weights.squeeze(0)
        return (attn_output, attn_output_weights)
    else:
        if attn_mask is not None:
            if attn_mask.size(0) == 1 and attn_mask.dim() == 3:
                attn_mask = attn_mask.unsqueeze(0)
            else:
                attn_mask = attn_mask.view(bsz, num_heads, -1, src_len)
        q = q.view(bsz, num_heads, tgt_len, head_dim)
        k = k.view(bsz, num_heads, src_len, head_dim)
        v = v.view(bsz, num_heads, src_len, head_dim)
        attn_output = scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal)
        if True:
            del q, k, v
        attn_output = attn_output.permute(2, 0, 1, 3).reshape(bsz * tgt_len, embed_dim)
        attn_output = linear(attn_output, out_proj_weight, out_proj_bias)
        attn_output = attn_output.view(tgt_len, bsz, attn_output.size(1))
        if not is_batched:
            attn_output = attn_output.squeeze(1)
        return (attn_output, None)

