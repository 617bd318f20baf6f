"""Op database entries for the shape / view / joining / indexing family
(ember/_ops/shape.py, ember/_ops/advanced_indexing.py)."""
import itertools
import re

import numpy as np

import ember
from opinfo import OpInfo, SampleInput, ErrorInput, make_arg, FLOATS, INTS, ALL_REAL, COMPLEX

ALL = ALL_REAL + COMPLEX
SOME = ("float32", "float64", "int64", "bool", "complex64")


def E(sample, error, msg):
    """An ErrorInput matching ``msg`` literally."""
    return ErrorInput(sample, error, re.escape(msg))


def _arr(*shape, dtype="float32", seed=0, **kw):
    return make_arg(shape, dtype, np.random.default_rng(seed), **kw)


def _I(*vals):
    """An int64 index array: ``_I(1, 2)`` is 1-d, ``_I([[1, 2]])`` keeps the nesting."""
    if len(vals) == 1 and isinstance(vals[0], list):
        vals = vals[0]
    return np.array(vals, dtype=np.int64)


def _x(shape, dtype, rng, **kw):
    return make_arg(shape, dtype, rng, **kw)


# ====================================================================== views

def _narrow_ref(x, dim, start, length):
    d = dim % x.ndim
    start = start + x.shape[d] if start < 0 else start
    return x[(slice(None),) * d + (slice(start, start + length),)]


def _narrow_samples(dtype, rng):
    x = _x((3, 4), dtype, rng)
    return [SampleInput(x, (0, 1, 2)), SampleInput(x, (1, -3, 2)), SampleInput(x, (-1, 0, 0)),
            SampleInput(_x((3, 4), dtype, rng, noncontiguous=True), (1, 1, 2), name="noncontig"),
            SampleInput(_x((2, 3, 4), dtype, rng), (2, 1, 3)),
            SampleInput(_x((0, 3), dtype, rng), (1, 1, 1), name="empty")]


def _narrow_errors(rng):
    x = _arr(3, 4)
    return [E(SampleInput(x, (0, 2, 2)), RuntimeError,
              "start (2) + length (2) exceeds dimension size (3)."),
            E(SampleInput(x, (0, 0, -1)), RuntimeError, "narrow(): length must be non-negative."),
            E(SampleInput(x, (0, 4, 1)), IndexError,
              "start out of range (expected to be in range of [-3, 3], but got 4)"),
            E(SampleInput(x, (2, 0, 1)), IndexError, "Dimension out of range"),
            E(SampleInput(_arr(), (0, 0, 1)), RuntimeError, "narrow() cannot be applied to a "
                                                           "0-dim tensor.")]


def _select_samples(dtype, rng):
    x = _x((3, 4), dtype, rng)
    return [SampleInput(x, (0, 1)), SampleInput(x, (1, -1)),
            SampleInput(_x((4,), dtype, rng), (0, 2)),
            SampleInput(_x((2, 3, 4), dtype, rng, noncontiguous=True), (1, 2), name="noncontig"),
            SampleInput(_x((0, 3), dtype, rng), (1, 1), name="empty")]


def _select_errors(rng):
    x = _arr(3, 4)
    return [E(SampleInput(x, (0, 3)), IndexError,
              "select(): index 3 out of range for tensor of size [3, 4] at dimension 0"),
            E(SampleInput(x, (-1, -5)), IndexError,
              "select(): index -5 out of range for tensor of size [3, 4] at dimension 1"),
            E(SampleInput(_arr(), (0, 0)), IndexError,
              "select() cannot be applied to a 0-dim tensor.")]


def _select_ref(x, dim, index):
    return x[(slice(None),) * (dim % x.ndim) + (index, Ellipsis)]


def _unfold_ref(x, dim, size, step):
    if x.ndim == 0:
        return x.reshape(1)[:size]
    w = np.lib.stride_tricks.sliding_window_view(x, size, axis=dim)
    return w[(slice(None),) * (dim % x.ndim) + (slice(None, None, step),)]


def _unfold_samples(dtype, rng):
    x = _x((3, 4), dtype, rng)
    return [SampleInput(x, (1, 2, 1)), SampleInput(x, (0, 2, 1)), SampleInput(x, (1, 3, 2)),
            SampleInput(x, (-1, 4, 1)), SampleInput(_x((5,), dtype, rng), (0, 2, 2)),
            SampleInput(_x((), dtype, rng), (0, 1, 1)),
            SampleInput(_x((3, 4), dtype, rng, noncontiguous=True), (1, 2, 1), name="noncontig")]


def _unfold_errors(rng):
    x = _arr(3, 4)
    return [E(SampleInput(x, (1, 5, 1)), RuntimeError,
              "maximum size for tensor at dimension 1 is 4 but size is 5"),
            E(SampleInput(x, (1, 2, 0)), RuntimeError, "step is 0 but must be > 0")]


def _diagonal_samples(dtype, rng):
    x = _x((3, 4), dtype, rng)
    y = _x((2, 3, 4), dtype, rng)
    return [SampleInput(x), SampleInput(x, (1,)), SampleInput(x, (-1,)), SampleInput(x, (5,)),
            SampleInput(y, (0, 1, 2)), SampleInput(y, (1, -1, 0)),
            SampleInput(y, kwargs={"offset": -1, "dim1": 2, "dim2": 0}),
            SampleInput(_x((3, 4), dtype, rng, noncontiguous=True), (1,), name="noncontig")]


def _diagonal_ref(x, offset=0, dim1=0, dim2=1):
    return np.diagonal(x, offset, dim1, dim2)


def _diagonal_errors(rng):
    return [E(SampleInput(_arr(3, 4), (0, 0, 0)), RuntimeError,
              "diagonal dimensions cannot be identical 0, 0"),
            E(SampleInput(_arr(3), ()), IndexError, "Dimension out of range")]


def _unbind_samples(dtype, rng):
    x = _x((3, 4), dtype, rng)
    return [SampleInput(x), SampleInput(x, (1,)), SampleInput(x, (-1,)),
            SampleInput(_x((2, 3), dtype, rng, noncontiguous=True), (0,), name="noncontig"),
            SampleInput(_x((1,), dtype, rng))]


def _unbind_ref(x, dim=0):
    return tuple(np.moveaxis(x, dim, 0))


def _split_ref(x, s, dim=0):
    n = x.shape[dim]
    if isinstance(s, int):
        b = list(range(s, n, s))
    else:
        b = list(np.cumsum(s)[:-1])
    return tuple(np.split(x, b, axis=dim))


def _split_samples(dtype, rng):
    x = _x((5, 4), dtype, rng)
    return [SampleInput(x, (2,)), SampleInput(x, ([1, 4],)), SampleInput(x, (3, 1)),
            SampleInput(x, ([0, 1, 3], -1)), SampleInput(x, (5,)), SampleInput(x, (7,)),
            SampleInput(_x((4, 2), dtype, rng, noncontiguous=True), (3,), name="noncontig")]


def _split_errors(rng):
    x = _arr(3, 4)
    return [E(SampleInput(x, (0,)), RuntimeError, "split_size can only be 0 if dimension size is "
                                                 "0, but got dimension size of 3"),
            E(SampleInput(x, ([1, 1],)), RuntimeError,
              "split_with_sizes expects split_sizes to sum exactly to 3 (input tensor's size at "
              "dimension 0), but got split_sizes=[1, 1]"),
            E(SampleInput(x, (-1,)), RuntimeError,
              "split expects split_size be non-negative, but got split_size=-1"),
            E(SampleInput(_arr(), (1,)), RuntimeError,
              "split expects at least a 1-dimensional tensor")]


def _sws_samples(dtype, rng):
    x = _x((5, 4), dtype, rng)
    return [SampleInput(x, ([1, 4],)), SampleInput(x, ([0, 4], 1)), SampleInput(x, ([5],))]


def _tensor_split_ref(x, ios, dim=0):
    return tuple(np.array_split(x, ios, axis=dim)) if isinstance(ios, int) else \
        tuple(np.split(x, ios, axis=dim))


def _tensor_split_samples(dtype, rng):
    x = _x((7, 3), dtype, rng)
    return [SampleInput(x, (3,)), SampleInput(x, ([1, 4],)), SampleInput(x, ([2, 9],)),
            SampleInput(x, (2, 1)), SampleInput(x, ([3, 1],)), SampleInput(x, (9,))]


def _tensor_split_errors(rng):
    return [E(SampleInput(_arr(3), (0,)), RuntimeError,
              "number of sections must be larger than 0, got 0"),
            E(SampleInput(_arr(), (1,)), RuntimeError,
              "tensor_split expected at least a 1-dimensional tensor, but got a tensor with 0 "
              "dims")]


def _chunk_ref(x, chunks, dim=0):
    n = x.shape[dim]
    ss = -(-n // chunks)
    if ss == 0:
        return tuple(np.split(x, [0] * (chunks - 1), axis=dim))
    return tuple(np.split(x, list(range(ss, n, ss)), axis=dim))


def _chunk_samples(dtype, rng):
    x = _x((5, 4), dtype, rng)
    return [SampleInput(x, (3,)), SampleInput(x, (2, 1)), SampleInput(x, (6,)),
            SampleInput(x, (4,)), SampleInput(_x((0,), dtype, rng), (3,), name="empty")]


def _chunk_errors(rng):
    return [E(SampleInput(_arr(3), (0,)), RuntimeError,
              "chunk expects `chunks` to be greater than 0, got: 0")]


def _movedim_samples(dtype, rng):
    x = _x((2, 3, 4), dtype, rng)
    return [SampleInput(x, (0, 2)), SampleInput(x, ((0, 1), (2, 0))), SampleInput(x, (-1, 0)),
            SampleInput(x, ([], [])), SampleInput(_x((), dtype, rng), (0, 0))]


def _movedim_ref(x, s, d):
    return np.moveaxis(x, s, d) if x.ndim else x


def _movedim_errors(rng):
    x = _arr(3, 4)
    return [E(SampleInput(x, ((0, 1), (1,))), RuntimeError,
              "movedim: Invalid source or destination dims: source ([0, 1] dims) should contain "
              "the same number of dims as destination ([1] dims)"),
            E(SampleInput(x, ((0, 0), (1, 0))), RuntimeError,
              "movedim: repeated dim in `source` ([0, 0])"),
            E(SampleInput(x, (0, 5)), IndexError, "Dimension out of range")]


def _swap_samples(dtype, rng):
    x = _x((2, 3, 4), dtype, rng)
    return [SampleInput(x, (0, 2)), SampleInput(x, (-1, 1)), SampleInput(x, (1, 1))]


def _t_samples(dtype, rng):
    return [SampleInput(_x((3, 4), dtype, rng)), SampleInput(_x((4,), dtype, rng)),
            SampleInput(_x((), dtype, rng)),
            SampleInput(_x((3, 4), dtype, rng, noncontiguous=True), name="noncontig")]


def _t_errors(rng):
    return [E(SampleInput(_arr(2, 3, 4)), RuntimeError,
              "t() expects a tensor with <= 2 dimensions, but self is 3D")]


_SAME_SIZE = {"float32": "int32", "float64": "int64", "int64": "float64", "int32": "float32",
              "uint8": "int8", "int8": "bool", "int16": "float16", "bool": "uint8",
              "complex64": "float64", "complex128": "complex128"}
_HALF_SIZE = {"float32": "int16", "float64": "float32", "int64": "int32", "int32": "int16",
              "int16": "uint8", "complex64": "float32", "complex128": "float64"}


def _view_dtype_samples(dtype, rng):
    x = _x((3, 4), dtype, rng)
    out = [SampleInput(x, (getattr(ember, _SAME_SIZE[dtype]),))]
    if dtype in _HALF_SIZE:
        out.append(SampleInput(x, (getattr(ember, _HALF_SIZE[dtype]),)))
    if np.dtype(dtype).itemsize <= 4 and dtype != "bool":
        out.append(SampleInput(_x((3, 8), dtype, rng), (ember.float64 if dtype != "uint8"
                                                         else ember.int16,), name="bigger"))
    return out


def _view_dtype_ref(x, d):
    return x.view(np.dtype(d.np))


def _view_dtype_errors(rng):
    x = _arr(3, 4)
    return [E(SampleInput(x.T, (ember.int16,)), RuntimeError,
              "self.stride(-1) must be 1 to view Float as Short (different element sizes), but "
              "got 4"),
            E(SampleInput(_arr(3, 3), (ember.float64,)), RuntimeError,
              "self.size(-1) must be divisible by 2 to view Float as Double (different element "
              "sizes), but got 3"),
            E(SampleInput(_arr(), (ember.float16,)), RuntimeError,
              "self.dim() cannot be 0 to view Float as Half (different element sizes)")]


def _as_strided_samples(dtype, rng):
    x = _x((3, 4), dtype, rng)
    return [SampleInput(x, ((2, 2), (1, 2))), SampleInput(x, ((2, 2), (4, 1), 1)),
            SampleInput(x, ((3,), (0,))), SampleInput(x, ((2, 3), (1, 1), 6)),
            SampleInput(x, ((0, 5), (1, 1), 12)), SampleInput(x, ((), (), 11))]


def _as_strided_ref(x, size, stride, offset=0):
    flat = np.ascontiguousarray(x).reshape(-1)
    item = flat.itemsize
    return np.lib.stride_tricks.as_strided(flat[offset:], size, [s * item for s in stride])


def _as_strided_errors(rng):
    x = _arr(3, 4)
    return [E(SampleInput(x, ((2, 2), (1, 1), 11)), RuntimeError,
              "setStorage: sizes [2, 2], strides [1, 1], storage offset 11, and itemsize 4 "
              "requiring a storage size of 56 are out of bounds for storage of size 48"),
            E(SampleInput(x, ((5, 3), (3, 1))), RuntimeError,
              "requiring a storage size of 60 are out of bounds for storage of size 48"),
            E(SampleInput(x, ((2, 2), (1, -1))), RuntimeError,
              "as_strided: Negative strides are not supported at the moment, got strides: "
              "[1, -1]"),
            E(SampleInput(x, ((2,), (1, 1))), RuntimeError,
              "mismatch in length of strides and shape"),
            E(SampleInput(x, ((2, 2), (1, 1), -1)), RuntimeError,
              "Tensor: invalid storage offset -1")]


def _flatten_samples(dtype, rng):
    x = _x((2, 3, 4), dtype, rng)
    return [SampleInput(x), SampleInput(x, (1,)), SampleInput(x, (0, 1)), SampleInput(x, (-2, -1)),
            SampleInput(x, (1, 1)), SampleInput(_x((), dtype, rng)),
            SampleInput(_x((2, 3, 4), dtype, rng, noncontiguous=True), (1,), name="noncontig")]


def _flatten_ref(x, s=0, e=-1):
    if x.ndim == 0:
        return x.reshape(1)
    s, e = s % x.ndim, e % x.ndim
    return x.reshape(x.shape[:s] + (-1,) + x.shape[e + 1:])


def _flatten_errors(rng):
    return [E(SampleInput(_arr(3, 4), (1, 0)), RuntimeError,
              "flatten() has invalid args: start_dim cannot come after end_dim")]


def _unflatten_samples(dtype, rng):
    x = _x((2, 12), dtype, rng)
    return [SampleInput(x, (1, (3, 4))), SampleInput(x, (1, (-1, 2))), SampleInput(x, (0, (1, 2))),
            SampleInput(x, (-1, (2, 3, 2))),
            SampleInput(_x((2, 12), dtype, rng, noncontiguous=True), (1, (6, 2)), name="noncontig")]


def _unflatten_ref(x, dim, sizes):
    d = dim % x.ndim
    return x.reshape(x.shape[:d] + tuple(sizes) + x.shape[d + 1:])


def _unflatten_errors(rng):
    x = _arr(3, 4)
    return [E(SampleInput(x, (1, (3, 2))), RuntimeError,
              "unflatten: Provided sizes [3, 2] don't multiply up to the size of dim 1 (4) in "
              "the input tensor"),
            E(SampleInput(x, (1, ())), RuntimeError, "unflatten: sizes must be non-empty")]


def _ravel_samples(dtype, rng):
    return [SampleInput(_x((3, 4), dtype, rng)), SampleInput(_x((), dtype, rng)),
            SampleInput(_x((3, 4), dtype, rng, noncontiguous=True), name="noncontig")]


# ====================================================================== joining

def _cat_samples(dtype, rng):
    return [SampleInput([_x((2, 3), dtype, rng), _x((4, 3), dtype, rng)]),
            SampleInput([_x((2, 3), dtype, rng), _x((2, 1), dtype, rng)], (1,)),
            SampleInput([_x((2, 3), dtype, rng), _x((2, 2), dtype, rng),
                         _x((2, 1), dtype, rng)], (-1,)),
            SampleInput([_x((0,), dtype, rng), _x((2, 3), dtype, rng)], name="legacy-empty"),
            SampleInput([_x((3,), dtype, rng)]),
            SampleInput([_x((2, 3), dtype, rng, noncontiguous=True), _x((0, 3), dtype, rng)],
                        name="noncontig")]


def _cat_ref(ts, dim=0):
    keep = [t for t in ts if not (t.ndim == 1 and t.shape[0] == 0)]
    return np.concatenate(keep, axis=dim) if keep else ts[0]


def _cat_errors(rng):
    x = _arr(3, 4)
    return [E(SampleInput([x, _arr(3, 5)]), RuntimeError,
              "Sizes of tensors must match except in dimension 0. Expected size 4 but got size 5 "
              "for tensor number 1 in the list."),
            E(SampleInput([_arr(), x]), RuntimeError,
              "zero-dimensional tensor (at position 0) cannot be concatenated"),
            E(SampleInput([x, _arr(3)]), RuntimeError,
              "Tensors must have same number of dimensions: got 2 and 1"),
            E(SampleInput([x, x], (2,)), IndexError, "Dimension out of range"),
            E(SampleInput([]), ValueError, "torch.cat(): expected a non-empty list of Tensors")]


def _stack_samples(dtype, rng):
    a, b = _x((2, 3), dtype, rng), _x((2, 3), dtype, rng)
    return [SampleInput([a, b]), SampleInput([a, b], (1,)), SampleInput([a, b, a], (2,)),
            SampleInput([a, b], (-1,)), SampleInput([_x((), dtype, rng), _x((), dtype, rng)])]


def _stack_errors(rng):
    x = _arr(3, 4)
    return [E(SampleInput([x, x.T]), RuntimeError,
              "stack expects each tensor to be equal size, but got [3, 4] at entry 0 and [4, 3] "
              "at entry 1"),
            E(SampleInput([]), RuntimeError, "stack expects a non-empty TensorList"),
            E(SampleInput([x, x], (3,)), IndexError, "Dimension out of range")]


def _hv_samples(dtype, rng):
    return [SampleInput([_x((3,), dtype, rng), _x((2,), dtype, rng)]),
            SampleInput([_x((2, 3), dtype, rng), _x((2, 1), dtype, rng)]),
            SampleInput([_x((), dtype, rng), _x((1,), dtype, rng)])]


def _vstack_samples(dtype, rng):
    return [SampleInput([_x((3,), dtype, rng), _x((3,), dtype, rng)]),
            SampleInput([_x((2, 3), dtype, rng), _x((1, 3), dtype, rng)]),
            SampleInput([_x((), dtype, rng), _x((1,), dtype, rng)])]


def _dstack_samples(dtype, rng):
    return [SampleInput([_x((3,), dtype, rng), _x((3,), dtype, rng)]),
            SampleInput([_x((2, 3), dtype, rng), _x((2, 3), dtype, rng)]),
            SampleInput([_x((2, 3, 1), dtype, rng), _x((2, 3, 2), dtype, rng)]),
            SampleInput([_x((), dtype, rng), _x((1, 1), dtype, rng)])]


def _column_stack_samples(dtype, rng):
    return [SampleInput([_x((3,), dtype, rng), _x((3, 2), dtype, rng)]),
            SampleInput([_x((), dtype, rng), _x((1, 2), dtype, rng)]),
            SampleInput([_x((2, 2), dtype, rng), _x((2,), dtype, rng)])]


def _column_stack_ref(ts):
    return np.column_stack(ts)


def _empty_list_error(name):
    return lambda rng: [E(SampleInput([]), RuntimeError, f"{name} expects a non-empty TensorList")]


def _atleast_samples(dtype, rng):
    return [SampleInput(_x((), dtype, rng)), SampleInput(_x((3,), dtype, rng)),
            SampleInput(_x((2, 3), dtype, rng)), SampleInput(_x((2, 3, 2), dtype, rng)),
            SampleInput(_x((3,), dtype, rng), (_x((), dtype, rng), _x((2, 2), dtype, rng)),
                        name="several")]


def _atleast_ref(fn):
    def ref(x, *rest):
        return fn(x) if not rest else tuple(fn(a) for a in (x,) + rest)
    return ref


def _flip_samples(dtype, rng):
    x = _x((2, 3, 4), dtype, rng)
    return [SampleInput(x, ((0,),)), SampleInput(x, ((0, 2),)), SampleInput(x, ((-1, 1),)),
            SampleInput(x, ((),)), SampleInput(_x((), dtype, rng), ((),)),
            SampleInput(_x((3, 4), dtype, rng, noncontiguous=True), ((1,),), name="noncontig")]


def _flip_errors(rng):
    return [E(SampleInput(_arr(3, 4), ((0, 0),)), RuntimeError,
              "dim 0 appears multiple times in the list of dims")]


def _lrud_samples(dtype, rng):
    return [SampleInput(_x((3, 4), dtype, rng)), SampleInput(_x((2, 3, 2), dtype, rng))]


def _roll_samples(dtype, rng):
    x = _x((3, 4), dtype, rng)
    return [SampleInput(x, (1,)), SampleInput(x, (1, 0)), SampleInput(x, ((1, -2), (0, 1))),
            SampleInput(x, (-5, -1)), SampleInput(_x((), dtype, rng), (2,)),
            SampleInput(_x((3, 4), dtype, rng, noncontiguous=True), (2, 1), name="noncontig")]


def _roll_ref(x, shifts, dims=None):
    return np.roll(x, shifts, dims)


def _roll_errors(rng):
    x = _arr(3, 4)
    return [E(SampleInput(x, (1, (0, 1))), RuntimeError,
              "shifts and dimensions must align. shifts: 1, dims:2"),
            E(SampleInput(x, ((1, 2),)), RuntimeError,
              "shifts and dimensions must align. shifts: 2, dims:0")]


def _rot90_samples(dtype, rng):
    x = _x((3, 4), dtype, rng)
    return [SampleInput(x), SampleInput(x, (2,)), SampleInput(x, (3, (1, 0))),
            SampleInput(x, (-1,)),
            SampleInput(x, (4,)), SampleInput(_x((2, 3, 4), dtype, rng), (1, (0, 2)))]


def _rot90_ref(x, k=1, dims=(0, 1)):
    return np.rot90(x, k, dims)


def _rot90_errors(rng):
    x = _arr(3, 4)
    return [E(SampleInput(x, (1, (0, 0))), RuntimeError,
              "expected rotation dims to be different, but got dim0 = 0 and dim1 = 0"),
            E(SampleInput(x, (1, (0, 1, 2))), RuntimeError,
              "expected total rotation dims == 2, but got dims = 3"),
            E(SampleInput(_arr(3)), RuntimeError,
              "expected total dims >= 2, but got total dims = 1")]


def _repeat_samples(dtype, rng):
    x = _x((2, 3), dtype, rng)
    return [SampleInput(x, ((2, 1),)), SampleInput(x, ((2, 1, 3),)), SampleInput(x, ((1, 1),)),
            SampleInput(x, ((0, 2),)), SampleInput(_x((), dtype, rng), ((2,),)),
            SampleInput(_x((2, 3), dtype, rng, noncontiguous=True), ((1, 2),), name="noncontig")]


def _repeat_ref(x, reps):
    return np.tile(x.reshape((1,) * (len(reps) - x.ndim) + x.shape), reps)


def _repeat_errors(rng):
    return [E(SampleInput(_arr(3, 4), ((2,),)), RuntimeError,
              "Number of dimensions of repeat dims can not be smaller than number of dimensions "
              "of tensor"),
            E(SampleInput(_arr(3, 4), ((-1, 2),)), RuntimeError,
              "Trying to create tensor with negative dimension -3: [-3, 8]")]


def _tile_samples(dtype, rng):
    x = _x((2, 3), dtype, rng)
    return [SampleInput(x, ((2,),)), SampleInput(x, ((2, 1, 2),)), SampleInput(x, ((),))]


def _ri_samples(dtype, rng):
    x = _x((2, 3), dtype, rng)
    return [SampleInput(x, (2,)), SampleInput(x, (2, 0)), SampleInput(x, (_I(1, 0, 2), 1)),
            SampleInput(x, (np.array(2),)), SampleInput(x, (_I(3), 0)),
            SampleInput(_x((), dtype, rng), (3,))]


def _ri_ref(x, repeats, dim=None):
    return np.repeat(x if dim is not None or x.ndim else x.reshape(1), repeats, axis=dim)


def _ri_errors(rng):
    x = _arr(3, 4)
    return [E(SampleInput(x, (_I(1, 2), 0)), RuntimeError,
              "repeats must have the same size as input along dim, but got repeats.size(0) = 2 "
              "and input.size(0) = 3"),
            E(SampleInput(x, (-1,)), RuntimeError, "Repeats must be non-negative")]


def _ri_counts_samples(dtype, rng):
    return [SampleInput(np.array([1, 0, 3], dtype)), SampleInput(np.array([], dtype)),
            SampleInput(np.array([2, 2], dtype), kwargs={"output_size": 4})]


def _ri_counts_errors(rng):
    return [E(SampleInput(_I(-1, 2)), RuntimeError, "repeats can not be negative"),
            E(SampleInput(np.array(2)), RuntimeError,
              "repeat_interleave only accept 1D vector as repeat"),
            E(SampleInput(_I(1, 2), kwargs={"output_size": 2}), RuntimeError,
              "repeat_interleave: Invalid output_size, expected 3 but got 2")]


def _broadcast_to_samples(dtype, rng):
    return [SampleInput(_x((3, 1), dtype, rng), ((2, 3, 4),)),
            SampleInput(_x((), dtype, rng), ((2,),)), SampleInput(_x((3,), dtype, rng), ((2, -1),))]


def _broadcast_to_ref(x, shape):
    shape = tuple(x.shape[i - len(shape) + x.ndim] if s == -1 else s for i, s in enumerate(shape))
    return np.broadcast_to(x, shape)


def _broadcast_tensors_samples(dtype, rng):
    return [SampleInput(_x((3, 1), dtype, rng), (_x((1, 4), dtype, rng),)),
            SampleInput(_x((), dtype, rng), (_x((2, 3), dtype, rng), _x((3,), dtype, rng)))]


def _broadcast_tensors_errors(rng):
    return [E(SampleInput(_arr(3, 4), (_arr(5),)), RuntimeError,
              "The size of tensor a (4) must match the size of tensor b (5) at non-singleton "
              "dimension 1")]


def _tri_samples(dtype, rng):
    x = _x((3, 4), dtype, rng)
    return [SampleInput(x), SampleInput(x, (1,)), SampleInput(x, (-1,)),
            SampleInput(_x((2, 3, 3), dtype, rng), (0,)),
            SampleInput(_x((3, 4), dtype, rng, noncontiguous=True), (-2,), name="noncontig")]


def _tri_errors(name):
    return lambda rng: [E(SampleInput(_arr(3)), RuntimeError,
                          f"{name}: input tensor must have at least 2 dimensions")]


def _diag_samples(dtype, rng):
    return [SampleInput(_x((4,), dtype, rng)), SampleInput(_x((3,), dtype, rng), (1,)),
            SampleInput(_x((3, 4), dtype, rng)), SampleInput(_x((3, 4), dtype, rng), (-1,)),
            SampleInput(_x((3, 4), dtype, rng), (2,))]


def _diag_errors(rng):
    return [E(SampleInput(_arr(2, 2, 2)), RuntimeError,
              "diag(): Supports 1D or 2D tensors. Got 3D")]


def _diag_embed_samples(dtype, rng):
    return [SampleInput(_x((2, 3), dtype, rng)), SampleInput(_x((2, 3), dtype, rng), (1,)),
            SampleInput(_x((2, 3), dtype, rng), (-1, 0, 2)), SampleInput(_x((3,), dtype, rng)),
            SampleInput(_x((2, 3), dtype, rng), kwargs={"dim1": 2, "dim2": 0})]


def _diag_embed_ref(x, offset=0, dim1=-2, dim2=-1):
    n = x.shape[-1] + abs(offset)
    out = np.zeros(x.shape[:-1] + (n, n), x.dtype)
    k = np.arange(x.shape[-1])
    r, c = (k, k + offset) if offset >= 0 else (k - offset, k)
    out[..., r, c] = x
    nd = out.ndim
    d1, d2 = dim1 % nd, dim2 % nd
    return np.moveaxis(out, (nd - 2, nd - 1), (d1, d2))


def _diag_embed_errors(rng):
    return [E(SampleInput(_arr(3), (0, 0, 0)), RuntimeError,
              "diagonal dimensions cannot be identical 0, 0")]


def _diagflat_samples(dtype, rng):
    return [SampleInput(_x((2, 2), dtype, rng)), SampleInput(_x((3,), dtype, rng), (1,)),
            SampleInput(_x((3,), dtype, rng), (-2,))]


def _block_diag_samples(dtype, rng):
    return [SampleInput(_x((2, 2), dtype, rng), (_x((3,), dtype, rng), _x((), dtype, rng))),
            SampleInput(_x((1, 3), dtype, rng), (_x((2, 1), dtype, rng),)),
            SampleInput(_x((2, 0), dtype, rng), (_x((1, 2), dtype, rng),))]


def _block_diag_ref(*ts):
    mats = [t.reshape(1, -1) if t.ndim < 2 else t for t in ts]
    out = np.zeros((sum(m.shape[0] for m in mats), sum(m.shape[1] for m in mats)), ts[0].dtype)
    r = c = 0
    for m in mats:
        out[r:r + m.shape[0], c:c + m.shape[1]] = m
        r, c = r + m.shape[0], c + m.shape[1]
    return out


def _block_diag_errors(rng):
    return [E(SampleInput(_arr(2, 2, 2)), RuntimeError,
              "torch.block_diag: Input tensors must have 2 or fewer dimensions. Input 0 has 3 "
              "dimensions")]


def _meshgrid_samples(dtype, rng):
    a, b, c = _x((2,), dtype, rng), _x((3,), dtype, rng), _x((), dtype, rng)
    return [SampleInput(a, (b,), {"indexing": "ij"}), SampleInput(a, (b, c), {"indexing": "xy"}),
            SampleInput(a, (), {"indexing": "xy"})]


def _meshgrid_ref(*ts, indexing="ij"):
    return tuple(np.meshgrid(*[t.reshape(-1) for t in ts], indexing=indexing))


def _meshgrid_errors(rng):
    return [E(SampleInput(_arr(2), kwargs={"indexing": "foo"}), RuntimeError,
              'torch.meshgrid: indexing must be one of "xy" or "ij", but received: foo'),
            E(SampleInput(_arr(2, 2), kwargs={"indexing": "ij"}), RuntimeError,
              "torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got:")]


def _cartesian_samples(dtype, rng):
    return [SampleInput(_x((2,), dtype, rng), (_x((3,), dtype, rng),)),
            SampleInput(_x((2,), dtype, rng), (_x((1,), dtype, rng), _x((2,), dtype, rng))),
            SampleInput(_x((3,), dtype, rng))]


def _cartesian_ref(*ts):
    if len(ts) == 1:
        return ts[0]
    return np.stack([g.reshape(-1) for g in np.meshgrid(*ts, indexing="ij")], axis=1)


def _combinations_samples(dtype, rng):
    x = _x((4,), dtype, rng)
    return [SampleInput(x), SampleInput(x, (3,)), SampleInput(x, (2, True)), SampleInput(x, (1,)),
            SampleInput(x, (0,)), SampleInput(x, (5,))]


def _combinations_ref(x, r=2, with_replacement=False):
    if r == 0:
        return np.zeros((0,), x.dtype)
    f = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    rows = list(f(range(x.shape[0]), r))
    idx = np.array(rows, dtype=np.int64).reshape(len(rows), r)
    return x[idx]


def _combinations_errors(rng):
    return [E(SampleInput(_arr(3, 4)), RuntimeError, "Expect a 1D vector, but got shape [3, 4]"),
            E(SampleInput(_arr(3), (-1,)), RuntimeError,
              "Expect a non-negative number, but got -1")]


def _tri_idx_samples(dtype, rng):
    return [SampleInput(3, (3,)), SampleInput(3, (4, 1)), SampleInput(4, (3, -1)),
            SampleInput(0, (0,)), SampleInput(3, (3,), {"dtype": ember.int32})]


def _tri_idx_ref(lower):
    def ref(row, col, offset=0, dtype=None):
        f = np.tril_indices if lower else np.triu_indices
        return np.stack(f(row, offset, col)).astype(np.int64)
    return ref


def _tri_idx_errors(rng):
    return [E(SampleInput(-1, (3,)), RuntimeError, "row must be non-negative, got-1"),
            E(SampleInput(3, (3,), {"dtype": ember.float32}), NotImplementedError,
              "\"tril_indices\" not implemented for 'Float'")]


# ====================================================================== index ops

def _gather_samples(dtype, rng):
    x = _x((3, 4), dtype, rng)
    return [SampleInput(x, (1, _I([0, 3], [1, 1], [2, 0]))),
            SampleInput(x, (0, _I([[2, 0, 1, 1]]))), SampleInput(x, (1, _I([0], [3]))),
            SampleInput(x, (-1, _I([1, 1, 2, 3, 0]).reshape(1, 5))),
            SampleInput(_x((), dtype, rng), (0, np.array(0))),
            SampleInput(_x((3, 4), dtype, rng, noncontiguous=True), (0, _I([[2, 0, 1, 1]])),
                        name="noncontig")]


def _gather_ref(x, dim, index, sparse_grad=False):
    if x.ndim == 0:
        return x.reshape(1)[index]
    sl = tuple(slice(0, s) if k != dim % x.ndim else slice(None)
               for k, s in enumerate(index.shape))
    return np.take_along_axis(x[sl], index, axis=dim)


def _gather_errors(rng):
    x = _arr(3, 4)
    return [E(SampleInput(x, (1, _I([0, 5]))), RuntimeError,
              "Index tensor must have the same number of dimensions as input tensor"),
            E(SampleInput(x, (1, _I([[0, 5]]))), RuntimeError,
              "index 5 is out of bounds for dimension 1 with size 4"),
            E(SampleInput(x, (1, _I([[0, -1]]))), RuntimeError,
              "index -1 is out of bounds for dimension 1 with size 4"),
            E(SampleInput(x, (0, _I([[0, 1, 2, 0, 1]]))), RuntimeError,
              "Size does not match at dimension 1 expected index [1, 5] to be no larger than "
              "self [3, 4] apart from dimension 0"),
            E(SampleInput(x, (1, np.zeros((1, 1)))), RuntimeError,
              "gather(): Expected dtype int32/int64 for index")]


_PERM_IDX = _I([2, 0], [0, 1], [1, 2])           # (3, 2): unique along dim 0 per column


def _scatter_samples(dtype, rng):
    x = _x((3, 4), dtype, rng)
    src = _x((3, 2), dtype, rng)
    val = True if dtype == "bool" else (2 if dtype in INTS else 2.5)
    return [SampleInput(x, (0, _PERM_IDX, src)), SampleInput(x, (1, _I([3, 0], [1, 2]), src[:2])),
            SampleInput(x, (0, _PERM_IDX, _x((3, 3), dtype, rng)), name="src-bigger"),
            SampleInput(x, (0, _PERM_IDX), {"value": val}), SampleInput(x, (1, _I([[0]]), val)),
            SampleInput(x, (0, _I([[0, 1]]), src[:1]), {"reduce": "add"}, name="reduce"),
            SampleInput(x, (0, _I([[0, 1]]), val), {"reduce": "multiply"}, name="reduce"),
            SampleInput(_x((3, 4), dtype, rng, noncontiguous=True), (0, _PERM_IDX, src),
                        name="noncontig"),
            SampleInput(_x((), dtype, rng), (0, np.array(0), val))]


def _scatter_ref(x, dim, index, src=None, value=None, reduce=None):
    v = src if src is not None else value
    out = x.reshape(1).copy() if x.ndim == 0 else x.copy()
    idx = index.reshape(-1) if index.ndim == 0 else index
    if isinstance(v, np.ndarray) and v.ndim == 0:
        v = v.reshape(1)
    d = dim % out.ndim
    for pos in np.ndindex(*idx.shape):
        tgt = list(pos)
        tgt[d] = idx[pos]
        val = v[pos] if isinstance(v, np.ndarray) else v
        if reduce == "add":
            out[tuple(tgt)] += val
        elif reduce == "multiply":
            out[tuple(tgt)] *= val
        else:
            out[tuple(tgt)] = val
    return out.reshape(x.shape)


def _scatter_errors(rng):
    x = _arr(3, 4)
    return [E(SampleInput(x, (1, _I([[0, 5]]), 1.)), RuntimeError,
              "index 5 is out of bounds for dimension 1 with size 4"),
            E(SampleInput(x, (1, _I([[0, 1]]), _arr(1, 1))), RuntimeError,
              "Expected index [1, 2] to be no larger than self [3, 4] apart from dimension 1 and "
              "to be no larger size than src [1, 1]"),
            E(SampleInput(x, (1, _I([[0, 1]]), 1.), {"reduce": "foo"}), RuntimeError,
              "reduce argument must be either add or multiply."),
            E(SampleInput(x, (1, _I([[0, 1]]), _arr(3, 4, dtype="float64"))), RuntimeError,
              "scatter(): Expected self.dtype to be equal to src.dtype"),
            E(SampleInput(x, (1, _I([0, 1]), 1.)), RuntimeError,
              "Index tensor must have the same number of dimensions as self tensor")]


def _no_reduce(s):
    """Samples torch can differentiate: no ``reduce=``, ``src`` shaped like ``index``."""
    return "reduce" not in s.kwargs and s.name != "src-bigger"


def _scatter_add_samples(dtype, rng):
    x = _x((3, 4), dtype, rng)
    src = _x((3, 4), dtype, rng)
    return [SampleInput(x, (0, _I([0, 0, 2, 1], [0, 0, 0, 0]), src[:2])),
            SampleInput(x, (1, _I([3, 3, 0], [1, 1, 1]), src[:2, :3])),
            SampleInput(x, (0, _I([[0, 0, 2, 1]]), src), name="src-bigger"),
            SampleInput(_x((3, 4), dtype, rng, noncontiguous=True), (-1, _I([[0, 0]]), src[:1, :2]),
                        name="noncontig"),
            SampleInput(_x((), dtype, rng), (0, np.array(0), _x((), dtype, rng)))]


def _scatter_add_ref(x, dim, index, src):
    return _scatter_ref(x, dim, index, src, reduce="add")


def _scatter_reduce_samples(dtype, rng):
    x = _x((3, 4), dtype, rng, low=1)
    src = _x((2, 4), dtype, rng, low=1)
    idx = _I([0, 0, 2, 1], [0, 2, 0, 0])
    out = []
    for red in ("sum", "prod", "mean", "amax", "amin"):
        for inc in (True, False):
            out.append(SampleInput(x, (0, idx, src, red), {"include_self": inc}))
    out.append(SampleInput(x, (1, _I([3, 3, 0], [1, 1, 1]), src[:, :3], "amax")))
    out.append(SampleInput(x, (1, _I([[3, 3, 0]]), src, "sum"), name="src-bigger"))
    return out


def _scatter_reduce_ref(x, dim, index, src, reduce, include_self=True):
    out = x.copy()
    d = dim % x.ndim
    groups = {}
    for pos in np.ndindex(*index.shape):
        tgt = list(pos)
        tgt[d] = index[pos]
        groups.setdefault(tuple(tgt), []).append(src[pos])
    for tgt, vals in groups.items():
        vals = list(vals) + ([x[tgt]] if include_self else [])
        a = np.array(vals)
        if reduce == "sum":
            r = a.sum()
        elif reduce == "prod":
            r = a.prod()
        elif reduce == "mean":
            r = a.sum() // len(a) if x.dtype.kind in "iub" else a.sum() / len(a)
        elif reduce == "amax":
            r = a.max()
        else:
            r = a.min()
        out[tgt] = np.asarray(r).astype(x.dtype)
    return out


def _scatter_reduce_errors(rng):
    x = _arr(3, 4)
    return [E(SampleInput(x, (1, _I([[0, 1]]), x, "foo")), RuntimeError,
              "reduce argument must be either sum, prod, mean, amax or amin, got foo"),
            E(SampleInput(x, (1, _I([[0, 9]]), x, "sum")), RuntimeError,
              "index 9 is out of bounds for dimension 1 with size 4")]


def _index_select_samples(dtype, rng):
    x = _x((3, 4), dtype, rng)
    return [SampleInput(x, (0, _I(2, 0, 2))), SampleInput(x, (1, _I(3))),
            SampleInput(x, (-1, np.array(1))),
            SampleInput(x, (0, np.zeros(0, np.int64))), SampleInput(_x((), dtype, rng), (0, _I(0))),
            SampleInput(x, (1, np.array([0, 3], np.int32))),
            SampleInput(_x((3, 4), dtype, rng, noncontiguous=True), (1, _I(1, 1)),
                        name="noncontig")]


def _index_select_ref(x, dim, index):
    if x.ndim == 0:
        return x
    return np.take(x, index.reshape(-1), axis=dim)


def _index_select_errors(rng):
    x = _arr(3, 4)
    return [E(SampleInput(x, (0, _I(5))), IndexError, "index out of range in self"),
            E(SampleInput(x, (0, _I(-1))), IndexError, "index out of range in self"),
            E(SampleInput(x, (0, _I([[0]]))), IndexError,
              "index_select(): Index is supposed to be a vector"),
            E(SampleInput(x, (0, np.zeros(1))), RuntimeError,
              "index_select(): Expected dtype int32 or int64 for index")]


def _index_add_samples(dtype, rng):
    x = _x((3, 4), dtype, rng)
    return [SampleInput(x, (0, _I(2, 0, 2), _x((3, 4), dtype, rng))),
            SampleInput(x, (1, _I(3, 1), _x((3, 2), dtype, rng))),
            SampleInput(x, (1, _I(3, 1), _x((3, 2), dtype, rng)),
                        {"alpha": 2 if dtype in INTS or dtype == "bool" else 1.5}),
            SampleInput(_x((), dtype, rng), (0, _I(0), _x((), dtype, rng))),
            SampleInput(_x((3, 4), dtype, rng, noncontiguous=True),
                        (0, _I(1), _x((1, 4), dtype, rng)), name="noncontig")]


def _index_add_ref(x, dim, index, source, alpha=1):
    out = x.reshape(1).copy() if x.ndim == 0 else x.copy()
    s = source.reshape(1) if source.ndim == 0 else source
    o = np.moveaxis(out, dim, 0)
    v = np.moveaxis(s, dim, 0)
    for k, i in enumerate(index.reshape(-1)):
        o[i] = o[i] + v[k] * alpha if x.dtype != bool else o[i] | v[k]
    return out.reshape(x.shape)


def _index_add_errors(rng):
    x = _arr(3, 4)
    return [E(SampleInput(x, (0, _I(5), _arr(1, 4))), RuntimeError,
              "index 5 is out of bounds for dimension 0 with size 3"),
            E(SampleInput(x, (0, _I(0), _arr(1, 3))), RuntimeError,
              "source tensor shape must match self tensor shape, excluding the specified "
              "dimension. Got self.shape = [3, 4] source.shape = [1, 3]"),
            E(SampleInput(x, (0, _I(0), _arr(1, 4, dtype="float64"))), RuntimeError,
              "index_add_(): self (Float) and source (Double) must have the same scalar type"),
            E(SampleInput(x, (0, _I(0, 1), _arr(1, 4))), RuntimeError,
              "index_add_(): Number of indices (2) should be equal to source.size(dim): (1), for "
              "dim: 0")]


def _index_copy_samples(dtype, rng):
    x = _x((3, 4), dtype, rng)
    return [SampleInput(x, (0, _I(2, 0), _x((2, 4), dtype, rng))),
            SampleInput(x, (1, _I(3, 1, 0), _x((3, 3), dtype, rng))),
            SampleInput(_x((), dtype, rng), (0, _I(0), _x((), dtype, rng))),
            SampleInput(_x((3, 4), dtype, rng, noncontiguous=True),
                        (0, _I(1), _x((1, 4), dtype, rng)), name="noncontig")]


def _index_copy_ref(x, dim, index, source):
    out = x.reshape(1).copy() if x.ndim == 0 else x.copy()
    s = source.reshape(1) if source.ndim == 0 else source
    np.moveaxis(out, dim, 0)[index.reshape(-1)] = np.moveaxis(s, dim, 0)
    return out.reshape(x.shape)


def _index_copy_errors(rng):
    x = _arr(3, 4)
    return [E(SampleInput(x, (0, _I(5), _arr(1, 4))), IndexError,
              "index_copy_(): index 5 is out of bounds for dimension 0 with size 3"),
            E(SampleInput(x, (0, _I(0, 1), _arr(1, 4))), IndexError,
              "index_copy_(): Number of indices (2) should be equal to source.size(dim) (1)"),
            E(SampleInput(x, (0, _I(0), _arr(1, 3))), RuntimeError,
              "index_copy_(): Source/destination tensor must have same slice shapes. Destination "
              "slice shape: 4 at dimension 1 and source slice shape: 3 at dimension 1."),
            E(SampleInput(x, (0, _I(0), _arr(1, 4, dtype="float64"))), RuntimeError,
              "index_copy_(): self and source expected to have the same dtype, but got (self) "
              "Float and (source) Double")]


def _index_fill_samples(dtype, rng):
    x = _x((3, 4), dtype, rng)
    val = True if dtype == "bool" else (2 if dtype in INTS else 2.5)
    return [SampleInput(x, (0, _I(2, 0), val)), SampleInput(x, (1, _I(-1, 1), val)),
            SampleInput(x, (1, _I(3), _x((), dtype, rng)), name="tensor-value"),
            SampleInput(_x((), dtype, rng), (0, _I(0), val))]


def _index_fill_ref(x, dim, index, value):
    out = x.reshape(1).copy() if x.ndim == 0 else x.copy()
    np.moveaxis(out, dim, 0)[index.reshape(-1)] = value
    return out.reshape(x.shape)


def _index_fill_errors(rng):
    x = _arr(3, 4)
    return [E(SampleInput(x, (0, _I(5), 1.)), IndexError,
              "index 5 is out of bounds for dimension 0 with size 3"),
            E(SampleInput(x, (0, _I(0), _arr(2))), RuntimeError,
              "index_fill_ only supports a 0-dimensional value tensor, but got tensor with 1 "
              "dimension(s).")]


def _index_put_samples(dtype, rng):
    x = _x((3, 4), dtype, rng)
    return [SampleInput(x, ((_I(0, 2),), _x((2, 4), dtype, rng))),
            SampleInput(x, ((_I(0, 2), _I(1, 3)), _x((2,), dtype, rng))),
            SampleInput(x, ((_I(0, 0), _I(1, 1)), _x((2,), dtype, rng)), {"accumulate": True}),
            SampleInput(x, ((_I([0], [1]), _I(0, 1)), _x((), dtype, rng)),
                        {"accumulate": True}, name="broadcast"),
            SampleInput(x, ((_x((3, 4), "bool", rng),), _x((), dtype, rng)), name="mask"),
            SampleInput(_x((3, 4), dtype, rng, noncontiguous=True),
                        ((_I(1),), _x((4,), dtype, rng)), name="noncontig")]


def _index_put_ref(x, indices, values, accumulate=False):
    out = x.copy()
    idx = tuple(np.nonzero(i) if i.dtype == bool else (i,) for i in indices)
    idx = tuple(a for t in idx for a in t)
    if accumulate:
        np.add.at(out, idx, values)
    else:
        out[idx] = values
    return out


def _index_put_errors(rng):
    x = _arr(3, 4)
    return [E(SampleInput(x, ((_I(5),), _arr())), IndexError,
              "index 5 is out of bounds for dimension 0 with size 3"),
            E(SampleInput(x, ((_I(0),), _arr(dtype="float64"))), RuntimeError,
              "Index put requires the source and destination dtypes match, got Float for the "
              "destination and Double for the source."),
            E(SampleInput(x, ((_I(0),), _arr(2))), RuntimeError,
              "shape mismatch: value tensor of shape [2] cannot be broadcast to indexing result "
              "of shape [1, 4]"),
            E(SampleInput(x, ((_I(0, 1), _I(0, 1, 2)), _arr())), IndexError,
              "shape mismatch: indexing tensors could not be broadcast together with shapes "
              "[2], [3]")]


def _index_reduce_samples(dtype, rng):
    x = _x((3, 4), dtype, rng, low=1)
    out = []
    for red in ("prod", "mean", "amax", "amin"):
        for inc in (True, False):
            out.append(SampleInput(x, (1, _I(0, 0, 3), _x((3, 3), dtype, rng, low=1), red),
                                   {"include_self": inc}))
    out.append(SampleInput(_x((), dtype, rng, low=1), (0, _I(0), _x((), dtype, rng, low=1),
                                                       "amax")))
    return out


def _index_reduce_ref(x, dim, index, source, reduce, include_self=True):
    x1 = x.reshape(1) if x.ndim == 0 else x
    s1 = source.reshape(1) if source.ndim == 0 else source
    d = dim % x1.ndim
    shp = [1] * x1.ndim
    shp[d] = -1
    full = np.broadcast_to(index.reshape(shp), s1.shape)
    return _scatter_reduce_ref(x1, d, full, s1, reduce, include_self).reshape(x.shape)


def _index_reduce_errors(rng):
    x = _arr(3, 4)
    return [E(SampleInput(x, (0, _I(0), _arr(1, 4), "foo")), RuntimeError,
              "index_reduce(): Expected reduce to be one of prod, mean, amax or amin but got "
              "foo."),
            E(SampleInput(x, (0, _I(5), _arr(1, 4), "prod")), IndexError,
              "index out of range in self")]


def _masked_fill_samples(dtype, rng):
    x = _x((3, 4), dtype, rng)
    val = True if dtype == "bool" else (2 if dtype in INTS else 2.5)
    m = _x((3, 4), "bool", rng)
    return [SampleInput(x, (m, val)), SampleInput(x, (m[0], val), name="broadcast-mask"),
            SampleInput(x, (m, _x((), dtype, rng)), name="tensor-value"),
            SampleInput(_x((4,), dtype, rng), (m, val), name="broadcast-self"),
            SampleInput(_x((3, 4), dtype, rng, noncontiguous=True), (m, val), name="noncontig"),
            SampleInput(_x((), dtype, rng), (np.array(True), val))]


def _masked_fill_ref(x, mask, value):
    shape = np.broadcast_shapes(x.shape, mask.shape)
    return np.where(mask, np.asarray(value).astype(x.dtype), x).reshape(shape)


def _masked_fill_errors(rng):
    x = _arr(3, 4)
    m = _x((3, 4), "bool", rng)
    return [E(SampleInput(x, (x, 1.)), RuntimeError,
              "masked_fill_ only supports boolean masks, but got mask with dtype float"),
            E(SampleInput(x, (m, _arr(2))), RuntimeError,
              "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with 1 "
              "dimension(s)."),
            E(SampleInput(x, (_x((5,), "bool", rng), 1.)), RuntimeError,
              "The size of tensor a (5) must match the size of tensor b (4) at non-singleton "
              "dimension 1")]


def _masked_select_samples(dtype, rng):
    x = _x((3, 4), dtype, rng)
    m = _x((3, 4), "bool", rng)
    return [SampleInput(x, (m,)), SampleInput(x, (m[1],), name="broadcast-mask"),
            SampleInput(_x((4,), dtype, rng), (m,), name="broadcast-self"),
            SampleInput(_x((3, 4), dtype, rng, noncontiguous=True), (m,), name="noncontig"),
            SampleInput(x, (np.zeros((3, 4), bool),), name="none")]


def _masked_select_ref(x, mask):
    shape = np.broadcast_shapes(x.shape, mask.shape)
    return np.broadcast_to(x, shape)[np.broadcast_to(mask, shape)]


def _masked_select_errors(rng):
    x = _arr(3, 4)
    return [E(SampleInput(x, (x,)), RuntimeError, "masked_select: expected BoolTensor for mask")]


def _masked_scatter_samples(dtype, rng):
    x = _x((3, 4), dtype, rng)
    m = _x((3, 4), "bool", rng)
    return [SampleInput(x, (m, _x((12,), dtype, rng))),
            SampleInput(x, (m, _x((4, 5), dtype, rng)), name="bigger-source"),
            SampleInput(x, (m[0], _x((3, 4), dtype, rng)), name="broadcast-mask"),
            SampleInput(_x((3, 4), dtype, rng, noncontiguous=True), (m, _x((3, 4), dtype, rng)),
                        name="noncontig")]


def _masked_scatter_ref(x, mask, source):
    shape = np.broadcast_shapes(x.shape, mask.shape)
    out = np.array(np.broadcast_to(x, shape))
    m = np.broadcast_to(mask, shape)
    out[m] = source.reshape(-1)[:m.sum()]
    return out


def _masked_scatter_errors(rng):
    x = _arr(3, 4)
    m = np.ones((3, 4), bool)
    return [E(SampleInput(x, (m, _arr(2))), RuntimeError,
              "Number of elements of source < number of ones in mask"),
            E(SampleInput(x, (x, _arr(12))), RuntimeError,
              "masked_scatter_ only supports boolean masks, but got mask with dtype Float"),
            E(SampleInput(x, (m, _arr(12, dtype="int64"))), RuntimeError,
              "masked_scatter: expected self and source to have same dtypes but gotFloat and "
              "Long")]


def _take_samples(dtype, rng):
    x = _x((3, 4), dtype, rng)
    return [SampleInput(x, (_I(0, 5, -1, 11),)), SampleInput(x, (_I([1, 1], [2, -12]),)),
            SampleInput(_x((), dtype, rng), (_I(0, 0),)),
            SampleInput(_x((3, 4), dtype, rng, noncontiguous=True), (_I(3, 4),), name="noncontig")]


def _take_ref(x, index):
    return x.reshape(-1)[index]


def _take_errors(rng):
    x = _arr(3, 4)
    return [E(SampleInput(x, (_I(12),)), IndexError,
              "out of range: tried to access index 12 on a tensor of 12 elements."),
            E(SampleInput(x, (_I(-13),)), IndexError,
              "out of range: tried to access index -13 on a tensor of 12 elements."),
            E(SampleInput(x, (np.array([1], np.int32),)), RuntimeError,
              "take(): Expected a long tensor for index, but got Int")]


def _take_along_dim_samples(dtype, rng):
    x = _x((3, 4), dtype, rng)
    return [SampleInput(x, (_I([0], [1]),)), SampleInput(x, (_I([0, 3], [1, 1], [2, 2]), 1)),
            SampleInput(x, (_I([[2, 0, 1, 0]]), 0)), SampleInput(x, (_I([[0]]), 1)),
            SampleInput(x, (_I([[1], [0], [2]]), 0), name="broadcast")]


def _take_along_dim_ref(x, indices, dim=None):
    if dim is None:
        return np.take_along_axis(x.reshape(-1), indices.reshape(-1), 0)
    d = dim % x.ndim
    ss = list(x.shape)
    ss[d] = indices.shape[d]
    ii = list(indices.shape)
    ii[d] = x.shape[d]
    return np.take_along_axis(np.broadcast_to(x, np.broadcast_shapes(ii, x.shape)),
                              np.broadcast_to(indices, np.broadcast_shapes(ss, indices.shape)), d)


def _take_along_dim_errors(rng):
    x = _arr(3, 4)
    return [E(SampleInput(x, (_I(0), 1)), RuntimeError,
              "torch.take_along_dim(): input and indices should have the same number of "
              "dimensions, but got 2 dimensions for input, and 1 dimensions for indices"),
            E(SampleInput(x, (_I([0], [1]), 1)), RuntimeError,
              "The size of tensor a (3) must match the size of tensor b (2) at non-singleton "
              "dimension 0"),
            E(SampleInput(x, (np.array([[0]], np.int32), 1)), RuntimeError,
              "torch.take_along_dim(): dtype of indices should be Long but got Int")]


def _put_samples(dtype, rng):
    x = _x((3, 4), dtype, rng)
    return [SampleInput(x, (_I(0, 5, -1), _x((3,), dtype, rng))),
            SampleInput(x, (_I([1, 2], [3, -12]), _x((4,), dtype, rng))),
            SampleInput(x, (_I(1, 1, 2), _x((3,), dtype, rng), True)),
            SampleInput(x, (_I(1, 2), _x((2, 1), dtype, rng)), {"accumulate": True})]


def _put_ref(x, index, source, accumulate=False):
    out = x.copy()
    flat = out.reshape(-1)
    idx = index.reshape(-1) % flat.shape[0]
    if accumulate:
        np.add.at(flat, idx, source.reshape(-1))
    else:
        flat[idx] = source.reshape(-1)
    return out


def _put_errors(rng):
    x = _arr(3, 4)
    return [E(SampleInput(x, (_I(12), _arr(1))), IndexError,
              "out of range: tried to access index 12 on a tensor of 12 elements."),
            E(SampleInput(x, (_I(1), _arr(2))), IndexError,
              "put_(): Expected source and index to have the same number of elements, but got "
              "source.numel() = 2, index.numel() = 1"),
            E(SampleInput(x, (_I(1), _arr(1, dtype="float64"))), RuntimeError,
              "put_(): self and source expected to have the same dtype, but got self.dtype = "
              "Float and source.dtype = Double")]


def _nonzero_samples(dtype, rng):
    return [SampleInput(_x((3, 4), dtype, rng, low=-1, high=2)),
            SampleInput(_x((5,), dtype, rng, low=-1, high=2)),
            SampleInput(_x((), dtype, rng)), SampleInput(np.zeros((), dtype)),
            SampleInput(_x((0, 3), dtype, rng)),
            SampleInput(_x((3, 4), dtype, rng, low=-1, high=2), kwargs={"as_tuple": True},
                        name="as_tuple")]


def _nonzero_ref(x, as_tuple=False):
    if as_tuple:
        return tuple(np.nonzero(x.reshape(-1) if x.ndim == 0 else x))
    return np.argwhere(x)


def _narrow_copy_samples(dtype, rng):
    return _narrow_samples(dtype, rng)[:5]


def _select_scatter_samples(dtype, rng):
    x = _x((3, 4), dtype, rng)
    return [SampleInput(x, (_x((4,), dtype, rng), 0, 1)),
            SampleInput(x, (_x((3,), dtype, rng), 1, -1)),
            SampleInput(_x((2, 3, 4), dtype, rng), (_x((2, 4), dtype, rng), 1, 2))]


def _select_scatter_ref(x, src, dim, index):
    out = x.copy()
    out[(slice(None),) * (dim % x.ndim) + (index,)] = src
    return out


def _select_scatter_errors(rng):
    x = _arr(3, 4)
    return [E(SampleInput(x, (_arr(3), 0, 0)), RuntimeError,
              "expected src to have a size equal to the slice of self. src size = [3], slice "
              "size = [4]"),
            E(SampleInput(x, (_arr(4), 0, 5)), IndexError,
              "select(): index 5 out of range for tensor of size [3, 4] at dimension 0")]


def _slice_scatter_samples(dtype, rng):
    x = _x((4, 5), dtype, rng)
    return [SampleInput(x, (_x((2, 5), dtype, rng),), {"start": 1, "end": 3}),
            SampleInput(x, (_x((4, 3), dtype, rng), 1, None, None, 2)),
            SampleInput(x, (_x((4, 5), dtype, rng),)),
            SampleInput(x, (_x((4, 2), dtype, rng), -1, -2))]


def _slice_scatter_ref(x, src, dim=0, start=None, end=None, step=1):
    out = x.copy()
    out[(slice(None),) * (dim % x.ndim) + (slice(start, end, step),)] = src
    return out


def _slice_scatter_errors(rng):
    x = _arr(3, 4)
    return [E(SampleInput(x, (_arr(3, 3), 1)), RuntimeError,
              "expected src to have a size equal to the slice of self. src size = [3, 3], slice "
              "size = [3, 4]"),
            E(SampleInput(x, (_arr(1, 4), 0, 0, 1, 0)), RuntimeError,
              "slice step must be positive")]


def _diagonal_scatter_samples(dtype, rng):
    x = _x((3, 4), dtype, rng)
    return [SampleInput(x, (_x((3,), dtype, rng),)), SampleInput(x, (_x((3,), dtype, rng), 1)),
            SampleInput(x, (_x((2,), dtype, rng), -1)),
            SampleInput(_x((2, 3, 4), dtype, rng), (_x((2, 3), dtype, rng), 0, 1, 2))]


def _diagonal_scatter_ref(x, src, offset=0, dim1=0, dim2=1):
    out = x.copy()
    d = np.diagonal(out, offset, dim1, dim2)
    d.setflags(write=True)
    d[...] = src
    return out


def _diagonal_scatter_errors(rng):
    return [E(SampleInput(_arr(3, 4), (_arr(2),)), RuntimeError,
              "expected src to have a size equal to the slice of self. src size = [2], slice "
              "size = [3]")]


# ---------------------------------------------------------------- __getitem__

def _getitem_samples(dtype, rng):
    x = _x((3, 4), dtype, rng)
    y = _x((2, 3, 4), dtype, rng)
    return [SampleInput(x, (_I(2, 0, 2),)), SampleInput(x, ((_I(0, 2), _I(1, 3)),)),
            SampleInput(x, ((slice(None), _I(3, 0)),)), SampleInput(x, (_x((3, 4), "bool", rng),)),
            SampleInput(x, ([0, 1],), name="list"), SampleInput(x, (_x((3,), "bool", rng),)),
            SampleInput(y, ((0, slice(None), _I(1, 2)),), name="int-select-first"),
            SampleInput(y, ((_I(0, 1), slice(None), _I(1, 2)),), name="separated"),
            SampleInput(y, ((Ellipsis, _I(0, 3)),)), SampleInput(y, ((None, _I([1], [0])),)),
            SampleInput(y, ((slice(1, None), _I(2), slice(None, None, 2)),)),
            SampleInput(y, ((_I([0], [1]), _I(1, 2)),), name="broadcast"),
            SampleInput(y, ((True,),), name="bool-true"), SampleInput(y, ((False, 0),)),
            SampleInput(_x((3, 4), dtype, rng, noncontiguous=True), (_I(1, 1),), name="noncontig")]


def _getitem_ref(x, idx):
    if not isinstance(idx, tuple):
        idx = (idx,)
    if x.ndim == 3 and len(idx) == 3 and isinstance(idx[0], int) and \
            isinstance(idx[2], np.ndarray):              # torch selects the int dim first
        return x[idx[0]][(idx[1], idx[2])]
    return x[tuple(np.asarray(i) if isinstance(i, list) else i for i in idx)]


def _getitem_errors(rng):
    x = _arr(3, 4)
    return [E(SampleInput(x, (5,)), IndexError, "index 5 is out of bounds for dimension 0 with "
                                                "size 3"),
            E(SampleInput(x, ((slice(None), 5),)), IndexError,
              "index 5 is out of bounds for dimension 1 with size 4"),
            E(SampleInput(x, ([5],)), IndexError, "index 5 is out of bounds for dimension 0 with "
                                                  "size 3"),
            E(SampleInput(x, (np.zeros(1),)), IndexError,
              "tensors used as indices must be long, int, byte or bool tensors"),
            E(SampleInput(x, (np.ones(4, bool),)), IndexError,
              "The shape of the mask [4] at index 0 does not match the shape of the indexed "
              "tensor [3, 4] at index 0"),
            E(SampleInput(x, (([0, 1], [0, 1, 2]),)), IndexError,
              "shape mismatch: indexing tensors could not be broadcast together with shapes [2], "
              "[3]"),
            E(SampleInput(x, ((0, 0, 0),)), IndexError, "too many indices for tensor of "
                                                        "dimension 2")]


OPS = [
    # ------------------------------------------------------------------ views
    OpInfo("narrow", _narrow_ref, _narrow_samples, dtypes=ALL, error_inputs=_narrow_errors,
           op_records=("narrow",)),
    OpInfo("narrow_copy", _narrow_ref, _narrow_copy_samples, dtypes=SOME, supports_out=True,
           op_records=("narrow_copy",)),
    OpInfo("select", _select_ref, _select_samples, dtypes=ALL, error_inputs=_select_errors,
           op_records=("select.int",)),
    OpInfo("unfold", _unfold_ref, _unfold_samples, dtypes=ALL, function=False,
           error_inputs=_unfold_errors, op_records=("unfold",)),
    OpInfo("diagonal", _diagonal_ref, _diagonal_samples, dtypes=ALL,
           error_inputs=_diagonal_errors, op_records=("diagonal",)),
    OpInfo("unbind", _unbind_ref, _unbind_samples, dtypes=ALL, op_records=("unbind.int",)),
    OpInfo("split", _split_ref, _split_samples, dtypes=ALL, error_inputs=_split_errors,
           op_records=("split.Tensor", "split_with_sizes")),
    OpInfo("split_with_sizes", _split_ref, _sws_samples, dtypes=SOME,
           op_records=("split_with_sizes",)),
    OpInfo("tensor_split", _tensor_split_ref, _tensor_split_samples, dtypes=ALL,
           error_inputs=_tensor_split_errors,
           op_records=("tensor_split.sections", "tensor_split.indices")),
    OpInfo("chunk", _chunk_ref, _chunk_samples, dtypes=ALL, error_inputs=_chunk_errors,
           op_records=("chunk",)),
    OpInfo("movedim", _movedim_ref, _movedim_samples, dtypes=ALL, error_inputs=_movedim_errors,
           op_records=("movedim.intlist",)),
    OpInfo("moveaxis", _movedim_ref, _movedim_samples, dtypes=SOME),
    OpInfo("swapaxes", np.swapaxes, _swap_samples, dtypes=SOME),
    OpInfo("swapdims", np.swapaxes, _swap_samples, dtypes=SOME),
    OpInfo("t", np.transpose, _t_samples, dtypes=ALL, error_inputs=_t_errors, op_records=("t",)),
    OpInfo("view", _view_dtype_ref, _view_dtype_samples, dtypes=ALL, function=False,
           supports_grad=False, error_inputs=_view_dtype_errors, op_records=("view.dtype",)),
    OpInfo("as_strided", _as_strided_ref, _as_strided_samples, dtypes=ALL,
           error_inputs=_as_strided_errors, op_records=("as_strided",)),
    OpInfo("flatten", _flatten_ref, _flatten_samples, dtypes=ALL, error_inputs=_flatten_errors,
           op_records=("flatten.using_ints",)),
    OpInfo("unflatten", _unflatten_ref, _unflatten_samples, dtypes=ALL,
           error_inputs=_unflatten_errors, op_records=("unflatten.int",)),
    OpInfo("ravel", np.ravel, _ravel_samples, dtypes=ALL, op_records=("ravel",)),
    # ------------------------------------------------------------------ joining
    OpInfo("cat", _cat_ref, _cat_samples, dtypes=ALL, method=False, supports_out=True,
           error_inputs=_cat_errors, op_records=("cat",)),
    OpInfo("concat", _cat_ref, _cat_samples, dtypes=SOME, method=False, supports_out=True),
    OpInfo("concatenate", _cat_ref, _cat_samples, dtypes=SOME, method=False),
    OpInfo("stack", lambda ts, dim=0: np.stack(ts, dim), _stack_samples, dtypes=ALL,
           method=False, supports_out=True, error_inputs=_stack_errors, op_records=("stack",)),
    OpInfo("hstack", np.hstack, _hv_samples, dtypes=ALL, method=False, supports_out=True,
           error_inputs=_empty_list_error("hstack"), op_records=("hstack",)),
    OpInfo("vstack", np.vstack, _vstack_samples, dtypes=ALL, method=False, supports_out=True,
           error_inputs=_empty_list_error("vstack"), op_records=("vstack",)),
    OpInfo("row_stack", np.vstack, _vstack_samples, dtypes=SOME, method=False),
    OpInfo("dstack", np.dstack, _dstack_samples, dtypes=ALL, method=False, supports_out=True,
           error_inputs=_empty_list_error("dstack"), op_records=("dstack",)),
    OpInfo("column_stack", _column_stack_ref, _column_stack_samples, dtypes=ALL, method=False,
           supports_out=True, error_inputs=_empty_list_error("column_stack"),
           op_records=("column_stack",)),
    OpInfo("atleast_1d", _atleast_ref(np.atleast_1d), _atleast_samples, dtypes=SOME,
           method=False),
    OpInfo("atleast_2d", _atleast_ref(np.atleast_2d), _atleast_samples, dtypes=SOME,
           method=False),
    OpInfo("atleast_3d", _atleast_ref(np.atleast_3d), _atleast_samples, dtypes=SOME,
           method=False),
    OpInfo("flip", lambda x, dims: np.flip(x, dims) if dims else x, _flip_samples, dtypes=ALL,
           supports_out=False, error_inputs=_flip_errors, op_records=("flip",)),
    OpInfo("fliplr", np.fliplr, _lrud_samples, dtypes=ALL,
           error_inputs=lambda rng: [E(SampleInput(_arr(3)), RuntimeError,
                                       "Input must be >= 2-d.")], op_records=("fliplr",)),
    OpInfo("flipud", np.flipud, _lrud_samples, dtypes=ALL,
           error_inputs=lambda rng: [E(SampleInput(_arr()), RuntimeError,
                                       "Input must be >= 1-d.")], op_records=("flipud",)),
    OpInfo("roll", _roll_ref, _roll_samples, dtypes=ALL, error_inputs=_roll_errors,
           op_records=("roll",)),
    OpInfo("rot90", _rot90_ref, _rot90_samples, dtypes=ALL, error_inputs=_rot90_errors,
           op_records=("rot90",)),
    OpInfo("repeat", _repeat_ref, _repeat_samples, dtypes=ALL, function=False,
           error_inputs=_repeat_errors, op_records=("repeat",)),
    OpInfo("tile", np.tile, _tile_samples, dtypes=ALL, op_records=("tile",)),
    OpInfo("repeat_interleave", _ri_ref, _ri_samples, dtypes=ALL, error_inputs=_ri_errors,
           op_records=("repeat_interleave.self_int", "repeat_interleave.self_Tensor")),
    OpInfo("repeat_interleave", lambda r, output_size=None: np.repeat(np.arange(len(r)), r),
           _ri_counts_samples, dtypes=("int64", "int32"), supports_grad=False,
           error_inputs=_ri_counts_errors, op_records=("repeat_interleave.Tensor",)),
    OpInfo("broadcast_to", _broadcast_to_ref, _broadcast_to_samples, dtypes=ALL,
           op_records=("broadcast_to",)),
    OpInfo("broadcast_tensors", lambda *a: tuple(np.broadcast_arrays(*a)),
           _broadcast_tensors_samples, dtypes=SOME, method=False,
           error_inputs=_broadcast_tensors_errors, op_records=("broadcast_tensors",)),
    OpInfo("tril", lambda x, k=0: np.tril(x, k), _tri_samples, dtypes=ALL, inplace="tril_",
           supports_out=True, error_inputs=_tri_errors("tril"), op_records=("tril", "tril_")),
    OpInfo("triu", lambda x, k=0: np.triu(x, k), _tri_samples, dtypes=ALL, inplace="triu_",
           supports_out=True, error_inputs=_tri_errors("triu"), op_records=("triu", "triu_")),
    OpInfo("diag", lambda x, k=0: np.diag(x, k), _diag_samples, dtypes=ALL, supports_out=True,
           error_inputs=_diag_errors, op_records=("diag",)),
    OpInfo("diag_embed", _diag_embed_ref, _diag_embed_samples, dtypes=ALL,
           error_inputs=_diag_embed_errors, op_records=("diag_embed",)),
    OpInfo("diagflat", lambda x, k=0: np.diagflat(x, k), _diagflat_samples, dtypes=ALL,
           op_records=("diagflat",)),
    OpInfo("block_diag", _block_diag_ref, _block_diag_samples, dtypes=ALL, method=False,
           error_inputs=_block_diag_errors, op_records=("block_diag",)),
    OpInfo("meshgrid", _meshgrid_ref, _meshgrid_samples, dtypes=ALL, method=False,
           error_inputs=_meshgrid_errors),
    OpInfo("cartesian_prod", _cartesian_ref, _cartesian_samples, dtypes=ALL, method=False,
           op_records=("cartesian_prod",)),
    OpInfo("combinations", _combinations_ref, _combinations_samples, dtypes=ALL, method=False,
           error_inputs=_combinations_errors, op_records=("combinations",)),
    OpInfo("tril_indices", _tri_idx_ref(True), _tri_idx_samples, dtypes=("int64",),
           method=False, supports_grad=False, error_inputs=_tri_idx_errors,
           op_records=("tril_indices",)),
    OpInfo("triu_indices", _tri_idx_ref(False), _tri_idx_samples, dtypes=("int64",),
           method=False, supports_grad=False, op_records=("triu_indices",)),
    # ------------------------------------------------------------------ index ops
    OpInfo("gather", _gather_ref, _gather_samples, dtypes=ALL, supports_out=True,
           error_inputs=_gather_errors, op_records=("gather",)),
    OpInfo("scatter", _scatter_ref, _scatter_samples, dtypes=ALL, inplace="scatter_",
           supports_out=True, error_inputs=_scatter_errors, grad_input_filter=_no_reduce,
           op_records=("scatter.src", "scatter.value", "scatter_.src", "scatter_.value")),
    OpInfo("scatter_add", _scatter_add_ref, _scatter_add_samples, dtypes=FLOATS + INTS + COMPLEX,
           inplace="scatter_add_", supports_out=True, grad_input_filter=_no_reduce,
           op_records=("scatter_add", "scatter_add_")),
    OpInfo("scatter_reduce", _scatter_reduce_ref, _scatter_reduce_samples,
           dtypes=FLOATS + INTS, inplace="scatter_reduce_", supports_out=True,
           error_inputs=_scatter_reduce_errors, grad_input_filter=_no_reduce,
           op_records=("scatter_reduce.two", "scatter_reduce_.two")),
    OpInfo("index_select", _index_select_ref, _index_select_samples, dtypes=ALL,
           supports_out=True, error_inputs=_index_select_errors, op_records=("index_select",)),
    OpInfo("index_add", _index_add_ref, _index_add_samples, dtypes=ALL, inplace="index_add_",
           supports_out=True, error_inputs=_index_add_errors,
           op_records=("index_add", "index_add_")),
    OpInfo("index_copy", _index_copy_ref, _index_copy_samples, dtypes=ALL, inplace="index_copy_",
           supports_out=True, error_inputs=_index_copy_errors,
           op_records=("index_copy", "index_copy_")),
    OpInfo("index_fill", _index_fill_ref, _index_fill_samples, dtypes=ALL, inplace="index_fill_",
           error_inputs=_index_fill_errors,
           op_records=("index_fill.int_Tensor", "index_fill_.int_Tensor")),
    OpInfo("index_put", _index_put_ref, _index_put_samples, dtypes=ALL, inplace="index_put_",
           error_inputs=_index_put_errors, op_records=("index_put", "index_put_")),
    OpInfo("index_reduce", _index_reduce_ref, _index_reduce_samples, dtypes=FLOATS + INTS,
           inplace="index_reduce_", error_inputs=_index_reduce_errors,
           op_records=("index_reduce",)),
    OpInfo("masked_fill", _masked_fill_ref, _masked_fill_samples, dtypes=ALL,
           inplace="masked_fill_", error_inputs=_masked_fill_errors,
           op_records=("masked_fill.Tensor", "masked_fill_.Tensor")),
    OpInfo("masked_select", _masked_select_ref, _masked_select_samples, dtypes=ALL,
           supports_out=True, error_inputs=_masked_select_errors, op_records=("masked_select",)),
    OpInfo("masked_scatter", _masked_scatter_ref, _masked_scatter_samples, dtypes=ALL,
           inplace="masked_scatter_", error_inputs=_masked_scatter_errors,
           op_records=("masked_scatter", "masked_scatter_")),
    OpInfo("take", _take_ref, _take_samples, dtypes=ALL, supports_out=True,
           error_inputs=_take_errors, op_records=("take",)),
    OpInfo("take_along_dim", _take_along_dim_ref, _take_along_dim_samples, dtypes=ALL,
           supports_out=True, error_inputs=_take_along_dim_errors,
           op_records=("take_along_dim",)),
    OpInfo("put", _put_ref, _put_samples, dtypes=ALL, inplace="put_", error_inputs=_put_errors,
           op_records=("put", "put_")),
    OpInfo("nonzero", _nonzero_ref, _nonzero_samples, dtypes=ALL, supports_grad=False,
           op_records=("nonzero",)),
    OpInfo("argwhere", np.argwhere, lambda d, r: _nonzero_samples(d, r)[:-1], dtypes=ALL,
           supports_grad=False, op_records=("argwhere",)),
    OpInfo("select_scatter", _select_scatter_ref, _select_scatter_samples, dtypes=ALL,
           supports_out=True, error_inputs=_select_scatter_errors,
           op_records=("select_scatter",)),
    OpInfo("slice_scatter", _slice_scatter_ref, _slice_scatter_samples, dtypes=ALL,
           supports_out=True, error_inputs=_slice_scatter_errors, op_records=("slice_scatter",)),
    OpInfo("diagonal_scatter", _diagonal_scatter_ref, _diagonal_scatter_samples, dtypes=ALL,
           supports_out=True, error_inputs=_diagonal_scatter_errors,
           op_records=("diagonal_scatter",)),
    OpInfo("__getitem__", _getitem_ref, _getitem_samples, dtypes=ALL, function=False,
           error_inputs=_getitem_errors, op_records=("index.Tensor", "_index_backward")),
]
