"""Building blocks of torchvision.ops.misc: conv-norm-activation stacks, a frozen batch norm,
squeeze-and-excitation, an MLP and a permutation module."""
import ember
import ember.nn as nn

__all__ = ["Conv2dNormActivation", "FrozenBatchNorm2d", "SqueezeExcitation", "MLP", "Permute"]


def _centered_padding(kernel_size, dilation):
    """Padding that keeps the size at stride 1: (k - 1) // 2 * d, per dimension if needed."""
    if isinstance(kernel_size, int) and isinstance(dilation, int):
        return (kernel_size - 1) // 2 * dilation
    dims = len(dilation) if isinstance(kernel_size, int) else len(kernel_size)
    ks = [kernel_size] * dims if isinstance(kernel_size, int) else list(kernel_size)
    ds = [dilation] * dims if isinstance(dilation, int) else list(dilation)
    return tuple((k - 1) // 2 * d for k, d in zip(ks, ds))


def _activation(layer, inplace):
    return layer() if inplace is None else layer(inplace=inplace)


class ConvNormActivation(nn.Sequential):
    """Convolution, then ``norm_layer`` and ``activation_layer`` when not None. The padding
    defaults to keeping the size, the bias to "only without a norm layer"."""

    def __init__(self, in_channels, out_channels, kernel_size=3, stride=1, padding=None, groups=1,
                 norm_layer=nn.BatchNorm2d, activation_layer=nn.ReLU, dilation=1, inplace=True,
                 bias=None, conv_layer=nn.Conv2d):
        if padding is None:
            padding = _centered_padding(kernel_size, dilation)
        conv = conv_layer(in_channels, out_channels, kernel_size, stride, padding, dilation=dilation,
                          groups=groups, bias=norm_layer is None if bias is None else bias)
        stack = [conv]
        if norm_layer is not None:
            stack.append(norm_layer(out_channels))
        if activation_layer is not None:
            stack.append(_activation(activation_layer, inplace))
        super().__init__(*stack)
        self.out_channels = out_channels


class Conv2dNormActivation(ConvNormActivation):
    def __init__(self, in_channels, out_channels, kernel_size=3, stride=1, padding=None, groups=1,
                 norm_layer=nn.BatchNorm2d, activation_layer=nn.ReLU, dilation=1, inplace=True, bias=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, groups, norm_layer,
                         activation_layer, dilation, inplace, bias, nn.Conv2d)


class FrozenBatchNorm2d(nn.Module):
    """Batch norm as a fixed per-channel affine map: statistics and affine parameters are
    buffers, so nothing trains and ``num_batches_tracked`` is ignored when loading."""

    def __init__(self, num_features, eps=1e-5):
        super().__init__()
        self.eps = eps
        for name, fill in (("weight", 1), ("bias", 0), ("running_mean", 0), ("running_var", 1)):
            self.register_buffer(name, ember.full((num_features,), float(fill)))

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):
        state_dict.pop(prefix + "num_batches_tracked", None)
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)

    def forward(self, x):
        scale = self.weight * (self.running_var + self.eps).rsqrt()
        shift = self.bias - self.running_mean * scale
        return x * scale[:, None, None] + shift[:, None, None]

    def __repr__(self):
        return f"{type(self).__name__}({self.weight.shape[0]}, eps={self.eps})"


class SqueezeExcitation(nn.Module):
    """Squeeze-and-excitation (Hu et al. 2017): channels rescaled by a gate computed from
    their global average through a two-layer 1x1-conv bottleneck."""

    def __init__(self, input_channels, squeeze_channels, activation=nn.ReLU, scale_activation=nn.Sigmoid):
        super().__init__()
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc1 = nn.Conv2d(input_channels, squeeze_channels, 1)
        self.fc2 = nn.Conv2d(squeeze_channels, input_channels, 1)
        self.activation = activation()
        self.scale_activation = scale_activation()

    def _scale(self, input):
        squeezed = self.activation(self.fc1(self.avgpool(input)))
        return self.scale_activation(self.fc2(squeezed))

    def forward(self, input):
        return input * self._scale(input)


class MLP(nn.Sequential):
    """Linear layers to each width of ``hidden_channels``; all but the last are followed by
    ``norm_layer`` (when given) and ``activation_layer``; each by a Dropout."""

    def __init__(self, in_channels, hidden_channels, norm_layer=None, activation_layer=nn.ReLU,
                 inplace=None, bias=True, dropout=0.0):
        stack, width = [], in_channels
        for i, out in enumerate(hidden_channels):
            stack.append(nn.Linear(width, out, bias=bias))
            if i < len(hidden_channels) - 1:
                if norm_layer is not None:
                    stack.append(norm_layer(out))
                stack.append(_activation(activation_layer, inplace))
            stack.append(_activation(lambda **kw: nn.Dropout(dropout, **kw), inplace))
            width = out
        super().__init__(*stack)


class Permute(nn.Module):
    def __init__(self, dims):
        super().__init__()
        self.dims = dims

    def forward(self, x):
        return ember.permute(x, self.dims)
