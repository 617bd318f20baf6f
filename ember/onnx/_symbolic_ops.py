"""Symbolics for tensor math: elementwise ops, comparisons, matmul/linear, reductions,
sorting, factories and random ops, and Python numbers known only at run time.

Each takes ``(g, *inputs)`` in the op's schema order (``V``s) and returns ONNX names.
``g.outs`` holds the node's example outputs: arithmetic casts its operands to the result's
dtype, as ONNX requires one dtype per op.
"""
from __future__ import annotations

import math
import operator

import ember
from ember.onnx._graph import dtype_of, onnx_type
from ember.onnx._helpers import axis, cast_to, ew, ints, out_dtype, rank, reduce_dims, sv, \
    tensors_of
from ember.onnx._registry import python_symbolic, symbolic
from ember.onnx.errors import SymbolicValueError


# ---------------------------------------------------------------------- elementwise

def _unary(op_type):
    def fn(g, x, *_):
        return g.op(op_type, cast_to(g, x, out_dtype(g)))
    return fn


for _kind, _op in {"relu": "Relu", "sigmoid": "Sigmoid", "tanh": "Tanh", "exp": "Exp",
                   "log": "Log", "sqrt": "Sqrt", "abs": "Abs", "neg": "Neg", "erf": "Erf",
                   "sin": "Sin", "cos": "Cos", "tan": "Tan", "floor": "Floor", "ceil": "Ceil",
                   "reciprocal": "Reciprocal", "sign": "Sign", "round": "Round",
                   "asin": "Asin", "acos": "Acos", "atan": "Atan", "sinh": "Sinh",
                   "cosh": "Cosh", "logical_not": "Not", "bitwise_not": "Not",
                   "isnan": "IsNaN"}.items():
    symbolic("aten::" + _kind)(_unary(_op))


@symbolic("aten::square")
def square(g, x):
    x = cast_to(g, x, out_dtype(g))
    return g.op("Mul", x, x)


def _log_base(base):
    def fn(g, x):
        dt = out_dtype(g)
        return g.op("Div", g.op("Log", cast_to(g, x, dt)), g.const(math.log(base), dt))
    return fn


symbolic("aten::log2")(_log_base(2))
symbolic("aten::log10")(_log_base(10))


@symbolic("aten::exp2")
def exp2(g, x):
    dt = out_dtype(g)
    return g.op("Pow", g.const(2.0, dt), cast_to(g, x, dt))


@symbolic("aten::trunc")
def trunc(g, x):
    dt = out_dtype(g)
    x = cast_to(g, x, dt)
    return g.op("Mul", g.op("Sign", x), g.op("Floor", g.op("Abs", x)))


@symbolic("aten::expm1")
def expm1(g, x):
    return g.op("Sub", g.op("Exp", cast_to(g, x, out_dtype(g))), g.const(1, out_dtype(g)))


@symbolic("aten::log1p")
def log1p(g, x):
    return g.op("Log", g.op("Add", cast_to(g, x, out_dtype(g)), g.const(1, out_dtype(g))))


@symbolic("aten::rsqrt")
def rsqrt(g, x):
    return g.op("Reciprocal", g.op("Sqrt", cast_to(g, x, out_dtype(g))))


@symbolic("aten::silu")
def silu(g, x):
    x = cast_to(g, x, out_dtype(g))
    return g.op("Mul", x, g.op("Sigmoid", x))


@symbolic("aten::gelu")
def gelu(g, x, approximate="none"):
    dt = out_dtype(g)
    x = cast_to(g, x, dt)
    c = lambda v: g.const(v, dt)    # noqa: E731
    if sv(approximate) == "tanh":
        cube = g.op("Mul", g.op("Mul", x, x), x)      # torch's node order, same values
        inner = g.op("Mul", g.op("Add", x, g.op("Mul", cube, c(0.044715))),
                     c(math.sqrt(2 / math.pi)))
        return g.op("Mul", g.op("Mul", x, g.op("Add", g.op("Tanh", inner), c(1.0))), c(0.5))
    erf = g.op("Erf", g.op("Div", x, c(math.sqrt(2.0))))
    return g.op("Mul", g.op("Mul", x, g.op("Add", erf, c(1.0))), c(0.5))


@symbolic("aten::gelu", opset=20)
def gelu_20(g, x, approximate="none"):
    """Opset 20 has a Gelu operator (torch exports it from opset 20 on)."""
    return g.op("Gelu", cast_to(g, x, out_dtype(g)), approximate=sv(approximate))


def _binary(op_type):
    def fn(g, a, b, *_):
        dt = out_dtype(g)
        return g.op(op_type, ew(g, a, dt), ew(g, b, dt))
    return fn


for _kind, _op in {"mul": "Mul", "pow": "Pow", "maximum": "Max", "minimum": "Min",
                   "fmod": "Mod", "atan2": "Atan2", "logical_and": "And",
                   "logical_or": "Or", "logical_xor": "Xor", "bitwise_and": "And",
                   "bitwise_or": "Or", "bitwise_xor": "Xor"}.items():
    symbolic("aten::" + _kind)(_binary(_op))


def _scaled(g, v, alpha, dt):
    name = ew(g, v, dt)
    alpha = sv(alpha)
    return name if alpha == 1 else g.op("Mul", name, g.const(alpha, dt))


@symbolic("aten::add")
def add(g, a, b, alpha=1):
    dt = out_dtype(g)
    return g.op("Add", ew(g, a, dt), _scaled(g, b, alpha, dt))


@symbolic("aten::sub")
def sub(g, a, b, alpha=1):
    dt = out_dtype(g)
    return g.op("Sub", ew(g, a, dt), _scaled(g, b, alpha, dt))


@symbolic("aten::rsub")
def rsub(g, a, b, alpha=1):
    dt = out_dtype(g)
    return g.op("Sub", ew(g, b, dt), _scaled(g, a, alpha, dt))


@symbolic("aten::div")
def div(g, a, b, rounding_mode=None):
    dt = out_dtype(g)
    q = g.op("Div", cast_to(g, a, dt), cast_to(g, b, dt))
    mode = sv(rounding_mode) if rounding_mode is not None else None
    if mode == "floor" and dt.is_floating_point:
        return g.op("Floor", q)
    if mode is not None and not dt.is_floating_point:
        raise SymbolicValueError(f"aten::div with rounding_mode={mode!r} on integers")
    return q


@symbolic("aten::floor_divide")
def floor_divide(g, a, b):
    dt = out_dtype(g)
    if not dt.is_floating_point:
        f = ember.float64
        q = g.op("Floor", g.op("Div", cast_to(g, a, f), cast_to(g, b, f)))
        return g.op("Cast", q, to=onnx_type(dt))
    return g.op("Floor", g.op("Div", cast_to(g, a, dt), cast_to(g, b, dt)))


@symbolic("aten::remainder")
def remainder(g, a, b):
    """Python's modulo (the result takes the divisor's sign)."""
    dt = out_dtype(g)
    a, b = ew(g, a, dt), ew(g, b, dt)
    if not dt.is_floating_point:
        return g.op("Mod", a, b, fmod=0)
    return g.op("Sub", a, g.op("Mul", b, g.op("Floor", g.op("Div", a, b))))


def _common(a, b):
    ea, eb = a.example, b.example
    if not isinstance(ea, ember.Tensor) and not isinstance(eb, ember.Tensor):
        return dtype_of(ea) if isinstance(ea, float) or not isinstance(eb, float) else dtype_of(eb)
    return ember.result_type(ea, eb)


def _sequence_equal(g, a, b, negate):
    """``==`` / ``!=`` of two lists of sizes (some known only at run time)."""
    xs, ys = tensors_of(a), tensors_of(b)
    if len(xs) != len(ys):
        return g.const(bool(negate))
    eqs = [g.op("Equal", g.input(x, ember.int64), g.input(y, ember.int64))
           for x, y in zip(xs, ys)]
    r = eqs[0]
    for e in eqs[1:]:
        r = g.op("And", r, e)
    return g.op("Not", r) if negate else r


def _compare(op_type, negate=False, swap=False):
    def fn(g, a, b):
        if isinstance(a.example, (list, tuple)) and op_type == "Equal":
            return _sequence_equal(g, a, b, negate)
        dt = _common(a, b)
        x, y = ew(g, a, dt), ew(g, b, dt)
        if swap:
            x, y = y, x
        r = g.op(op_type, x, y)
        return g.op("Not", r) if negate else r
    return fn


symbolic("aten::eq")(_compare("Equal"))
symbolic("aten::ne")(_compare("Equal", negate=True))
symbolic("aten::lt")(_compare("Less"))
symbolic("aten::gt")(_compare("Greater"))
symbolic("aten::le")(_compare("LessOrEqual"))
symbolic("aten::ge")(_compare("GreaterOrEqual"))


@symbolic("aten::where")
def where(g, cond, a, b):
    dt = out_dtype(g)
    return g.op("Where", cast_to(g, cond, ember.bool), ew(g, a, dt), ew(g, b, dt))


@symbolic("aten::clamp", "aten::clip", "aten::hardtanh")
def clamp(g, x, lo=None, hi=None):
    dt = out_dtype(g)
    lo = None if lo is None or (lo.static and lo.value is None) else cast_to(g, lo, dt)
    hi = None if hi is None or (hi.static and hi.value is None) else cast_to(g, hi, dt)
    return g.op("Clip", cast_to(g, x, dt), lo, hi)


@symbolic("aten::clamp_min")
def clamp_min(g, x, lo):
    dt = out_dtype(g)
    return g.op("Max", cast_to(g, x, dt), cast_to(g, lo, dt))


@symbolic("aten::clamp_max")
def clamp_max(g, x, hi):
    dt = out_dtype(g)
    return g.op("Min", cast_to(g, x, dt), cast_to(g, hi, dt))


# ---------------------------------------------------------------------- softmax / matmul

@symbolic("aten::softmax", "aten::_softmax")
def softmax(g, x, dim, dtype=None, *_):
    return g.op("Softmax", cast_to(g, x, out_dtype(g)), axis=int(sv(dim)))


@symbolic("aten::log_softmax", "aten::_log_softmax")
def log_softmax(g, x, dim, dtype=None, *_):
    return g.op("LogSoftmax", cast_to(g, x, out_dtype(g)), axis=int(sv(dim)))


@symbolic("aten::matmul", "aten::mm", "aten::bmm")
def matmul(g, a, b):
    dt = out_dtype(g)
    return g.op("MatMul", cast_to(g, a, dt), cast_to(g, b, dt))


@symbolic("aten::addmm")
def addmm(g, c, a, b, beta=1, alpha=1):
    dt = out_dtype(g)
    alpha, beta = float(sv(alpha)), float(sv(beta))
    if not (a.static and g.exporter.dynamic):
        return g.op("Gemm", cast_to(g, a, dt), cast_to(g, b, dt), ew(g, c, dt),
                    alpha=alpha, beta=beta)
    # a constant left factor (an initial state of zeros recorded with the example's batch):
    # one row of it, broadcast by Add (Gemm's bias may not broadcast the other way)
    prod = g.op("MatMul", ew(g, a, dt), cast_to(g, b, dt))
    prod = prod if alpha == 1 else g.op("Mul", prod, g.const(alpha, dt))
    bias = ew(g, c, dt)
    bias = bias if beta == 1 else g.op("Mul", bias, g.const(beta, dt))
    return g.op("Add", bias, prod)


@symbolic("aten::linear")
def linear(g, x, w, b=None):
    dt = out_dtype(g)
    has_bias = b is not None and not (b.static and b.value is None)
    if rank(x) == 2 and rank(w) == 2:
        return g.op("Gemm", cast_to(g, x, dt), cast_to(g, w, dt),
                    cast_to(g, b, dt) if has_bias else None, transB=1)
    wt = w.value.t() if w.static and g.exporter.fold else None
    wt = g.const(wt, dt) if wt is not None else g.op("Transpose", cast_to(g, w, dt), perm=[1, 0])
    y = g.op("MatMul", cast_to(g, x, dt), wt)
    return g.op("Add", y, cast_to(g, b, dt)) if has_bias else y


# ---------------------------------------------------------------------- reductions

def _reduce(op_type, axes_input):
    def fn(g, x, dim=None, keepdim=False, dtype=None, *_):
        dt = out_dtype(g)
        axes = reduce_dims(dim, rank(x))
        keep = int(bool(sv(keepdim)))
        xin = cast_to(g, x, dt)
        if sv(dim) is None:
            return g.op(op_type, xin, keepdims=keep)      # no axes: all of them
        if axes_input:
            return g.op(op_type, xin, g.const(axes), keepdims=keep)
        return g.op(op_type, xin, axes=axes, keepdims=keep)
    return fn


symbolic("aten::sum")(_reduce("ReduceSum", False))
symbolic("aten::sum", opset=13)(_reduce("ReduceSum", True))
symbolic("aten::mean")(_reduce("ReduceMean", False))
symbolic("aten::mean", opset=18)(_reduce("ReduceMean", True))
symbolic("aten::amax")(_reduce("ReduceMax", False))
symbolic("aten::amax", opset=18)(_reduce("ReduceMax", True))
symbolic("aten::amin")(_reduce("ReduceMin", False))
symbolic("aten::amin", opset=18)(_reduce("ReduceMin", True))
symbolic("aten::prod")(_reduce("ReduceProd", False))


def _arg(op_type):
    def fn(g, x, dim=None, keepdim=False):
        keep = int(bool(sv(keepdim)))
        if dim is None or (dim.static and dim.value is None):
            flat = g.op("Reshape", g.input(x), g.const([-1]))
            return g.op(op_type, flat, axis=0, keepdims=keep)
        return g.op(op_type, g.input(x), axis=axis(int(sv(dim)), rank(x)), keepdims=keep)
    return fn


symbolic("aten::argmax")(_arg("ArgMax"))
symbolic("aten::argmin")(_arg("ArgMin"))


def _max_min(reduce, arg, pairwise):
    """max(x) (all elements), max(x, other) (elementwise), max(x, dim) (values, indices)."""
    def fn(g, x, dim=None, keepdim=False):
        if len(g.outs) == 1:
            if dim is None or (dim.static and dim.value is None):
                return g.op(reduce, g.input(x), keepdims=0)
            dt = out_dtype(g)
            return g.op(pairwise, ew(g, x, dt), ew(g, dim, dt))
        d = axis(int(sv(dim)), rank(x))
        keep = int(bool(sv(keepdim)))
        return [g.op(reduce, g.input(x), axes=[d], keepdims=keep),
                g.op(arg, g.input(x), axis=d, keepdims=keep)]
    return fn


symbolic("aten::max")(_max_min("ReduceMax", "ArgMax", "Max"))
symbolic("aten::min")(_max_min("ReduceMin", "ArgMin", "Min"))


@symbolic("aten::masked_fill")
def masked_fill(g, x, mask, value):
    dt = out_dtype(g)
    return g.op("Where", cast_to(g, mask, ember.bool), cast_to(g, value, dt), g.input(x))


@symbolic("aten::cumsum")
def cumsum(g, x, dim, dtype=None):
    dt = out_dtype(g)
    return g.op("CumSum", cast_to(g, x, dt), g.const(axis(int(sv(dim)), rank(x))))


@symbolic("aten::topk")
def topk(g, x, k, dim=-1, largest=True, sorted_=True):
    d = axis(int(sv(dim)), rank(x))
    return list(g.op("TopK", g.input(x), g.list_tensor([k]), axis=d,
                     largest=int(bool(sv(largest))), sorted=1, outputs=2))


@symbolic("aten::sort")
def sort(g, x, dim=-1, descending=False, stable=False):
    d = axis(int(sv(dim)), rank(x))
    n = x.example.shape[d]
    return list(g.op("TopK", g.input(x), g.const([n]), axis=d,
                     largest=int(bool(sv(descending))), sorted=1, outputs=2))


@symbolic("aten::argsort")
def argsort(g, x, dim=-1, descending=False, stable=False):
    return sort(g, x, dim, descending)[1]


def _tri(upper):
    def fn(g, x, diagonal=0):
        return g.op("Trilu", g.input(x), g.const(int(sv(diagonal))), upper=int(upper))
    return fn


symbolic("aten::tril", opset=14)(_tri(False))
symbolic("aten::triu", opset=14)(_tri(True))


@symbolic("aten::einsum", opset=12)
def einsum(g, equation, tensors, path=None):
    dt = out_dtype(g)
    return g.op("Einsum", *[cast_to(g, t, dt) for t in tensors_of(tensors)],
                equation=str(sv(equation)).replace(" ", ""))


@symbolic("aten::logsumexp")
def logsumexp(g, x, dim, keepdim=False):
    axes = reduce_dims(dim, rank(x))
    return g.op("ReduceLogSumExp", cast_to(g, x, out_dtype(g)), axes=axes,
                keepdims=int(bool(sv(keepdim))))


def _moments(g, x, dim, correction, keepdim):
    """(variance, mean) over ``dim`` with ``correction`` (Bessel's by default)."""
    dt = dtype_of(x.example)
    axes = reduce_dims(dim, rank(x))
    keep = int(bool(sv(keepdim)))
    xin = g.input(x)
    mean = g.op("ReduceMean", xin, axes=axes, keepdims=1)
    sq = g.op("Mul", g.op("Sub", xin, mean), g.op("Sub", xin, mean))
    n = 1
    for a in axes:
        n *= x.example.shape[a]
    corr = 1 if correction is None or (correction.static and correction.value is None) \
        else sv(correction)
    var = g.op("Div", g.op("ReduceSum", sq, g.const(axes), keepdims=keep),
               g.const(float(max(n - corr, 0)), dt))
    return var, (mean if keep else g.op("ReduceMean", xin, axes=axes, keepdims=0))


@symbolic("aten::var")
def var(g, x, dim=None, correction=None, keepdim=False):
    return _moments(g, x, dim, correction, keepdim)[0]


@symbolic("aten::std")
def std(g, x, dim=None, correction=None, keepdim=False):
    return g.op("Sqrt", _moments(g, x, dim, correction, keepdim)[0])


@symbolic("aten::var_mean")
def var_mean(g, x, dim=None, correction=None, keepdim=False):
    return list(_moments(g, x, dim, correction, keepdim))


@symbolic("aten::std_mean")
def std_mean(g, x, dim=None, correction=None, keepdim=False):
    v, m = _moments(g, x, dim, correction, keepdim)
    return [g.op("Sqrt", v), m]


@symbolic("aten::norm", "aten::linalg_vector_norm")
def norm(g, x, p=2, dim=None, keepdim=False, dtype=None):
    dt = out_dtype(g)
    xin = cast_to(g, x, dt)
    axes = reduce_dims(dim, rank(x))
    keep = int(bool(sv(keepdim)))
    order = 2 if p is None or (p.static and p.value is None) else sv(p)
    if order == 2:
        return g.op("ReduceL2", xin, axes=axes, keepdims=keep)
    if order == 1:
        return g.op("ReduceL1", xin, axes=axes, keepdims=keep)
    if order == float("inf"):
        return g.op("ReduceMax", g.op("Abs", xin), axes=axes, keepdims=keep)
    powed = g.op("Pow", g.op("Abs", xin), g.const(float(order), dt))
    return g.op("Pow", g.op("ReduceSum", powed, g.const(axes), keepdims=keep),
                g.const(1.0 / order, dt))


def _all_any(op_type):
    def fn(g, x, dim=None, keepdim=False):
        axes = reduce_dims(dim, rank(x))
        as_int = g.op("Cast", cast_to(g, x, ember.bool), to=onnx_type(ember.int64))
        r = g.op(op_type, as_int, axes=axes, keepdims=int(bool(sv(keepdim))))
        return g.op("Cast", r, to=onnx_type(ember.bool))
    return fn


symbolic("aten::all")(_all_any("ReduceMin"))
symbolic("aten::any")(_all_any("ReduceMax"))


# ---------------------------------------------------------------------- factories, random

def _like(fill):
    def fn(g, x, *_):
        dt = out_dtype(g)
        from onnx import helper
        value = helper.make_tensor("value", onnx_type(dt), [1], [fill])
        return g.op("ConstantOfShape", g.op("Shape", g.input(x)), value=value)
    return fn


def _filled(fill):
    def fn(g, size, *_):
        from onnx import helper
        dt = out_dtype(g)
        shape = g.list_tensor(size.items) if size.items is not None else g.const(ints(size))
        value = helper.make_tensor("value", onnx_type(dt), [1], [fill])
        return g.op("ConstantOfShape", shape, value=value)
    return fn


symbolic("aten::zeros", "aten::empty")(_filled(0))
symbolic("aten::ones")(_filled(1))


@symbolic("aten::full")
def full(g, size, fill, *_):
    shape = g.list_tensor(size.items) if size.items is not None else g.const(ints(size))
    return g.op("Expand", g.const(sv(fill), out_dtype(g)), shape)


symbolic("aten::zeros_like", "aten::empty_like")(_like(0))
symbolic("aten::ones_like")(_like(1))


@symbolic("aten::full_like")
def full_like(g, x, fill, *_):
    dt = out_dtype(g)
    return g.op("Expand", g.const(sv(fill), dt), g.op("Shape", g.input(x)))


@symbolic("aten::randn", "aten::rand")
def rand(g, size, *_):
    op_type = "RandomNormal" if g.node.kind == "aten::randn" else "RandomUniform"
    return g.op(op_type, shape=ints(size), dtype=onnx_type(out_dtype(g)))


@symbolic("aten::randn_like", "aten::rand_like")
def rand_like(g, x, *_):
    op_type = "RandomNormalLike" if g.node.kind == "aten::randn_like" else "RandomUniformLike"
    return g.op(op_type, g.input(x), dtype=onnx_type(out_dtype(g)))


@symbolic("aten::bernoulli_", "aten::bernoulli", opset=15)
def bernoulli(g, x, p=None, *_):
    dt = out_dtype(g)
    if p is None or (p.static and p.value is None):
        probs = g.input(x)                              # bernoulli(probabilities)
    else:
        probs = g.op("Expand", g.const(float(sv(p)), dt), g.op("Shape", g.input(x)))
    return g.op("Bernoulli", probs, dtype=onnx_type(dt))


# ---------------------------------------------------------------------- Python numbers

def _py(op_type, result=None):
    def fn(g, a, b):
        dt = result or dtype_of(g.outs[0])
        inner = ember.float64 if op_type == "Div" else dt
        r = g.op(op_type, cast_to(g, a, inner), cast_to(g, b, inner))
        return r if inner == dt else g.op("Cast", r, to=onnx_type(dt))
    return fn


python_symbolic(operator.add)(_py("Add"))
python_symbolic(operator.sub)(_py("Sub"))
python_symbolic(operator.mul)(_py("Mul"))
python_symbolic(operator.truediv)(_py("Div"))


@python_symbolic(operator.floordiv)
def _floordiv(g, a, b):
    f = ember.float64
    q = g.op("Floor", g.op("Div", cast_to(g, a, f), cast_to(g, b, f)))
    return g.op("Cast", q, to=onnx_type(dtype_of(g.outs[0])))


for _f, _op in ((operator.lt, "Less"), (operator.gt, "Greater"), (operator.le, "LessOrEqual"),
                (operator.ge, "GreaterOrEqual"), (operator.eq, "Equal")):
    python_symbolic(_f)(_compare(_op))
python_symbolic(operator.ne)(_compare("Equal", negate=True))
python_symbolic(operator.neg)(lambda g, a: g.op("Neg", g.input(a)))
python_symbolic(int)(lambda g, a: cast_to(g, a, ember.int64))
python_symbolic(float)(lambda g, a: cast_to(g, a, ember.float32))
python_symbolic(bool)(lambda g, a: cast_to(g, a, ember.bool))
