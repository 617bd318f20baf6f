"""Feature Pyramid Network (Lin et al. 2017, section 3).

Each backbone level C_i gets a 1x1 lateral convolution ("inner" block) to a common width;
the top-down pass walks from the coarsest level, adding each lateral to the nearest-neighbour
upsampled running sum; a 3x3 convolution ("layer" block) smooths each sum into P_i. Extra
blocks may append coarser levels (a max-pooled "pool" level, RetinaNet's P6/P7). Module
names follow torchvision's state_dict layout."""
from collections import OrderedDict

import ember
from ember import nn
from ember.nn import functional as F
from .misc import Conv2dNormActivation

__all__ = ["FeaturePyramidNetwork", "ExtraFPNBlock", "LastLevelMaxPool", "LastLevelP6P7"]


def _kaiming_init(module):
    """Every Conv2d inside: kaiming-uniform weights (a=1), zero bias."""
    for conv in (m for m in module.modules() if isinstance(m, nn.Conv2d)):
        nn.init.kaiming_uniform_(conv.weight, a=1)
        if conv.bias is not None:
            nn.init.constant_(conv.bias, 0)


def _linear_conv(cin, cout, kernel, norm_layer):
    """A same-size convolution (optionally normalized) without activation."""
    return Conv2dNormActivation(cin, cout, kernel_size=kernel, padding=(kernel - 1) // 2,
                                norm_layer=norm_layer, activation_layer=None)


class ExtraFPNBlock(nn.Module):
    """Base of the blocks adding levels after the FPN: ``forward(results, x, names)`` returns
    the extended (results, names); ``x`` are the FPN's inputs."""

    def forward(self, results, x, names):
        raise NotImplementedError


class LastLevelMaxPool(ExtraFPNBlock):
    """Appends "pool": the coarsest output subsampled by 2 (a 1x1 max pool of stride 2)."""

    def forward(self, x, y, names):
        coarsest = x[-1]
        return x + [coarsest[..., ::2, ::2]], names + ["pool"]


class LastLevelP6P7(ExtraFPNBlock):
    """Appends RetinaNet's "p6" (3x3 stride-2 conv of P5, or of C5 when the widths differ)
    and "p7" (the same on ReLU(p6))."""

    def __init__(self, in_channels, out_channels):
        super().__init__()
        for name, cin in (("p6", in_channels), ("p7", out_channels)):
            self.add_module(name, nn.Conv2d(cin, out_channels, kernel_size=3, stride=2, padding=1))
        _kaiming_init(self)
        self.use_P5 = in_channels == out_channels

    def forward(self, p, c, names):
        level6 = self.p6(p[-1] if self.use_P5 else c[-1])
        level7 = self.p7(F.relu(level6))
        return p + [level6, level7], names + ["p6", "p7"]


class FeaturePyramidNetwork(nn.Module):
    """``forward({name: (N, C_i, H_i, W_i)})`` (highest resolution first) ->
    ``OrderedDict({name: (N, out_channels, H_i, W_i)})`` plus any extra levels."""

    def __init__(self, in_channels_list, out_channels, extra_blocks=None, norm_layer=None):
        super().__init__()
        if 0 in list(in_channels_list):
            raise ValueError("in_channels=0 is currently not supported")
        self.inner_blocks = nn.ModuleList([_linear_conv(c, out_channels, 1, norm_layer) for c in in_channels_list])
        self.layer_blocks = nn.ModuleList([_linear_conv(out_channels, out_channels, 3, norm_layer)
                                           for _ in in_channels_list])
        _kaiming_init(self)
        if not isinstance(extra_blocks, (ExtraFPNBlock, type(None))):
            raise TypeError(f"extra_blocks should be of type ExtraFPNBlock not {type(extra_blocks)}")
        self.extra_blocks = extra_blocks

    def get_result_from_inner_blocks(self, x, idx):
        """Lateral 1x1 convolution of level ``idx``."""
        return self.inner_blocks[idx](x)

    def get_result_from_layer_blocks(self, x, idx):
        """3x3 output convolution of level ``idx``."""
        return self.layer_blocks[idx](x)

    def _top_down(self, inputs):
        """Coarsest first: sum_i = lateral_i + upsample(sum_{i+1}); returned finest first."""
        sums, running = [None] * len(inputs), None
        for level in reversed(range(len(inputs))):
            lateral = self.get_result_from_inner_blocks(inputs[level], level)
            if running is not None:
                lateral = lateral + F.interpolate(running, size=lateral.shape[-2:], mode="nearest")
            sums[level] = running = lateral
        return sums

    def forward(self, x):
        names, inputs = list(x.keys()), list(x.values())
        outs = [self.get_result_from_layer_blocks(s, level) for level, s in enumerate(self._top_down(inputs))]
        if self.extra_blocks is not None:
            outs, names = self.extra_blocks(outs, inputs, names)
        return OrderedDict(zip(names, outs))
