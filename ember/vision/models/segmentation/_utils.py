"""What the segmentation models share: the backbone tap (IntermediateLayerGetter), the
backbone + classifier(s) + upsampling model, and the FCN head."""
from collections import OrderedDict

from ember import nn
from ember.nn import functional as F


class IntermediateLayerGetter(nn.ModuleDict):
    """The children of ``model`` up to the last one named in ``return_layers``; ``forward(x)``
    runs them in order and returns ``{return_layers[name]: output}`` in an OrderedDict."""

    def __init__(self, model, return_layers):
        names = [name for name, _ in model.named_children()]
        if not set(return_layers).issubset(names):
            raise ValueError("return_layers are not present in model")
        wanted = dict(return_layers)
        remaining = set(wanted)
        layers = OrderedDict()
        for name, module in model.named_children():
            layers[name] = module
            remaining.discard(name)
            if not remaining:
                break
        super().__init__(layers)
        self.return_layers = {str(k): str(v) for k, v in wanted.items()}

    def forward(self, x):
        out = OrderedDict()
        for name, module in self.items():
            x = module(x)
            if name in self.return_layers:
                out[self.return_layers[name]] = x
        return out


class _SimpleSegmentationModel(nn.Module):
    """backbone -> {"out": classifier(features["out"]), "aux": aux_classifier(features["aux"])},
    each upsampled (bilinear) to the input's (H, W). Input (N, 3, H, W)."""
    __constants__ = ["aux_classifier"]

    def __init__(self, backbone, classifier, aux_classifier=None):
        super().__init__()
        self.backbone = backbone
        self.classifier = classifier
        self.aux_classifier = aux_classifier

    def forward(self, x):
        size = x.shape[-2:]
        features = self.backbone(x)
        result = OrderedDict()
        result["out"] = F.interpolate(self.classifier(features["out"]), size=size, mode="bilinear",
                                      align_corners=False)
        if self.aux_classifier is not None:
            result["aux"] = F.interpolate(self.aux_classifier(features["aux"]), size=size,
                                          mode="bilinear", align_corners=False)
        return result


class FCNHead(nn.Sequential):
    """3x3 conv to in/4 channels, BN, ReLU, dropout 0.1, 1x1 conv to ``channels``."""

    def __init__(self, in_channels, channels):
        inter = in_channels // 4
        super().__init__(nn.Conv2d(in_channels, inter, 3, padding=1, bias=False),
                         nn.BatchNorm2d(inter), nn.ReLU(), nn.Dropout(0.1),
                         nn.Conv2d(inter, channels, 1))


def _check_builder_args(name, weights, weights_backbone, kwargs):
    """Refuse pretrained weights (nothing is downloaded); ``weights_backbone`` defaults to None."""
    from .._api import _check_weights, _no_pretrained
    _check_weights(name, weights, kwargs)
    if weights_backbone is not None and weights_backbone is not False:
        _no_pretrained(name, weights_backbone)


def _mobilenet_stages(features):
    """Indices of the stem, of each stride-2 block and of the last layer of MobileNetV3 features."""
    return [0] + [i for i, b in enumerate(features) if getattr(b, "_is_cn", False)] + [len(features) - 1]
