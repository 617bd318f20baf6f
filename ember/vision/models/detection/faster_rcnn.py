"""Faster R-CNN (Ren et al. 2015) on a ResNet-50-FPN: the model is read from two small
tables (the RPN's and the box branch's settings) and assembled by ``_assemble``; module
names follow torchvision's state_dict layout."""
from ember import nn
from ember.nn import functional as F
from ...ops.poolers import MultiScaleRoIAlign
from .. import resnet
from .._api import WeightsEnum, register_model
from ..segmentation._utils import _check_builder_args
from .transform import GeneralizedRCNNTransform
from .rpn import RPNHead, RegionProposalNetwork
from .roi_heads import RoIHeads
from .generalized_rcnn import GeneralizedRCNN
from .backbone_utils import _validate_trainable_layers, _resnet_fpn_extractor
from .anchor_utils import AnchorGenerator

__all__ = ["FasterRCNN", "FasterRCNN_ResNet50_FPN_Weights", "FastRCNNPredictor", "TwoMLPHead",
           "fasterrcnn_resnet50_fpn"]

# FPN levels "0".."pool": one anchor size each, three aspect ratios everywhere
_ANCHOR_SIZES = (32, 64, 128, 256, 512)
_ANCHOR_RATIOS = (0.5, 1.0, 2.0)
_IMAGENET_MEAN, _IMAGENET_STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
_HIDDEN = 1024                      # width of the box head's MLP


class TwoMLPHead(nn.Module):
    """(K, C, h, w) pooled RoI features -> (K, representation_size): flatten, then fc6 and
    fc7, each followed by a ReLU."""
    _LAYERS = ("fc6", "fc7")

    def __init__(self, in_channels, representation_size):
        super().__init__()
        widths = [in_channels, representation_size, representation_size]
        for name, n_in, n_out in zip(self._LAYERS, widths, widths[1:]):
            self.add_module(name, nn.Linear(n_in, n_out))

    def forward(self, x):
        hidden = x.flatten(start_dim=1)
        for name in self._LAYERS:
            hidden = F.relu(getattr(self, name)(hidden))
        return hidden


class FastRCNNPredictor(nn.Module):
    """(K, C) (or (K, C, 1, 1)) -> class logits (K, num_classes) and per-class box deltas
    (K, 4 * num_classes)."""
    _OUTPUTS = (("cls_score", 1), ("bbox_pred", 4))        # name, outputs per class

    def __init__(self, in_channels, num_classes):
        super().__init__()
        for name, per_class in self._OUTPUTS:
            self.add_module(name, nn.Linear(in_channels, per_class * num_classes))

    def forward(self, x):
        tail = list(x.shape[2:])
        if x.dim() == 4 and tail != [1, 1]:
            raise AssertionError(f"x has the wrong shape, expecting the last two dimensions to be [1,1] instead of {tail}")
        flat = x.flatten(start_dim=1)
        return self.cls_score(flat), self.bbox_pred(flat)


def _check_parts(backbone, num_classes, anchor_gen, roi_pool, predictor):
    if not hasattr(backbone, "out_channels"):
        raise ValueError("backbone should contain an attribute out_channels specifying the number "
                         "of output channels (assumed to be the same for all the levels)")
    for value, kind, label in ((anchor_gen, AnchorGenerator, "rpn_anchor_generator"),
                               (roi_pool, MultiScaleRoIAlign, "box_roi_pool")):
        if value is not None and not isinstance(value, kind):
            raise TypeError(f"{label} should be of type {kind.__name__} or None instead of {type(value)}")
    if (num_classes is None) == (predictor is None):
        raise ValueError("num_classes should be None when box_predictor is specified" if predictor is not None
                         else "num_classes should not be None when box_predictor is not specified")


def _assemble(width, num_classes, rpn_cfg, box_cfg):
    """The RPN and the RoI heads from their settings tables (None parts get the defaults)."""
    anchor_gen = rpn_cfg.pop("anchor_generator") or AnchorGenerator(
        tuple((s,) for s in _ANCHOR_SIZES), (_ANCHOR_RATIOS,) * len(_ANCHOR_SIZES))
    rpn_head = rpn_cfg.pop("head") or RPNHead(width, anchor_gen.num_anchors_per_location()[0])
    top_n = {phase: {"training": rpn_cfg.pop(f"{phase}_train"), "testing": rpn_cfg.pop(f"{phase}_test")}
             for phase in ("pre_nms_top_n", "post_nms_top_n")}
    rpn = RegionProposalNetwork(anchor_gen, rpn_head, rpn_cfg["fg_iou_thresh"], rpn_cfg["bg_iou_thresh"],
                                rpn_cfg["batch_size_per_image"], rpn_cfg["positive_fraction"],
                                top_n["pre_nms_top_n"], top_n["post_nms_top_n"], rpn_cfg["nms_thresh"],
                                score_thresh=rpn_cfg["score_thresh"])
    pooler = box_cfg.pop("roi_pool") or MultiScaleRoIAlign(["0", "1", "2", "3"], 7, 2)
    mlp = box_cfg.pop("head") or TwoMLPHead(width * pooler.output_size[0] ** 2, _HIDDEN)
    predictor = box_cfg.pop("predictor") or FastRCNNPredictor(_HIDDEN, num_classes)
    heads = RoIHeads(pooler, mlp, predictor, box_cfg["fg_iou_thresh"], box_cfg["bg_iou_thresh"],
                     box_cfg["batch_size_per_image"], box_cfg["positive_fraction"], box_cfg["reg_weights"],
                     box_cfg["score_thresh"], box_cfg["nms_thresh"], box_cfg["detections_per_img"])
    return rpn, heads


class FasterRCNN(GeneralizedRCNN):
    """``model(images)`` (eval) -> [{"boxes" (D, 4), "labels" (D,), "scores" (D,)}] per image;
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
        settings = dict(locals())
        _check_parts(backbone, num_classes, rpn_anchor_generator, box_roi_pool, box_predictor)
        rpn_cfg = {k[len("rpn_"):]: v for k, v in settings.items() if k.startswith("rpn_")}
        box_cfg = {k[len("box_"):]: v for k, v in settings.items() if k.startswith("box_")}
        box_cfg["reg_weights"] = bbox_reg_weights
        rpn, heads = _assemble(backbone.out_channels, num_classes, rpn_cfg, box_cfg)
        mean = _IMAGENET_MEAN if image_mean is None else image_mean
        std = _IMAGENET_STD if image_std is None else image_std
        super().__init__(backbone, rpn, heads, GeneralizedRCNNTransform(min_size, max_size, mean, std, **kwargs))


FasterRCNN_ResNet50_FPN_Weights = WeightsEnum("FasterRCNN_ResNet50_FPN_Weights", [("COCO_V1", "coco")])
FasterRCNN_ResNet50_FPN_Weights.DEFAULT = FasterRCNN_ResNet50_FPN_Weights.COCO_V1


@register_model()
def fasterrcnn_resnet50_fpn(*, weights=None, progress=True, num_classes=None, weights_backbone=None,
                            trainable_backbone_layers=None, **kwargs):
    """Faster R-CNN ResNet-50-FPN with fresh weights (ember downloads nothing: ``weights`` and
    ``weights_backbone`` must be None); 91 COCO classes unless ``num_classes`` says otherwise."""
    _check_builder_args("fasterrcnn_resnet50_fpn", weights, weights_backbone, kwargs)
    trainable = _validate_trainable_layers(False, trainable_backbone_layers, 5, 3)
    body = resnet.resnet50(norm_layer=nn.BatchNorm2d)
    return FasterRCNN(_resnet_fpn_extractor(body, trainable), num_classes=91 if num_classes is None else num_classes,
                      **kwargs)
