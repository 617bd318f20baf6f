"""DenseNet-121/161/169/201 (Huang et al. 2016): dense blocks, in which every layer sees the
concatenation of all earlier feature maps, joined by halving transitions.
``memory_efficient`` recomputes each layer's concatenation in backward (ember's checkpoint)."""
from collections import OrderedDict
from typing import List

import ember
import ember.nn as nn
import ember.nn.functional as F

from ._api import define_builders
from ._utils import init_weights

__all__ = ["DenseNet", "densenet121", "densenet161", "densenet169", "densenet201"]


def _norm_relu_conv(channels, out, kernel):
    """BN-ReLU-Conv, the pre-activation unit DenseNet composes everything from."""
    return (nn.BatchNorm2d(channels), nn.ReLU(inplace=True),
            nn.Conv2d(channels, out, kernel, padding=kernel // 2, bias=False))


class _DenseLayer(nn.Module):
    """A 1x1 bottleneck to ``bn_size * growth_rate`` channels, then a 3x3 conv producing
    ``growth_rate`` new channels (dropped out with ``drop_rate`` in training)."""

    def __init__(self, num_input_features, growth_rate, bn_size, drop_rate, memory_efficient=False):
        super().__init__()
        inner = bn_size * growth_rate
        self.norm1, self.relu1, self.conv1 = _norm_relu_conv(num_input_features, inner, 1)
        self.norm2, self.relu2, self.conv2 = _norm_relu_conv(inner, growth_rate, 3)
        self.drop_rate = float(drop_rate)
        self.memory_efficient = memory_efficient

    def bn_function(self, inputs: List[ember.Tensor]) -> ember.Tensor:
        """The bottleneck over the concatenated earlier features."""
        return self.conv1(self.relu1(self.norm1(ember.cat(list(inputs), 1))))

    def _any_requires_grad(self, features: List[ember.Tensor]) -> bool:
        for f in features:
            if f.requires_grad:
                return True
        return False

    @ember.jit.unused
    def _checkpointed(self, features: List[ember.Tensor]) -> ember.Tensor:
        from ember.utils.checkpoint import checkpoint
        return checkpoint(lambda *fs: self.bn_function(fs), *features, use_reentrant=False)

    def forward(self, input: List[ember.Tensor]) -> ember.Tensor:
        """``input``: the earlier feature maps (a list), or one tensor."""
        features = [input] if isinstance(input, ember.Tensor) else list(input)
        if self.memory_efficient and self._any_requires_grad(features):
            squeezed = self._checkpointed(features)     # not in scripted code (torch too)
        else:
            squeezed = self.bn_function(features)
        new = self.conv2(self.relu2(self.norm2(squeezed)))
        return F.dropout(new, p=self.drop_rate, training=self.training) if self.drop_rate > 0 else new


class _DenseBlock(nn.ModuleDict):
    _version = 2

    def __init__(self, num_layers, num_input_features, bn_size, growth_rate, drop_rate, memory_efficient=False):
        super().__init__()
        for i in range(num_layers):
            self[f"denselayer{i + 1}"] = _DenseLayer(num_input_features + i * growth_rate, growth_rate,
                                                     bn_size, drop_rate, memory_efficient)

    def forward(self, init_features):
        features = [init_features]
        for layer in self.values():
            features.append(layer(features))
        return ember.cat(features, 1)


class _Transition(nn.Sequential):
    """BN-ReLU-1x1 conv to ``num_output_features``, then a 2x2 average pool."""

    def __init__(self, num_input_features, num_output_features):
        norm, relu, conv = _norm_relu_conv(num_input_features, num_output_features, 1)
        super().__init__(OrderedDict(norm=norm, relu=relu, conv=conv, pool=nn.AvgPool2d(2, 2)))


class DenseNet(nn.Module):
    def __init__(self, growth_rate=32, block_config=(6, 12, 24, 16), num_init_features=64, bn_size=4,
                 drop_rate=0, num_classes=1000, memory_efficient=False):
        super().__init__()
        width = num_init_features
        parts = OrderedDict(conv0=nn.Conv2d(3, width, 7, 2, padding=3, bias=False),
                            norm0=nn.BatchNorm2d(width), relu0=nn.ReLU(inplace=True),
                            pool0=nn.MaxPool2d(3, 2, padding=1))
        for i, depth in enumerate(block_config, 1):
            parts[f"denseblock{i}"] = _DenseBlock(depth, width, bn_size, growth_rate, drop_rate, memory_efficient)
            width += depth * growth_rate
            if i < len(block_config):
                parts[f"transition{i}"] = _Transition(width, width // 2)
                width //= 2
        parts["norm5"] = nn.BatchNorm2d(width)
        self.features = nn.Sequential(parts)
        self.classifier = nn.Linear(width, num_classes)
        init_weights(self, nn.init.kaiming_normal_, zero_linear_bias=True)

    def forward(self, x):
        pooled = F.adaptive_avg_pool2d(F.relu(self.features(x)), (1, 1))
        return self.classifier(ember.flatten(pooled, 1))


# builder: (weights enum, (growth rate, layers per block, stem width))
_MODELS = {
    "densenet121": ("DenseNet121_Weights", (32, (6, 12, 24, 16), 64)),
    "densenet161": ("DenseNet161_Weights", (48, (6, 12, 36, 24), 96)),
    "densenet169": ("DenseNet169_Weights", (32, (6, 12, 32, 32), 64)),
    "densenet201": ("DenseNet201_Weights", (32, (6, 12, 48, 32), 64)),
}

define_builders(globals(), _MODELS, lambda config, kwargs: DenseNet(*config, **kwargs))
