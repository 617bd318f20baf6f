"""Output memory layout of elementwise kernels, as torch lays it out.

Note [output layout]: NumPy's ufuncs (``order='K'``) keep the operands' layout when they
agree and fall back to C order when they do not; torch orders the output's dimensions by
the operands' strides, the first operand that tells two dimensions apart deciding (a
broadcast dimension, stride 0, tells nothing). So ``x + y`` with ``x`` channels-last and
``y`` contiguous is channels-last in torch (``y + x`` is contiguous) where NumPy gives C
order both times. ``follows_inputs`` puts a kernel's result into torch's layout; it looks
only at results whose operands are not all C-contiguous, so the common path pays one
flags check per operand.
"""
import numpy as np

_nd = np.ndarray


def _aligned_strides(a, shape):
    """``a``'s strides (in elements, any sign) against the output ``shape``; 0 for the
    dimensions ``a`` is broadcast along (missing, or of size 1 where the output is not)."""
    n, k = len(shape), a.ndim
    out = [0] * n
    item = a.itemsize
    for d in range(k):
        size = a.shape[d]
        if size != 1 or shape[n - k + d] == 1:
            out[n - k + d] = abs(a.strides[d]) // item
    return out


def stride_order(shape, arrays):
    """The dimensions of ``shape`` from outermost to innermost in torch's order for an
    output computed from ``arrays`` (NumPy arrays, broadcastable to ``shape``, in argument
    order). Starting from C order (innermost = last dimension), each dimension is moved
    inwards past those it should sit inside of: the first array whose strides for the two
    dimensions are both non-zero and different decides (equal strides move the larger
    dimension out, or leave the decision to the next array); when no array decides, the
    search goes on past the undecided dimension."""
    strides = [_aligned_strides(a, shape) for a in arrays]

    def outer_first(d_in, d_out):
        """+1: ``d_in`` (now placed inside ``d_out``) belongs outside it; -1: it does
        not; 0: no array tells."""
        for st in strides:
            s_in, s_out = st[d_in], st[d_out]
            if s_in == 0 or s_out == 0:
                continue
            if s_in != s_out:
                return 1 if s_in > s_out else -1
            if shape[d_in] > shape[d_out]:      # a tie: the smaller dimension goes inside
                return 1
        return 0

    n = len(shape)
    inner = list(range(n - 1, -1, -1))          # innermost first
    for i in range(1, n):
        cur = i
        for j in range(i - 1, -1, -1):
            c = outer_first(inner[j], inner[cur])
            if c > 0:
                inner[j], inner[cur] = inner[cur], inner[j]
                cur = j
            elif c < 0:
                break
    return tuple(reversed(inner))


def strides_in_order(shape, order):
    """Element strides of a dense array of ``shape`` whose dimensions are laid out
    outermost to innermost as ``order`` lists them (torch's: a size-1 dimension gets the
    product of the sizes inside it)."""
    out, step = [0] * len(shape), 1
    for d in reversed(order):
        out[d] = step
        step *= max(shape[d], 1)
    return tuple(out)


def empty_in_order(shape, dtype, order):
    """An uninitialised array of ``shape`` whose dimensions are laid out outermost to
    innermost as ``order`` lists them."""
    base = np.empty([shape[d] for d in order], dtype)
    return base.transpose(np.argsort(order))


def _all_channels_last(arrays):
    """Every array 4-D and channels-last (torch's shortcut has no channels_last_3d case)."""
    return all(a.ndim == 4 and np.moveaxis(a, 1, -1).flags.c_contiguous for a in arrays)


def output_order(shape, arrays):
    """torch's layout for an elementwise result of ``shape`` from ``arrays``: operands all
    of that shape and all contiguous (or all 4-D channels-last) give a contiguous
    (channels-last) result; otherwise ``stride_order``."""
    n = len(shape)
    if all(a.shape == shape for a in arrays):
        if all(a.flags.c_contiguous for a in arrays):
            return tuple(range(n))
        if _all_channels_last(arrays):
            return (0, 2, 3, 1)
    return stride_order(shape, arrays)


def like_inputs(r, arrays):
    """``r`` (a kernel's result from ``arrays``) in torch's layout: itself when that is
    already its layout, else a copy laid out so."""
    out = empty_in_order(r.shape, r.dtype, output_order(r.shape, arrays))
    if out.strides == r.strides:
        return r
    np.copyto(out, r)
    return out


def follows_inputs(kernel, swapped=False, number_first_contiguous=False):
    """``kernel`` (an elementwise kernel of several operands) whose result comes out in
    torch's layout (Note [output layout]). ``swapped``: torch's first operand is the
    kernel's second (``rsub(a, b)`` is ``b - a``). ``number_first_contiguous``: a Python
    number as the first operand gives a contiguous result (torch's ``pow(Scalar, Tensor)``)."""
    def run(*args):
        r = kernel(*args)
        if number_first_contiguous and type(args[0]) is not _nd:
            return c_order(r)
        if type(r) is tuple:            # (values, indices) of sort
            return tuple(run_one(x, args) for x in r)
        return run_one(r, args)

    def run_one(r, args):
        if type(r) is not _nd or r.ndim < 2:
            return r
        ordered = (args[1], args[0]) + args[2:] if swapped else args
        arrays = [a for a in ordered if type(a) is _nd and a.ndim]
        for a in arrays:
            if not a.flags.c_contiguous:
                return like_inputs(r, arrays)
        return r
    run.__name__ = getattr(kernel, "__name__", "kernel")
    run.__doc__ = kernel.__doc__
    run.__wrapped__ = kernel
    return run


def _c_strides(shape, itemsize):
    out, step = [], itemsize
    for n in reversed(shape):
        out.append(step)
        step *= max(n, 1)
    return tuple(reversed(out))


def c_order(r):
    """``r`` C-contiguous, with torch's strides on its size-1 dimensions too (NumPy calls an
    array with any stride there contiguous: a ``keepdims`` reduction's)."""
    if type(r) is not _nd or r.ndim < 2:
        return r
    if not r.flags.c_contiguous:
        return np.ascontiguousarray(r)
    if 1 in r.shape and r.size > 1:
        strides = _c_strides(r.shape, r.itemsize)
        if strides != r.strides:
            return np.lib.stride_tricks.as_strided(r, r.shape, strides,
                                                   writeable=r.flags.writeable)
    return r


def contiguous_result(kernel):
    """``kernel`` whose array results are C-contiguous whatever its input's layout: torch's
    reductions, scans and softmax allocate their outputs contiguous (a channels-last input
    gives a contiguous ``sum(dim)``, ``cumsum``, ``softmax``)."""
    def run(*args):
        r = kernel(*args)
        if type(r) is tuple:
            return tuple(c_order(x) for x in r)
        return c_order(r)
    run.__name__ = getattr(kernel, "__name__", "kernel")
    run.__doc__ = kernel.__doc__
    run.__wrapped__ = kernel
    return run


def shared_dense_order(arrays):
    """For kernels that work on flat C-contiguous buffers: when the first array is not
    C-contiguous but every array is one dense block in the same dimension order
    (channels-last inputs), that order (outermost first: ``a.transpose(order)`` is
    C-contiguous for each); else None (C order, after a copy, is the kernel's way)."""
    a = arrays[0]
    if a.ndim < 2 or a.flags.c_contiguous:
        return None
    order = stride_order(a.shape, [a])
    for x in arrays:
        if x.shape != a.shape or not x.transpose(order).flags.c_contiguous:
            return None
    return order


def empty_preserving(a, dtype=None):
    """An uninitialised array shaped like ``a`` as torch's ``preserve_format`` allocates it:
    ``a``'s own strides when ``a`` is dense and non-overlapping (size-1 dimensions
    included), else dense strides in ``a``'s stride order (``stride_order``: an expanded
    or sliced channels-last tensor gives a channels-last result). NumPy's ``order='K'``
    differs on size-1 dimensions and on expanded inputs."""
    dtype = a.dtype if dtype is None else np.dtype(dtype)
    shape = a.shape
    if a.ndim < 2 or a.flags.c_contiguous and (
            1 not in shape or a.strides == _c_strides(shape, a.itemsize)):
        return np.empty(shape, dtype)
    order = stride_order(shape, [a])
    dense = strides_in_order(shape, order)
    item = a.itemsize
    own = tuple(s // item for s in a.strides)
    if all(s >= 0 and s * item == b for s, b in zip(own, a.strides)) and \
            all(o == d for o, d, n in zip(own, dense, shape) if n > 1):
        dense = own                                   # dense input: its exact strides
    if a.size == 0:
        return np.empty(shape, dtype)
    span = 1 + sum((n - 1) * s for n, s in zip(shape, dense))
    buf = np.empty(span, dtype)
    return np.lib.stride_tricks.as_strided(buf, shape, tuple(s * dtype.itemsize for s in dense))


def suggests_channels_last(a):
    """torch's ``suggest_memory_format`` of a 4-D / 5-D array is channels-last: its
    dimensions, ordered by stride, run channels innermost, then the spatial ones, batch
    outermost (a slice of a channels-last tensor, or a 1-channel one laid out so)."""
    if a.ndim not in (4, 5) or a.flags.c_contiguous and 1 not in a.shape:
        return False
    return stride_order(a.shape, [a]) == (0,) + tuple(range(2, a.ndim)) + (1,)
