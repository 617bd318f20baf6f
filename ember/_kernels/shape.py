"""Kernels of the shape / view / joining / indexing family (NumPy only).

View kernels (narrow, select, unfold, diagonal, split ...) return NumPy *views* of their
input, never copies: ember's views share memory exactly like torch's. Every other kernel
returns a fresh array. Errors carry torch's exception class and message.
"""
import operator

import numpy as np

from ember import _dtype
from ember._kernels.layout import (c_order, contiguous_result, empty_in_order, stride_order,
                                  suggests_channels_last)
from ember._kernels.util import as_channels_last, check_storage_size, scalar_to, wrap_dim

SL = slice(None)

# torch's scalar type names (as in "Float", "Long") and C++ type names (masked_fill's message)
_TYPE_NAMES = _dtype.TYPE_NAMES
_C_NAMES = {
    "float32": "float", "float64": "double", "float16": "c10::Half", "bfloat16": "c10::BFloat16",
    "int64": "long int", "int32": "int", "int16": "short int", "int8": "signed char",
    "uint8": "unsigned char", "bool": "bool", "complex64": "c10::complex<float>",
    "complex128": "c10::complex<double>",
}


def type_name(dt):
    return _TYPE_NAMES.get(np.dtype(dt).name, str(dt))


def _c_name(dt):
    return _C_NAMES.get(np.dtype(dt).name, str(dt))


def _int(v):
    """An int from an int, a NumPy integer or a one-element integer tensor."""
    if isinstance(v, int):
        return v
    return operator.index(v)


def _ints(seq):
    if isinstance(seq, (int, np.integer)):
        return (int(seq),)
    return tuple(_int(v) for v in seq)


def _dims_unique(dims, ndim):
    out = tuple(wrap_dim(d, ndim) for d in dims)
    seen = set()
    for d in out:
        if d in seen:
            raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
        seen.add(d)
    return out


def _along(d, item):
    """Index tuple selecting ``item`` along dimension ``d`` (keeps 0-d results as views)."""
    return (SL,) * d + (item, Ellipsis)


# ============================================================ storage geometry

def address(a):
    return a.__array_interface__["data"][0]


def extent_bytes(a):
    """Bytes spanned by ``a`` from its first element (torch's storage size of a root)."""
    if a.size == 0:
        return 0
    return a.itemsize + sum((n - 1) * abs(s) for n, s in zip(a.shape, a.strides))


class _Iface:
    """Carrier of an ``__array_interface__`` that keeps the memory's owner alive."""
    __slots__ = ("__array_interface__", "_keep")


def from_address(ptr, shape, strides, dtype, keep, writeable):
    """An ndarray over raw memory at ``ptr`` (owned by ``keep``)."""
    dtype = np.dtype(dtype)
    o = _Iface()
    o.__array_interface__ = {"shape": tuple(shape), "strides": tuple(strides),
                             "typestr": f"|V{dtype.itemsize}", "data": (ptr, not writeable),
                             "version": 3}
    o._keep = keep
    return np.asarray(o).view(dtype)


def _memory_span(a):
    """(start, stop) addresses of the memory block that owns ``a``'s data."""
    x = a
    while True:
        b = x.base
        if isinstance(b, np.ndarray):
            x = b
        elif isinstance(b, _Iface):
            x = b._keep
        else:
            break
    if x.size == 0:
        return address(x), address(x)
    lo = address(x) + sum((n - 1) * s for n, s in zip(x.shape, x.strides) if s < 0)
    return lo, lo + extent_bytes(x)


# ============================================================ views

def narrow(a, dim, start, length):
    if a.ndim == 0:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    d = wrap_dim(dim, a.ndim)
    n = a.shape[d]
    start, length = _int(start), _int(length)
    if not -n <= start <= n:
        raise IndexError(f"start out of range (expected to be in range of [{-n}, {n}], but got "
                         f"{start})")
    if start < 0:
        start += n
    if length < 0:
        raise RuntimeError("narrow(): length must be non-negative.")
    if start + length > n:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({n}).")
    return a[(SL,) * d + (slice(start, start + length),)]


def narrow_copy(a, dim, start, length):
    if dim >= max(a.ndim, 1):           # torch's narrow_copy checks a too-large dim itself
        raise RuntimeError("Expected dim < static_cast<int64_t>(self_sizes.size()) to be true, "
                           "but got false.")
    return np.array(narrow(a, dim, start, length), copy=True)


def select(a, dim, index):
    if a.ndim == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    d = wrap_dim(dim, a.ndim)
    n = a.shape[d]
    index = _int(index)
    if not -n <= index < n:
        raise IndexError(f"select(): index {index} out of range for tensor of size "
                         f"{list(a.shape)} at dimension {d}")
    return a[_along(d, index)]


def unfold(a, dimension, size, step):
    if a.ndim == 0:
        wrap_dim(dimension, 1)          # a 0-d tensor unfolds along dim 0 or -1 only
        d, n = 0, 1
    else:
        d = wrap_dim(dimension, a.ndim)
        n = a.shape[d]
    if size < 0:
        raise RuntimeError(f"size is {size} but must be >= 0")
    if size > n:
        raise RuntimeError(f"maximum size for tensor at dimension {d} is {n} but size is {size}")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    if a.ndim == 0:
        return np.lib.stride_tricks.as_strided(a, (size,), (a.itemsize,))
    cnt = (n - size) // step + 1
    shape = a.shape[:d] + (cnt,) + a.shape[d + 1:] + (size,)
    st = a.strides
    strides = st[:d] + (st[d] * step,) + st[d + 1:] + (st[d],)
    return np.lib.stride_tricks.as_strided(a, shape, strides)


def _diag_geometry(shape, offset, d1, d2):
    n1, n2 = shape[d1], shape[d2]
    if offset >= 0:
        length = max(min(n1, n2 - offset), 0)
    else:
        length = max(min(n1 + offset, n2), 0)
    return length


def diagonal(a, offset=0, dim1=0, dim2=1):
    d1 = wrap_dim(dim1, a.ndim)
    d2 = wrap_dim(dim2, a.ndim)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    length = _diag_geometry(a.shape, offset, d1, d2)
    b = a
    if length > 0 and offset > 0:
        b = a[(SL,) * d2 + (slice(offset, None),)]
    elif length > 0 and offset < 0:
        b = a[(SL,) * d1 + (slice(-offset, None),)]
    keep = [k for k in range(a.ndim) if k not in (d1, d2)]
    shape = tuple(a.shape[k] for k in keep) + (length,)
    strides = tuple(a.strides[k] for k in keep) + (a.strides[d1] + a.strides[d2],)
    return np.lib.stride_tricks.as_strided(b, shape, strides)


def unbind(a, dim=0):
    if a.ndim == 0:
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    d = wrap_dim(dim, a.ndim)
    return tuple(a[_along(d, i)] for i in range(a.shape[d]))


def _pieces(a, d, bounds):
    return tuple(a[(SL,) * d + (slice(s, e),)] for s, e in bounds)


def split(a, split_size, dim=0):
    if a.ndim == 0:
        raise RuntimeError("split expects at least a 1-dimensional tensor")
    d = wrap_dim(dim, a.ndim)
    n = a.shape[d]
    ss = _int(split_size)
    if ss < 0:
        raise RuntimeError(f"split expects split_size be non-negative, but got split_size={ss}")
    if ss == 0 and n != 0:
        raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got dimension "
                           f"size of {n}")
    num = max((n + ss - 1) // ss, 1) if ss else 1
    return _pieces(a, d, [(i * ss, min((i + 1) * ss, n)) for i in range(num)])


def split_with_sizes(a, split_sizes, dim=0):
    if a.ndim == 0:
        raise RuntimeError("split expects at least a 1-dimensional tensor")
    d = wrap_dim(dim, a.ndim)
    n = a.shape[d]
    sizes = _ints(split_sizes)
    if any(s < 0 for s in sizes):
        raise RuntimeError(f"split_with_sizes expects split_sizes have only non-negative entries, "
                           f"but got split_sizes={list(sizes)}")
    if sum(sizes) != n:
        raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {n} (input "
                           f"tensor's size at dimension {d}), but got split_sizes={list(sizes)}")
    return _pieces(a, d, _spans(sizes))


def _spans(sizes):
    """Consecutive (start, stop) pairs of pieces with the given sizes."""
    bounds = np.concatenate([[0], np.cumsum(sizes, dtype=np.int64)]).tolist()
    return list(zip(bounds[:-1], bounds[1:]))


def tensor_split_sections(a, sections, dim=0):
    if a.ndim == 0:
        raise RuntimeError("tensor_split expected at least a 1-dimensional tensor, but got a "
                           "tensor with 0 dims")
    d = wrap_dim(dim, a.ndim)
    s = _int(sections)
    if s <= 0:
        raise RuntimeError(f"number of sections must be larger than 0, got {s}")
    n = a.shape[d]
    q, r = divmod(n, s)
    sizes = [q + 1] * r + [q] * (s - r)
    return _pieces(a, d, _spans(sizes))


def tensor_split_indices(a, indices, dim=0):
    if a.ndim == 0:
        raise RuntimeError("tensor_split expected at least a 1-dimensional tensor, but got a "
                           "tensor with 0 dims")
    d = wrap_dim(dim, a.ndim)
    return _pieces(a, d, tensor_split_bounds(a.shape[d], indices))


def tensor_split_bounds(n, indices):
    """(start, stop) of each piece; pieces may overlap when indices decrease, like torch's."""
    idx = list(_ints(indices))
    out = []
    for s, e in zip([0] + idx, idx + [n]):
        s = min(max(s, 0), n)
        out.append((s, max(min(max(e, 0), n), s)))
    return out


def chunk(a, chunks, dim=0):
    if a.ndim == 0:
        raise RuntimeError("chunk expects at least a 1-dimensional tensor")
    c = _int(chunks)
    if c <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {c}")
    d = wrap_dim(dim, a.ndim)
    n = a.shape[d]
    ss = (n + c - 1) // c
    if ss == 0 and n == 0:
        return _pieces(a, d, [(0, 0)] * c)
    return split(a, ss, d)


def movedim(a, source, destination):
    src = _ints(source)
    dst = _ints(destination)
    nd = a.ndim
    if len(src) != len(dst):
        raise RuntimeError(f"movedim: Invalid source or destination dims: source ({list(src)} "
                           f"dims) should contain the same number of dims as destination "
                           f"({list(dst)} dims)")
    ws = [wrap_dim(s, nd) for s in src]
    wd = [wrap_dim(s, nd) for s in dst]
    if len(set(ws)) != len(ws):
        raise RuntimeError(f"movedim: repeated dim in `source` ({list(src)})")
    if len(set(wd)) != len(wd):
        raise RuntimeError(f"movedim: repeated dim in `destination` ({list(dst)})")
    if nd == 0:
        return a.view()
    return np.moveaxis(a, ws, wd)


def t(a):
    if a.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {a.ndim}D")
    return a.T if a.ndim == 2 else a.view()


def view_dtype(a, dtype):
    nd = np.dtype(dtype.np if hasattr(dtype, "np") else dtype)
    old = a.dtype
    if nd.itemsize == old.itemsize:
        return a.view(nd)
    names = f"{type_name(old)} as {type_name(nd)}"
    if a.ndim == 0:
        raise RuntimeError(f"self.dim() cannot be 0 to view {names} (different element sizes)")
    st_last = a.strides[-1] // old.itemsize
    if st_last != 1 and a.shape[-1] != 1:
        raise RuntimeError(f"self.stride(-1) must be 1 to view {names} (different element "
                           f"sizes), but got {st_last}")
    if nd.itemsize > old.itemsize:
        ratio = nd.itemsize // old.itemsize
        if a.shape[-1] % ratio:
            raise RuntimeError(f"self.size(-1) must be divisible by {ratio} to view {names} "
                               f"(different element sizes), but got {a.shape[-1]}")
        for i in range(a.ndim - 1):
            s = a.strides[i] // old.itemsize
            if s % ratio:
                raise RuntimeError(f"self.stride({i}) must be divisible by {ratio} to view "
                                   f"{names} (different element sizes), but got {s}")
    if a.strides[-1] != old.itemsize:          # a size-1 last dim with any stride
        a = np.lib.stride_tricks.as_strided(a, a.shape, a.strides[:-1] + (old.itemsize,))
    return a.view(nd)


def check_window(size, stride, offset, itemsize, storage_bytes):
    """Torch's checks of an ``as_strided`` window (sizes, strides, element offset) over a
    storage of ``storage_bytes``; returns them as ints, and the bytes the window needs."""
    size = [_int(s) for s in size]
    stride = [_int(s) for s in stride]
    offset = _int(offset)
    if len(size) != len(stride):
        raise RuntimeError("mismatch in length of strides and shape")
    if any(s < 0 for s in size):
        raise RuntimeError(f"Storage size calculation overflowed with sizes={size} and "
                           f"strides={stride}")
    if any(s < 0 for s in stride):
        raise RuntimeError(f"as_strided: Negative strides are not supported at the moment, got "
                           f"strides: {stride}")
    if offset < 0:
        raise RuntimeError(f"Tensor: invalid storage offset {offset}")
    need = 0 if 0 in size else itemsize * (offset + 1 + sum(st * (sz - 1) for st, sz in
                                                            zip(stride, size)))
    if need > storage_bytes:
        raise RuntimeError(f"setStorage: sizes {size}, strides {stride}, storage offset "
                           f"{offset}, and itemsize {itemsize} requiring a storage size of "
                           f"{need} are out of bounds for storage of size {storage_bytes}")
    return size, stride, offset, need


def as_strided(a, size, stride, storage_offset=None, geom=None):
    """View of the storage of ``a``: ``geom`` = (byte offset of ``a`` in its storage, storage
    bytes, byte strides ``a`` had when the view was made); None when ``a`` is a root."""
    item = a.itemsize
    if geom is None:
        self_off_b, storage_nb, exp_strides = 0, extent_bytes(a), a.strides
    else:
        self_off_b, storage_nb, exp_strides = geom
    off = self_off_b // item if storage_offset is None else storage_offset
    size, stride, off, need = check_window(size, stride, off, item, storage_nb)
    from ember._meta_tensor import Placeholder, placeholder
    if type(a) is Placeholder:          # no data: the meta layer gives it its strides
        return placeholder(size, a.dtype)
    bstrides = [s * item for s in stride]
    start = address(a) - self_off_b
    lo, hi = _memory_span(a)
    if tuple(a.strides) == tuple(exp_strides) or a.size <= 1:
        ptr = start + off * item
        if need == 0 or lo <= ptr and ptr + need - off * item <= hi:
            # a window repeating an element (stride 0) is read-only, as an expand: the
            # dispatcher then applies torch's rules for writes into it
            repeats = any(st == 0 and n > 1 for n, st in zip(size, stride))
            return from_address(ptr, size, bstrides, a.dtype, a,
                                a.flags.writeable and not repeats)
    # ``a`` is not laid out as when the view was recorded (a replay on a gradient): rebuild
    # a storage holding ``a`` at its recorded place and view that instead
    buf = np.zeros(max(storage_nb // item, 1), a.dtype)
    place = from_address(address(buf) + self_off_b, a.shape, exp_strides, a.dtype, buf, True)
    place[...] = a
    return from_address(address(buf) + off * item, size, bstrides, a.dtype, buf, True)


# ============================================================ joining

def cat(arrays, dim=0):
    if len(arrays) == 0:
        raise ValueError("torch.cat(): expected a non-empty list of Tensors")
    for i, a in enumerate(arrays):
        if a.ndim == 0:
            raise RuntimeError(f"zero-dimensional tensor (at position {i}) cannot be "
                               f"concatenated")
    keep = [(i, a) for i, a in enumerate(arrays) if not (a.ndim == 1 and a.shape[0] == 0)]
    if not keep:
        wrap_dim(dim, 1)
        return np.empty((0,), arrays[0].dtype)
    _, ref = keep[0]
    nd = ref.ndim
    d = wrap_dim(dim, nd)
    for i, a in keep:
        if a.ndim != nd:
            raise RuntimeError(f"Tensors must have same number of dimensions: got {nd} and "
                               f"{a.ndim}")
        for k in range(nd):
            if k != d and a.shape[k] != ref.shape[k]:
                raise RuntimeError(f"Sizes of tensors must match except in dimension {d}. "
                                   f"Expected size {ref.shape[k]} but got size {a.shape[k]} for "
                                   f"tensor number {i} in the list.")
    r = np.concatenate([a for _, a in keep], axis=d)
    if nd in (4, 5):        # torch: channels-last when every input suggests it, else contiguous
        if all(suggests_channels_last(a) for _, a in keep):
            return as_channels_last(r)
    return c_order(r)          # (NumPy keeps column-major inputs column-major; torch doesn't)


def stack(arrays, dim=0):
    if len(arrays) == 0:
        raise RuntimeError("stack expects a non-empty TensorList")
    s0 = arrays[0].shape
    d = wrap_dim(dim, len(s0) + 1)
    for i, a in enumerate(arrays):
        if a.shape != s0:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got {list(s0)} "
                               f"at entry 0 and {list(a.shape)} at entry {i}")
    r = np.stack(arrays, axis=d)
    return r if r.ndim in (4, 5) else c_order(r)      # (torch: cat of unsqueezed inputs)


def flip(a, dims):
    dims = _dims_unique(_ints(dims), a.ndim)
    if a.ndim == 0 or not dims:
        return a.copy()
    return np.flip(a, dims).copy(order="K")          # the input's layout, as torch's


def roll(a, shifts, dims=()):
    shifts = _ints(shifts)
    dims = _ints(dims) if dims is not None else ()
    if len(shifts) == 0:
        raise RuntimeError("`shifts` required")
    if len(dims) == 0:
        if len(shifts) != 1:
            raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:0")
        return np.roll(a.reshape(-1), shifts[0]).reshape(a.shape)
    if len(shifts) != len(dims):
        raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, "
                           f"dims:{len(dims)}")
    if a.ndim == 0:
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    return np.roll(a, shifts, tuple(wrap_dim(d, a.ndim) for d in dims))


def repeat(a, repeats):
    reps = _ints(repeats)
    if len(reps) < a.ndim:
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number "
                           "of dimensions of tensor")
    shape = (1,) * (len(reps) - a.ndim) + a.shape
    target = [r * s for r, s in zip(reps, shape)]
    for r, tg in zip(reps, target):
        if r < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {tg}: {target}")
    check_storage_size(target, a.itemsize)
    if not reps:
        return a.copy()
    return np.tile(a.reshape(shape), reps)


def repeat_interleave_counts(repeats, output_size=None):
    if repeats.ndim != 1:
        raise RuntimeError("repeat_interleave only accept 1D vector as repeat")
    if repeats.dtype.kind not in "iu":
        raise NotImplementedError(f"\"repeat_interleave_cpu\" not implemented for "
                                  f"'{type_name(repeats.dtype)}'")
    if repeats.size and repeats.min() < 0:
        raise RuntimeError("repeats can not be negative")
    out = np.repeat(np.arange(repeats.shape[0], dtype=repeats.dtype), repeats)
    if output_size is not None and output_size != out.shape[0]:
        raise RuntimeError(f"repeat_interleave: Invalid output_size, expected {out.shape[0]} but "
                           f"got {output_size}")
    return out


@contiguous_result          # contiguous whatever the input's layout, as torch's
def tril(a, diagonal=0):
    if a.ndim < 2:
        raise RuntimeError("tril: input tensor must have at least 2 dimensions")
    return np.tril(a, _int(diagonal)).astype(a.dtype, copy=False)


@contiguous_result          # contiguous whatever the input's layout, as torch's
def triu(a, diagonal=0):
    if a.ndim < 2:
        raise RuntimeError("triu: input tensor must have at least 2 dimensions")
    return np.triu(a, _int(diagonal)).astype(a.dtype, copy=False)


def diag_embed(a, offset=0, dim1=-2, dim2=-1):
    nd = a.ndim + 1
    d1 = wrap_dim(dim1, nd)
    d2 = wrap_dim(dim2, nd)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    n = (a.shape[-1] if a.ndim else 1) + abs(offset)
    rest = list(a.shape[:-1])
    shape = []
    for k in range(nd):
        shape.append(n if k in (d1, d2) else rest.pop(0))
    out = np.zeros(shape, a.dtype)
    diagonal(out, offset, d1, d2)[...] = a
    return out


def block_diag(arrays):
    mats = []
    for i, a in enumerate(arrays):
        if a.ndim > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer dimensions. "
                               f"Input {i} has {a.ndim} dimensions")
        mats.append(a.reshape(1, -1) if a.ndim < 2 else a)
    dt = mats[0].dtype if mats else np.float32
    rows = sum(m.shape[0] for m in mats)
    cols = sum(m.shape[1] for m in mats)
    out = np.zeros((rows if mats else 1, cols), dt)
    r = c = 0
    for m in mats:
        out[r:r + m.shape[0], c:c + m.shape[1]] = m
        r += m.shape[0]
        c += m.shape[1]
    return out


def _tri_indices(row, col, offset, dtype, lower):
    name = "tril_indices" if lower else "triu_indices"
    npd = np.dtype(np.int64) if dtype is None else np.dtype(dtype.np)
    if npd.kind not in "iu":
        raise NotImplementedError(f"\"{name}\" not implemented for '{type_name(npd)}'")
    if row < 0:
        raise RuntimeError(f"row must be non-negative, got{row}")
    if col < 0:
        raise RuntimeError(f"col must be non-negative, got{col}")
    r, c = np.tril_indices(row, offset, col) if lower else np.triu_indices(row, offset, col)
    return np.stack([r, c]).astype(npd)


def tril_indices(row, col, offset=0, dtype=None):
    return _tri_indices(row, col, offset, dtype, True)


def triu_indices(row, col, offset=0, dtype=None):
    return _tri_indices(row, col, offset, dtype, False)


# ============================================================ index ops

def _first_bad(idx, lo, hi):
    bad = (idx < lo) | (idx >= hi)
    return int(idx.reshape(-1)[np.argmax(bad.reshape(-1))])


def _flat_grid(index, d, shape):
    """``_grid`` as positions in a C-contiguous array of ``shape``: one int64 per element of
    ``index`` (1-D), for the 1-D ``ufunc.at`` fast path (14x the advanced-index tuple's
    speed: (10000, 512) rows into (1000, 512), ``maximum.at`` 7.4 vs 101 ms)."""
    strides = [1] * len(shape)
    for k in range(len(shape) - 2, -1, -1):
        strides[k] = strides[k + 1] * shape[k + 1]
    flat = index.astype(np.int64) * strides[d]
    for k in range(index.ndim):
        if k != d and index.shape[k] > 1:
            shp = [1] * index.ndim
            shp[k] = index.shape[k]
            flat += (np.arange(index.shape[k], dtype=np.int64) * strides[k]).reshape(shp)
    return flat.reshape(-1)


def _ufunc_at(ufunc, out, index, d, vals):
    """``ufunc.at(out, _grid(index, d), vals)`` on the flat fast path (``out`` C-contiguous)."""
    vals = np.broadcast_to(np.asarray(vals, out.dtype) if np.ndim(vals) == 0 else vals,
                           index.shape)
    ufunc.at(out.reshape(-1), _flat_grid(index, d, out.shape), vals.reshape(-1))


def _grid(index, d):
    """Advanced index tuple addressing, for every element of ``index``, the position whose
    coordinate along ``d`` is the index value and elsewhere the element's own coordinate."""
    nd = index.ndim
    out = []
    for k in range(nd):
        if k == d:
            out.append(index)
        else:
            shp = [1] * nd
            shp[k] = index.shape[k]
            out.append(np.arange(index.shape[k]).reshape(shp))
    return tuple(out)


def _head(a, shape):
    return a[tuple(slice(0, s) for s in shape)]


def gather(a, dim, index, sparse_grad=False):
    if index.size and (index.dtype.kind not in "iu" or index.dtype == np.uint8 or
                       index.dtype.itemsize < 4):     # torch: an empty index of any dtype is ok
        raise RuntimeError("gather(): Expected dtype int32/int64 for index")
    if index.size == 0:         # torch: only dim is checked; the result has index's shape
        wrap_dim(dim, max(a.ndim, 1))
        return np.empty(index.shape, a.dtype)
    a1 = a.reshape(1) if a.ndim == 0 else a
    i1 = index.reshape(-1) if index.ndim == 0 else index
    if i1.ndim != a1.ndim:
        raise RuntimeError("Index tensor must have the same number of dimensions as input tensor")
    d = wrap_dim(dim, a1.ndim)
    for k in range(a1.ndim):
        if k != d and i1.shape[k] > a1.shape[k]:
            raise RuntimeError(f"Size does not match at dimension {k} expected index "
                               f"{list(index.shape)} to be no larger than self {list(a.shape)} "
                               f"apart from dimension {d}")
    n = a1.shape[d]
    if i1.size and (i1.min() < 0 or i1.max() >= n):
        raise RuntimeError(f"index {_first_bad(i1, 0, n)} is out of bounds for dimension {d} "
                           f"with size {n}")
    if i1.size >= 4096:         # one 1-D take at flat positions (take_along_axis: ~5x slower)
        src = np.ascontiguousarray(a1)
        return src.reshape(-1).take(_flat_grid(i1, d, src.shape)).reshape(index.shape)
    shp = list(i1.shape)
    shp[d] = n
    r = np.take_along_axis(_head(a1, shp), i1.astype(np.intp, copy=False), axis=d)
    return r.reshape(index.shape)


def _scatter_prep(a, dim, index, src, name="scatter"):
    if index.dtype.kind not in "iu" or index.dtype == np.uint8:
        raise RuntimeError(f"{name}(): Expected dtype int32/int64 for index")
    is_arr = isinstance(src, np.ndarray)
    if is_arr and src.dtype != a.dtype:
        raise RuntimeError(f"{name}(): Expected self.dtype to be equal to src.dtype")
    a1 = a.reshape(1) if a.ndim == 0 else a
    i1 = index.reshape(-1) if index.ndim == 0 else index
    if i1.ndim != a1.ndim:
        raise RuntimeError("Index tensor must have the same number of dimensions as self tensor")
    s1 = None
    if is_arr:
        s1 = src.reshape(-1) if src.ndim == 0 else src
        if s1.ndim != i1.ndim:
            raise RuntimeError("Index tensor must have the same number of dimensions as src "
                               "tensor")
    d = wrap_dim(dim, a1.ndim)
    if i1.size:
        for k in range(a1.ndim):
            if k != d and i1.shape[k] > a1.shape[k] or s1 is not None and \
                    i1.shape[k] > s1.shape[k]:
                msg = (f"Expected index {list(index.shape)} to be no larger than self "
                       f"{list(a.shape)} apart from dimension {d}")
                if s1 is not None:
                    msg += f" and to be no larger size than src {list(src.shape)}"
                raise RuntimeError(msg)
        n = a1.shape[d]
        if i1.min() < 0 or i1.max() >= n:
            raise RuntimeError(f"index {_first_bad(i1, 0, n)} is out of bounds for dimension {d} "
                               f"with size {n}")
    vals = _head(s1, i1.shape) if s1 is not None else scalar_to(src, a.dtype)
    return a1, i1, vals, d


def scatter(a, dim, index, src, reduce=None):
    if reduce is not None and reduce not in ("add", "multiply"):
        raise RuntimeError("reduce argument must be either add or multiply.")
    a1, i1, vals, d = _scatter_prep(a, dim, index, src)
    out = a1.copy()
    if i1.size:
        g = _grid(i1, d)
        if reduce is None:
            out[g] = vals
        elif reduce == "add":
            _ufunc_at(np.add, out, i1, d, vals)
        else:
            _ufunc_at(np.multiply, out, i1, d, vals)
    return out.reshape(a.shape)


def scatter_add(a, dim, index, src):
    a1, i1, vals, d = _scatter_prep(a, dim, index, src)
    out = a1.copy()
    if i1.size:
        _ufunc_at(np.add, out, i1, d, vals)
    return out.reshape(a.shape)


_REDUCES = ("sum", "prod", "mean", "amax", "amin")


def _identity(reduce, dt):
    if reduce in ("sum", "mean"):
        return 0
    if reduce == "prod":
        return 1
    if dt.kind == "b":
        return reduce == "amin"
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return info.min if reduce == "amax" else info.max
    return -np.inf if reduce == "amax" else np.inf


def _reduce_at(out, i1, d, vals, reduce, include_self, a_shape):
    if not include_self:
        out[_grid(i1, d)] = _identity(reduce, out.dtype)
    ufunc = {"sum": np.add, "mean": np.add, "prod": np.multiply, "amax": np.maximum,
             "amin": np.minimum}[reduce]
    _ufunc_at(ufunc, out, i1, d, vals)
    if reduce == "mean":
        cnt = np.ones(a_shape, np.int64) if include_self else np.zeros(a_shape, np.int64)
        _ufunc_at(np.add, cnt, i1, d, 1)
        cnt = np.maximum(cnt, 1)
        if out.dtype.kind in "iub":
            out = np.floor_divide(out, cnt).astype(out.dtype)
        else:
            out = (out / cnt).astype(out.dtype)
    return out


def scatter_reduce(a, dim, index, src, reduce, include_self=True):
    reduce = {"max": "amax", "min": "amin"}.get(reduce, reduce)    # (torch's CPU kernel too)
    if reduce not in _REDUCES:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got "
                           f"{reduce}")
    a1, i1, vals, d = _scatter_prep(a, dim, index, src, "scatter_reduce")
    out = a1.copy()
    if i1.size:
        out = _reduce_at(out, i1, d, vals, reduce, include_self, a1.shape)
    return out.reshape(a.shape)


def _vector_index(index, name, msg_dtype):
    if index.ndim > 1:
        raise IndexError(f"{name}(): Index is supposed to be a vector")
    if index.dtype.kind not in "iu" or index.dtype == np.uint8:
        raise RuntimeError(msg_dtype)
    return index.reshape(-1)


def index_select(a, dim, index):
    idx = _vector_index(index, "index_select",
                        "index_select(): Expected dtype int32 or int64 for index")
    a1 = a.reshape(1) if a.ndim == 0 else a
    d = wrap_dim(dim, a1.ndim)
    n = a1.shape[d]
    if idx.size and (idx.min() < 0 or idx.max() >= n):
        if d == 1 and a1.ndim >= 2:         # torch's dim-1 CPU kernel checks on its own
            if n == 0:
                raise RuntimeError("index_select(): self indexing axis dim should be positive")
            bad = int(idx[(idx < 0) | (idx >= n)][0])
            raise RuntimeError(f"INDICES element is out of DATA bounds, id={bad} axis_dim={n}")
        raise IndexError("index out of range in self")
    r = np.take(a1, idx, axis=d)
    return r.reshape(()) if a.ndim == 0 else r


def index_add(a, dim, index, source, alpha=1):
    if index.dtype.kind not in "iu" or index.dtype == np.uint8:
        raise RuntimeError(f"index_add_(): Expected dtype int32/int64 for index but got: "
                           f"{type_name(index.dtype)}")
    if index.ndim > 1:
        raise IndexError("index_add_(): Index is supposed to be a vector")
    idx = index.reshape(-1)
    if source.dtype != a.dtype:
        raise RuntimeError(f"index_add_(): self ({type_name(a.dtype)}) and source "
                           f"({type_name(source.dtype)}) must have the same scalar type")
    a1 = a.reshape(1) if a.ndim == 0 else a
    s1 = source.reshape(1) if source.ndim == 0 else source
    d = wrap_dim(dim, a1.ndim)
    if s1.ndim == a1.ndim and idx.shape[0] != s1.shape[d]:
        raise RuntimeError(f"index_add_(): Number of indices ({idx.shape[0]}) should be equal "
                           f"to source.size(dim): ({s1.shape[d]}), for dim: {d}")
    if s1.ndim != a1.ndim or any(s1.shape[k] != a1.shape[k] for k in range(a1.ndim) if k != d):
        raise RuntimeError(f"source tensor shape must match self tensor shape, excluding the "
                           f"specified dimension. Got self.shape = {list(a.shape)} source.shape = "
                           f"{list(source.shape)}")
    n = a1.shape[d]
    if idx.size and (idx.min() < 0 or idx.max() >= n):
        raise RuntimeError(f"index {_first_bad(idx, 0, n)} is out of bounds for dimension {d} "
                           f"with size {n}")
    out = a1.copy()
    if alpha != 1:
        alpha = scalar_to(alpha, a.dtype) if a.dtype.kind in "iu" else alpha
    vals = s1 if alpha == 1 else (s1 * alpha).astype(a.dtype)
    if out.size > n and out.dtype.kind != "b":      # whole slices: one scatter per repeat
        from ember._kernels.nn_fused import add_rows
        add_rows(np.moveaxis(out, d, 0), idx, np.moveaxis(vals, d, 0))
    else:
        np.add.at(np.moveaxis(out, d, 0), idx, np.moveaxis(vals, d, 0))
    return out.reshape(a.shape)


def index_copy(a, dim, index, source):
    if index.dtype.kind not in "iu" or index.dtype == np.uint8:
        raise RuntimeError("index_copy_(): Expected a long tensor for index, but got "
                           f"{type_name(index.dtype)}")
    if index.ndim > 1:
        raise IndexError("index_copy_(): Index should have dimension 1 or 0 (got "
                         f"{index.ndim})")
    idx = index.reshape(-1)
    if source.dtype != a.dtype:
        raise RuntimeError(f"index_copy_(): self and source expected to have the same dtype, but "
                           f"got (self) {type_name(a.dtype)} and (source) "
                           f"{type_name(source.dtype)}")
    a1 = a.reshape(1) if a.ndim == 0 else a
    s1 = source.reshape(1) if source.ndim == 0 else source
    d = wrap_dim(dim, a1.ndim)
    if s1.ndim != a1.ndim:
        raise IndexError("index_copy_(): When source and destination are not scalars, their "
                         "dimensionality must match. Source dimensionality "
                         f"({source.ndim}), destination dimensionality ({a.ndim})")
    if idx.shape[0] != s1.shape[d]:
        raise IndexError(f"index_copy_(): Number of indices ({idx.shape[0]}) should be equal to "
                         f"source.size(dim) ({s1.shape[d]})")
    for k in range(a1.ndim):
        if k != d and s1.shape[k] != a1.shape[k]:
            raise RuntimeError(f"index_copy_(): Source/destination tensor must have same slice "
                               f"shapes. Destination slice shape: {a1.shape[k]} at dimension {k} "
                               f"and source slice shape: {s1.shape[k]} at dimension {k}.")
    n = a1.shape[d]
    if idx.size and (idx.min() < 0 or idx.max() >= n):
        raise IndexError(f"index_copy_(): index {_first_bad(idx, 0, n)} is out of bounds for "
                         f"dimension {d} with size {n}")
    out = a1.copy()
    np.moveaxis(out, d, 0)[idx] = np.moveaxis(s1, d, 0)
    return out.reshape(a.shape)


def index_fill(a, dim, index, value):
    if isinstance(value, np.ndarray):           # torch checks the value, then the index
        if value.ndim != 0:
            raise RuntimeError(f"index_fill_ only supports a 0-dimensional value tensor, but got "
                               f"tensor with {value.ndim} dimension(s).")
        value = value[()]
    if index.dtype != np.int64:
        raise IndexError("index_fill_(): Expected dtype int64 for index.")
    if index.ndim > 1:
        raise RuntimeError("Index has to be a vector/scalar")
    idx = index.reshape(-1)
    a1 = a.reshape(1) if a.ndim == 0 else a
    d = wrap_dim(dim, a1.ndim)
    n = a1.shape[d]
    if idx.size and (idx.min() < -n or idx.max() >= n):
        raise IndexError(f"index {_first_bad(idx, -n, n)} is out of bounds for dimension {d} "
                         f"with size {n}")
    out = a1.copy()
    np.moveaxis(out, d, 0)[idx] = value
    return out.reshape(a.shape)


@contiguous_result          # contiguous whatever the input's layout, as torch's
def masked_fill(a, mask, value):
    if not isinstance(mask, np.ndarray) or mask.dtype != np.bool_:
        raise RuntimeError(f"masked_fill_ only supports boolean masks, but got mask with dtype "
                           f"{_c_name(np.asarray(mask).dtype)}")
    if isinstance(value, np.ndarray):
        if value.ndim != 0:
            raise RuntimeError(f"masked_fill_ only supports a 0-dimensional value tensor, but got "
                               f"tensor with {value.ndim} dimension(s).")
        value = value[()]
    shape = _broadcast_or_raise(mask.shape, a.shape)
    out = np.array(np.broadcast_to(a, shape), copy=True)
    out[np.broadcast_to(mask, shape)] = value
    return out


def _broadcast_or_raise(s1, s2):
    try:
        return np.broadcast_shapes(s1, s2)
    except ValueError:
        n = max(len(s1), len(s2))
        p1 = (1,) * (n - len(s1)) + tuple(s1)
        p2 = (1,) * (n - len(s2)) + tuple(s2)
        for k in range(n - 1, -1, -1):
            if p1[k] != p2[k] and p1[k] != 1 and p2[k] != 1:
                raise RuntimeError(f"The size of tensor a ({p1[k]}) must match the size of tensor "
                                   f"b ({p2[k]}) at non-singleton dimension {k}") from None
        raise


def masked_select(a, mask):
    if mask.dtype != np.bool_:
        raise RuntimeError("masked_select: expected BoolTensor for mask")
    shape = _broadcast_or_raise(mask.shape, a.shape)
    return np.broadcast_to(a, shape)[np.broadcast_to(mask, shape)]


def masked_scatter(a, mask, source):
    if mask.dtype != np.bool_:
        raise RuntimeError(f"masked_scatter_ only supports boolean masks, but got mask with dtype "
                           f"{type_name(mask.dtype)}")
    if source.dtype != a.dtype:
        raise RuntimeError(f"masked_scatter: expected self and source to have same dtypes but got"
                           f"{type_name(a.dtype)} and {type_name(source.dtype)}")
    shape = _broadcast_or_raise(mask.shape, a.shape)
    m = np.broadcast_to(mask, shape)
    cnt = int(np.count_nonzero(m))
    if cnt > source.size:
        raise RuntimeError("Number of elements of source < number of ones in mask")
    out = np.array(np.broadcast_to(a, shape), copy=True)
    out[m] = source.reshape(-1)[:cnt]
    return out


def _flat_index(index, n, name="take"):
    if index.dtype != np.int64:
        raise RuntimeError(f"{name}(): Expected a long tensor for index, but got "
                           f"{type_name(index.dtype)}")
    if index.size and (index.min() < -n or index.max() >= n):
        raise IndexError(f"out of range: tried to access index {_first_bad(index, -n, n)} on a "
                         f"tensor of {n} elements.")
    return np.where(index < 0, index + n, index)


def take(a, index):
    flat = a.reshape(-1)
    return flat[_flat_index(index, flat.shape[0])]


def put(a, index, source, accumulate=False):
    if source.dtype != a.dtype:
        raise RuntimeError(f"put_(): self and source expected to have the same dtype, but got "
                           f"self.dtype = {type_name(a.dtype)} and source.dtype = "
                           f"{type_name(source.dtype)}")
    if index.size != source.size:
        raise IndexError(f"put_(): Expected source and index to have the same number of elements, "
                         f"but got source.numel() = {source.size}, index.numel() = {index.size}")
    out = a.copy()
    flat = out.reshape(-1)
    idx = _flat_index(index, flat.shape[0], "put_").reshape(-1)
    if accumulate:
        np.add.at(flat, idx, source.reshape(-1))
    else:
        flat[idx] = source.reshape(-1)
    return out


def nonzero(a):
    return np.argwhere(a).astype(np.int64)


def _check_scatter_src(view, src):
    if view.shape != np.shape(src):
        raise RuntimeError(f"expected src to have a size equal to the slice of self. src size = "
                           f"{list(np.shape(src))}, slice size = {list(view.shape)}")


def select_scatter(a, src, dim, index):
    out = a.copy()
    v = select(out, dim, index)
    _check_scatter_src(v, src)
    v[...] = src
    return out


def _slice(a, dim, start=None, end=None, step=1):
    if step <= 0:
        raise RuntimeError("slice step must be positive")
    d = wrap_dim(dim, a.ndim)
    return a[(SL,) * d + (slice(start, end, step),)]


def slice_scatter(a, src, dim=0, start=None, end=None, step=1):
    out = a.copy()
    v = _slice(out, dim, start, end, step)
    _check_scatter_src(v, src)
    v[...] = src
    return out


def diagonal_scatter(a, src, offset=0, dim1=0, dim2=1):
    out = a.copy()
    v = diagonal(out, offset, dim1, dim2)
    _check_scatter_src(v, src)
    v[...] = src
    return out


# ============================================================ advanced indexing

def _as_index_array(x):
    if isinstance(x, np.ndarray):
        return x
    if hasattr(x, "__array__"):
        return np.asarray(x)
    arr = np.asarray(x)
    if arr.size == 0 and arr.dtype.kind == "f":
        arr = arr.astype(np.int64)
    return arr


def norm_index(a, indices):
    """torch's ``Tensor?[] indices`` (None: the whole dim) as a NumPy index tuple: bool masks
    become their nonzero() coordinates; bounds and broadcast checked with torch's messages."""
    if not isinstance(indices, (tuple, list)):
        indices = (indices,)
    out = []
    arrays = []
    dim = 0
    nd = a.ndim
    for it in indices:
        if it is None:
            it = SL
        if isinstance(it, slice):
            out.append(it)
            dim += 1
            continue
        arr = _as_index_array(it)
        if arr.dtype == np.uint8:
            arr = arr.astype(np.bool_)
        if arr.dtype == np.bool_:
            if arr.ndim == 0:
                out.append(arr)
                continue
            if dim + arr.ndim > nd:
                raise IndexError(f"too many indices for tensor of dimension {nd}")
            for j in range(arr.ndim):
                if arr.shape[j] != a.shape[dim + j]:
                    raise IndexError(f"The shape of the mask {list(arr.shape)} at index {j} does "
                                     f"not match the shape of the indexed tensor "
                                     f"{list(a.shape)} at index {dim + j}")
            nz = np.nonzero(arr)
            out.extend(nz)
            arrays.extend(nz)
            dim += arr.ndim
            continue
        if arr.dtype.kind not in "iu":
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
        if dim >= nd:
            raise IndexError(f"too many indices for tensor of dimension {nd}")
        n = a.shape[dim]
        if arr.size and (arr.min() < -n or arr.max() >= n):
            # torch counts the dimension among the indexed ones (its kernel moves them first):
            # x[:, t] names dimension 0, x[t0, :, t1] names t1's as dimension 1
            raise IndexError(f"index {_first_bad(arr, -n, n)} is out of bounds for dimension "
                             f"{len(arrays)} with size {n}")
        arr = arr.astype(np.intp, copy=False)
        out.append(arr)
        arrays.append(arr)
        dim += 1
    if dim > nd:
        raise IndexError(f"too many indices for tensor of dimension {nd}")
    try:
        np.broadcast_shapes(*[x.shape for x in arrays])
    except ValueError:
        raise IndexError("shape mismatch: indexing tensors could not be broadcast together with "
                         "shapes " + ", ".join(str(list(x.shape)) for x in arrays)) from None
    return tuple(out)


def _has_array(idx):
    return any(isinstance(x, np.ndarray) and x.ndim > 0 for x in idx)


def index(a, indices):
    if type(indices) in (tuple, list) and len(indices) == 1 and a.ndim and \
            a.flags.c_contiguous:
        arr = indices[0]             # x[i]: one index tensor into dim 0 (a gather of rows)
        if type(arr) is np.ndarray and arr.dtype.kind == "i" and arr.ndim and \
                arr.flags.c_contiguous:
            try:
                return np.take(a, arr, axis=0)  # (negative indices wrap, as torch's)
            except IndexError:
                pass                            # out of bounds: torch's message below
        elif type(arr) is np.ndarray and arr.dtype == np.bool_ and arr.ndim and \
                arr.shape == a.shape[:arr.ndim]:
            return a[arr]                       # x[mask]: the selected rows, C order
    idx = norm_index(a, indices)
    r = a[idx]
    if not _has_array(idx) or np.shares_memory(r, a):
        r = np.array(r, copy=True)
    return _index_layout(a, idx, r)


def _index_layout(a, idx, r):
    """``r = a[idx]`` laid out as torch's: the output dims follow the stride order of ``a``
    (with 0 strides where the index tensors' dims land) and then of the index tensors,
    the first deciding (layout.stride_order). NumPy puts the indexed dims outermost in
    memory, so ``x[:, i]`` could not be viewed as torch's can. A contiguous ``a`` with
    contiguous index arrays gives a contiguous result."""
    if r.ndim < 2 or r.size < 2:
        return r
    arrays = [(k, x) for k, x in enumerate(idx) if isinstance(x, np.ndarray) and x.ndim > 0]
    if len(arrays) != sum(1 for x in idx if isinstance(x, np.ndarray)) or \
            any(not isinstance(x, (slice, np.ndarray)) for x in idx):
        return r                                      # 0-d masks: NumPy's own layout
    if a.flags.c_contiguous and all(x.flags.c_contiguous for _, x in arrays):
        return c_order(r)
    pos = [k for k, _ in arrays]
    bshape = np.broadcast_shapes(*[x.shape for _, x in arrays])
    nb = len(bshape)
    rest = list(range(len(idx), a.ndim))
    kept = [k for k in range(len(idx)) if k not in pos] + rest       # a's dims kept, in order
    adjacent = pos == list(range(pos[0], pos[-1] + 1))
    first = pos[0] if adjacent else 0                 # where the indexed block lands
    # element strides of the operands against r's dims
    item = a.itemsize
    before = [k for k in kept if k < first] if adjacent else []
    after = [k for k in kept if k not in before]
    self_st = [abs(a.strides[k]) // item for k in before] + [0] * nb + \
        [abs(a.strides[k]) // item for k in after]
    ops = [_strided_probe(r.shape, self_st)]
    lead = len(before)
    for _, x in arrays:
        xb = np.broadcast_to(x, bshape)
        st = [0] * r.ndim
        for j in range(nb):
            st[lead + j] = abs(xb.strides[j]) // xb.itemsize
        ops.append(_strided_probe(r.shape, st))
    order = stride_order(r.shape, ops)
    out = empty_in_order(r.shape, r.dtype, order)
    if out.strides == r.strides:
        return r
    np.copyto(out, r)
    return out


def _strided_probe(shape, strides):
    """A stand-in array of ``shape`` with element ``strides``, for ``stride_order`` (never
    read)."""
    return np.lib.stride_tricks.as_strided(np.zeros(1, np.int8), shape, strides)


def index_put(a, indices, values, accumulate=False):
    if isinstance(values, np.ndarray) and values.dtype != a.dtype:
        raise RuntimeError(f"Index put requires the source and destination dtypes match, got "
                           f"{type_name(a.dtype)} for the destination and "
                           f"{type_name(values.dtype)} for the source.")
    idx = norm_index(a, indices)
    out = a.copy()
    try:
        if accumulate:
            np.add.at(out, idx, values)
        else:
            out[idx] = values
    except ValueError:
        res_shape = np.broadcast_to(np.zeros((), np.bool_), a.shape)[idx].shape
        raise RuntimeError(f"shape mismatch: value tensor of shape {list(np.shape(values))} "
                           f"cannot be broadcast to indexing result of shape "
                           f"{list(res_shape)}") from None
    return out


def index_backward(grad, shape, indices):
    """The gradient of ``index``: ``grad`` accumulated into zeros of ``shape``."""
    out = np.zeros(tuple(shape), grad.dtype)
    np.add.at(out, norm_index(out, indices), grad)
    return out
