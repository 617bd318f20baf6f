"""RoI heads, box branch (Girshick 2015, Fast R-CNN; Ren et al. 2015, section 3.2).

Each proposal's features are pooled (``box_roi_pool``), embedded (``box_head``) and turned
into class logits and per-class box deltas (``box_predictor``). At inference every
(proposal, foreground class) pair is a candidate box; candidates below ``score_thresh`` or
thinner than 0.01 are dropped, NMS runs class by class, and the best
``detections_per_img`` remain. Training matches proposals (plus the ground truth itself) to
ground truth, samples a balanced batch and returns the Fast R-CNN losses. Mask and
keypoint branches are not implemented."""
import ember
from ember import nn
from ember.nn import functional as F
from ...ops import boxes as box_ops
from . import _utils as det_utils

__all__ = ["RoIHeads", "fastrcnn_loss"]

_DEFAULT_REG_WEIGHTS = (10.0, 10.0, 5.0, 5.0)
_MIN_DETECTION_SIDE = 1e-2
_SMOOTH_L1_BETA = 1.0 / 9
_UNSUPPORTED = ("mask_roi_pool", "mask_head", "mask_predictor", "keypoint_roi_pool", "keypoint_head",
                "keypoint_predictor")


def fastrcnn_loss(class_logits, box_regression, labels, regression_targets):
    """(K, C) logits, (K, 4C) deltas, per-image labels and (K_i, 4) targets -> (mean
    cross-entropy over the K proposals, smooth-L1 of each positive's own-class deltas summed
    and divided by K)."""
    target_cls = ember.cat(labels, dim=0)
    target_box = ember.cat(regression_targets, dim=0)
    fg = ember.where(target_cls > 0)[0]
    per_class = box_regression.reshape(class_logits.shape[0], -1, 4)
    own = per_class[fg, target_cls[fg]]
    box_loss = F.smooth_l1_loss(own, target_box[fg], beta=_SMOOTH_L1_BETA, reduction="sum")
    return F.cross_entropy(class_logits, target_cls), box_loss / target_cls.numel()


def _check_target_types(targets):
    for t in targets:
        if not t["boxes"].is_floating_point():
            raise TypeError(f"target boxes must of float type, instead got {t['boxes'].dtype}")
        if t["labels"].dtype != ember.int64:
            raise TypeError(f"target labels must of int64 type, instead got {t['labels'].dtype}")


class RoIHeads(nn.Module):
    """``forward(features, proposals, image_shapes, targets=None)`` -> (per-image dicts of
    ``boxes`` (D, 4), ``labels`` (D,), ``scores`` (D,); losses when training)."""

    def __init__(self, box_roi_pool, box_head, box_predictor, fg_iou_thresh, bg_iou_thresh,
                 batch_size_per_image, positive_fraction, bbox_reg_weights, score_thresh, nms_thresh,
                 detections_per_img, mask_roi_pool=None, mask_head=None, mask_predictor=None,
                 keypoint_roi_pool=None, keypoint_head=None, keypoint_predictor=None):
        super().__init__()
        extras = dict(zip(_UNSUPPORTED, (mask_roi_pool, mask_head, mask_predictor, keypoint_roi_pool,
                                         keypoint_head, keypoint_predictor)))
        if any(v is not None for v in extras.values()):
            raise NotImplementedError("RoIHeads: the mask and keypoint branches are not implemented in ember")
        self.box_roi_pool, self.box_head, self.box_predictor = box_roi_pool, box_head, box_predictor
        self.box_coder = det_utils.BoxCoder(_DEFAULT_REG_WEIGHTS if bbox_reg_weights is None else bbox_reg_weights)
        self.fg_bg_sampler = det_utils.BalancedPositiveNegativeSampler(batch_size_per_image, positive_fraction)
        self.proposal_matcher = det_utils.Matcher(fg_iou_thresh, bg_iou_thresh, allow_low_quality_matches=False)
        self.box_similarity = box_ops.box_iou
        self.score_thresh, self.nms_thresh, self.detections_per_img = score_thresh, nms_thresh, detections_per_img
        for name in _UNSUPPORTED:
            setattr(self, name, None)

    def has_mask(self):
        return False

    def has_keypoint(self):
        return False

    # ----------------------------------------------------------------------- training samples
    def check_targets(self, targets):
        if targets is None:
            raise ValueError("targets should not be None")
        for key in ("boxes", "labels"):
            if any(key not in t for t in targets):
                raise ValueError(f"Every element of targets should have a {key} key")

    def add_gt_proposals(self, proposals, gt_boxes):
        """Ground-truth boxes join each image's proposals (appended at the end)."""
        return [ember.cat((p, g)) for p, g in zip(proposals, gt_boxes)]

    def assign_targets_to_proposals(self, proposals, gt_boxes, gt_labels):
        """Per image: the ground-truth index of each proposal (0 when none) and its class
        (0 background, -1 between the IoU thresholds: ignored)."""
        gt_index, classes = [], []
        for props, boxes, cls in zip(proposals, gt_boxes, gt_labels):
            if boxes.numel() == 0:
                gt_index.append(ember.zeros((props.shape[0],), dtype=ember.int64))
                classes.append(ember.zeros((props.shape[0],), dtype=ember.int64))
                continue
            which = self.proposal_matcher(box_ops.box_iou(boxes, props))
            nearest = which.clamp(min=0)
            cls_of = cls[nearest].to(ember.int64)
            cls_of = ember.where(which == det_utils.Matcher.BELOW_LOW_THRESHOLD, ember.zeros_like(cls_of), cls_of)
            cls_of = ember.where(which == det_utils.Matcher.BETWEEN_THRESHOLDS, ember.full_like(cls_of, -1), cls_of)
            gt_index.append(nearest)
            classes.append(cls_of)
        return gt_index, classes

    def subsample(self, labels):
        """Per image, the sampled proposals' indices in increasing order."""
        pos_masks, neg_masks = self.fg_bg_sampler(labels)
        return [ember.where(p | n)[0] for p, n in zip(pos_masks, neg_masks)]

    def select_training_samples(self, proposals, targets):
        """-> (sampled proposals, their gt indices, their labels, their regression targets)."""
        self.check_targets(targets)
        dtype = proposals[0].dtype
        gts = [t["boxes"].to(dtype) for t in targets]
        candidates = self.add_gt_proposals(proposals, gts)
        gt_index, classes = self.assign_targets_to_proposals(candidates, gts, [t["labels"] for t in targets])
        picked = self.subsample(classes)
        candidates = [c[i] for c, i in zip(candidates, picked)]
        classes = [c[i] for c, i in zip(classes, picked)]
        gt_index = [g[i] for g, i in zip(gt_index, picked)]
        fallback = ember.zeros((1, 4), dtype=dtype)            # images without ground truth
        matched = [(g if g.numel() else fallback)[i] for g, i in zip(gts, gt_index)]
        return candidates, gt_index, classes, self.box_coder.encode(matched, candidates)

    # ----------------------------------------------------------------------- detections
    def postprocess_detections(self, class_logits, box_regression, proposals, image_shapes):
        """(K, C) logits and (K, 4C) deltas over all images -> per image boxes (D, 4),
        scores (D,) and labels (D,) in 1..C-1."""
        counts = [len(p) for p in proposals]
        n_cls = class_logits.shape[-1]
        decoded = self.box_coder.decode(box_regression, proposals).split(counts, 0)
        probs = F.softmax(class_logits, -1).split(counts, 0)
        out = ([], [], [])
        for img_boxes, img_probs, hw in zip(decoded, probs, image_shapes):
            # one candidate per (proposal, foreground class), proposal-major
            cand = box_ops.clip_boxes_to_image(img_boxes, hw)[:, 1:].reshape(-1, 4)
            score = img_probs[:, 1:].reshape(-1)
            cls = ember.arange(1, n_cls).repeat(img_probs.shape[0])
            sides = cand[:, 2:] - cand[:, :2]
            idx = ember.where((score > self.score_thresh) & (sides >= _MIN_DETECTION_SIDE).all(dim=1))[0]
            idx = idx[box_ops.batched_nms(cand[idx], score[idx], cls[idx], self.nms_thresh)[: self.detections_per_img]]
            for store, values in zip(out, (cand, score, cls)):
                store.append(values[idx])
        return out

    def forward(self, features, proposals, image_shapes, targets=None):
        if targets is not None:
            _check_target_types(targets)
        if self.training:
            proposals, _, labels, regression_targets = self.select_training_samples(proposals, targets)
        embedded = self.box_head(self.box_roi_pool(features, proposals, image_shapes))
        class_logits, box_regression = self.box_predictor(embedded)
        if self.training:
            cls_loss, reg_loss = fastrcnn_loss(class_logits, box_regression, labels, regression_targets)
            return [], {"loss_classifier": cls_loss, "loss_box_reg": reg_loss}
        boxes, scores, classes = self.postprocess_detections(class_logits, box_regression, proposals, image_shapes)
        return [dict(boxes=b, labels=c, scores=s) for b, c, s in zip(boxes, classes, scores)], {}
