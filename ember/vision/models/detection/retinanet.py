"""RetinaNet (Lin et al. 2017, "Focal Loss for Dense Object Detection") on a ResNet-50-FPN.

A one-stage detector. The pyramid has five levels, P3..P5 from ResNet stages 2-4 and P6/P7
from ``LastLevelP6P7``; each position of each level carries A = 9 anchors (three sizes
base * 2**(k/3), k = 0, 1, 2, times the aspect ratios 1:2, 1:1, 2:1). Two towers of four
3x3 conv + ReLU layers, shared by all levels, end in a 3x3 conv giving K class logits
(sigmoid, no background class) or 4 box deltas per anchor.

Training: an anchor with IoU >= ``fg_iou_thresh`` to a ground-truth box is foreground,
< ``bg_iou_thresh`` background, in between ignored (and every box keeps its best anchors).
The losses are the focal loss over the non-ignored anchors and the L1 loss of the
foreground anchors' deltas, each divided by the image's foreground count, then averaged
over the images.

Inference, per image: on each level the (anchor, class) pairs scoring above
``score_thresh`` keep their best ``topk_candidates``, whose boxes are decoded and clipped;
the levels are pooled, NMS runs class by class and the best ``detections_per_img`` remain.

Module and parameter names follow torchvision's state_dict layout."""
import math

import ember
from ember import nn
from ember.nn import functional as F
from ...ops import boxes as box_ops
from ...ops.feature_pyramid_network import LastLevelP6P7
from ...ops.focal_loss import sigmoid_focal_loss
from ...ops.misc import Conv2dNormActivation, FrozenBatchNorm2d
from .. import resnet
from .._api import WeightsEnum, _pick_weights, register_model
from . import _utils as det_utils
from .anchor_utils import AnchorGenerator
from .backbone_utils import _resnet_fpn_extractor, _validate_trainable_layers
from .generalized_rcnn import _batched_features
from .rpn import permute_and_flatten
from .transform import GeneralizedRCNNTransform

__all__ = ["RetinaNet", "RetinaNetHead", "RetinaNetClassificationHead", "RetinaNetRegressionHead",
           "RetinaNet_ResNet50_FPN_Weights", "retinanet_resnet50_fpn"]

_BASE_SIZES = (32, 64, 128, 256, 512)               # one per level, P3..P7
_OCTAVE_STEPS = 3                                   # sizes base * 2**(k/3), k < 3
_RATIOS = (0.5, 1.0, 2.0)
_TOWER_DEPTH = 4
_IMAGENET_MEAN, _IMAGENET_STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]


def _default_anchor_generator():
    sizes = tuple(tuple(int(base * 2 ** (k / _OCTAVE_STEPS)) for k in range(_OCTAVE_STEPS))
                  for base in _BASE_SIZES)
    return AnchorGenerator(sizes, (_RATIOS,) * len(sizes))


class _Subnet(nn.Module):
    """A conv tower plus an output conv named ``_OUT`` with ``per_anchor`` channels for each
    anchor; ``rows([(N, C, H_l, W_l)])`` -> (N, sum_l H_l W_l A, per_anchor)."""
    _version = 2                # 1: the tower was a flat Sequential (conv, relu, conv, ...)
    _OUT = None

    def __init__(self, in_channels, num_anchors, per_anchor, norm_layer):
        super().__init__()
        self.conv = nn.Sequential(*[Conv2dNormActivation(in_channels, in_channels, norm_layer=norm_layer)
                                    for _ in range(_TOWER_DEPTH)])
        self.add_module(self._OUT, nn.Conv2d(in_channels, num_anchors * per_anchor, kernel_size=3, padding=1))
        for conv in (m for m in self.modules() if isinstance(m, nn.Conv2d)):
            nn.init.normal_(conv.weight, std=0.01)
            if conv.bias is not None:
                nn.init.constant_(conv.bias, 0)
        self.num_anchors, self._per_anchor = num_anchors, per_anchor

    def rows(self, x):
        out = getattr(self, self._OUT)
        per_level = []
        for level in x:
            y = out(self.conv(level))
            n, _, h, w = y.shape
            per_level.append(permute_and_flatten(y, n, self.num_anchors, self._per_anchor, h, w))
        return ember.cat(per_level, dim=1)

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs):
        if (local_metadata.get("version") or 1) < 2:          # torchvision 0.8-0.12 checkpoints
            for i in range(_TOWER_DEPTH):
                for kind in ("weight", "bias"):
                    old = f"{prefix}conv.{2 * i}.{kind}"
                    if old in state_dict:
                        state_dict[f"{prefix}conv.{i}.0.{kind}"] = state_dict.pop(old)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys,
                                      unexpected_keys, error_msgs)


class RetinaNetClassificationHead(_Subnet):
    """``forward([(N, C, H_l, W_l)])`` -> (N, sum_l H_l W_l A, num_classes) logits. The output
    bias starts at -log((1 - prior) / prior), so every anchor first scores ``prior``."""
    _OUT = "cls_logits"
    BETWEEN_THRESHOLDS = det_utils.Matcher.BETWEEN_THRESHOLDS

    def __init__(self, in_channels, num_anchors, num_classes, prior_probability=0.01, norm_layer=None):
        super().__init__(in_channels, num_anchors, num_classes, norm_layer)
        nn.init.constant_(self.cls_logits.bias, -math.log((1 - prior_probability) / prior_probability))
        self.num_classes = num_classes

    def forward(self, x):
        return self.rows(x)

    def compute_loss(self, targets, head_outputs, matched_idxs):
        """Focal loss summed over each image's non-ignored anchors / its foreground count,
        averaged over the images."""
        total = 0
        for target, logits, matched in zip(targets, head_outputs["cls_logits"], matched_idxs):
            fg = ember.where(matched >= 0)[0]
            wanted = ember.zeros_like(logits)                # one-hot rows for the foreground
            wanted[fg, target["labels"][matched[fg]]] = 1.0
            counted = matched != self.BETWEEN_THRESHOLDS
            loss = sigmoid_focal_loss(logits[counted], wanted[counted], reduction="sum")
            total = total + loss / max(1, fg.numel())
        return total / len(targets)


class RetinaNetRegressionHead(_Subnet):
    """``forward([(N, C, H_l, W_l)])`` -> (N, sum_l H_l W_l A, 4) box deltas."""
    _OUT = "bbox_reg"

    def __init__(self, in_channels, num_anchors, norm_layer=None):
        super().__init__(in_channels, num_anchors, 4, norm_layer)
        self.box_coder = det_utils.BoxCoder(weights=(1.0, 1.0, 1.0, 1.0))
        self._loss_type = "l1"

    def forward(self, x):
        return self.rows(x)

    def compute_loss(self, targets, head_outputs, anchors, matched_idxs):
        """L1 distance of the foreground anchors' deltas to their encoded boxes, summed per
        image / its foreground count, averaged over the images."""
        total = 0
        for target, deltas, anchors_i, matched in zip(targets, head_outputs["bbox_regression"], anchors,
                                                     matched_idxs):
            fg = ember.where(matched >= 0)[0]
            wanted = self.box_coder.encode_single(target["boxes"][matched[fg]], anchors_i[fg])
            loss = F.l1_loss(deltas[fg], wanted, reduction="sum")
            total = total + loss / max(1, fg.numel())
        return total / len(targets)


class RetinaNetHead(nn.Module):
    """``forward([(N, C, H_l, W_l)])`` -> {"cls_logits": (N, R, K), "bbox_regression": (N, R, 4)},
    R = sum_l H_l W_l A."""

    def __init__(self, in_channels, num_anchors, num_classes, norm_layer=None):
        super().__init__()
        self.classification_head = RetinaNetClassificationHead(in_channels, num_anchors, num_classes,
                                                               norm_layer=norm_layer)
        self.regression_head = RetinaNetRegressionHead(in_channels, num_anchors, norm_layer=norm_layer)

    def compute_loss(self, targets, head_outputs, anchors, matched_idxs):
        return {"classification": self.classification_head.compute_loss(targets, head_outputs, matched_idxs),
                "bbox_regression": self.regression_head.compute_loss(targets, head_outputs, anchors, matched_idxs)}

    def forward(self, x):
        return {"cls_logits": self.classification_head(x), "bbox_regression": self.regression_head(x)}


class RetinaNet(nn.Module):
    """``model(images)`` (eval) -> [{"boxes" (D, 4), "scores" (D,), "labels" (D,)}] per image;
    ``model(images, targets)`` (train) -> {"classification", "bbox_regression"} losses.
    ``backbone`` returns the pyramid levels and exposes ``out_channels``."""

    def __init__(self, backbone, num_classes, min_size=800, max_size=1333, image_mean=None, image_std=None,
                 anchor_generator=None, head=None, proposal_matcher=None, score_thresh=0.05, nms_thresh=0.5,
                 detections_per_img=300, fg_iou_thresh=0.5, bg_iou_thresh=0.4, topk_candidates=1000,
                 **kwargs):
        super().__init__()
        if not hasattr(backbone, "out_channels"):
            raise ValueError("backbone should contain an attribute out_channels specifying the number "
                             "of output channels (assumed to be the same for all the levels)")
        if anchor_generator is not None and not isinstance(anchor_generator, AnchorGenerator):
            raise TypeError(f"anchor_generator should be of type AnchorGenerator or None instead of "
                            f"{type(anchor_generator)}")
        self.backbone = backbone
        self.anchor_generator = anchor_generator or _default_anchor_generator()
        self.head = head or RetinaNetHead(backbone.out_channels,
                                          self.anchor_generator.num_anchors_per_location()[0], num_classes)
        self.proposal_matcher = proposal_matcher or det_utils.Matcher(fg_iou_thresh, bg_iou_thresh,
                                                                      allow_low_quality_matches=True)
        self.box_coder = det_utils.BoxCoder(weights=(1.0, 1.0, 1.0, 1.0))
        mean = _IMAGENET_MEAN if image_mean is None else image_mean
        std = _IMAGENET_STD if image_std is None else image_std
        self.transform = GeneralizedRCNNTransform(min_size, max_size, mean, std, **kwargs)
        self.score_thresh, self.nms_thresh = score_thresh, nms_thresh
        self.detections_per_img, self.topk_candidates = detections_per_img, topk_candidates

    def compute_loss(self, targets, head_outputs, anchors):
        """Match each image's anchors to its boxes (all background when it has none)."""
        matched_idxs = []
        for anchors_i, target in zip(anchors, targets):
            if target["boxes"].numel() == 0:
                matched_idxs.append(ember.full((anchors_i.shape[0],), -1, dtype=ember.int64))
            else:
                matched_idxs.append(self.proposal_matcher(box_ops.box_iou(target["boxes"], anchors_i)))
        return self.head.compute_loss(targets, head_outputs, anchors, matched_idxs)

    def _level_candidates(self, logits, deltas, anchors, image_size):
        """One level of one image: (R_l, K) logits, (R_l, 4) deltas and anchors -> the best
        ``topk_candidates`` (boxes, scores, labels) scoring above ``score_thresh``."""
        num_classes = logits.shape[-1]
        scores = ember.sigmoid(logits).flatten()
        above = ember.where(scores > self.score_thresh)[0]
        scores, order = scores[above].topk(min(self.topk_candidates, above.numel()))
        pair = above[order]                            # anchor * num_classes + class
        anchor_idx = ember.div(pair, num_classes, rounding_mode="floor")
        boxes = self.box_coder.decode_single(deltas[anchor_idx], anchors[anchor_idx])
        return box_ops.clip_boxes_to_image(boxes, image_size), scores, pair % num_classes

    def postprocess_detections(self, head_outputs, anchors, image_shapes):
        """``head_outputs``: {"cls_logits", "bbox_regression"} -> per-level lists of (N, R_l, .);
        ``anchors``: per image, per-level lists of (R_l, 4)."""
        detections = []
        for i, image_size in enumerate(image_shapes):
            found = [self._level_candidates(logits[i], deltas[i], level_anchors, image_size)
                     for logits, deltas, level_anchors in zip(head_outputs["cls_logits"],
                                                              head_outputs["bbox_regression"], anchors[i])]
            boxes, scores, labels = (ember.cat(part, dim=0) for part in zip(*found))
            keep = box_ops.batched_nms(boxes, scores, labels, self.nms_thresh)[: self.detections_per_img]
            detections.append({"boxes": boxes[keep], "scores": scores[keep], "labels": labels[keep]})
        return detections

    def forward(self, images, targets=None):
        """``images``: list of (C, H_i, W_i) float tensors in [0, 1]; ``targets`` (training):
        list of {"boxes": (B_i, 4) xyxy, "labels": (B_i,) int64}."""
        original_sizes, batch, targets, maps = _batched_features(self, images, targets)
        features = list(maps.values())
        head_outputs = self.head(features)
        anchors = self.anchor_generator(batch, features)
        if self.training:
            return self.compute_loss(targets, head_outputs, anchors)
        cells = [f.shape[-2] * f.shape[-1] for f in features]
        per_cell = head_outputs["cls_logits"].shape[1] // sum(cells)
        rows = [c * per_cell for c in cells]
        split_outputs = {k: list(v.split(rows, dim=1)) for k, v in head_outputs.items()}
        split_anchors = [list(a.split(rows)) for a in anchors]
        found = self.postprocess_detections(split_outputs, split_anchors, batch.image_sizes)
        return self.transform.postprocess(found, batch.image_sizes, original_sizes)


class RetinaNet_ResNet50_FPN_Weights(WeightsEnum):
    """COCO checkpoint read from ``<hub dir>/checkpoints`` (nothing is downloaded)."""
    COCO_V1 = "retinanet_resnet50_fpn_coco-eeacb38b.pth"

    def _file_name(self):
        return self.value


RetinaNet_ResNet50_FPN_Weights.DEFAULT = RetinaNet_ResNet50_FPN_Weights.COCO_V1


@register_model()
def retinanet_resnet50_fpn(*, weights=None, progress=True, num_classes=None, weights_backbone=None,
                           trainable_backbone_layers=None, **kwargs):
    """RetinaNet ResNet-50-FPN (91 COCO classes unless ``num_classes`` says otherwise).
    ``weights`` / ``weights_backbone`` load torchvision's checkpoints from the hub cache
    (RuntimeError when absent: ember downloads nothing); with either, the backbone's batch
    norms are frozen and only ``trainable_backbone_layers`` (default 3) ResNet parts train."""
    weights = _pick_weights(RetinaNet_ResNet50_FPN_Weights, weights, kwargs)
    kwargs.pop("progress", None)
    state = None
    if weights is not None:
        weights_backbone = None
        if num_classes not in (None, 91):
            raise ValueError(f"The parameter 'num_classes' expected value 91 but got {num_classes} instead.")
        state = weights.get_state_dict(progress=progress, check_hash=True)    # fails before building
    weights_backbone = resnet.ResNet50_Weights.verify(None if weights_backbone is False else weights_backbone)
    is_trained = weights is not None or weights_backbone is not None
    trainable = _validate_trainable_layers(is_trained, trainable_backbone_layers, 5, 3)
    body = resnet.resnet50(weights=weights_backbone, norm_layer=FrozenBatchNorm2d if is_trained else nn.BatchNorm2d)
    backbone = _resnet_fpn_extractor(body, trainable, returned_layers=[2, 3, 4],
                                     extra_blocks=LastLevelP6P7(256, 256))
    model = RetinaNet(backbone, 91 if num_classes is None else num_classes, **kwargs)
    if state is not None:
        model.load_state_dict(state)
    return model
