"""ember's ``nn.functional`` calls as the aten calls torch writes (``FUNCTIONAL``: name ->
writer of the call from the bound arguments): ``F.linear`` -> ``torch.linear``,
``F.batch_norm`` -> ``torch.batch_norm`` in ATen's argument order, ``F.relu(x, inplace)``
-> ``torch.relu``/``torch.relu_``, losses with torch's reduction enum, recurrences and
attention through the sources in ``_archive_sources.py``. Add a functional: a row here.
"""
from __future__ import annotations

from ember.jit import _archive_sources as S
from ember.jit import _types as T
from ember.jit._ir import NOT_CONSTANT
from ember.jit._printer import _Expr, constant_str
from ember.jit._printer_ops import _fill

def _inplace(p, b, name, args):
    """``torch.relu(x)`` / ``torch.relu_(x)`` by the ``inplace`` argument."""
    ip = b.const("inplace") if "inplace" in b else False
    if ip is NOT_CONSTANT:
        a = p.call(name + "_", args)
        c = p.call(name, args)
        return f"({a} if {b.text('inplace')} else {c})"
    return p.call(name + "_" if ip else name, args)


def _act(name, *extra):
    def write(p, b):
        _fill(p, b)
        return _inplace(p, b, name, [b.text("input")] + [b.text(e) for e in extra])
    return write


def _plain(name, *names):
    def write(p, b):
        _fill(p, b)
        return p.call(name, [b.text(k) for k in names])
    return write


def _sdpa(p, b):
    """``torch.scaled_dot_product_attention(q, k, v, mask, dropout_p, is_causal, *, scale,
    enable_gqa)`` (keyword-only arguments written when not their defaults)."""
    _fill(p, b)
    kws = [(k, b.text(k)) for k, d in (("scale", None), ("enable_gqa", False))
           if b.const(k) is NOT_CONSTANT or b.const(k) != d]
    return p.call("scaled_dot_product_attention",
                  [b.text(k) for k in ("query", "key", "value", "attn_mask", "dropout_p",
                                       "is_causal")], kws)


def _softmax(name):
    def write(p, b):
        _fill(p, b)
        dim = b.text("dim")
        if b.const("dim") is None:          # torch's implicit dim, chosen at run time
            p.ctx.sources.setdefault(S.SOFTMAX_DIM_QUALNAME, S.SOFTMAX_DIM_SOURCE)
            dim = f"{S.SOFTMAX_DIM_QUALNAME}(torch.dim({b.text('input')}), )"
        elif b.const("dim") is NOT_CONSTANT and isinstance(b["dim"].type, T.OptionalType):
            raise NotImplementedError(f"ember.jit.save: {name} with an Optional dim")
        args = [b.text("input"), dim]
        if b.const("dtype") is not None:
            args.append(b.text("dtype"))
        return p.call(name, args)
    return write


def _dropout(name):
    def write(p, b):
        _fill(p, b)
        return _inplace(p, b, name, [b.text("input"), b.text("p"), b.text("training")])
    return write


def _conv(name, *names):
    def write(p, b):
        _fill(p, b)
        return p.call(name, [_as_list_text(p, b, k) for k in names])
    return write


def _as_list_text(p, b, k):
    e = b[k]
    if isinstance(e.const, tuple):
        return constant_str(list(e.const), p.ctx)
    return e.text


def _pool(name, names, with_indices=None):
    def write(p, b):
        _fill(p, b)
        if b.const("stride") is None:
            b["stride"] = _Expr("annotate(List[int], [])", [], None)
        args = [_as_list_text(p, b, k) for k in names]
        if with_indices is not None and b.const("return_indices") is not False:
            if b.const("return_indices") is True:
                return p.call(with_indices, args)
            raise NotImplementedError(f"ember.jit.save: {name} with a non-constant "
                                      f"return_indices")
        return p.call(name, args)
    return write


def _batch_norm(p, b):
    _fill(p, b)
    return p.call("batch_norm", [b.text(k) for k in (
        "input", "weight", "bias", "running_mean", "running_var", "training", "momentum",
        "eps")] + ["True"])


def _instance_norm(p, b):
    _fill(p, b)
    return p.call("instance_norm", [b.text(k) for k in (
        "input", "weight", "bias", "running_mean", "running_var", "use_input_stats",
        "momentum", "eps")] + ["True"])


def _embedding(p, b):
    _fill(p, b)
    weight = b.text("weight")
    if b.const("max_norm") is not None:
        # the looked-up rows renormalized in place first, as eager does (torch's own scripted
        # embedding leaves this out)
        if b.const("max_norm") is NOT_CONSTANT:
            raise NotImplementedError("ember.jit.save: F.embedding with a run-time max_norm")
        p.ctx.sources.setdefault(S.RENORM_QUALNAME, S.RENORM_SOURCE)
        weight = f"{S.RENORM_QUALNAME}({weight}, {b.text('input')}, " \
                 f"{_float_text(b['max_norm'])}, {_float_text(b['norm_type'])}, )"
    pad = b.const("padding_idx")
    pad_text = "-1" if pad is None else b.text("padding_idx")
    return p.call("embedding", [weight, b.text("input"), pad_text,
                                b.text("scale_grad_by_freq"), b.text("sparse")])


def _adaptive_max(name):
    def write(p, b):
        _fill(p, b)
        call = p.call(name, [b.text("input"), _as_list_text(p, b, "output_size")])
        ri = b.const("return_indices")
        if ri is True:
            return call
        if ri is False:
            return f"{call}[0]"
        raise NotImplementedError(f"ember.jit.save: {name} with a non-constant return_indices")
    return write


def _pad(p, b):
    _fill(p, b)
    args = [b.text("input"), _as_list_text(p, b, "pad"), b.text("mode")]
    if b.const("value") is not None:
        args.append(b.text("value"))
    return p.call("pad", args)


def _normalize(p, b):
    _fill(p, b)
    if b.const("out") is not None:
        raise NotImplementedError("ember.jit.save: F.normalize with out=")
    x = b.text("input")
    norm = p.call("norm", [x, b.text("p"), f"[{b.text('dim')}]", "True"])
    denom = p.call("expand_as", [p.call("clamp_min", [norm, b.text("eps")]), x])
    return p.call("div", [x, denom])


def _relu6(p, b):
    _fill(p, b)
    return _inplace(p, b, "hardtanh", [b.text("input"), "0.", "6."])


def _gelu(p, b):
    _fill(p, b)
    kws = [("approximate", b.text("approximate"))] if b.const("approximate") != "none" else []
    return p.call("gelu", [b.text("input")], kws)


def _softmin(p, b):
    _fill(p, b)
    if b.const("dim") is None:
        raise NotImplementedError("ember.jit.save: softmin without dim")
    args = [p.call("neg", [b.text("input")]), b.text("dim")]
    if b.const("dtype") is not None:
        args.append(b.text("dtype"))
    return p.call("softmax", args)


def _softsign(p, b):
    _fill(p, b)
    x = b.text("input")
    return p.call("div", [x, p.call("add", [p.call("abs", [x]), "1"])])


def _tanhshrink(p, b):
    _fill(p, b)
    x = b.text("input")
    return p.call("sub", [x, p.call("tanh", [x])])


_INTERP_RANK = {"linear": 1, "bilinear": 2, "bicubic": 2, "trilinear": 3}


def _interpolate(p, b):
    """F.interpolate as torch's upsample ops (``upsample_nearest2d(x, size, scales)``...)."""
    _fill(p, b)
    names = ("mode", "size", "scale_factor", "align_corners", "recompute_scale_factor",
             "antialias")
    c = {k: b.const(k) for k in names}
    if any(v is NOT_CONSTANT for v in c.values()):
        raise NotImplementedError("ember.jit.save: F.interpolate with non-constant options")
    if c["antialias"] or c["recompute_scale_factor"]:
        raise NotImplementedError("ember.jit.save: F.interpolate with antialias or "
                                  "recompute_scale_factor")
    mode, size, sf = c["mode"], c["size"], c["scale_factor"]
    x = b.text("input")

    def spec(rank):
        out_size = "None" if size is None else constant_str(
            list(size) if isinstance(size, (tuple, list)) else [size] * rank, p.ctx)
        scales = "None" if sf is None else constant_str(
            [float(v) for v in sf] if isinstance(sf, (tuple, list)) else [float(sf)] * rank,
            p.ctx)
        return out_size, scales

    def one(rank):
        out_size, scales = spec(rank)
        if mode in ("nearest", "nearest-exact"):
            op = ("upsample_nearest" if mode == "nearest" else "_upsample_nearest_exact")
            return p.call(f"{op}{rank}d", [x, out_size, scales])
        if mode == "area":
            if size is None:
                raise NotImplementedError("ember.jit.save: F.interpolate(mode='area') with "
                                          "scale_factor")
            return p.call(f"adaptive_avg_pool{rank}d", [x, out_size])
        ac = "False" if c["align_corners"] is None else constant_str(c["align_corners"], p.ctx)
        kind = {"linear": "linear1d", "bilinear": "bilinear2d", "bicubic": "bicubic2d",
                "trilinear": "trilinear3d"}.get(mode)
        if kind is None:
            raise NotImplementedError(f"ember.jit.save: F.interpolate(mode={mode!r})")
        return p.call(f"upsample_{kind}", [x, out_size, ac, scales])

    if mode in _INTERP_RANK:
        return one(_INTERP_RANK[mode])
    for seq in (size, sf):
        if isinstance(seq, (tuple, list)):
            return one(len(seq))
    if not x.isidentifier():
        raise NotImplementedError("ember.jit.save: F.interpolate of an expression with a "
                                  "rank known only at run time")
    dim = p.call("dim", [x])
    return (f"({one(1)} if torch.eq({dim}, 3) else ({one(2)} if torch.eq({dim}, 4) "
            f"else {one(3)}))")


# ---------------------------------------------------------------- recurrent layers
# ember's nn.RNN/LSTM/GRU run their own recurrences; archives call torch's fused ops

def _source_call(p, name, source, b, names):
    """A call to a helper written into the archive (``__torch__...rnn.<name>``)."""
    _fill(p, b)
    q = f"{S.RNN_Q}.{name}"
    p.ctx.sources.setdefault(q, source)
    return f"{q}(" + "".join(b.text(k) + ", " for k in names) + ")"


def _recurrent(p, b):
    return _source_call(p, "_ember_rnn", S.RNN_SOURCE, b, (
        "mode", "input", "batch_sizes", "h0", "c0", "weights", "names", "num_layers",
        "bidirectional", "dropout", "training", "batch_first", "proj_size"))


def _cell(p, b):
    return _source_call(p, "_ember_cell", S.CELL_SOURCE, b, (
        "mode", "input", "h", "c", "w_ih", "w_hh", "b_ih", "b_hh"))


def _lstm_recurrent(p, b):
    _fill(p, b)
    has_biases = p.call("__contains__", [b.text("names"), '"bias_ih_l0"'])
    return p.call("lstm", [b.text("input"), f"[{b.text('h0')}, {b.text('c0')}]",
                           b.text("weights"), has_biases] + [b.text(k) for k in (
                               "num_layers", "dropout", "training", "bidirectional",
                               "batch_first")])


def _mha(p, b):
    _fill(p, b)
    p.ctx.sources.setdefault(S.MHA_QUALNAME, S.MHA_SOURCE)
    return f"{S.MHA_QUALNAME}(" + "".join(b.text(k) + ", " for k in S.MHA_ARGS) + ")"


def _additive_mask(p, b):
    _fill(p, b)
    p.ctx.sources.setdefault(S.MASK_QUALNAME, S.MASK_SOURCE)
    return f"{S.MASK_QUALNAME}(" + "".join(b.text(k) + ", " for k in S.MASK_ARGS) + ")"


def _lstm_cell(p, b):
    _fill(p, b)
    return p.call("lstm_cell", [b.text("input"), f"[{b.text('h')}, {b.text('c')}]"] +
                  [b.text(k) for k in ("w_ih", "w_hh", "b_ih", "b_hh")])


_REDUCTIONS = {"none": 0, "mean": 1, "sum": 2}


def _loss(name, before, after=()):
    """A loss as its aten op: ``reduction`` as torch's enum (none 0, mean 1, sum 2)."""
    def write(p, b):
        _fill(p, b)
        for legacy in ("size_average", "reduce"):
            if legacy in b and b.const(legacy) is not None:
                raise NotImplementedError(f"ember.jit.save: {name} with {legacy}=")
        if "weight" in b and "weight" not in before + after and b.const("weight") is not None:
            raise NotImplementedError(f"ember.jit.save: {name} with weight=")
        return p.call(name, [b.text(k) for k in before] + [_reduction(p, b, name)] +
                      [b.text(k) for k in after])
    return write


def _reduction(p, b, name):
    """torch's reduction enum of a loss's ``reduction`` (converted at run time when it is
    an attribute)."""
    for legacy in ("size_average", "reduce"):
        if legacy in b and b.const(legacy) is not None:
            raise NotImplementedError(f"ember.jit.save: {name} with {legacy}=")
    red = b.const("reduction")
    if red is NOT_CONSTANT:
        p.ctx.sources.setdefault(S.REDUCTION_Q, S.REDUCTION_SOURCE)
        return f"{S.REDUCTION_Q}({b.text('reduction')}, )"
    if red not in _REDUCTIONS:
        raise NotImplementedError(f"ember.jit.save: {name}(reduction={red!r})")
    return str(_REDUCTIONS[red])


def _kl_div(p, b):
    _fill(p, b)
    if b.const("reduction") == "batchmean":
        x = b.text("input")
        total = p.call("kl_div", [x, b.text("target"), "2"], [("log_target", b.text("log_target"))])
        return p.call("div", [total, p.call("size", [x, "0"])])
    return p.call("kl_div", [b.text("input"), b.text("target"), _reduction(p, b, "kl_div")],
                  [("log_target", b.text("log_target"))])


def _multilabel_soft_margin(p, b):
    _fill(p, b)
    x, y = b.text("input"), b.text("target")
    red = b.const("reduction")
    if red not in _REDUCTIONS:
        raise NotImplementedError(f"ember.jit.save: multilabel_soft_margin_loss(reduction="
                                  f"{red!r})")
    for legacy in ("size_average", "reduce"):
        if b.const(legacy) is not None:
            raise NotImplementedError(f"ember.jit.save: multilabel_soft_margin_loss with "
                                      f"{legacy}=")
    pos = p.call("mul", [y, p.call("log_sigmoid", [x])])
    neg = p.call("mul", [p.call("rsub", [y, "1"]), p.call("log_sigmoid", [p.call("neg", [x])])])
    loss = p.call("neg", [p.call("add", [pos, neg])])
    if b.const("weight") is not None:
        loss = p.call("mul", [loss, b.text("weight")])
    loss = p.call("div", [p.call("sum", [loss, "[1]"]), p.call("size", [x, "1"])])
    return {"none": loss, "mean": p.call("mean", [loss]), "sum": p.call("sum", [loss])}[red]


def _lp_pool(n):
    """torch's formula: (sign(a) * relu(|a|) * area) ** (1 / p), a = avg_pool(x ** p)."""
    def write(p, b):
        _fill(p, b)
        x, nt = b.text("input"), b.text("norm_type")
        k = b.const("kernel_size")
        if k is NOT_CONSTANT:
            raise NotImplementedError(f"ember.jit.save: lp_pool{n}d with a non-constant kernel")
        ks = list(k) if isinstance(k, (tuple, list)) else [k] * n
        area = 1
        for v in ks:
            area *= v
        stride = "annotate(List[int], [])" if b.const("stride") is None else \
            _as_list_text(p, b, "stride")
        a = p.call(f"avg_pool{n}d", [p.call("pow", [x, nt]), constant_str(ks, p.ctx), stride,
                                     "0", b.text("ceil_mode")])
        signed = p.call("mul", [p.call("sign", [a]), p.call("relu", [p.call("abs", [a])])])
        return p.call("pow", [p.call("mul", [signed, str(area)]), f"torch.div(1., {nt})"])
    return write


def _embedding_bag(p, b):
    _fill(p, b)
    if b.const("max_norm") is not None:
        raise NotImplementedError("ember.jit.save: F.embedding_bag with max_norm")
    mode = {"sum": 0, "mean": 1, "max": 2}.get(b.const("mode"))
    if mode is None:
        raise NotImplementedError(f"ember.jit.save: embedding_bag(mode={b.const('mode')!r})")
    p.ctx.sources.setdefault(S.BAG_Q, S.BAG_SOURCE)
    args = [b.text("weight"), b.text("input"), b.text("offsets"), b.text("scale_grad_by_freq"),
            str(mode), b.text("sparse"), b.text("per_sample_weights"),
            b.text("include_last_offset"), b.text("padding_idx")]
    return f"{S.BAG_Q}(" + "".join(a + ", " for a in args) + ")"


def _fold(p, b):
    _fill(p, b)
    return p.call("col2im", [b.text("input")] + [_pair_list(p, b, k, 2) for k in (
        "output_size", "kernel_size", "dilation", "padding", "stride")])


def _unfold(p, b):
    _fill(p, b)
    return p.call("im2col", [b.text("input")] + [_pair_list(p, b, k, 2) for k in (
        "kernel_size", "dilation", "padding", "stride")])


def _pair_list(p, b, k, n):
    v = b.const(k)
    if isinstance(v, int) and not isinstance(v, bool):
        return constant_str([v] * n, p.ctx)
    return _as_list_text(p, b, k)


def _local_response_norm(p, b):
    _fill(p, b)
    p.ctx.sources.setdefault(S.LRN_QUALNAME, S.LRN_SOURCE)
    floats = [_float_text(b[k]) for k in ("alpha", "beta", "k")]
    return f"{S.LRN_QUALNAME}(" + "".join(a + ", " for a in [
        b.text("input"), b.text("size")] + floats) + ")"


def _float_text(e):
    """A number argument for a ``float`` parameter (an int is converted)."""
    if e.type is T.IntType or (isinstance(e.const, int) and not isinstance(e.const, bool)):
        return f"float({e.text})"
    return e.text


def _int_list_text(p, e, n):
    """An int / tuple / list argument as an ``int[n]`` list expression."""
    c = e.const
    if isinstance(c, (tuple, list)):
        return constant_str(list(c), p.ctx)
    if isinstance(c, int) and not isinstance(c, bool):
        return constant_str([c] * n, p.ctx)
    if e.type is T.IntType:
        return f"torch.mul([{e.text}], {n})"
    if isinstance(e.type, T.TupleType):
        return "[" + ", ".join(f"{e.text}[{i}]" for i in range(len(e.type.elems))) + "]"
    if isinstance(e.type, T.ListType):
        return e.text
    raise NotImplementedError(f"ember.jit.save: an int list from {e.type}")


def _max_unpool(n):
    def write(p, b):
        _fill(p, b)
        kernel = _int_list_text(p, b["kernel_size"], n)
        stride = kernel if b.const("stride") is None else _int_list_text(p, b["stride"], n)
        out = b["output_size"]
        if b.const("output_size") is None:
            out_text = "None"
        elif isinstance(out.const, (tuple, list)):
            out_text = constant_str(list(out.const), p.ctx)
        elif isinstance(T.unwrap_optional(out.type), T.ListType):
            out_text = out.text
        else:
            out_text = _int_list_text(p, out, n)
        p.ctx.sources.setdefault(S.UNPOOL_QUALNAME, S.UNPOOL_SOURCE)
        args = [b.text("input"), b.text("indices"), kernel, stride,
                _int_list_text(p, b["padding"], n), out_text]
        return f"{S.UNPOOL_QUALNAME}(" + "".join(a + ", " for a in args) + ")"
    return write


def _fractional(n, with_indices=False):
    """F.fractional_max_pool<n>d (and ``_with_indices``) through the archive helper, which
    returns (output, indices)."""
    def write(p, b):
        _fill(p, b)
        ri = True if with_indices else b.const("return_indices")
        if ri is NOT_CONSTANT:
            raise NotImplementedError(f"ember.jit.save: fractional_max_pool{n}d with a "
                                      f"return_indices known only at run time")
        out = "None" if b.const("output_size") is None else _int_list_text(p, b["output_size"], n)
        ratio = b.const("output_ratio")
        if ratio is None:
            ratio_text = "None"
        elif isinstance(ratio, (int, float)) and not isinstance(ratio, bool):
            ratio_text = constant_str([float(ratio)] * n, p.ctx)
        elif isinstance(ratio, (tuple, list)):
            ratio_text = constant_str([float(r) for r in ratio], p.ctx)
        else:
            raise NotImplementedError(f"ember.jit.save: fractional_max_pool{n}d with an "
                                      f"output_ratio known only at run time")
        p.ctx.sources.setdefault(S.FRACTIONAL_QUALNAME, S.FRACTIONAL_SOURCE)
        args = [b.text("input"), _int_list_text(p, b["kernel_size"], n), out, ratio_text,
                b.text("_random_samples")]
        call = f"{S.FRACTIONAL_QUALNAME}(" + "".join(a + ", " for a in args) + ")"
        return call if ri else f"({call})[0]"
    return write


def _gaussian_nll(p, b):
    _fill(p, b)
    if b["var"].type is not T.TensorType:
        raise NotImplementedError("ember.jit.save: gaussian_nll_loss with a number var")
    red = _reduction(p, b, "gaussian_nll_loss")
    p.ctx.sources.setdefault(S.GAUSSIAN_NLL_QUALNAME, S.GAUSSIAN_NLL_SOURCE)
    args = [b.text("input"), b.text("target"), b.text("var"), b.text("full"),
            _float_text(b["eps"]), red]
    return f"{S.GAUSSIAN_NLL_QUALNAME}(" + "".join(a + ", " for a in args) + ")"


FUNCTIONAL = {
    "gaussian_nll_loss": _gaussian_nll,
    "fractional_max_pool2d": _fractional(2), "fractional_max_pool3d": _fractional(3),
    "fractional_max_pool2d_with_indices": _fractional(2, True),
    "fractional_max_pool3d_with_indices": _fractional(3, True),
    "scaled_dot_product_attention": _sdpa,
    "linear": _plain("linear", "input", "weight", "bias"),
    "bilinear": _plain("bilinear", "input1", "input2", "weight", "bias"),
    "relu": _act("relu"), "relu6": _relu6, "silu": _act("silu"), "mish": _act("mish"),
    "hardswish": _act("hardswish"), "hardsigmoid": _act("hardsigmoid"),
    "selu": _act("selu"), "celu": _act("celu", "alpha"), "elu": _act("elu", "alpha"),
    "leaky_relu": _act("leaky_relu", "negative_slope"),
    "hardtanh": _act("hardtanh", "min_val", "max_val"),
    "threshold": _act("threshold", "threshold", "value"),
    "rrelu": _act("rrelu", "lower", "upper", "training"),
    "gelu": _gelu, "sigmoid": _plain("sigmoid", "input"), "tanh": _plain("tanh", "input"),
    "logsigmoid": _plain("log_sigmoid", "input"), "softsign": _softsign,
    "tanhshrink": _tanhshrink,
    "softplus": _plain("softplus", "input", "beta", "threshold"),
    "softshrink": _plain("softshrink", "input", "lambd"),
    "hardshrink": _plain("hardshrink", "input", "lambd"),
    "glu": _plain("glu", "input", "dim"), "prelu": _plain("prelu", "input", "weight"),
    "softmax": _softmax("softmax"), "log_softmax": _softmax("log_softmax"),
    "softmin": _softmin, "interpolate": _interpolate, "upsample": _interpolate,
    "dropout": _dropout("dropout"), "alpha_dropout": _dropout("alpha_dropout"),
    "feature_alpha_dropout": _dropout("feature_alpha_dropout"),
    "dropout1d": _dropout("feature_dropout"), "dropout2d": _dropout("feature_dropout"),
    "dropout3d": _dropout("feature_dropout"),
    "conv1d": _conv("conv1d", "input", "weight", "bias", "stride", "padding", "dilation", "groups"),
    "conv2d": _conv("conv2d", "input", "weight", "bias", "stride", "padding", "dilation", "groups"),
    "conv3d": _conv("conv3d", "input", "weight", "bias", "stride", "padding", "dilation", "groups"),
    "conv_transpose1d": _conv("conv_transpose1d", "input", "weight", "bias", "stride", "padding",
                              "output_padding", "groups", "dilation"),
    "conv_transpose2d": _conv("conv_transpose2d", "input", "weight", "bias", "stride", "padding",
                              "output_padding", "groups", "dilation"),
    "conv_transpose3d": _conv("conv_transpose3d", "input", "weight", "bias", "stride", "padding",
                              "output_padding", "groups", "dilation"),
    "max_pool1d": _pool("max_pool1d", ("input", "kernel_size", "stride", "padding", "dilation",
                                       "ceil_mode"), "max_pool1d_with_indices"),
    "max_pool2d": _pool("max_pool2d", ("input", "kernel_size", "stride", "padding", "dilation",
                                       "ceil_mode"), "max_pool2d_with_indices"),
    "max_pool3d": _pool("max_pool3d", ("input", "kernel_size", "stride", "padding", "dilation",
                                       "ceil_mode"), "max_pool3d_with_indices"),
    "avg_pool1d": _pool("avg_pool1d", ("input", "kernel_size", "stride", "padding", "ceil_mode",
                                       "count_include_pad")),
    "avg_pool2d": _pool("avg_pool2d", ("input", "kernel_size", "stride", "padding", "ceil_mode",
                                       "count_include_pad", "divisor_override")),
    "avg_pool3d": _pool("avg_pool3d", ("input", "kernel_size", "stride", "padding", "ceil_mode",
                                       "count_include_pad", "divisor_override")),
    "adaptive_avg_pool1d": _conv("adaptive_avg_pool1d", "input", "output_size"),
    "adaptive_avg_pool2d": _conv("adaptive_avg_pool2d", "input", "output_size"),
    "adaptive_avg_pool3d": _conv("adaptive_avg_pool3d", "input", "output_size"),
    "adaptive_max_pool1d": _adaptive_max("adaptive_max_pool1d"),
    "adaptive_max_pool2d": _adaptive_max("adaptive_max_pool2d"),
    "adaptive_max_pool3d": _adaptive_max("adaptive_max_pool3d"),
    "batch_norm": _batch_norm, "instance_norm": _instance_norm,
    "layer_norm": _conv("layer_norm", "input", "normalized_shape", "weight", "bias", "eps"),
    "group_norm": _plain("group_norm", "input", "num_groups", "weight", "bias", "eps"),
    "embedding": _embedding, "pad": _pad, "normalize": _normalize,
    "local_response_norm": _local_response_norm, "max_unpool1d": _max_unpool(1),
    "max_unpool2d": _max_unpool(2), "max_unpool3d": _max_unpool(3),
    "_recurrent": _recurrent, "_lstm_recurrent": _lstm_recurrent, "_cell": _cell,
    "_lstm_cell": _lstm_cell, "multi_head_attention_forward": _mha,
    "_additive_mask": _additive_mask,
    "one_hot": _plain("one_hot", "tensor", "num_classes"),
    "mse_loss": _loss("mse_loss", ("input", "target")),
    "l1_loss": _loss("l1_loss", ("input", "target")),
    "smooth_l1_loss": _loss("smooth_l1_loss", ("input", "target"), ("beta",)),
    "huber_loss": _loss("huber_loss", ("input", "target"), ("delta",)),
    "soft_margin_loss": _loss("soft_margin_loss", ("input", "target")),
    "binary_cross_entropy": _loss("binary_cross_entropy", ("input", "target", "weight")),
    "binary_cross_entropy_with_logits": _loss("binary_cross_entropy_with_logits",
                                              ("input", "target", "weight", "pos_weight")),
    "cross_entropy": _loss("cross_entropy_loss", ("input", "target", "weight"),
                           ("ignore_index", "label_smoothing")),
    "nll_loss": _loss("nll_loss_nd", ("input", "target", "weight"), ("ignore_index",)),
    "ctc_loss": _loss("ctc_loss", ("log_probs", "targets", "input_lengths", "target_lengths",
                                   "blank"), ("zero_infinity",)),
    "kl_div": _kl_div, "lp_pool1d": _lp_pool(1), "lp_pool2d": _lp_pool(2),
    "lp_pool3d": _lp_pool(3), "multilabel_soft_margin_loss": _multilabel_soft_margin,
    "embedding_bag": _embedding_bag, "fold": _fold, "unfold": _unfold,
    "rms_norm": _conv("rms_norm", "input", "normalized_shape", "weight", "eps"),
    "margin_ranking_loss": _loss("margin_ranking_loss", ("input1", "input2", "target",
                                                          "margin")),
    "hinge_embedding_loss": _loss("hinge_embedding_loss", ("input", "target", "margin")),
    "cosine_embedding_loss": _loss("cosine_embedding_loss", ("input1", "input2", "target",
                                                              "margin")),
    "multi_margin_loss": _loss("multi_margin_loss", ("input", "target", "p", "margin",
                                                      "weight")),
    "multilabel_margin_loss": _loss("multilabel_margin_loss", ("input", "target")),
    "poisson_nll_loss": _loss("poisson_nll_loss", ("input", "target", "log_input", "full",
                                                    "eps")),
    "triplet_margin_loss": _loss("triplet_margin_loss", ("anchor", "positive", "negative",
                                                          "margin", "p", "eps", "swap")),
    "pixel_shuffle": _plain("pixel_shuffle", "input", "upscale_factor"),
    "pixel_unshuffle": _plain("pixel_unshuffle", "input", "downscale_factor"),
    "channel_shuffle": _plain("channel_shuffle", "input", "groups"),
    "cosine_similarity": _plain("cosine_similarity", "x1", "x2", "dim", "eps"),
    "pairwise_distance": _plain("pairwise_distance", "x1", "x2", "p", "eps", "keepdim"),
}
FUNCTIONAL = {k: v for k, v in FUNCTIONAL.items() if v is not None}
