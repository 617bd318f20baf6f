"""VGG 11/13/16/19, with and without batch norm (Simonyan & Zisserman 2014): a stack of 3x3
convolutions and max-pools read from a configuration string, then a three-layer classifier."""
import ember
import ember.nn as nn

from ._api import define_builders
from . import _utils

__all__ = ["VGG", "vgg11", "vgg11_bn", "vgg13", "vgg13_bn", "vgg16", "vgg16_bn", "vgg19", "vgg19_bn"]


class VGG(nn.Module):
    def __init__(self, features, num_classes=1000, init_weights=True, dropout=0.5):
        super().__init__()
        self.features = features
        self.avgpool = nn.AdaptiveAvgPool2d((7, 7))
        sizes = (512 * 7 * 7, 4096, 4096, num_classes)
        self.classifier = _utils.classifier_head(sizes, dropout, dropout_first=False)
        if init_weights:
            _utils.init_weights(self, _utils.fan_out_normal, _utils.small_normal)

    def forward(self, x):
        return self.classifier(ember.flatten(self.avgpool(self.features(x)), 1))



def make_layers(cfg, batch_norm=False):
    """The feature extractor of a configuration: ``"M"`` is a 2x2 max-pool, a number a 3x3
    convolution to that many channels (+ BatchNorm2d when ``batch_norm``) and a ReLU."""
    layers, channels = [], 3
    for item in cfg:
        if item == "M":
            layers.append(nn.MaxPool2d(2, 2))
            continue
        layers.append(nn.Conv2d(channels, item, 3, padding=1))
        if batch_norm:
            layers.append(nn.BatchNorm2d(item))
        layers.append(nn.ReLU(inplace=True))
        channels = item
    return nn.Sequential(*layers)


def _parse(spec):
    return [word if word == "M" else int(word) for word in spec.split()]


# the configurations of the paper's table 1 (A: 11 layers, B: 13, D: 16, E: 19)
cfgs = {key: _parse(spec) for key, spec in {
    "A": "64 M 128 M 256 256 M 512 512 M 512 512 M",
    "B": "64 64 M 128 128 M 256 256 M 512 512 M 512 512 M",
    "D": "64 64 M 128 128 M 256 256 256 M 512 512 512 M 512 512 512 M",
    "E": "64 64 M 128 128 M 256 256 256 256 M 512 512 512 512 M 512 512 512 512 M",
}.items()}

_MODELS = {}
for _depth, _cfg in ((11, "A"), (13, "B"), (16, "D"), (19, "E")):
    _MODELS[f"vgg{_depth}"] = (f"VGG{_depth}_Weights", (_cfg, False))
    _MODELS[f"vgg{_depth}_bn"] = (f"VGG{_depth}_BN_Weights", (_cfg, True))


def _build(config, kwargs):
    cfg, batch_norm = config
    return VGG(make_layers(cfgs[cfg], batch_norm), **kwargs)


define_builders(globals(), _MODELS, _build)
del _depth, _cfg
