"""Argument helpers shared by kernels: dim wrapping, size inference."""
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
    shape = [int(s) for s in shape]
    neg = [i for i, s in enumerate(shape) if s == -1]
    if len(neg) > 1:
        raise RuntimeError("only one dimension can be inferred")
    known = 1
    for s in shape:
        if s != -1:
            if s < 0:
                raise RuntimeError(f"invalid shape dimension {s}")
            known *= s
    if neg:
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


def broadcast_shape(a, b):
    """The broadcast of shapes ``a`` and ``b``; RuntimeError with torch's message."""
    a, b = tuple(a), tuple(b)
    n = max(len(a), len(b))
    out = []
    for i in range(n):
        sa = a[len(a) - n + i] if i >= n - len(a) else 1
        sb = b[len(b) - n + i] if i >= n - len(b) else 1
        if sa != sb and sa != 1 and sb != 1:
            raise RuntimeError(f"The size of tensor a ({sa}) must match the size of tensor b "
                               f"({sb}) at non-singleton dimension {i}")
        out.append(sa if sb == 1 else sb)
    return tuple(out)


# Note [half GEMMs]: NumPy has no float16 GEMM (its generic matmul loop is ~170x slower than
# sgemm: 395 ms for 256x784x512), so kernels built on products run float16 operands in
# float32 and round the float32 results back to float16 once — what torch does too, whose
# half products accumulate in float. Only when every floating operand is float16: mixed
# dtypes go to the kernel unchanged, which raises torch's error for them.

def _half_args(args):
    half = False
    for a in args:
        arrs = a if type(a) is list else (a,)
        for x in arrs:
            if type(x) is np.ndarray and x.dtype.kind in "fcV":
                if x.dtype != np.float16:
                    return False
                half = True
    return half


def _up(a):
    if type(a) is list:
        return [_up(x) for x in a]
    if type(a) is np.ndarray and a.dtype == np.float16:
        return a.astype(np.float32)
    return a


def _down(r):
    if type(r) in (tuple, list):
        return type(r)(_down(x) for x in r)
    if type(r) is np.ndarray and r.dtype == np.float32:
        return r.astype(np.float16)
    return r


def half_in_float32(kernel):
    """``kernel`` with float16 operands computed in float32 (Note [half GEMMs])."""
    def wrapped(*args):
        if not _half_args(args):
            return kernel(*args)
        return _down(kernel(*[_up(a) for a in args]))
    wrapped.__name__ = getattr(kernel, "__name__", "kernel")
    wrapped.__doc__ = kernel.__doc__
    wrapped.__wrapped__ = kernel
    return wrapped
