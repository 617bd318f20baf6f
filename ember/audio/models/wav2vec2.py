"""wav2vec 2.0 (Baevski et al. 2020) with torchaudio's module names, so torchaudio's
state_dicts load: ``feature_extractor.conv_layers.N.{conv,layer_norm}``,
``encoder.feature_projection.{layer_norm,projection}``,
``encoder.transformer.{pos_conv_embed.conv.parametrizations.weight.original0/1, layer_norm,
layers.N.{attention,layer_norm,feed_forward,final_layer_norm}}`` and ``aux`` (older
``weight_g``/``weight_v`` checkpoints load too). Nothing is downloaded."""
import ember
from ember import nn
import ember.nn.functional as F


class ConvLayerBlock(nn.Module):
    """conv (no bias by default) -> optional group/layer norm -> GELU, ``(B, C, T)``."""

    def __init__(self, in_channels, out_channels, kernel_size, stride, bias, layer_norm):
        super().__init__()
        self.kernel_size, self.stride = kernel_size, stride
        self.layer_norm = layer_norm
        self.conv = nn.Conv1d(in_channels, out_channels, kernel_size, stride=stride, bias=bias)

    def forward(self, x, length):
        x = self.conv(x)
        if isinstance(self.layer_norm, nn.LayerNorm):
            x = self.layer_norm(x.transpose(-2, -1)).transpose(-2, -1)
        elif self.layer_norm is not None:
            x = self.layer_norm(x)
        x = F.gelu(x)
        if length is not None:
            length = ember.div(length - self.kernel_size, self.stride, rounding_mode="floor") + 1
            length = ember.clamp(length, min=0)
        return x, length


class FeatureExtractor(nn.Module):
    """``(B, time)`` waveforms -> ``(B, frames, channels)`` features."""

    def __init__(self, conv_layers):
        super().__init__()
        self.conv_layers = conv_layers

    def forward(self, x, length):
        if x.ndim != 2:
            raise ValueError(f"Expected the input Tensor to be 2D (batch, time). Found: "
                             f"{list(x.shape)}")
        x = x.unsqueeze(1)
        for layer in self.conv_layers:
            x, length = layer(x, length)
        return x.transpose(1, 2), length


class FeatureProjection(nn.Module):
    def __init__(self, in_features, out_features, dropout):
        super().__init__()
        self.layer_norm = nn.LayerNorm(in_features)
        self.projection = nn.Linear(in_features, out_features)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        return self.dropout(self.projection(self.layer_norm(x)))


class ConvolutionalPositionalEmbedding(nn.Module):
    """Grouped conv over time (weight-normalised along the kernel dim) added as position."""

    def __init__(self, embed_dim, kernel_size, groups):
        super().__init__()
        self.embed_dim, self.kernel_size = embed_dim, kernel_size
        conv = nn.Conv1d(embed_dim, embed_dim, kernel_size=kernel_size,
                         padding=kernel_size // 2, groups=groups)
        self.conv = nn.utils.parametrizations.weight_norm(conv, name="weight", dim=2)
        self.num_remove = 1 if kernel_size % 2 == 0 else 0

    def forward(self, x):
        x = self.conv(x.transpose(-2, -1))
        if self.num_remove > 0:
            x = x[..., :-self.num_remove]
        return F.gelu(x).transpose(-2, -1)


class SelfAttention(nn.Module):
    """Multi-head self-attention with separate ``k_proj``/``v_proj``/``q_proj``/``out_proj``."""

    def __init__(self, embed_dim, num_heads, dropout=0.0):
        super().__init__()
        head_dim = embed_dim // num_heads
        if head_dim * num_heads != embed_dim:
            raise ValueError(f"`embed_dim ({embed_dim})` is not divisible by "
                             f"`num_heads ({num_heads})`")
        self.embed_dim, self.num_heads, self.head_dim = embed_dim, num_heads, head_dim
        self.dropout = dropout
        self.scaling = head_dim ** -0.5
        self.k_proj = nn.Linear(embed_dim, embed_dim, bias=True)
        self.v_proj = nn.Linear(embed_dim, embed_dim, bias=True)
        self.q_proj = nn.Linear(embed_dim, embed_dim, bias=True)
        self.out_proj = nn.Linear(embed_dim, embed_dim, bias=True)

    def forward(self, x, attention_mask=None):
        B, L, D = x.shape
        shape = (B, L, self.num_heads, self.head_dim)
        q = self.q_proj(x).view(*shape).transpose(2, 1)
        k = self.k_proj(x).view(*shape).permute(0, 2, 3, 1)
        v = self.v_proj(x).view(*shape).transpose(2, 1)
        weights = (self.scaling * q) @ k                          # (B, H, L, L)
        if attention_mask is not None:
            weights = weights + attention_mask
        weights = F.softmax(weights, dim=-1)
        weights = F.dropout(weights, p=self.dropout, training=self.training)
        out = (weights @ v).transpose(2, 1).reshape(B, L, D)
        return self.out_proj(out)


class FeedForward(nn.Module):
    def __init__(self, io_features, intermediate_features, intermediate_dropout,
                 output_dropout):
        super().__init__()
        self.intermediate_dense = nn.Linear(io_features, intermediate_features)
        self.intermediate_dropout = nn.Dropout(intermediate_dropout)
        self.output_dense = nn.Linear(intermediate_features, io_features)
        self.output_dropout = nn.Dropout(output_dropout)

    def forward(self, x):
        x = self.intermediate_dropout(F.gelu(self.intermediate_dense(x)))
        return self.output_dropout(self.output_dense(x))


class EncoderLayer(nn.Module):
    def __init__(self, attention, dropout, layer_norm_first, feed_forward):
        super().__init__()
        self.attention = attention
        self.dropout = nn.Dropout(dropout)
        self.layer_norm = nn.LayerNorm(attention.embed_dim)
        self.layer_norm_first = layer_norm_first
        self.feed_forward = feed_forward
        self.final_layer_norm = nn.LayerNorm(attention.embed_dim)

    def forward(self, x, attention_mask=None):
        residual = x
        if self.layer_norm_first:
            x = self.layer_norm(x)
        x = self.dropout(self.attention(x, attention_mask))
        x = residual + x
        if self.layer_norm_first:
            return x + self.feed_forward(self.final_layer_norm(x))
        x = self.layer_norm(x)
        return self.final_layer_norm(x + self.feed_forward(x))


class Transformer(nn.Module):
    def __init__(self, pos_conv_embed, dropout, layers, layer_norm_first, layer_drop):
        super().__init__()
        self.pos_conv_embed = pos_conv_embed
        self.layer_norm = nn.LayerNorm(pos_conv_embed.embed_dim)
        self.layer_norm_first = layer_norm_first
        self.layer_drop = layer_drop
        self.dropout = nn.Dropout(dropout)
        self.layers = layers

    def _preprocess(self, x):
        x = x + self.pos_conv_embed(x)
        if not self.layer_norm_first:
            x = self.layer_norm(x)
        return self.dropout(x)

    def forward(self, x, attention_mask=None):
        x = self._preprocess(x)
        for layer in self.layers:
            if not (self.training and float(ember.rand(1)) <= self.layer_drop):
                x = layer(x, attention_mask)
        if self.layer_norm_first:
            x = self.layer_norm(x)
        return x

    def get_intermediate_outputs(self, x, attention_mask=None, num_layers=None):
        if num_layers is not None and not 0 < num_layers <= len(self.layers):
            raise ValueError(f"`num_layers` must be between [1, {len(self.layers)}]")
        ret = []
        x = self._preprocess(x)
        for layer in self.layers:
            x = layer(x, attention_mask)
            ret.append(x)
            if num_layers is not None and len(ret) >= num_layers:
                return ret
        return ret


class Encoder(nn.Module):
    def __init__(self, feature_projection, transformer):
        super().__init__()
        self.feature_projection = feature_projection
        self.transformer = transformer

    def _preprocess(self, features, lengths=None):
        x = self.feature_projection(features)
        mask = None
        if lengths is not None:
            B, L, _ = x.shape
            pad = ember.arange(L).expand(B, L) >= lengths[:, None]       # (B, L)
            x = x.masked_fill(pad[..., None], 0.0)
            mask = (-10000.0 * pad.to(x.dtype))[:, None, None, :].expand(B, 1, L, L)
        return x, mask

    def forward(self, features, lengths=None):
        x, mask = self._preprocess(features, lengths)
        return self.transformer(x, attention_mask=mask)

    def extract_features(self, features, lengths=None, num_layers=None):
        x, masks = self._preprocess(features, lengths)
        return self.transformer.get_intermediate_outputs(x, masks, num_layers)


class Wav2Vec2Model(nn.Module):
    """``forward(waveforms (B, T), lengths (B,)?) -> (emissions (B, frames, D),
    frame lengths or None)``; ``extract_features`` gives each transformer layer's output."""

    def __init__(self, feature_extractor, encoder, aux=None):
        super().__init__()
        self.feature_extractor = feature_extractor
        self.encoder = encoder
        self.aux = aux

    def extract_features(self, waveforms, lengths=None, num_layers=None):
        x, lengths = self.feature_extractor(waveforms, lengths)
        return self.encoder.extract_features(x, lengths, num_layers), lengths

    def forward(self, waveforms, lengths=None):
        x, lengths = self.feature_extractor(waveforms, lengths)
        x = self.encoder(x, lengths)
        if self.aux is not None:
            x = self.aux(x)
        return x, lengths


_DEFAULT_CONV = [(512, 10, 5)] + [(512, 3, 2)] * 4 + [(512, 2, 2)] * 2


def wav2vec2_model(extractor_mode, extractor_conv_layer_config, extractor_conv_bias,
                   encoder_embed_dim, encoder_projection_dropout, encoder_pos_conv_kernel,
                   encoder_pos_conv_groups, encoder_num_layers, encoder_num_heads,
                   encoder_attention_dropout, encoder_ff_interm_features,
                   encoder_ff_interm_dropout, encoder_dropout, encoder_layer_norm_first,
                   encoder_layer_drop, aux_num_out):
    """Build a ``Wav2Vec2Model`` from torchaudio's configuration arguments
    (``extractor_mode`` "group_norm" or "layer_norm")."""
    if extractor_mode not in ("group_norm", "layer_norm"):
        raise ValueError(f"Invalid extractor_mode: {extractor_mode}")
    config = extractor_conv_layer_config or _DEFAULT_CONV
    blocks, in_channels = [], 1
    for i, (out_channels, kernel, stride) in enumerate(config):
        norm = None
        if extractor_mode == "group_norm" and i == 0:
            norm = nn.GroupNorm(num_groups=out_channels, num_channels=out_channels, affine=True)
        elif extractor_mode == "layer_norm":
            norm = nn.LayerNorm(normalized_shape=out_channels, elementwise_affine=True)
        blocks.append(ConvLayerBlock(in_channels, out_channels, kernel, stride,
                                     extractor_conv_bias, norm))
        in_channels = out_channels
    extractor = FeatureExtractor(nn.ModuleList(blocks))
    projection = FeatureProjection(in_channels, encoder_embed_dim, encoder_projection_dropout)
    pos = ConvolutionalPositionalEmbedding(encoder_embed_dim, encoder_pos_conv_kernel,
                                           encoder_pos_conv_groups)
    layers = nn.ModuleList(
        EncoderLayer(SelfAttention(encoder_embed_dim, encoder_num_heads,
                                   encoder_attention_dropout),
                     encoder_dropout, encoder_layer_norm_first,
                     FeedForward(encoder_embed_dim, encoder_ff_interm_features,
                                 encoder_ff_interm_dropout, encoder_dropout))
        for _ in range(encoder_num_layers))
    transformer = Transformer(pos, encoder_dropout, layers, encoder_layer_norm_first,
                              encoder_layer_drop)
    aux = nn.Linear(encoder_embed_dim, aux_num_out) if aux_num_out is not None else None
    return Wav2Vec2Model(extractor, Encoder(projection, transformer), aux)


def wav2vec2_base(encoder_projection_dropout=0.1, encoder_attention_dropout=0.1,
                  encoder_ff_interm_dropout=0.1, encoder_dropout=0.1, encoder_layer_drop=0.1,
                  aux_num_out=None):
    """wav2vec 2.0 "base": 7 conv layers (group norm), 12 post-norm layers of 768, 12 heads."""
    return wav2vec2_model("group_norm", None, False, 768, encoder_projection_dropout, 128, 16,
                          12, 12, encoder_attention_dropout, 3072, encoder_ff_interm_dropout,
                          encoder_dropout, False, encoder_layer_drop, aux_num_out)


def wav2vec2_large(encoder_projection_dropout=0.1, encoder_attention_dropout=0.1,
                   encoder_ff_interm_dropout=0.1, encoder_dropout=0.1, encoder_layer_drop=0.1,
                   aux_num_out=None):
    """wav2vec 2.0 "large": 24 post-norm layers of 1024, 16 heads."""
    return wav2vec2_model("group_norm", None, False, 1024, encoder_projection_dropout, 128, 16,
                          24, 16, encoder_attention_dropout, 4096, encoder_ff_interm_dropout,
                          encoder_dropout, False, encoder_layer_drop, aux_num_out)
