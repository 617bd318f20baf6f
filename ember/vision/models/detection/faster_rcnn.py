"""Faster R-CNN (torchvision's layout): ResNet-50-FPN backbone, RPN over five anchor sizes,
7x7 MultiScaleRoIAlign, a two-layer MLP box head and the class / box predictor."""
from ember import nn
from ember.nn import functional as F
from ...ops.poolers import MultiScaleRoIAlign
from .. import resnet
from .._api import WeightsEnum, register_model
from ..segmentation._utils import _check_builder_args
from .anchor_utils import AnchorGenerator
from .backbone_utils import _resnet_fpn_extractor, _validate_trainable_layers
from .generalized_rcnn import GeneralizedRCNN
from .roi_heads import RoIHeads
from .rpn import RegionProposalNetwork, RPNHead
from .transform import GeneralizedRCNNTransform

__all__ = ["FasterRCNN", "TwoMLPHead", "FastRCNNPredictor", "fasterrcnn_resnet50_fpn",
           "FasterRCNN_ResNet50_FPN_Weights"]


class TwoMLPHead(nn.Module):
    """(K, C, 7, 7) pooled features -> (K, representation_size) through two ReLU Linears."""

    def __init__(self, in_channels, representation_size):
        super().__init__()
        self.fc6 = nn.Linear(in_channels, representation_size)
        self.fc7 = nn.Linear(representation_size, representation_size)

    def forward(self, x):
        return F.relu(self.fc7(F.relu(self.fc6(x.flatten(start_dim=1)))))


class FastRCNNPredictor(nn.Module):
    """(K, C) -> (class scores (K, num_classes), box deltas (K, num_classes * 4))."""

    def __init__(self, in_channels, num_classes):
        super().__init__()
        self.cls_score = nn.Linear(in_channels, num_classes)
        self.bbox_pred = nn.Linear(in_channels, num_classes * 4)

    def forward(self, x):
        if x.dim() == 4 and list(x.shape[2:]) != [1, 1]:
            raise AssertionError(f"x has the wrong shape, expecting the last two dimensions to be [1,1] instead of {list(x.shape[2:])}")
        x = x.flatten(start_dim=1)
        return self.cls_score(x), self.bbox_pred(x)


def _default_anchorgen():
    sizes = ((32,), (64,), (128,), (256,), (512,))
    return AnchorGenerator(sizes, ((0.5, 1.0, 2.0),) * len(sizes))


class FasterRCNN(GeneralizedRCNN):
    """``model(images)`` (eval) -> [{"boxes", "labels", "scores"}] per image;
    ``model(images, targets)`` (train) -> {loss_classifier, loss_box_reg, loss_objectness,
    loss_rpn_box_reg}. ``backbone`` must expose ``out_channels``."""

    def __init__(self, backbone, num_classes=None, min_size=800, max_size=1333, image_mean=None,
                 image_std=None, rpn_anchor_generator=None, rpn_head=None,
                 rpn_pre_nms_top_n_train=2000, rpn_pre_nms_top_n_test=1000,
                 rpn_post_nms_top_n_train=2000, rpn_post_nms_top_n_test=1000, rpn_nms_thresh=0.7,
                 rpn_fg_iou_thresh=0.7, rpn_bg_iou_thresh=0.3, rpn_batch_size_per_image=256,
                 rpn_positive_fraction=0.5, rpn_score_thresh=0.0, box_roi_pool=None, box_head=None,
                 box_predictor=None, box_score_thresh=0.05, box_nms_thresh=0.5,
                 box_detections_per_img=100, box_fg_iou_thresh=0.5, box_bg_iou_thresh=0.5,
                 box_batch_size_per_image=512, box_positive_fraction=0.25, bbox_reg_weights=None,
                 **kwargs):
        if not hasattr(backbone, "out_channels"):
            raise ValueError("backbone should contain an attribute out_channels specifying the number "
                             "of output channels (assumed to be the same for all the levels)")
        if not isinstance(rpn_anchor_generator, (AnchorGenerator, type(None))):
            raise TypeError(f"rpn_anchor_generator should be of type AnchorGenerator or None instead of {type(rpn_anchor_generator)}")
        if not isinstance(box_roi_pool, (MultiScaleRoIAlign, type(None))):
            raise TypeError(f"box_roi_pool should be of type MultiScaleRoIAlign or None instead of {type(box_roi_pool)}")
        if num_classes is not None and box_predictor is not None:
            raise ValueError("num_classes should be None when box_predictor is specified")
        if num_classes is None and box_predictor is None:
            raise ValueError("num_classes should not be None when box_predictor is not specified")
        out_channels = backbone.out_channels
        anchors = _default_anchorgen() if rpn_anchor_generator is None else rpn_anchor_generator
        head = RPNHead(out_channels, anchors.num_anchors_per_location()[0]) if rpn_head is None else rpn_head
        rpn = RegionProposalNetwork(
            anchors, head, rpn_fg_iou_thresh, rpn_bg_iou_thresh, rpn_batch_size_per_image,
            rpn_positive_fraction, dict(training=rpn_pre_nms_top_n_train, testing=rpn_pre_nms_top_n_test),
            dict(training=rpn_post_nms_top_n_train, testing=rpn_post_nms_top_n_test), rpn_nms_thresh,
            score_thresh=rpn_score_thresh)
        if box_roi_pool is None:
            box_roi_pool = MultiScaleRoIAlign(featmap_names=["0", "1", "2", "3"], output_size=7, sampling_ratio=2)
        if box_head is None:
            box_head = TwoMLPHead(out_channels * box_roi_pool.output_size[0] ** 2, 1024)
        if box_predictor is None:
            box_predictor = FastRCNNPredictor(1024, num_classes)
        roi_heads = RoIHeads(box_roi_pool, box_head, box_predictor, box_fg_iou_thresh, box_bg_iou_thresh,
                             box_batch_size_per_image, box_positive_fraction, bbox_reg_weights,
                             box_score_thresh, box_nms_thresh, box_detections_per_img)
        transform = GeneralizedRCNNTransform(min_size, max_size,
                                             [0.485, 0.456, 0.406] if image_mean is None else image_mean,
                                             [0.229, 0.224, 0.225] if image_std is None else image_std,
                                             **kwargs)
        super().__init__(backbone, rpn, roi_heads, transform)


FasterRCNN_ResNet50_FPN_Weights = WeightsEnum("FasterRCNN_ResNet50_FPN_Weights", [("COCO_V1", "coco")])
FasterRCNN_ResNet50_FPN_Weights.DEFAULT = FasterRCNN_ResNet50_FPN_Weights.COCO_V1


@register_model()
def fasterrcnn_resnet50_fpn(*, weights=None, progress=True, num_classes=None, weights_backbone=None,
                            trainable_backbone_layers=None, **kwargs):
    """Faster R-CNN ResNet-50-FPN with fresh weights (ember downloads nothing: ``weights`` and
    ``weights_backbone`` must be None); 91 COCO classes unless ``num_classes`` says otherwise."""
    _check_builder_args("fasterrcnn_resnet50_fpn", weights, weights_backbone, kwargs)
    layers = _validate_trainable_layers(False, trainable_backbone_layers, 5, 3)
    backbone = _resnet_fpn_extractor(resnet.resnet50(norm_layer=nn.BatchNorm2d), layers)
    return FasterRCNN(backbone, num_classes=91 if num_classes is None else num_classes, **kwargs)
