"""Box utilities (torchvision.ops.boxes): NMS in NumPy, the rest in ember ops (differentiable)."""
import numpy as np

import ember

__all__ = ["nms", "batched_nms", "remove_small_boxes", "clip_boxes_to_image", "box_convert",
           "box_area", "box_iou", "generalized_box_iou", "distance_box_iou", "complete_box_iou",
           "masks_to_boxes"]


def _nms_numpy(boxes, scores, iou_threshold):
    n = boxes.shape[0]
    if n == 0:
        return np.empty((0,), dtype=np.int64)
    x1, y1, x2, y2 = boxes[:, 0], boxes[:, 1], boxes[:, 2], boxes[:, 3]
    areas = (x2 - x1) * (y2 - y1)
    order = np.argsort(-scores, kind="stable")
    suppressed = np.zeros(n, dtype=bool)
    keep = []
    for pos, i in enumerate(order):
        if suppressed[i]:
            continue
        keep.append(i)
        rest = order[pos + 1:]
        rest = rest[~suppressed[rest]]
        if rest.size == 0:
            continue
        xx1 = np.maximum(x1[i], x1[rest])
        yy1 = np.maximum(y1[i], y1[rest])
        xx2 = np.minimum(x2[i], x2[rest])
        yy2 = np.minimum(y2[i], y2[rest])
        w = np.maximum(0, xx2 - xx1)
        h = np.maximum(0, yy2 - yy1)
        inter = w * h
        ovr = inter / (areas[i] + areas[rest] - inter)
        suppressed[rest[ovr > iou_threshold]] = True
    return np.asarray(keep, dtype=np.int64)


def nms(boxes, scores, iou_threshold):
    """Greedy non-maximum suppression; returns int64 indices of kept boxes by decreasing score."""
    if boxes.dim() != 2 or boxes.shape[-1] != 4:
        raise RuntimeError(f"boxes should have shape [N, 4], got {tuple(boxes.shape)}")
    if scores.dim() != 1 or scores.shape[0] != boxes.shape[0]:
        raise RuntimeError("scores should be a 1-d tensor with as many elements as boxes")
    b = boxes.detach().numpy()
    s = scores.detach().numpy()
    return ember.from_numpy(_nms_numpy(b, s, float(iou_threshold)))


def batched_nms(boxes, scores, idxs, iou_threshold):
    """NMS done independently per category ``idxs``; kept indices sorted by decreasing score."""
    if boxes.numel() == 0:
        return ember.empty((0,), dtype=ember.int64)
    b = boxes.detach().numpy()
    s = scores.detach().numpy()
    ids = idxs.detach().numpy()
    keep_mask = np.zeros(s.shape[0], dtype=bool)
    for c in np.unique(ids):
        cur = np.nonzero(ids == c)[0]
        keep_mask[cur[_nms_numpy(b[cur], s[cur], float(iou_threshold))]] = True
    keep = np.nonzero(keep_mask)[0]
    keep = keep[np.argsort(-s[keep], kind="stable")]
    return ember.from_numpy(keep.astype(np.int64))


def remove_small_boxes(boxes, min_size):
    ws, hs = boxes[:, 2] - boxes[:, 0], boxes[:, 3] - boxes[:, 1]
    keep = (ws >= min_size) & (hs >= min_size)
    return ember.where(keep)[0]


def clip_boxes_to_image(boxes, size):
    dim = boxes.dim()
    boxes_x = boxes[..., 0::2]
    boxes_y = boxes[..., 1::2]
    height, width = size
    boxes_x = boxes_x.clamp(min=0, max=width)
    boxes_y = boxes_y.clamp(min=0, max=height)
    return ember.stack((boxes_x, boxes_y), dim=dim).reshape(boxes.shape)


def _box_cxcywh_to_xyxy(boxes):
    cx, cy, w, h = boxes.unbind(-1)
    return ember.stack((cx - 0.5 * w, cy - 0.5 * h, cx + 0.5 * w, cy + 0.5 * h), dim=-1)


def _box_xyxy_to_cxcywh(boxes):
    x1, y1, x2, y2 = boxes.unbind(-1)
    return ember.stack(((x1 + x2) / 2, (y1 + y2) / 2, x2 - x1, y2 - y1), dim=-1)


def _box_xywh_to_xyxy(boxes):
    x, y, w, h = boxes.unbind(-1)
    return ember.stack([x, y, x + w, y + h], dim=-1)


def _box_xyxy_to_xywh(boxes):
    x1, y1, x2, y2 = boxes.unbind(-1)
    return ember.stack((x1, y1, x2 - x1, y2 - y1), dim=-1)


def _box_xywh_to_cxcywh(boxes):
    x, y, w, h = boxes.unbind(-1)
    return ember.stack([x + w / 2, y + h / 2, w, h], dim=-1)


def _box_cxcywh_to_xywh(boxes):
    cx, cy, w, h = boxes.unbind(-1)
    return ember.stack([cx - w / 2, cy - h / 2, w, h], dim=-1)


def box_convert(boxes, in_fmt, out_fmt):
    allowed = ("xyxy", "xywh", "cxcywh")
    if in_fmt not in allowed or out_fmt not in allowed:
        raise ValueError(f"Unsupported Bounding Box Conversions for given in_fmt {in_fmt} and out_fmt {out_fmt}")
    if in_fmt == out_fmt:
        return boxes.clone()
    e = (in_fmt, out_fmt)
    if e == ("xywh", "cxcywh"):
        return _box_xywh_to_cxcywh(boxes)
    if e == ("cxcywh", "xywh"):
        return _box_cxcywh_to_xywh(boxes)
    if in_fmt == "xywh":
        boxes = _box_xywh_to_xyxy(boxes)
    elif in_fmt == "cxcywh":
        boxes = _box_cxcywh_to_xyxy(boxes)
    if out_fmt == "xywh":
        boxes = _box_xyxy_to_xywh(boxes)
    elif out_fmt == "cxcywh":
        boxes = _box_xyxy_to_cxcywh(boxes)
    return boxes


def _upcast(t):
    if t.is_floating_point():
        return t if t.dtype in (ember.float32, ember.float64) else t.float()
    return t if t.dtype in (ember.int32, ember.int64) else t.int()


def box_area(boxes):
    boxes = _upcast(boxes)
    return (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])


def _box_inter_union(boxes1, boxes2):
    area1 = box_area(boxes1)
    area2 = box_area(boxes2)
    lt = ember.max(boxes1[:, None, :2], boxes2[:, :2])
    rb = ember.min(boxes1[:, None, 2:], boxes2[:, 2:])
    wh = _upcast(rb - lt).clamp(min=0)
    inter = wh[:, :, 0] * wh[:, :, 1]
    union = area1[:, None] + area2 - inter
    return inter, union


def box_iou(boxes1, boxes2):
    """Pairwise IoU (Jaccard index) of two sets of (x1, y1, x2, y2) boxes: [N, M]."""
    inter, union = _box_inter_union(boxes1, boxes2)
    return inter / union


def generalized_box_iou(boxes1, boxes2):
    inter, union = _box_inter_union(boxes1, boxes2)
    iou = inter / union
    lti = ember.min(boxes1[:, None, :2], boxes2[:, :2])
    rbi = ember.max(boxes1[:, None, 2:], boxes2[:, 2:])
    whi = _upcast(rbi - lti).clamp(min=0)
    areai = whi[:, :, 0] * whi[:, :, 1]
    return iou - (areai - union) / areai


def _box_diou_iou(boxes1, boxes2, eps=1e-7):
    iou = box_iou(boxes1, boxes2)
    lti = ember.min(boxes1[:, None, :2], boxes2[:, :2])
    rbi = ember.max(boxes1[:, None, 2:], boxes2[:, 2:])
    whi = _upcast(rbi - lti).clamp(min=0)
    diagonal_distance_squared = (whi[:, :, 0] ** 2) + (whi[:, :, 1] ** 2) + eps
    x_p = (boxes1[:, 0] + boxes1[:, 2]) / 2
    y_p = (boxes1[:, 1] + boxes1[:, 3]) / 2
    x_g = (boxes2[:, 0] + boxes2[:, 2]) / 2
    y_g = (boxes2[:, 1] + boxes2[:, 3]) / 2
    centers_distance_squared = (_upcast(x_p[:, None] - x_g[None, :]) ** 2) + \
        (_upcast(y_p[:, None] - y_g[None, :]) ** 2)
    return iou - (centers_distance_squared / diagonal_distance_squared), iou


def distance_box_iou(boxes1, boxes2, eps=1e-7):
    boxes1 = _upcast(boxes1)
    boxes2 = _upcast(boxes2)
    diou, _ = _box_diou_iou(boxes1, boxes2, eps=eps)
    return diou


def complete_box_iou(boxes1, boxes2, eps=1e-7):
    import math

    boxes1 = _upcast(boxes1)
    boxes2 = _upcast(boxes2)
    diou, iou = _box_diou_iou(boxes1, boxes2, eps)
    w_pred = boxes1[:, None, 2] - boxes1[:, None, 0]
    h_pred = boxes1[:, None, 3] - boxes1[:, None, 1]
    w_gt = boxes2[:, 2] - boxes2[:, 0]
    h_gt = boxes2[:, 3] - boxes2[:, 1]
    v = (4 / (math.pi ** 2)) * ember.pow(ember.atan(w_pred / h_pred) - ember.atan(w_gt / h_gt), 2)
    with ember.no_grad():
        alpha = v / (1 - iou + v + eps)
    return diou - alpha * v


def masks_to_boxes(masks):
    if masks.numel() == 0:
        return ember.zeros((0, 4), dtype=ember.float)
    m = masks.detach().numpy()
    out = np.zeros((m.shape[0], 4), dtype=np.float32)
    for i, mask in enumerate(m):
        y, x = np.nonzero(mask)
        if y.size:
            out[i] = [x.min(), y.min(), x.max(), y.max()]
    return ember.from_numpy(out)
