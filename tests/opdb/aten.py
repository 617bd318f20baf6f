"""Op database entries for ATen's internal ops (ember/_ops/aten.py). The ones torch has
only under ``torch.ops.aten`` (and the softmax backward ops, which take a dtype) have no
samples here: tests/test_aten_ops.py checks them against ``torch.ops.aten`` (values,
gradients, the ``ember.ops`` namespace), and tests/parity runs torch's own OpInfos."""
import numpy as np

from opinfo import OpInfo, SampleInput, make_arg, FLOATS, ALL_REAL


def _none(dtype, rng):
    return []


def _chunk_cat_samples(dtype, rng):
    return [SampleInput([make_arg((2, 3), dtype, rng), make_arg((2, 2), dtype, rng)], (1, 2)),
            SampleInput([make_arg((5, 4), dtype, rng), make_arg((3, 4), dtype, rng)], (0, 3)),
            SampleInput([make_arg((2, 7, 3), dtype, rng)], (-2, 4))]


def _safe_softmax_samples(dtype, rng):
    x = make_arg((3, 4), dtype, rng)
    x[1] = -np.inf                                  # a fully masked row gives zeros
    return [SampleInput(x, (1,)), SampleInput(make_arg((2, 3, 4), dtype, rng), (0,))]


def _index(*shape, high):
    return np.random.default_rng(sum(shape)).integers(0, high, size=shape)


def _masked_index_samples(dtype, rng):
    mask = np.random.default_rng(1).random((4, 5)) < 0.6
    rows = np.where(mask[:, :1], _index(4, 1, high=3), 9)   # out of range where masked off
    cols = _index(1, 5, high=6)
    return [SampleInput(make_arg((3, 6), dtype, rng), (mask, [rows, cols], -1))]


def _masked_put_samples(dtype, rng):
    mask = np.random.default_rng(2).random((4, 5)) < 0.6
    return [SampleInput(make_arg((3, 6), dtype, rng),
                        (mask, [_index(4, 1, high=3), _index(1, 5, high=6)],
                         make_arg((4, 5), dtype, rng)))]


def _segment_samples(dtype, rng):
    lengths = np.array([0, 2, 3, 1])
    offsets = np.array([[0, 1, 1, 4, 6], [0, 0, 3, 3, 6]])
    out = []
    for reduce in ("max", "min", "sum", "prod", "mean"):
        out.append(SampleInput(make_arg((6, 2), dtype, rng), (reduce,),
                               dict(lengths=lengths)))
        out.append(SampleInput(make_arg((2, 6), dtype, rng), (reduce,),
                               dict(offsets=offsets, axis=1, initial=1.5)))
    return out


OPS = [
    OpInfo("_chunk_cat", None, _chunk_cat_samples, dtypes=ALL_REAL, method=False,
           supports_grad=False, op_records=("_chunk_cat",)),
    OpInfo("_safe_softmax", None, _safe_softmax_samples, method=False,
           op_records=("_safe_softmax",)),
    OpInfo("_unsafe_masked_index", None, _masked_index_samples, dtypes=ALL_REAL, method=False,
           op_records=("_unsafe_masked_index",)),
    OpInfo("_unsafe_masked_index_put_accumulate", None, _masked_put_samples, dtypes=FLOATS,
           method=False, op_records=("_unsafe_masked_index_put_accumulate",)),
    # gradcheck only where no segment is empty (an empty max is -inf, an empty mean NaN)
    OpInfo("segment_reduce", None, _segment_samples, dtypes=FLOATS, method=False,
           op_records=("segment_reduce",), grad_input_filter=lambda s: "initial" in s.kwargs),
    OpInfo("aten-only records", None, _none, method=False, supports_grad=False,
           op_records=("slice.Tensor", "native_dropout_backward",
                       "max_pool2d_with_indices_backward", "_native_batch_norm_legit",
                       "_native_batch_norm_legit.no_stats", "_batch_norm_with_update",
                       "_upsample_bilinear2d_aa", "_upsample_bilinear2d_aa.vec",
                       "_softmax_backward_data", "_log_softmax_backward_data")),
]
