"""The names code in a TorchScript archive may call, for ``jit.load``.

torch prints a scripted program as TorchScript source: ATen ops as ``torch.<op>(...)`` with
ATen's argument order (``torch.batch_norm(input, weight, bias, running_mean, ...)``), the
same ops on numbers, lists and strings (``torch.add(i, 2)``, ``torch.len(l)``,
``torch.format(s, x)``, ``torch.append(l, x)``), primitives as ``ops.prim.<name>``.

``call_torch`` and ``call_prim`` turn such a call into IR: Python operators on numbers and
containers, then the adapters below (ATen signatures that differ from ember's Python
fronts), then ember's own fronts and op records (``ember._ops.registry``), then Tensor
methods. Only ATen op names get here: nothing else in ember (``torch.save``, ``torch.hub``,
modules) is reachable, so archive code can only compute.
"""
from __future__ import annotations

import math
import operator

from ember.jit import _builtins as B
from ember.jit import _sugar as S
from ember.jit import _types as T
from ember.jit._archive_nn import NN_ADAPTERS

_TT, _IT, _FT, _BT = T.TensorType, T.IntType, T.FloatType, T.BoolType


# --------------------------------------------------------------------------- sugar

class OpName:
    """``torch.<name>`` / ``ops.<ns>.<name>`` as the namespaces hand it to the resolver."""
    __slots__ = ("ns", "name")

    def __init__(self, ns, name):
        self.ns, self.name = ns, name


class Namespace:
    """``torch`` or ``ops.<ns>``: every attribute is an ``OpName`` (checked when called)."""

    def __init__(self, name, children=None):
        self.__name__ = name
        self._children = children or {}

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__") and name not in _DUNDER_OPS:
            raise AttributeError(name)
        kids = self.__dict__.get("_children", {})
        if name in kids:
            return kids[name]
        return OpName(self.__dict__["__name__"], name)


class ArchiveCall(S.Sugar):
    """A call the resolver lowers itself, given the typed argument Values."""

    def __init__(self, ns, name):
        self.ns, self.name = ns, name

    def describe(self):
        return f"builtin '{self.ns}.{self.name}'"

    def call_values(self, c, args, kwargs, e):
        if self.ns == "torch.backends.mha" and self.name == "get_fastpath_enabled":
            return c.const(False)       # ember has no fused attention fast path
        if self.ns == "prim":
            return call_prim(c, self.name, args, kwargs, e)
        if self.ns.startswith("ops."):      # ops.quantized.add(...)
            from ember.jit import _namespaced
            v = _namespaced.call(c, _namespaced.registry_records(self.ns[4:], self.name),
                                 args, kwargs, e)
            if v is None:
                c.error(f"Unknown builtin: {self.ns}.{self.name} for these arguments", e)
            return v
        if self.ns != "torch":
            c.error(f"Unknown builtin: {self.ns}.{self.name}", e)
        return call_torch(c, self.name, args, kwargs, e)


_DUNDER_OPS = {"__is__", "__isnot__", "__not__", "__contains__", "__and__", "__or__",
               "__xor__", "__lshift__", "__rshift__", "__getitem__", "__range_length",
               "__derive_index", "__round_to_zero_floordiv", "__interpolate",
               "__upsample", "__upsample_nearest", "__upsample_bilinear"}

TORCH = Namespace("torch", {"backends": Namespace("torch.backends", {
    "mha": Namespace("torch.backends.mha")})})
OPS = Namespace("ops", {"prim": Namespace("prim"), "aten": Namespace("aten"),
                        "quantized": Namespace("quantized")})


# --------------------------------------------------------------------------- helpers

def _ember():
    import ember
    return ember


def _F():
    import ember.nn.functional as F
    return F


def _dtype(v):
    """A dtype argument: archives write ScalarType codes (``6`` is float32)."""
    if isinstance(v, int) and not isinstance(v, bool):
        return B.dtype_from_code(v)
    return v


def _memory_format(v):
    """Archives write MemoryFormat codes: 0 contiguous, 1 preserve, 2 channels_last..."""
    if isinstance(v, int) and not isinstance(v, bool):
        ember = _ember()
        return (ember.contiguous_format, ember.preserve_format, ember.channels_last,
                ember.channels_last_3d)[v]
    return v


def _dtype_code(d):
    return B.SCALAR_TYPE_CODE[d]


def _dtype_args(c, name, args, e):
    """Positional ScalarType arguments (``torch.softmax(x, 1, 6)``) as ember dtypes: a
    position converts when every record of ``name`` that long takes a ScalarType there."""
    recs = _op_records(name)
    out = list(args)
    for k, v in enumerate(args):
        if v.type is not _IT and v.type is not T.OptionalType(_IT):
            continue
        kinds = [op.schema.args[k].type for op in recs if len(op.schema.args) > k
                 and not op.schema.args[k].kwarg_only]
        if kinds and all(x == "ScalarType" for x in kinds):
            out[k] = c.emit("aten::Int", [v], [T.DtypeType], e, fn=_dtype).output
    return out


def _emit(c, name, args, rt, e, fn, kwargs=None):
    kwargs = kwargs or {}
    return c.emit(f"aten::{name}", list(args) + list(kwargs.values()), [rt], e, fn=fn,
                  kwnames=list(kwargs)).output


def _is_num(t):
    return B.is_number(t)


def _fix_kwargs(c, kwargs, e):
    """``dtype=6`` -> an ember dtype; ``layout=None``/``pin_memory=None`` dropped."""
    out = {}
    for k, v in kwargs.items():
        if k in ("layout", "pin_memory") and v.type in (T.NoneType,):
            continue
        if k == "dtype" and v.type is not T.NoneType:
            v = c.emit("aten::Int", [v], [T.DtypeType], e, fn=_dtype).output
        if k == "memory_format" and v.type is not T.NoneType:
            v = c.emit("aten::Int", [v], [_IT], e, fn=_memory_format).output
        out[k] = v
    return out


# --------------------------------------------------------------------------- adapters

def _empty_to_none(x):
    return None if isinstance(x, (list, tuple)) and len(x) == 0 else x


def _max_pool(nd):
    def pool(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
        f = getattr(_F(), f"max_pool{nd}d")
        return f(input, kernel_size, _empty_to_none(stride), padding, dilation, ceil_mode)
    return pool


def _avg_pool(nd):
    def pool(input, kernel_size, stride=(), padding=0, ceil_mode=False, count_include_pad=True,
             divisor_override=None):
        f = getattr(_F(), f"avg_pool{nd}d")
        if nd == 1:
            return f(input, kernel_size, _empty_to_none(stride), padding, ceil_mode,
                     count_include_pad)
        return f(input, kernel_size, _empty_to_none(stride), padding, ceil_mode,
                 count_include_pad, divisor_override)
    return pool


def _pool_with_indices(fname, adaptive):
    def pool(input, *args):
        f = getattr(_F(), fname)
        if adaptive:
            return f(input, args[0], return_indices=True)
        k, stride, padding, dilation, ceil = (list(args) + [(), 0, 1, False][len(args) - 1:])[:5]
        return f(input, k, _empty_to_none(stride), padding, dilation, ceil, return_indices=True)
    pool.__qualname__ = fname + "_with_indices"
    return pool


def _elu(x, alpha=1.0, scale=1.0, input_scale=1.0):
    if scale == 1.0 and input_scale == 1.0:
        return _F().elu(x, alpha)
    ember = _ember()
    return scale * ember.where(x > 0, x, alpha * ember.expm1(x * input_scale))


def ts_str(v):
    """``str(v)`` as TorchScript writes it: floats with 17 significant digits and a
    trailing ``.`` when integral (``1.``, ``0.10000000000000001``), lists of those."""
    if isinstance(v, float):
        text = "%.17g" % v
        return text + "." if text.lstrip("-").isdigit() else text
    if isinstance(v, (list, tuple)):
        inner = ", ".join(ts_str(x) for x in v)
        return f"[{inner}]" if isinstance(v, list) else f"({inner}{',' if len(v) == 1 else ''})"
    return str(v)


def ts_format(fmt, *args):
    """TorchScript's ``str.format``: each ``{}`` in turn takes the next argument (no format
    specs or escapes, as torch)."""
    parts = fmt.split("{}")
    out = [parts[0]]
    for k, rest in enumerate(parts[1:]):
        out.append(ts_str(args[k]) if k < len(args) else "{}")
        out.append(rest)
    return "".join(out)


def _convolution(input, weight, bias, stride, padding, dilation, transposed,
                 output_padding, groups, *flags):
    """``aten::_convolution`` / ``aten::convolution`` (traced archives)."""
    F = _F()
    nd = weight.dim() - 2
    if transposed:
        f = getattr(F, f"conv_transpose{nd}d")
        return f(input, weight, bias, stride, padding, output_padding, groups, dilation)
    return getattr(F, f"conv{nd}d")(input, weight, bias, stride, padding, dilation, groups)


def _set_grad_enabled(mode):
    _ember().set_grad_enabled(bool(mode))


def _dropout(input, p, train):
    return _F().dropout(input, p, train)


def _feature_dropout(input, p, train):
    return _F().dropout2d(input, p, train) if input.dim() >= 3 else _F().dropout(input, p, train)


def _embedding(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    return _F().embedding(indices, weight, None if padding_idx == -1 else padding_idx,
                          None, 2.0, scale_grad_by_freq, sparse)


def _to(x, *args, **kwargs):
    """``aten::to`` overloads: (dtype, non_blocking, copy, memory_format),
    (device, dtype, non_blocking, copy, memory_format), (other, non_blocking, copy, ...)."""
    ember = _ember()
    if args and isinstance(args[0], ember.Tensor):
        out = x.to(args[0])
        copy = args[2] if len(args) > 2 else kwargs.get("copy", False)
        return out.clone() if copy and out is x else out
    if args and (isinstance(args[0], (str, ember.device)) or args[0] is None and len(args) > 1):
        dev, dt = args[0], _dtype(args[1] if len(args) > 1 else kwargs.get("dtype"))
        copy = args[3] if len(args) > 3 else kwargs.get("copy", False)
    else:
        dev = kwargs.get("device")
        dt = _dtype(args[0] if args else kwargs.get("dtype"))
        copy = args[2] if len(args) > 2 else kwargs.get("copy", False)
    out = x if dev is None else x.to(dev)
    out = out if dt is None else out.to(dt)
    return out.clone() if copy and out is x else out


def _rnn_params(params, has_biases, num_layers, bidirectional, proj=False):
    per = (2 if has_biases else 0) + 2 + (1 if proj else 0)
    dirs = 2 if bidirectional else 1
    out = []
    k = 0
    for _ in range(num_layers * dirs):
        chunk = params[k:k + per]
        k += per
        w_ih, w_hh = chunk[0], chunk[1]
        b_ih, b_hh = (chunk[2], chunk[3]) if has_biases else (None, None)
        w_hr = chunk[-1] if proj else None
        out.append((w_ih, w_hh, b_ih, b_hh, w_hr))
    return out


def _cell(mode, x, h, c, w):
    """One step of an RNN cell; x (B, in), h (B, H) -> (h, c)."""
    ember, F = _ember(), _F()
    w_ih, w_hh, b_ih, b_hh, w_hr = w
    gi = F.linear(x, w_ih, b_ih)
    gh = F.linear(h, w_hh, b_hh)
    if mode == "lstm":
        i, f, g, o = (gi + gh).chunk(4, 1)
        c = ember.sigmoid(f) * c + ember.sigmoid(i) * ember.tanh(g)
        h = ember.sigmoid(o) * ember.tanh(c)
        if w_hr is not None:
            h = F.linear(h, w_hr)
        return h, c
    if mode == "gru":
        ir, iz, inn = gi.chunk(3, 1)
        hr, hz, hn = gh.chunk(3, 1)
        r = ember.sigmoid(ir + hr)
        z = ember.sigmoid(iz + hz)
        n = ember.tanh(inn + r * hn)
        return (1 - z) * n + z * h, None
    act = ember.tanh if mode == "rnn_tanh" else ember.relu
    return act(gi + gh), None


def _rnn_run(mode, input, hx, params, has_biases, num_layers, dropout, train, bidirectional,
             batch_first, batch_sizes=None):
    """ATen's rnn ops over a padded (T, B, *) or packed (sum(B_t), *) input."""
    ember, F = _ember(), _F()
    lstm = mode == "lstm"
    h0 = hx[0]
    c0 = hx[1] if lstm else None
    proj = lstm and len(params) % (num_layers * (2 if bidirectional else 1)) == 0 and \
        len(params) // (num_layers * (2 if bidirectional else 1)) == (5 if has_biases else 3)
    ws = _rnn_params(params, has_biases, num_layers, bidirectional, proj)
    dirs = 2 if bidirectional else 1
    if batch_sizes is None:
        x = input.transpose(0, 1) if batch_first else input
        steps = [x.shape[1]] * x.shape[0]
        seq = [x[t] for t in range(x.shape[0])]
    else:
        steps = [int(n) for n in batch_sizes.tolist()]
        seq, k = [], 0
        for n in steps:
            seq.append(input[k:k + n])
            k += n
    hs, cs = [], []
    for layer in range(num_layers):
        outs = []
        for d in range(dirs):
            idx = layer * dirs + d
            h, cc = h0[idx], (c0[idx] if lstm else None)
            res = [None] * len(seq)
            # rows past a step's batch size are sequences already ended (or, backwards, not
            # yet begun): they keep their state
            for t in (range(len(seq)) if d == 0 else range(len(seq) - 1, -1, -1)):
                n = steps[t]
                nh, nc = _cell(mode, seq[t], h[:n], cc[:n] if lstm else None, ws[idx])
                res[t] = nh
                h = nh if n == h.shape[0] else ember.cat([nh, h[n:]], 0)
                if lstm:
                    cc = nc if n == cc.shape[0] else ember.cat([nc, cc[n:]], 0)
            outs.append(res)
            hs.append(h)
            cs.append(cc)
        seq = [o[0] if dirs == 1 else ember.cat([o[0], o[1]], 1) for o in zip(*outs)]
        if dropout and train and layer < num_layers - 1:
            seq = [F.dropout(s, dropout, True) for s in seq]
    if batch_sizes is None:
        out = ember.stack(seq, 0)
        out = out.transpose(0, 1) if batch_first else out
    else:
        out = ember.cat(seq, 0)
    h_n = ember.stack(hs, 0)
    if lstm:
        return out, h_n, ember.stack(cs, 0)
    return out, h_n


def _cell_adapter(mode):
    """``lstm_cell(input, hx[], w_ih, w_hh, b_ih, b_hh)`` -> (h, c); the others -> h."""
    def run(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
        w = (w_ih, w_hh, b_ih, b_hh, None)
        if mode == "lstm":
            return _cell(mode, input, hx[0], hx[1], w)
        return _cell(mode, input, hx, None, w)[0]
    run.__qualname__ = f"{mode}_cell"
    return run


def _rnn_adapter(mode):
    def run(input, *args):
        ember = _ember()
        if isinstance(args[0], ember.Tensor) and (mode == "lstm" or
                                                  isinstance(args[1], ember.Tensor)):
            # data overload: (data, batch_sizes, hx, params, has_biases, num_layers, dropout,
            # train, bidirectional)
            batch_sizes, hx, params, hb, nl, dp, tr, bi = args
            hx = hx if mode == "lstm" else [hx]
            return _rnn_run(mode, input, hx, params, hb, nl, dp, tr, bi, False, batch_sizes)
        hx, params, hb, nl, dp, tr, bi, bf = args
        hx = hx if mode == "lstm" else [hx]
        return _rnn_run(mode, input, hx, params, hb, nl, dp, tr, bi, bf)
    run.__qualname__ = f"aten_{mode}"
    return run


def _upsample(mode, nd):
    """``upsample_<mode><nd>d(input, output_size, [align_corners,] scale_factors)``."""
    aa = mode.endswith("_aa")
    mode = mode[:-3] if aa else mode

    def run(input, output_size, *rest):
        F = _F()
        align = rest[0] if len(rest) == 2 else None
        scales = rest[-1]
        if output_size is not None:
            return F.interpolate(input, size=list(output_size), mode=mode,
                                 align_corners=align, antialias=aa)
        return F.interpolate(input, scale_factor=list(scales), mode=mode, align_corners=align,
                             antialias=aa)
    run.__qualname__ = f"upsample_{mode}{nd}d"
    return run


_TT3 = T.TupleType((_TT, _TT, _TT))
_TT2 = T.TupleType((_TT, _TT))


def _pack_padded_sequence(input, lengths, batch_first):
    """(data, batch_sizes) of a padded (T, B, *) batch whose lengths decrease."""
    ember = _ember()
    x = input.transpose(0, 1) if batch_first else input
    lens = [int(n) for n in lengths.tolist()]
    if not lens or lens[-1] <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an "
                           "element in 'lengths' that is <= 0")
    sizes = [sum(1 for n in lens if n > t) for t in range(lens[0])]
    data = ember.cat([x[t, :n] for t, n in enumerate(sizes)], 0)
    return data, ember.tensor(sizes, dtype=ember.int64)


def _pad_packed_sequence(data, batch_sizes, batch_first, padding_value, total_length):
    """(padded (T, B, *), lengths) of packed data."""
    ember = _ember()
    sizes = [int(n) for n in batch_sizes.tolist()]
    b = sizes[0]
    steps, k = [], 0
    for n in sizes:
        chunk = data[k:k + n]
        k += n
        if n < b:
            pad = ember.full((b - n,) + tuple(data.shape[1:]), padding_value, dtype=data.dtype)
            chunk = ember.cat([chunk, pad], 0)
        steps.append(chunk)
    for _ in range(len(sizes), total_length):
        steps.append(ember.full((b,) + tuple(data.shape[1:]), padding_value, dtype=data.dtype))
    out = ember.stack(steps, 0)
    lengths = ember.tensor([sum(1 for n in sizes if n > i) for i in range(b)], dtype=ember.int64)
    return (out.transpose(0, 1) if batch_first else out), lengths



# name -> (callable, result type)
ADAPTERS = {
    "max_pool1d": (_max_pool(1), _TT), "max_pool2d": (_max_pool(2), _TT),
    "max_pool3d": (_max_pool(3), _TT),
    "avg_pool1d": (_avg_pool(1), _TT), "avg_pool2d": (_avg_pool(2), _TT),
    "avg_pool3d": (_avg_pool(3), _TT),
    "dropout": (_dropout, _TT), "feature_dropout": (_feature_dropout, _TT),
    "dropout_": (lambda x, p, train: _F().dropout(x, p, train, True), _TT),
    "alpha_dropout": (lambda x, p, train: _F().alpha_dropout(x, p, train), _TT),
    "embedding": (_embedding, _TT),
    "elu": (_elu, _TT),
    "_convolution": (_convolution, _TT), "convolution": (_convolution, _TT),
    "adaptive_max_pool1d": (_pool_with_indices("adaptive_max_pool1d", True), _TT2),
    "adaptive_max_pool2d": (_pool_with_indices("adaptive_max_pool2d", True), _TT2),
    "adaptive_max_pool3d": (_pool_with_indices("adaptive_max_pool3d", True), _TT2),
    "max_pool1d_with_indices": (_pool_with_indices("max_pool1d", False), _TT2),
    "max_pool2d_with_indices": (_pool_with_indices("max_pool2d", False), _TT2),
    "max_pool3d_with_indices": (_pool_with_indices("max_pool3d", False), _TT2),
    "_pack_padded_sequence": (_pack_padded_sequence, T.TupleType((_TT, _TT))),
    "_pad_packed_sequence": (_pad_packed_sequence, T.TupleType((_TT, _TT))),
    "to": (_to, _TT),
    "upsample_nearest1d": (_upsample("nearest", 1), _TT),
    "upsample_nearest2d": (_upsample("nearest", 2), _TT),
    "upsample_nearest3d": (_upsample("nearest", 3), _TT),
    "_upsample_nearest_exact1d": (_upsample("nearest-exact", 1), _TT),
    "_upsample_nearest_exact2d": (_upsample("nearest-exact", 2), _TT),
    "_upsample_nearest_exact3d": (_upsample("nearest-exact", 3), _TT),
    "upsample_linear1d": (_upsample("linear", 1), _TT),
    "upsample_bilinear2d": (_upsample("bilinear", 2), _TT),
    "upsample_bicubic2d": (_upsample("bicubic", 2), _TT),
    "upsample_trilinear3d": (_upsample("trilinear", 3), _TT),
    "_upsample_bilinear2d_aa": (_upsample("bilinear_aa", 2), _TT),
    "_upsample_bicubic2d_aa": (_upsample("bicubic_aa", 2), _TT),
    "lstm_cell": (_cell_adapter("lstm"), _TT2), "gru_cell": (_cell_adapter("gru"), _TT),
    "rnn_tanh_cell": (_cell_adapter("rnn_tanh"), _TT),
    "rnn_relu_cell": (_cell_adapter("rnn_relu"), _TT),
    "lstm": (_rnn_adapter("lstm"), _TT3), "gru": (_rnn_adapter("gru"), _TT2),
    "rnn_tanh": (_rnn_adapter("rnn_tanh"), _TT2), "rnn_relu": (_rnn_adapter("rnn_relu"), _TT2),
}
ADAPTERS.update(NN_ADAPTERS)

# ATen ops whose ATen signature is the torch.nn.functional one
_FUNCTIONAL = {"linear", "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d",
               "gelu", "silu", "mish", "hardswish", "hardsigmoid", "softplus", "glu",
               "pixel_shuffle", "pixel_unshuffle", "hardtanh", "leaky_relu", "relu6",
               "logsigmoid", "one_hot", "pdist", "cosine_similarity", "pairwise_distance",
               "pad", "scaled_dot_product_attention", "conv1d", "conv2d", "conv3d",
               "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "softshrink",
               "hardshrink", "rrelu", "softplus", "threshold", "celu", "selu", "prelu",
               "log_sigmoid"}
_F_NAMES = {"log_sigmoid": "logsigmoid"}      # ATen name -> nn.functional name

# hand-written ember fronts reachable as torch.<name> (besides op records)
_EMBER_FRONTS = {"batch_norm", "layer_norm", "group_norm", "instance_norm",
                 "zeros", "ones", "full", "empty", "arange", "tensor", "zeros_like",
                 "ones_like", "full_like", "empty_like", "rand", "randn", "randint",
                 "rand_like", "randn_like", "linspace", "eye", "cat", "stack", "concat",
                 "einsum", "max", "min", "split", "chunk", "unbind", "meshgrid",
                 "constant_pad_nd", "scalar_tensor", "as_tensor", "is_autocast_enabled",
                 "is_grad_enabled", "native_layer_norm", "_native_batch_norm_legit"}

# Tensor methods that are not op records
_METHODS = {"size", "dim", "contiguous", "item", "numel", "type_as", "view_as", "expand_as",
            "reshape_as", "new_zeros", "new_ones", "new_full", "new_empty", "new_tensor",
            "expand", "repeat", "is_contiguous", "is_floating_point", "element_size",
            "stride", "storage_offset", "clone", "detach", "detach_", "requires_grad_",
            "masked_fill", "masked_fill_", "fill_", "zero_", "copy_", "index_put_",
            "tolist", "float", "double", "int", "long", "half", "bool", "cpu",
            "narrow", "unfold", "nelement", "ndimension", "get_device", "t", "t_"}


def _allowed_front(name):
    from ember._ops.registry import FUNCTIONS
    return name in FUNCTIONS or name in _EMBER_FRONTS


def _op_records(name):
    from ember._ops.registry import OPS
    return [op for key, op in OPS.items() if key.partition(".")[0] == name]


# --------------------------------------------------------------------------- torch.<name>

_BIN = {"add": "Add", "sub": "Sub", "mul": "Mult", "div": "Div", "floordiv": "FloorDiv",
        "remainder": "Mod", "pow": "Pow", "__and__": "BitAnd", "__or__": "BitOr",
        "__xor__": "BitXor", "__lshift__": "LShift", "__rshift__": "RShift", "matmul": "MatMult"}
_CMP = {"eq": "Eq", "ne": "NotEq", "lt": "Lt", "le": "LtE", "gt": "Gt", "ge": "GtE",
        "__is__": "Is", "__isnot__": "IsNot"}
_MATH1 = {"floor", "ceil", "sqrt", "exp", "log", "log10", "log1p", "sin", "cos", "tan",
          "asin", "acos", "atan", "sinh", "cosh", "tanh", "fabs", "trunc", "isnan", "isinf",
          "isfinite", "gamma", "lgamma", "erf", "erfc", "expm1", "degrees", "radians",
          "factorial", "atan2", "copysign", "gcd", "fmod", "hypot", "log2"}


def call_torch(c, name, args, kwargs, e):
    """IR for ``torch.<name>(*args, **kwargs)`` in archive code."""
    types = [a.type for a in args]
    first = types[0] if types else None
    special = _SPECIAL.get(name)
    if special is not None:
        v = special(c, args, kwargs, e)
        if v is not None:
            return v
    tensor_in = _TT in types or any(v.type is _TT for v in kwargs.values())
    if any(_number_union(t) for t in types):
        args = [_as_number(c, a) for a in args]
        types = [a.type for a in args]
    if name in _BIN and len(args) == 2 and not kwargs:
        return c.binary(_BIN[name], args[0], args[1], e)
    if name in _CMP and len(args) == 2 and not kwargs:
        return c.compare(_CMP[name], args[0], args[1], e)
    if not tensor_in and args and all(_is_num(t) for t in types) and name in _MATH1:
        fn = getattr(math, name)
        return _emit(c, name, args, B.math_result(name), e, fn)
    if not tensor_in and name == "neg" and len(args) == 1:
        return _emit(c, "neg", args, first if first is not T.BoolType else _IT, e, operator.neg)
    if _container_method(first, name):
        from ember.jit._calls import method_call
        return method_call(c, args[0], name, list(args[1:]), kwargs, e)
    kwargs = _fix_kwargs(c, kwargs, e)
    args = _dtype_args(c, name, args, e)
    ad = ADAPTERS.get(name)
    if ad is not None:
        fn, rt = ad
        return _emit(c, name, args, rt, e, fn, kwargs)
    from ember.jit._calls import ember_call, tensor_method, bind_schema
    ember = _ember()
    fname = _F_NAMES.get(name, name)
    if name in _FUNCTIONAL and callable(getattr(_F(), fname, None)):
        return ember_call(c, getattr(_F(), fname), fname, list(args), kwargs, e)
    if _allowed_front(name) and callable(getattr(ember, name, None)):
        return ember_call(c, getattr(ember, name), name, list(args), kwargs, e)
    for op in _op_records(name):
        vals = bind_schema(c, op, list(args), kwargs, e)
        if vals is not None:
            return c.emit(f"aten::{name}", vals, [B.schema_returns(op)], e, op=op).output
    if first is _TT and (name in _METHODS or _op_records(name)) and callable(
            getattr(ember.Tensor, name, None)):
        return tensor_method(c, args[0], name, list(args[1:]), kwargs, e)
    if name.endswith("_") and not name.startswith("_") and first is _TT and \
            name[:-1] not in _SPECIAL:
        # an in-place variant ember lacks (elu_, leaky_relu_...): out of place, copied back
        try:
            r = call_torch(c, name[:-1], args, kwargs, e)
        except Exception:
            r = None
        if r is not None and r.type is _TT:
            return tensor_method(c, args[0], "copy_", [r], {}, e)
    return _missing(c, f"aten::{name}", args, e)


# ATen ops ember lacks that torch's own code calls on paths a model may never take (fused
# fast paths): these compile to a call raising NotImplementedError when reached. Any other
# unknown name is a compile error at load.
DEFERRED = {"_transformer_encoder_layer_fwd", "_native_multi_head_attention",
            "_transformer_decoder_only_layer_fwd", "_nested_tensor_from_mask",
            "_nested_tensor_from_mask_left_aligned", "_fused_sdp_choice", "to_padded_tensor",
            "_upsample_lanczos2d_aa", "fbgemm_linear_fp16_weight",
            "quantized_lstm", "quantized_gru", "_pack_sequence", "mkldnn_convolution",
            "_convolution_mode", "cudnn_is_acceptable", "miopen_rnn", "_cudnn_rnn"}


def _number_union(t):
    return isinstance(t, T.UnionType) and all(x in (_IT, _FT) for x in t.elems)


def _as_number(c, v):
    """A ``Union[float, int]`` value (``lp_pool``'s ``norm_type``) typed as float for
    arithmetic: at run time it stays the Python number it is, which Python's operators
    take either way."""
    return c.cast(v, _FT) if _number_union(v.type) else v


def _missing(c, kind, args, e):
    """An op ember lacks: in ``DEFERRED`` it raises NotImplementedError when run; anything
    else is not TorchScript ember knows, and loading fails."""
    if kind.split("::")[1] not in DEFERRED:
        c.error(f"Unknown builtin op: {kind}.\nember.jit.load cannot compile this archive: "
                f"{kind} with arguments ({', '.join(a.type.annotation for a in args)}) is not "
                f"an op ember knows", e)
    msg = (f"ember.jit.load: the archive calls {kind} with arguments "
           f"({', '.join(a.type.annotation for a in args)}), which ember does not implement")

    def missing(*a, **k):
        raise NotImplementedError(msg)
    missing.__qualname__ = kind.replace("::", "_")
    return c.emit(kind, list(args), [_TT], e, fn=missing).output


def _container_method(t, name):
    from ember.jit import _calls
    if isinstance(t, T.ListType):
        return name in _calls._LIST_METHODS
    if isinstance(t, T.DictType):
        return name in _calls._DICT_METHODS
    return t is T.StrType and not name.startswith("_") and callable(getattr(str, name, None))


def _sp_len(c, args, kwargs, e):
    return _emit(c, "len", args, _IT, e, len)


def _sp_dim(c, args, kwargs, e):
    if args and args[0].type is _TT:
        return _emit(c, "dim", args, _IT, e, lambda t: t.dim())


def _shape_list(t, dim=None):
    return list(t.shape) if dim is None else t.shape[dim]


def _sp_size(c, args, kwargs, e):
    if args and args[0].type is _TT:
        return _emit(c, "size", args, _IT if len(args) > 1 else T.ListType(_IT), e, _shape_list)


def _sp_format(c, args, kwargs, e):
    return _emit(c, "format", args, T.StrType, e, ts_format)


def _sp_not(c, args, kwargs, e):
    v = c.to_bool(args[0], e)
    return c.emit("aten::__not__", [v], [_BT], e, fn=operator.not_, attrs={"_py": "not "}).output


def _contains(container, x):
    return x in container


def _sp_contains(c, args, kwargs, e):
    if args[0].type is _TT:
        return None
    return _emit(c, "__contains__", args, _BT, e, _contains)


def _sp_list(c, args, kwargs, e):
    if not args:
        return c.emit("prim::ListConstruct", [], [T.ListType(_TT)], e).output
    t = args[0].type
    if t is _TT:
        return None
    return _emit(c, "list", args, t if isinstance(t, T.ListType) else T.ListType(T.AnyType), e,
                 list)


def _slice_list(seq, start=None, end=None, step=1):
    return seq[start:end:step]


def _sp_slice(c, args, kwargs, e):
    t = args[0].type
    if isinstance(t, T.ListType) or t is T.StrType:
        return _emit(c, "slice", args, t, e, _slice_list)


def _sp_select(c, args, kwargs, e):
    t = args[0].type
    if isinstance(t, T.ListType):
        return _emit(c, "__getitem__", args, t.elem, e, operator.getitem)


def _sp_device(c, args, kwargs, e):
    ember = _ember()
    return _emit(c, "device", args, T.DeviceType, e, ember.device, kwargs)


def _sp_set_grad_enabled(c, args, kwargs, e):
    c.emit("aten::set_grad_enabled", list(args), (), e, fn=_set_grad_enabled)
    return c.const(None)


def _sp_warn(c, args, kwargs, e):
    import warnings

    def warn(msg, stacklevel=2):
        warnings.warn(msg, stacklevel=2)
    c.emit("aten::warn", list(args), (), e, fn=warn)
    return c.const(None)


def _set_item(container, key, value):
    container[key] = value


def _sp_setitem(c, args, kwargs, e):
    c.emit("aten::_set_item", list(args), (), e, fn=_set_item)
    return c.const(None)


def _sp_range_length(c, args, kwargs, e):
    from ember.jit._calls import _range_length
    return _emit(c, "__range_length", args, _IT, e, _range_length)


def _sp_derive_index(c, args, kwargs, e):
    from ember.jit._calls import _derive_index
    return _emit(c, "__derive_index", args, _IT, e, _derive_index)


def _sp_round_floordiv(c, args, kwargs, e):
    return _emit(c, "__round_to_zero_floordiv", args, _IT, e,
                 lambda a, b: int(a / b))


def _sp_number_fn(pyfn, rt):
    def handler(c, args, kwargs, e):
        if args and all(_is_num(a.type) for a in args):
            return _emit(c, pyfn.__name__, args, rt(args) if callable(rt) else rt, e, pyfn)
    return handler


def _list_reduction(pyfn, rt):
    def handler(c, args, kwargs, e):
        if len(args) == 1 and isinstance(args[0].type, T.ListType):
            return _emit(c, pyfn.__name__, args, rt(args[0].type.elem), e, pyfn)
    return handler


def _sp_getitem(c, args, kwargs, e):
    t = args[0].type
    et = t.elem if isinstance(t, T.ListType) else t.value if isinstance(t, T.DictType) else \
        T.StrType if t is T.StrType else None
    if et is not None:
        return _emit(c, "__getitem__", args, et, e, operator.getitem)


def _sp_wait(c, args, kwargs, e):
    t = args[0].type if len(args) == 1 else None
    if isinstance(t, T.FutureType):
        return c.emit("aten::wait", list(args), [t.elem], e).output


_SPECIAL = {
    "wait": _sp_wait,
    "len": _sp_len, "dim": _sp_dim, "size": _sp_size, "format": _sp_format,
    "__not__": _sp_not, "__contains__": _sp_contains, "list": _sp_list, "slice": _sp_slice,
    "select": _sp_select, "device": _sp_device, "warn": _sp_warn, "_set_item": _sp_setitem,
    "set_grad_enabled": _sp_set_grad_enabled,
    "__range_length": _sp_range_length, "__derive_index": _sp_derive_index,
    "__round_to_zero_floordiv": _sp_round_floordiv, "__getitem__": _sp_getitem,
    "abs": _sp_number_fn(abs, lambda a: a[0].type),
    "any": _list_reduction(any, lambda t: _BT), "all": _list_reduction(all, lambda t: _BT),
    "sum": _list_reduction(sum, lambda t: t), "max": _list_reduction(max, lambda t: t),
    "min": _list_reduction(min, lambda t: t),
}


# --------------------------------------------------------------------------- ops.prim

def _num_to_tensor(x):
    ember = _ember()
    if isinstance(x, bool):
        return ember.tensor(x)
    if isinstance(x, int):
        return ember.tensor(x, dtype=ember.int64)
    if isinstance(x, float):
        return ember.tensor(x, dtype=ember.float64)
    return ember.tensor(x)


def call_prim(c, name, args, kwargs, e):
    """IR for ``ops.prim.<name>(...)`` (and ``ops.aten.<name>``, as ``torch.<name>``)."""
    if name == "RaiseException":
        msg = args[0]
        cls = args[1] if len(args) > 1 else c.const("builtins.RuntimeError")
        c.emit("prim::RaiseException", [msg, cls], (), e)
        return c.const(None)
    if name == "CreateObject":     # X.__new__(X) in the archive, rewritten
        return c.resolver.create_object(c, args[0].constant(), e)
    if name == "NumToTensor":
        return _emit(c, "NumToTensor", args, _TT, e, _num_to_tensor)
    if name == "dtype":     # archives hold dtypes as ScalarType codes (ints)
        d = c.emit("prim::dtype", list(args), [T.DtypeType], e).output
        return c.emit("aten::Int", [d], [_IT], e, fn=_dtype_code).output
    if name in ("device", "shape"):
        return c.emit(f"prim::{name}", list(args), [B.TENSOR_ATTRIBUTES[name]], e).output
    if name in B.TENSOR_ATTRIBUTES and name not in ("T", "mT", "H", "mH", "real", "imag"):
        return c.emit("prim::TensorAttr", list(args), [B.TENSOR_ATTRIBUTES[name]], e,
                      {"name": name}).output
    if name == "unchecked_unwrap_optional":
        return c.cast(args[0], T.unwrap_optional(args[0].type))
    if name in ("min", "max"):
        fn = min if name == "min" else max
        if len(args) == 1:
            t = args[0].type
            rt = t.elem if isinstance(t, T.ListType) else T.AnyType
        else:
            rt = args[0].type
            for a in args[1:]:
                rt = B.number_result("add", rt, a.type) or T.unify(rt, a.type) or T.AnyType
        return c.emit(f"prim::{name}", list(args), [rt], e, fn=fn).output
    if name == "abs":
        return _emit(c, "abs", args, args[0].type, e, abs)
    if name == "type" and args and args[0].type is T.DeviceType:
        return _emit(c, "device_type", args, T.StrType, e, lambda d: d.type)
    if name == "index" and args and args[0].type is T.DeviceType:
        return _emit(c, "device_index", args, T.OptionalType(_IT), e, lambda d: d.index)
    return _missing(c, f"prim::{name}", args, e)


def ops_call(ns, name):
    """The Sugar of ``ops.<ns>.<name>``."""
    if ns == "aten":
        return ArchiveCall("torch", name)
    if ns == "prim":
        return ArchiveCall("prim", name)
    from ember.jit._namespaced import registry_records
    if registry_records(ns, name):
        return ArchiveCall(f"ops.{ns}", name)
    return None
