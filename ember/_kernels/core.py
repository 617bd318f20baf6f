"""Kernels of the core ops (views, copies, reductions to a shape, matmul)."""
import math

import numpy as np

from ember import _dtype
from ember._kernels import split
from ember._kernels.layout import empty_preserving, follows_inputs
from ember._kernels.shape import type_name
from ember._kernels.util import infer_size, as_view, wrap_dim


def view(a, size):
    shape = infer_size(size, a.size)
    v = as_view(a, shape)
    if v is None:
        raise RuntimeError("view size is not compatible with input tensor's size and stride (at "
                           "least one dimension spans across two contiguous subspaces). Use "
                           ".reshape(...) instead.")
    return v


def transpose(a, dim0, dim1):
    d0, d1 = wrap_dim(dim0, a.ndim), wrap_dim(dim1, a.ndim)   # a 0-d tensor takes 0 or -1
    return np.swapaxes(a, d0, d1) if a.ndim else a.view()


def permute(a, dims):
    if len(dims) != a.ndim:
        raise RuntimeError(f"permute(sparse_coo): number of dimensions in the tensor input does "
                           f"not match the length of the desired ordering of dimensions i.e. "
                           f"input.dim() = {a.ndim} is not equal to len(dims) = {len(dims)}")
    axes = [wrap_dim(d, a.ndim) for d in dims]
    if len(set(axes)) != len(axes):
        raise RuntimeError("permute(): duplicate dims are not allowed.")
    return np.transpose(a, axes)


def expand(a, size, implicit=False):
    size = tuple(size)
    if len(size) < a.ndim:
        raise RuntimeError(f"expand(torch.{type_name(a.dtype)}Tensor{{{list(a.shape)}}}, "
                           f"size={list(size)}): the number of sizes provided ({len(size)}) "
                           f"must be greater or equal to the number of dimensions in the "
                           f"tensor ({a.ndim})")
    lead = len(size) - a.ndim
    shape = []
    for i, s in enumerate(size):
        if i < lead:
            if s < 0:
                raise RuntimeError(f"The expanded size of the tensor ({s}) isn't allowed in a "
                                   f"leading, non-existing dimension {i}")
            shape.append(s)
        else:
            cur = a.shape[i - lead]
            if s == -1:
                s = cur
            elif cur != 1 and s != cur:
                raise RuntimeError(f"The expanded size of the tensor ({s}) must match the "
                                   f"existing size ({cur}) at non-singleton dimension {i}.  "
                                   f"Target sizes: {list(size)}.  Tensor sizes: {list(a.shape)}")
            shape.append(s)
    return _broadcast_view(a, tuple(shape))


def _broadcast_view(a, shape):
    """``a`` expanded to ``shape`` with torch's strides: 0 where a size grows, a new size-1
    dim strides over the dims after it. Read-only when an element repeats (torch's internal
    overlap: the dispatcher then applies torch's rules for writes) or ``a`` is read-only.
    Made directly over ``a``'s memory when ``a`` is contiguous: 10x cheaper than NumPy's
    general path, which small-tensor backward passes (``sum``'s gradient) pay on every call."""
    lead = len(shape) - a.ndim
    strides = [0] * len(shape)
    overlap = False
    for i in range(len(shape) - 1, -1, -1):
        j = i - lead
        if j >= 0:
            n, st = a.shape[j], a.strides[j]
        else:                       # a new dim: as if contiguous over the dims after it
            n, st = 1, (shape[i + 1] * strides[i + 1] if i + 1 < len(shape) else a.itemsize)
        if n != shape[i]:
            st = 0
            overlap = overlap or shape[i] > 1
        strides[i] = st
    writeable = a.flags.writeable and not overlap
    try:
        r = np.ndarray(shape, a.dtype, a, 0, tuple(strides))
    except (TypeError, ValueError, BufferError):      # not contiguous
        return np.lib.stride_tricks.as_strided(a, shape, strides, writeable=writeable)
    if not writeable:
        r.flags.writeable = False
    return r


def sum_to_size(a, size):
    size = tuple(size)
    if not size:        # torch's sum_to: an empty target shape is a full sum (ints -> int64)
        return np.asarray(np.sum(a, dtype=np.int64 if a.dtype.kind in "biu" else a.dtype))
    if a.shape == size:
        return a.copy()
    lead = a.ndim - len(size)
    if lead < 0 or any(s != 1 and s != a.shape[lead + i] for i, s in enumerate(size)):
        raise RuntimeError(f"size {{{list(size)}}} is not expandable to size "
                           f"{{{list(a.shape)}}}.")
    axes = tuple(range(lead)) + tuple(
        lead + i for i, s in enumerate(size) if s == 1 and a.shape[lead + i] != 1)
    wide = np.int64 if a.dtype.kind in "biu" else None      # integer sums are int64, as torch's
    if not axes:
        r = a.copy()
    else:       # float32/float64 in torch's order, as ``.sum(dims, keepdim=True)``: autograd's
        from ember._kernels import torch_sum  # gradient of a broadcast operand is that sum
        r = torch_sum.reduce_sum(a, axes, True)
        if r is None:
            r = np.sum(a, axis=axes, keepdims=True, dtype=wide)
    return np.reshape(r, size) if r.ndim != len(size) or r.shape != size else r


def clone(a, memory_format=None):
    mf = getattr(memory_format, "name", memory_format)
    if mf in (None, "preserve_format"):         # torch's strides (layout.empty_preserving)
        out = empty_preserving(a)
        np.copyto(out, a)
        return out
    rank = {"channels_last": 4, "channels_last_3d": 5}.get(mf)
    if rank is not None and a.ndim != rank:
        raise RuntimeError(f"required rank {rank} tensor to use {mf} format")
    if rank is not None:
        # a copy even when ``a`` already is channels-last (ascontiguousarray would alias it)
        return np.moveaxis(np.array(np.moveaxis(a, 1, -1), copy=True, order="C"), -1, 1)
    return np.array(a, copy=True, order="C")


def to_copy(a, dtype=None, memory_format=None):
    """``a`` as ``dtype`` (its own when None), always a new array, laid out as torch's
    ``_to_copy``: ``preserve_format`` (None) keeps ``a``'s strides when it is dense, else
    dense strides in its stride order (``empty_preserving``); another format as ``clone``."""
    mf = getattr(memory_format, "name", memory_format)
    if mf not in (None, "preserve_format"):
        out = clone(a, memory_format)
        return out if dtype is None else astype_warning(out, dtype.np)   # (keeps the order)
    if a.flags.c_contiguous and (a.ndim < 2 or 1 not in a.shape):
        return astype_warning(a, dtype.np) if dtype is not None else a.copy()
    out = empty_preserving(a, None if dtype is None else dtype.np)
    if a.dtype.kind == "c" and out.dtype.kind not in "cb":
        a = astype_warning(a, out.dtype)                # (torch's warning, not NumPy's)
    np.copyto(out, a, casting="unsafe")
    return out


def astype_warning(a, np_dtype):
    """``a.astype(np_dtype)`` with torch's once-a-process UserWarning (naming the user's
    line) in place of NumPy's ComplexWarning when a complex array becomes real."""
    if a.dtype.kind != "c" or np_dtype.kind in "cb":
        return a.astype(np_dtype)
    import warnings
    from ember._runtime_flags import user_stacklevel, warn_once
    warn_once("complex to real", "Casting complex values to real discards the imaginary part",
              stacklevel=user_stacklevel() + 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
        return a.astype(np_dtype)


@follows_inputs
def where(cond, x, y):
    """``x`` where ``cond`` holds, else ``y``; laid out as torch's (the condition first).
    ``where(cond, g, 0)`` of a float array (clamp's and masks' gradients) is one compiled
    pass where numba is loaded, else ``g``'s bits ANDed with a mask from ``cond``: NumPy's
    ``where`` is a branch per element (2-5 ns each on random conditions; (64, 100) float32
    14 -> 3.5 us compiled, 11 us masked)."""
    if type(x) is np.ndarray and x.dtype.char in "fd" and type(cond) is np.ndarray and \
            cond.shape == x.shape and cond.dtype == np.bool_ and x.flags.c_contiguous and \
            cond.flags.c_contiguous and _is_plus_zero(y, x.dtype):
        from ember._kernels import compiled
        kernels = compiled.module("elementwise") if x.size >= _WHERE_LOAD else \
            compiled.loaded("elementwise")
        if kernels is not None:
            out = np.empty(x.shape, x.dtype)
            kernels.where_zero(cond.reshape(-1), x.reshape(-1), x.dtype.type(0),
                               out.reshape(-1))
            return out
        if x.dtype.char == "f" or x.size >= _WHERE_LOAD:
            bits = np.int32 if x.dtype.char == "f" else np.int64
            mask = cond.astype(bits)
            np.negative(mask, out=mask)                      # 1 -> all ones, 0 -> 0
            return np.bitwise_and(x.view(bits), mask, out=mask).view(x.dtype)
    return np.where(cond, x, y)


_WHERE_LOAD = 1 << 14      # elements; from here ``where(cond, g, 0)`` loads numba


def _is_plus_zero(y, dtype):
    """Whether ``y`` is +0 that leaves ``where``'s result in ``dtype`` (a Python 0 or 0.0, or
    a 0-d array of that dtype)."""
    if type(y) is int or type(y) is float:
        return y == 0 and math.copysign(1.0, y) > 0
    return type(y) is np.ndarray and y.ndim == 0 and y.dtype == dtype and y == 0 and \
        not np.signbit(y)


def matmul(a, b):
    if a.ndim == 0 or b.ndim == 0:
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are "
                           f"{a.ndim}D and {b.ndim}D")
    ka = a.shape[-1]
    kb = b.shape[-2] if b.ndim > 1 else b.shape[0]
    if (a.ndim > 2 or b.ndim > 2) and b.ndim > 1 and not (a.ndim > 2 and b.ndim == 2):
        _check_batched(a.shape[:-2], b.shape[:-2], ka, kb)       # torch's bmm path
    if ka != kb:
        if a.ndim == 1 and b.ndim == 1:
            raise RuntimeError(f"inconsistent tensor size, expected tensor [{a.shape[0]}] and "
                               f"src [{b.shape[0]}] to have the same number of elements, but got "
                               f"{a.shape[0]} and {b.shape[0]} elements respectively")
        if b.ndim == 1:
            rows = math.prod(a.shape[:-1])
            raise RuntimeError(f"size mismatch, got input ({rows}), mat ({rows}x{ka}), vec "
                               f"({kb})")
        ash = "x".join(map(str, (a.reshape(-1, ka).shape if a.ndim > 1 else (1, ka))))
        bsh = "x".join(map(str, (b.shape[-2:] if b.ndim > 1 else (kb, 1))))
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({ash} and {bsh})")
    if a.dtype != b.dtype:
        if a.ndim == 1 and b.ndim == 1:
            raise RuntimeError(f"dot : expected both vectors to have same dtype, but found "
                               f"{_SCALAR_NAMES.get(a.dtype.name, a.dtype.name)} and "
                               f"{_SCALAR_NAMES.get(b.dtype.name, b.dtype.name)}")
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: "
                           f"{_C_NAMES.get(a.dtype.name, a.dtype.name)} != "
                           f"{_C_NAMES.get(b.dtype.name, b.dtype.name)}")
    if a.dtype == np.bool_:         # torch has no boolean matrix products
        name = ("dot" if a.ndim == 1 and b.ndim == 1 else
                "addmv_impl_cpu" if b.ndim == 1 else
                "bmm" if a.ndim > 2 and b.ndim > 2 else "addmm_impl_cpu_")
        raise NotImplementedError(f'"{name}" not implemented for \'Bool\'')
    if ka == 1 and a.ndim > 1 and b.ndim > 1:
        r = _outer_products(a, b)
    else:
        r = split.matmul(a, b)    # Note [one thread plan] in numpy_blas.py
    return r if r.dtype == a.dtype else r.astype(a.dtype)   # bfloat16 comes back as float32


_OUTER_COMPILED_MIN = 1 << 16      # result elements from which the compiled loop runs


def _outer_products(a, b):
    """a (..., M, 1) @ b (..., 1, N): outer products (per-sample gradients), one broadcast
    multiply, or for large float results the compiled loop (NumPy's broadcast pass runs
    rows of N elements: 7.4 -> ~2 ms on (20, 1600, 1) @ (10, 20, 1, 10), the NTK
    benchmark's per-sample Linear gradients). The products are the same either way."""
    M, N = a.shape[-2], b.shape[-1]
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    size = math.prod(batch) * M * N
    if size >= _OUTER_COMPILED_MIN and a.dtype == b.dtype and \
            a.dtype in (np.float32, np.float64):
        from ember._kernels import compiled
        kernels = compiled.module("elementwise")
        if kernels is not None:
            rows = np.ascontiguousarray(np.broadcast_to(a[..., 0], batch + (M,))).reshape(-1, M)
            cols = np.ascontiguousarray(np.broadcast_to(b[..., 0, :], batch + (N,))).reshape(
                -1, N)
            out = np.empty(batch + (M, N), a.dtype)
            kernels.outer_rows(rows, cols, out.reshape(-1, M, N))
            return out
    return np.multiply(a, b, order="C")     # torch's result is contiguous


def _check_batched(ba, bb, ka, kb):
    """torch's checks of a batched matmul: batch dims broadcast, then bmm's sizes."""
    if ba == bb and ka == kb:
        return
    n = max(len(ba), len(bb))
    pa, pb = (1,) * (n - len(ba)) + tuple(ba), (1,) * (n - len(bb)) + tuple(bb)
    for i in reversed(range(n)):
        if pa[i] != pb[i] and pa[i] != 1 and pb[i] != 1:
            raise RuntimeError(f"The size of tensor a ({pa[i]}) must match the size of tensor b "
                               f"({pb[i]}) at non-singleton dimension {i}")
    if ka != kb:
        nb = math.prod(max(x, y) for x, y in zip(pa, pb))
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{nb}, {ka}] but got: [{nb}, {kb}].")


_SCALAR_NAMES = _dtype.TYPE_NAMES
_C_NAMES = {"float32": "float", "float64": "double", "float16": "c10::Half",
            "bfloat16": "c10::BFloat16", "int64": "long int", "int32": "int",
            "int16": "short int", "int8": "signed char", "uint8": "unsigned char",
            "bool": "bool", "complex64": "c10::complex<float>",
            "complex128": "c10::complex<double>"}


def basic_index(a, index):
    return a[index]


def basic_index_backward(g, shape, index):
    out = np.zeros(shape, g.dtype)
    out[index] = g
    return out


def conj_physical(a):
    """Elementwise conjugate; non-complex inputs keep their dtype (np.conjugate makes
    bool int8)."""
    a = np.asarray(a)
    return np.conjugate(a) if a.dtype.kind == "c" else a.copy()
