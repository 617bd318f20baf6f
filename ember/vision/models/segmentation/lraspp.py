"""Lite R-ASPP (torchvision's layout) on a dilated MobileNetV3-Large."""
from collections import OrderedDict

from ember import nn
from ember.nn import functional as F
from .. import mobilenetv3
from .._api import WeightsEnum, register_model
from ._utils import IntermediateLayerGetter, _check_builder_args, _mobilenet_stages

__all__ = ["LRASPP", "lraspp_mobilenet_v3_large", "LRASPP_MobileNet_V3_Large_Weights"]


class LRASPPHead(nn.Module):
    """high -> 1x1 conv/BN/ReLU gated by a pooled sigmoid, upsampled to low's size; the sum
    of a classifier on it and one on the low-level features."""

    def __init__(self, low_channels, high_channels, num_classes, inter_channels):
        super().__init__()
        self.cbr = nn.Sequential(nn.Conv2d(high_channels, inter_channels, 1, bias=False),
                                 nn.BatchNorm2d(inter_channels), nn.ReLU(inplace=True))
        self.scale = nn.Sequential(nn.AdaptiveAvgPool2d(1),
                                   nn.Conv2d(high_channels, inter_channels, 1, bias=False), nn.Sigmoid())
        self.low_classifier = nn.Conv2d(low_channels, num_classes, 1)
        self.high_classifier = nn.Conv2d(inter_channels, num_classes, 1)

    def forward(self, input):
        low, high = input["low"], input["high"]
        x = self.cbr(high) * self.scale(high)
        x = F.interpolate(x, size=low.shape[-2:], mode="bilinear", align_corners=False)
        return self.low_classifier(low) + self.high_classifier(x)


class LRASPP(nn.Module):
    """Outputs ``{"out": (N, K, H, W)}``."""

    def __init__(self, backbone, low_channels, high_channels, num_classes, inter_channels=128):
        super().__init__()
        self.backbone = backbone
        self.classifier = LRASPPHead(low_channels, high_channels, num_classes, inter_channels)

    def forward(self, input):
        out = self.classifier(self.backbone(input))
        result = OrderedDict()
        result["out"] = F.interpolate(out, size=input.shape[-2:], mode="bilinear", align_corners=False)
        return result


LRASPP_MobileNet_V3_Large_Weights = WeightsEnum("LRASPP_MobileNet_V3_Large_Weights",
                                                [("COCO_WITH_VOC_LABELS_V1", "coco")])
LRASPP_MobileNet_V3_Large_Weights.DEFAULT = LRASPP_MobileNet_V3_Large_Weights.COCO_WITH_VOC_LABELS_V1


@register_model()
def lraspp_mobilenet_v3_large(*, weights=None, progress=True, num_classes=None,
                              weights_backbone=None, **kwargs):
    """``lraspp_mobilenet_v3_large`` with fresh weights (no auxiliary output)."""
    if kwargs.pop("aux_loss", None):
        raise NotImplementedError("This model does not use auxiliary loss")
    _check_builder_args("lraspp_mobilenet_v3_large", weights, weights_backbone, kwargs)
    features = mobilenetv3.mobilenet_v3_large(dilated=True).features
    stages = _mobilenet_stages(features)
    low, high = stages[-4], stages[-1]
    backbone = IntermediateLayerGetter(features, {str(low): "low", str(high): "high"})
    return LRASPP(backbone, features[low].out_channels, features[high].out_channels,
                  21 if num_classes is None else num_classes)
