"""torch.ao.nn.quantizable.MultiheadAttention: nn.MultiheadAttention with separate Q/K/V
Linears, a FloatFunctional scaling of q and quant/dequant stubs around the float core, so
``prepare``/``convert`` can quantize the projections (``ember.ao.nn.quantized
.MultiheadAttention``). The scores, masks and softmax run in float; the output projection
and the returned weights are quantized after conversion."""
from __future__ import annotations

import ember
from ember import nn

__all__ = ["MultiheadAttention"]


class MultiheadAttention(nn.MultiheadAttention):
    """Same arguments as nn.MultiheadAttention; forward returns (output, weights or None)."""
    _FLOAT_MODULE = nn.MultiheadAttention

    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True, add_bias_kv=False,
                 add_zero_attn=False, kdim=None, vdim=None, batch_first=False, device=None,
                 dtype=None):
        super().__init__(embed_dim, num_heads, dropout, bias, add_bias_kv, add_zero_attn,
                         kdim, vdim, batch_first, device=device, dtype=dtype)
        if add_bias_kv or add_zero_attn:
            raise NotImplementedError("quantizable MultiheadAttention: add_bias_kv and "
                                      "add_zero_attn are not supported by ember")
        from ember.ao.quantization.stubs import DeQuantStub, QuantStub   # (import cycle)
        from ember.ao.nn.quantized.modules.functional_modules import FloatFunctional
        kw = {"device": device, "dtype": dtype}
        self.head_dim = embed_dim // num_heads
        self.out_proj = nn.Linear(embed_dim, embed_dim, bias=bias, **kw)
        self.linear_Q = nn.Linear(embed_dim, embed_dim, bias=bias, **kw)
        self.linear_K = nn.Linear(self.kdim, embed_dim, bias=bias, **kw)
        self.linear_V = nn.Linear(self.vdim, embed_dim, bias=bias, **kw)
        self.q_scaling_product = FloatFunctional()
        self.quant_attn_output = QuantStub()
        self.quant_attn_output_weights = QuantStub()
        self.dequant_q, self.dequant_k, self.dequant_v = DeQuantStub(), DeQuantStub(), \
            DeQuantStub()

    def _get_name(self):
        return "QuantizableMultiheadAttention"

    @classmethod
    def from_float(cls, other):
        """The observed module for float ``other`` (with a ``qconfig``): its projection
        weights split into linear_Q/K/V, observers attached by ``prepare``."""
        if type(other) is not cls._FLOAT_MODULE:
            raise AssertionError(f"expected {cls._FLOAT_MODULE}, got {type(other)}")
        if not hasattr(other, "qconfig"):
            raise AssertionError("The float module must have 'qconfig'")
        observed = cls(other.embed_dim, other.num_heads, other.dropout,
                       other.in_proj_bias is not None, other.bias_k is not None,
                       other.add_zero_attn, other.kdim, other.vdim, other.batch_first)
        observed.bias_k, observed.bias_v = other.bias_k, other.bias_v
        observed.qconfig = other.qconfig
        E = other.embed_dim
        with ember.no_grad():
            observed.out_proj.weight = nn.Parameter(other.out_proj.weight.detach().clone())
            if other.out_proj.bias is not None:
                observed.out_proj.bias = nn.Parameter(other.out_proj.bias.detach().clone())
            for i, lin in enumerate((observed.linear_Q, observed.linear_K, observed.linear_V)):
                if other._qkv_same_embed_dim:
                    w = other.in_proj_weight[i * E:(i + 1) * E]
                else:
                    w = (other.q_proj_weight, other.k_proj_weight, other.v_proj_weight)[i]
                lin.weight = nn.Parameter(w.detach().clone())
                if other.in_proj_bias is not None:
                    lin.bias = nn.Parameter(other.in_proj_bias[i * E:(i + 1) * E]
                                            .detach().clone())
        observed.eval()
        return ember.ao.quantization.prepare(observed, inplace=True)

    @classmethod
    def from_observed(cls, other):
        raise NotImplementedError("It looks like you are trying to prepare an MHA module. "
                                  "Please, see the examples on quantizable MHAs.")

    def forward(self, query, key, value, key_padding_mask=None, need_weights=True,
                attn_mask=None, average_attn_weights=True, is_causal=False):
        """query (L, N, E), key/value (S, N, E) ((N, L, E)... with ``batch_first``) ->
        (output like query, weights (N, L, S) averaged over heads, or (N, H, L, S))."""
        if self.batch_first:
            query, key, value = (t.transpose(0, 1) for t in (query, key, value))
        L, N, E = query.shape
        H, D = self.num_heads, self.head_dim
        if D * H != E:
            raise AssertionError("embed_dim must be divisible by num_heads")
        q = self.q_scaling_product.mul_scalar(self.linear_Q(query), float(D) ** -0.5)
        k, v = self.linear_K(key), self.linear_V(value)
        if attn_mask is not None:
            if attn_mask.dtype == ember.uint8:
                attn_mask = attn_mask.to(ember.bool)
            if attn_mask.dim() == 2:
                attn_mask = attn_mask.unsqueeze(0)
        if key_padding_mask is not None and key_padding_mask.dtype == ember.uint8:
            key_padding_mask = key_padding_mask.to(ember.bool)
        q = q.contiguous().view(L, N * H, D).transpose(0, 1)
        k = k.contiguous().view(-1, N * H, D).transpose(0, 1)
        v = v.contiguous().view(-1, N * H, D).transpose(0, 1)
        S = k.shape[1]
        q, k, v = self.dequant_q(q), self.dequant_k(k), self.dequant_v(v)
        w = ember.bmm(q, k.transpose(1, 2))
        if attn_mask is not None:
            if attn_mask.dtype == ember.bool:
                w.masked_fill_(attn_mask, float("-inf"))
            else:
                w = w + attn_mask
        if key_padding_mask is not None:
            w = w.view(N, H, L, S).masked_fill(key_padding_mask.unsqueeze(1).unsqueeze(2),
                                               float("-inf")).view(N * H, L, S)
        w = nn.functional.softmax(w, dim=-1)
        w = nn.functional.dropout(w, p=self.dropout, training=self.training)
        out = ember.bmm(w, v).transpose(0, 1).contiguous().view(L, N, E)
        out = self.out_proj(self.quant_attn_output(out))
        w = self.quant_attn_output_weights(w)
        if self.batch_first:
            out = out.transpose(0, 1)
        if not need_weights:
            return out, None
        w = w.view(N, H, L, S)
        return out, (w.mean(dim=1) if average_attn_weights else w)
