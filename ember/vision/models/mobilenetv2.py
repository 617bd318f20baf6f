"""MobileNetV2 (Sandler et al. 2018): a stack of inverted residual blocks read from the
paper's (expansion t, channels c, repeats n, first stride s) table."""
import ember
import ember.nn as nn

from ..ops.misc import Conv2dNormActivation
from ._api import define_builders
from ._utils import _make_divisible, init_weights, small_normal

__all__ = ["MobileNetV2", "mobilenet_v2"]


class InvertedResidual(nn.Module):
    """1x1 expansion by ``expand_ratio`` (skipped at 1), a 3x3 depthwise convolution (both
    with ReLU6), a linear 1x1 projection; the input is added back when shapes allow."""

    def __init__(self, inp, oup, stride, expand_ratio, norm_layer=None):
        super().__init__()
        if stride not in (1, 2):
            raise ValueError(f"stride should be 1 or 2 instead of {stride}")
        norm_layer = norm_layer or nn.BatchNorm2d
        hidden = int(round(inp * expand_ratio))
        unit = dict(norm_layer=norm_layer, activation_layer=nn.ReLU6)
        expand = [Conv2dNormActivation(inp, hidden, kernel_size=1, **unit)] if expand_ratio != 1 else []
        self.stride = stride
        self.use_res_connect = stride == 1 and inp == oup
        self.conv = nn.Sequential(*expand, Conv2dNormActivation(hidden, hidden, stride=stride, groups=hidden, **unit),
                                  nn.Conv2d(hidden, oup, 1, bias=False), norm_layer(oup))
        self.out_channels = oup
        self._is_cn = stride > 1

    def forward(self, x):
        y = self.conv(x)
        return x + y if self.use_res_connect else y


# t, c, n, s: expansion, output channels, repeats, stride of the first repeat
_SETTING = ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
            (6, 160, 3, 2), (6, 320, 1, 1))


class MobileNetV2(nn.Module):
    def __init__(self, num_classes=1000, width_mult=1.0, inverted_residual_setting=None,
                 round_nearest=8, block=None, norm_layer=None, dropout=0.2):
        super().__init__()
        table = _SETTING if inverted_residual_setting is None else inverted_residual_setting
        if len(table) == 0 or len(table[0]) != 4:
            raise ValueError("inverted_residual_setting should be non-empty or a 4-element list, "
                             f"got {table}")
        block = block or InvertedResidual
        norm_layer = norm_layer or nn.BatchNorm2d

        def width(c):
            return _make_divisible(c * width_mult, round_nearest)

        channels = width(32)
        self.last_channel = _make_divisible(1280 * max(1.0, width_mult), round_nearest)
        unit = dict(norm_layer=norm_layer, activation_layer=nn.ReLU6)
        layers = [Conv2dNormActivation(3, channels, stride=2, **unit)]
        for t, c, n, s in table:
            for i in range(n):
                layers.append(block(channels, width(c), s if i == 0 else 1, expand_ratio=t, norm_layer=norm_layer))
                channels = width(c)
        layers.append(Conv2dNormActivation(channels, self.last_channel, kernel_size=1, **unit))
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Sequential(nn.Dropout(p=dropout), nn.Linear(self.last_channel, num_classes))
        init_weights(self, lambda w: nn.init.kaiming_normal_(w, mode="fan_out"), small_normal)

    def forward(self, x):
        pooled = nn.functional.adaptive_avg_pool2d(self.features(x), (1, 1))
        return self.classifier(ember.flatten(pooled, 1))


define_builders(globals(), {"mobilenet_v2": ("MobileNet_V2_Weights", None)},
                lambda _, kwargs: MobileNetV2(**kwargs))
