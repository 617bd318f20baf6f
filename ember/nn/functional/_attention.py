"""ember.nn.functional attention: scaled_dot_product_attention and
multi_head_attention_forward (torch.nn.functional), written in ember ops.

Layout inside multi_head_attention_forward: inputs are sequence-first (L, B, E); after the
in-projection each of q, k, v is split into heads as (B, H, L, head_dim), and every mask is
brought to an additive float mask that broadcasts against the (B, H, L, S) scores."""
import math
import warnings

import ember as torch
from ember import Tensor
from ember.overrides import has_torch_function, handle_torch_function
from ember.nn.functional._linear import _check_p, _keep_mask, linear, dropout
from ember.nn.functional._activation import softmax
from ember.nn.functional._vision import pad
from ember._ops.attention import sdpa_fused as _sdpa_fused
from ember._state import state as _state
from ember.backends import cuda as _cuda_flags
from ember.autograd.profiler import torch_op_range
from ember.autograd.graph import _matmul_name, rename_node
from ember.amp.autocast_mode import (_AutocastMode, lower_under_autocast as _lower_under_autocast,
                                     outside_autocast as _outside_autocast)

__all__ = ["scaled_dot_product_attention", "multi_head_attention_forward"]


@torch_op_range("aten::scaled_dot_product_attention")
@_lower_under_autocast          # torch's CPU autocast lowers q, k, v (and a float mask), then
@_outside_autocast              # the kernel keeps its own float32 accumulation
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
    if not (_cuda_flags._sdp["math"] or _cuda_flags._sdp["flash"]):
        from ember.nn.attention import _check_viable_backend
        _check_viable_backend()
    if min(t.dim() for t in (query, key, value)) < 2:
        raise RuntimeError("scaled_dot_product_attention: query, key and value must have at "
                           "least 2 dimensions")
    if not query.dtype == key.dtype == value.dtype:
        raise RuntimeError(f"Expected query, key, and value to have the same dtype, but got "
                           f"query.dtype: {_c_type(query.dtype)} key.dtype: "
                           f"{_c_type(key.dtype)} and value.dtype: {_c_type(value.dtype)} "
                           f"instead.")
    L, S, E = query.size(-2), key.size(-2), query.size(-1)
    if key.size(-1) != E:       # torch's math path: the error of its first product
        torch.matmul(query, key.transpose(-2, -1))
        raise RuntimeError(f"Expected query and key to have the same embedding dimension, but "
                           f"got {E} and {key.size(-1)}")
    if key.size(-2) != value.size(-2):
        if max(t.dim() for t in (query, key, value)) != 4:     # the second product's error
            torch.matmul(query.new_empty(query.shape[:-1] + (S,)), value)
        raise RuntimeError(f"Expected key and value to have the same sequence length, but got "
                           f"{key.size(-2)} and {value.size(-2)}")
    if attn_mask is not None and attn_mask.dtype not in (torch.bool, torch.float32,
                                                         query.dtype):
        raise RuntimeError(f"Expected attn_mask dtype to be bool or float or to match query "
                           f"dtype, but got attn_mask.dtype: {_c_type(attn_mask.dtype)} and  "
                           f"query.dtype: {_c_type(query.dtype)} instead.")
    if attn_mask is not None and is_causal:
        # torch's CPU flash kernel (4-d operands, equal head sizes, no dropout, a 2-d or 4-d
        # mask without grad) applies both the mask and the causal one; its math path refuses
        if not (query.dim() == key.dim() == value.dim() == 4 and attn_mask.dim() in (2, 4)
                and value.size(-1) == E and dropout_p == 0.0 and not attn_mask.requires_grad):
            raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not "
                               "be set when is_causal=True")
        attn_mask, is_causal = _with_causal(attn_mask, L, S), False
    scale_factor = 1.0 / math.sqrt(E) if scale is None else scale
    if enable_gqa and query.dim() >= 3 and key.dim() >= 3:
        hq, hk, hv = query.size(-3), key.size(-3), value.size(-3)
        if hq % hk or hq % hv:
            raise RuntimeError("Number of heads in key and value must divide the number of "
                               "heads in ")     # (torch's text ends there)
        if hk != hq:
            key = key.repeat_interleave(hq // hk, -3)
        if hv != hq:
            value = value.repeat_interleave(hq // hv, -3)
    if dropout_p < 0.0 and query.dim() == 4 and value.size(-1) == E and \
            _cuda_flags._sdp["flash"] and not (attn_mask is not None and
                                               attn_mask.requires_grad):
        # torch's CPU dispatch sends only dropout_p > 0 to the math path: a negative one
        # reaches the flash kernel, which refuses any nonzero dropout
        raise RuntimeError("scaled_dot_product_attention_flash_attention: Currently do not "
                           "support dropout > 0")
    if dropout_p > 1.0:         # the math path's dropout (a C++ check: RuntimeError)
        raise RuntimeError(f"dropout probability has to be between 0 and 1, but got "
                           f"{float(dropout_p):g}")     # (a C++ double: 2.0 prints as 2)
    if query.dtype in (torch.float16, torch.bfloat16) and key.dtype == query.dtype and \
            value.dtype == query.dtype and not _other_modes():
        return _low_precision(query, key, value, attn_mask, dropout_p, is_causal, scale_factor)
    if not _flash_path(query, value, attn_mask, dropout_p):
        # Note [SDPA scale]: torch's math path scales query and key by sqrt(scale) each
        # before their product (found by experiment: bit for bit with torch's own ops,
        # where scaling the scores or the query alone misses most outputs); its flash
        # kernel (4-d) scales the scores
        root = math.sqrt(scale_factor)
        query, key, scale_factor = query * root, key * root, 1.0
    if _fusable(query, key, value, attn_mask):
        keep = None
        if dropout_p > 0.0:        # F.dropout's draw, on the probabilities' shape
            _check_p(dropout_p)
            like = query if query.is_contiguous() else torch.empty_like(
                query, memory_format=torch.contiguous_format)   # drawn in logical order
            keep = _keep_mask(query.shape[:-1] + (key.size(-2),), dropout_p, like)
        out = _sdpa_fused(query, key, value, attn_mask, is_causal, scale_factor, keep)[0]
        if out._grad_fn is not None:     # torch's CPU kernel: flash for 4-d without dropout
            flash = query.dim() == 4 and dropout_p == 0.0 and value.size(-1) == E and \
                not (attn_mask is not None and attn_mask.requires_grad)
            rename_node(out._grad_fn, "ScaledDotProductFlashAttentionForCpuBackward0" if flash
                        else _matmul_name(max(query.dim(), key.dim()), value.dim()))
        return out
    scores = torch.matmul(query * scale_factor, key.transpose(-2, -1))
    masked = False
    if is_causal:
        # -inf added above the diagonal, in place (one pass; its backward passes the gradient
        # through, which softmax's backward has already zeroed there); every row keeps its
        # first key, so no row is all -inf (S > 0) and the dead-row check below is skipped
        above = torch.ones(L, S, dtype=torch.bool).triu(1)
        scores.add_(torch.zeros(L, S, dtype=scores.dtype).masked_fill_(above, float("-inf")))
        masked = S == 0
    if attn_mask is not None:
        _mask_fits(scores.shape, attn_mask.shape)
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


def _flash_path(query, value, attn_mask, dropout_p):
    """Does torch's CPU dispatch send this call to its flash kernel (4-d operands, no
    dropout, equal head sizes, a mask without grad, flash enabled) rather than its math
    path?"""
    return query.dim() == 4 and value.dim() == 4 and dropout_p == 0.0 and \
        value.size(-1) == query.size(-1) and _cuda_flags._sdp["flash"] and \
        not (attn_mask is not None and attn_mask.requires_grad)


def _mask_fits(scores_shape, mask_shape):
    """torch's math path adds the mask to the scores in place: a mask that does not
    broadcast to them, or would grow them, raises that in-place add's error."""
    try:
        fits = torch.broadcast_shapes(scores_shape, mask_shape) == scores_shape
    except RuntimeError:
        fits = False
    if not fits:
        torch.zeros(scores_shape).add_(torch.zeros(mask_shape))


def _other_modes():
    """Is a dispatch mode other than (a switched-off) CPU autocast active?"""
    return any(not isinstance(m, _AutocastMode) for m in _state.modes)


def _low_precision(query, key, value, attn_mask, dropout_p, is_causal, scale):
    """Half / bfloat16 attention as torch's CPU kernels compute it. Its flash kernel (4-d,
    no dropout, equal head sizes, a mask without grad): scores and softmax in float32, the
    unnormalised probabilities rounded to the input's dtype for the product with V, divided
    by their float32 row sums, rounded once. Otherwise its math path: everything in float32,
    rounded once at the end."""
    dt = query.dtype
    mask = attn_mask
    if mask is not None and mask.is_floating_point():
        mask = mask.float()
    q, k, v = query.float(), key.float(), value.float()
    if not (query.dim() == 4 and dropout_p == 0.0 and value.size(-1) == query.size(-1) and
            not (attn_mask is not None and attn_mask.requires_grad)):
        return scaled_dot_product_attention(q, k, v, mask, dropout_p, is_causal, scale).to(dt)
    L, S = query.size(-2), key.size(-2)
    scores = torch.matmul(q, k.transpose(-2, -1)) * scale
    if is_causal:
        mask = torch.ones(L, S, dtype=torch.bool).tril()
    if mask is not None:
        scores = scores.masked_fill(mask.logical_not(), float("-inf")) \
            if mask.dtype == torch.bool else scores + mask
    top = scores.detach().amax(-1, keepdim=True)
    top = top.masked_fill(top == float("-inf"), 0.0)       # a fully masked row gives 0
    p = torch.exp(scores - top)
    total = p.sum(-1, keepdim=True)
    total = total.masked_fill(total.detach() == 0, 1.0)
    out = (torch.matmul(p.to(dt).float(), v) / total).to(dt)
    if out._grad_fn is not None:
        rename_node(out._grad_fn, "ScaledDotProductFlashAttentionForCpuBackward0")
    return out


def _with_causal(attn_mask, L, S):
    """``attn_mask`` with the positions above the (top-left aligned) diagonal of the
    (L, S) scores masked out too: bool masks are and-ed, float masks get -inf there."""
    allowed = torch.ones(L, S, dtype=torch.bool).tril()
    if attn_mask.dtype == torch.bool:
        return attn_mask & allowed
    return attn_mask.masked_fill(allowed.logical_not(), float("-inf"))


def _fusable(query, key, value, attn_mask):
    """May ``_sdpa_fused`` (one record, ember/_ops/attention.py) run this call? float32 /
    float64 operands of one dtype with equal leading dims (dropout too), a bool or same-dtype mask
    that broadcasts to the scores without growing them; no dispatch mode active (tracing,
    ONNX export, vmap, forward-mode AD, profiler see the composite ops, as torch's math
    decomposition)."""
    if _state.modes:
        return False
    dt = query.dtype
    if dt not in (torch.float32, torch.float64) or key.dtype != dt or value.dtype != dt:
        return False
    lead = query.shape[:-2]
    if key.shape[:-2] != lead or value.shape[:-2] != lead:
        return False
    if attn_mask is None:
        return True
    if attn_mask.dtype not in (torch.bool, dt):
        return False
    scores = lead + (query.size(-2), key.size(-2))
    try:
        return torch.broadcast_shapes(attn_mask.shape, scores) == scores
    except RuntimeError:
        return False


def _c_type(dtype):
    """The C type name torch prints for a dtype ('float', 'double', 'long int', ...)."""
    return {'float32': 'float', 'float64': 'double', 'float16': 'c10::Half',
            'bfloat16': 'c10::BFloat16', 'int64': 'long int', 'int32': 'int',
            'int16': 'short int', 'int8': 'signed char', 'uint8': 'unsigned char'}.get(
                str(dtype).split('.')[-1], str(dtype))


# ------------------------------------------------------------------ multi-head attention
def _additive_mask(mask, name, dtype, other=None, other_name=''):
    """Bring a mask to the additive form: a bool mask (True = masked out) becomes 0 / -inf
    of ``dtype``; a float mask is returned as is. ``other`` is the mask it is paired with:
    a different dtype there is deprecated (warns)."""
    if other is not None and not isinstance(other, Tensor):
        raise RuntimeError('input to _none_or_dtype() must be None or torch.Tensor')
    if mask is None:
        return None
    is_float = torch.is_floating_point(mask)
    if not is_float and mask.dtype != torch.bool:
        raise AssertionError(f'only bool and floating types of {name} are supported')
    if other is not None and other.dtype != mask.dtype:
        warnings.warn(f'Support for mismatched {name} and {other_name} is deprecated. Use same '
                      f'type for both instead.', stacklevel=3)
    if is_float:
        return mask
    return torch.zeros_like(mask, dtype=dtype).masked_fill_(mask, float('-inf'))


def _check_ranks(query, key, value, key_padding_mask, attn_mask, num_heads):
    """Validate the ranks of a batched (3-D) or unbatched (2-D) call; True when batched."""
    nd = query.dim()
    if nd not in (2, 3):
        raise AssertionError(f'query should be unbatched 2D or batched 3D tensor but received '
                             f'{nd}-D query tensor')
    kind = 'batched (3-D)' if nd == 3 else 'unbatched (2-D)'
    if key.dim() != nd or value.dim() != nd:
        raise AssertionError(f'For {kind} `query`, expected `key` and `value` to be {nd}-D but '
                             f'found {key.dim()}-D and {value.dim()}-D tensors respectively')
    if key_padding_mask is not None and key_padding_mask.dim() != nd - 1:
        raise AssertionError(f'For {kind} `query`, expected `key_padding_mask` to be `None` or '
                             f'{nd - 1}-D but found {key_padding_mask.dim()}-D tensor instead')
    if attn_mask is not None:
        if attn_mask.dim() not in (2, 3):
            raise AssertionError(f'For {kind} `query`, expected `attn_mask` to be `None`, 2-D or '
                                 f'3-D but found {attn_mask.dim()}-D tensor instead')
        if nd == 2 and attn_mask.dim() == 3:
            want = (num_heads, query.shape[0], key.shape[0])
            if attn_mask.shape != want:
                raise AssertionError(f'Expected `attn_mask` shape to be {want} but got '
                                     f'{attn_mask.shape}')
    return nd == 3


def _project(query, key, value, packed_w, bias, separate):
    """The q, k, v in-projections, each (L, B, E). ``packed_w`` (3E, E) holds the three
    stacked; ``separate`` is (w_q, w_k, w_v) otherwise. Self-attention (query is key is
    value) with packed weights is one matmul, key is value one more."""
    biases = (None,) * 3 if bias is None else bias.chunk(3)
    if separate is None:
        E = query.size(-1)
        if key is value:
            if query is key:
                return linear(query, packed_w, bias).chunk(3, -1)
            kv = linear(key, packed_w[E:], None if bias is None else bias[E:]).chunk(2, -1)
            return (linear(query, packed_w[:E], biases[0]),) + tuple(kv)
        weights = packed_w.chunk(3)
    else:
        weights = separate
        Eq = query.size(-1)
        for what, x, w in zip(('query', 'key', 'value'), (query, key, value), weights):
            if w.shape != (Eq, x.size(-1)):
                raise AssertionError(f'expecting {what} weights shape of {(Eq, x.size(-1))}, but '
                                     f'got {w.shape}')
        for what, b in zip(('query', 'key', 'value'), biases):
            if b is not None and b.shape != (Eq,):
                raise AssertionError(f'expecting {what} bias shape of {(Eq,)}, but got {b.shape}')
    return tuple(linear(x, w, b) for x, w, b in zip((query, key, value), weights, biases))


def _heads(x, static, name, bsz, num_heads, head_dim):
    """(S, B, E) -> (B, H, S, head_dim); a given ``static`` (B*H, S, head_dim) replaces it."""
    if static is None:
        if x.numel() != x.shape[0] * bsz * num_heads * head_dim:     # torch's own view's text
            raise RuntimeError(f"shape '[{x.shape[0]}, {bsz * num_heads}, {head_dim}]' is "
                               f"invalid for input of size {x.numel()}")
        return x.reshape(x.shape[0], bsz, num_heads, head_dim).permute(1, 2, 0, 3)
    if static.size(0) != bsz * num_heads:
        raise AssertionError(f'expecting {name}.size(0) of {bsz * num_heads}, but got '
                             f'{static.size(0)}')
    if static.size(2) != head_dim:
        raise AssertionError(f'expecting {name}.size(2) of {head_dim}, but got {static.size(2)}')
    return static.reshape(bsz, num_heads, static.size(1), head_dim)


def multi_head_attention_forward(query, key, value, embed_dim_to_check, num_heads,
                                 in_proj_weight, in_proj_bias, bias_k, bias_v, add_zero_attn,
                                 dropout_p, out_proj_weight, out_proj_bias, training=True,
                                 key_padding_mask=None, need_weights=True, attn_mask=None,
                                 use_separate_proj_weight=False, q_proj_weight=None,
                                 k_proj_weight=None, v_proj_weight=None, static_k=None,
                                 static_v=None, average_attn_weights=True, is_causal=False):
    """query (L, B, E), key (S, B, kdim), value (S, B, vdim), or the same without B.
    key_padding_mask (B, S) and attn_mask (L, S) / (B*H, L, S): True or -inf = masked out.
    Returns (output (L, B, E), weights (B, L, S) averaged over heads / (B, H, L, S), or
    None when ``need_weights`` is False)."""
    arguments = dict(locals())          # every argument, by name, for __torch_function__
    tensors = (query, key, value, in_proj_weight, in_proj_bias, bias_k, bias_v,
               out_proj_weight, out_proj_bias)
    if has_torch_function(tuple(t for t in tensors if t is not None)):
        return handle_torch_function(multi_head_attention_forward, tensors, **arguments)
    batched = _check_ranks(query, key, value, key_padding_mask, attn_mask, num_heads)
    if not batched:                     # work on a batch of one
        query, key, value = (t.unsqueeze(1) for t in (query, key, value))
        key_padding_mask = None if key_padding_mask is None else key_padding_mask.unsqueeze(0)
    (tgt_len, bsz, embed_dim), src_len = query.shape, key.shape[0]

    key_padding_mask = _additive_mask(key_padding_mask, 'key_padding_mask', query.dtype,
                                      attn_mask, 'attn_mask')
    if is_causal and attn_mask is None:
        raise RuntimeError('Need attn_mask if specifying the is_causal hint. You may use the '
                           'Transformer module method `generate_square_subsequent_mask` to '
                           'create this mask.')
    if is_causal and key_padding_mask is None and not need_weights:
        attn_mask = None           # the hint alone drives the fused path below
    else:
        attn_mask = _additive_mask(attn_mask, 'attn_mask', query.dtype)
        is_causal = is_causal and key_padding_mask is None

    if embed_dim != embed_dim_to_check:
        raise AssertionError(f'was expecting embedding dimension of {embed_dim_to_check}, but '
                             f'got {embed_dim}')
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AssertionError(f'embed_dim {embed_dim} not divisible by num_heads {num_heads}')
    if use_separate_proj_weight:
        if key.shape[:2] != value.shape[:2]:
            raise AssertionError(f"key's sequence and batch dims {key.shape[:2]} do not match "
                                 f"value's {value.shape[:2]}")
        for name, w in (('q', q_proj_weight), ('k', k_proj_weight), ('v', v_proj_weight)):
            if w is None:
                raise AssertionError(f'use_separate_proj_weight is True but {name}_proj_weight '
                                     f'is None')
        separate = (q_proj_weight, k_proj_weight, v_proj_weight)
    else:
        if key.shape != value.shape:
            raise AssertionError(f'key shape {key.shape} does not match value shape '
                                 f'{value.shape}')
        if in_proj_weight is None:
            raise AssertionError('use_separate_proj_weight is False but in_proj_weight is None')
        separate = None
    # self-attention with packed weights and nothing appended to k, v: project in the
    # input's own memory layout (batch-major when query is a transposed (B, L, E) tensor, as
    # nn.MultiheadAttention(batch_first=True) passes it) and split heads as views
    fused = (separate is None and query is key and key is value and bias_k is None
             and bias_v is None and static_k is None and static_v is None
             and not add_zero_attn)
    batch_major = fused and query.transpose(0, 1).is_contiguous() and not query.is_contiguous()
    if fused:
        x_in = query.transpose(0, 1) if batch_major else query
        qkv = linear(x_in, in_proj_weight, in_proj_bias)
        if batch_major:           # (B, L, 3E) -> 3 x (B, H, L, head_dim)
            q, k, v = qkv.reshape(bsz, tgt_len, 3, num_heads, head_dim).permute(
                2, 0, 3, 1, 4).unbind(0)
        else:                     # (L, B, 3E) -> 3 x (B, H, L, head_dim)
            q, k, v = qkv.reshape(tgt_len, bsz, 3, num_heads, head_dim).permute(
                2, 1, 3, 0, 4).unbind(0)
    else:
        q, k, v = _project(query, key, value, in_proj_weight, in_proj_bias, separate)

    if attn_mask is not None:      # -> (1 or B*H, L, S)
        want = (tgt_len, src_len) if attn_mask.dim() == 2 else (bsz * num_heads, tgt_len, src_len)
        if attn_mask.dim() not in (2, 3):
            raise RuntimeError(f"attn_mask's dimension {attn_mask.dim()} is not supported")
        if attn_mask.shape != want:
            raise RuntimeError(f'The shape of the {attn_mask.dim()}D attn_mask is '
                               f'{attn_mask.shape}, but should be {want}.')
        if attn_mask.dim() == 2:
            attn_mask = attn_mask.unsqueeze(0)

    def extend_masks():            # one more key position, never masked
        nonlocal attn_mask, key_padding_mask
        attn_mask = None if attn_mask is None else pad(attn_mask, (0, 1))
        key_padding_mask = None if key_padding_mask is None else pad(key_padding_mask, (0, 1))

    if bias_k is not None and bias_v is not None:
        if static_k is not None:
            raise AssertionError('bias cannot be added to static key.')
        if static_v is not None:
            raise AssertionError('bias cannot be added to static value.')
        k, v = (torch.cat([seq, extra.expand(1, bsz, -1)])      # one more key position
                for seq, extra in ((k, bias_k), (v, bias_v)))
        extend_masks()
    elif bias_k is not None:
        raise AssertionError('bias_k is set but bias_v is None')
    elif bias_v is not None:
        raise AssertionError('bias_v is set but bias_k is None')

    if not fused:
        q = _heads(q, None, 'q', bsz, num_heads, head_dim)
        k = _heads(k, static_k, 'static_k', bsz, num_heads, head_dim)
        v = _heads(v, static_v, 'static_v', bsz, num_heads, head_dim)
    if add_zero_attn:
        zeros = torch.zeros((bsz, num_heads, 1, head_dim), dtype=k.dtype, device=k.device)
        k = torch.cat([k, zeros], 2)
        v = torch.cat([v, zeros.to(v.dtype)], 2)
        extend_masks()
    src_len = k.size(2)

    mask = None                    # broadcasts against the (B, H, L, S) scores
    if attn_mask is not None:
        lead = (1, 1) if attn_mask.size(0) == 1 else (bsz, num_heads)
        mask = attn_mask.reshape(lead + (attn_mask.size(1), src_len))
    if key_padding_mask is not None:
        for i, want in enumerate((bsz, src_len)):
            if key_padding_mask.shape[i] != want:
                raise AssertionError(f'Expected key_padded_mask.shape[{i}] to be {want}, but '
                                     f'got {key_padding_mask.shape[i]}')
        kpm = key_padding_mask.reshape(bsz, 1, 1, src_len)
        mask = kpm if mask is None else mask + kpm
    if not training:
        dropout_p = 0.0

    if need_weights:
        q = q * math.sqrt(1.0 / head_dim)
        if mask is None:
            scores = torch.matmul(q, k.transpose(-2, -1))
        else:
            # torch adds the mask inside the product (baddbmm: float16 scores rounded once,
            # not the product and then the sum)
            lead = bsz * num_heads
            scores = torch.baddbmm(
                mask.expand(bsz, num_heads, tgt_len, src_len).reshape(lead, tgt_len, src_len),
                q.reshape(lead, tgt_len, head_dim),
                k.transpose(-2, -1).reshape(lead, head_dim, src_len)).reshape(
                    bsz, num_heads, tgt_len, src_len)
        weights = softmax(scores, dim=-1)
        if dropout_p > 0.0:
            weights = dropout(weights, p=dropout_p)
        out = torch.matmul(weights, v)
    else:
        weights = None
        out = scaled_dot_product_attention(q, k, v, mask, dropout_p, is_causal)
    if batch_major:                # (B, H, L, hd) -> (B, L, E) rows -> (L, B, E) memory
        out = linear(out.transpose(1, 2).reshape(bsz * tgt_len, embed_dim), out_proj_weight,
                     out_proj_bias)
        # in sequence-first memory as torch's: batch_first callers get a transposed view,
        # and a dropout drawn on it (TransformerEncoderLayer's dropout1) takes torch's mask
        out = out.reshape(bsz, tgt_len, out.size(1)).transpose(0, 1).contiguous()
    else:
        out = linear(out.permute(2, 0, 1, 3).reshape(tgt_len * bsz, embed_dim),
                     out_proj_weight, out_proj_bias)
        out = out.reshape(tgt_len, bsz, out.size(1))
    if weights is not None and average_attn_weights:
        weights = weights.mean(dim=1)
    if not batched:
        out = out.squeeze(1)
        weights = None if weights is None else weights.squeeze(0)
    return out, weights
