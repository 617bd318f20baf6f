"""Box utilities (torchvision.ops.boxes). Boxes are rows (x1, y1, x2, y2) with x1 <= x2 and
y1 <= y2 unless a format says otherwise. NMS runs in NumPy; the IoU family is written in
ember ops, so it differentiates."""
import math

import numpy as np

import ember

__all__ = ["nms", "batched_nms", "remove_small_boxes", "clip_boxes_to_image", "box_convert",
           "box_area", "box_iou", "generalized_box_iou", "distance_box_iou", "complete_box_iou",
           "masks_to_boxes"]


def _greedy_nms(boxes, scores, threshold):
    """Indices kept by greedy suppression: visit boxes by decreasing score (ties in index
    order); each one kept drops the later boxes overlapping it with IoU above ``threshold``."""
    x1, y1, x2, y2 = boxes.T
    area = (x2 - x1) * (y2 - y1)
    alive = np.ones(len(scores), dtype=bool)
    kept = []
    for i in np.argsort(-scores, kind="stable"):
        if not alive[i]:
            continue
        kept.append(i)
        alive[i] = False
        w = np.clip(np.minimum(x2[i], x2) - np.maximum(x1[i], x1), 0, None)
        h = np.clip(np.minimum(y2[i], y2) - np.maximum(y1[i], y1), 0, None)
        overlap = w * h
        alive &= ~(overlap / (area[i] + area - overlap) > threshold)
    return np.array(kept, dtype=np.int64)


def nms(boxes, scores, iou_threshold):
    """Greedy non-maximum suppression; returns int64 indices of kept boxes by decreasing score."""
    if boxes.dim() != 2 or boxes.shape[-1] != 4:
        raise RuntimeError(f"boxes should have shape [N, 4], got {tuple(boxes.shape)}")
    if scores.dim() != 1 or scores.shape[0] != boxes.shape[0]:
        raise RuntimeError("scores should be a 1-d tensor with as many elements as boxes")
    kept = _greedy_nms(boxes.detach().numpy(), scores.detach().numpy(), float(iou_threshold))
    return ember.from_numpy(kept)


def batched_nms(boxes, scores, idxs, iou_threshold):
    """NMS done independently per category ``idxs``; kept indices sorted by decreasing score."""
    b, s, groups = (t.detach().numpy() for t in (boxes, scores, idxs))
    kept = [np.empty(0, dtype=np.int64)]
    for g in np.unique(groups):
        members = np.flatnonzero(groups == g)
        kept.append(members[_greedy_nms(b[members], s[members], float(iou_threshold))])
    kept = np.sort(np.concatenate(kept))
    return ember.from_numpy(kept[np.argsort(-s[kept], kind="stable")].astype(np.int64))


def remove_small_boxes(boxes, min_size):
    """Indices of the boxes at least ``min_size`` wide and high."""
    wide = boxes[:, 2] - boxes[:, 0] >= min_size
    high = boxes[:, 3] - boxes[:, 1] >= min_size
    return ember.nonzero(wide & high, as_tuple=True)[0]


def clip_boxes_to_image(boxes, size):
    """Boxes (any leading shape) with x clamped to [0, width] and y to [0, height]."""
    height, width = size
    xs = boxes[..., 0::2].clamp(min=0, max=width)
    ys = boxes[..., 1::2].clamp(min=0, max=height)
    return ember.stack((xs, ys), dim=-1).reshape(boxes.shape)


def _to_corners(boxes, fmt):
    a, b, c, d = boxes.unbind(-1)
    if fmt == "xywh":
        return a, b, a + c, b + d
    if fmt == "cxcywh":
        return a - 0.5 * c, b - 0.5 * d, a + 0.5 * c, b + 0.5 * d
    return a, b, c, d


def _from_corners(x1, y1, x2, y2, fmt):
    if fmt == "xywh":
        return x1, y1, x2 - x1, y2 - y1
    if fmt == "cxcywh":
        return (x1 + x2) / 2, (y1 + y2) / 2, x2 - x1, y2 - y1
    return x1, y1, x2, y2


def box_convert(boxes, in_fmt, out_fmt):
    """Convert between "xyxy" (corners), "xywh" (corner and size), "cxcywh" (center and size)."""
    formats = ("xyxy", "xywh", "cxcywh")
    if in_fmt not in formats or out_fmt not in formats:
        raise ValueError(f"Unsupported Bounding Box Conversions for given in_fmt {in_fmt} and out_fmt {out_fmt}")
    if in_fmt == out_fmt:
        return boxes.clone()
    return ember.stack(_from_corners(*_to_corners(boxes, in_fmt), out_fmt), dim=-1)


def _upcast(t):
    """float16/bfloat16 to float32, smaller integers to int32, so areas do not overflow."""
    if t.element_size() >= 4:
        return t
    return t.float() if t.is_floating_point() else t.int()


def box_area(boxes):
    boxes = _upcast(boxes)
    return (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])


def _span(lo, hi):
    """Non-negative extent ``hi - lo`` in a dtype wide enough for products."""
    return _upcast(hi - lo).clamp(min=0)


def _pairwise(boxes1, boxes2):
    """[N, M] intersection and union areas, and the [N, M] width and height of the smallest
    box enclosing each pair."""
    a, b = boxes1[:, None, :], boxes2[None, :, :]
    inside = _span(ember.maximum(a[..., :2], b[..., :2]), ember.minimum(a[..., 2:], b[..., 2:]))
    inter = inside[..., 0] * inside[..., 1]
    union = box_area(boxes1)[:, None] + box_area(boxes2)[None, :] - inter
    hull = _span(ember.minimum(a[..., :2], b[..., :2]), ember.maximum(a[..., 2:], b[..., 2:]))
    return inter, union, hull[..., 0], hull[..., 1]


def box_iou(boxes1, boxes2):
    """Pairwise IoU (Jaccard index) of two sets of (x1, y1, x2, y2) boxes: [N, M]."""
    inter, union, _, _ = _pairwise(boxes1, boxes2)
    return inter / union


def generalized_box_iou(boxes1, boxes2):
    """IoU minus the share of the enclosing box that neither box covers (Rezatofighi 2019)."""
    inter, union, hull_w, hull_h = _pairwise(boxes1, boxes2)
    hull = hull_w * hull_h
    return inter / union - (hull - union) / hull


def _diou_and_iou(boxes1, boxes2, eps):
    """IoU minus the squared center distance over the enclosing box's squared diagonal
    (Zheng et al. 2019), and the IoU."""
    inter, union, hull_w, hull_h = _pairwise(boxes1, boxes2)
    iou = inter / union
    diagonal = hull_w ** 2 + hull_h ** 2 + eps
    cx1, cy1 = (boxes1[:, 0] + boxes1[:, 2]) / 2, (boxes1[:, 1] + boxes1[:, 3]) / 2
    cx2, cy2 = (boxes2[:, 0] + boxes2[:, 2]) / 2, (boxes2[:, 1] + boxes2[:, 3]) / 2
    centers = _upcast(cx1[:, None] - cx2[None, :]) ** 2 + _upcast(cy1[:, None] - cy2[None, :]) ** 2
    return iou - centers / diagonal, iou


def distance_box_iou(boxes1, boxes2, eps=1e-7):
    return _diou_and_iou(_upcast(boxes1), _upcast(boxes2), eps)[0]


def complete_box_iou(boxes1, boxes2, eps=1e-7):
    """Distance IoU minus an aspect-ratio consistency term ``alpha * v`` (alpha held constant)."""
    boxes1, boxes2 = _upcast(boxes1), _upcast(boxes2)
    diou, iou = _diou_and_iou(boxes1, boxes2, eps)
    w1, h1 = boxes1[:, 2] - boxes1[:, 0], boxes1[:, 3] - boxes1[:, 1]
    w2, h2 = boxes2[:, 2] - boxes2[:, 0], boxes2[:, 3] - boxes2[:, 1]
    v = (4 / math.pi ** 2) * (ember.atan(w1 / h1)[:, None] - ember.atan(w2 / h2)[None, :]) ** 2
    weight = (v / (1 - iou + v + eps)).detach()
    return diou - weight * v


def masks_to_boxes(masks):
    """The (x1, y1, x2, y2) float box around each [H, W] mask's nonzero pixels (zeros if none)."""
    m = masks.detach().numpy().astype(bool)
    out = np.zeros((m.shape[0], 4), dtype=np.float32)
    if m.size:
        rows, cols = m.any(2), m.any(1)

        def first_last(hit):
            return hit.argmax(1), hit.shape[1] - 1 - hit[:, ::-1].argmax(1)
        (y1, y2), (x1, x2) = first_last(rows), first_last(cols)
        nonempty = rows.any(1)
        out[nonempty] = np.stack([x1, y1, x2, y2], 1)[nonempty]
    return ember.from_numpy(out)
