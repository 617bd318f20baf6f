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
    x1, y1, x2, y2 = boxes1.unbind(dim=-1)
    x1g, y1g, x2g, y2g = boxes2.unbind(dim=-1)
    ix1, iy1 = ember.max(x1, x1g), ember.max(y1, y1g)
    ix2, iy2 = ember.min(x2, x2g), ember.min(y2, y2g)
    inter = ember.zeros_like(x1)
    hit = (iy2 > iy1) & (ix2 > ix1)
    inter[hit] = (ix2[hit] - ix1[hit]) * (iy2[hit] - iy1[hit])
    union = (x2 - x1) * (y2 - y1) + (x2g - x1g) * (y2g - y1g) - inter
    iou = inter / (union + eps)
    hull = (ember.min(x1, x1g), ember.min(y1, y1g), ember.max(x2, x2g), ember.max(y2, y2g))
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
    x1, y1, x2, y2 = boxes1.unbind(dim=-1)
    x1g, y1g, x2g, y2g = boxes2.unbind(dim=-1)
    centers = ((x1 + x2) / 2 - (x1g + x2g) / 2) ** 2 + ((y1 + y2) / 2 - (y1g + y2g) / 2) ** 2
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
    x1, y1, x2, y2 = boxes1.unbind(dim=-1)
    x1g, y1g, x2g, y2g = boxes2.unbind(dim=-1)
    w, h = x2 - x1, y2 - y1
    wg, hg = x2g - x1g, y2g - y1g
    v = (4 / (math.pi ** 2)) * ember.pow(ember.atan(wg / hg) - ember.atan(w / h), 2)
    with ember.no_grad():
        alpha = v / (1 - iou + v + eps)
    return _reduce(loss + alpha * v, reduction)
