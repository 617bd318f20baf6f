"""What the export changes while it traces, so some calls reach the graph as one node each.

- ember's recurrent layers, ``vision.ops.nms`` (``batched_nms`` as one nms over boxes
  offset per category), ``roi_align`` and ``roi_pool`` compute in NumPy or in many small
  ops; here they call op records of their own (``aten::_onnx_rnn``, ``_onnx_nms`` ...)
  whose bodies are the original code: one node, mapped to LSTM/GRU/RNN,
  NonMaxSuppression, RoiAlign, MaxRoiPool.
- global average pooling and ``interpolate`` become GlobalAveragePool and Resize (the
  spatial size may vary); multi-head attention runs a version without sizes
  (``_attention``), so batch and sequence length may vary.
- ``Tensor.detach`` is recorded (``aten::alias``), and so is indexing with tensors
  (``aten::_onnx_index`` / ``_onnx_index_put``): the tracer would bake their results / the
  index tensors in as constants (hardsigmoid's ``lin.detach().clamp(0, 1)``,
  ``boxes[keep]``).

Everything is restored when the trace ends (the patches are process-wide meanwhile).
"""
from __future__ import annotations

import contextlib

import ember

_MODULES: dict = {}         # id -> recurrent module being exported
_OPS: dict = {}


def module_for(mid):
    return _MODULES[mid]


def _ops():
    if _OPS:
        return _OPS
    from ember._ops.registry import OpDef

    def rnn_body(x, hx, cx, mid):
        m = _MODULES[mid]
        state = None if hx is None else ((hx, cx) if m.mode == "LSTM" else hx)
        out, h = _ORIGINAL_FORWARD[mid](x, state)
        if m.mode == "LSTM":
            return out, h[0], h[1]
        return out, h, h

    def nms_body(boxes, scores, iou):
        return _ORIGINALS["nms"](boxes, scores, iou)

    def roi_body(x, rois, ph, pw, scale, ratio, aligned):
        return _ORIGINALS["roi_align"](x, rois, (ph, pw), scale, ratio, aligned)

    _OPS["rnn"] = OpDef("_onnx_rnn(Tensor input, Tensor? hx, Tensor? cx, int module) -> "
                        "(Tensor output, Tensor h_n, Tensor c_n)", composite=rnn_body,
                        promote=None, differentiable=False)
    _OPS["nms"] = OpDef("_onnx_nms(Tensor boxes, Tensor scores, float iou_threshold) -> Tensor",
                        composite=nms_body, promote=None, differentiable=False)
    def index_body(x, tensors, key):
        parts = iter(tensors)
        idx = tuple(next(parts) if p is HOLE else p for p in _TEMPLATES[key])
        return _ORIGINALS["getitem"](x, idx)

    _OPS["index"] = OpDef("_onnx_index(Tensor self, Tensor[] tensors, int key) -> Tensor",
                          composite=index_body, promote=None, differentiable=False)
    _OPS["global_avg"] = OpDef("_onnx_global_avg_pool(Tensor self) -> Tensor",
                               composite=lambda x: _ORIGINALS["adaptive_avg"](
                                   x, x.dim() - 2, [1] * (x.dim() - 2)),
                               promote=None, differentiable=False)
    _OPS["resize"] = OpDef(
        "_onnx_resize(Tensor input, int[]? size, float[]? scale_factor, str mode, "
        "bool? align_corners) -> Tensor",
        composite=lambda x, size, scale, mode, ac: _ORIGINALS["interpolate"](
            x, size=size, scale_factor=scale, mode=mode, align_corners=ac),
        promote=None, differentiable=False)
    def index_put_body(x, tensors, value, key):
        parts = iter(tensors)
        idx = tuple(next(parts) if p is HOLE else p for p in _TEMPLATES[key])
        y = x.clone()
        _ORIGINALS["setitem"](y, idx, value)
        return y

    _OPS["index_put"] = OpDef("_onnx_index_put(Tensor self, Tensor[] tensors, Tensor value, "
                              "int key) -> Tensor", composite=index_put_body, promote=None,
                              differentiable=False)
    _OPS["roi_pool"] = OpDef(
        "_onnx_roi_pool(Tensor input, Tensor rois, int pooled_height, int pooled_width, "
        "float spatial_scale) -> Tensor",
        composite=lambda x, rois, ph, pw, scale: _ORIGINALS["roi_pool"](x, rois, (ph, pw),
                                                                        scale),
        promote=None, differentiable=False)
    _OPS["roi_align"] = OpDef(
        "_onnx_roi_align(Tensor input, Tensor rois, int pooled_height, int pooled_width, "
        "float spatial_scale, int sampling_ratio, bool aligned) -> Tensor",
        composite=roi_body, promote=None, differentiable=False)
    # the export's own records: called directly, never looked up by name, so they stay out
    # of the public registry (and of what its op-database coverage test counts)
    from ember._ops.registry import OPS
    for op in _OPS.values():
        OPS.pop(op.name, None)
    return _OPS


_ORIGINAL_FORWARD: dict = {}
_ORIGINALS: dict = {}


def _rnn_forward(m):
    mid = id(m)
    op = _ops()["rnn"]

    def forward(input, hx=None):
        from ember.nn.utils.rnn import PackedSequence
        if isinstance(input, PackedSequence):
            raise NotImplementedError("ONNX export of a recurrent layer on a PackedSequence")
        h, c = (hx if hx is not None else (None, None)) if m.mode == "LSTM" else (hx, None)
        out, h_n, c_n = op(input, h, c, mid)
        return (out, (h_n, c_n)) if m.mode == "LSTM" else (out, h_n)
    return forward


def _nms(boxes, scores, iou_threshold):
    return _ops()["nms"](boxes, scores, float(iou_threshold))


class _Hole:
    """Where a tensor sits in an index template."""

    def __repr__(self):
        return "<tensor>"


HOLE = _Hole()
_TEMPLATES: list = []


def index_template(key):
    return _TEMPLATES[key]


def _getitem(orig):
    def getitem(self, idx):
        from ember.jit import is_tracing
        tensors = [i for i in idx if isinstance(i, ember.Tensor)]
        if not is_tracing() or not tensors or len(idx) > 8:
            return orig(self, idx)
        _TEMPLATES.append([HOLE if isinstance(i, ember.Tensor) else i for i in idx])
        return _ops()["index"](self, tensors, len(_TEMPLATES) - 1)
    return getitem


def _adaptive_avg(input, n, output_size):
    """Global average pooling as one node (GlobalAveragePool: any spatial size)."""
    sizes = [output_size] * n if isinstance(output_size, int) else list(output_size)
    if input.dim() == n + 2 and all(o == 1 for o in sizes):
        return _ops()["global_avg"](input)
    return _ORIGINALS["adaptive_avg"](input, n, output_size)


_RESIZE_MODES = {"nearest", "linear", "bilinear", "bicubic", "trilinear"}


def _interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                 recompute_scale_factor=None, antialias=False):
    """``interpolate`` as one node (ONNX Resize) when Resize computes what torch does."""
    orig = _ORIGINALS["interpolate"]
    n = input.dim() - 2
    plain = mode in _RESIZE_MODES and not antialias and not recompute_scale_factor and \
        1 <= n <= 3 and (size is None) != (scale_factor is None)
    if not plain:
        return orig(input, size, scale_factor, mode, align_corners, recompute_scale_factor,
                    antialias)
    orig(input, size, scale_factor, mode, align_corners)        # torch's argument checks
    size = None if size is None else ([int(size)] * n if isinstance(size, int)
                                      else [int(v) for v in size])
    scale = None if scale_factor is None else (
        [float(scale_factor)] * n if isinstance(scale_factor, (int, float))
        else [float(v) for v in scale_factor])
    return _ops()["resize"](input, size, scale, mode, align_corners)


def _mha(query, key, value, embed_dim_to_check, num_heads, in_proj_weight, in_proj_bias,
         bias_k, bias_v, add_zero_attn, dropout_p, out_proj_weight, out_proj_bias,
         training=True, key_padding_mask=None, need_weights=True, attn_mask=None,
         use_separate_proj_weight=False, q_proj_weight=None, k_proj_weight=None,
         v_proj_weight=None, static_k=None, static_v=None, average_attn_weights=True,
         is_causal=False):
    """Multi-head attention without sizes in the graph (``_attention``) where it applies."""
    from ember.onnx import _attention
    args = dict(locals())
    if not _attention.covered(**args):
        return _ORIGINALS["mha"](**args)
    return _attention.multi_head_attention(**args)


def _setitem(orig):
    def setitem(self, idx, value):
        from ember.jit import is_tracing
        tensors = [i for i in idx if isinstance(i, ember.Tensor)]
        if not is_tracing() or not tensors or len(idx) > 8:
            return orig(self, idx, value)
        _TEMPLATES.append([HOLE if isinstance(i, ember.Tensor) else i for i in idx])
        if not isinstance(value, ember.Tensor):
            value = ember.tensor(value, dtype=self.dtype)
        out = _ops()["index_put"](self, tensors, value, len(_TEMPLATES) - 1)
        self.copy_(out)
    return setitem


def _batched_nms(boxes, scores, idxs, iou_threshold):
    """One nms over boxes moved apart per category (no two categories overlap)."""
    if boxes.numel() == 0:
        return ember.empty((0,), dtype=ember.int64)
    offsets = idxs.to(boxes) * (boxes.max() + 1)
    return _nms(boxes + offsets[:, None], scores, iou_threshold)


def _roi_pool(input, boxes, output_size, spatial_scale=1.0):
    from ember.vision.ops._utils import _pair, as_rois
    ph, pw = _pair(output_size)
    return _ops()["roi_pool"](input, as_rois(boxes), int(ph), int(pw), float(spatial_scale))


def _roi_align(input, boxes, output_size, spatial_scale=1.0, sampling_ratio=-1, aligned=False):
    from ember.vision.ops._utils import _pair, as_rois
    ph, pw = _pair(output_size)
    return _ops()["roi_align"](input, as_rois(boxes), int(ph), int(pw), float(spatial_scale),
                               int(sampling_ratio), bool(aligned))


def _traced_detach(orig):
    from ember._ops.registry import OPS
    alias = OPS["alias"]

    def detach(self):
        from ember.jit import is_tracing
        if not is_tracing():
            return orig(self)
        with ember.no_grad():       # recorded (aten::alias), so the value is not baked in
            return alias(self)
    return detach


def replacement(fn):
    """The export's stand-in for a function a scripted graph calls directly."""
    import ember.vision.ops.boxes as vboxes
    roi_mod = __import__("ember.vision.ops.roi_align", fromlist=["roi_align"])
    pool_mod = __import__("ember.vision.ops.roi_pool", fromlist=["roi_pool"])
    table = {vboxes.nms: _nms, vboxes.batched_nms: _batched_nms, roi_mod.roi_align: _roi_align,
             pool_mod.roi_pool: _roi_pool}
    return table.get(fn, fn)


@contextlib.contextmanager
def patched(model):
    """Recurrent layers of ``model`` and the vision ops call the export's op records."""
    from ember import nn
    import ember.vision.ops as vops
    import ember.vision.ops.boxes as vboxes
    roi_mod = __import__("ember.vision.ops.roi_align", fromlist=["roi_align"])
    pool_mod = __import__("ember.vision.ops.roi_pool", fromlist=["roi_pool"])
    mods = [m for m in model.modules()] if isinstance(model, nn.Module) else []
    rnns = [m for m in mods if isinstance(m, nn.RNNBase) and "forward" not in vars(m)]
    _ops()
    from ember._ops import advanced_indexing as adv
    import ember.nn.functional as F
    from ember.nn.functional import _attention as attn_mod, _pooling, _vision
    from ember.onnx import _symbolic_shape
    _symbolic_shape._HOLE = HOLE
    _ORIGINALS.update(nms=vboxes.nms, roi_align=roi_mod.roi_align, getitem=adv.getitem,
                      setitem=adv.setitem,
                      adaptive_avg=_pooling._adaptive_avg, interpolate=_vision.interpolate,
                      mha=attn_mod.multi_head_attention_forward, roi_pool=pool_mod.roi_pool)
    saved = [(vops, "nms", vops.nms), (vboxes, "nms", vboxes.nms),
             (vops, "batched_nms", vops.batched_nms),
             (vboxes, "batched_nms", vboxes.batched_nms),
             (vops, "roi_align", vops.roi_align), (roi_mod, "roi_align", roi_mod.roi_align),
             (roi_mod.RoIAlign, "op", vars(roi_mod.RoIAlign)["op"]),
             (vops, "roi_pool", vops.roi_pool), (pool_mod, "roi_pool", pool_mod.roi_pool),
             (pool_mod.RoIPool, "op", vars(pool_mod.RoIPool)["op"]),
             (ember.Tensor, "detach", ember.Tensor.detach), (adv, "getitem", adv.getitem),
             (adv, "setitem", adv.setitem),
             (_pooling, "_adaptive_avg", _pooling._adaptive_avg),
             (_vision, "interpolate", _vision.interpolate), (F, "interpolate", F.interpolate),
             (attn_mod, "multi_head_attention_forward", attn_mod.multi_head_attention_forward),
             (F, "multi_head_attention_forward", F.multi_head_attention_forward)]
    try:
        attn_mod.multi_head_attention_forward = F.multi_head_attention_forward = _mha
        _pooling._adaptive_avg = _adaptive_avg
        _vision.interpolate = F.interpolate = _interpolate
        adv.getitem = _getitem(adv.getitem)
        adv.setitem = _setitem(adv.setitem)
        ember.Tensor.detach = _traced_detach(ember.Tensor.detach)
        vops.nms = vboxes.nms = _nms
        vops.batched_nms = vboxes.batched_nms = _batched_nms
        vops.roi_align = roi_mod.roi_align = _roi_align
        roi_mod.RoIAlign.op = staticmethod(_roi_align)
        vops.roi_pool = pool_mod.roi_pool = _roi_pool
        pool_mod.RoIPool.op = staticmethod(_roi_pool)
        for m in rnns:
            _MODULES[id(m)] = m
            _ORIGINAL_FORWARD[id(m)] = m.forward
            m.forward = _rnn_forward(m)
        yield
    finally:
        for obj, name, val in saved:
            setattr(obj, name, val)
        for m in rnns:
            vars(m).pop("forward", None)


def release():
    """Forget the modules and index templates of the last export (after its graph is
    converted)."""
    _MODULES.clear()
    _TEMPLATES.clear()
    _ORIGINAL_FORWARD.clear()

