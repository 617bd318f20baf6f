"""Argument helpers shared by kernels: dim wrapping, size inference."""
from math import prod

import numpy as np


def wrap_dim(dim, ndim):
    """Normalise a possibly negative dim; IndexError like torch when out of range."""
    n = ndim if ndim > 0 else 1
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], "
                         f"but got {dim})")
    return dim + n if dim < 0 else dim


def wrap_dims(dims, ndim):
    """``None`` (all dims), an int, or a sequence of ints -> sorted tuple of dims (or None)."""
    if dims is None:
        return None
    if isinstance(dims, (int, np.integer)):
        return (wrap_dim(int(dims), ndim),)
    out = tuple(wrap_dim(int(d), ndim) for d in dims)
    if len(set(out)) != len(out):
        dup = next(d for d in out if out.count(d) > 1)
        raise RuntimeError(f"dim {dup} appears multiple times in the list of dims")
    return out


def np_dtype(d):
    """An ember dtype (or None) as a NumPy dtype."""
    return None if d is None else d.np


def infer_size(shape, numel):
    """Resolve one ``-1`` in ``shape`` for a tensor of ``numel`` elements."""
    if type(shape) is not tuple or not all(type(s) is int for s in shape):
        shape = tuple(int(s) for s in shape)
    if -1 not in shape and (not shape or min(shape) >= 0) and prod(shape) == numel:
        return shape                    # (the everyday case: sizes given in full)
    shape = list(shape)
    neg = [i for i, s in enumerate(shape) if s == -1]
    if len(neg) > 1:
        raise RuntimeError("only one dimension can be inferred")
    known = 1
    for i, s in enumerate(shape):
        if s != -1:
            if s < 0:
                raise RuntimeError(f"invalid shape dimension {s} at index {i} of shape {shape}")
            known *= s
    if neg:
        if known == 0 and numel == 0:
            raise RuntimeError(f"cannot reshape tensor of 0 elements into shape {shape} because "
                               f"the unspecified dimension size -1 can be any value and is "
                               f"ambiguous")
        if known == 0 or numel % known:
            raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
        shape[neg[0]] = numel // known
    elif known != numel:
        raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
    return tuple(shape)


def as_view(a, shape):
    """``a`` reshaped without copying, or None when its strides do not allow it."""
    try:
        return a.reshape(shape, copy=False)
    except ValueError:
        return None


_INT64_MAX = 2 ** 63 - 1


def check_storage_size(shape, itemsize, strides=None):
    """torch's check before an allocation: the storage's byte count (and, for an empty
    tensor, its contiguous strides) must fit in int64; RuntimeError with torch's message."""
    if strides is None:
        numel, stride = 1, 1
        for n in reversed(shape):
            if stride > _INT64_MAX:
                raise RuntimeError("Stride calculation overflowed")
            stride *= max(n, 1)
            numel *= n
        where = ""
    else:
        numel = 0 if 0 in shape else 1 + sum((n - 1) * st for n, st in zip(shape, strides))
        where = f" and strides={list(strides)}"
    if numel * itemsize > _INT64_MAX:
        raise RuntimeError(f"Storage size calculation overflowed with sizes={list(shape)}{where}")


def allocation_error(err):
    """NumPy's MemoryError for an array the machine cannot hold, as torch's RuntimeError."""
    nbytes = getattr(err, "_total_size", None)
    asked = f"you tried to allocate {nbytes} bytes. " if nbytes is not None else ""
    return RuntimeError(f"[enforce fail at alloc_cpu.cpp:127] err == 0. DefaultCPUAllocator: "
                        f"can't allocate memory: {asked}Error code 12 (Cannot allocate memory)")


def broadcast_shape(a, b):
    """The broadcast of shapes ``a`` and ``b``; RuntimeError with torch's message, which names
    the last mismatched dimension."""
    a, b = tuple(a), tuple(b)
    n = max(len(a), len(b))
    a = (1,) * (n - len(a)) + a
    b = (1,) * (n - len(b)) + b
    for i in reversed(range(n)):
        if a[i] != b[i] and a[i] != 1 and b[i] != 1:
            raise RuntimeError(f"The size of tensor a ({a[i]}) must match the size of tensor b "
                               f"({b[i]}) at non-singleton dimension {i}")
    return tuple(sb if sa == 1 else sa for sa, sb in zip(a, b))


# Note [half GEMMs]: NumPy has no float16 GEMM (its generic matmul loop is ~170x slower than
# sgemm: 395 ms for 256x784x512), and bfloat16 products (ml_dtypes) take a slow path for
# transposed operands (2x); so kernels built on products run float16 / bfloat16 operands in
# float32 and round the float32 results back once — what torch does too, whose half
# products accumulate in float. The elementwise records do the same for bfloat16 (torch's
# "opmath": ml_dtypes' bfloat16 loops are scalar, 10-20x slower than float32, while its
# casts are cheap); NumPy's own float16 loops already compute in float and round once, and
# its float32 -> float16 cast is slow (2.5 ns per element), so float16 stays native there.
# Only when every floating operand has the same half dtype: mixed dtypes go to the kernel
# unchanged, which raises torch's error for them.

def scalar_to(value, dt):
    """A Python Scalar argument converted to ``dt`` as torch converts it: into an integer
    dtype a float truncates toward zero and an int wraps, within torch's overflow bounds
    (an int may go down to -max of an unsigned dtype: uint8 takes -3 as 253)."""
    if dt.kind in "iu" and not isinstance(value, (bool, np.bool_, complex)):
        info = np.iinfo(dt)
        lo = -info.max if info.min == 0 and isinstance(value, (int, np.integer)) else info.min
        if not lo <= value <= info.max:
            raise RuntimeError(f"value cannot be converted to type {dt.name}_t without "
                               f"overflow")
        return np.array(int(value)).astype(dt)
    return np.array(value).astype(dt)


def _half_dtype(args, names):
    """The common half dtype (one of ``names``) of the floating array arguments, else None."""
    low = None
    for a in args:
        for x in (a if type(a) is list else (a,)):
            if type(x) is np.ndarray and x.dtype.kind in "fcV":
                d = x.dtype
                if low is None:
                    if d.itemsize != 2 or d.name not in names:   # (dtype.name is slow)
                        return None
                    low = d
                elif d != low:
                    return None
    return low


def _up(a, low):
    if type(a) is list:
        return [_up(x, low) for x in a]
    if type(a) is np.ndarray and a.dtype == low:
        return a.astype(np.float32)
    return a


def _down(r, low):
    if type(r) in (tuple, list):
        return type(r)(_down(x, low) for x in r)
    if type(r) is np.ndarray and r.dtype == np.float32:
        return r.astype(low)
    if type(r) is np.float32:          # a ufunc's result on 0-d operands
        return np.asarray(r).astype(low)
    return r


def half_in_float32(kernel, names=("float16", "bfloat16")):
    """``kernel`` with operands of the half dtypes ``names`` computed in float32 (Note [half
    GEMMs])."""
    def wrapped(*args):
        low = _half_dtype(args, names)
        if low is None:
            return kernel(*args)
        return _down(kernel(*[_up(a, low) for a in args]), low)
    wrapped.__name__ = getattr(kernel, "__name__", "kernel")
    wrapped.__doc__ = kernel.__doc__
    wrapped.__wrapped__ = kernel
    return wrapped


def is_channels_last(a):
    """Is the 4-D / 5-D array laid out channels-last (and not also plain contiguous)?"""
    return a.ndim in (4, 5) and not a.flags.c_contiguous and \
        np.moveaxis(a, 1, -1).flags.c_contiguous


def as_channels_last(a):
    """``a``'s values in a channels-last array with torch's strides (on size-1 dimensions
    too); ``a`` itself when it already is one."""
    if a.ndim not in (4, 5):
        return a
    order = (0,) + tuple(range(2, a.ndim)) + (1,)
    item = a.itemsize
    strides = []
    step = item
    for d in reversed(order):
        strides.append((d, step))
        step *= max(a.shape[d], 1)
    want = tuple(s for _, s in sorted(strides))
    if a.strides == want:
        return a
    out = np.empty([a.shape[d] for d in order], a.dtype).transpose(np.argsort(order))
    np.copyto(out, a)
    return out


def keeps_channels_last(kernel, ranks=(4, 5)):
    """``kernel(x, ...)`` whose outputs of ``x``'s rank come out channels-last when ``x`` is
    (torch's CPU pooling and batch-norm kernels keep the input's memory format). ``ranks``:
    the input ranks that keep it (``(4,)``: torch's avg_pool3d and adaptive_max_pool3d answer
    a channels_last_3d input with a contiguous result)."""
    def run(x, *rest):
        out = kernel(x, *rest)
        if x.ndim not in ranks or not is_channels_last(x):
            return out
        if isinstance(out, tuple):
            return tuple(as_channels_last(o) if isinstance(o, np.ndarray) and o.ndim == x.ndim
                         else o for o in out)
        return as_channels_last(out) if out.ndim == x.ndim else out
    return run
