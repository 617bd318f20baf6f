"""Lite R-ASPP (torchvision's layout) on a dilated MobileNetV3-Large."""
from collections import OrderedDict

from ember import nn
from ember.nn import functional as F
from .. import mobilenetv3
from .._api import WeightsEnum, register_model
from ._utils import IntermediateLayerGetter, _check_builder_args, _mobilenet_stages

__all__ = ["LRASPP", "lraspp_mobilenet_v3_large", "LRASPP_MobileNet_V3_Large_Weights"]


def _upsample_to(x, like):
    """Bilinear resize of (N, C, h, w) ``x`` to the (H, W) of ``like``."""
    return F.interpolate(x, size=like.shape[-2:], mode="bilinear", align_corners=False)


class LRASPPHead(nn.Module):
    """Lite R-ASPP (Howard et al. 2019, section 6.4): the high-level map (N, C_h, h, w) is
    projected to ``inter_channels`` (1x1 conv, BN, ReLU) and gated by a globally pooled
    sigmoid of another 1x1 projection; upsampled to the low-level map (N, C_l, H, W), it and
    the low-level map each get a 1x1 classifier, summed -> (N, num_classes, H, W)."""

    def __init__(self, low_channels, high_channels, num_classes, inter_channels):
        super().__init__()

        def project():
            return nn.Conv2d(high_channels, inter_channels, 1, bias=False)
        self.cbr = nn.Sequential(project(), nn.BatchNorm2d(inter_channels), nn.ReLU(inplace=True))
        self.scale = nn.Sequential(nn.AdaptiveAvgPool2d(1), project(), nn.Sigmoid())
        for name, width in (("low_classifier", low_channels), ("high_classifier", inter_channels)):
            self.add_module(name, nn.Conv2d(width, num_classes, 1))

    def forward(self, input):
        high, low = input["high"], input["low"]
        gated = _upsample_to(self.cbr(high) * self.scale(high), low)
        return self.high_classifier(gated) + self.low_classifier(low)


class LRASPP(nn.Module):
    """(N, 3, H, W) -> ``{"out": (N, num_classes, H, W)}``; ``backbone`` returns the
    {"low", "high"} feature maps."""

    def __init__(self, backbone, low_channels, high_channels, num_classes, inter_channels=128):
        super().__init__()
        self.add_module("backbone", backbone)
        self.add_module("classifier", LRASPPHead(low_channels, high_channels, num_classes, inter_channels))

    def forward(self, input):
        logits = self.classifier(self.backbone(input))
        return OrderedDict(out=_upsample_to(logits, input))


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
