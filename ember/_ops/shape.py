"""Shape, view, joining and index op records (kernels in ``ember/_kernels/shape.py``).

Views (narrow, select, unfold, diagonal, unbind, split, chunk, movedim, t, as_strided,
view(dtype) ...) are declared by the schema's alias annotation and their kernels return NumPy
views, so memory is shared exactly as in torch. Backward rules are written in ember ops (so
they are differentiable again); index constants built inside a rule are wrapped NumPy
arrays. Advanced indexing (``x[idx]``, ``x[idx] = v``) lives in
``ember/_ops/advanced_indexing.py`` on top of the ``index.Tensor`` / ``index_put`` records
defined here.
"""
from __future__ import annotations

import warnings

import numpy as np

from ember import _dtype
from ember._dispatch import dispatch, check_int_list, all_ints, _call_keywords
from ember._kernels import shape as K
from ember._kernels.util import wrap_dim
from ember._meta_tensor import Placeholder
from ember._ops import core as C
from ember._ops.registry import defop, OpDef, register, public, _varargs
from ember._tensor import Tensor, Size, _make

_SL = slice(None)


def _call(op, *args, out=None):
    """Call a record with its full positional argument tuple."""
    return dispatch(op, args, out)


def _const(arr):
    """A NumPy array as a constant ember tensor (index tensors inside backward rules)."""
    return _make(np.asarray(arr))


def _zeros(g, shape):
    return g.new_zeros(tuple(shape))


def _grads(g):
    return list(g) if isinstance(g, (tuple, list)) else [g]


def _prod(shape):
    n = 1
    for s in shape:
        n *= s
    return n


def _int(v):
    return int(v.item()) if isinstance(v, Tensor) else int(v)


# ===================================================================== views

narrow = defop("narrow(Tensor(a) self, int dim, SymInt start, SymInt length) -> Tensor(a)",
               K.narrow, promote=None, grad_name="SliceBackward0")
narrow_copy = defop("narrow_copy(Tensor self, int dim, SymInt start, SymInt length) -> Tensor",
                    K.narrow_copy, promote=None)


def _narrow_index(shape, dim, start, length):
    d = wrap_dim(dim, len(shape))
    st = _int(start)
    if st < 0:
        st += shape[d]
    return (_SL,) * d + (slice(st, st + _int(length)),)


@narrow.def_backward
def _(ctx, g, self, dim, start, length):
    shape = ctx.shapes[0]
    return C.basic_index_backward(g, shape, _narrow_index(shape, dim, start, length))


narrow_copy.def_backward(narrow.backward)

select = defop("select.int(Tensor(a) self, int dim, SymInt index) -> Tensor(a)", K.select,
               promote=None)


@select.def_backward
def _(ctx, g, self, dim, index):
    shape = ctx.shapes[0]
    d = wrap_dim(dim, len(shape))
    i = _int(index)
    return C.basic_index_backward(g, shape, (_SL,) * d + (i + shape[d] if i < 0 else i,))


unfold = defop("unfold(Tensor(a) self, int dimension, int size, int step) -> Tensor(a)",
               K.unfold, function=False, promote=None)


@unfold.def_backward
def _(ctx, g, self, dimension, size, step):
    shape = ctx.shapes[0]
    if len(shape) == 0:
        return g.sum() if size else _zeros(g, ())
    d = wrap_dim(dimension, len(shape))
    cnt = (shape[d] - size) // step + 1
    idx = (np.arange(cnt)[:, None] * step + np.arange(size)).reshape(-1)
    gm = g.movedim(-1, d + 1).flatten(d, d + 1)
    return _zeros(g, shape).index_add(d, _const(idx), gm)


diagonal = defop("diagonal(Tensor(a) self, int offset=0, int dim1=0, int dim2=1) -> Tensor(a)",
                 K.diagonal, promote=None)


@diagonal.def_backward
def _(ctx, g, self, offset, dim1, dim2):
    return _call(diagonal_scatter, _zeros(g, ctx.shapes[0]), g, offset, dim1, dim2)


unbind = defop("unbind.int(Tensor(a) self, int dim=0) -> Tensor(a)[]", K.unbind, promote=None)


@unbind.def_backward
def _(ctx, g, self, dim):
    return _call(stack, _grads(g), dim)


split_op = OpDef("split.Tensor(Tensor(a) self, SymInt split_size, int dim=0) -> Tensor(a)[]",
                 K.split, promote=None)
split_with_sizes = defop("split_with_sizes(Tensor(a) self, SymInt[] split_sizes, int dim=0) -> "
                         "Tensor(a)[]", K.split_with_sizes, promote=None)
tensor_split_sections = OpDef("tensor_split.sections(Tensor(a) self, SymInt sections, "
                              "int dim=0) -> Tensor(a)[]", K.tensor_split_sections,
                              promote=None, grad_name="SliceBackward0")
tensor_split_indices = OpDef("tensor_split.indices(Tensor(a) self, SymInt[] indices, "
                             "int dim=0) -> Tensor(a)[]", K.tensor_split_indices,
                             promote=None, grad_name="SliceBackward0")
chunk = defop("chunk(Tensor(a) self, int chunks, int dim=0) -> Tensor(a)[]", K.chunk,
              promote=None, grad_name="SplitBackward0")


def _split_backward(ctx, g, self, _arg, dim):
    return _call(cat, _grads(g), dim)


for _op in (split_op, split_with_sizes, tensor_split_sections, chunk):
    _op.def_backward(_split_backward)


@tensor_split_indices.def_backward
def _(ctx, g, self, indices, dim):
    shape = ctx.shapes[0]
    d = wrap_dim(dim, len(shape))
    bounds = K.tensor_split_bounds(shape[d], indices)
    pos = np.concatenate([np.arange(s, e) for s, e in bounds]).astype(np.int64)
    gs = _grads(g)
    return _zeros(gs[0], shape).index_add(d, _const(pos), _call(cat, gs, d))


@public("split", method=True)
def split(tensor, split_size_or_sections, dim=0):
    """Split into chunks of ``split_size`` (int) or of the given sizes (list)."""
    if isinstance(split_size_or_sections, (list, tuple, Size)):
        sizes = check_int_list("split_with_sizes", "split_sizes", tuple(split_size_or_sections),
                               2)       # (torch's split passes them on as the 2nd argument)
        return tuple(_call(split_with_sizes, tensor, sizes, dim))
    if not hasattr(type(split_size_or_sections), "__index__"):
        from ember._legacy import type_name
        raise TypeError(f"split_with_sizes(): argument 'split_sizes' (position 2) must be tuple "
                        f"of ints, not {type_name(type(split_size_or_sections))}")
    return tuple(_call(split_op, tensor, split_size_or_sections, dim))


def _split_with_sizes_front(self, split_sizes, dim=0):
    sizes = check_int_list("split_with_sizes", "split_sizes", tuple(split_sizes))
    return tuple(_call(split_with_sizes, self, sizes, dim))


public("split_with_sizes", method=True)(_split_with_sizes_front)


@public("tensor_split", method=True)
def tensor_split(input, indices_or_sections, dim=0):
    """Split into ``sections`` near-equal parts, or at the given indices."""
    ios = indices_or_sections
    if isinstance(ios, Tensor):
        if ios.dtype.is_floating_point or ios.dtype.is_complex or ios.dtype == _dtype.bool:
            raise RuntimeError(f"tensor_split expected tensor_indices_or_sections to have "
                               f"integer dtype, but got {ios.dtype}")
        if ios.ndim > 1:
            raise RuntimeError(f"tensor_split expected tensor_indices_or_sections to be a "
                               f"zero-dimensional or one-dimensional tensor, but got a tensor "
                               f"with {ios.ndim} dims")
        ios = int(ios.item()) if ios.ndim == 0 else tuple(ios.tolist())
    if isinstance(ios, (list, tuple, Size)):
        if ios and not _int_first(ios[0]):
            from ember._ops.parser_errors import hand_written
            err = hand_written("tensor_split", input, [("indices", indices_or_sections)])
            if err is not None:
                raise err
        ios = check_int_list("tensor_split", "indices", tuple(ios))
        return tuple(_call(tensor_split_indices, input, ios, dim))
    return tuple(_call(tensor_split_sections, input, ios, dim))


from ember._ops.parser_errors import int_argument, tensor_argument  # noqa: E402

@public("chunk", method=True)
def _chunk_front(input, chunks, dim=0):
    if type(chunks) is not int or type(dim) is not int:      # torch's parser texts
        int_argument("chunk", "chunks", 1, chunks)
        int_argument("chunk", "dim", 2, dim)
    return tuple(_call(chunk, input, chunks, dim))


@public("unbind", method=True, numpy_names=True)
def _unbind_front(input, dim=0):
    if type(dim) is not int:
        int_argument("unbind", "dim", 1, dim)
    return tuple(_call(unbind, input, dim))


movedim_op = OpDef("movedim.intlist(Tensor(a) self, int[] source, int[] destination) -> "
                   "Tensor(a)", K.movedim, promote=None, grad_name="PermuteBackward0")


@movedim_op.def_backward
def _(ctx, g, self, source, destination):
    return _call(movedim_op, g, destination, source)


def _as_dims(v, fname, name):
    return (v,) if isinstance(v, int) else check_int_list(fname, name, tuple(v))


def _dims_refused(*vs):
    """Is one of ``vs`` neither an int nor a list torch's parser takes by its first element
    (movedim's overload TypeError)?"""
    return any(not (type(v) is int or isinstance(v, (tuple, list)) and (
        not v or _int_first(v[0]))) for v in vs)


@public("movedim", method=True)
def movedim(input, source, destination):
    """Move dims ``source`` to positions ``destination`` (ints or sequences)."""
    if _dims_refused(source, destination):
        from ember._ops.parser_errors import hand_written
        err = hand_written("movedim", input, [("source", source), ("destination", destination)])
        if err is not None:
            raise err
    return _call(movedim_op, input, _as_dims(source, "movedim", "source"),
                 _as_dims(destination, "movedim", "destination"))


@public("moveaxis", method=True)
def moveaxis(input, source, destination):
    if _dims_refused(source, destination):
        from ember._ops.parser_errors import hand_written
        err = hand_written("moveaxis", input, [("source", source), ("destination", destination)])
        if err is not None:
            raise err
    return _call(movedim_op, input, _as_dims(source, "moveaxis", "source"),
                 _as_dims(destination, "moveaxis", "destination"))


@public("swapaxes", method=True)
def swapaxes(input, axis0, axis1):
    return _call(C.transpose, input, axis0, axis1)


@public("swapdims", method=True)
def swapdims(input, dim0, dim1):
    return _call(C.transpose, input, dim0, dim1)


t = defop("t(Tensor(a) self) -> Tensor(a)", K.t, promote=None, grad_name="TBackward0")


@t.def_backward
def _(ctx, g, self):
    return _call(t, g)


view_dtype = OpDef("view.dtype(Tensor(a) self, ScalarType dtype) -> Tensor(a)", K.view_dtype,
                   promote=None, differentiable=False)
view_dtype.autograd_view = False           # torch: x.view(dtype)._base is None


@public("view", method=True, function=False)
def view(self, *shape, dtype=None, size=None, **_kw):
    """``view(*shape)``: same data, new shape; ``view(dtype)``: same bytes, new dtype."""
    if _kw:
        _view_keywords(shape, dtype, size, _kw)
    if dtype is None and len(shape) == 1 and isinstance(shape[0], _dtype.dtype):
        dtype = shape[0]
    elif dtype is not None and shape:
        _view_keywords(shape, dtype, size, _kw)
    if dtype is not None:
        if size is not None:
            _view_keywords(shape, dtype, size, _kw)
        return _call(view_dtype, self, _dtype.to_dtype(dtype))
    if size is not None:
        if shape:
            _view_keywords(shape, dtype, size, _kw)
        shape = (size,)
    if len(shape) != 1 or not isinstance(shape[0], (int, tuple, list, Tensor)) or \
            isinstance(shape[0], (tuple, list)) and not all(type(e) is int for e in shape[0]):
        # torch's parser matches a list by its first element (Note [int lists])
        # (an int first: no refusal here, and the common ``view(4, 4)`` tests only that)
        if not shape or type(shape[0]) is not int and (
                len(shape) == 1 and not isinstance(shape[0], Tensor) and not (
                    isinstance(shape[0], (tuple, list)) and shape[0] and
                    _int_first(shape[0][0])) or len(shape) > 1 and not _int_first(shape[0])):
            from ember._ops.parser_errors import hand_written    # torch's overload text
            err = hand_written("view", self, [("size", s) for s in shape])
            if err is not None:
                raise err
    return _call(C.view, self, check_int_list("view", "size", _varargs(shape)))


def _int_first(e):
    """May ``e`` begin an int list for torch's parser (an int, or an integer one-element
    tensor; not a bool)?"""
    if isinstance(e, Tensor):
        return e._data.size == 1 and e._data.dtype.kind in "iu"
    return hasattr(type(e), "__index__") and not isinstance(e, (bool, np.bool_))


def _view_keywords(shape, dtype, size, kw):
    """torch's overload TypeError for ``view`` given an unknown keyword or keywords no form
    takes together (``x.view(4, 4, dtype=...)``, Note [unknown keywords])."""
    from ember._ops.parser_errors import method_keywords
    given = {k: v for k, v in (("dtype", dtype), ("size", size)) if v is not None}
    given.update(kw)
    raise method_keywords("view", shape, given) from None


# ---------------------------------------------------------------- as_strided

as_strided_op = OpDef("as_strided(Tensor(a) self, SymInt[] size, SymInt[] stride, "
                      "SymInt? storage_offset=None, Any geom=None) -> Tensor(a)",
                      K.as_strided, promote=None)


def _geom(t):
    """(byte offset of ``t`` in its storage, storage bytes, byte strides of ``t``)."""
    b = t._storage_base
    root = t if b is None else b
    a, r = t._data, root._data
    if type(a) is Placeholder:          # meta: the storage its strides describe
        from ember._meta_tensor import strides_of
        span = sum((n - 1) * s for n, s in zip(r.shape, strides_of(r)))
        nb = 0 if r.size == 0 else (r.meta_offset + 1 + span) * r.itemsize
        return (a.meta_offset * a.itemsize, nb, tuple(a.strides))
    return (K.address(a) - K.address(r), K.extent_bytes(r), tuple(a.strides))


@public("as_strided", method=True)
def as_strided(input, size, stride, storage_offset=None):
    """A view of ``input``'s storage with the given sizes, strides (in elements) and storage
    offset (from the start of the storage; default: ``input``'s own)."""
    if type(size) is not tuple or type(stride) is not tuple or not all_ints(size) or \
            not all_ints(stride):       # (torch's positions: the method's count no input)
        import sys
        from ember._dispatch import user_position
        f = sys._getframe()
        method = _call_keywords(f.f_back)[0] == (2 if storage_offset is None else 3)
        for name, v in (("size", size), ("stride", stride)):
            at = user_position(f, name)
            check_int_list("as_strided", name, tuple(v),
                           at - method if isinstance(at, int) else at)
    return _call(as_strided_op, input, check_int_list("as_strided", "size", tuple(size)),
                 check_int_list("as_strided", "stride", tuple(stride)), storage_offset,
                 _geom(input))


def _positions(shape, strides, offset):
    pos = np.full(tuple(shape), offset, np.int64)
    nd = len(shape)
    for k in range(nd):
        r = [1] * nd
        r[k] = shape[k]
        pos = pos + np.arange(shape[k], dtype=np.int64).reshape(r) * strides[k]
    return pos


@as_strided_op.def_backward
def _(ctx, g, self, size, stride, storage_offset, geom):
    shape = ctx.shapes[0]
    item = np.dtype(ctx.dtypes[0]).itemsize
    if geom is None:
        in_off = 0
        in_st = [s // item for s in np.empty(shape, np.dtype(ctx.dtypes[0])).strides]
    else:
        in_off = geom[0] // item
        in_st = [s // item for s in geom[2]]
    out_off = in_off if storage_offset is None else _int(storage_offset)
    out_pos = _positions(tuple(size), tuple(stride), out_off)
    in_pos = _positions(shape, in_st, in_off)
    n = int(max(out_pos.max(initial=0), in_pos.max(initial=0))) + 1
    flat = _zeros(g, (n,)).index_add(0, _const(out_pos.reshape(-1)), g.reshape(-1))
    res = flat.take(_const(in_pos))
    cnt = np.bincount(in_pos.reshape(-1), minlength=n)[in_pos]
    if (cnt > 1).any():
        res = res / _const(cnt.astype(np.float64))
    return res


# ---------------------------------------------------------------- view-like fronts

@public("contiguous", method=True, function=False)
def contiguous(self, memory_format=None):
    """``self`` when already contiguous, else a contiguous copy."""
    if memory_format is not None and self.is_contiguous(memory_format) or \
            memory_format is None and self.is_contiguous():
        return self
    return _call(C.clone, self, "contiguous_format" if memory_format is None else memory_format)


@public("view_as", method=True, function=False)
def view_as(self, other):
    if not isinstance(other, Tensor):
        tensor_argument("view_as", "other", 1, other)
    return _call(C.view, self, tuple(other.shape))


@public("reshape_as", method=True, function=False)
def reshape_as(self, other):
    if not isinstance(other, Tensor):
        tensor_argument("reshape_as", "other", 1, other)
    return _call(C.reshape, self, tuple(other.shape))


@public("expand_as", method=True, function=False)
def expand_as(self, other):
    if not isinstance(other, Tensor):
        tensor_argument("expand_as", "other", 1, other)
    return _call(C.expand, self, tuple(other.shape), False)


def _flatten(self, start_dim=0, end_dim=-1):
    nd = self.ndim
    if nd == 0:
        return _call(C.reshape, self, (1,))
    s = wrap_dim(start_dim, nd)
    e = wrap_dim(end_dim, nd)
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    if s == e:
        return self
    shape = tuple(self.shape)
    return _call(C.reshape, self, shape[:s] + (_prod(shape[s:e + 1]),) + shape[e + 1:])


flatten = defop("flatten.using_ints(Tensor(a) self, int start_dim=0, int end_dim=-1) -> "
                "Tensor(a)", composite=_flatten, promote=None)


def _unflatten(self, dim, sizes):
    if self.ndim == 0:
        raise RuntimeError("unflatten got an unexpected error:\nDimension specified as 0 but "
                           "tensor has no dimensions")
    d = wrap_dim(dim, self.ndim)
    sizes = [_int(s) for s in sizes]
    if not sizes:
        raise RuntimeError("unflatten: sizes must be non-empty")
    n = self.shape[d]
    if sizes.count(-1) > 1:
        raise RuntimeError("unflatten got an unexpected error:\nonly one dimension can be "
                           "inferred")
    known = _prod(s for s in sizes if s != -1)
    bad = RuntimeError(f"unflatten: Provided sizes {sizes} don't multiply up to the size of dim "
                       f"{dim} ({n}) in the input tensor")
    if -1 in sizes:
        if known == 0 or n % known:
            raise bad
        sizes[sizes.index(-1)] = n // known
    elif known != n:
        raise bad
    shape = tuple(self.shape)
    return _call(C.view, self, shape[:d] + tuple(sizes) + shape[d + 1:])


unflatten = defop("unflatten.int(Tensor(a) self, int dim, SymInt[] sizes) -> Tensor(a)",
                  composite=_unflatten, promote=None)

def _ravel(self):
    x = self if self.is_contiguous() else _call(C.clone, self, "contiguous_format")
    return _call(C.view, x, (-1,))


ravel = defop("ravel(Tensor(a) self) -> Tensor(a)", composite=_ravel, promote=None)


# ===================================================================== joining

cat = defop("cat(Tensor[] tensors, int dim=0) -> Tensor", K.cat, method=False)


@cat.def_backward
def _(ctx, g, tensors, dim):
    shapes = ctx.shapes[0]
    needs = ctx.needs_input_grad[0]
    kept = [s for s in shapes if not (len(s) == 1 and s[0] == 0)]
    if not kept:
        return ([None] * len(shapes), None)
    d = wrap_dim(dim, len(kept[0]))
    out = []
    pos = 0
    for s, need in zip(shapes, needs):
        if len(s) == 1 and s[0] == 0:
            out.append(None)
            continue
        out.append(_call(narrow, g, d, pos, s[d]) if need else None)
        pos += s[d]
    return (out, None)


def _tensor_list(tensors, name, error=RuntimeError):
    if isinstance(tensors, Tensor):
        raise TypeError(f"{name}(): argument 'tensors' (position 1) must be tuple of Tensors, "
                        f"not Tensor")
    tensors = list(tensors)
    if not tensors:
        raise error("torch.cat(): expected a non-empty list of Tensors" if name == "cat" else
                    f"{name} expects a non-empty TensorList")
    return tensors


@public("cat", numpy_names=True)
def _cat_front(tensors, dim=0, *, out=None):
    """Concatenate tensors along ``dim`` (dtypes promoted; 1-d empty tensors skipped)."""
    if type(dim) is not int:
        int_argument("cat", "dim", 1, dim)
    return _call(cat, _tensor_list(tensors, "cat", ValueError), dim, out=out)


@public("concat", numpy_names=True)
def concat(tensors, dim=0, *, out=None):
    return _cat_front(tensors, dim, out=out)


@public("concatenate")
def concatenate(tensors, axis=0, out=None, *, dim=None):
    return _cat_front(tensors, axis if dim is None else dim, out=out)


stack = defop("stack(Tensor[] tensors, int dim=0) -> Tensor", K.stack, method=False)


@public("stack", numpy_names=True)
def _stack_front(tensors, dim=0, *, out=None):
    """Stack equally shaped tensors along a new dimension ``dim``."""
    if type(dim) is not int:
        int_argument("stack", "dim", 1, dim)
    return _call(stack, _tensor_list(tensors, "stack"), dim, out=out)


# the fronts carry torch's names (``__torch_function__`` handlers read ``func.__name__``)
for _f, _n in ((_cat_front, "cat"), (_stack_front, "stack"), (_chunk_front, "chunk"),
               (_unbind_front, "unbind")):
    _f.__name__ = _f.__qualname__ = _n


@stack.def_backward
def _(ctx, g, tensors, dim):
    d = wrap_dim(dim, len(ctx.shapes[0][0]) + 1)
    return (list(_call(unbind, g, d)), None)


def _atleast(self, n):
    nd = self.ndim
    if nd >= n:
        return self
    if n == 1 or nd == 0:
        return _call(C.reshape, self, (1,) * n)
    if n == 2:                                 # 1-d -> (1, k)
        return _call(C.unsqueeze, self, 0)
    if nd == 1:                                # 3-d from 1-d -> (1, k, 1)
        return _call(C.unsqueeze, _call(C.unsqueeze, self, 0), -1)
    return _call(C.unsqueeze, self, -1)        # 3-d from 2-d -> (m, k, 1)


def _atleast_front(n):
    def fn(*tensors):
        if len(tensors) == 1 and isinstance(tensors[0], Tensor):
            return _atleast(tensors[0], n)
        if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
            tensors = tensors[0]
        return tuple(_atleast(x, n) for x in tensors)
    fn.__name__ = fn.__qualname__ = f"atleast_{n}d"
    fn.__doc__ = f"Views of the inputs with at least {n} dimensions."
    return fn


for _n in (1, 2, 3):
    public(f"atleast_{_n}d")(_atleast_front(_n))


def _stack_family(name, n, dim):
    def fn(tensors):
        if len(tensors) == 0:
            raise RuntimeError(f"{name} expects a non-empty TensorList")
        ts = [_atleast(x, n) for x in tensors]
        d = dim
        if name == "hstack" and ts[0].ndim == 1:
            d = 0
        return _call(cat, ts, d)
    return fn


hstack = defop("hstack(Tensor[] tensors) -> Tensor", composite=_stack_family("hstack", 1, 1),
               method=False)
vstack = defop("vstack(Tensor[] tensors) -> Tensor", composite=_stack_family("vstack", 2, 0),
               method=False)
dstack = defop("dstack(Tensor[] tensors) -> Tensor", composite=_stack_family("dstack", 3, 2),
               method=False)


@public("row_stack")
def row_stack(tensors, *, out=None):
    return _call(vstack, tensors, out=out)


def _column_stack(tensors):
    if len(tensors) == 0:
        raise RuntimeError("column_stack expects a non-empty TensorList")
    ts = [_call(C.reshape, x, (x.numel(), 1)) if x.ndim <= 1 else x for x in tensors]
    return _call(cat, ts, 1)


column_stack = defop("column_stack(Tensor[] tensors) -> Tensor", composite=_column_stack,
                     method=False)

flip = defop("flip(Tensor self, int[] dims) -> Tensor", K.flip, promote=None, varargs="dims")


@flip.def_backward
def _(ctx, g, self, dims):
    return _call(flip, g, dims)


def _fliplr(self):
    if self.ndim < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return _call(flip, self, (1,))


def _flipud(self):
    if self.ndim < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return _call(flip, self, (0,))


fliplr = defop("fliplr(Tensor self) -> Tensor", composite=_fliplr, promote=None, out=False)
flipud = defop("flipud(Tensor self) -> Tensor", composite=_flipud, promote=None, out=False)

roll = defop("roll(Tensor self, SymInt[1] shifts, int[1] dims=[]) -> Tensor", K.roll,
             promote=None)


@roll.def_backward
def _(ctx, g, self, shifts, dims):
    sh = (shifts,) if isinstance(shifts, int) else tuple(shifts)
    return _call(roll, g, tuple(-s for s in sh), dims)


def _rot90(self, k=1, dims=(0, 1)):
    dims = tuple(dims)
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    nd = self.ndim
    if nd < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {nd}")
    d0, d1 = wrap_dim(dims[0], nd), wrap_dim(dims[1], nd)
    if d0 == d1:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {d0} and "
                           f"dim1 = {d1}")
    k %= 4
    if k == 1:
        return _call(C.transpose, _call(flip, self, (d1,)), d0, d1)
    if k == 2:
        return _call(flip, self, (d0, d1))
    if k == 3:
        return _call(C.transpose, _call(flip, self, (d0,)), d0, d1)
    return _call(C.clone, self, None)


rot90 = defop("rot90(Tensor self, int k=1, int[] dims=[0, 1]) -> Tensor", composite=_rot90,
              promote=None, out=False)

repeat = defop("repeat(Tensor self, SymInt[] repeats) -> Tensor", K.repeat, function=False,
               promote=None, varargs="repeats")


@repeat.def_backward
def _(ctx, g, self, repeats):
    shape = ctx.shapes[0]
    reps = tuple(repeats)
    if not reps:
        return g
    padded = (1,) * (len(reps) - len(shape)) + tuple(shape)
    inter = []
    for r, s in zip(reps, padded):
        inter += [r, s]
    gs = _call(C.reshape, g, tuple(inter))
    gs = gs.sum(dim=tuple(range(0, 2 * len(reps), 2)))
    return _call(C.reshape, gs, tuple(shape))


def _tile(self, dims):
    dims = tuple(dims)
    if len(dims) < self.ndim:
        dims = (1,) * (self.ndim - len(dims)) + dims
    return _call(repeat, self, dims)


tile = defop("tile(Tensor self, SymInt[] dims) -> Tensor", composite=_tile, promote=None,
             varargs="dims", out=False)

repeat_interleave_counts = OpDef("repeat_interleave.Tensor(Tensor repeats, *, "
                                 "SymInt? output_size=None) -> Tensor",
                                 K.repeat_interleave_counts, promote=None, differentiable=False)


def _ri_self_tensor(self, repeats, dim=None, output_size=None):
    if dim is None:
        self = _call(C.reshape, self, (-1,))
        d = 0
    else:
        d = wrap_dim(dim, self.ndim)
    n = self.shape[d] if self.ndim else 1
    if repeats.ndim == 0 or repeats.ndim == 1 and repeats.shape[0] == 1:
        reps = repeats._data.reshape(-1)
        reps = np.broadcast_to(reps, (n,))
    elif repeats.ndim == 1:
        if repeats.shape[0] != n:
            raise RuntimeError(f"repeats must have the same size as input along dim, but got "
                               f"repeats.size(0) = {repeats.shape[0]} and input.size({d}) = {n}")
        reps = repeats._data
    else:
        raise RuntimeError("repeats must be 0-dim or 1-dim tensor")
    idx = _call(repeat_interleave_counts, _const(np.ascontiguousarray(reps)), output_size)
    if self.ndim == 0:
        self = _call(C.reshape, self, (1,))
    return _call(index_select, self, d, idx)


def _ri_self_int(self, repeats, dim=None, output_size=None):
    r = _int(repeats)
    if r < 0:
        raise RuntimeError("Repeats must be non-negative")
    return _ri_self_tensor(self, _const(np.asarray(r, np.int64)), dim, output_size)


ri_self_tensor = OpDef("repeat_interleave.self_Tensor(Tensor self, Tensor repeats, int? dim=None, "
                       "*, SymInt? output_size=None) -> Tensor", composite=_ri_self_tensor,
                       promote=None)
ri_self_int = OpDef("repeat_interleave.self_int(Tensor self, SymInt repeats, int? dim=None, *, "
                    "SymInt? output_size=None) -> Tensor", composite=_ri_self_int, promote=None)


@public("repeat_interleave", method=True)
def repeat_interleave(input, repeats=None, dim=None, *, output_size=None):
    """Repeat elements; ``repeat_interleave(repeats)`` alone gives the repeated indices."""
    if repeats is None:
        return _call(repeat_interleave_counts, input, output_size)
    if isinstance(repeats, Tensor):
        return _call(ri_self_tensor, input, repeats, dim, output_size)
    out = _call(ri_self_int, input, repeats, dim, output_size)
    fn = out._grad_fn
    if fn is not None and fn is not getattr(input, "_grad_fn", None):
        from ember.autograd.graph import rename_node
        rename_node(fn, "ViewBackward0")      # torch: an expand folded by a view
    return out


def _broadcast_to(self, size):
    return _call(C.expand, self, tuple(size), False)


broadcast_to = defop("broadcast_to(Tensor(a) self, SymInt[] size) -> Tensor(a)",
                     composite=_broadcast_to, promote=None)


@public("broadcast_shapes")
def broadcast_shapes(*shapes):
    """The shape the given shapes broadcast to (a torch.Size)."""
    result = []
    for i, s in enumerate(shapes):
        s = (s,) if isinstance(s, (int, np.integer)) else tuple(int(x) for x in s)
        for x in s:
            if x < 0:
                raise RuntimeError(f"Trying to create tensor with negative dimension {x}: "
                                   f"{list(s)}")
        n = max(len(result), len(s))
        r = [1] * (n - len(result)) + result
        p = (1,) * (n - len(s)) + s
        for k in reversed(range(n)):             # torch reports the last mismatch
            if p[k] == r[k] or p[k] == 1:
                continue
            if r[k] == 1:
                r[k] = p[k]
                continue
            raise RuntimeError(f"Attempting to broadcast a dimension of length {p[k]} at "
                               f"{k - n}! Mismatching argument at index {i} had {s}; but "
                               f"expected shape should be broadcastable to {r}")
        result = r
    return Size(result)


def _broadcast_tensors(tensors):
    shape = ()
    for x in tensors:
        shape = K._broadcast_or_raise(shape, tuple(x.shape))
    return [x if tuple(x.shape) == shape else _call(C.expand, x, shape, False) for x in tensors]


broadcast_tensors_op = OpDef("broadcast_tensors(Tensor[] tensors) -> Tensor[]",
                             composite=_broadcast_tensors, promote=None)


@public("broadcast_tensors")
def broadcast_tensors(*tensors):
    """Views of the tensors expanded to their common shape."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tensors[0]
    return tuple(_call(broadcast_tensors_op, list(tensors)))


tril = defop("tril(Tensor self, SymInt diagonal=0) -> Tensor", K.tril, promote=None,
             inplace=True)
triu = defop("triu(Tensor self, SymInt diagonal=0) -> Tensor", K.triu, promote=None,
             inplace=True)


@tril.def_backward
def _(ctx, g, self, diagonal):
    return _call(tril, g, diagonal)


@triu.def_backward
def _(ctx, g, self, diagonal):
    return _call(triu, g, diagonal)


diag_embed = defop("diag_embed(Tensor self, int offset=0, int dim1=-2, int dim2=-1) -> Tensor",
                   K.diag_embed, promote=None)


@diag_embed.def_backward
def _(ctx, g, self, offset, dim1, dim2):
    return _call(diagonal, g, offset, dim1, dim2)


def _diag(self, diagonal_=0):
    if self.ndim == 1:
        return _call(diag_embed, self, diagonal_, 0, 1)
    if self.ndim == 2:             # one node, as torch's diagonal_copy: DiagonalBackward0_copy
        from ember.autograd.composite import record_as
        return record_as("DiagonalBackward0_copy", lambda t: _call(
            C.clone, _call(diagonal, t, diagonal_, 0, 1), None), self)
    raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {self.ndim}D")


diag = defop("diag(Tensor self, int diagonal=0) -> Tensor", composite=_diag, promote=None)


def _diagflat(self, offset=0):
    return _call(diag_embed, _call(C.reshape, self, (-1,)), offset, 0, 1)


diagflat = defop("diagflat(Tensor self, int offset=0) -> Tensor", composite=_diagflat,
                 promote=None, out=False)

block_diag_op = OpDef("block_diag(Tensor[] tensors) -> Tensor", K.block_diag)


@block_diag_op.def_backward
def _(ctx, g, tensors):
    out = []
    r = c = 0
    for s, need in zip(ctx.shapes[0], ctx.needs_input_grad[0]):
        m = (1, 1) if len(s) == 0 else (1, s[0]) if len(s) == 1 else s
        if need:
            blk = C.basic_index(g, (slice(r, r + m[0]), slice(c, c + m[1])))
            out.append(_call(C.reshape, blk, tuple(s)))
        else:
            out.append(None)
        r += m[0]
        c += m[1]
    return (out,)


@public("block_diag")
def block_diag(*tensors):
    """A block-diagonal matrix from the given 0-, 1- or 2-d tensors."""
    return _call(block_diag_op, list(tensors))


@public("meshgrid")
def meshgrid(*tensors, indexing=None):
    """Coordinate grids (expanded views) of 0- or 1-d tensors; ``indexing`` 'ij' or 'xy'."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if indexing is None:
        from ember._runtime_flags import warn_once
        warn_once("meshgrid", "torch.meshgrid: in an upcoming release, it will be required to "
                  "pass the indexing argument.")
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise RuntimeError(f'torch.meshgrid: indexing must be one of "xy" or "ij", but received: '
                           f'{indexing}')
    if not tensors:
        raise RuntimeError("meshgrid expects a non-empty TensorList")
    for x in tensors:
        if x.ndim > 1:
            raise RuntimeError(f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list but "
                               f"got: {x}")
    for x in tensors[1:]:
        if x.dtype != tensors[0].dtype:
            raise RuntimeError("meshgrid expects all tensors to have the same dtype")
    ts = list(tensors)
    swap = indexing == "xy" and len(ts) >= 2
    if swap:
        ts[0], ts[1] = ts[1], ts[0]
    shape = tuple(x.numel() for x in ts)
    n = len(ts)
    grids = []
    for k, x in enumerate(ts):
        vs = [1] * n
        vs[k] = -1
        grids.append(_call(C.expand, _call(C.view, x, tuple(vs)), shape, False))
    if swap:
        grids[0], grids[1] = grids[1], grids[0]
    return tuple(grids)


def _cartesian_prod(tensors):
    for x in tensors:
        if x.ndim != 1:
            raise RuntimeError(f"Expect a 1D vector, but got shape {list(x.shape)}")
    if len(tensors) == 1:
        return tensors[0]
    grids = meshgrid(*tensors, indexing="ij")
    return _call(stack, [_call(C.reshape, gr, (-1,)) for gr in grids], 1)


cartesian_prod_op = OpDef("cartesian_prod(Tensor[] tensors) -> Tensor",
                          composite=_cartesian_prod)


@public("cartesian_prod")
def cartesian_prod(*tensors):
    """The Cartesian product of 1-d tensors, as rows."""
    return _call(cartesian_prod_op, list(tensors))


def _combinations(self, r=2, with_replacement=False):
    if self.ndim != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(self.shape)}")
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return self.new_zeros((0,))
    n = self.shape[0]
    grid = np.indices((n,) * r).reshape(r, -1)
    if r > 1:
        steps = grid[1:] >= grid[:-1] if with_replacement else grid[1:] > grid[:-1]
        grid = grid[:, steps.all(axis=0)]
    cols = [_call(index_select, self, 0, _const(np.ascontiguousarray(grid[k])))
            for k in range(r)]
    return _call(stack, cols, 1)


combinations = defop("combinations(Tensor self, int r=2, bool with_replacement=False) -> Tensor",
                     composite=_combinations, promote=None, out=False, method=False)

tril_indices_op = OpDef("tril_indices(int row, int col, int offset=0, *, ScalarType? dtype=None) "
                        "-> Tensor", K.tril_indices, promote=None)
triu_indices_op = OpDef("triu_indices(int row, int col, int offset=0, *, ScalarType? dtype=None) "
                        "-> Tensor", K.triu_indices, promote=None)


@public("tril_indices")
def tril_indices(row, col, offset=0, *, dtype=None, device=None, layout=None, pin_memory=False):
    """Coordinates (2 x N) of the lower triangle of a row x col matrix."""
    return _call(tril_indices_op, row, col, offset,
                 _dtype.int64 if dtype is None else _dtype.to_dtype(dtype))


@public("triu_indices")
def triu_indices(row, col, offset=0, *, dtype=None, device=None, layout=None, pin_memory=False):
    """Coordinates (2 x N) of the upper triangle of a row x col matrix."""
    return _call(triu_indices_op, row, col, offset,
                 _dtype.int64 if dtype is None else _dtype.to_dtype(dtype))


# ===================================================================== index ops

gather = defop("gather(Tensor self, int dim, Tensor index, *, bool sparse_grad=False) -> Tensor",
               K.gather, promote=None, saves=("index",))


@gather.def_backward
def _(ctx, g, self, dim, index, sparse_grad):
    if index.numel() == 0:      # nothing gathered (any index dtype is accepted then)
        z = _zeros(g, ctx.shapes[0])
        # under create_graph torch's zeros are a function of the (empty) gradient
        return z + g.sum() if g.requires_grad else z
    return _call(scatter_add, _zeros(g, ctx.shapes[0]), dim, index, g)


scatter_src = OpDef("scatter.src(Tensor self, int dim, Tensor index, Tensor src, *, "
                    "str? reduce=None) -> Tensor", K.scatter, promote=None, saves=("index",))
scatter_value = OpDef("scatter.value(Tensor self, int dim, Tensor index, Scalar value, *, "
                      "str? reduce=None) -> Tensor", K.scatter, promote=None, saves=("index",),
                      grad_name="ScatterBackward1")
register(scatter_src, function=False, method=False, inplace=True)
register(scatter_value, function=False, method=False, inplace=True)


def _no_reduce_grad(reduce):
    if reduce is not None:
        raise RuntimeError("derivative for aten::scatter is not implemented")


@scatter_src.def_backward
def _(ctx, g, self, dim, index, src, reduce):
    _no_reduce_grad(reduce)
    n = ctx.needs_input_grad
    return (_call(scatter_value, g, dim, index, 0, None) if n[0] else None, None, None,
            _call(gather, g, dim, index, False) if n[3] else None)


@scatter_value.def_backward
def _(ctx, g, self, dim, index, value, reduce):
    _no_reduce_grad(reduce)
    return _call(scatter_value, g, dim, index, 0, None)


def _scatter_pick(src, value):
    if src is not None and value is not None:
        raise TypeError("scatter() received an invalid combination of arguments: both src and "
                        "value given")
    v = src if src is not None else value
    return v


@public("scatter", method=True)
def scatter(input, dim, index, src=None, value=None, *, reduce=None, out=None):
    """Write ``src`` (a tensor) or ``value`` (a number) at ``index`` along ``dim``."""
    v = _scatter_pick(src, value)
    op = scatter_src if isinstance(v, Tensor) else scatter_value
    return _call(op, input, dim, index, v, reduce, out=out)


@public("scatter_", method=True, function=False)
def scatter_(self, dim, index, src=None, value=None, *, reduce=None):
    v = _scatter_pick(src, value)
    op = scatter_src if isinstance(v, Tensor) else scatter_value
    return _call(op.inplace_variant, self, dim, index, v, reduce)


scatter_add = defop("scatter_add(Tensor self, int dim, Tensor index, Tensor src) -> Tensor",
                    K.scatter_add, promote=None, inplace=True, saves=("index",))


@scatter_add.def_backward
def _(ctx, g, self, dim, index, src):
    n = ctx.needs_input_grad
    return g, None, None, (_call(gather, g, dim, index, False) if n[3] else None)


scatter_reduce = defop("scatter_reduce.two(Tensor self, int dim, Tensor index, Tensor src, "
                       "str reduce, *, bool include_self=True) -> Tensor", K.scatter_reduce,
                       promote=None, inplace=True, saves=("self", "index", "src", "result"))


def _scatter_reduce_grads(ctx, g, self, dim, index, src, reduce, include_self):
    """torch's scatter_reduce_backward: gradients w.r.t. ``self`` and ``src``."""
    if reduce not in ("sum", "prod", "mean", "amax", "amin"):   # (the forward takes max/min)
        raise RuntimeError(f"Expected 'reduce' to be one of 'sum', 'prod', 'mean', 'amax', "
                           f"'amin' but got {reduce}.")
    result = ctx.result
    where = C.where_self
    if reduce == "sum":
        gs, gsrc = g, _call(gather, g, dim, index, False)
    elif reduce == "mean":
        cnt = np.ones(self.shape) if include_self else np.zeros(self.shape)
        cnt = K.scatter_add(cnt, dim, index._data, np.ones(src.shape))
        cnt[cnt == 0] = 1
        gn = g / _const(cnt.astype(g._data.real.dtype))
        gs, gsrc = gn, _call(gather, gn, dim, index, False)
    elif reduce == "prod":
        self_zero = _const(self._data == 0)
        masked_self = _call(masked_fill, self, self_zero, 1)
        masked_self_result = _call(scatter_reduce, masked_self, dim, index, src, reduce,
                                   include_self)
        gs = g * masked_self_result / masked_self
        src_zero = src._data == 0
        nz = K.scatter_add(np.zeros(self.shape), dim, index._data, src_zero.astype(np.float64))
        nz = K.gather(nz, dim, index._data)
        single = _const(src_zero & (nz == 1))
        masked_src = _call(masked_fill, src, single, 1)
        masked_src_result = _call(scatter_reduce, self, dim, index, masked_src, reduce,
                                  include_self)
        a = _call(gather, g * masked_src_result, dim, index, False)
        b = _call(gather, g * result, dim, index, False) / \
            _call(masked_fill, src, _const(src_zero), 1)
        gsrc = where(single, a, b)
    else:                                      # amax / amin: split among the ties
        value = _call(gather, result, dim, index, False)
        self_is = (self._data == result._data).astype(g._data.dtype)
        src_is = (src._data == value._data).astype(g._data.dtype)
        cnt = K.scatter_add(self_is, dim, index._data, src_is)
        gd = g / _const(cnt)
        gs = gd * _const(self_is)
        gsrc = _call(gather, gd, dim, index, False) * _const(src_is)
    if not include_self:
        gs = _call(scatter_value, gs, dim, index, 0, None)
    return gs, gsrc


@scatter_reduce.def_backward
def _(ctx, g, self, dim, index, src, reduce, include_self):
    gs, gsrc = _scatter_reduce_grads(ctx, g, self, dim, index, src, reduce, include_self)
    n = ctx.needs_input_grad
    return (gs if n[0] else None, None, None, gsrc if n[3] else None, None, None)


index_select = defop("index_select(Tensor self, int dim, Tensor index) -> Tensor",
                     K.index_select, promote=None, saves=("index",))


@index_select.def_backward
def _(ctx, g, self, dim, index):
    return _call(index_add, _zeros(g, ctx.shapes[0]), dim, index, g, 1)


index_add = defop("index_add(Tensor self, int dim, Tensor index, Tensor source, *, "
                  "Scalar alpha=1) -> Tensor", K.index_add, promote=None, inplace=True,
                  saves=("index",))


@index_add.def_backward
def _(ctx, g, self, dim, index, source, alpha):
    n = ctx.needs_input_grad
    gsrc = None
    if n[3]:
        if len(ctx.shapes[3]) == 0:
            gsrc = _call(index_select, g.reshape(-1), 0, index).reshape(())
        else:
            gsrc = _call(index_select, g, dim, index)
        if alpha != 1:
            gsrc = gsrc * alpha
    return g, None, None, gsrc, None


index_copy = defop("index_copy(Tensor self, int dim, Tensor index, Tensor source) -> Tensor",
                   K.index_copy, promote=None, inplace=True, saves=("index",))


@index_copy.def_backward
def _(ctx, g, self, dim, index, source):
    n = ctx.needs_input_grad
    gs = _call(index_fill, g, dim, index, 0) if n[0] else None
    gsrc = None
    if n[3]:
        gsrc = _call(index_select, g.reshape(-1) if g.ndim == 0 else g, dim, index)
        gsrc = gsrc.reshape(ctx.shapes[3])
    return gs, None, None, gsrc


index_fill = defop("index_fill.int_Tensor(Tensor self, int dim, Tensor index, Tensor value) -> "
                   "Tensor", K.index_fill, promote=None, inplace=True, saves=("index",))


@index_fill.def_backward
def _(ctx, g, self, dim, index, value):
    n = ctx.needs_input_grad
    gs = _call(index_fill, g, dim, index, 0) if n[0] else None
    gv = None
    if n[3]:
        gg = g.reshape(-1) if g.ndim == 0 else g
        idx = index.reshape(-1)
        d = wrap_dim(dim, gg.ndim)
        # each filled position once, however often the index repeats it (torch)
        wrapped = _const(np.unique(np.where(idx._data < 0, idx._data + gg.shape[d],
                                            idx._data)))
        gv = _call(index_select, gg, d, wrapped).sum()
    return gs, None, None, gv


index_op = OpDef("index.Tensor(Tensor self, Any indices) -> Tensor", K.index, promote=None,
                 grad_name="IndexBackward0")
index_backward = OpDef("_index_backward(Tensor grad, int[] shape, Any indices) -> Tensor",
                       K.index_backward, promote=None, grad_name="IndexPutBackward0")


@index_op.def_backward
def _(ctx, g, self, indices):
    return _call(index_backward, g, ctx.shapes[0], indices)


@index_backward.def_backward
def _(ctx, g, grad, shape, indices):
    return _call(index_op, g, indices)


index_put = defop("index_put(Tensor self, Any indices, Tensor values, bool accumulate=False) -> "
                  "Tensor", K.index_put, promote=None, inplace=True)


@index_put.def_backward
def _(ctx, g, self, indices, values, accumulate):
    n = ctx.needs_input_grad
    gs = gv = None
    if n[0]:
        gs = g if accumulate else _call(index_put, g, indices, 0, False)
    if n[2]:
        gv = _call(index_op, g, indices)
        vshape = ctx.shapes[2]
        if len(vshape) > gv.ndim:
            gv = _call(C.reshape, gv, (1,) * (len(vshape) - gv.ndim) + tuple(gv.shape))
    return gs, None, gv, None


_INDEX_REDUCES = ("prod", "mean", "amax", "amin")


def _index_reduce_prep(self, dim, index, source, reduce):
    from ember._runtime_flags import user_stacklevel, warn_once
    warn_once("index_reduce", "index_reduce() is in beta and the API may change at any time.",
              stacklevel=user_stacklevel() + 1)
    if reduce not in _INDEX_REDUCES:
        raise RuntimeError(f"index_reduce(): Expected reduce to be one of prod, mean, amax or "
                           f"amin but got {reduce}.")
    s1 = self if self.ndim else _call(C.reshape, self, (1,))
    src1 = source if source.ndim else _call(C.reshape, source, (1,))
    d = wrap_dim(dim, s1.ndim)
    if index.ndim > 1:
        raise IndexError("index_reduce_(): Index is supposed to be a vector")
    idx = index._data.reshape(-1)
    if idx.dtype.kind not in "iu" or idx.dtype == np.uint8:
        raise RuntimeError("index_reduce_(): Expected dtype int32/int64 for index")
    if source.dtype != self.dtype:
        raise RuntimeError(f"index_reduce_(): self ({K.type_name(self._data.dtype)}) and source "
                           f"({K.type_name(source._data.dtype)}) must have the same scalar type")
    if src1.ndim != s1.ndim or any(src1.shape[k] != s1.shape[k] for k in range(s1.ndim)
                                   if k != d):
        raise RuntimeError(f"source tensor shape must match self tensor shape, excluding the "
                           f"specified dimension. Got self.shape = {list(self.shape)} "
                           f"source.shape = {list(source.shape)}")
    if idx.shape[0] != src1.shape[d]:
        raise RuntimeError(f"index_reduce_(): Number of indices ({idx.shape[0]}) should be equal "
                           f"to source.size(dim): ({src1.shape[d]}), for dim: {d}")
    if idx.size and (idx.min() < 0 or idx.max() >= s1.shape[d]):
        raise IndexError("index out of range in self")
    shp = [1] * s1.ndim
    shp[d] = -1
    full = np.ascontiguousarray(np.broadcast_to(idx.astype(np.int64).reshape(shp), src1.shape))
    return s1, d, _const(full), src1


def _index_reduce(self, dim, index, source, reduce, include_self=True):
    s1, d, full, src1 = _index_reduce_prep(self, dim, index, source, reduce)
    r = _call(scatter_reduce, s1, d, full, src1, reduce, include_self)
    return r if self.ndim else _call(C.reshape, r, ())


index_reduce = defop("index_reduce(Tensor self, int dim, Tensor index, Tensor source, "
                     "str reduce, *, bool include_self=True) -> Tensor", composite=_index_reduce,
                     promote=None)


@public("index_reduce_", method=True, function=False)
def index_reduce_(self, dim, index, source, reduce, *, include_self=True):
    s1, d, full, src1 = _index_reduce_prep(self, dim, index, source, reduce)
    _call(scatter_reduce.inplace_variant, s1, d, full, src1, reduce, include_self)
    return self


masked_fill = defop("masked_fill.Tensor(Tensor self, Tensor mask, Tensor value) -> Tensor",
                    K.masked_fill, promote=None, inplace=True, saves=("mask",))


@masked_fill.def_backward
def _(ctx, g, self, mask, value):
    n = ctx.needs_input_grad
    gs = _call(masked_fill, g, mask, 0) if n[0] else None
    gv = None
    if n[2]:
        gv = C.where_self(mask, g, _zeros(g, ())).sum()
    return gs, None, gv


masked_select = defop("masked_select(Tensor self, Tensor mask) -> Tensor", K.masked_select,
                      promote=None, saves=("mask",))


@masked_select.def_backward
def _(ctx, g, self, mask):
    return _call(masked_scatter, _zeros(g, ctx.shapes[0]), mask, g)


masked_scatter = defop("masked_scatter(Tensor self, Tensor mask, Tensor source) -> Tensor",
                       K.masked_scatter, promote=None, inplace=True, saves=("mask",))


@masked_scatter.def_backward
def _(ctx, g, self, mask, source):
    n = ctx.needs_input_grad
    gs = _call(masked_fill, g, mask, 0) if n[0] else None
    gsrc = None
    if n[2]:
        sshape = ctx.shapes[2]
        shape = np.broadcast_shapes(tuple(g.shape), tuple(mask.shape))
        gm = _call(masked_select, g, mask) if tuple(g.shape) == shape else \
            _call(masked_select, _call(C.expand, g, shape, False), mask)
        total = _prod(sshape)
        if gm.numel() < total:
            gm = _call(cat, [gm, _zeros(g, (total - gm.numel(),))], 0)
        gsrc = _call(C.reshape, gm, tuple(sshape))
    return gs, None, gsrc


take = defop("take(Tensor self, Tensor index) -> Tensor", K.take, promote=None,
             saves=("index",))


@take.def_backward
def _(ctx, g, self, index):
    return _call(put, _zeros(g, ctx.shapes[0]), index, g, True)


def _take_along_dim(self, indices, dim=None):
    if indices.dtype != _dtype.int64:
        raise RuntimeError(f"torch.take_along_dim(): dtype of indices should be Long but got "
                           f"{K.type_name(indices._data.dtype)}")
    if dim is None:
        return _call(gather, _call(C.reshape, self, (-1,)), 0,
                     _call(C.reshape, indices, (-1,)), False)
    if self.ndim != indices.ndim:
        raise RuntimeError(f"torch.take_along_dim(): input and indices should have the same "
                           f"number of dimensions, but got {self.ndim} dimensions for input, and "
                           f"{indices.ndim} dimensions for indices")
    d = wrap_dim(dim, self.ndim)
    if self.shape[d] > 0:
        # torch wraps the indices modulo the size of dim (negative ones count from the end)
        from ember._ops.elementwise import remainder
        indices = _call(remainder, indices, self.shape[d])
    ss = list(self.shape)
    ss[d] = indices.shape[d]
    ishape = K._broadcast_or_raise(tuple(ss), tuple(indices.shape))
    ii = list(indices.shape)
    ii[d] = self.shape[d]
    sshape = K._broadcast_or_raise(tuple(ii), tuple(self.shape))
    sb = self if tuple(self.shape) == sshape else _call(C.expand, self, sshape, False)
    ib = indices if tuple(indices.shape) == ishape else _call(C.expand, indices, ishape, False)
    return _call(gather, sb, d, ib, False)


take_along_dim = defop("take_along_dim(Tensor self, Tensor indices, int? dim=None) -> Tensor",
                       composite=_take_along_dim, promote=None)

put = defop("put(Tensor self, Tensor index, Tensor source, bool accumulate=False) -> Tensor",
            K.put, promote=None, inplace=True,
            nondeterministic=lambda args: not args[3] and "put_",   # duplicate targets race
            saves=("index",))


@put.def_backward
def _(ctx, g, self, index, source, accumulate):
    n = ctx.needs_input_grad
    gs = gsrc = None
    if n[0]:
        gs = g if accumulate else _call(put, g, index, _zeros(g, ctx.shapes[2]), False)
    if n[2]:
        gsrc = _call(C.reshape, _call(take, g, index), tuple(ctx.shapes[2]))
    return gs, None, gsrc, None


nonzero_op = OpDef("nonzero(Tensor self) -> Tensor", K.nonzero, promote=None,
                   differentiable=False)
argwhere = defop("argwhere(Tensor self) -> Tensor", K.nonzero, promote=None, out=False,
                 differentiable=False)


@public("nonzero", method=True)
def nonzero(input, *, out=None, as_tuple=False):
    """Indices of the non-zero elements: an (n, ndim) tensor, or a tuple of 1-d tensors."""
    if not as_tuple:
        return _call(nonzero_op, input, out=out)
    x = input if input.ndim else _call(C.reshape, input, (1,))
    return tuple(_call(unbind, _call(nonzero_op, x), 1))


select_scatter = defop("select_scatter(Tensor self, Tensor src, int dim, SymInt index) -> Tensor",
                       K.select_scatter, promote=None)


@select_scatter.def_backward
def _(ctx, g, self, src, dim, index):
    n = ctx.needs_input_grad
    return (_call(select_scatter, g, _zeros(g, ctx.shapes[1]), dim, index) if n[0] else None,
            _call(select, g, dim, index) if n[1] else None)


slice_scatter = defop("slice_scatter(Tensor self, Tensor src, int dim=0, SymInt? start=None, "
                      "SymInt? end=None, SymInt step=1) -> Tensor", K.slice_scatter,
                      promote=None)


@slice_scatter.def_backward
def _(ctx, g, self, src, dim, start, end, step):
    n = ctx.needs_input_grad
    gs = gsrc = None
    if n[0]:
        gs = _call(slice_scatter, g, _zeros(g, ctx.shapes[1]), dim, start, end, step)
    if n[1]:
        d = wrap_dim(dim, g.ndim)
        gsrc = C.basic_index(g, (_SL,) * d + (slice(start, end, step),))
    return gs, gsrc


diagonal_scatter = defop("diagonal_scatter(Tensor self, Tensor src, int offset=0, int dim1=0, "
                         "int dim2=1) -> Tensor", K.diagonal_scatter, promote=None)


@diagonal_scatter.def_backward
def _(ctx, g, self, src, offset, dim1, dim2):
    n = ctx.needs_input_grad
    return (_call(diagonal_scatter, g, _zeros(g, ctx.shapes[1]), offset, dim1, dim2)
            if n[0] else None,
            _call(diagonal, g, offset, dim1, dim2) if n[1] else None)




@public("fill_diagonal_", method=True, function=False)
def fill_diagonal_(self, fill_value, wrap=False):
    """Write ``fill_value`` on the main diagonal (over all dims, which must then be equal);
    ``wrap``: a tall matrix's diagonal starts again every ``ncols + 1`` rows, as torch's."""
    shape = tuple(self.shape)
    if len(shape) < 2:
        raise RuntimeError("dimensions must larger than 1")
    if len(shape) > 2:
        if len(set(shape)) != 1:
            raise RuntimeError("all dimensions of input must be of equal length")
        self.as_strided((shape[0],), (sum(self.stride()),), self.storage_offset()).fill_(
            fill_value)
        return self
    rows, cols = shape
    starts = range(0, rows, cols + 1) if wrap and rows > cols else (0,)
    for s in starts:
        self[s:s + cols].diagonal().fill_(fill_value)
    return self
