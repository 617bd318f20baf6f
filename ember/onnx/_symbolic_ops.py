"""Symbolics for tensor ops: elementwise math, comparisons, reductions, shapes and views,
joining/splitting, indexing, dtype conversion, and Python numbers known only at run time.

Each takes ``(g, *inputs)`` in the op's schema order (``V``s) and returns ONNX names.
``g.outs`` holds the node's example outputs: arithmetic casts its operands to the result's
dtype, as ONNX requires one dtype per op.
"""
from __future__ import annotations

import math
import operator

import ember
from ember.onnx._graph import V, dtype_of, onnx_type
from ember.onnx._registry import python_symbolic, symbolic
from ember.onnx.errors import SymbolicValueError


# ---------------------------------------------------------------------- helpers

def sv(v, what="argument"):
    """The export-time value of ``v`` (an error when it is only known at run time)."""
    if isinstance(v, V):
        if not v.static:
            raise SymbolicValueError(f"the {what} must be known at export time")
        return v.value
    return v


def out_dtype(g, k=0):
    return dtype_of(g.outs[k])


def rank(v):
    return v.example.dim()


def axis(d, r):
    return d + r if d < 0 else d


def cast_to(g, v, dtype):
    return g.input(v, dtype)


def ew(g, v, dtype):
    """An elementwise operand. With dynamic axes, a constant tensor that repeats along a
    dimension which another (run-time) operand has at full size keeps one slice there: a
    ``zeros(batch, n)`` or ``full_like(x, c)`` the trace recorded with the example's sizes
    then broadcasts to the sizes of the run."""
    val = v.value if isinstance(v, V) and v.static else None
    if not (g.exporter.dynamic and isinstance(val, ember.Tensor) and val.dim()):
        return g.input(v, dtype)
    others = [i.example for i in g.ins if i is not v and not i.static
              and isinstance(i.example, ember.Tensor)]
    r = val.dim()
    for d in range(r):
        n = val.shape[d]
        full = any(o.dim() >= r - d and o.shape[o.dim() - r + d] == n for o in others)
        if n > 1 and full and bool((val.narrow(d, 0, 1) == val).all()):
            val = val.narrow(d, 0, 1)
    return g.const(val, dtype)


def ints(v):
    val = sv(v, "size list")
    return [int(val)] if isinstance(val, int) else [int(e) for e in val]


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
        inner = g.op("Mul", c(math.sqrt(2 / math.pi)),
                     g.op("Add", x, g.op("Mul", c(0.044715), g.op("Mul", x, g.op("Mul", x, x)))))
        return g.op("Mul", g.op("Mul", c(0.5), x), g.op("Add", c(1.0), g.op("Tanh", inner)))
    erf = g.op("Erf", g.op("Div", x, c(math.sqrt(2.0))))
    return g.op("Mul", g.op("Mul", c(0.5), x), g.op("Add", c(1.0), erf))


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


def _compare(op_type, negate=False, swap=False):
    def fn(g, a, b):
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

def _dims(dim, r):
    if dim is None or (isinstance(dim, V) and dim.static and dim.value is None):
        return list(range(r))
    d = sv(dim)
    d = [d] if isinstance(d, int) else list(d)
    return [axis(int(e), r) for e in d] or list(range(r))


def _reduce(op_type, axes_input):
    def fn(g, x, dim=None, keepdim=False, dtype=None, *_):
        dt = out_dtype(g)
        axes = _dims(dim, rank(x))
        keep = int(bool(sv(keepdim)))
        xin = cast_to(g, x, dt)
        if axes_input:
            return g.op(op_type, xin, g.const(axes), keepdims=keep)
        return g.op(op_type, xin, axes=axes, keepdims=keep)
    return fn


symbolic("aten::sum")(_reduce("ReduceSum", True))
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


# ---------------------------------------------------------------------- shapes and views

def _shape_items(g, shape, x=None):
    """A target shape: static ints (leading sizes equal to ``x``'s copied with 0 when the
    export has dynamic axes, so a dynamic batch passes through) or run-time items."""
    if isinstance(shape, V) and shape.items is not None:
        return g.list_tensor(shape.items)
    dims = ints(shape)
    if x is not None and g.exporter.dynamic and dims:
        src = list(x.example.shape)
        k = 0
        while k < min(len(src), len(dims)) and dims[k] == src[k] and dims[k] != 0:
            dims[k] = 0
            k += 1
        if k == 0 and -1 not in dims:
            dims[0] = -1        # a leading size made from the batch (N*C -> N, C)
    return g.const(dims)


@symbolic("aten::reshape", "aten::view", "aten::_reshape_alias", "aten::_unsafe_view")
def reshape(g, x, shape, *_):
    return g.op("Reshape", g.input(x), _shape_items(g, shape, x))


@symbolic("aten::view_as", "aten::reshape_as")
def reshape_as(g, x, other):
    return g.op("Reshape", g.input(x), g.op("Shape", g.input(other)))


@symbolic("aten::flatten")
def flatten(g, x, start=0, end=-1):
    r = rank(x)
    if r == 0:
        return g.op("Reshape", g.input(x), g.const([1]))
    s, e = axis(int(sv(start)), r), axis(int(sv(end)), r)
    if s == 1 and e == r - 1:
        return g.op("Flatten", g.input(x), axis=1)
    tail = list(x.example.shape[e + 1:])
    return g.op("Reshape", g.input(x), g.const([0] * s + [-1] + tail))


@symbolic("aten::unsqueeze")
def unsqueeze(g, x, dim):
    return g.op("Unsqueeze", g.input(x), g.const([axis(int(sv(dim)), rank(x) + 1)]))


@symbolic("aten::squeeze")
def squeeze(g, x, dim=None):
    if dim is None or (dim.static and dim.value is None):
        return g.op("Squeeze", g.input(x))
    dims = [axis(d, rank(x)) for d in ints(dim)]
    dims = [d for d in dims if x.example.shape[d] == 1]
    return g.op("Squeeze", g.input(x), g.const(dims)) if dims else g.input(x)


@symbolic("aten::permute")
def permute(g, x, dims):
    return g.op("Transpose", g.input(x), perm=[axis(d, rank(x)) for d in ints(dims)])


@symbolic("aten::transpose", "aten::swapaxes", "aten::swapdims")
def transpose(g, x, d0, d1):
    r = rank(x)
    perm = list(range(r))
    a, b = axis(int(sv(d0)), r), axis(int(sv(d1)), r)
    perm[a], perm[b] = perm[b], perm[a]
    return g.op("Transpose", g.input(x), perm=perm)


@symbolic("aten::t", "aten::numpy_T")
def t(g, x):
    return g.input(x) if rank(x) < 2 else g.op("Transpose", g.input(x), perm=[1, 0])


@symbolic("aten::movedim", "aten::moveaxis")
def movedim(g, x, src, dst):
    r = rank(x)
    src = [axis(d, r) for d in ints(src)]
    dst = [axis(d, r) for d in ints(dst)]
    perm = [-1] * r
    for s, d in zip(src, dst):
        perm[d] = s
    rest = iter(d for d in range(r) if d not in src)
    perm = [p if p >= 0 else next(rest) for p in perm]
    return g.op("Transpose", g.input(x), perm=perm)


@symbolic("aten::expand")
def expand(g, x, size, *_):
    if size.items is not None:
        return g.op("Expand", g.input(x), g.list_tensor(size.items))
    dims = ints(size)
    dims = [1 if d == -1 else d for d in dims]
    if g.exporter.dynamic:
        # leading sizes equal to x's: 1 (Expand broadcasts them from x at run time)
        src = list(x.example.shape)
        off = len(dims) - len(src)
        dims = [1 if i >= off and src[i - off] == d else d for i, d in enumerate(dims)]
    return g.op("Expand", g.input(x), g.const(dims))


@symbolic("aten::expand_as")
def expand_as(g, x, other):
    return g.op("Expand", g.input(x), g.op("Shape", g.input(other)))


def _identity(g, x, *_):
    return x


for _kind in ("contiguous", "clone", "detach", "alias", "dropout", "feature_dropout",
              "alpha_dropout", "feature_alpha_dropout", "lift_fresh", "resolve_conj",
              "resolve_neg", "_conj"):
    symbolic("aten::" + _kind)(_identity)


@symbolic("aten::copy_")
def copy_(g, dst, src, *_):
    y = cast_to(g, src, dtype_of(dst.example))
    if tuple(src.example.shape) != tuple(dst.example.shape):
        y = g.op("Expand", y, g.op("Shape", g.input(dst)))
    return y


@symbolic("aten::_to_copy", "aten::to", "aten::type_as", "aten::float", "aten::double",
          "aten::int", "aten::long", "aten::bool", "aten::half")
def to(g, x, *_):
    dt = out_dtype(g)
    if dtype_of(x.example) == dt:
        return x
    return g.op("Cast", g.input(x), to=onnx_type(dt))


@symbolic("aten::size")
def size(g, x, dim=None):
    if not g.exporter.dynamic:
        return g.outs[0]
    shape = g.op("Shape", g.input(x))
    if dim is None or (dim.static and dim.value is None):
        return shape
    return g.op("Gather", shape, g.const(axis(int(sv(dim)), rank(x))), axis=0)


@symbolic("prim::NumToTensor", "aten::Int", "aten::Float", "aten::Bool", "aten::ScalarImplicit")
def scalar(g, x):
    dt = out_dtype(g) if not isinstance(g.outs[0], ember.Tensor) else dtype_of(x.example)
    return cast_to(g, x, dt)


# ---------------------------------------------------------------------- join / split

def _tensors(v):
    if v.items is not None:
        return v.items
    return [V(value=e) for e in sv(v)]


@symbolic("aten::cat", "aten::concat", "aten::concatenate")
def cat(g, tensors, dim=0):
    dt = out_dtype(g)
    items = [t for t in _tensors(tensors) if not (t.example.dim() == 1 and t.example.numel() == 0)]
    d = axis(int(sv(dim)), g.outs[0].dim())
    ref = next((t for t in items if not t.static), None)
    names = [_cat_part(g, t, ref, d, dt) for t in items]
    return names[0] if len(names) == 1 else g.op("Concat", *names, axis=d)


def _cat_part(g, t, ref, d, dt):
    """A constant piece (a zero padding the trace recorded with the example's batch) is
    expanded to the run-time sizes of ``ref`` off the concatenation axis."""
    val = t.value if t.static else None
    if ref is None or not g.exporter.dynamic or not isinstance(val, ember.Tensor):
        return cast_to(g, t, dt)
    r = val.dim()
    shrunk = val
    for k in range(r):
        if k != d and val.shape[k] > 1 and bool((val.narrow(k, 0, 1) == val).all()):
            shrunk = shrunk.narrow(k, 0, 1)
    if shrunk.shape == val.shape:
        return cast_to(g, t, dt)
    keep = [0 if k == d else 1 for k in range(r)]
    fixed = [val.shape[d] if k == d else 0 for k in range(r)]
    shape = g.op("Add", g.op("Mul", g.op("Shape", g.input(ref)), g.const(keep)), g.const(fixed))
    return g.op("Expand", g.const(shrunk, dt), shape)


@symbolic("aten::stack")
def stack(g, tensors, dim=0):
    dt = out_dtype(g)
    d = axis(int(sv(dim)), g.outs[0].dim())
    names = [g.op("Unsqueeze", cast_to(g, t, dt), g.const([d])) for t in _tensors(tensors)]
    return names[0] if len(names) == 1 else g.op("Concat", *names, axis=d)


def _split(g, x, sizes, d):
    if len(sizes) == 1:
        return [g.op("Identity", g.input(x))]
    return list(g.op("Split", g.input(x), g.const(sizes), axis=d, outputs=len(sizes)))


def _split_outs(g, x, dim, squeezed=False):
    d = axis(int(sv(dim)), rank(x))
    outs = g.outs[0]
    sizes = [1] * len(outs) if squeezed else [o.shape[d] for o in outs]
    return V(items=_split(g, x, sizes, d)), d


@symbolic("aten::chunk", "aten::split", "aten::split_with_sizes", "aten::tensor_split")
def split(g, x, sizes, dim=0):
    return _split_outs(g, x, dim)[0]


@symbolic("aten::unbind")
def unbind(g, x, dim=0):
    parts, d = _split_outs(g, x, dim, squeezed=True)
    parts.items = [g.op("Squeeze", p, g.const([d])) for p in parts.items]
    return parts


@symbolic("aten::select")
def select(g, x, dim, index):
    d = axis(int(sv(dim)), rank(x))
    return g.op("Gather", g.input(x), g.input(index, ember.int64), axis=d)


@symbolic("aten::slice")
def slice_(g, x, dim=0, start=None, end=None, step=1):
    d = axis(int(sv(dim)), rank(x))
    s = 0 if start is None or (start.static and start.value is None) else start
    e = 2 ** 63 - 1 if end is None or (end.static and end.value is None) else end
    return g.op("Slice", g.input(x), g.list_tensor([s]), g.list_tensor([e]), g.const([d]),
                g.const([int(sv(step))]))


@symbolic("aten::narrow")
def narrow(g, x, dim, start, length):
    d = axis(int(sv(dim)), rank(x))
    s = int(sv(start))
    return g.op("Slice", g.input(x), g.const([s]), g.const([s + int(sv(length))]), g.const([d]))


@symbolic("aten::_basic_index")
def basic_index(g, x, index):
    """``x[...]`` with ints, slices, None and Ellipsis (known at export time)."""
    idx = sv(index, "index")
    idx = list(idx) if isinstance(idx, (list, tuple)) else [idx]
    r = rank(x)
    consumed = sum(1 for i in idx if i is not None and i is not Ellipsis)
    if Ellipsis in idx:
        k = idx.index(Ellipsis)
        idx = idx[:k] + [slice(None)] * (r - consumed) + idx[k + 1:]
    name = g.input(x)
    dim, squeeze_dims, out_dim, unsq = 0, [], 0, []
    starts, ends, axes, steps = [], [], [], []
    for i in idx:
        if i is None:
            unsq.append(out_dim)
            out_dim += 1
            continue
        if isinstance(i, bool) or not isinstance(i, (int, slice)):
            raise SymbolicValueError(f"aten::_basic_index with index {i!r}")
        if isinstance(i, int):
            n = x.example.shape[dim]
            i = i + n if i < 0 else i
            starts.append(i), ends.append(i + 1), axes.append(dim), steps.append(1)
            squeeze_dims.append(dim)
        else:
            n = x.example.shape[dim]
            a, b, c = i.indices(n)
            if (a, b, c) != (0, n, 1):
                if c < 0:
                    b = -2 ** 63 if b < 0 else b
                starts.append(a), ends.append(b), axes.append(dim), steps.append(c)
            out_dim += 1
        dim += 1
    if axes:
        name = g.op("Slice", name, g.const(starts), g.const(ends), g.const(axes), g.const(steps))
    if squeeze_dims:
        name = g.op("Squeeze", name, g.const(squeeze_dims))
    if unsq:
        name = g.op("Unsqueeze", name, g.const(unsq))
    return name


@symbolic("aten::index_select")
def index_select(g, x, dim, index):
    return g.op("Gather", g.input(x), g.input(index, ember.int64), axis=axis(int(sv(dim)), rank(x)))


@symbolic("aten::embedding")
def embedding(g, weight, indices, *_):
    return g.op("Gather", g.input(weight), g.input(indices, ember.int64), axis=0)


@symbolic("aten::constant_pad_nd")
def constant_pad_nd(g, x, pad, value=0):
    p = ints(pad)
    r = rank(x)
    begins, ends = [0] * r, [0] * r
    for k in range(len(p) // 2):
        begins[r - 1 - k], ends[r - 1 - k] = p[2 * k], p[2 * k + 1]
    dt = dtype_of(x.example)
    return g.op("Pad", g.input(x), g.const(begins + ends), g.const(sv(value) or 0, dt),
                mode="constant")


@symbolic("aten::unflatten")
def unflatten(g, x, dim, sizes):
    r = rank(x)
    d = axis(int(sv(dim)), r)
    shape = [0] * d + ints(sizes) + list(x.example.shape[d + 1:])
    return g.op("Reshape", g.input(x), g.const(shape))


@symbolic("aten::broadcast_tensors")
def broadcast_tensors(g, tensors):
    items = _tensors(tensors)
    dts = [dtype_of(t.example) for t in items]
    shape = None
    for t in items:         # Shape(a + b + ...) broadcasts like the inputs do
        z = g.op("Mul", g.input(t), g.const(0, dtype_of(t.example)))
        z = g.op("Cast", z, to=onnx_type(ember.float32)) if dtype_of(t.example) != \
            ember.float32 else z
        shape = z if shape is None else g.op("Add", shape, z)
    full = g.op("Shape", shape)
    return V(items=[g.op("Expand", g.input(t), full) for t, _ in zip(items, dts)])


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
    return g.op("Einsum", *[cast_to(g, t, dt) for t in _tensors(tensors)],
                equation=str(sv(equation)).replace(" ", ""))


@symbolic("aten::logsumexp")
def logsumexp(g, x, dim, keepdim=False):
    axes = _dims(dim, rank(x))
    return g.op("ReduceLogSumExp", cast_to(g, x, out_dtype(g)), axes=axes,
                keepdims=int(bool(sv(keepdim))))


def _moments(g, x, dim, correction, keepdim):
    """(variance, mean) over ``dim`` with ``correction`` (Bessel's by default)."""
    dt = dtype_of(x.example)
    axes = _dims(dim, rank(x))
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
    axes = _dims(dim, rank(x))
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


@symbolic("aten::flip")
def flip(g, x, dims):
    ds = [axis(d, rank(x)) for d in ints(dims)]
    big = 2 ** 63 - 1
    return g.op("Slice", g.input(x), g.const([-1] * len(ds)), g.const([-big] * len(ds)),
                g.const(ds), g.const([-1] * len(ds)))


@symbolic("aten::gather")
def gather(g, x, dim, index, *_):
    return g.op("GatherElements", g.input(x), g.input(index, ember.int64),
                axis=axis(int(sv(dim)), rank(x)))


@symbolic("aten::repeat", "aten::tile")
def repeat(g, x, repeats):
    reps = ints(repeats)
    name = g.input(x)
    extra = len(reps) - rank(x)
    if extra > 0:
        name = g.op("Reshape", name, g.const([1] * extra + list(x.example.shape)))
    elif extra < 0:
        reps = [1] * -extra + reps
    return g.op("Tile", name, g.const(reps))


def _all_any(op_type):
    def fn(g, x, dim=None, keepdim=False):
        axes = _dims(dim, rank(x))
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
