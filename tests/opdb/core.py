"""Op database entries for the core ops (ember/_ops/core.py)."""
import numpy as np

from opinfo import OpInfo, SampleInput, ErrorInput, make_arg, unary_samples, binary_samples, \
    FLOATS, INTS, ALL_REAL, COMPLEX


def _sum_samples(dtype, rng):
    x = make_arg((3, 4, 5), dtype, rng)
    return [SampleInput(x), SampleInput(x, (1,)), SampleInput(x, ((-1, 0),)),
            SampleInput(x, (1,), {"keepdim": True}), SampleInput(make_arg((), dtype, rng)),
            SampleInput(make_arg((0, 3), dtype, rng), (0,))]


def _sum_ref(x, dim=None, keepdim=False):
    dt = np.int64 if x.dtype.kind in "biu" else x.dtype
    axis = tuple(dim) if isinstance(dim, (tuple, list)) else dim
    return np.asarray(np.sum(x, axis=axis, keepdims=keepdim, dtype=dt))


def _matmul_samples(dtype, rng):
    shapes = [((3, 4), (4, 5)), ((4,), (4,)), ((4,), (4, 3)), ((3, 4), (4,)),
              ((2, 3, 4), (4, 5)), ((2, 1, 3, 4), (3, 4, 2)), ((5,), (2, 5, 3))]
    return [SampleInput(make_arg(a, dtype, rng), (make_arg(b, dtype, rng),)) for a, b in shapes]


def _matmul_errors(rng):
    x = make_arg((3, 4), "float32", rng)
    return [ErrorInput(SampleInput(x, (make_arg((3, 4), "float32", rng),)), RuntimeError,
                       "cannot be multiplied"),
            ErrorInput(SampleInput(make_arg((), "float32", rng), (x,)), RuntimeError, "1D")]


def _view_samples(dtype, rng):
    x = make_arg((2, 3, 4), dtype, rng)
    return [SampleInput(x, ((6, 4),)), SampleInput(x, ((-1,),)), SampleInput(x, ((4, -1, 2),))]


def _view_errors(rng):
    x = make_arg((2, 3), "float32", rng)
    return [ErrorInput(SampleInput(x, ((4, 2),)), RuntimeError, "invalid for input of size 6"),
            ErrorInput(SampleInput(x.T, ((6,),)), RuntimeError, "view size is not compatible")]


OPS = [
    OpInfo("add", np.add, binary_samples(), dtypes=ALL_REAL + COMPLEX, inplace="add_",
           supports_out=True, op_records=("add.Tensor", "add_.Tensor")),
    OpInfo("sub", np.subtract, binary_samples(), dtypes=FLOATS + INTS + COMPLEX, inplace="sub_",
           supports_out=True, op_records=("sub.Tensor", "sub_.Tensor")),
    OpInfo("mul", np.multiply, binary_samples(), dtypes=ALL_REAL + COMPLEX, inplace="mul_",
           supports_out=True, op_records=("mul.Tensor", "mul_.Tensor")),
    OpInfo("div", np.true_divide, binary_samples(rhs_low=1, rhs_high=9),
           dtypes=FLOATS + INTS + COMPLEX, inplace="div_", supports_out=True,
           op_records=("div.Tensor", "div_.Tensor")),
    OpInfo("neg", np.negative, unary_samples(), dtypes=FLOATS + INTS + COMPLEX, inplace="neg_",
           supports_out=True, op_records=("neg", "neg_")),
    OpInfo("exp", np.exp, unary_samples(low=-3, high=3), dtypes=FLOATS + COMPLEX,
           inplace="exp_", supports_out=True, op_records=("exp", "exp_")),
    OpInfo("sum", _sum_ref, _sum_samples, dtypes=ALL_REAL + COMPLEX, supports_out=True,
           op_records=("sum",), atol=1e-4, rtol=1e-5),
    OpInfo("matmul", np.matmul, _matmul_samples, dtypes=FLOATS + ("int64",) + COMPLEX,
           supports_out=True, error_inputs=_matmul_errors, op_records=("matmul",),
           atol=1e-4, rtol=1e-5),
    OpInfo("reshape", lambda x, s: np.reshape(x, s), _view_samples, dtypes=ALL_REAL,
           op_records=("reshape",)),
    OpInfo("view", lambda x, s: np.reshape(x, s), _view_samples, dtypes=ALL_REAL, function=False,
           error_inputs=_view_errors, op_records=("view",)),
    OpInfo("real", np.real, unary_samples(), dtypes=FLOATS + COMPLEX, method=False,
           grad_dtypes=("float64", "complex128"), op_records=("real",)),
    OpInfo("imag", np.imag, unary_samples(), dtypes=COMPLEX, method=False,
           grad_dtypes=("complex128",), op_records=("imag",)),
]
