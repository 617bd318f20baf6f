"""Op database entries for the factories (ember/_ops/factory.py) and the random ops
(ember/_ops/random.py).

Factories take sizes and numbers, not arrays: a sample's ``input`` is the first positional
argument (a size tuple, a number). Random ops have no NumPy reference (``ref=None``): the
runner still checks result dtypes and shapes against torch and runs the error inputs; their
values are tested statistically and against torch's seeded streams in tests/test_random.py.
They declare ``method=False`` / no ``inplace`` where the runner would compare two draws.
"""
import numpy as np

import ember
from opinfo import OpInfo, SampleInput, ErrorInput, make_arg, FLOATS, INTS, ALL_REAL, COMPLEX


def _np(d):
    return None if d is None else d.np


def _dt(name):
    return getattr(ember, name)


# ------------------------------------------------------------------------------ fills

def _size_samples(dtype, rng):
    d = _dt(dtype)
    return [SampleInput((2, 3), kwargs={"dtype": d}), SampleInput((), kwargs={"dtype": d}),
            SampleInput((0, 4), kwargs={"dtype": d}), SampleInput(4, (2,), {"dtype": d},
                                                                  name="varargs")]


def _size_ref(fill):
    def ref(*size, dtype=None):
        if len(size) == 1 and isinstance(size[0], tuple):
            size = size[0]
        return np.full(size, fill, _np(dtype))
    return ref


def _size_errors(name):
    def gen(rng):
        msg = "Dimension size must be non-negative" if name == "zeros" else "negative dimension"
        return [ErrorInput(SampleInput((2, -1)), RuntimeError, msg),
                ErrorInput(SampleInput(2.5), TypeError, "must be tuple of ints, not float"),
                ErrorInput(SampleInput((2, 2.5)), TypeError,
                           "failed to unpack the object at pos 2"),
                ErrorInput(SampleInput(2, kwargs={"dtype": ember.int64, "requires_grad": True}),
                           RuntimeError, "Only Tensors of floating point and complex dtype"),
                ErrorInput(SampleInput(2, kwargs={"device": "cuda"}), RuntimeError,
                           "no backend for device 'cuda'")]
    return gen


def _full_samples(dtype, rng):
    d = _dt(dtype)
    v = {"bool": True, "float32": 2.5, "float64": -1.25, "complex64": 1 - 2j,
         "complex128": 3j}.get(dtype, 7)
    return [SampleInput((2, 3), (v,), {"dtype": d}), SampleInput((4,), (v,)),
            SampleInput((), (v,))]


def _full_ref(size, value, dtype=None):
    if dtype is None:
        dtype = {bool: ember.bool, int: ember.int64, float: ember.float32,
                 complex: ember.complex64}[type(value)]
    return np.full(size, value, _np(dtype))


def _full_errors(rng):
    return [ErrorInput(SampleInput(2, (1.0,)), TypeError, "must be tuple of ints, not int"),
            ErrorInput(SampleInput((2,), (1j,), {"dtype": ember.float32}), RuntimeError,
                       "value cannot be converted to type float without overflow"),
            ErrorInput(SampleInput((2,), (300,), {"dtype": ember.uint8}), RuntimeError,
                       "value cannot be converted to type uint8_t without overflow"),
            ErrorInput(SampleInput((2,), (1e300,), {"dtype": ember.float32}), RuntimeError,
                       "without overflow")]


def _like_samples(dtype, rng):
    x = make_arg((3, 4), dtype, rng)
    xt = make_arg((4, 3), dtype, rng).T
    return [SampleInput(x), SampleInput(xt, name="transposed"),
            SampleInput(x, kwargs={"dtype": ember.float64}), SampleInput(make_arg((0, 2), dtype,
                                                                                  rng))]


def _like_ref(fill):
    def ref(x, dtype=None):
        return np.full(x.shape, fill, x.dtype if dtype is None else _np(dtype))
    return ref


def _full_like_samples(dtype, rng):
    x = make_arg((3, 4), dtype, rng)
    v = True if dtype == "bool" else 3
    return [SampleInput(x, (v,)), SampleInput(x, (v,), {"dtype": ember.float64})]


def _empty_strided_samples(dtype, rng):
    d = _dt(dtype)
    return [SampleInput((2, 3), ((1, 2),), {"dtype": d}), SampleInput((2, 3), ((0, 1),)),
            SampleInput((0, 3), ((3, 1),))]


def _empty_strided_errors(rng):
    return [ErrorInput(SampleInput((2, 3), ((1,),)), RuntimeError,
                       r"dimensionality of sizes \(2\) must match dimensionality of strides \(1\)"),
            ErrorInput(SampleInput((2, 3), ((-1, 1),)), RuntimeError,
                       "Storage size calculation overflowed")]


def _eye_samples(dtype, rng):
    d = _dt(dtype)
    return [SampleInput(3, kwargs={"dtype": d}), SampleInput(2, (4,), {"dtype": d}),
            SampleInput(0), SampleInput(4, (1,))]


def _eye_ref(n, m=None, dtype=None):
    return np.eye(n, m, dtype=_np(dtype) or np.float32)


def _eye_errors(rng):
    return [ErrorInput(SampleInput(-1), RuntimeError, "n must be greater or equal to 0, got -1"),
            ErrorInput(SampleInput(2, (-1,)), RuntimeError,
                       "m must be greater or equal to 0, got -1")]


# ------------------------------------------------------------------------------ ranges

def _arange_samples(dtype, rng):
    d = _dt(dtype)
    out = [SampleInput(5), SampleInput(5.0), SampleInput(1, (4, 0.5)), SampleInput(10, (0, -3)),
           SampleInput(0, (10, 3), {"dtype": d}), SampleInput(3, (3,)),
           SampleInput(np.int32(4)), SampleInput(2, (9,), {"dtype": d})]
    if dtype in FLOATS:
        out += [SampleInput(-1.5, (2.0,), {"dtype": d}), SampleInput(0, (1, 0.1), {"dtype": d})]
    return out


def _arange_ref(start, end=None, step=1, dtype=None):
    if end is None:
        start, end = 0, start
    if dtype is None:
        dtype = ember.float32 if any(isinstance(v, (float, np.floating))
                                     for v in (start, end, step)) else ember.int64
    n = int(np.ceil((end - start) / step))
    return (start + step * np.arange(n, dtype=np.float64)).astype(dtype.np)


def _arange_errors(rng):
    return [ErrorInput(SampleInput(0, (3, 0)), RuntimeError, "step must be nonzero"),
            ErrorInput(SampleInput(0, (3, -1)), RuntimeError,
                       "upper bound and lower bound inconsistent with step sign"),
            ErrorInput(SampleInput(0, (float("nan"),)), RuntimeError, "unsupported range"),
            ErrorInput(SampleInput(0, (float("inf"),)), RuntimeError, "unsupported range"),
            ErrorInput(SampleInput("a"), TypeError, "must be Number, not str"),
            ErrorInput(SampleInput(3, kwargs={"dtype": ember.bool}), NotImplementedError,
                       "not implemented for 'Bool'")]


def _range_samples(dtype, rng):
    d = _dt(dtype)
    out = [SampleInput(0, (3,)), SampleInput(5, (1, -2), {"dtype": d})]
    if dtype in FLOATS:
        out.append(SampleInput(1, (2, 0.25), {"dtype": d}))
    return out


def _range_ref(start, end, step=1, dtype=None):
    dtype = dtype or ember.float32
    n = int(np.floor((end - start) / step)) + 1
    return (start + step * np.arange(n, dtype=np.float64)).astype(dtype.np)


def _range_errors(rng):
    return [ErrorInput(SampleInput(3, (0,)), RuntimeError,
                       "upper bound and lower bound inconsistent with step sign"),
            ErrorInput(SampleInput(0, (3, 0)), RuntimeError, "step must be nonzero")]


def _linspace_samples(dtype, rng):
    d = _dt(dtype)
    return [SampleInput(0, (1, 5)), SampleInput(-3.5, (7.25, 11), {"dtype": d}),
            SampleInput(3, (10, 1), {"dtype": d}), SampleInput(3, (10, 0)),
            SampleInput(0, (10, 4), {"dtype": ember.int64}), SampleInput(10, (0, 6), {"dtype": d})]


def _linspace_ref(start, end, steps, dtype=None):
    dtype = dtype or ember.float32
    if dtype.np.kind in "iu":
        return np.trunc(np.linspace(np.trunc(start), np.trunc(end), steps)).astype(dtype.np)
    return np.linspace(start, end, steps).astype(dtype.np)


def _space_errors(name):
    def gen(rng):
        return [ErrorInput(SampleInput(0, (1, -1)), RuntimeError,
                           "number of steps must be non-negative"),
                ErrorInput(SampleInput(0, (1,)), TypeError, "missing required argument 'steps'"),
                ErrorInput(SampleInput(ember.zeros(1), (1, 3)), RuntimeError,
                           f"{name} only supports 0-dimensional start and end tensors")]
    return gen


def _logspace_samples(dtype, rng):
    d = _dt(dtype)
    return [SampleInput(0, (2, 3)), SampleInput(-1.5, (2.5, 9), {"dtype": d}),
            SampleInput(0, (3, 4), {"base": 2, "dtype": d}), SampleInput(1, (3, 1)),
            SampleInput(0, (3, 4), {"base": 2, "dtype": ember.int64})]


def _logspace_ref(start, end, steps, base=10.0, dtype=None):
    dtype = dtype or ember.float32
    return np.logspace(start, end, steps, base=base).astype(dtype.np)


# ------------------------------------------------------------------------------ complex

def _complex_samples(dtype, rng):
    shapes = [((3,), (3,)), ((2, 3), (3,)), ((), (4,))]
    return [SampleInput(make_arg(a, dtype, rng), (make_arg(b, dtype, rng),)) for a, b in shapes]


def _polar_samples(dtype, rng):
    shapes = [((3,), (3,)), ((2, 3), (3,))]
    return [SampleInput(make_arg(a, dtype, rng, low=0.5, high=3), (make_arg(b, dtype, rng),))
            for a, b in shapes]


def _complex_errors(rng):
    x = make_arg((3,), "float32", rng)
    return [ErrorInput(SampleInput(np.arange(3), (np.arange(3),)), RuntimeError,
                       "Expected both inputs to be Half, Float or Double tensors but got Long and "
                       "Long"),
            ErrorInput(SampleInput(x.astype(np.float64), (x,)), RuntimeError,
                       "Expected object of scalar type Double but got scalar type Float")]


# ------------------------------------------------------------------------------ random

def _rand_samples(dtype, rng):
    d = _dt(dtype)
    return [SampleInput((2, 3), kwargs={"dtype": d}), SampleInput(5, kwargs={"dtype": d}),
            SampleInput(2, (3, 4)), SampleInput((0,), kwargs={"dtype": d}),
            SampleInput((40,), kwargs={"dtype": d})]


def _rand_errors(kernel):
    def gen(rng):
        return [ErrorInput(SampleInput(3, kwargs={"dtype": ember.int64}), NotImplementedError,
                           f"\"{kernel}\" not implemented for 'Long'"),
                ErrorInput(SampleInput((2, -1)), RuntimeError, "negative dimension -1"),
                ErrorInput(SampleInput(2, kwargs={"generator": 3}), TypeError, "generator")]
    return gen


def _randint_samples(dtype, rng):
    d = _dt(dtype)
    hi = 2 if dtype == "bool" else 9
    return [SampleInput(hi, ((2, 3),), {"dtype": d}), SampleInput(0, (hi, (5,)), {"dtype": d}),
            SampleInput(10, ((3,),)), SampleInput(-5, (5, (4,))), SampleInput(0, (2 ** 40, (3,)))]


def _randint_errors(rng):
    return [ErrorInput(SampleInput(5, (3, (2,))), RuntimeError,
                       "random_ expects 'from' to be less than 'to', but got from=5 >= to=3"),
            ErrorInput(SampleInput(5), TypeError, "received an invalid combination of arguments"),
            ErrorInput(SampleInput(0, (3, 5)), TypeError,
                       "received an invalid combination of arguments"),
            ErrorInput(SampleInput(0, (300, (2,)), {"dtype": ember.uint8}), RuntimeError,
                       "to - 1 is out of bounds for unsigned char")]


def _randperm_samples(dtype, rng):
    d = _dt(dtype)
    return [SampleInput(7, kwargs={"dtype": d}), SampleInput(0), SampleInput(1),
            SampleInput(100)]


def _randperm_errors(rng):
    return [ErrorInput(SampleInput(-2), RuntimeError, "negative dimension -2"),
            ErrorInput(SampleInput(300, kwargs={"dtype": ember.uint8}), RuntimeError,
                       "without overflow")]


def _random_like_samples(dtype, rng):
    x = make_arg((3, 4), dtype, rng)
    return [SampleInput(x), SampleInput(make_arg((4, 5), dtype, rng).T, name="transposed"),
            SampleInput(x, kwargs={"dtype": ember.float64})]


def _randint_like_samples(dtype, rng):
    x = make_arg((3, 4), dtype, rng)
    return [SampleInput(x, (5,)), SampleInput(x, (2, 7)),
            SampleInput(x, (0, 3), {"dtype": ember.int32})]


def _normal_samples(dtype, rng):
    m = make_arg((3, 4), dtype, rng)
    s = make_arg((3, 4), dtype, rng, low=0.1, high=2)
    return [SampleInput(m, (s,), name="Tensor_Tensor"),
            SampleInput(m, (make_arg((4,), dtype, rng, low=0.1, high=2),), name="broadcast"),
            SampleInput(m, (2.0,), name="Tensor_float"),
            SampleInput(m, name="Tensor_default_std"),
            SampleInput(0.5, (s,), name="float_Tensor"),
            SampleInput(1.0, (2.0, (2, 5)), {"dtype": _dt(dtype)}, name="float_float"),
            SampleInput(1.0, (2.0, (20,)), name="float_float_big")]


def _normal_errors(rng):
    m = make_arg((3,), "float32", rng)
    return [ErrorInput(SampleInput(m, (-m - 1,)), RuntimeError,
                       "normal expects all elements of std >= 0.0"),
            ErrorInput(SampleInput(m, (-1.0,)), RuntimeError,
                       "normal expects std >= 0.0, but found std -1"),
            ErrorInput(SampleInput(0.0, (-1.0, (2,))), RuntimeError, "normal expects std >= 0.0"),
            ErrorInput(SampleInput(0.0, (1.0,)), TypeError,
                       "received an invalid combination of arguments"),
            ErrorInput(SampleInput(m, (np.ones(4, np.float32),)), RuntimeError,
                       r"The size of tensor a \(3\) must match the size of tensor b \(4\)"),
            ErrorInput(SampleInput(np.zeros(3, np.int64), (1.0,)), NotImplementedError,
                       "\"normal_kernel_cpu\" not implemented for 'Long'")]


def _bernoulli_samples(dtype, rng):
    p = make_arg((3, 4), dtype, rng, low=0, high=1)
    return [SampleInput(p), SampleInput(p, (0.3,)), SampleInput(make_arg((), dtype, rng, low=0,
                                                                         high=1))]


def _bernoulli_errors(rng):
    return [ErrorInput(SampleInput(np.full(3, 1.5, np.float32)), RuntimeError,
                       r"Expected p_in >= 0 && p_in <= 1 to be true"),
            ErrorInput(SampleInput(np.ones(3, np.int64)), NotImplementedError,
                       "\"bernoulli_tensor_cpu_p_\" not implemented for 'Long'")]


def _bernoulli_inplace_samples(dtype, rng):
    x = make_arg((3, 4), dtype, rng)
    return [SampleInput(x), SampleInput(x, (0.25,)),
            SampleInput(x, (make_arg((4,), "float32", rng, low=0, high=1),))]


def _bernoulli_inplace_errors(rng):
    return [ErrorInput(SampleInput(np.zeros(3, np.float32), (1.5,)), RuntimeError,
                       r"bernoulli_ expects p to be in \[0, 1\], but got p=1.5")]


def _multinomial_samples(dtype, rng):
    p1 = make_arg((5,), dtype, rng, low=0.1, high=1)
    p2 = make_arg((3, 6), dtype, rng, low=0, high=1)
    return [SampleInput(p1, (3,)), SampleInput(p1, (8, True)), SampleInput(p2, (1,)),
            SampleInput(p2, (4,), {"replacement": True}), SampleInput(p2, (6,))]


def _multinomial_errors(rng):
    p = np.array([0.1, 0.2, 0.7], np.float32)
    return [ErrorInput(SampleInput(p, (4,)), RuntimeError,
                       r"cannot sample n_sample > prob_dist.size\(-1\) samples without "
                       "replacement"),
            ErrorInput(SampleInput(-p, (1,)), RuntimeError,
                       "probability tensor contains either `inf`, `nan` or element < 0"),
            ErrorInput(SampleInput(np.array([1.0, np.nan], np.float32), (1,)), RuntimeError,
                       "probability tensor contains either `inf`, `nan` or element < 0"),
            ErrorInput(SampleInput(np.zeros(2, np.float32), (1,)), RuntimeError,
                       r"invalid multinomial distribution \(sum of probabilities <= 0\)"),
            ErrorInput(SampleInput(np.ones((2, 2, 2), np.float32), (1,)), RuntimeError,
                       "prob_dist must be 1 or 2 dim"),
            ErrorInput(SampleInput(p, (0,)), RuntimeError, "cannot sample n_sample <= 0 samples"),
            ErrorInput(SampleInput(np.ones(3, np.int64), (1,)), RuntimeError,
                       "multinomial only supports floating-point dtypes for input, got: Long")]


def _poisson_samples(dtype, rng):
    return [SampleInput(make_arg((3, 4), dtype, rng, low=0, high=10)),
            SampleInput(make_arg((), dtype, rng, low=0, high=3))]


def _poisson_errors(rng):
    return [ErrorInput(SampleInput(-np.ones(3, np.float32)), RuntimeError,
                       "invalid Poisson rate, expected rate to be non-negative"),
            ErrorInput(SampleInput(np.ones(3, np.int64)), NotImplementedError,
                       "\"poisson_cpu\" not implemented for 'Long'")]


def _gamma_samples(dtype, rng):
    return [SampleInput(make_arg((3, 4), dtype, rng, low=0.1, high=5)),
            SampleInput(make_arg((), dtype, rng, low=0.5, high=3))]


def _gamma_errors(rng):
    return [ErrorInput(SampleInput(np.ones(3, np.float16)), NotImplementedError,
                       "\"gamma_cpu\" not implemented for 'Half'")]


def _dirichlet_samples(dtype, rng):
    return [SampleInput(make_arg((3, 4), dtype, rng, low=0.1, high=5)),
            SampleInput(make_arg((5,), dtype, rng, low=0.5, high=2))]


def _binomial_samples(dtype, rng):
    count = np.round(make_arg((3, 4), dtype, rng, low=0, high=50))
    return [SampleInput(count, (make_arg((3, 4), dtype, rng, low=0, high=1),)),
            SampleInput(np.full((2, 5), 400.0, dtype), (make_arg((2, 5), dtype, rng, low=0, high=1),))]


def _inplace_samples(*arg_sets):
    def gen(dtype, rng):
        x = make_arg((3, 4), dtype, rng)
        xt = make_arg((5, 3), dtype, rng).T
        out = [SampleInput(x, args) for args in arg_sets]
        out.append(SampleInput(xt, arg_sets[0], name="noncontig"))
        out.append(SampleInput(make_arg((20,), dtype, rng), arg_sets[0], name="long"))
        return out
    return gen


def _random_samples(dtype, rng):
    if dtype == "bool":
        return _inplace_samples((), (2,), (0, 2), (0, None))(dtype, rng)
    if dtype == "uint8":
        return _inplace_samples((), (5,), (1, 7), (1, None))(dtype, rng)
    return _inplace_samples((), (5,), (-3, 7), (1, None), (-3, None))(dtype, rng)


def _inplace_errors(name, sample_args, regex, dtype="float32", exc=RuntimeError):
    def gen(rng):
        return [ErrorInput(SampleInput(np.zeros(3, dtype), sample_args), exc, regex)]
    return gen


def _errors(*gens):
    def gen(rng):
        out = []
        for g in gens:
            out.extend(g(rng))
        return out
    return gen


RANDOM = dict(ref=None, supports_grad=False)

OPS = [
    # fills
    OpInfo("zeros", _size_ref(0), _size_samples, dtypes=ALL_REAL + COMPLEX, method=False,
           supports_out=True, supports_grad=False, error_inputs=_size_errors("zeros"),
           op_records=("zeros",)),
    OpInfo("ones", _size_ref(1), _size_samples, dtypes=ALL_REAL + COMPLEX, method=False,
           supports_out=True, supports_grad=False, error_inputs=_size_errors("ones"),
           op_records=("ones",)),
    OpInfo("empty", None, _size_samples, dtypes=ALL_REAL + COMPLEX, method=False,
           supports_grad=False, error_inputs=_size_errors("empty"), op_records=("empty",)),
    OpInfo("full", _full_ref, _full_samples, dtypes=ALL_REAL + COMPLEX, method=False,
           supports_out=True, supports_grad=False, error_inputs=_full_errors,
           op_records=("full",)),
    OpInfo("empty_strided", None, _empty_strided_samples, dtypes=FLOATS + ("int64",),
           method=False, supports_grad=False, error_inputs=_empty_strided_errors,
           op_records=("empty_strided",)),
    OpInfo("eye", _eye_ref, _eye_samples, dtypes=ALL_REAL + COMPLEX, method=False,
           supports_out=True, supports_grad=False, error_inputs=_eye_errors,
           op_records=("eye.m",)),
    OpInfo("zeros_like", _like_ref(0), _like_samples, dtypes=ALL_REAL + COMPLEX, method=False,
           supports_grad=False, op_records=("zeros_like",)),
    OpInfo("ones_like", _like_ref(1), _like_samples, dtypes=ALL_REAL + COMPLEX, method=False,
           supports_grad=False, op_records=("ones_like",)),
    OpInfo("empty_like", None, _like_samples, dtypes=ALL_REAL + COMPLEX, method=False,
           supports_grad=False, op_records=("empty_like",)),
    OpInfo("full_like", lambda x, v, dtype=None: np.full(x.shape, v, x.dtype if dtype is None
                                                           else dtype.np),
           _full_like_samples, dtypes=ALL_REAL, method=False, supports_grad=False,
           op_records=("full_like",)),
    # ranges
    OpInfo("arange", _arange_ref, _arange_samples, dtypes=FLOATS + INTS, method=False,
           supports_out=True, supports_grad=False, error_inputs=_arange_errors,
           op_records=("arange.start_step",)),
    OpInfo("range", _range_ref, _range_samples, dtypes=FLOATS + ("int64", "int32"),
           method=False, supports_out=True, supports_grad=False, error_inputs=_range_errors,
           op_records=("range.step",)),
    OpInfo("linspace", _linspace_ref, _linspace_samples, dtypes=FLOATS + ("int64",),
           method=False, supports_out=True, supports_grad=False,
           error_inputs=_space_errors("linspace"), op_records=("linspace",), atol=1e-5,
           rtol=1e-5),
    OpInfo("logspace", _logspace_ref, _logspace_samples, dtypes=FLOATS, method=False,
           supports_out=True, supports_grad=False, error_inputs=_space_errors("logspace"),
           op_records=("logspace",), atol=1e-4, rtol=1e-5),
    # complex constructors
    OpInfo("complex", lambda r, i: r + 1j * i, _complex_samples, dtypes=FLOATS, method=False,
           supports_out=True, error_inputs=_complex_errors, op_records=("complex",)),
    OpInfo("polar", lambda a, t: a * np.exp(1j * t), _polar_samples, dtypes=FLOATS,
           method=False, supports_out=True, op_records=("polar",), atol=1e-5, rtol=1e-5),
    # random: sampling ops
    OpInfo("rand", sample_inputs=_rand_samples, dtypes=FLOATS + COMPLEX, method=False,
           error_inputs=_rand_errors("check_uniform_bounds"), op_records=("rand",), **RANDOM),
    OpInfo("randn", sample_inputs=_rand_samples, dtypes=FLOATS + COMPLEX, method=False,
           error_inputs=_rand_errors("normal_kernel_cpu"), op_records=("randn",), **RANDOM),
    OpInfo("randint", sample_inputs=_randint_samples, dtypes=ALL_REAL, method=False,
           error_inputs=_randint_errors, op_records=("randint.low",), **RANDOM),
    OpInfo("randperm", sample_inputs=_randperm_samples, dtypes=FLOATS + ("int64", "int32"),
           method=False, error_inputs=_randperm_errors, op_records=("randperm",), **RANDOM),
    OpInfo("rand_like", sample_inputs=_random_like_samples, dtypes=FLOATS + COMPLEX,
           method=False, op_records=("rand_like",), **RANDOM),
    OpInfo("randn_like", sample_inputs=_random_like_samples, dtypes=FLOATS + COMPLEX,
           method=False, op_records=("randn_like",), **RANDOM),
    OpInfo("randint_like", sample_inputs=_randint_like_samples, dtypes=FLOATS + INTS,
           method=False, op_records=("randint_like.low_dtype",), **RANDOM),
    OpInfo("normal", sample_inputs=_normal_samples, dtypes=FLOATS, method=False,
           error_inputs=_normal_errors, op_records=("normal.Tensor_Tensor", "normal.Tensor_float",
                                                    "normal.float_Tensor", "normal.float_float"),
           **RANDOM),
    OpInfo("bernoulli", sample_inputs=_bernoulli_samples, dtypes=FLOATS, method=False,
           error_inputs=_bernoulli_errors, op_records=("bernoulli", "bernoulli.p",
                                                       "bernoulli.Tensor"), **RANDOM),
    OpInfo("multinomial", sample_inputs=_multinomial_samples, dtypes=FLOATS, method=False,
           error_inputs=_multinomial_errors, op_records=("multinomial",), **RANDOM),
    OpInfo("poisson", sample_inputs=_poisson_samples, dtypes=FLOATS, method=False,
           error_inputs=_poisson_errors, op_records=("poisson",), **RANDOM),
    OpInfo("_standard_gamma", sample_inputs=_gamma_samples, dtypes=FLOATS, method=False,
           error_inputs=_gamma_errors, op_records=("_standard_gamma",), **RANDOM),
    OpInfo("_sample_dirichlet", sample_inputs=_dirichlet_samples, dtypes=FLOATS, method=False,
           op_records=("_sample_dirichlet",), **RANDOM),
    OpInfo("binomial", sample_inputs=_binomial_samples, dtypes=FLOATS, method=False,
           op_records=("binomial",), **RANDOM),
    # random: in-place samplers (methods); the functional records are their out-of-place forms
    OpInfo("uniform_", sample_inputs=_inplace_samples((), (-2.0, 3.0)), dtypes=FLOATS + COMPLEX,
           function=False, op_records=("uniform", "uniform_"),
           error_inputs=_errors(_inplace_errors("uniform_", (2.0, 1.0),
                                                r"uniform_ expects to return a \[from, to\) range"),
                                _inplace_errors("uniform_", (), "\"check_uniform_bounds\" not "
                                                "implemented for 'Long'", "int64",
                                                NotImplementedError)), **RANDOM),
    OpInfo("normal_", sample_inputs=_inplace_samples((), (2.0, 0.5)), dtypes=FLOATS + COMPLEX,
           function=False, op_records=("normal_functional", "normal_"),
           error_inputs=_inplace_errors("normal_", (0.0, -1.0), "normal expects std >= 0.0"),
           **RANDOM),
    OpInfo("bernoulli_", sample_inputs=_bernoulli_inplace_samples, dtypes=ALL_REAL,
           function=False, op_records=("bernoulli_.p", "bernoulli_.Tensor"),
           error_inputs=_bernoulli_inplace_errors, **RANDOM),
    OpInfo("random_", sample_inputs=_random_samples,
           dtypes=FLOATS + INTS + ("bool",), function=False,
           op_records=("random", "random_", "random.to", "random_.to", "random.from",
                       "random_.from"),
           error_inputs=_errors(
               _inplace_errors("random_", (5, 5), "random_ expects 'from' to be less than 'to', "
                               "but got from=5 >= to=5"),
               _inplace_errors("random_", (0, 300), "to - 1 is out of bounds for unsigned char",
                               "uint8")), **RANDOM),
    OpInfo("exponential_", sample_inputs=_inplace_samples((), (3.0,)), dtypes=FLOATS,
           function=False, op_records=("exponential", "exponential_"),
           error_inputs=_errors(
               _inplace_errors("exponential_", (-1.0,),
                               "exponential_ expects lambda > 0.0, but found lambda=-1"),
               _inplace_errors("exponential_", (), "Exponential distribution is a continuous "
                               "probability distribution", "int64")), **RANDOM),
    OpInfo("geometric_", sample_inputs=_inplace_samples((0.3,)), dtypes=FLOATS + INTS,
           function=False, op_records=("geometric", "geometric_"),
           error_inputs=_inplace_errors("geometric_", (0.0,),
                                        r"geometric_ expects p to be in \(0, 1\), but got p=0"),
           **RANDOM),
    OpInfo("log_normal_", sample_inputs=_inplace_samples((), (0.5, 0.25)), dtypes=FLOATS,
           function=False, op_records=("log_normal", "log_normal_"),
           error_inputs=_inplace_errors("log_normal_", (1.0, -2.0),
                                        "log_normal_ expects std > 0.0, but found std=-2"),
           **RANDOM),
    OpInfo("cauchy_", sample_inputs=_inplace_samples((), (1.0, 2.0)), dtypes=FLOATS,
           function=False, op_records=("cauchy", "cauchy_"),
           error_inputs=_errors(
               _inplace_errors("cauchy_", (0.0, -1.0),
                               "cauchy_ expects sigma > 0.0, but found sigma=-1"),
               _inplace_errors("cauchy_", (), "Cauchy distribution is a continuous probability "
                               "distribution. dtype must be a floating point but you specified "
                               "long int", "int64")), **RANDOM),
]
