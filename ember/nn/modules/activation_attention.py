"""MultiheadAttention (torch.nn.MultiheadAttention, which torch keeps in activation.py).
There is no fused fast path: every call goes through F.multi_head_attention_forward."""
from typing import Optional, Tuple

from ember import Tensor, empty
from ember.nn.init import constant_, xavier_normal_, xavier_uniform_
from ember.nn.parameter import Parameter
from ember.nn.modules.linear import NonDynamicallyQuantizableLinear
from ember.nn.modules.module import Module
from ember.nn import functional as F
from ember.nn.functional._attention import _additive_mask

__all__ = ['MultiheadAttention']


class MultiheadAttention(Module):
    """Attention over ``num_heads`` heads of size embed_dim // num_heads. With kdim == vdim
    == embed_dim the q, k, v projections are one packed ``in_proj_weight`` (3E, E);
    otherwise ``q_proj_weight``, ``k_proj_weight``, ``v_proj_weight``."""

    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True, add_bias_kv=False,
                 add_zero_attn=False, kdim=None, vdim=None, batch_first=False, device=None,
                 dtype=None):
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(f'embed_dim and num_heads must be greater than 0, got '
                             f'embed_dim={embed_dim} and num_heads={num_heads} instead')
        super().__init__()
        kw = dict(device=device, dtype=dtype)

        def fresh(*shape):
            return Parameter(empty(shape, **kw))
        self.embed_dim, self.num_heads, self.dropout = embed_dim, num_heads, dropout
        self.kdim = embed_dim if kdim is None else kdim
        self.vdim = embed_dim if vdim is None else vdim
        self._qkv_same_embed_dim = self.kdim == self.vdim == embed_dim
        self.batch_first = batch_first
        self.head_dim, leftover = divmod(embed_dim, num_heads)
        if leftover:
            raise AssertionError('embed_dim must be divisible by num_heads')
        # parameters in torch's registration order (it fixes the state_dict order)
        packed = self._qkv_same_embed_dim
        if packed:
            self.in_proj_weight = fresh(3 * embed_dim, embed_dim)
        for name, cols in (('q_proj_weight', embed_dim), ('k_proj_weight', self.kdim),
                           ('v_proj_weight', self.vdim)):
            self.register_parameter(name, None if packed else fresh(embed_dim, cols))
        if not packed:                     # registered after q, k, v when they are separate
            self.register_parameter('in_proj_weight', None)
        self.register_parameter('in_proj_bias', fresh(3 * embed_dim) if bias else None)
        self.out_proj = NonDynamicallyQuantizableLinear(embed_dim, embed_dim, bias=bias, **kw)
        self.bias_k = fresh(1, 1, embed_dim) if add_bias_kv else None
        self.bias_v = fresh(1, 1, embed_dim) if add_bias_kv else None
        self.add_zero_attn = add_zero_attn
        self._reset_parameters()

    def _projections(self):
        """The input projection weights in use: the packed one or q, k, v."""
        names = ('in_proj_weight',) if self._qkv_same_embed_dim else \
            ('q_proj_weight', 'k_proj_weight', 'v_proj_weight')
        return [getattr(self, name) for name in names]

    def _reset_parameters(self):
        for weight in self._projections():
            xavier_uniform_(weight)
        if self.in_proj_bias is not None:
            for bias in (self.in_proj_bias, self.out_proj.bias):
                constant_(bias, 0.0)
        for extra in (self.bias_k, self.bias_v):
            if extra is not None:
                xavier_normal_(extra)

    def forward(self, query: Tensor, key: Tensor, value: Tensor,
                key_padding_mask: Optional[Tensor] = None, need_weights: bool = True,
                attn_mask: Optional[Tensor] = None, average_attn_weights: bool = True,
                is_causal: bool = False) -> Tuple[Tensor, Optional[Tensor]]:
        """query (L, B, E), key (S, B, kdim), value (S, B, vdim) ((B, L, E) ... with
        batch_first; no B when unbatched). Returns (output like query, weights (B, L, S)
        averaged over heads or (B, H, L, S); None unless ``need_weights``)."""
        key_padding_mask = _additive_mask(key_padding_mask, 'key_padding_mask', query.dtype,
                                          attn_mask, 'attn_mask')
        attn_mask = _additive_mask(attn_mask, 'attn_mask', query.dtype)
        flip = self.batch_first and query.dim() == 3
        if flip:                   # to sequence-first, keeping `query is key is value`
            if key is value:
                if query is key:
                    query = key = value = query.transpose(1, 0)
                else:
                    query, key = [t.transpose(1, 0) for t in (query, key)]
                    value = key
            else:
                query, key, value = [t.transpose(1, 0) for t in (query, key, value)]
        out, weights = F.multi_head_attention_forward(
            query, key, value, self.embed_dim, self.num_heads, dropout_p=self.dropout,
            add_zero_attn=self.add_zero_attn, use_separate_proj_weight=not self._qkv_same_embed_dim,
            attn_mask=attn_mask, key_padding_mask=key_padding_mask, is_causal=is_causal,
            need_weights=need_weights, average_attn_weights=average_attn_weights,
            training=self.training, in_proj_weight=self.in_proj_weight,
            in_proj_bias=self.in_proj_bias, bias_k=self.bias_k, bias_v=self.bias_v,
            q_proj_weight=self.q_proj_weight, k_proj_weight=self.k_proj_weight,
            v_proj_weight=self.v_proj_weight, out_proj_weight=self.out_proj.weight,
            out_proj_bias=self.out_proj.bias)
        return (out.transpose(1, 0) if flip else out), weights

    def merge_masks(self, attn_mask, key_padding_mask, query):
        """One (B, H, L, L) mask from a (L, L) / (B*H, L, L) attn_mask and a (B, L)
        key_padding_mask, both additive; returns (mask, type): 1 padding only, 2 otherwise."""
        if attn_mask is None:
            return key_padding_mask, (None if key_padding_mask is None else 1)
        bsz, seq, _ = query.shape
        if attn_mask.dim() == 3:
            mask = attn_mask.view(bsz, -1, seq, seq)
        else:
            mask = attn_mask.view(1, 1, seq, seq).expand(bsz, self.num_heads, -1, -1)
        if key_padding_mask is not None:
            mask = mask + key_padding_mask.view(bsz, 1, 1, seq).expand(-1, self.num_heads, -1, -1)
        return mask, 2
