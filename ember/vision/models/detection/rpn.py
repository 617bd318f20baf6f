"""Region proposal network (Ren et al. 2015, section 3.1).

Per FPN level a shared 3x3 convolution feeds two 1x1 convolutions: an objectness logit and
four box deltas for each of the A anchors at every position. Proposals are the anchors moved
by their deltas; per image they keep the best ``pre_nms_top_n`` of each level, are clipped,
lose tiny and low-scoring boxes, and go through NMS level by level. Training adds the
objectness (BCE) and box (smooth-L1) losses over a balanced sample of anchors."""
from itertools import accumulate

import ember
from ember import nn
from ember.nn import functional as F
from ...ops import boxes as box_ops
from ...ops.misc import Conv2dNormActivation
from . import _utils as det_utils
from .anchor_utils import AnchorGenerator  # noqa: F401  (torchvision exposes it here too)

__all__ = ["RPNHead", "RegionProposalNetwork"]

_SMOOTH_L1_BETA = 1.0 / 9
_MIN_PROPOSAL_SIDE = 1e-3


class RPNHead(nn.Module):
    """``forward([(N, C, H_l, W_l)])`` -> (logits [(N, A, H_l, W_l)], deltas [(N, 4A, H_l, W_l)])."""
    _OUTPUTS = (("cls_logits", 1), ("bbox_pred", 4))         # name, channels per anchor

    def __init__(self, in_channels, num_anchors, conv_depth=1):
        super().__init__()
        trunk = [Conv2dNormActivation(in_channels, in_channels, kernel_size=3, norm_layer=None)
                 for _ in range(conv_depth)]
        self.conv = nn.Sequential(*trunk)
        for name, per_anchor in self._OUTPUTS:
            self.add_module(name, nn.Conv2d(in_channels, per_anchor * num_anchors, kernel_size=1))
        for conv in (m for m in self.modules() if isinstance(m, nn.Conv2d)):
            nn.init.normal_(conv.weight, std=0.01)
            if conv.bias is not None:
                nn.init.constant_(conv.bias, 0)

    def forward(self, x):
        shared = [self.conv(level) for level in x]
        return [self.cls_logits(s) for s in shared], [self.bbox_pred(s) for s in shared]


def _anchor_rows(t, width):
    """(N, A * width, H, W) -> (N, H * W * A, width): one row per (position, anchor)."""
    n, _, h, w = t.shape
    return t.reshape(n, -1, width, h, w).permute(0, 3, 4, 1, 2).reshape(n, -1, width)


def permute_and_flatten(layer, N, A, C, H, W):
    """(N, A*C, H, W) -> (N, H*W*A, C)."""
    return _anchor_rows(layer.reshape(N, A * C, H, W), C)


def concat_box_prediction_layers(box_cls, box_regression):
    """Per-level head outputs -> (N * sum_l H_l W_l A, C) logits and (same, 4) deltas, rows
    ordered by image, level, position, anchor."""
    anchors_per_cell = [r.shape[1] // 4 for r in box_regression]
    logits = ember.cat([_anchor_rows(c, c.shape[1] // a) for c, a in zip(box_cls, anchors_per_cell)], 1)
    deltas = ember.cat([_anchor_rows(r, 4) for r in box_regression], 1)
    return logits.reshape(-1, logits.shape[-1]), deltas.reshape(-1, 4)


class RegionProposalNetwork(nn.Module):
    """``forward(images: ImageList, features: {name: (N, C, H_l, W_l)}, targets=None)`` ->
    (per-image (P_i, 4) proposals, losses: objectness and box regression when training).
    ``pre_nms_top_n`` / ``post_nms_top_n`` are {"training": k, "testing": k}."""

    def __init__(self, anchor_generator, head, fg_iou_thresh, bg_iou_thresh, batch_size_per_image,
                 positive_fraction, pre_nms_top_n, post_nms_top_n, nms_thresh, score_thresh=0.0):
        super().__init__()
        self.anchor_generator, self.head = anchor_generator, head
        self.proposal_matcher = det_utils.Matcher(fg_iou_thresh, bg_iou_thresh, allow_low_quality_matches=True)
        self.fg_bg_sampler = det_utils.BalancedPositiveNegativeSampler(batch_size_per_image, positive_fraction)
        self.box_coder = det_utils.BoxCoder(weights=(1.0,) * 4)
        self.box_similarity = box_ops.box_iou
        self._pre_nms_top_n, self._post_nms_top_n = pre_nms_top_n, post_nms_top_n
        self.nms_thresh, self.score_thresh = nms_thresh, score_thresh
        self.min_size = _MIN_PROPOSAL_SIDE

    def _phase(self):
        return "training" if self.training else "testing"

    def pre_nms_top_n(self):
        return self._pre_nms_top_n[self._phase()]

    def post_nms_top_n(self):
        return self._post_nms_top_n[self._phase()]

    # ------------------------------------------------------------------ proposals
    def _best_per_level(self, logits, counts):
        """(N, sum counts) logits -> (N, K) column indices: each level's top pre_nms_top_n."""
        k = self.pre_nms_top_n()
        starts = [0, *accumulate(counts)]
        return ember.cat([chunk.topk(min(k, chunk.shape[1]), dim=1).indices + first
                          for chunk, first in zip(logits.split(counts, 1), starts)], dim=1)

    def filter_proposals(self, proposals, objectness, image_shapes, num_anchors_per_level):
        """(N, M, 4) decoded anchors and their (N * M,) logits -> per image (P_i, 4) boxes
        and (P_i,) probabilities after top-k, clipping, size/score filtering and NMS."""
        n_img = proposals.shape[0]
        logits = objectness.detach().reshape(n_img, -1)
        level_of = ember.repeat_interleave(ember.arange(len(num_anchors_per_level)),
                                           ember.tensor(num_anchors_per_level))
        cols = self._best_per_level(logits, num_anchors_per_level)
        rows = ember.arange(n_img)[:, None]
        probs, boxes, levels = ember.sigmoid(logits[rows, cols]), proposals[rows, cols], level_of[cols]
        cap, out_boxes, out_scores = self.post_nms_top_n(), [], []
        for img_boxes, img_probs, img_levels, hw in zip(boxes, probs, levels, image_shapes):
            img_boxes = box_ops.clip_boxes_to_image(img_boxes, hw)
            sides = img_boxes[:, 2:] - img_boxes[:, :2]
            alive = (sides >= self.min_size).all(dim=1) & (img_probs >= self.score_thresh)
            idx = ember.where(alive)[0]
            idx = idx[box_ops.batched_nms(img_boxes[idx], img_probs[idx], img_levels[idx], self.nms_thresh)[:cap]]
            out_boxes.append(img_boxes[idx])
            out_scores.append(img_probs[idx])
        return out_boxes, out_scores

    # ------------------------------------------------------------------ training
    def assign_targets_to_anchors(self, anchors, targets):
        """Per image: anchor labels (1 object, 0 background, -1 ignored; float32) and the
        (M, 4) ground-truth box each anchor regresses to."""
        labels, matched = [], []
        for img_anchors, target in zip(anchors, targets):
            gt = target["boxes"]
            if gt.numel() == 0:
                labels.append(ember.zeros((img_anchors.shape[0],), dtype=ember.float32))
                matched.append(ember.zeros(img_anchors.shape, dtype=ember.float32))
                continue
            which = self.proposal_matcher(self.box_similarity(gt, img_anchors))
            ignored = which == det_utils.Matcher.BETWEEN_THRESHOLDS
            labels.append((which >= 0).to(ember.float32) - ignored.to(ember.float32))
            matched.append(gt[which.clamp(min=0)])
        return labels, matched

    def compute_loss(self, objectness, pred_bbox_deltas, labels, regression_targets):
        """BCE of the sampled anchors' logits; smooth-L1 of the positives' deltas, summed and
        divided by the number sampled."""
        pos_masks, neg_masks = self.fg_bg_sampler(labels)
        fg = ember.where(ember.cat(pos_masks, dim=0))[0]
        chosen = ember.cat([fg, ember.where(ember.cat(neg_masks, dim=0))[0]], dim=0)
        wanted = ember.cat(regression_targets, dim=0)[fg]
        reg = F.smooth_l1_loss(pred_bbox_deltas[fg], wanted, beta=_SMOOTH_L1_BETA, reduction="sum")
        cls = F.binary_cross_entropy_with_logits(objectness.flatten()[chosen], ember.cat(labels, dim=0)[chosen])
        return cls, reg / chosen.numel()

    def forward(self, images, features, targets=None):
        levels = list(features.values())
        level_logits, level_deltas = self.head(levels)
        anchors = self.anchor_generator(images, levels)
        counts = [logit[0].numel() for logit in level_logits]          # A * H_l * W_l
        logits, deltas = concat_box_prediction_layers(level_logits, level_deltas)
        decoded = self.box_coder.decode(deltas.detach(), anchors).view(len(anchors), -1, 4)
        proposals, _ = self.filter_proposals(decoded, logits, images.image_sizes, counts)
        if not self.training:
            return proposals, {}
        if targets is None:
            raise ValueError("targets should not be None")
        labels, matched = self.assign_targets_to_anchors(anchors, targets)
        loss_objectness, loss_rpn_box_reg = self.compute_loss(
            logits, deltas, labels, self.box_coder.encode(matched, anchors))
        return proposals, {"loss_objectness": loss_objectness, "loss_rpn_box_reg": loss_rpn_box_reg}
