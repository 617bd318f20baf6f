"""Region proposal network: a shared 3x3 conv head predicting objectness and box deltas per
anchor, decoding, per-level top-k, clipping, small-box removal and per-level NMS."""
import ember
from ember import nn
from ember.nn import functional as F
from ...ops import boxes as box_ops
from ...ops.misc import Conv2dNormActivation
from . import _utils as det_utils
from .anchor_utils import AnchorGenerator  # noqa: F401  (torchvision exposes it here too)

__all__ = ["RPNHead", "RegionProposalNetwork"]


class RPNHead(nn.Module):
    """``forward([ (N, C, H_l, W_l) ])`` -> (objectness [(N, A, H_l, W_l)], deltas [(N, 4A, H_l, W_l)])."""

    def __init__(self, in_channels, num_anchors, conv_depth=1):
        super().__init__()
        self.conv = nn.Sequential(*[Conv2dNormActivation(in_channels, in_channels, kernel_size=3,
                                                         norm_layer=None) for _ in range(conv_depth)])
        self.cls_logits = nn.Conv2d(in_channels, num_anchors, kernel_size=1, stride=1)
        self.bbox_pred = nn.Conv2d(in_channels, num_anchors * 4, kernel_size=1, stride=1)
        for layer in self.modules():
            if isinstance(layer, nn.Conv2d):
                nn.init.normal_(layer.weight, std=0.01)
                if layer.bias is not None:
                    nn.init.constant_(layer.bias, 0)

    def forward(self, x):
        logits, bbox_reg = [], []
        for feature in x:
            t = self.conv(feature)
            logits.append(self.cls_logits(t))
            bbox_reg.append(self.bbox_pred(t))
        return logits, bbox_reg


def permute_and_flatten(layer, N, A, C, H, W):
    """(N, A*C, H, W) -> (N, H*W*A, C)."""
    return layer.view(N, -1, C, H, W).permute(0, 3, 4, 1, 2).reshape(N, -1, C)


def concat_box_prediction_layers(box_cls, box_regression):
    """Per-level head outputs -> (sum anchors, C) scores and (sum anchors, 4) deltas, ordered
    image by image, then level, then position, then anchor."""
    flat_cls, flat_reg = [], []
    for cls, reg in zip(box_cls, box_regression):
        N, AxC, H, W = cls.shape
        A = reg.shape[1] // 4
        flat_cls.append(permute_and_flatten(cls, N, A, AxC // A, H, W))
        flat_reg.append(permute_and_flatten(reg, N, A, 4, H, W))
    return ember.cat(flat_cls, dim=1).flatten(0, -2), ember.cat(flat_reg, dim=1).reshape(-1, 4)


class RegionProposalNetwork(nn.Module):
    """``forward(images: ImageList, features: {name: (N, C, H_l, W_l)}, targets=None)`` ->
    (per-image (P_i, 4) proposals, losses: objectness and box regression when training)."""

    def __init__(self, anchor_generator, head, fg_iou_thresh, bg_iou_thresh, batch_size_per_image,
                 positive_fraction, pre_nms_top_n, post_nms_top_n, nms_thresh, score_thresh=0.0):
        super().__init__()
        self.anchor_generator = anchor_generator
        self.head = head
        self.box_coder = det_utils.BoxCoder(weights=(1.0, 1.0, 1.0, 1.0))
        self.box_similarity = box_ops.box_iou
        self.proposal_matcher = det_utils.Matcher(fg_iou_thresh, bg_iou_thresh,
                                                  allow_low_quality_matches=True)
        self.fg_bg_sampler = det_utils.BalancedPositiveNegativeSampler(batch_size_per_image,
                                                                       positive_fraction)
        self._pre_nms_top_n, self._post_nms_top_n = pre_nms_top_n, post_nms_top_n
        self.nms_thresh, self.score_thresh = nms_thresh, score_thresh
        self.min_size = 1e-3

    def pre_nms_top_n(self):
        return self._pre_nms_top_n["training" if self.training else "testing"]

    def post_nms_top_n(self):
        return self._post_nms_top_n["training" if self.training else "testing"]

    def assign_targets_to_anchors(self, anchors, targets):
        labels, matched_gt_boxes = [], []
        for anchors_per_image, target in zip(anchors, targets):
            gt_boxes = target["boxes"]
            if gt_boxes.numel() == 0:
                matched = ember.zeros(anchors_per_image.shape, dtype=ember.float32)
                labels_per_image = ember.zeros((anchors_per_image.shape[0],), dtype=ember.float32)
            else:
                matched_idxs = self.proposal_matcher(self.box_similarity(gt_boxes, anchors_per_image))
                matched = gt_boxes[matched_idxs.clamp(min=0)]
                labels_per_image = (matched_idxs >= 0).to(ember.float32)
                labels_per_image[matched_idxs == det_utils.Matcher.BELOW_LOW_THRESHOLD] = 0.0
                labels_per_image[matched_idxs == det_utils.Matcher.BETWEEN_THRESHOLDS] = -1.0
            labels.append(labels_per_image)
            matched_gt_boxes.append(matched)
        return labels, matched_gt_boxes

    def _get_top_n_idx(self, objectness, num_anchors_per_level):
        picked, offset = [], 0
        for ob in objectness.split(num_anchors_per_level, 1):
            n = ob.shape[1]
            _, idx = ob.topk(det_utils._topk_min(ob, self.pre_nms_top_n(), 1), dim=1)
            picked.append(idx + offset)
            offset += n
        return ember.cat(picked, dim=1)

    def filter_proposals(self, proposals, objectness, image_shapes, num_anchors_per_level):
        num_images = proposals.shape[0]
        objectness = objectness.detach().reshape(num_images, -1)
        levels = ember.cat([ember.full((n,), idx, dtype=ember.int64)
                            for idx, n in enumerate(num_anchors_per_level)], 0)
        levels = levels.reshape(1, -1).expand_as(objectness)
        top_n_idx = self._get_top_n_idx(objectness, num_anchors_per_level)
        batch_idx = ember.arange(num_images)[:, None]
        objectness = objectness[batch_idx, top_n_idx]
        levels = levels[batch_idx, top_n_idx]
        proposals = proposals[batch_idx, top_n_idx]
        probs = ember.sigmoid(objectness)
        final_boxes, final_scores = [], []
        for boxes, scores, lvl, image_shape in zip(proposals, probs, levels, image_shapes):
            boxes = box_ops.clip_boxes_to_image(boxes, image_shape)
            keep = box_ops.remove_small_boxes(boxes, self.min_size)
            boxes, scores, lvl = boxes[keep], scores[keep], lvl[keep]
            keep = ember.where(scores >= self.score_thresh)[0]
            boxes, scores, lvl = boxes[keep], scores[keep], lvl[keep]
            keep = box_ops.batched_nms(boxes, scores, lvl, self.nms_thresh)[: self.post_nms_top_n()]
            final_boxes.append(boxes[keep])
            final_scores.append(scores[keep])
        return final_boxes, final_scores

    def compute_loss(self, objectness, pred_bbox_deltas, labels, regression_targets):
        pos_masks, neg_masks = self.fg_bg_sampler(labels)
        pos = ember.where(ember.cat(pos_masks, dim=0))[0]
        neg = ember.where(ember.cat(neg_masks, dim=0))[0]
        sampled = ember.cat([pos, neg], dim=0)
        objectness = objectness.flatten()
        labels = ember.cat(labels, dim=0)
        regression_targets = ember.cat(regression_targets, dim=0)
        box_loss = F.smooth_l1_loss(pred_bbox_deltas[pos], regression_targets[pos], beta=1 / 9,
                                    reduction="sum") / sampled.numel()
        objectness_loss = F.binary_cross_entropy_with_logits(objectness[sampled], labels[sampled])
        return objectness_loss, box_loss

    def forward(self, images, features, targets=None):
        features = list(features.values())
        objectness, pred_bbox_deltas = self.head(features)
        anchors = self.anchor_generator(images, features)
        num_images = len(anchors)
        num_anchors_per_level = [o[0].shape[0] * o[0].shape[1] * o[0].shape[2] for o in objectness]
        objectness, pred_bbox_deltas = concat_box_prediction_layers(objectness, pred_bbox_deltas)
        proposals = self.box_coder.decode(pred_bbox_deltas.detach(), anchors).view(num_images, -1, 4)
        boxes, _ = self.filter_proposals(proposals, objectness, images.image_sizes, num_anchors_per_level)
        losses = {}
        if self.training:
            if targets is None:
                raise ValueError("targets should not be None")
            labels, matched_gt_boxes = self.assign_targets_to_anchors(anchors, targets)
            regression_targets = self.box_coder.encode(matched_gt_boxes, anchors)
            loss_objectness, loss_rpn_box_reg = self.compute_loss(objectness, pred_bbox_deltas, labels,
                                                                  regression_targets)
            losses = {"loss_objectness": loss_objectness, "loss_rpn_box_reg": loss_rpn_box_reg}
        return boxes, losses
