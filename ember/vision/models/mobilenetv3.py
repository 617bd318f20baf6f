"""MobileNetV3 small and large (Howard et al. 2019): inverted residual blocks with optional
squeeze-and-excitation and hard-swish, read from the paper's tables 1 and 2."""
from functools import partial

import ember
import ember.nn as nn

from ..ops.misc import Conv2dNormActivation, SqueezeExcitation as SElayer
from ._api import define_builders
from ._utils import _make_divisible, init_weights, small_normal

__all__ = ["MobileNetV3", "mobilenet_v3_large", "mobilenet_v3_small"]


class InvertedResidualConfig:
    """One table row, channel counts scaled by ``width_mult`` (rounded to multiples of 8)."""

    def __init__(self, input_channels, kernel, expanded_channels, out_channels, use_se, activation,
                 stride, dilation, width_mult):
        scale = partial(self.adjust_channels, width_mult=width_mult)
        self.input_channels, self.expanded_channels = scale(input_channels), scale(expanded_channels)
        self.out_channels = scale(out_channels)
        self.kernel, self.use_se, self.use_hs = kernel, use_se, activation == "HS"
        self.stride, self.dilation = stride, dilation

    @staticmethod
    def adjust_channels(channels, width_mult):
        return _make_divisible(channels * width_mult, 8)


class InvertedResidual(nn.Module):
    """1x1 expansion (skipped when it would not widen), a depthwise convolution (dilated
    instead of strided when asked), optional squeeze-and-excitation, a linear 1x1 projection;
    the input is added back when the shapes allow."""

    def __init__(self, cnf, norm_layer, se_layer=partial(SElayer, scale_activation=nn.Hardsigmoid)):
        super().__init__()
        if cnf.stride not in (1, 2):
            raise ValueError("illegal stride value")
        self.use_res_connect = cnf.stride == 1 and cnf.input_channels == cnf.out_channels
        self.out_channels = cnf.out_channels
        self._is_cn = cnf.stride > 1
        act = nn.Hardswish if cnf.use_hs else nn.ReLU
        wide = cnf.expanded_channels

        def unit(cin, cout, activation, **conv):
            return Conv2dNormActivation(cin, cout, norm_layer=norm_layer, activation_layer=activation, **conv)
        layers = [unit(cnf.input_channels, wide, act, kernel_size=1)] if wide != cnf.input_channels else []
        layers.append(unit(wide, wide, act, kernel_size=cnf.kernel, groups=wide, dilation=cnf.dilation,
                           stride=1 if cnf.dilation > 1 else cnf.stride))
        if cnf.use_se:
            layers.append(se_layer(wide, _make_divisible(wide // 4, 8)))
        layers.append(unit(wide, cnf.out_channels, None, kernel_size=1))
        self.block = nn.Sequential(*layers)

    def forward(self, input):
        out = self.block(input)
        return out + input if self.use_res_connect else out


class MobileNetV3(nn.Module):
    """A hard-swish stem, the blocks, a 1x1 convolution to six times the last block's width,
    and a two-layer classifier through ``last_channel``."""

    def __init__(self, inverted_residual_setting, last_channel, num_classes=1000, block=None,
                 norm_layer=None, dropout=0.2, **kwargs):
        super().__init__()
        rows = inverted_residual_setting
        if not rows:
            raise ValueError("The inverted_residual_setting should not be empty")
        if any(not isinstance(row, InvertedResidualConfig) for row in rows):
            raise TypeError("The inverted_residual_setting should be List[InvertedResidualConfig]")
        block = block or InvertedResidual
        norm_layer = norm_layer or partial(nn.BatchNorm2d, eps=0.001, momentum=0.01)
        top = 6 * rows[-1].out_channels
        self.features = nn.Sequential(
            Conv2dNormActivation(3, rows[0].input_channels, stride=2, norm_layer=norm_layer,
                                 activation_layer=nn.Hardswish),
            *(block(row, norm_layer) for row in rows),
            Conv2dNormActivation(rows[-1].out_channels, top, kernel_size=1, norm_layer=norm_layer,
                                 activation_layer=nn.Hardswish))
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Sequential(nn.Linear(top, last_channel), nn.Hardswish(inplace=True),
                                        nn.Dropout(p=dropout, inplace=True), nn.Linear(last_channel, num_classes))
        init_weights(self, lambda w: nn.init.kaiming_normal_(w, mode="fan_out"), small_normal)

    def forward(self, x):
        return self.classifier(ember.flatten(self.avgpool(self.features(x)), 1))


# kernel, expanded, out, squeeze-excite, activation (RE: ReLU, HS: hard-swish), stride;
# each row's input is the previous row's output (the first: the stem's 16 channels).
# "/" marks the tail widths ``reduced_tail`` halves, "d" the rows ``dilated`` dilates by 2.
_TABLES = {
    "mobilenet_v3_large": ("""
        3 16 16 - RE 1 | 3 64 24 - RE 2 | 3 72 24 - RE 1 | 5 72 40 SE RE 2 | 5 120 40 SE RE 1
        5 120 40 SE RE 1 | 3 240 80 - HS 2 | 3 200 80 - HS 1 | 3 184 80 - HS 1 | 3 184 80 - HS 1
        3 480 112 SE HS 1 | 3 672 112 SE HS 1 | 5 672 160/ SE HS 2d | 5 960/ 160/ SE HS 1d
        5 960/ 160/ SE HS 1d""", 1280),
    "mobilenet_v3_small": ("""
        3 16 16 SE RE 2 | 3 72 24 - RE 2 | 3 88 24 - RE 1 | 5 96 40 SE HS 2 | 5 240 40 SE HS 1
        5 240 40 SE HS 1 | 5 120 48 SE HS 1 | 5 144 48 SE HS 1 | 5 288 96/ SE HS 2d
        5 576/ 96/ SE HS 1d | 5 576/ 96/ SE HS 1d""", 1024),
}


def _mobilenet_v3_conf(arch, width_mult=1.0, reduced_tail=False, dilated=False, **kwargs):
    """The block configurations and classifier width of ``arch``."""
    if arch not in _TABLES:
        raise ValueError(f"Unsupported model type {arch}")
    table, last = _TABLES[arch]
    divider = 2 if reduced_tail else 1

    def width(word):
        return int(word.rstrip("/")) // (divider if word.endswith("/") else 1)

    setting, channels = [], 16
    for row in table.replace("\n", "|").split("|"):
        if not row.strip():
            continue
        kernel, expanded, out, se, act, stride = row.split()
        dilation = 2 if dilated and stride.endswith("d") else 1
        setting.append(InvertedResidualConfig(channels, int(kernel), width(expanded), width(out), se == "SE",
                                              act, int(stride.rstrip("d")), dilation, width_mult))
        channels = width(out)
    return setting, InvertedResidualConfig.adjust_channels(last // divider, width_mult)


def _build(arch, kwargs):
    shape = {k: kwargs.pop(k) for k in ("width_mult", "reduced_tail", "dilated") if k in kwargs}
    setting, last_channel = _mobilenet_v3_conf(arch, **shape)
    return MobileNetV3(setting, last_channel, **kwargs)


define_builders(globals(), {
    "mobilenet_v3_large": ("MobileNet_V3_Large_Weights", "mobilenet_v3_large"),
    "mobilenet_v3_small": ("MobileNet_V3_Small_Weights", "mobilenet_v3_small"),
}, _build)
