"""Symbolics for shapes and views, joining and splitting, indexing and padding.

With dynamic axes, sizes the trace recorded as constants are kept dynamic where they can be
told apart: leading sizes equal to the input's are copied (Reshape's 0), Expand broadcasts
from the input, constant pieces of a concatenation take the run-time sizes.
"""
from __future__ import annotations

import ember
from ember.onnx._graph import V, dtype_of, onnx_type
from ember.onnx._helpers import axis, cast_to, ints, out_dtype, rank, sv, tensors_of
from ember.onnx._registry import symbolic
from ember.onnx.errors import SymbolicValueError

_HOLE = None        # set from _patches (the placeholder of a tensor in an index template)


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

@symbolic("aten::cat", "aten::concat", "aten::concatenate")
def cat(g, tensors, dim=0):
    dt = out_dtype(g)
    items = [t for t in tensors_of(tensors) if not (t.example.dim() == 1 and t.example.numel() == 0)]
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
    names = [g.op("Unsqueeze", cast_to(g, t, dt), g.const([d])) for t in tensors_of(tensors)]
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


# ---------------------------------------------------------------------- indexing, padding

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


_BIG = 2 ** 63 - 1


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
        # the index's own values (negative ones count from the end at run time too), so a
        # dynamic size is sliced as the source says, not as the example's size would
        if isinstance(i, int):
            end = _BIG if i == -1 else i + 1
            starts.append(i), ends.append(end), axes.append(dim), steps.append(1)
            squeeze_dims.append(dim)
        else:
            step = 1 if i.step is None else int(i.step)
            whole = i.start in (None, 0) and i.stop is None and step == 1
            if not whole:
                start = (0 if step > 0 else -1) if i.start is None else int(i.start)
                stop = (_BIG if step > 0 else -_BIG - 1) if i.stop is None else int(i.stop)
                starts.append(start), ends.append(stop), axes.append(dim), steps.append(step)
            out_dim += 1
        dim += 1
    if axes:
        name = g.op("Slice", name, g.const(starts), g.const(ends), g.const(axes), g.const(steps))
    if squeeze_dims:
        name = g.op("Squeeze", name, g.const(squeeze_dims))
    if unsq:
        name = g.op("Unsqueeze", name, g.const(unsq))
    return name


def tensor_index(g, x, idx, example):
    """``x[idx]`` where one entry of ``idx`` is a tensor (``V``): indices (Gather) or a mask
    over the leading dimensions (GatherND of its NonZero). The other entries (ints, slices,
    None, Ellipsis) are applied first as basic indexing."""
    r = rank(x)
    if Ellipsis in idx:
        k = idx.index(Ellipsis)
        used = sum(1 for i in idx if i is not None and i is not Ellipsis)
        idx = idx[:k] + [slice(None)] * (r - used) + idx[k + 1:]
    dyn = [k for k, i in enumerate(idx) if isinstance(i, V)]
    if len(dyn) != 1:
        raise SymbolicValueError("indexing with more than one tensor")
    k = dyn[0]
    rest = [slice(None) if j == k else i for j, i in enumerate(idx)]
    if any(not (isinstance(i, slice) and i == slice(None)) for i in rest):
        ex = x.example[tuple(rest)]
        x = V(name=basic_index(g, x, V(value=rest)), example=ex)
        k = k - sum(1 for i in idx[:k] if isinstance(i, int)) + \
            sum(1 for i in idx[:k] if i is None)
    i = idx[dyn[0]]
    if dtype_of(i.example) == ember.bool:
        if k != 0 and i.example.dim() != 1:
            raise SymbolicValueError("indexing by a mask of more than one dimension after "
                                     "other dimensions")
        if i.example.dim() == 1:
            return g.op("Compress", g.input(x), g.input(i), axis=k)
        where = g.op("Transpose", g.op("NonZero", g.input(i)), perm=[1, 0])
        return g.op("GatherND", g.input(x), where)
    return g.op("Gather", g.input(x), g.input(i, ember.int64), axis=k)


@symbolic("aten::index")
def index(g, x, indices):
    """Advanced indexing with constant indices (a list in the source: ``x[:, [2, 0]]``)."""
    import numpy as np
    idx = [V(value=ember.from_numpy(np.asarray(i))) if isinstance(i, (np.ndarray, list))
           else (V(value=i) if isinstance(i, ember.Tensor) else i) for i in sv(indices)]
    return tensor_index(g, x, idx, g.outs[0])


@symbolic("aten::_onnx_index")
def onnx_index(g, x, tensors, key):
    """Advanced indexing recorded during export (``_patches``): the index's tensors are
    inputs of the node, the rest of the index is its template."""
    from ember.onnx._patches import index_template
    parts = iter(tensors_of(tensors))
    idx = [next(parts) if p is _HOLE else p for p in index_template(sv(key))]
    return tensor_index(g, x, idx, g.outs[0])


@symbolic("aten::_onnx_index_put")
def onnx_index_put(g, x, tensors, value, key):
    """``x[idx] = value`` with one tensor in ``idx``: a mask over the leading dimensions or
    indices along the first (ScatterND at those places, ``value`` broadcast)."""
    from ember.onnx._patches import index_template
    idx = index_template(sv(key))
    k = idx.index(_HOLE)
    (i,) = tensors_of(tensors)
    if any(not (isinstance(p, slice) and p == slice(None)) for j, p in enumerate(idx) if j != k) \
            or k != 0:
        raise SymbolicValueError("assignment through a tensor index is exported for a mask or "
                                 "indices along the first dimension only")
    dt = dtype_of(x.example)
    xin = g.input(x)
    if dtype_of(i.example) == ember.bool:
        where = g.op("Transpose", g.op("NonZero", g.input(i)), perm=[1, 0])
    else:
        where = g.op("Unsqueeze", g.input(i, ember.int64), g.const([-1]))
    picked = g.op("GatherND", xin, where)
    updates = g.op("Expand", cast_to(g, value, dt), g.op("Shape", picked))
    return g.op("ScatterND", xin, where, updates)


def _scatter(g, x, dim, index, src, reduction=None):
    dt = dtype_of(x.example)
    d = axis(int(sv(dim)), rank(x))
    ix = g.input(index, ember.int64)
    if not isinstance(src.example, ember.Tensor) or src.example.dim() == 0:
        src = g.op("Expand", cast_to(g, src, dt), g.op("Shape", ix))
    else:
        src = cast_to(g, src, dt)
    return g.op("ScatterElements", g.input(x), ix, src, axis=d, reduction=reduction)


@symbolic("aten::scatter", opset=16)
def scatter(g, x, dim, index, src, reduce=None):
    mode = None if reduce is None or sv(reduce) is None else sv(reduce)
    names = {None: None, "add": "add", "multiply": "mul", "sum": "add", "prod": "mul"}
    if mode not in names:
        raise SymbolicValueError(f"aten::scatter with reduce={mode!r}")
    return _scatter(g, x, dim, index, src, names[mode])


@symbolic("aten::scatter_add", opset=16)
def scatter_add(g, x, dim, index, src):
    return _scatter(g, x, dim, index, src, "add")


def _along(g, x, dim, index, source):
    """``index`` (n,) along ``dim`` as ScatterElements indices shaped like ``source``."""
    d = axis(int(sv(dim)), rank(x))
    shape = [1] * rank(source)
    shape[d] = -1
    ix = g.op("Reshape", g.input(index, ember.int64), g.const(shape))
    return d, g.op("Expand", ix, g.op("Shape", g.input(source)))


@symbolic("aten::index_add", opset=16)
def index_add(g, x, dim, index, source, alpha=1):
    dt = dtype_of(x.example)
    d, ix = _along(g, x, dim, index, source)
    src = cast_to(g, source, dt)
    if alpha is not None and sv(alpha) != 1:
        src = g.op("Mul", src, g.const(sv(alpha), dt))
    return g.op("ScatterElements", g.input(x), ix, src, axis=d, reduction="add")


@symbolic("aten::index_copy")
def index_copy(g, x, dim, index, source):
    d, ix = _along(g, x, dim, index, source)
    return g.op("ScatterElements", g.input(x), ix, cast_to(g, source, dtype_of(x.example)),
                axis=d)


@symbolic("aten::nonzero")
def nonzero(g, x):
    return g.op("Transpose", g.op("NonZero", g.input(x)), perm=[1, 0])


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
    items = tensors_of(tensors)
    dts = [dtype_of(t.example) for t in items]
    shape = None
    for t in items:         # Shape(a + b + ...) broadcasts like the inputs do
        z = g.op("Mul", g.input(t), g.const(0, dtype_of(t.example)))
        z = g.op("Cast", z, to=onnx_type(ember.float32)) if dtype_of(t.example) != \
            ember.float32 else z
        shape = z if shape is None else g.op("Add", shape, z)
    full = g.op("Shape", shape)
    return V(items=[g.op("Expand", g.input(t), full) for t, _ in zip(items, dts)])


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
