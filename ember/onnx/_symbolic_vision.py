"""Symbolics for ``ember.vision.ops``: ``nms`` -> NonMaxSuppression, ``roi_align`` ->
RoiAlign, ``roi_pool`` -> MaxRoiPool (recorded as single nodes during export, see
``_patches``)."""
from __future__ import annotations

import ember
from ember.onnx._registry import symbolic
from ember.onnx._helpers import cast_to, out_dtype, sv


@symbolic("aten::_onnx_nms", opset=11)
def nms(g, boxes, scores, iou_threshold):
    dt = ember.float32
    b = g.op("Unsqueeze", cast_to(g, boxes, dt), g.const([0]))                # (1, N, 4)
    s = g.op("Unsqueeze", cast_to(g, scores, dt), g.const([0, 1]))            # (1, 1, N)
    sel = g.op("NonMaxSuppression", b, s, g.const([2 ** 62]),
               g.const([float(sv(iou_threshold))], dt))                    # (K, 3)
    col = g.op("Gather", sel, g.const([2]), axis=1)
    return g.op("Reshape", col, g.const([-1]))


@symbolic("aten::_onnx_roi_align", opset=16)
def roi_align(g, x, rois, ph, pw, scale, ratio, aligned):
    dt = out_dtype(g)
    r = cast_to(g, rois, dt)
    idx = g.op("Cast", g.op("Reshape", g.op("Gather", r, g.const([0]), axis=1), g.const([-1])),
               to=7)                                                       # int64
    coords = g.op("Gather", r, g.const([1, 2, 3, 4]), axis=1)
    ratio = int(sv(ratio))
    return g.op("RoiAlign", cast_to(g, x, dt), coords, idx, mode="avg",
                output_height=int(sv(ph)), output_width=int(sv(pw)),
                sampling_ratio=max(ratio, 0), spatial_scale=float(sv(scale)),
                coordinate_transformation_mode="half_pixel" if sv(aligned)
                else "output_half_pixel")


@symbolic("aten::_onnx_roi_pool")
def roi_pool(g, x, rois, ph, pw, scale):
    dt = out_dtype(g)
    return g.op("MaxRoiPool", cast_to(g, x, dt), cast_to(g, rois, dt),
                pooled_shape=[int(sv(ph)), int(sv(pw))], spatial_scale=float(sv(scale)))
