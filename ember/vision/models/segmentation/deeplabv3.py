"""DeepLabV3 (torchvision's layout): ASPP head on a dilated ResNet or MobileNetV3-Large."""
from ember import cat, nn
from ember.nn import functional as F
from .. import mobilenetv3, resnet
from .._api import WeightsEnum, register_model
from ._utils import (FCNHead, IntermediateLayerGetter, _check_builder_args, _mobilenet_stages,
                     _SimpleSegmentationModel)

__all__ = ["DeepLabV3", "DeepLabHead", "ASPP", "deeplabv3_resnet50", "deeplabv3_resnet101",
           "deeplabv3_mobilenet_v3_large", "DeepLabV3_ResNet50_Weights",
           "DeepLabV3_ResNet101_Weights", "DeepLabV3_MobileNet_V3_Large_Weights"]


class DeepLabV3(_SimpleSegmentationModel):
    """Outputs ``{"out": (N, K, H, W)[, "aux": ...]}``."""


def _conv_bn_relu(cin, cout, kernel=1, dilation=1):
    return [nn.Conv2d(cin, cout, kernel, padding=dilation if kernel == 3 else 0,
                      dilation=dilation, bias=False), nn.BatchNorm2d(cout), nn.ReLU()]


class ASPPConv(nn.Sequential):
    def __init__(self, in_channels, out_channels, dilation):
        super().__init__(*_conv_bn_relu(in_channels, out_channels, 3, dilation))


class ASPPPooling(nn.Sequential):
    """Global average, 1x1 conv, BN, ReLU, upsampled back to the input's (H, W)."""

    def __init__(self, in_channels, out_channels):
        super().__init__(nn.AdaptiveAvgPool2d(1), *_conv_bn_relu(in_channels, out_channels))

    def forward(self, x):
        size = x.shape[-2:]
        for module in self:
            x = module(x)
        return F.interpolate(x, size=size, mode="bilinear", align_corners=False)


class ASPP(nn.Module):
    """Atrous spatial pyramid pooling: a 1x1 branch, one 3x3 branch per rate, a pooling
    branch; concatenated and projected to ``out_channels`` (dropout 0.5)."""

    def __init__(self, in_channels, atrous_rates, out_channels=256):
        super().__init__()
        branches = [nn.Sequential(*_conv_bn_relu(in_channels, out_channels))]
        branches += [ASPPConv(in_channels, out_channels, rate) for rate in atrous_rates]
        branches.append(ASPPPooling(in_channels, out_channels))
        self.convs = nn.ModuleList(branches)
        self.project = nn.Sequential(*_conv_bn_relu(len(branches) * out_channels, out_channels),
                                     nn.Dropout(0.5))

    def forward(self, x):
        return self.project(cat([conv(x) for conv in self.convs], dim=1))


class DeepLabHead(nn.Sequential):
    def __init__(self, in_channels, num_classes, atrous_rates=(12, 24, 36)):
        super().__init__(ASPP(in_channels, atrous_rates), *_conv_bn_relu(256, 256, 3),
                         nn.Conv2d(256, num_classes, 1))


DeepLabV3_ResNet50_Weights = WeightsEnum("DeepLabV3_ResNet50_Weights", [("COCO_WITH_VOC_LABELS_V1", "coco")])
DeepLabV3_ResNet101_Weights = WeightsEnum("DeepLabV3_ResNet101_Weights", [("COCO_WITH_VOC_LABELS_V1", "coco")])
DeepLabV3_MobileNet_V3_Large_Weights = WeightsEnum("DeepLabV3_MobileNet_V3_Large_Weights",
                                                   [("COCO_WITH_VOC_LABELS_V1", "coco")])
for _w in (DeepLabV3_ResNet50_Weights, DeepLabV3_ResNet101_Weights, DeepLabV3_MobileNet_V3_Large_Weights):
    _w.DEFAULT = _w.COCO_WITH_VOC_LABELS_V1


def _resnet_model(depth, num_classes, aux):
    backbone = getattr(resnet, f"resnet{depth}")(replace_stride_with_dilation=[False, True, True])
    layers = {"layer4": "out", **({"layer3": "aux"} if aux else {})}
    return DeepLabV3(IntermediateLayerGetter(backbone, layers), DeepLabHead(2048, num_classes),
                     FCNHead(1024, num_classes) if aux else None)


def _mobilenet_model(num_classes, aux):
    features = mobilenetv3.mobilenet_v3_large(dilated=True).features
    stages = _mobilenet_stages(features)
    out_pos, aux_pos = stages[-1], stages[-4]
    layers = {str(out_pos): "out", **({str(aux_pos): "aux"} if aux else {})}
    return DeepLabV3(IntermediateLayerGetter(features, layers),
                     DeepLabHead(features[out_pos].out_channels, num_classes),
                     FCNHead(features[aux_pos].out_channels, num_classes) if aux else None)


def _make(name, make_model):
    def build(*, weights=None, progress=True, num_classes=None, aux_loss=None,
              weights_backbone=None, **kwargs):
        _check_builder_args(name, weights, weights_backbone, kwargs)
        return make_model(21 if num_classes is None else num_classes, bool(aux_loss))
    build.__name__ = build.__qualname__ = name
    build.__doc__ = f"``{name}`` with fresh weights (ember downloads nothing; weights_backbone=None)."
    return register_model(name)(build)


deeplabv3_resnet50 = _make("deeplabv3_resnet50", lambda k, aux: _resnet_model(50, k, aux))
deeplabv3_resnet101 = _make("deeplabv3_resnet101", lambda k, aux: _resnet_model(101, k, aux))
deeplabv3_mobilenet_v3_large = _make("deeplabv3_mobilenet_v3_large", _mobilenet_model)
