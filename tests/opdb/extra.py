"""Op database entries for the extra ops (ember/_ops/extra.py, ember/nn/functional/_extra.py)."""
import numpy as np

from opinfo import OpInfo, SampleInput, ErrorInput, make_arg, FLOATS, ALL_REAL

SOME = ("float32", "float64", "int64", "bool")


def _split_samples(dtype, rng):
    return [SampleInput(make_arg((4, 6, 2), dtype, rng), (2,)),
            SampleInput(make_arg((4, 6, 2), dtype, rng), ([1, 3],)),
            SampleInput(make_arg((6, 4, 2), dtype, rng, noncontiguous=True), ([2],))]


def _hsplit_samples(dtype, rng):
    return _split_samples(dtype, rng) + [SampleInput(make_arg((6,), dtype, rng), (3,))]


def _dir_ref(axis_of):
    def ref(x, ios):
        return tuple(np.array_split(x, ios, axis=axis_of(x.ndim))) if isinstance(ios, int) \
            else tuple(np.split(x, ios, axis=axis_of(x.ndim)))
    return ref


def _dir_errors(name, min_dim):
    def gen(rng):
        return [ErrorInput(SampleInput(make_arg((3,) * (min_dim - 1), "float32", rng), (1,)),
                           RuntimeError, f"torch.{name} requires a tensor with at least "
                           f"{min_dim} dimension"),
                ErrorInput(SampleInput(make_arg((5, 5, 5), "float32", rng), (2,)), RuntimeError,
                           "is not divisible by the split_size 2")]
    return gen


def _unsafe_split_samples(dtype, rng):
    x = make_arg((5, 4), dtype, rng)
    return [SampleInput(x, (2,)), SampleInput(x, (3, 1)), SampleInput(x, (5,))]


def _unsafe_split_ref(x, size, dim=0):
    return tuple(x[(slice(None),) * dim + (slice(i, i + size),)]
                 for i in range(0, x.shape[dim], size))


def _unsafe_chunk_ref(x, chunks, dim=0):
    size = -(-x.shape[dim] // chunks)
    return _unsafe_split_ref(x, size, dim)


def _ass_samples(dtype, rng):
    return [SampleInput(make_arg((3, 3), dtype, rng), (make_arg((2,), dtype, rng), (2,), (4,), 1)),
            SampleInput(make_arg((4, 5), dtype, rng), (make_arg((2, 2), dtype, rng), (2, 2),
                                                        (5, 1))),
            SampleInput(make_arg((6,), dtype, rng), (make_arg((3, 2), dtype, rng), (3, 2),
                                                      (1, 3), 0), name="overlap_free_transposed")]


def _ass_ref(x, src, size, stride, storage_offset=0):
    out = np.array(x, order="C", copy=True)
    flat = out.reshape(-1)
    win = np.lib.stride_tricks.as_strided(flat[storage_offset or 0:], shape=size,
                                          strides=tuple(s * flat.itemsize for s in stride))
    win[...] = src
    return out


def _nzs_samples(dtype, rng):
    x = make_arg((3, 4), dtype, rng)
    return [SampleInput(x, (), {"size": 4}), SampleInput(x, (), {"size": 20}),
            SampleInput(x, (), {"size": 20, "fill_value": -5}),
            SampleInput(make_arg((6,), dtype, rng), (), {"size": 0})]


def _nzs_ref(x, size, fill_value=-1):
    nz = np.argwhere(x)
    out = np.full((size, x.ndim), fill_value, np.int64)
    n = min(size, len(nz))
    out[:n] = nz[:n]
    return out


OPS = [
    OpInfo("hsplit", _dir_ref(lambda n: 1 if n > 1 else 0), _hsplit_samples, dtypes=SOME,
           error_inputs=_dir_errors("hsplit", 1)),
    OpInfo("vsplit", _dir_ref(lambda n: 0), _split_samples, dtypes=SOME,
           error_inputs=_dir_errors("vsplit", 2)),
    OpInfo("dsplit", _dir_ref(lambda n: 2), lambda d, r: [SampleInput(make_arg((2, 3, 6), d, r),
                                                                      (3,)),
                                                          SampleInput(make_arg((2, 3, 6), d, r),
                                                                      ([1, 4],))],
           dtypes=SOME, error_inputs=_dir_errors("dsplit", 3)),
    OpInfo("unsafe_split", _unsafe_split_ref, _unsafe_split_samples, dtypes=SOME),
    OpInfo("unsafe_chunk", _unsafe_chunk_ref, _unsafe_split_samples, dtypes=SOME),
    # self's gradient follows torch's as_strided_scatter_backward (grad inside the window,
    # not its complement), which gradcheck rejects: gradients are compared with torch in
    # tests/test_extra_ops.py instead
    OpInfo("as_strided_scatter", _ass_ref, _ass_samples, dtypes=ALL_REAL, supports_out=True,
           supports_grad=False, op_records=("as_strided_scatter",)),
    OpInfo("nonzero_static", _nzs_ref, _nzs_samples, dtypes=ALL_REAL, supports_grad=False,
           method=True, supports_out=True, op_records=("nonzero_static",)),
]
