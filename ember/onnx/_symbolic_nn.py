"""Symbolics for ``nn`` layers: convolution, normalization, pooling, recurrent layers."""
from __future__ import annotations

import warnings

import ember
from ember.onnx._registry import symbolic
from ember.onnx._helpers import cast_to, ints, out_dtype, rank, sv
from ember.onnx.errors import SymbolicValueError


def _none(v):
    return v is None or (v.static and v.value is None)


@symbolic("aten::convolution", "aten::_convolution")
def convolution(g, x, w, b, stride, padding, dilation, transposed, output_padding, groups, *_):
    dt = out_dtype(g)
    k = rank(w) - 2
    pads = ints(padding)
    pads = pads * k if len(pads) == 1 else pads
    attrs = dict(strides=_n(stride, k), pads=pads + pads, dilations=_n(dilation, k),
                 group=int(sv(groups)), kernel_shape=list(w.example.shape[2:]))
    inputs = [cast_to(g, x, dt), cast_to(g, w, dt)] + ([] if _none(b) else [cast_to(g, b, dt)])
    if sv(transposed):
        op = [p for p in _n(output_padding, k)]
        return g.op("ConvTranspose", *inputs, output_padding=op if any(op) else None, **attrs)
    return g.op("Conv", *inputs, **attrs)


def _n(v, k):
    vals = ints(v)
    return vals * k if len(vals) == 1 else vals


@symbolic("aten::_batch_norm_impl", "aten::batch_norm", "aten::native_batch_norm")
def batch_norm(g, x, w, b, mean, var, training, momentum, eps, *_):
    dt = out_dtype(g)
    if sv(training):            # batch statistics (biased variance), as torch's training
        r = rank(x)
        axes = [0] + list(range(2, r))
        shape = [1, -1] + [1] * (r - 2)
        xin = cast_to(g, x, dt)
        mu = g.op("ReduceMean", xin, axes=axes, keepdims=1)
        centered = g.op("Sub", xin, mu)
        var_b = g.op("ReduceMean", g.op("Mul", centered, centered), axes=axes, keepdims=1)
        y = g.op("Div", centered, g.op("Sqrt", g.op("Add", var_b, g.const(float(sv(eps)), dt))))
        if not _none(w):
            y = g.op("Mul", y, g.op("Reshape", cast_to(g, w, dt), g.const(shape)))
        if not _none(b):
            y = g.op("Add", y, g.op("Reshape", cast_to(g, b, dt), g.const(shape)))
        return [y, None, None]
    c = x.example.shape[1]
    w = g.const(ember.ones(c), dt) if _none(w) else cast_to(g, w, dt)
    b = g.const(ember.zeros(c), dt) if _none(b) else cast_to(g, b, dt)
    y = g.op("BatchNormalization", cast_to(g, x, dt), w, b, cast_to(g, mean, dt),
             cast_to(g, var, dt), epsilon=float(sv(eps)))
    return [y, mean, var]


@symbolic("aten::_layer_norm_impl", "aten::layer_norm", opset=17)
def layer_norm(g, x, shape, w, b, eps, *_):
    dt = out_dtype(g)
    n = len(ints(shape))
    norm = list(x.example.shape[-n:])
    w = g.const(ember.ones(norm), dt) if _none(w) else cast_to(g, w, dt)
    b = None if _none(b) else cast_to(g, b, dt)
    return g.op("LayerNormalization", cast_to(g, x, dt), w, b, axis=-n, epsilon=float(sv(eps)))


# ---------------------------------------------------------------------- pooling

def _pool_attrs(k, kernel, stride, padding, ceil_mode):
    kernel = _n(kernel, k)
    stride = _n(stride, k) if stride is not None and ints(stride) else kernel
    pads = _n(padding, k) if padding is not None else [0] * k
    return dict(kernel_shape=kernel, strides=stride, pads=pads + pads,
                ceil_mode=int(bool(sv(ceil_mode))) if ceil_mode is not None else 0)


@symbolic("aten::_max_pool_with_indices", "aten::max_pool2d_with_indices",
          "aten::max_pool1d_with_indices", "aten::max_pool3d_with_indices")
def max_pool_with_indices(g, x, kernel, stride, padding, dilation, ceil_mode):
    k = rank(x) - 2
    y = g.op("MaxPool", g.input(x), dilations=_n(dilation, k),
             **_pool_attrs(k, kernel, stride, padding, ceil_mode))
    return [y, None]


@symbolic("aten::max_pool2d", "aten::max_pool1d", "aten::max_pool3d")
def max_pool(g, x, kernel, stride=None, padding=0, dilation=1, ceil_mode=False):
    k = rank(x) - 2
    return g.op("MaxPool", g.input(x), dilations=_n(dilation, k),
                **_pool_attrs(k, kernel, stride, padding, ceil_mode))


@symbolic("aten::_avg_pool")
def avg_pool(g, x, kernel, stride):
    k = rank(x) - 2
    return g.op("AveragePool", g.input(x), **_pool_attrs(k, kernel, stride, None, None))


@symbolic("aten::_adaptive_max_pool", "aten::adaptive_max_pool2d")
def adaptive_max_pool(g, x, output_size):
    sizes = ints(output_size)
    if any(s != 1 for s in sizes):
        _fixed_windows(x, sizes, "adaptive_max_pool")
        k = len(sizes)
        in_sizes = list(x.example.shape[-k:])
        kernel = [i // o for i, o in zip(in_sizes, sizes)]
        return [g.op("MaxPool", g.input(x), kernel_shape=kernel, strides=kernel), None]
    return [g.op("GlobalMaxPool", g.input(x)), None]


def _fixed_windows(x, sizes, what):
    in_sizes = list(x.example.shape[-len(sizes):])
    if any(i % o for i, o in zip(in_sizes, sizes)):
        raise SymbolicValueError(f"aten::{what} with output size {sizes} from input size "
                                 f"{in_sizes} (windows of unequal sizes have no ONNX op)")


@symbolic("aten::_onnx_global_avg_pool")
def global_avg_pool(g, x):
    return g.op("GlobalAveragePool", cast_to(g, x, out_dtype(g)))


@symbolic("aten::_onnx_resize", opset=13)
def resize(g, x, size, scale, mode, align_corners):
    """torch's interpolate as ONNX Resize: nearest (floor of asymmetric coordinates),
    linear/bilinear/trilinear and bicubic (a = -0.75) over half-pixel or corner-aligned
    coordinates."""
    mode, ac = sv(mode), bool(sv(align_corners)) if not _none(align_corners) else False
    attrs = {}
    if mode == "nearest":
        attrs = dict(mode="nearest", coordinate_transformation_mode="asymmetric",
                     nearest_mode="floor")
    else:
        attrs = dict(mode="cubic" if mode == "bicubic" else "linear",
                     coordinate_transformation_mode="align_corners" if ac
                     else "pytorch_half_pixel")
        if mode == "bicubic":
            attrs["cubic_coeff_a"] = -0.75
    xin = cast_to(g, x, out_dtype(g))
    if _none(size):
        scales = g.const([1.0, 1.0] + [float(v) for v in sv(scale)], ember.float32)
        return g.op("Resize", xin, None, scales, **attrs)
    lead = g.op("Slice", g.op("Shape", xin), g.const([0]), g.const([2]))
    sizes = g.op("Concat", lead, g.const(ints(size)), axis=0)
    return g.op("Resize", xin, None, None, sizes, **attrs)


# ---------------------------------------------------------------------- recurrent layers

_GATES = {"LSTM": [0, 3, 1, 2], "GRU": [1, 0, 2]}      # torch's gate order -> ONNX's


def _reorder(t, mode):
    order = _GATES.get(mode)
    if order is None:
        return t
    parts = t.chunk(len(order), 0)
    return ember.cat([parts[i] for i in order], 0)


@symbolic("aten::_onnx_rnn")
def rnn(g, x, hx, cx, module_id):
    from ember.onnx._patches import module_for
    m = module_for(sv(module_id))
    if getattr(m, "proj_size", 0):
        raise SymbolicValueError("LSTM with proj_size has no ONNX LSTM equivalent")
    named = {n: getattr(m, n) for n in m._flat_weights_names}
    return recurrent(g, m.mode, x, hx, cx, named, m.num_layers, m.bidirectional,
                     m.batch_first)


def _zeros(v):
    """A constant all-zero initial state is ONNX's default (so any batch size works)."""
    if _none(v):
        return True
    return v.static and isinstance(v.value, ember.Tensor) and not bool(v.value.any())


def recurrent(g, mode, x, hx, cx, named, num_layers, bidirectional, batch_first):
    """Stacked ONNX LSTM/GRU/RNN nodes for torch's layout: x (T, B, in) (or (B, T, in),
    or unbatched (T, in)), hx/cx (L*D, B, H); returns [output, h_n, c_n]."""
    # torch warns at every recurrent layer it exports, whatever the batch size or states
    warnings.warn("Exporting a model to ONNX with a batch_size other than 1, with a variable "
                  f"length with {mode} can cause an error when running the ONNX model with a "
                  "different batch size. Make sure to save the model with a batch size of 1, "
                  "or define the initial states (h0/c0) as inputs of the model. ")
    dt = x.example.dtype
    dirs = 2 if bidirectional else 1
    H = named["weight_hh_l0"].shape[1]
    op_type = {"LSTM": "LSTM", "GRU": "GRU"}.get(mode, "RNN")
    y = cast_to(g, x, dt)
    batched = rank(x) == 3
    if not batched:
        y = g.op("Unsqueeze", y, g.const([1]))
    elif batch_first:
        y = g.op("Transpose", y, perm=[1, 0, 2])
    h_all = None if _zeros(hx) else cast_to(g, hx, dt)
    c_all = None if _zeros(cx) else cast_to(g, cx, dt)
    if not batched:
        h_all = h_all if h_all is None else g.op("Unsqueeze", h_all, g.const([1]))
        c_all = c_all if c_all is None else g.op("Unsqueeze", c_all, g.const([1]))
    hs, cs = [], []
    for layer in range(num_layers):
        W, R, B = [], [], []
        for d in range(dirs):
            sfx = f"_l{layer}" + ("_reverse" if d else "")
            W.append(_reorder(named["weight_ih" + sfx].detach(), mode))
            R.append(_reorder(named["weight_hh" + sfx].detach(), mode))
            if "bias_ih" + sfx in named:
                B.append(ember.cat([_reorder(named["bias_ih" + sfx].detach(), mode),
                                    _reorder(named["bias_hh" + sfx].detach(), mode)]))
        lo, hi = layer * dirs, (layer + 1) * dirs
        h0 = None if h_all is None else g.op("Slice", h_all, g.const([lo]), g.const([hi]),
                                             g.const([0]))
        c0 = None if c_all is None else g.op("Slice", c_all, g.const([lo]), g.const([hi]),
                                             g.const([0]))
        attrs = dict(hidden_size=H, direction="bidirectional" if dirs == 2 else "forward")
        inputs = [y, g.const(ember.stack(W), dt), g.const(ember.stack(R), dt),
                  g.const(ember.stack(B), dt) if B else None, None, h0]
        if op_type == "LSTM":
            inputs.append(c0)
        elif op_type == "GRU":
            attrs["linear_before_reset"] = 1
        else:
            attrs["activations"] = ["Tanh" if mode == "RNN_TANH" else "Relu"] * dirs
        outs = g.op(op_type, *inputs, outputs=3 if op_type == "LSTM" else 2, **attrs)
        seq = g.op("Transpose", outs[0], perm=[0, 2, 1, 3])          # (seq, batch, dirs, H)
        y = g.op("Reshape", seq, g.const([0, 0, dirs * H]))
        hs.append(outs[1])
        if op_type == "LSTM":
            cs.append(outs[2])
    h_n = hs[0] if len(hs) == 1 else g.op("Concat", *hs, axis=0)
    c_n = (cs[0] if len(cs) == 1 else g.op("Concat", *cs, axis=0)) if cs else h_n
    if not batched:
        y = g.op("Squeeze", y, g.const([1]))
        h_n = g.op("Squeeze", h_n, g.const([1]))
        c_n = g.op("Squeeze", c_n, g.const([1])) if cs else h_n
    elif batch_first:
        y = g.op("Transpose", y, perm=[1, 0, 2])
    return [y, h_n, c_n]
