"""Op database entries for convolution/padding/pooling records (ember/_ops/nn_conv.py).
Gradients of the internal records are checked in tests/nn/test_conv.py and test_pooling.py."""
import numpy as np

from opinfo import OpInfo, SampleInput, ErrorInput, make_arg


def _conv_samples(dtype, rng):
    x = make_arg((2, 4, 5, 6), dtype, rng, -1, 1)
    out = []
    for s, p, d, g in [([1], [0], [1], 1), ([2], [1], [1], 2), ([1, 2], [1, 0], [2, 1], 4)]:
        w = make_arg((4, 4 // g, 2, 3), dtype, rng, -1, 1)
        b = make_arg((4,), dtype, rng, -1, 1)
        out.append(SampleInput(x, (w, b, s, p, d, False, [0], g)))
        out.append(SampleInput(x, (w, None, s, p, d, True, [0] if s == [1] else [1, 0], g)))
    x1 = make_arg((1, 2, 5), dtype, rng, -1, 1)
    out.append(SampleInput(x1, (make_arg((3, 2, 2), dtype, rng, -1, 1), None, [2], [1], [1],
                                False, [0], 1)))
    x3 = make_arg((1, 2, 3, 3, 3), dtype, rng, -1, 1)
    out.append(SampleInput(x3, (make_arg((2, 2, 2, 2, 2), dtype, rng, -1, 1), None, [1], [0],
                                [1], True, [0], 1)))
    return out


def _conv_errors(rng):
    x = make_arg((1, 3, 5, 5), "float32", rng)
    w = make_arg((4, 2, 3, 3), "float32", rng)
    return [ErrorInput(SampleInput(x, (w, None, [1], [0], [1], False, [0], 1)), RuntimeError,
                       "expected input"),
            ErrorInput(SampleInput(x, (make_arg((4, 3, 7, 7), "float32", rng), None, [1], [0],
                                       [1], False, [0], 1)), RuntimeError,
                       "Kernel size can't be greater")]


def _pad_samples(dtype, rng):
    x = make_arg((2, 3, 4), dtype, rng)
    return [SampleInput(x, ([1, 2],)), SampleInput(x, ([1, 0, 2, 1], 3)),
            SampleInput(x, ([-1, 1, 0, 2],)), SampleInput(x, ([0, 0, 1, 1, 1, 1],))]


def _pad_ref(x, pad, value=0):
    for i in range(len(pad) // 2):
        d = x.ndim - 1 - i
        lo, hi = pad[2 * i], pad[2 * i + 1]
        sl = [slice(None)] * x.ndim
        sl[d] = slice(max(-lo, 0), x.shape[d] - max(-hi, 0))
        x = x[tuple(sl)]
        w = [(0, 0)] * x.ndim
        w[d] = (max(lo, 0), max(hi, 0))
        x = np.pad(x, w, constant_values=value)
    return x


def _none(dtype, rng):
    return []


OPS = [
    OpInfo("convolution", None, _conv_samples, method=False, error_inputs=_conv_errors,
           op_records=("convolution",), atol=1e-4, rtol=1e-4),
    OpInfo("constant_pad_nd", _pad_ref, _pad_samples, method=False,
           dtypes=("float32", "float64", "int64"), op_records=("constant_pad_nd",)),
    # internal records: gradients checked in tests/nn (test_conv.py, test_pooling.py)
    OpInfo("_conv_weight_grad", None, _none, function=False, method=False,
           supports_grad=False, op_records=("_conv_weight_grad",)),
    # the plain backward of convolution (every conv gradient test without create_graph;
    # against torch in tests/test_ort_conv.py and tests/nn/test_conv.py)
    OpInfo("_conv_backward", None, _none, function=False, method=False,
           supports_grad=False, op_records=("_conv_backward",)),
    OpInfo("_max_pool_with_indices", None, _none, function=False, method=False,
           supports_grad=False, op_records=("_max_pool_with_indices",)),
    OpInfo("_adaptive_max_pool", None, _none, function=False, method=False,
           supports_grad=False, op_records=("_adaptive_max_pool",)),
    # max pooling's scatter backward (its own backward, a gather, runs in the max_pool
    # gradgradchecks) and batch norm's fused backward (runs in every batch_norm gradcheck
    # without create_graph; tests/nn/test_norm.py)
    OpInfo("_max_pool_backward", None, _none, function=False, method=False,
           supports_grad=False, op_records=("_max_pool_backward",)),
    OpInfo("_batch_norm_backward", None, _none, function=False, method=False,
           supports_grad=False, op_records=("_batch_norm_backward",)),
    # average pooling's fast records: values, gradients, gradgradcheck and vmap against
    # torch in tests/nn/test_avg_pool_fastpath.py
    OpInfo("_avg_pool", None, _none, function=False, method=False, supports_grad=False,
           op_records=("_avg_pool", "_avg_pool_backward")),
]
