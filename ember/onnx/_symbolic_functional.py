"""Symbolics for calls of ``nn.functional`` (and a few Python callables) that scripted
graphs hold as ``fn`` nodes (``aten::conv2d`` calling ``F.conv2d``...). Each takes the
function's own parameter names; traced graphs reach the op-record symbolics instead."""
from __future__ import annotations

import operator

import ember
import ember.nn.functional as F
from ember.onnx._registry import python_symbolic
from ember.onnx._symbolic_nn import _n, _pool_attrs, batch_norm as _bn, convolution, \
    layer_norm as _ln
from ember.onnx._helpers import cast_to, out_dtype, rank, sv, tensors_of
from ember.onnx._symbolic_ops import gelu as _gelu, linear as _linear
from ember.onnx._graph import V
from ember.onnx.errors import SymbolicValueError


def _c(v):
    return V(value=v)


def _conv(g, input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    k = rank(weight) - 2
    pad = sv(padding) if padding is not None else 0
    if isinstance(pad, str):
        if pad == "valid":
            pad = [0] * k
        else:       # "same": the extra pixel of an even window goes after, as torch's
            dil = _n(dilation, k)
            total = [d * (s - 1) for d, s in zip(dil, weight.example.shape[2:])]
            if any(t % 2 for t in total):
                return _conv_same_odd(g, input, weight, bias, stride, dilation, groups, total)
            pad = [t // 2 for t in total]
    return convolution(g, input, weight, bias if bias is not None else _c(None), stride or _c(1),
                       _c(pad), dilation or _c(1), _c(False), _c([0]), groups or _c(1))


def _conv_same_odd(g, input, weight, bias, stride, dilation, groups, total):
    k = len(total)
    begins = [t // 2 for t in total]
    ends = [t - b for t, b in zip(total, begins)]
    padded = g.op("Pad", g.input(input), g.const([0, 0] + begins + [0, 0] + ends),
                  mode="constant")
    x = V(name=padded, example=input.example)
    return convolution(g, x, weight, bias if bias is not None else _c(None), stride or _c(1),
                       _c([0] * k), dilation or _c(1), _c(False), _c([0]), groups or _c(1))


for _f in (F.conv1d, F.conv2d, F.conv3d):
    python_symbolic(_f)(_conv)


@python_symbolic(F.linear)
def linear(g, input, weight, bias=None):
    return _linear(g, input, weight, bias)


@python_symbolic(F.batch_norm)
def batch_norm(g, input, running_mean, running_var, weight=None, bias=None, training=False,
               momentum=0.1, eps=1e-5):
    return _bn(g, input, weight or _c(None), bias or _c(None), running_mean, running_var,
               training or _c(False), momentum, eps or _c(1e-5))[0]


@python_symbolic(F.layer_norm)
def layer_norm(g, input, normalized_shape, weight=None, bias=None, eps=1e-5):
    return _ln(g, input, normalized_shape, weight or _c(None), bias or _c(None),
               eps or _c(1e-5))


def _max_pool(g, input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
              return_indices=False):
    if return_indices is not None and sv(return_indices):
        raise SymbolicValueError("max_pool with return_indices=True (ONNX's indices are "
                                 "flat over the whole tensor)")
    k = rank(input) - 2
    stride = None if stride is None or sv(stride) in (None, [], ()) else stride
    return g.op("MaxPool", g.input(input), dilations=_n(dilation or _c(1), k),
                **_pool_attrs(k, kernel_size, stride, padding or _c(0), ceil_mode))


for _f in (F.max_pool1d, F.max_pool2d, F.max_pool3d):
    python_symbolic(_f)(_max_pool)


def _avg_pool(g, input, kernel_size, stride=None, padding=0, ceil_mode=False,
              count_include_pad=True, divisor_override=None):
    if divisor_override is not None and sv(divisor_override) is not None:
        raise SymbolicValueError("avg_pool with divisor_override")
    k = rank(input) - 2
    stride = None if stride is None or sv(stride) in (None, [], ()) else stride
    include = int(bool(sv(count_include_pad))) if count_include_pad is not None else 1
    return g.op("AveragePool", g.input(input), count_include_pad=include,
                **_pool_attrs(k, kernel_size, stride, padding or _c(0), ceil_mode))


for _f in (F.avg_pool1d, F.avg_pool2d, F.avg_pool3d):
    python_symbolic(_f)(_avg_pool)


def _adaptive(global_op, op_type):
    def fn(g, input, output_size, return_indices=False):
        k = rank(input) - 2
        sizes = sv(output_size)
        sizes = [sizes] * k if isinstance(sizes, int) or sizes is None else list(sizes)
        in_sizes = list(input.example.shape[-k:])
        sizes = [i if o is None else o for o, i in zip(sizes, in_sizes)]
        if all(o == 1 for o in sizes):
            return g.op(global_op, g.input(input))
        if any(i % o for i, o in zip(in_sizes, sizes)):
            if global_op == "GlobalAveragePool":
                return _adaptive_avg_matmul(g, input, in_sizes, sizes)
            raise SymbolicValueError(f"adaptive max pooling from {in_sizes} to {sizes} "
                                     f"(windows of unequal sizes have no ONNX op)")
        kernel = [i // o for i, o in zip(in_sizes, sizes)]
        return g.op(op_type, g.input(input), kernel_shape=kernel, strides=kernel)
    return fn


def _adaptive_avg_matmul(g, input, in_sizes, sizes):
    """Adaptive average pooling as one averaging matrix per pooled dimension (windows
    [floor(o*i/O), ceil((o+1)*i/O)) as torch's)."""
    dt = out_dtype(g)
    r = rank(input)
    y = cast_to(g, input, dt)
    for k, (n_in, n_out) in enumerate(zip(in_sizes, sizes)):
        d = r - len(sizes) + k
        mat = ember.zeros(n_in, n_out, dtype=dt)
        for o in range(n_out):
            lo, hi = (o * n_in) // n_out, -(-((o + 1) * n_in) // n_out)
            mat[lo:hi, o] = 1.0 / (hi - lo)
        perm = list(range(r))
        perm[d], perm[-1] = perm[-1], perm[d]
        y = g.op("Transpose", y, perm=perm)
        y = g.op("Transpose", g.op("MatMul", y, g.const(mat, dt)), perm=perm)
    return y


for _f in (F.adaptive_avg_pool1d, F.adaptive_avg_pool2d, F.adaptive_avg_pool3d):
    python_symbolic(_f)(_adaptive("GlobalAveragePool", "AveragePool"))
for _f in (F.adaptive_max_pool1d, F.adaptive_max_pool2d, F.adaptive_max_pool3d):
    python_symbolic(_f)(_adaptive("GlobalMaxPool", "MaxPool"))


def _act(op_type, **attrs):
    def fn(g, input, inplace=False):
        return g.op(op_type, cast_to(g, input, out_dtype(g)), **attrs)
    return fn


python_symbolic(F.relu)(_act("Relu"))
python_symbolic(F.silu)(lambda g, input, inplace=False: g.op(
    "Mul", g.input(input), g.op("Sigmoid", g.input(input))))
python_symbolic(F.hardswish)(_act("HardSwish"))
python_symbolic(F.hardsigmoid)(_act("HardSigmoid", alpha=1 / 6, beta=0.5))
python_symbolic(F.sigmoid)(_act("Sigmoid"))
python_symbolic(F.tanh)(_act("Tanh"))
python_symbolic(F.gelu)(lambda g, input, approximate="none": _gelu(g, input, approximate))


@python_symbolic(F.hardtanh)
def hardtanh(g, input, min_val=-1.0, max_val=1.0, inplace=False):
    dt = out_dtype(g)
    lo = -1.0 if min_val is None else sv(min_val)
    hi = 1.0 if max_val is None else sv(max_val)
    return g.op("Clip", cast_to(g, input, dt), g.const(lo, dt), g.const(hi, dt))


@python_symbolic(F.relu6)
def relu6(g, input, inplace=False):
    return hardtanh(g, input, _c(0.0), _c(6.0))


@python_symbolic(F.leaky_relu)
def leaky_relu(g, input, negative_slope=0.01, inplace=False):
    slope = 0.01 if negative_slope is None else float(sv(negative_slope))
    return g.op("LeakyRelu", g.input(input), alpha=slope)


def _softmax(op_type):
    def fn(g, input, dim=None, _stacklevel=3, dtype=None):
        if dim is None or sv(dim) is None:
            raise SymbolicValueError(f"{op_type} without dim")
        return g.op(op_type, cast_to(g, input, out_dtype(g)), axis=int(sv(dim)))
    return fn


python_symbolic(F.softmax)(_softmax("Softmax"))
python_symbolic(F.log_softmax)(_softmax("LogSoftmax"))


def _dropout(g, input, p=0.5, training=True, inplace=False):
    if training is None or sv(training):
        raise SymbolicValueError("dropout with training=True in a scripted graph (export in "
                                 "eval mode)")
    return input


for _f in (F.dropout, F.dropout1d, F.dropout2d, F.dropout3d, F.alpha_dropout):
    python_symbolic(_f)(_dropout)


def _cat(g, tensors, dim=0, out=None):
    from ember.onnx._symbolic_shape import cat
    return cat(g, tensors, dim if dim is not None else _c(0))


def _static_attr(g, *args, **kwargs):
    """Python values the example knows (``Tensor.dim()``, ``len`` of a fixed list)."""
    return g.outs[0]


@python_symbolic(F.embedding)
def embedding(g, input, weight, padding_idx=None, max_norm=None, norm_type=2.0,
              scale_grad_by_freq=False, sparse=False):
    if max_norm is not None and sv(max_norm) is not None:
        raise SymbolicValueError("embedding with max_norm (it renormalizes the weight)")
    return g.op("Gather", g.input(weight), g.input(input, ember.int64), axis=0)


def _recurrent(g, mode, input, batch_sizes, h0, c0, weights, names, num_layers,
               bidirectional, dropout, training, batch_first, proj_size):
    from ember.onnx._symbolic_nn import recurrent
    if not (batch_sizes.static and batch_sizes.value is None):
        raise SymbolicValueError("a recurrent layer over a PackedSequence")
    if sv(proj_size):
        raise SymbolicValueError("LSTM with proj_size has no ONNX LSTM equivalent")
    named = dict(zip(sv(names), [sv(w, "recurrent weight") for w in tensors_of(weights)]))
    out = recurrent(g, sv(mode), input, h0, c0, named, int(sv(num_layers)),
                    bool(sv(bidirectional)), bool(sv(batch_first)))
    return out if sv(mode) == "LSTM" else [out[0], out[1], None]


def _lstm_recurrent(g, input, h0, c0, weights, names, num_layers, bidirectional, dropout,
                    training, batch_first, proj_size):
    return _recurrent(g, _c("LSTM"), input, _c(None), h0, c0, weights, names, num_layers,
                      bidirectional, dropout, training, batch_first, proj_size)


def _list(g, x):
    return V(items=list(tensors_of(x)))


def _register_misc():
    from ember._ops import shape
    from ember.nn.modules import rnn
    python_symbolic(rnn._recurrent)(_recurrent)
    python_symbolic(rnn._lstm_recurrent)(_lstm_recurrent)
    python_symbolic(shape._cat_front)(_cat)
    python_symbolic(list)(_list)
    python_symbolic(ember.Tensor.dim, ember.Tensor.ndimension, operator.is_,
                    operator.is_not)(_static_attr)
    python_symbolic(len)(lambda g, x: len(tensors_of(x)) if x.items is not None
                         else _static_attr(g))


_register_misc()
