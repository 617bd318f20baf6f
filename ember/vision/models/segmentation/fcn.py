"""FCN (torchvision's layout): a dilated ResNet (strides of layers 3-4 replaced by dilation),
FCNHead on layer4 and, with ``aux_loss``, on layer3."""
from .. import resnet
from .._api import WeightsEnum, register_model
from ._utils import FCNHead, IntermediateLayerGetter, _check_builder_args, _SimpleSegmentationModel

__all__ = ["FCN", "fcn_resnet50", "fcn_resnet101", "FCN_ResNet50_Weights", "FCN_ResNet101_Weights"]


class FCN(_SimpleSegmentationModel):
    """Fully convolutional network: outputs ``{"out": (N, K, H, W)[, "aux": ...]}``."""


FCN_ResNet50_Weights = WeightsEnum("FCN_ResNet50_Weights", [("COCO_WITH_VOC_LABELS_V1", "coco")])
FCN_ResNet101_Weights = WeightsEnum("FCN_ResNet101_Weights", [("COCO_WITH_VOC_LABELS_V1", "coco")])
for _w in (FCN_ResNet50_Weights, FCN_ResNet101_Weights):
    _w.DEFAULT = _w.COCO_WITH_VOC_LABELS_V1


def _fcn_resnet(backbone, num_classes, aux):
    layers = {"layer4": "out", **({"layer3": "aux"} if aux else {})}
    return FCN(IntermediateLayerGetter(backbone, layers), FCNHead(2048, num_classes),
               FCNHead(1024, num_classes) if aux else None)


def _make(name, depth):
    def build(*, weights=None, progress=True, num_classes=None, aux_loss=None,
              weights_backbone=None, **kwargs):
        _check_builder_args(name, weights, weights_backbone, kwargs)
        backbone = getattr(resnet, f"resnet{depth}")(replace_stride_with_dilation=[False, True, True])
        return _fcn_resnet(backbone, 21 if num_classes is None else num_classes, bool(aux_loss))
    build.__name__ = build.__qualname__ = name
    build.__doc__ = f"``{name}`` with fresh weights (ember downloads nothing; weights_backbone=None)."
    return register_model(name)(build)


fcn_resnet50 = _make("fcn_resnet50", 50)
fcn_resnet101 = _make("fcn_resnet101", 101)
