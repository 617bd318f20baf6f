"""RoI heads (box branch): pool each proposal's features, classify and refine it, then per
class score threshold, small-box removal, NMS and the top detections; Fast R-CNN losses
when training. Mask and keypoint branches are not implemented."""
import ember
from ember import nn
from ember.nn import functional as F
from ...ops import boxes as box_ops
from . import _utils as det_utils

__all__ = ["RoIHeads", "fastrcnn_loss"]


def fastrcnn_loss(class_logits, box_regression, labels, regression_targets):
    """Cross-entropy over classes, smooth-L1 (beta 1/9) of the positives' own-class deltas
    summed over the sampled proposals' count."""
    labels = ember.cat(labels, dim=0)
    regression_targets = ember.cat(regression_targets, dim=0)
    classification_loss = F.cross_entropy(class_logits, labels)
    pos = ember.where(labels > 0)[0]
    labels_pos = labels[pos]
    N = class_logits.shape[0]
    box_regression = box_regression.reshape(N, box_regression.size(-1) // 4, 4)
    box_loss = F.smooth_l1_loss(box_regression[pos, labels_pos], regression_targets[pos],
                                beta=1 / 9, reduction="sum")
    return classification_loss, box_loss / labels.numel()


class RoIHeads(nn.Module):
    """``forward(features, proposals, image_shapes, targets=None)`` -> (per-image dicts of
    ``boxes`` (D, 4), ``labels`` (D,), ``scores`` (D,); losses when training)."""

    def __init__(self, box_roi_pool, box_head, box_predictor, fg_iou_thresh, bg_iou_thresh,
                 batch_size_per_image, positive_fraction, bbox_reg_weights, score_thresh, nms_thresh,
                 detections_per_img, mask_roi_pool=None, mask_head=None, mask_predictor=None,
                 keypoint_roi_pool=None, keypoint_head=None, keypoint_predictor=None):
        super().__init__()
        if any(m is not None for m in (mask_roi_pool, mask_head, mask_predictor, keypoint_roi_pool,
                                       keypoint_head, keypoint_predictor)):
            raise NotImplementedError("RoIHeads: the mask and keypoint branches are not implemented in ember")
        self.box_similarity = box_ops.box_iou
        self.proposal_matcher = det_utils.Matcher(fg_iou_thresh, bg_iou_thresh, allow_low_quality_matches=False)
        self.fg_bg_sampler = det_utils.BalancedPositiveNegativeSampler(batch_size_per_image, positive_fraction)
        self.box_coder = det_utils.BoxCoder((10.0, 10.0, 5.0, 5.0) if bbox_reg_weights is None else bbox_reg_weights)
        self.box_roi_pool, self.box_head, self.box_predictor = box_roi_pool, box_head, box_predictor
        self.score_thresh, self.nms_thresh = score_thresh, nms_thresh
        self.detections_per_img = detections_per_img
        self.mask_roi_pool = self.mask_head = self.mask_predictor = None
        self.keypoint_roi_pool = self.keypoint_head = self.keypoint_predictor = None

    def has_mask(self):
        return False

    def has_keypoint(self):
        return False

    # ----------------------------------------------------------------------- training samples
    def assign_targets_to_proposals(self, proposals, gt_boxes, gt_labels):
        matched_idxs, labels = [], []
        for props, boxes, gt in zip(proposals, gt_boxes, gt_labels):
            if boxes.numel() == 0:
                clamped = ember.zeros((props.shape[0],), dtype=ember.int64)
                labels_in_image = ember.zeros((props.shape[0],), dtype=ember.int64)
            else:
                matched = self.proposal_matcher(box_ops.box_iou(boxes, props))
                clamped = matched.clamp(min=0)
                labels_in_image = gt[clamped].to(ember.int64)
                labels_in_image[matched == det_utils.Matcher.BELOW_LOW_THRESHOLD] = 0
                labels_in_image[matched == det_utils.Matcher.BETWEEN_THRESHOLDS] = -1
            matched_idxs.append(clamped)
            labels.append(labels_in_image)
        return matched_idxs, labels

    def subsample(self, labels):
        pos_masks, neg_masks = self.fg_bg_sampler(labels)
        return [ember.where(p | n)[0] for p, n in zip(pos_masks, neg_masks)]

    def add_gt_proposals(self, proposals, gt_boxes):
        return [ember.cat((p, g)) for p, g in zip(proposals, gt_boxes)]

    def check_targets(self, targets):
        if targets is None:
            raise ValueError("targets should not be None")
        if not all("boxes" in t for t in targets):
            raise ValueError("Every element of targets should have a boxes key")
        if not all("labels" in t for t in targets):
            raise ValueError("Every element of targets should have a labels key")

    def select_training_samples(self, proposals, targets):
        self.check_targets(targets)
        dtype = proposals[0].dtype
        gt_boxes = [t["boxes"].to(dtype) for t in targets]
        gt_labels = [t["labels"] for t in targets]
        proposals = self.add_gt_proposals(proposals, gt_boxes)
        matched_idxs, labels = self.assign_targets_to_proposals(proposals, gt_boxes, gt_labels)
        sampled = self.subsample(labels)
        matched_gt_boxes = []
        for i, inds in enumerate(sampled):
            proposals[i], labels[i], matched_idxs[i] = proposals[i][inds], labels[i][inds], matched_idxs[i][inds]
            boxes = gt_boxes[i] if gt_boxes[i].numel() else ember.zeros((1, 4), dtype=dtype)
            matched_gt_boxes.append(boxes[matched_idxs[i]])
        return proposals, matched_idxs, labels, self.box_coder.encode(matched_gt_boxes, proposals)

    # ----------------------------------------------------------------------- detections
    def postprocess_detections(self, class_logits, box_regression, proposals, image_shapes):
        num_classes = class_logits.shape[-1]
        per_image = [p.shape[0] for p in proposals]
        pred_boxes = self.box_coder.decode(box_regression, proposals).split(per_image, 0)
        pred_scores = F.softmax(class_logits, -1).split(per_image, 0)
        all_boxes, all_scores, all_labels = [], [], []
        for boxes, scores, image_shape in zip(pred_boxes, pred_scores, image_shapes):
            boxes = box_ops.clip_boxes_to_image(boxes, image_shape)
            labels = ember.arange(num_classes).view(1, -1).expand_as(scores)
            # drop the background column, one candidate per (proposal, class)
            boxes = boxes[:, 1:].reshape(-1, 4)
            scores = scores[:, 1:].reshape(-1)
            labels = labels[:, 1:].reshape(-1)
            keep = ember.where(scores > self.score_thresh)[0]
            boxes, scores, labels = boxes[keep], scores[keep], labels[keep]
            keep = box_ops.remove_small_boxes(boxes, min_size=1e-2)
            boxes, scores, labels = boxes[keep], scores[keep], labels[keep]
            keep = box_ops.batched_nms(boxes, scores, labels, self.nms_thresh)[: self.detections_per_img]
            all_boxes.append(boxes[keep])
            all_scores.append(scores[keep])
            all_labels.append(labels[keep])
        return all_boxes, all_scores, all_labels

    def forward(self, features, proposals, image_shapes, targets=None):
        if targets is not None:
            for t in targets:
                if not t["boxes"].is_floating_point():
                    raise TypeError(f"target boxes must of float type, instead got {t['boxes'].dtype}")
                if t["labels"].dtype != ember.int64:
                    raise TypeError(f"target labels must of int64 type, instead got {t['labels'].dtype}")
        if self.training:
            proposals, _, labels, regression_targets = self.select_training_samples(proposals, targets)
        box_features = self.box_head(self.box_roi_pool(features, proposals, image_shapes))
        class_logits, box_regression = self.box_predictor(box_features)
        result, losses = [], {}
        if self.training:
            loss_classifier, loss_box_reg = fastrcnn_loss(class_logits, box_regression, labels,
                                                          regression_targets)
            losses = {"loss_classifier": loss_classifier, "loss_box_reg": loss_box_reg}
        else:
            boxes, scores, labels = self.postprocess_detections(class_logits, box_regression,
                                                                proposals, image_shapes)
            result = [{"boxes": b, "labels": l, "scores": s} for b, s, l in zip(boxes, scores, labels)]
        return result, losses
