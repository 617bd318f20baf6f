"""Paired box regression losses (torchvision.ops.{generalized,distance,complete}_box_iou_loss):
``1 - (G/D/C)IoU`` of row i of ``boxes1`` against row i of ``boxes2`` (both (N, 4), or any
shape ending in 4, as x1, y1, x2, y2), reduced 'none' | 'mean' | 'sum'. Written in ember ops,
so they differentiate; integer boxes are taken as float32."""
import math

import ember

__all__ = ["generalized_box_iou_loss", "distance_box_iou_loss", "complete_box_iou_loss"]


def _float(t):
    return t if t.is_floating_point() else t.float()


def _reduce(loss, reduction):
    if reduction == "none":
        return loss
    if reduction == "mean":          # an empty batch: a zero that keeps the graph
        return loss.mean() if loss.numel() > 0 else 0.0 * loss.sum()
    if reduction == "sum":
        return loss.sum()
    raise ValueError(f"Invalid Value for arg 'reduction': '{reduction} \n Supported reduction "
                     f"modes: 'none', 'mean', 'sum'")


def _overlap(boxes1, boxes2, eps):
    """Per pair: IoU, union, and the corners of the smallest enclosing box."""
    ax1, ay1, ax2, ay2 = boxes1.unbind(dim=-1)
    bx1, by1, bx2, by2 = boxes2.unbind(dim=-1)
    lo_x, lo_y = ember.max(ax1, bx1), ember.max(ay1, by1)
    hi_x, hi_y = ember.min(ax2, bx2), ember.min(ay2, by2)
    common = ember.zeros_like(ax1)
    hit = (hi_y > lo_y) & (hi_x > lo_x)
    common[hit] = (hi_x[hit] - lo_x[hit]) * (hi_y[hit] - lo_y[hit])
    union = (ax2 - ax1) * (ay2 - ay1) + (bx2 - bx1) * (by2 - by1) - common
    iou = common / (union + eps)
    hull = (ember.min(ax1, bx1), ember.min(ay1, by1), ember.max(ax2, bx2), ember.max(ay2, by2))
    return iou, union, hull


def generalized_box_iou_loss(boxes1, boxes2, reduction="none", eps=1e-7):
    """``1 - GIoU``: the IoU less the share of the enclosing box neither box covers."""
    boxes1, boxes2 = _float(boxes1), _float(boxes2)
    iou, union, (cx1, cy1, cx2, cy2) = _overlap(boxes1, boxes2, eps)
    hull = (cx2 - cx1) * (cy2 - cy1)
    loss = 1 - (iou - (hull - union) / (hull + eps))
    return _reduce(loss, reduction)


def _diou_loss(boxes1, boxes2, eps):
    iou, _, (cx1, cy1, cx2, cy2) = _overlap(boxes1, boxes2, eps)
    diagonal = (cx2 - cx1) ** 2 + (cy2 - cy1) ** 2 + eps
    ax1, ay1, ax2, ay2 = boxes1.unbind(dim=-1)
    bx1, by1, bx2, by2 = boxes2.unbind(dim=-1)
    centers = ((ax1 + ax2) / 2 - (bx1 + bx2) / 2) ** 2 + ((ay1 + ay2) / 2 - (by1 + by2) / 2) ** 2
    return 1 - iou + centers / diagonal, iou


def distance_box_iou_loss(boxes1, boxes2, reduction="none", eps=1e-7):
    """``1 - DIoU``: ``1 - IoU`` plus the squared distance of the centers over the enclosing
    box's squared diagonal."""
    loss, _ = _diou_loss(_float(boxes1), _float(boxes2), eps)
    return _reduce(loss, reduction)


def complete_box_iou_loss(boxes1, boxes2, reduction="none", eps=1e-7):
    """``1 - CIoU``: the DIoU loss plus ``alpha * v``, ``v`` the squared difference of the
    boxes' aspect angles (times 4 / pi**2), ``alpha = v / (1 - IoU + v)`` held constant."""
    boxes1, boxes2 = _float(boxes1), _float(boxes2)
    loss, iou = _diou_loss(boxes1, boxes2, eps)
    ax1, ay1, ax2, ay2 = boxes1.unbind(dim=-1)
    bx1, by1, bx2, by2 = boxes2.unbind(dim=-1)
    w, h = ax2 - ax1, ay2 - ay1
    wg, hg = bx2 - bx1, by2 - by1
    v = (4 / (math.pi ** 2)) * ember.pow(ember.atan(wg / hg) - ember.atan(w / h), 2)
    with ember.no_grad():
        alpha = v / (1 - iou + v + eps)
    return _reduce(loss + alpha * v, reduction)
