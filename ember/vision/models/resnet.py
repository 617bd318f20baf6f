"""ResNet, ResNeXt and Wide ResNet (He et al. 2015; Xie et al. 2016; Zagoruyko & Komodakis
2016): one network built from (block, blocks per stage, groups, width per group), with
torchvision's module names so state_dicts are interchangeable."""
import ember
import ember.nn as nn

from ._api import define_builders, fixed_params
from ._utils import fan_out_normal, init_weights

__all__ = ["ResNet", "BasicBlock", "Bottleneck", "resnet18", "resnet34", "resnet50", "resnet101",
           "resnet152", "resnext50_32x4d", "resnext101_32x8d", "resnext101_64x4d",
           "wide_resnet50_2", "wide_resnet101_2"]


def conv3x3(in_planes, out_planes, stride=1, groups=1, dilation=1):
    """3x3 convolution, padded to keep the size at stride 1, without bias."""
    return nn.Conv2d(in_planes, out_planes, 3, stride, padding=dilation, dilation=dilation,
                     groups=groups, bias=False)


def conv1x1(in_planes, out_planes, stride=1):
    return nn.Conv2d(in_planes, out_planes, 1, stride, bias=False)


class _Residual(nn.Module):
    """``relu(branch(x) + shortcut(x))``; the branch is conv1/bn1, conv2/bn2, ... with a ReLU
    between consecutive pairs, the shortcut ``downsample`` (identity when None)."""

    def _build(self, convs, norm_layer, relu_after, downsample, stride):
        for i, conv in enumerate(convs, 1):
            setattr(self, f"conv{i}", conv)
            setattr(self, f"bn{i}", norm_layer(conv.out_channels))
            if i == relu_after:
                self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample
        self.stride = stride
        self.depth = len(convs)

    @property
    def last_norm(self):
        return getattr(self, f"bn{self.depth}")

    def forward(self, x):
        out = x
        for i in range(1, self.depth + 1):
            if i > 1:
                out = self.relu(out)
            out = getattr(self, f"bn{i}")(getattr(self, f"conv{i}")(out))
        shortcut = x if self.downsample is None else self.downsample(x)
        return self.relu(out + shortcut)


class BasicBlock(_Residual):
    """Two 3x3 convolutions (ResNet-18/34)."""
    expansion = 1

    def __init__(self, inplanes, planes, stride=1, downsample=None, groups=1, base_width=64,
                 dilation=1, norm_layer=None):
        super().__init__()
        if groups != 1 or base_width != 64:
            raise ValueError("BasicBlock only supports groups=1 and base_width=64")
        if dilation > 1:
            raise NotImplementedError("Dilation > 1 not supported in BasicBlock")
        convs = [conv3x3(inplanes, planes, stride), conv3x3(planes, planes)]
        self._build(convs, norm_layer or nn.BatchNorm2d, 1, downsample, stride)

    def forward(self, x):         # written out (scriptable): the loop of _Residual.forward
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        shortcut = x if self.downsample is None else self.downsample(x)
        return self.relu(out + shortcut)


class Bottleneck(_Residual):
    """1x1 reduce, 3x3 (grouped, strided, dilated), 1x1 expand by 4 (ResNet-50 and up)."""
    expansion = 4

    def __init__(self, inplanes, planes, stride=1, downsample=None, groups=1, base_width=64,
                 dilation=1, norm_layer=None):
        super().__init__()
        inner = groups * int(planes * base_width / 64.0)
        convs = [conv1x1(inplanes, inner), conv3x3(inner, inner, stride, groups, dilation),
                 conv1x1(inner, planes * self.expansion)]
        self._build(convs, norm_layer or nn.BatchNorm2d, 3, downsample, stride)

    def forward(self, x):         # written out (scriptable): the loop of _Residual.forward
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        shortcut = x if self.downsample is None else self.downsample(x)
        return self.relu(out + shortcut)


class ResNet(nn.Module):
    """A 7x7 stem, four stages of residual blocks (64, 128, 256, 512 planes; the last three
    halve the resolution, or dilate instead where ``replace_stride_with_dilation`` says so),
    global average pooling and a Linear classifier."""

    def __init__(self, block, layers, num_classes=1000, zero_init_residual=False, groups=1,
                 width_per_group=64, replace_stride_with_dilation=None, norm_layer=None):
        super().__init__()
        dilate = [False] * 3 if replace_stride_with_dilation is None else replace_stride_with_dilation
        if len(dilate) != 3:
            raise ValueError("replace_stride_with_dilation should be None or a 3-element tuple, "
                             f"got {replace_stride_with_dilation}")
        self._norm_layer = norm_layer or nn.BatchNorm2d
        self.inplanes, self.dilation = 64, 1
        self.groups, self.base_width = groups, width_per_group
        self.conv1 = nn.Conv2d(3, 64, 7, 2, padding=3, bias=False)
        self.bn1 = self._norm_layer(64)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, 2, padding=1)
        for i, (planes, count) in enumerate(zip((64, 128, 256, 512), layers)):
            stage = self._make_layer(block, planes, count, 1 if i == 0 else 2, i > 0 and dilate[i - 1])
            setattr(self, f"layer{i + 1}", stage)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(512 * block.expansion, num_classes)
        init_weights(self, fan_out_normal)
        if zero_init_residual:  # each block starts as the identity
            for m in self.modules():
                if isinstance(m, _Residual) and m.last_norm.weight is not None:
                    nn.init.zeros_(m.last_norm.weight)

    def _make_layer(self, block, planes, blocks, stride=1, dilate=False):
        """One stage: ``blocks`` blocks, the first changing resolution and width."""
        first_dilation = self.dilation
        if dilate:
            self.dilation, stride = self.dilation * stride, 1
        out = planes * block.expansion
        shortcut = None
        if stride != 1 or self.inplanes != out:
            shortcut = nn.Sequential(conv1x1(self.inplanes, out, stride), self._norm_layer(out))
        shape = dict(groups=self.groups, base_width=self.base_width, norm_layer=self._norm_layer)
        stage = [block(self.inplanes, planes, stride, shortcut, dilation=first_dilation, **shape)]
        stage += [block(out, planes, dilation=self.dilation, **shape) for _ in range(blocks - 1)]
        self.inplanes = out
        return nn.Sequential(*stage)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        for stage in (self.layer1, self.layer2, self.layer3, self.layer4):
            x = stage(x)
        return self.fc(ember.flatten(self.avgpool(x), 1))


_BASIC, _BOTTLE = BasicBlock, Bottleneck
_DEPTHS = {18: (2, 2, 2, 2), 34: (3, 4, 6, 3), 50: (3, 4, 6, 3), 101: (3, 4, 23, 3), 152: (3, 8, 36, 3)}

# builder: (weights enum, (block, depth, fixed groups and width per group))
_MODELS = {
    "resnet18": ("ResNet18_Weights", (_BASIC, 18, {})),
    "resnet34": ("ResNet34_Weights", (_BASIC, 34, {})),
    "resnet50": ("ResNet50_Weights", (_BOTTLE, 50, {})),
    "resnet101": ("ResNet101_Weights", (_BOTTLE, 101, {})),
    "resnet152": ("ResNet152_Weights", (_BOTTLE, 152, {})),
    "resnext50_32x4d": ("ResNeXt50_32X4D_Weights", (_BOTTLE, 50, dict(groups=32, width_per_group=4))),
    "resnext101_32x8d": ("ResNeXt101_32X8D_Weights", (_BOTTLE, 101, dict(groups=32, width_per_group=8))),
    "resnext101_64x4d": ("ResNeXt101_64X4D_Weights", (_BOTTLE, 101, dict(groups=64, width_per_group=4))),
    "wide_resnet50_2": ("Wide_ResNet50_2_Weights", (_BOTTLE, 50, dict(width_per_group=128))),
    "wide_resnet101_2": ("Wide_ResNet101_2_Weights", (_BOTTLE, 101, dict(width_per_group=128))),
}


def _build(config, kwargs):
    block, depth, fixed = config
    return ResNet(block, list(_DEPTHS[depth]), **fixed_params(kwargs, **fixed))


define_builders(globals(), _MODELS, _build)
