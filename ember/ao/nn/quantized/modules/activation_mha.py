"""torch.ao.nn.quantized.MultiheadAttention: the quantizable one after ``convert``
(quantized projections; float scores and softmax between dequant and quant stubs)."""
from __future__ import annotations

from ember.ao.nn.quantizable.modules import activation as _quantizable

__all__ = ["MultiheadAttention"]


class MultiheadAttention(_quantizable.MultiheadAttention):
    """Made by ``from_observed``; takes quantized query/key/value, returns quantized
    (output, weights)."""
    _FLOAT_MODULE = _quantizable.MultiheadAttention

    def _get_name(self):
        return "QuantizedMultiheadAttention"

    @classmethod
    def from_float(cls, other):
        raise NotImplementedError("It looks like you are trying to convert a non-observed MHA "
                                  "module. Please, see the examples on quantizable MHAs.")

    def dequantize(self):
        """A float ``nn.MultiheadAttention`` with this module's weights dequantized (torch
        2.13's own version fails writing into a leaf; this one builds it under no_grad)."""
        import ember
        from ember import nn

        def parts(lin):
            w = lin.weight()
            b = lin.bias()
            return (w.dequantize() if w.is_quantized else w), b
        fp = nn.MultiheadAttention(self.embed_dim, self.num_heads, self.dropout,
                                   bias=self.linear_Q.bias() is not None, kdim=self.kdim,
                                   vdim=self.vdim, batch_first=self.batch_first)
        qkv = [parts(lin) for lin in (self.linear_Q, self.linear_K, self.linear_V)]
        ow, ob = parts(self.out_proj)
        with ember.no_grad():
            if fp._qkv_same_embed_dim:
                fp.in_proj_weight.copy_(ember.cat([w for w, _ in qkv], 0))
            else:
                for name, (w, _) in zip(("q_proj_weight", "k_proj_weight", "v_proj_weight"),
                                        qkv):
                    getattr(fp, name).copy_(w)
            if fp.in_proj_bias is not None:
                fp.in_proj_bias.copy_(ember.cat([b for _, b in qkv], 0))
            fp.out_proj.weight.copy_(ow)
            if ob is not None:
                fp.out_proj.bias.copy_(ob)
        return fp.train(self.training)

    @classmethod
    def from_observed(cls, other):
        from ember.ao.quantization import convert
        converted = convert(other, inplace=False, remove_qconfig=True)
        converted.__class__ = cls
        return converted
