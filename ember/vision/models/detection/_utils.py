"""Box coding, IoU matching and balanced sampling shared by the RPN and the RoI heads."""
import math

import ember
from ember.nn import functional as F


class BoxCoder:
    """Boxes <-> regression targets (dx, dy, dw, dh) relative to reference boxes, each divided
    by ``weights``; dw and dh are clamped at ``bbox_xform_clip`` when decoding."""

    def __init__(self, weights, bbox_xform_clip=math.log(1000.0 / 16)):
        self.weights = weights
        self.bbox_xform_clip = bbox_xform_clip

    def encode(self, reference_boxes, proposals):
        """Per-image lists of (L_i, 4) matched boxes and proposals -> per-image targets."""
        sizes = [len(b) for b in reference_boxes]
        targets = self.encode_single(ember.cat(reference_boxes, dim=0), ember.cat(proposals, dim=0))
        return targets.split(sizes, 0)

    def encode_single(self, reference_boxes, proposals):
        dtype = reference_boxes.dtype
        wx, wy, ww, wh = (ember.tensor(w, dtype=dtype) for w in self.weights)
        px1, py1, px2, py2 = (proposals[:, i].unsqueeze(1) for i in range(4))
        gx1, gy1, gx2, gy2 = (reference_boxes[:, i].unsqueeze(1) for i in range(4))
        ex_w, ex_h = px2 - px1, py2 - py1
        ex_x, ex_y = px1 + 0.5 * ex_w, py1 + 0.5 * ex_h
        gt_w, gt_h = gx2 - gx1, gy2 - gy1
        gt_x, gt_y = gx1 + 0.5 * gt_w, gy1 + 0.5 * gt_h
        return ember.cat((wx * (gt_x - ex_x) / ex_w, wy * (gt_y - ex_y) / ex_h,
                          ww * ember.log(gt_w / ex_w), wh * ember.log(gt_h / ex_h)), dim=1)

    def decode(self, rel_codes, boxes):
        """(sum L_i, K*4) codes and per-image reference boxes -> (sum L_i, K, 4) boxes."""
        total = sum(b.size(0) for b in boxes)
        reference = ember.cat(boxes, dim=0)
        if total > 0:
            rel_codes = rel_codes.reshape(total, -1)
        pred = self.decode_single(rel_codes, reference)
        return pred.reshape(total, -1, 4) if total > 0 else pred

    def decode_single(self, rel_codes, boxes):
        boxes = boxes.to(rel_codes.dtype)
        widths, heights = boxes[:, 2] - boxes[:, 0], boxes[:, 3] - boxes[:, 1]
        ctr_x, ctr_y = boxes[:, 0] + 0.5 * widths, boxes[:, 1] + 0.5 * heights
        wx, wy, ww, wh = self.weights
        dx, dy = rel_codes[:, 0::4] / wx, rel_codes[:, 1::4] / wy
        dw = ember.clamp(rel_codes[:, 2::4] / ww, max=self.bbox_xform_clip)
        dh = ember.clamp(rel_codes[:, 3::4] / wh, max=self.bbox_xform_clip)
        pred_x = dx * widths[:, None] + ctr_x[:, None]
        pred_y = dy * heights[:, None] + ctr_y[:, None]
        half_w = ember.tensor(0.5, dtype=pred_x.dtype) * (ember.exp(dw) * widths[:, None])
        half_h = ember.tensor(0.5, dtype=pred_y.dtype) * (ember.exp(dh) * heights[:, None])
        return ember.stack((pred_x - half_w, pred_y - half_h, pred_x + half_w, pred_y + half_h),
                           dim=2).flatten(1)


class Matcher:
    """Each prediction (column of an IoU matrix, ground truth by rows) gets the index of its
    best ground truth, or BELOW_LOW_THRESHOLD (-1) / BETWEEN_THRESHOLDS (-2)."""
    BELOW_LOW_THRESHOLD = -1
    BETWEEN_THRESHOLDS = -2

    def __init__(self, high_threshold, low_threshold, allow_low_quality_matches=False):
        if low_threshold > high_threshold:
            raise ValueError("low_threshold should be <= high_threshold")
        self.high_threshold, self.low_threshold = high_threshold, low_threshold
        self.allow_low_quality_matches = allow_low_quality_matches

    def __call__(self, match_quality_matrix):
        if match_quality_matrix.numel() == 0:
            if match_quality_matrix.shape[0] == 0:
                raise ValueError("No ground-truth boxes available for one of the images during training")
            raise ValueError("No proposal boxes available for one of the images during training")
        matched_vals, matches = match_quality_matrix.max(dim=0)
        all_matches = matches.clone() if self.allow_low_quality_matches else None
        below = matched_vals < self.low_threshold
        between = (matched_vals >= self.low_threshold) & (matched_vals < self.high_threshold)
        matches[below] = self.BELOW_LOW_THRESHOLD
        matches[between] = self.BETWEEN_THRESHOLDS
        if all_matches is not None:
            # each ground truth keeps the predictions it overlaps most (ties included)
            best = match_quality_matrix.max(dim=1).values
            pred_idx = ember.where(match_quality_matrix == best[:, None])[1]
            matches[pred_idx] = all_matches[pred_idx]
        return matches


class BalancedPositiveNegativeSampler:
    """Per image, up to ``batch_size_per_image`` labels (1 positive, 0 negative, -1 ignored)
    with at most ``positive_fraction`` positives, chosen by ``randperm``."""

    def __init__(self, batch_size_per_image, positive_fraction):
        self.batch_size_per_image = batch_size_per_image
        self.positive_fraction = positive_fraction

    def __call__(self, matched_idxs):
        pos_masks, neg_masks = [], []
        for labels in matched_idxs:
            positive = ember.where(labels >= 1)[0]
            negative = ember.where(labels == 0)[0]
            num_pos = min(positive.numel(), int(self.batch_size_per_image * self.positive_fraction))
            num_neg = min(negative.numel(), self.batch_size_per_image - num_pos)
            pos_idx = positive[ember.randperm(positive.numel())[:num_pos]]
            neg_idx = negative[ember.randperm(negative.numel())[:num_neg]]
            pos_mask = ember.zeros_like(labels, dtype=ember.uint8)
            neg_mask = ember.zeros_like(labels, dtype=ember.uint8)
            pos_mask[pos_idx] = 1
            neg_mask[neg_idx] = 1
            pos_masks.append(pos_mask)
            neg_masks.append(neg_mask)
        return pos_masks, neg_masks


def _topk_min(values, k, axis):
    return min(k, values.shape[axis])


def smooth_l1(input, target, beta, size_average=True):
    return F.smooth_l1_loss(input, target, beta=beta, reduction="mean" if size_average else "sum")
