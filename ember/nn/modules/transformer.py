"""Transformer, its encoder/decoder stacks and layers (torch.nn.Transformer ...).

There is no fused inference fast path (nested tensors, a fused encoder layer): every call
composes MultiheadAttention, Linear, Dropout and LayerNorm. Where torch's encoder would run
on nested tensors, its padded positions come out as zeros: ember zeroes them too
(``_nested_padding``). Shapes are (S, B, E), or (B, S, E) with ``batch_first``, or (S, E)
unbatched."""
import copy
import warnings
from typing import Optional

import ember
from ember import Tensor
import ember.nn.functional as F
from ember.nn.init import xavier_uniform_
from ember.nn.functional._attention import _additive_mask
from ember.nn.modules.activation_attention import MultiheadAttention
from ember.nn.modules.container import ModuleList
from ember.nn.modules.dropout import Dropout
from ember.nn.modules.linear import Linear
from ember.nn.modules.module import Module
from ember.nn.modules.normalization import LayerNorm

__all__ = ['Transformer', 'TransformerEncoder', 'TransformerDecoder', 'TransformerEncoderLayer',
           'TransformerDecoderLayer']


def _causal_mask(sz, device=None, dtype=None):
    """(sz, sz) float mask: 0 on and below the diagonal, -inf above."""
    full = ember.full((sz, sz), float('-inf'), dtype=dtype, device=device)
    return ember.triu(full, diagonal=1)


def _is_causal(mask: Optional[Tensor], is_causal: Optional[bool],
               seq_len: Optional[int]) -> bool:
    """An explicit ``is_causal`` wins; None means: is ``mask`` exactly the causal mask?"""
    if is_causal is not None or mask is None:
        return is_causal is True
    size = seq_len if seq_len is not None else mask.size(-2)
    causal = ember.triu(ember.full((size, size), float('-inf'), dtype=mask.dtype,
                                   device=mask.device), diagonal=1)
    return mask.size() == causal.size() and bool((mask == causal).all())


def _seq_len(x: Tensor, batch_first: bool) -> int:
    return x.size(0) if x.dim() == 2 else x.size(1 if batch_first else 0)


def _activation(activation):
    if not isinstance(activation, str):
        return activation
    if activation in ('relu', 'gelu'):
        return getattr(F, activation)
    raise RuntimeError(f'activation should be relu/gelu, not {activation}')


def _norms(n, d_model, eps, bias, kw):
    return [LayerNorm(d_model, eps=eps, bias=bias, **kw) for _ in range(n)]


def _clones(layer, n):
    """``n`` independent deep copies of ``layer``."""
    return ModuleList(copy.deepcopy(layer) for _ in range(n))


class Transformer(Module):
    """Encoder-decoder transformer ("Attention Is All You Need")."""

    def __init__(self, d_model=512, nhead=8, num_encoder_layers=6, num_decoder_layers=6,
                 dim_feedforward=2048, dropout=0.1, activation=F.relu, custom_encoder=None,
                 custom_decoder=None, layer_norm_eps=1e-05, batch_first=False, norm_first=False,
                 bias=True, device=None, dtype=None):
        super().__init__()
        kw = dict(device=device, dtype=dtype)
        layer_args = (d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps,
                      batch_first, norm_first, bias)
        if custom_encoder is None:
            custom_encoder = TransformerEncoder(
                TransformerEncoderLayer(*layer_args, **kw), num_encoder_layers,
                _norms(1, d_model, layer_norm_eps, bias, kw)[0])
        if custom_decoder is None:
            custom_decoder = TransformerDecoder(
                TransformerDecoderLayer(*layer_args, **kw), num_decoder_layers,
                _norms(1, d_model, layer_norm_eps, bias, kw)[0])
        self.encoder, self.decoder = custom_encoder, custom_decoder
        self.d_model, self.nhead, self.batch_first = d_model, nhead, batch_first
        self._reset_parameters()

    def forward(self, src: Tensor, tgt: Tensor, src_mask: Optional[Tensor] = None,
                tgt_mask: Optional[Tensor] = None, memory_mask: Optional[Tensor] = None,
                src_key_padding_mask: Optional[Tensor] = None,
                tgt_key_padding_mask: Optional[Tensor] = None,
                memory_key_padding_mask: Optional[Tensor] = None,
                src_is_causal: Optional[bool] = None, tgt_is_causal: Optional[bool] = None,
                memory_is_causal: bool = False) -> Tensor:
        """src (S, B, E), tgt (T, B, E) -> (T, B, E)."""
        batch_dim = 0 if self.batch_first else 1
        if src.dim() == 3 and src.shape[batch_dim] != tgt.shape[batch_dim]:
            raise RuntimeError('the batch number of src and tgt must be equal')
        if src.shape[-1] != self.d_model or tgt.shape[-1] != self.d_model:
            raise RuntimeError('the feature number of src and tgt must be equal to d_model')
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask,
                              is_causal=src_is_causal)
        return self.decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                            tgt_key_padding_mask=tgt_key_padding_mask,
                            memory_key_padding_mask=memory_key_padding_mask,
                            tgt_is_causal=tgt_is_causal, memory_is_causal=memory_is_causal)

    @staticmethod
    def generate_square_subsequent_mask(sz, device=None, dtype=None):
        """(sz, sz) causal mask: -inf above the diagonal, 0 elsewhere."""
        return _causal_mask(sz, device=device, dtype=dtype)

    def _reset_parameters(self):
        for p in self.parameters():
            if p.dim() > 1:
                xavier_uniform_(p)


def _fast_path_blocker(layer):
    """Why torch's nested-tensor fast path would be off for this layer ('' if it would not)."""
    n = 'encoder_layer'
    if not isinstance(layer, TransformerEncoderLayer):
        return f'{n} was not TransformerEncoderLayer'
    attn = layer.self_attn
    reasons = [
        (layer.norm_first, f'{n}.norm_first was True'),
        (not attn.batch_first, f'{n}.self_attn.batch_first was not True'
                               '(use batch_first for better inference performance)'),
        (not attn._qkv_same_embed_dim, f'{n}.self_attn._qkv_same_embed_dim was not True'),
        (attn.in_proj_bias is None, f'{n}.self_attn was passed bias=False'),
        (not layer.activation_relu_or_gelu, f'{n}.activation_relu_or_gelu was not True'),
        (layer.norm1.eps != layer.norm2.eps, f'{n}.norm1.eps was not equal to {n}.norm2.eps'),
        (attn.num_heads % 2 == 1, f'{n}.self_attn.num_heads is odd'),
    ]
    return next((why for hit, why in reasons if hit), '')


def _any_requires_grad(module: Module) -> bool:
    return any(p.requires_grad for p in module.parameters())


class TransformerEncoder(Module):
    """``num_layers`` deep copies of ``encoder_layer``, then the optional ``norm``."""

    def __init__(self, encoder_layer, num_layers, norm=None, enable_nested_tensor=True,
                 mask_check=True):
        super().__init__()
        self.layers = _clones(encoder_layer, num_layers)
        self.num_layers, self.norm, self.mask_check = num_layers, norm, mask_check
        self.enable_nested_tensor = enable_nested_tensor
        why = _fast_path_blocker(encoder_layer)
        self.use_nested_tensor = False if why else enable_nested_tensor
        if enable_nested_tensor and why:
            warnings.warn(f'enable_nested_tensor is True, but self.use_nested_tensor is False '
                          f'because {why}', stacklevel=2)

    def forward(self, src: Tensor, mask: Optional[Tensor] = None,
                src_key_padding_mask: Optional[Tensor] = None,
                is_causal: Optional[bool] = None) -> Tensor:
        key_padding_mask = src_key_padding_mask
        src_key_padding_mask = _additive_mask(src_key_padding_mask, 'src_key_padding_mask',
                                              src.dtype, mask, 'mask')
        mask = _additive_mask(mask, 'mask', src.dtype)
        seq_len = _seq_len(src, self.layers[0].self_attn.batch_first)
        causal = _is_causal(mask, is_causal, seq_len)
        pad = self._nested_padding(src, mask, key_padding_mask)
        if pad is not None and not ember.jit.is_scripting():
            _warn_nested_prototype()    # torch builds a (strided) nested tensor here
        x = src
        for layer in self.layers:
            x = layer(x, src_mask=mask, is_causal=causal,
                      src_key_padding_mask=src_key_padding_mask)
        x = x if self.norm is None else self.norm(x)
        return x if pad is None else x.masked_fill(pad.unsqueeze(-1), 0.0)

    def _nested_padding(self, src: Tensor, mask: Optional[Tensor],
                        key_padding_mask: Optional[Tensor]) -> Optional[Tensor]:
        """The padded positions (B, S) when torch would take its nested-tensor path (eval,
        no gradient to record, a left-aligned padding mask and no attention mask, no
        autocast): it computes only the real tokens and pads the result with zeros."""
        if not self.use_nested_tensor or key_padding_mask is None or src.dim() != 3 or \
                self.training:
            return None
        for layer in self.layers:
            if layer.training:
                return None
        # torch checks the padding mask's shape here, whatever the other conditions
        if key_padding_mask.dim() != 2:
            raise RuntimeError("Padding mask should be 2D")
        if key_padding_mask.size(0) != src.size(0) or key_padding_mask.size(1) != src.size(1):
            raise RuntimeError("Mask size should match input size")
        if mask is not None:
            return None
        if not ember.jit.is_scripting():
            if ember.is_grad_enabled() and (src.requires_grad or _any_requires_grad(self)):
                return None
            if ember.is_autocast_enabled(src.device.type):
                return None
        elif ember.is_grad_enabled():
            return None
        pad = key_padding_mask if key_padding_mask.dtype == ember.bool else \
            key_padding_mask != 0
        if bool((pad.int().diff(dim=1) < 0).any()):     # a real token after padding: not
            return None                                 # left-aligned, torch's check refuses
        return pad



_NESTED_PROTOTYPE = ("The PyTorch API of nested tensors is in prototype stage and will change "
                     "in the near future. We recommend specifying layout=torch.jagged when "
                     "constructing a nested tensor, as this layout receives active development, "
                     "has better operator coverage, and works with torch.compile.")


def _warn_nested_prototype():
    """torch's warning (once a process) on building a nested tensor, at the user's call."""
    from ember._runtime_flags import user_stacklevel, warn_once
    warn_once("nested tensor prototype", _NESTED_PROTOTYPE, stacklevel=user_stacklevel() + 1)



class TransformerDecoder(Module):
    """``num_layers`` deep copies of ``decoder_layer``, then the optional ``norm``."""

    def __init__(self, decoder_layer, num_layers, norm=None):
        super().__init__()
        self.layers = _clones(decoder_layer, num_layers)
        self.num_layers, self.norm = num_layers, norm

    def forward(self, tgt: Tensor, memory: Tensor, tgt_mask: Optional[Tensor] = None,
                memory_mask: Optional[Tensor] = None,
                tgt_key_padding_mask: Optional[Tensor] = None,
                memory_key_padding_mask: Optional[Tensor] = None,
                tgt_is_causal: Optional[bool] = None, memory_is_causal: bool = False) -> Tensor:
        seq_len = _seq_len(tgt, self.layers[0].self_attn.batch_first)
        causal = _is_causal(tgt_mask, tgt_is_causal, seq_len)
        x = tgt
        for layer in self.layers:
            x = layer(x, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                      tgt_key_padding_mask=tgt_key_padding_mask,
                      memory_key_padding_mask=memory_key_padding_mask, tgt_is_causal=causal,
                      memory_is_causal=memory_is_causal)
        return x if self.norm is None else self.norm(x)


class TransformerEncoderLayer(Module):
    """Self-attention then feed-forward, each with a residual and a LayerNorm."""

    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation=F.relu,
                 layer_norm_eps=1e-05, batch_first=False, norm_first=False, bias=True,
                 device=None, dtype=None):
        super().__init__()
        kw = dict(device=device, dtype=dtype)
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                            batch_first=batch_first, **kw)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **kw)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **kw)
        self.norm_first = norm_first
        self.norm1, self.norm2 = _norms(2, d_model, layer_norm_eps, bias, kw)
        self.dropout1, self.dropout2 = (Dropout(dropout) for _ in range(2))
        activation = _activation(activation)
        # torch's fast-path code: 1 for relu, 2 for gelu (function or module), else 0
        kinds = ((F.relu, ember.nn.ReLU), (F.gelu, ember.nn.GELU))
        self.activation_relu_or_gelu = next(
            (code for code, (fn, cls) in enumerate(kinds, 1)
             if activation is fn or isinstance(activation, cls)), 0)
        self.activation = activation

    def _ff_block(self, x: Tensor) -> Tensor:
        hidden = self.dropout(self.activation(self.linear1(x)))
        return self.dropout2(self.linear2(hidden))

    def _sa_block(self, x: Tensor, attn_mask: Optional[Tensor],
                  key_padding_mask: Optional[Tensor], is_causal: bool = False) -> Tensor:
        y = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                           need_weights=False, is_causal=is_causal)[0]
        return self.dropout1(y)

    def forward(self, src: Tensor, src_mask: Optional[Tensor] = None,
                src_key_padding_mask: Optional[Tensor] = None,
                is_causal: bool = False) -> Tensor:
        src_key_padding_mask = _additive_mask(src_key_padding_mask, 'src_key_padding_mask',
                                              src.dtype, src_mask, 'src_mask')
        src_mask = _additive_mask(src_mask, 'src_mask', src.dtype)
        x = src
        if self.norm_first:        # pre-norm: x + block(norm(x))
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            return x + self._ff_block(self.norm2(x))
        x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
        return self.norm2(x + self._ff_block(x))


class TransformerDecoderLayer(Module):
    """Self-attention, attention over ``memory``, then feed-forward; each with a residual
    and a LayerNorm."""

    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation=F.relu,
                 layer_norm_eps=1e-05, batch_first=False, norm_first=False, bias=True,
                 device=None, dtype=None):
        super().__init__()
        kw = dict(device=device, dtype=dtype)
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout,
                                            batch_first=batch_first, bias=bias, **kw)
        self.multihead_attn = MultiheadAttention(d_model, nhead, dropout=dropout,
                                                 batch_first=batch_first, bias=bias, **kw)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **kw)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **kw)
        self.norm_first = norm_first
        self.norm1, self.norm2, self.norm3 = _norms(3, d_model, layer_norm_eps, bias, kw)
        self.dropout1, self.dropout2, self.dropout3 = (Dropout(dropout) for _ in range(3))
        self.activation = _activation(activation)

    def _ff_block(self, x: Tensor) -> Tensor:
        hidden = self.dropout(self.activation(self.linear1(x)))
        return self.dropout3(self.linear2(hidden))

    def _sa_block(self, x: Tensor, attn_mask: Optional[Tensor],
                  key_padding_mask: Optional[Tensor], is_causal: bool = False) -> Tensor:
        y = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                           need_weights=False, is_causal=is_causal)[0]
        return self.dropout1(y)

    def _mha_block(self, x: Tensor, mem: Tensor, attn_mask: Optional[Tensor],
                   key_padding_mask: Optional[Tensor], is_causal: bool = False) -> Tensor:
        y = self.multihead_attn(x, mem, mem, attn_mask=attn_mask,
                                key_padding_mask=key_padding_mask, need_weights=False,
                                is_causal=is_causal)[0]
        return self.dropout2(y)

    def forward(self, tgt: Tensor, memory: Tensor, tgt_mask: Optional[Tensor] = None,
                memory_mask: Optional[Tensor] = None,
                tgt_key_padding_mask: Optional[Tensor] = None,
                memory_key_padding_mask: Optional[Tensor] = None, tgt_is_causal: bool = False,
                memory_is_causal: bool = False) -> Tensor:
        x = tgt
        if self.norm_first:        # pre-norm: x + block(norm(x))
            x = x + self._sa_block(self.norm1(x), tgt_mask, tgt_key_padding_mask, tgt_is_causal)
            x = x + self._mha_block(self.norm2(x), memory, memory_mask,
                                    memory_key_padding_mask, memory_is_causal)
            return x + self._ff_block(self.norm3(x))
        x = self.norm1(x + self._sa_block(x, tgt_mask, tgt_key_padding_mask, tgt_is_causal))
        x = self.norm2(x + self._mha_block(x, memory, memory_mask, memory_key_padding_mask,
                                           memory_is_causal))
        return self.norm3(x + self._ff_block(x))
