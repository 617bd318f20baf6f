"""SqueezeNet 1.0 and 1.1 (Iandola et al. 2016): a stem convolution, then Fire modules
(a 1x1 squeeze feeding concatenated 1x1 and 3x3 expands) between max-pools, and a 1x1
convolution classifier averaged over the image."""
import ember
import ember.nn as nn

from ._api import define_builders
from ._utils import init_weights

__all__ = ["SqueezeNet", "squeezenet1_0", "squeezenet1_1"]


class Fire(nn.Module):
    def __init__(self, inplanes, squeeze_planes, expand1x1_planes, expand3x3_planes):
        super().__init__()
        self.inplanes = inplanes
        for name, conv in (("squeeze", nn.Conv2d(inplanes, squeeze_planes, 1)),
                           ("expand1x1", nn.Conv2d(squeeze_planes, expand1x1_planes, 1)),
                           ("expand3x3", nn.Conv2d(squeeze_planes, expand3x3_planes, 3, padding=1))):
            setattr(self, name, conv)
            setattr(self, name + "_activation", nn.ReLU(inplace=True))

    def forward(self, x):
        s = self.squeeze_activation(self.squeeze(x))
        wide = self.expand1x1_activation(self.expand1x1(s))
        tall = self.expand3x3_activation(self.expand3x3(s))
        return ember.cat([wide, tall], 1)


# version: (stem channels, stem kernel, then "M" for a 3x3/2 max-pool (rounding up) or a
# Fire module's squeeze width, whose two expands are each four times as wide)
_VERSIONS = {
    "1_0": (96, 7, "M 16 16 32 M 32 48 48 64 M 64"),
    "1_1": (64, 3, "M 16 16 M 32 32 M 48 48 64 64"),
}


class SqueezeNet(nn.Module):
    def __init__(self, version="1_0", num_classes=1000, dropout=0.5):
        super().__init__()
        if version not in _VERSIONS:
            raise ValueError(f"Unsupported SqueezeNet version {version}: 1_0 or 1_1 expected")
        self.num_classes = num_classes
        channels, kernel, plan = _VERSIONS[version]
        layers = [nn.Conv2d(3, channels, kernel, 2), nn.ReLU(inplace=True)]
        for item in plan.split():
            if item == "M":
                layers.append(nn.MaxPool2d(3, 2, ceil_mode=True))
            else:
                squeeze = int(item)
                layers.append(Fire(channels, squeeze, 4 * squeeze, 4 * squeeze))
                channels = 8 * squeeze
        self.features = nn.Sequential(*layers)
        head = nn.Conv2d(channels, num_classes, 1)
        self.classifier = nn.Sequential(nn.Dropout(p=dropout), head, nn.ReLU(inplace=True),
                                        nn.AdaptiveAvgPool2d((1, 1)))

        def conv_init(w):  # the classifier starts small, the rest He-uniform
            if w is head.weight:
                nn.init.normal_(w, 0.0, 0.01)
            else:
                nn.init.kaiming_uniform_(w)
        init_weights(self, conv_init)

    def forward(self, x):
        return ember.flatten(self.classifier(self.features(x)), 1)


define_builders(globals(), {
    "squeezenet1_0": ("SqueezeNet1_0_Weights", "1_0"),
    "squeezenet1_1": ("SqueezeNet1_1_Weights", "1_1"),
}, lambda version, kwargs: SqueezeNet(version, **kwargs))
