"""Op database entries for the elementwise ops (ember/_ops/elementwise.py)."""
import math

import numpy as np
import scipy.special as sp

import ember
from ember._ops import elementwise as _ew
from opinfo import OpInfo, SampleInput, ErrorInput, make_arg, unary_samples, binary_samples, \
    FLOATS, INTS, ALL_REAL, COMPLEX

SIGNED = ("int64", "int32", "int8", "int16")
CGRAD = ("float64", "complex128")

# torch has gelu/silu only in torch.nn.functional; the runner resolves names on the ember and
# torch modules, so their entries run through these test-only aliases (dtype checked by hand).
ember._ew_gelu = _ew.gelu
ember._ew_silu = _ew.silu


# ------------------------------------------------------------------ helpers

def _f64(fn):
    """A NumPy reference computing integers and bools in float64 (torch: int -> float)."""
    def ref(x, *args, **kw):
        if isinstance(x, np.ndarray) and x.dtype.kind in "biu":
            x = x.astype(np.float64)
        args = tuple(a.astype(np.float64) if isinstance(a, np.ndarray) and a.dtype.kind in "biu"
                     else a for a in args)
        with np.errstate(all="ignore"):
            return np.asarray(fn(x, *args, **kw))
    return ref


def _range(dtype, low, high):
    if dtype in COMPLEX:
        return None, None
    if dtype in INTS:
        lo = None if low is None else math.ceil(low)
        hi = None if high is None else math.floor(high) + 1
        if lo is not None and hi is not None and hi <= lo:
            hi = lo + 1
        return lo, hi
    return low, high


def _unary(low=None, high=None, clow=None, chigh=None, special=()):
    """Unary samples in a domain (floats), its integer part (ints), its complex box, plus
    special float values."""
    def gen(dtype, rng):
        if dtype in COMPLEX:
            lo, hi = clow, chigh
        else:
            lo, hi = _range(dtype, low, high)
        out = unary_samples(low=lo, high=hi)(dtype, rng)
        if special and dtype in FLOATS + COMPLEX:
            out.append(SampleInput(np.array(special, dtype=dtype), name="special"))
        return out
    return gen


def _binary(low=None, high=None, rhs_low=None, rhs_high=None, scalars=True, cbox=None):
    def gen(dtype, rng):
        if dtype in COMPLEX:
            lo = hi = rl = rh = None
            if cbox:
                lo, hi = cbox
                rl, rh = cbox
        else:
            lo, hi = _range(dtype, low, high)
            rl, rh = _range(dtype, low if rhs_low is None else rhs_low,
                            high if rhs_high is None else rhs_high)
        return binary_samples(lo, hi, rl, rh, scalars=scalars)(dtype, rng)
    return gen


NAN, INF = math.nan, math.inf
SPECIAL = (0.0, -0.0, 1.0, -1.0, NAN, INF, -INF)


def _regular(sample):
    """Gradcheck on ordinary points only (not nan/inf/zero specials)."""
    return sample.name not in ("special", "halves", "nan", "too far", "negative", "zeros")


def _err(x, args=(), kw=None, exc=RuntimeError, regex=""):
    return ErrorInput(SampleInput(x, args, kw or {}), exc, regex)


def _dtype_errors(args_fn, dtypes, exc, regex):
    """Error inputs: the op on each of ``dtypes`` raises ``exc``."""
    def gen(rng):
        return [_err(make_arg((3,), d, rng), args_fn(d, rng), exc=exc, regex=regex)
                for d in dtypes]
    return gen


def _same(d, rng):
    return (make_arg((3,), d, rng),)


def _none(d, rng):
    return ()


def _cat(*gens):
    def gen(rng):
        out = []
        for g in gens:
            out.extend(g(rng))
        return out
    return gen


# ------------------------------------------------------------------ unary, float results

def _uop(name, ref, low=None, high=None, clow=-3, chigh=3, dtypes=ALL_REAL + COMPLEX,
         grad=CGRAD, special=SPECIAL, errors=None, records=None, inplace=True, **kw):
    return OpInfo(name, _f64(ref), _unary(low, high, clow, chigh, special), dtypes=dtypes,
                  inplace=name + "_" if inplace else None, supports_out=True, grad_dtypes=grad,
                  error_inputs=errors, op_records=records or (name, name + "_"),
                  grad_input_filter=_regular, **kw)


def _rsqrt(x):
    return 1 / np.sqrt(x)


def _sigmoid(x):
    if x.dtype.kind == "c":
        return 1 / (1 + np.exp(-x))
    return sp.expit(x)


def _logit_ref(x, eps=None):
    if eps is not None:
        x = np.clip(x, eps, 1 - eps)
    return np.log(x / (1 - x))


def _logit_samples(dtype, rng):
    lo, hi = _range(dtype, 0.05, 0.95)
    out = unary_samples(low=lo, high=hi)(dtype, rng)
    out.append(SampleInput(make_arg((4, 3), dtype, rng, *_range(dtype, -0.2, 1.2)), (0.1,),
                           name="eps"))
    return out


def _no_complex(name_regex, exc=NotImplementedError):
    return _dtype_errors(_none, COMPLEX, exc, name_regex)


def _i0_ref(x):
    return sp.i0(x)


def _sinc_ref(x):
    return np.sinc(x)


def _mvlgamma_ref(x, p):
    x = x.astype(np.float64) if x.dtype.kind in "biu" else x
    j = np.arange(p) / 2
    return sp.gammaln(x[..., None] - j).sum(-1) + p * (p - 1) / 4 * math.log(math.pi)


def _mvlgamma_samples(dtype, rng):
    out = []
    for p in (1, 3):
        lo, hi = _range(dtype, p, p + 5)
        out += [SampleInput(make_arg(s, dtype, rng, lo, hi), (p,)) for s in ((), (5,), (3, 4))]
    return out


def _polygamma_method_samples(dtype, rng):
    lo, hi = _range(dtype, 0.5, 5)
    return [SampleInput(make_arg(s, dtype, rng, lo, hi), (n,)) for n in (0, 1, 2)
            for s in ((), (3, 4))]


def _polygamma_fn_samples(dtype, rng):
    lo, hi = _range(dtype, 0.5, 5)
    return [SampleInput(n, (make_arg((3, 4), dtype, rng, lo, hi),)) for n in (0, 1, 3)]


def _polygamma_ref(x, n):
    x = x.astype(np.float64) if x.dtype.kind in "biu" else x
    return sp.psi(x) if n == 0 else sp.polygamma(n, x)


def _angle_ref(x):
    if x.dtype.kind == "c":
        return np.angle(x)
    x = x.astype(np.float64) if x.dtype.kind in "biu" else x
    return np.where(x < 0, np.pi, np.where(np.isnan(x), np.nan, 0.0))


UNARY_FLOAT = [
    _uop("sqrt", np.sqrt, 0.1, 9),
    _uop("rsqrt", _rsqrt, 0.1, 9),
    _uop("exp2", np.exp2, -3, 3),
    _uop("expm1", np.expm1, -3, 3),
    _uop("log", np.log, 0.1, 9),
    _uop("log2", np.log2, 0.1, 9),
    _uop("log10", np.log10, 0.1, 9),
    _uop("log1p", np.log1p, -0.9, 9),
    _uop("sin", np.sin),
    _uop("cos", np.cos),
    _uop("tan", np.tan, -1.3, 1.3),
    _uop("asin", np.arcsin, -0.95, 0.95),
    _uop("acos", np.arccos, -0.95, 0.95),
    _uop("atan", np.arctan),
    _uop("sinh", np.sinh, -3, 3),
    _uop("cosh", np.cosh, -3, 3),
    _uop("tanh", np.tanh, -3, 3),
    _uop("asinh", np.arcsinh),
    _uop("acosh", np.arccosh, 1.1, 9),
    _uop("atanh", np.arctanh, -0.95, 0.95),
    _uop("sigmoid", _sigmoid, -5, 5),
    _uop("reciprocal", np.reciprocal, 0.5, 9),
    _uop("sinc", _sinc_ref, -3, 3),
    _uop("deg2rad", np.deg2rad, dtypes=ALL_REAL, grad=("float64",),
         errors=_dtype_errors(_none, COMPLEX, RuntimeError, "not supported for complex")),
    _uop("rad2deg", np.rad2deg, dtypes=ALL_REAL, grad=("float64",),
         errors=_dtype_errors(_none, COMPLEX, RuntimeError, "not supported for complex")),
    _uop("erf", sp.erf, -2, 2, dtypes=ALL_REAL, grad=("float64",),
         errors=_no_complex("erf_vml_cpu")),
    _uop("erfc", sp.erfc, -2, 2, dtypes=ALL_REAL, grad=("float64",),
         errors=_no_complex("erfc_vml_cpu")),
    _uop("erfinv", sp.erfinv, -0.9, 0.9, dtypes=ALL_REAL, grad=("float64",),
         errors=_no_complex("erfinv_vml_cpu")),
    _uop("lgamma", sp.gammaln, 0.5, 9, dtypes=ALL_REAL, grad=("float64",),
         errors=_no_complex("lgamma_vml_cpu")),
    _uop("digamma", sp.psi, 0.5, 9, dtypes=ALL_REAL, grad=("float64",),
         errors=_no_complex("digamma")),
    _uop("i0", _i0_ref, -4, 4, dtypes=ALL_REAL, grad=("float64",),
         errors=_no_complex("i0_vml_cpu"), records=("i0", "i0_", "_i1")),
    OpInfo("logit", _f64(_logit_ref), _logit_samples, dtypes=ALL_REAL, inplace="logit_",
           supports_out=True, op_records=("logit", "logit_"), error_inputs=_no_complex("logit"),
           grad_input_filter=lambda s: not s.args),
    OpInfo("polygamma", _polygamma_ref, _polygamma_method_samples, dtypes=ALL_REAL,
           function=False, inplace="polygamma_", op_records=("polygamma", "polygamma_"),
           atol=1e-4, rtol=1e-5),
    OpInfo("polygamma", lambda n, x: _polygamma_ref(x, n), _polygamma_fn_samples,
           dtypes=("float32", "float64", "int64"), method=False, supports_out=True,
           supports_grad=False, atol=1e-4, rtol=1e-5,
           error_inputs=lambda rng: [_err(-1, (make_arg((3,), "float32", rng),),
                                          regex="does not support negative n")]),
    OpInfo("mvlgamma", _mvlgamma_ref, _mvlgamma_samples, dtypes=FLOATS + INTS,
           inplace="mvlgamma_", supports_out=True, op_records=("mvlgamma", "mvlgamma_"),
           error_inputs=lambda rng: [_err(make_arg((3,), "float32", rng, 2, 3), (0,),
                                          regex="p has to be greater than or equal to 1")]),
    OpInfo("angle", _angle_ref, _unary(special=SPECIAL), dtypes=ALL_REAL + COMPLEX,
           supports_out=True, grad_dtypes=CGRAD, op_records=("angle",)),
]


# ------------------------------------------------------------------ unary, dtype kept

def _square_ref(x):
    return np.square(x.astype(np.int64) if x.dtype == np.bool_ else x)


def _sign_ref(x):
    if x.dtype == np.bool_:
        return x.copy()
    return np.sign(x)


def _round_samples(dtype, rng):
    out = unary_samples()(dtype, rng)
    if dtype in FLOATS:
        out.append(SampleInput(np.array([0.5, 1.5, 2.5, -0.5, -1.5], dtype), name="halves"))
        x = make_arg((3, 4), dtype, rng, -100, 100)
        out += [SampleInput(x, (), {"decimals": 2}), SampleInput(x, (), {"decimals": -1})]
    return out


def _round_ref(x, decimals=0):
    if x.dtype.kind in "iu":
        return x.copy()
    return np.round(x, decimals)


def _rounding_errors(name):
    def gen(rng):
        return [_err(make_arg((3,), "bool", rng), exc=NotImplementedError, regex=name),
                _err(make_arg((3,), "complex64", rng), exc=NotImplementedError)]
    return gen


def _nan_to_num_samples(dtype, rng):
    out = unary_samples()(dtype, rng)
    if dtype in FLOATS + COMPLEX:
        sp_ = np.array([NAN, INF, -INF, 1.0], dtype)
        out += [SampleInput(sp_, name="special"),
                SampleInput(sp_, (1.5, 100.0, -100.0), name="special"),
                SampleInput(sp_, (), {"posinf": 7.0}, name="special")]
    return out


def _nan_to_num_ref(x, nan=0.0, posinf=None, neginf=None):
    if x.dtype.kind in "biu":
        return x.copy()
    return np.nan_to_num(x, nan=nan, posinf=posinf, neginf=neginf)


def _clamp_samples(dtype, rng):
    x = make_arg((3, 4), dtype, rng)
    is_int = dtype in INTS or dtype == "bool"
    lo, hi = (-3 if dtype != "uint8" else 2, 4) if is_int else (-3.5, 4.5)
    if dtype == "bool":
        lo, hi = 0, 1
    out = [SampleInput(x, (lo, hi)), SampleInput(x, (lo,)), SampleInput(x, (None, hi)),
           SampleInput(x, (), {"max": hi}), SampleInput(x, (hi, lo), name="min>max"),
           SampleInput(make_arg((), dtype, rng), (lo, hi)),
           SampleInput(make_arg((0, 3), dtype, rng), (lo, hi)),
           SampleInput(make_arg((3, 4), dtype, rng, noncontiguous=True), (lo, hi))]
    if dtype != "bool":
        mn = make_arg((4,), dtype, rng, -5 if dtype != "uint8" else 0, 3)
        mx = make_arg((3, 1), dtype, rng, 3, 9)
        out += [SampleInput(x, (mn, mx)), SampleInput(x, (mn,)), SampleInput(x, (None, mx)),
                SampleInput(x, (mx, mn), name="tensor min>max")]
    return out


def _clamp_ref(x, min=None, max=None):
    r = x
    if min is not None:
        r = np.maximum(r, min)
    if max is not None:
        r = np.minimum(r, max)
    return np.asarray(r)


def _clamp_errors(rng):
    x = make_arg((3,), "float32", rng)
    return [_err(x, regex="At least one of 'min' or 'max' must not be None"),
            _err(x, (None, None), regex="At least one of 'min' or 'max' must not be None"),
            _err(make_arg((3,), "complex64", rng), (0, 1), exc=NotImplementedError,
                 regex="clamp is not supported for complex types")]


def _clamp1_samples(dtype, rng):
    x = make_arg((3, 4), dtype, rng)
    s = 2 if dtype in INTS else 2.5
    return [SampleInput(x, (s,)), SampleInput(x, (make_arg((4,), dtype, rng),)),
            SampleInput(make_arg((), dtype, rng), (make_arg((2, 3), dtype, rng),)),
            SampleInput(make_arg((3, 4), dtype, rng, noncontiguous=True), (s,))]


def _positive_ref(x):
    return x


UNARY_KEEP = [
    OpInfo("abs", np.abs, _unary(special=SPECIAL), dtypes=FLOATS + INTS + COMPLEX,
           inplace="abs_", supports_out=True, grad_dtypes=CGRAD, op_records=("abs", "abs_"),
           error_inputs=lambda rng: [
               _err(make_arg((3,), "bool", rng), exc=NotImplementedError, regex="abs_cpu")]),
    OpInfo("sign", _sign_ref, _unary(), dtypes=ALL_REAL, inplace="sign_", supports_out=True,
           supports_gradgrad=False, op_records=("sign", "sign_"),
           error_inputs=_no_complex("Please use torch.sgn instead")),
    OpInfo("sgn", _sign_ref, _unary(), dtypes=ALL_REAL + COMPLEX, inplace="sgn_",
           supports_out=True, grad_dtypes=CGRAD, op_records=("sgn", "sgn_")),
    OpInfo("square", _square_ref, _unary(), dtypes=ALL_REAL + COMPLEX, inplace="square_",
           supports_out=True, grad_dtypes=CGRAD, op_records=("square", "square_")),
    OpInfo("floor", np.floor, _unary(), dtypes=FLOATS + INTS, inplace="floor_",
           supports_out=True, supports_gradgrad=False, op_records=("floor", "floor_"),
           error_inputs=_rounding_errors("floor")),
    OpInfo("ceil", np.ceil, _unary(), dtypes=FLOATS + INTS, inplace="ceil_",
           supports_out=True, supports_gradgrad=False, op_records=("ceil", "ceil_"),
           error_inputs=_rounding_errors("ceil")),
    OpInfo("trunc", np.trunc, _unary(), dtypes=FLOATS + INTS, inplace="trunc_",
           supports_out=True, supports_gradgrad=False, op_records=("trunc", "trunc_"),
           error_inputs=_rounding_errors("trunc")),
    OpInfo("round", _round_ref, _round_samples, dtypes=FLOATS + INTS, inplace="round_",
           supports_out=True, supports_gradgrad=False,
           op_records=("round", "round_", "round.decimals", "round_.decimals"),
           error_inputs=lambda rng: _rounding_errors("round")(rng) + [
               _err(make_arg((3,), "int64", rng), (), {"decimals": 2},
                    exc=NotImplementedError, regex="round_cpu")]),
    OpInfo("frac", lambda x: x - np.trunc(x), _unary(), dtypes=FLOATS, inplace="frac_",
           supports_out=True, op_records=("frac", "frac_"),
           error_inputs=_dtype_errors(_none, ("int64", "bool", "complex64"),
                                      NotImplementedError, "frac_cpu")),
    # relu's gradient (internal record): values vs torch's aten op in
    # tests/test_training_kernels.py, its own gradient in relu's gradgradcheck
    OpInfo("threshold_backward", None, lambda dtype, rng: [], function=False, method=False,
           supports_grad=False, op_records=("threshold_backward",)),
    OpInfo("relu", lambda x: np.maximum(x, 0).astype(x.dtype), _unary(), dtypes=FLOATS + INTS,
           inplace="relu_", supports_out=False, op_records=("relu", "relu_"),
           error_inputs=lambda rng: [
               _err(make_arg((3,), "bool", rng), regex="Boolean inputs not supported for relu"),
               _err(make_arg((3,), "complex64", rng), exc=NotImplementedError,
                    regex="clamp is not supported")]),
    OpInfo("nan_to_num", _nan_to_num_ref, _nan_to_num_samples, dtypes=ALL_REAL + COMPLEX,
           inplace="nan_to_num_", supports_out=True, op_records=("nan_to_num", "nan_to_num_"),
           grad_dtypes=CGRAD),
    OpInfo("clamp", _clamp_ref, _clamp_samples, dtypes=ALL_REAL, inplace="clamp_",
           supports_out=True, op_records=("clamp.Tensor", "clamp_.Tensor"),
           error_inputs=_clamp_errors),
    OpInfo("clamp_min", lambda x, m: np.maximum(x, m), _clamp1_samples, dtypes=FLOATS + INTS,
           inplace="clamp_min_", supports_out=True,
           op_records=("clamp_min.Tensor", "clamp_min_.Tensor")),
    OpInfo("clamp_max", lambda x, m: np.minimum(x, m), _clamp1_samples, dtypes=FLOATS + INTS,
           inplace="clamp_max_", supports_out=True,
           op_records=("clamp_max.Tensor", "clamp_max_.Tensor")),
    OpInfo("positive", _positive_ref, _unary(), dtypes=FLOATS + INTS + COMPLEX,
           error_inputs=lambda rng: [_err(make_arg((3,), "bool", rng),
                                          regex="on a bool tensor is not supported")]),
]


# ------------------------------------------------------------------ predicates

def _pred_samples(dtype, rng):
    out = unary_samples()(dtype, rng)
    if dtype in FLOATS:
        out.append(SampleInput(np.array(SPECIAL, dtype), name="special"))
    if dtype in COMPLEX:
        v = np.array([complex(NAN, 0), complex(0, INF), complex(1, 0), complex(-INF, 1),
                      complex(0, 0)], dtype)
        out.append(SampleInput(v, name="special"))
    return out


def _pred(name, ref, dtypes=ALL_REAL + COMPLEX, errors=None):
    # torch's isnan/isinf/isfinite/isreal take no out= (ember/_ops/out_contracts.py)
    out = name in ("isposinf", "isneginf", "signbit")
    return OpInfo(name, ref, _pred_samples, dtypes=dtypes, supports_out=out,
                  supports_grad=False, op_records=(name,), error_inputs=errors)


def _isreal_ref(x):
    return np.imag(x) == 0 if x.dtype.kind == "c" else np.ones(x.shape, bool)


def _signbit_ref(x):
    return np.signbit(x) if x.dtype.kind == "f" else x < 0 if x.dtype.kind == "i" else \
        np.zeros(x.shape, bool)


PREDICATES = [
    _pred("isnan", np.isnan),
    _pred("isinf", np.isinf),
    _pred("isfinite", np.isfinite),
    _pred("isposinf", np.isposinf, ALL_REAL,
          _dtype_errors(_none, COMPLEX, RuntimeError, "does not support complex")),
    _pred("isneginf", np.isneginf, ALL_REAL,
          _dtype_errors(_none, COMPLEX, RuntimeError, "does not support complex")),
    _pred("isreal", _isreal_ref),
    _pred("signbit", _signbit_ref, ALL_REAL,
          _dtype_errors(_none, COMPLEX, NotImplementedError, "signbit is not implemented")),
]


# ------------------------------------------------------------------ binary arithmetic

def _pow_samples(dtype, rng):
    if dtype in COMPLEX:
        out = binary_samples(-2, 2, scalars=False)(dtype, rng)
        x = make_arg((3, 4), dtype, rng, -2, 2)
        return out + [SampleInput(x, (2,)), SampleInput(x, (0.5,)), SampleInput(x, (1j,))]
    if dtype in FLOATS:
        out = binary_samples(0.5, 3, -2, 2, scalars=False)(dtype, rng)
        x = make_arg((3, 4), dtype, rng, 0.5, 3)
        return out + [SampleInput(x, (2,)), SampleInput(x, (-1.5,)), SampleInput(x, (0,)),
                      SampleInput(x, (make_arg((3, 4), "int64", rng, 0, 4),), name="int exp")]
    out = binary_samples(-3, 4, 0, 4, scalars=False)(dtype, rng)
    x = make_arg((3, 4), dtype, rng, -3, 4)
    out += [SampleInput(x, (2,)), SampleInput(x, (2.5,), name="float scalar"),
            SampleInput(x, (make_arg((4,), "float64", rng, -2, 2),), name="float exp")]
    if dtype in SIGNED:
        out.append(SampleInput(np.array([-1, 1, 2, -2, 0, -1], dtype),
                               (np.array([-1, -2, -1, -3, 1, -4], dtype),), name="neg exp"))
    return out


def _pow_ref(a, b):
    if isinstance(b, np.ndarray) and b.dtype.kind in "iu" and a.dtype.kind in "iu":
        neg = b < 0
        r = np.power(a, np.where(neg, 0, b))
        special = np.where(a == 1, 1, np.where(a == -1, np.where(b % 2 == 0, 1, -1), 0))
        return np.where(neg, special, r)
    if a.dtype.kind in "iu" and isinstance(b, float):
        a = a.astype(np.float64)
    return np.power(a, b)


def _pow_errors(rng):
    return [_err(make_arg((3,), "int64", rng), (-1,),
                 regex="Integers to negative integer powers are not allowed"),
            _err(make_arg((3,), "bool", rng), (make_arg((3,), "bool", rng),),
                 exc=NotImplementedError, regex='"pow" not implemented for \'Bool\'')]


def _rpow_samples(dtype, rng):
    lo, hi = _range(dtype, -2, 2) if dtype not in INTS else (0, 4)
    x = make_arg((3, 4), dtype, rng, lo, hi)
    return [SampleInput(x, (2,)), SampleInput(x, (2.5,))]


def _float_power_samples(dtype, rng):
    if dtype in COMPLEX:
        x = make_arg((3, 4), dtype, rng, -2, 2)
        return [SampleInput(x, (make_arg((4,), dtype, rng, -2, 2),)), SampleInput(x, (2,))]
    lo, hi = _range(dtype, 0.5, 3)
    x = make_arg((3, 4), dtype, rng, lo, hi)
    return [SampleInput(x, (make_arg((4,), dtype, rng, *_range(dtype, -2, 2)),)),
            SampleInput(x, (2,)), SampleInput(x, (-1.5,)),
            SampleInput(make_arg((), dtype, rng, lo, hi), (make_arg((2, 3), dtype, rng),))]


def _float_power_ref(a, b):
    c = a.dtype.kind == "c" or isinstance(b, complex) or \
        isinstance(b, np.ndarray) and b.dtype.kind == "c"
    dt = np.complex128 if c else np.float64
    return np.power(a.astype(dt), b.astype(dt) if isinstance(b, np.ndarray) else b)


def _div_mode_samples(dtype, rng):
    out = []
    for mode in ("trunc", "floor"):
        for s in binary_samples(rhs_low=1, rhs_high=9)(dtype, rng):
            b = s.args[0]
            if isinstance(b, np.ndarray) and dtype in SIGNED + FLOATS:
                b = np.where(rng.random(b.shape) < 0.5, -b, b).astype(dtype)
            out.append(SampleInput(s.input, (b,), {"rounding_mode": mode}))
    return out


def _div_mode_ref(a, b, rounding_mode):
    if a.dtype.kind in "iu":
        q = np.floor_divide(a, b)
        if rounding_mode == "trunc":
            fix = (np.remainder(a, b) != 0) & ((a < 0) != (np.asarray(b) < 0))
            q = np.where(fix, q + 1, q)
        return q
    return np.floor_divide(a, b) if rounding_mode == "floor" else np.trunc(a / b)


def _int_div_errors(name, call_args=lambda x: (0,), kw=None):
    def gen(rng):
        x = make_arg((3,), "int64", rng)
        return [_err(x, call_args(x), kw, regex="ZeroDivisionError"),
                _err(x, (np.array([1, 0, 2]),), kw, regex="ZeroDivisionError"),
                _err(make_arg((3,), "complex64", rng), (make_arg((3,), "complex64", rng),), kw,
                     exc=NotImplementedError, regex=name)]
    return gen


def _nonzero_rhs(gen_fn, dtypes_signed=SIGNED + FLOATS):
    """Binary samples with a divisor away from zero and of both signs."""
    def gen(dtype, rng):
        out = []
        for s in gen_fn(dtype, rng):
            b = s.args[0]
            if isinstance(b, np.ndarray) and dtype in dtypes_signed:
                b = np.where(rng.random(b.shape) < 0.5, -b, b).astype(dtype)
            out.append(SampleInput(s.input, (b,), s.kwargs, s.name))
        return out
    return gen


def _rsub_samples(dtype, rng):
    out = binary_samples()(dtype, rng)
    x = make_arg((3, 4), dtype, rng)
    out.append(SampleInput(x, (make_arg((4,), dtype, rng),), {"alpha": 2}))
    return out


def _rsub_ref(a, b, alpha=1):
    return np.subtract(b, np.multiply(a, alpha) if alpha != 1 else a)


def _rsub_errors(rng):
    b = make_arg((3,), "bool", rng)
    return [_err(b, (b,), regex="with two bool tensors is not supported"),
            _err(make_arg((3,), "int64", rng), (b,), regex="with a bool tensor is not supported")]


def _maximum_errors(name):
    return _dtype_errors(_same, COMPLEX, RuntimeError, f"{name} not implemented for complex")


def _fmax_samples(dtype, rng):
    out = binary_samples(scalars=False)(dtype, rng)
    if dtype in FLOATS:
        out.append(SampleInput(np.array([NAN, 1.0, NAN, 2.0], dtype),
                               (np.array([0.0, NAN, NAN, 3.0], dtype),), name="nan"))
    return out


def _xlogy_samples(dtype, rng):
    out = _binary(rhs_low=0.1, rhs_high=9)(dtype, rng)
    if dtype in FLOATS:
        out.append(SampleInput(np.array([0.0, 0.0, 1.0, 2.0], dtype),
                               (np.array([0.0, NAN, 0.0, 3.0], dtype),), name="special"))
    return out


def _xlogy_ref(a, b):
    a = np.asarray(a, np.float64) if np.asarray(a).dtype.kind in "biu" else np.asarray(a)
    b = np.asarray(b, np.float64) if np.asarray(b).dtype.kind in "biu" else np.asarray(b)
    with np.errstate(all="ignore"):
        r = np.where(a == 0, 0, a * np.log(b))
    return np.where(np.isnan(b), np.nan, r)


def _heaviside_ref(a, b):
    return np.where(a == 0, b, a > 0).astype(a.dtype)


def _heaviside_samples(dtype, rng):
    out = binary_samples(scalars=False)(dtype, rng)
    out.append(SampleInput(np.array([0, 1, 0, 2], dtype) if dtype != "bool" else
                           np.array([0, 1, 0, 1], bool), (np.array([1, 0, 0, 1], dtype),),
                           name="zeros"))
    return out


def _heaviside_errors(rng):
    return [_err(make_arg((3,), "float32", rng), (make_arg((3,), "float64", rng),),
                 regex="tensors with different dtypes"),
            _err(make_arg((3,), "complex64", rng), (make_arg((3,), "complex64", rng),),
                 regex="not yet implemented for complex")]


def _ldexp_samples(dtype, rng):
    e = make_arg((3, 4), "int64", rng, -3, 4)
    return [SampleInput(make_arg((3, 4), dtype, rng), (e,)),
            SampleInput(make_arg((4,), dtype, rng), (e,)),
            SampleInput(make_arg((3, 4), dtype, rng), (make_arg((4,), "int32", rng, -2, 3),))]


def _ldexp_ref(a, b):
    a = a.astype(np.float64) if a.dtype.kind in "biu" else a
    return a * np.power(2.0, b)


def _lerp_samples(dtype, rng):
    a = make_arg((3, 4), dtype, rng)
    b = make_arg((3, 4), dtype, rng)
    return [SampleInput(a, (b, 0.3)), SampleInput(a, (b, 0.8)),
            SampleInput(a, (make_arg((4,), dtype, rng), make_arg((3, 1), dtype, rng, 0, 1))),
            SampleInput(make_arg((), dtype, rng), (make_arg((2, 3), dtype, rng), 1.5)),
            SampleInput(a, (b, make_arg((3, 4), dtype, rng, 0, 1)))]


def _lerp_ref(a, b, w):
    return a + w * (b - a)


def _lerp_errors(rng):
    x = make_arg((3,), "float32", rng)
    return [_err(x, (make_arg((3,), "float64", rng), 0.5), regex="expected dtype float for `end`"),
            _err(x, (x, make_arg((3,), "float64", rng)), regex="for `weight`"),
            _err(make_arg((3,), "int64", rng), (make_arg((3,), "int64", rng), 0.5),
                 exc=NotImplementedError, regex="lerp_kernel")]


def _addc_samples(div):
    def gen(dtype, rng):
        lo, hi = (1, 9) if div else (None, None)
        x = make_arg((3, 4), dtype, rng)
        return [SampleInput(x, (make_arg((3, 4), dtype, rng),
                                make_arg((3, 4), dtype, rng, lo, hi))),
                SampleInput(x, (make_arg((4,), dtype, rng), make_arg((3, 1), dtype, rng, lo, hi)),
                            {"value": 2 if dtype in INTS else 0.5}),
                SampleInput(make_arg((), dtype, rng), (make_arg((2, 3), dtype, rng),
                                                       make_arg((2, 3), dtype, rng, lo, hi)))]
    return gen


def _addcmul_ref(a, t1, t2, value=1):
    return a + value * t1 * t2


def _addcdiv_ref(a, t1, t2, value=1):
    return a + value * t1 / t2


def _frexp_ref(x):
    m, e = np.frexp(x)
    return m, e.astype(np.int32)


def _copysign_samples(dtype, rng):
    out = _binary()(dtype, rng)
    if dtype in FLOATS:
        out.append(SampleInput(np.array([1.0, -2.0, 3.0, -4.0], dtype),
                               (np.array([-0.0, 0.0, NAN, -INF], dtype),), name="special"))
    return out


def _copysign_ref(a, b):
    a = a.astype(np.float64) if a.dtype.kind in "biu" else a
    b = b.astype(np.float64) if isinstance(b, np.ndarray) and b.dtype.kind in "biu" else b
    return np.copysign(a, b)


def _gcd_samples(dtype, rng):
    return binary_samples(-20, 20, -20, 20, scalars=False)(dtype, rng)


def _logaddexp_ref(a, b):
    if a.dtype.kind != "c":
        return np.logaddexp(a, b)
    a, b = np.broadcast_arrays(a, b)          # torch: max + log1p(exp(min - max))
    mx = np.where(a.real >= b.real, a, b)
    mn = np.where(a.real >= b.real, b, a)
    return mx + np.log1p(np.exp(mn - mx))


BINARY = [
    OpInfo("pow", _pow_ref, _pow_samples, dtypes=FLOATS + INTS + COMPLEX, inplace="pow_",
           supports_out=True, grad_dtypes=CGRAD, error_inputs=_pow_errors,
           op_records=("pow.Tensor_Tensor", "pow_.Tensor_Tensor"), atol=1e-4, rtol=1e-5),
    OpInfo("__rpow__", lambda x, s: np.power(s, x.astype(np.float64) if isinstance(s, float)
                                             and x.dtype.kind in "biu" else x),
           _rpow_samples, dtypes=FLOATS + ("int64", "int32"), function=False),
    OpInfo("__pow__", _pow_ref, _rpow_samples, dtypes=FLOATS + ("int64",), function=False,
           supports_grad=False),
    OpInfo("float_power", _float_power_ref, _float_power_samples, dtypes=ALL_REAL + COMPLEX,
           inplace="float_power_", supports_out=True, grad_dtypes=CGRAD,
           op_records=("float_power.Tensor_Tensor",)),
    OpInfo("remainder", np.remainder, _nonzero_rhs(_binary(rhs_low=1, rhs_high=9)),
           dtypes=FLOATS + INTS, inplace="remainder_", supports_out=True,
           op_records=("remainder.Tensor", "remainder_.Tensor"),
           error_inputs=_int_div_errors("remainder_cpu")),
    OpInfo("__mod__", np.remainder, _nonzero_rhs(_binary(rhs_low=1, rhs_high=9)),
           dtypes=("float32", "int64"), function=False, supports_grad=False),
    OpInfo("fmod", np.fmod, _nonzero_rhs(_binary(rhs_low=1, rhs_high=9)), dtypes=FLOATS + INTS,
           inplace="fmod_", supports_out=True, op_records=("fmod.Tensor", "fmod_.Tensor"),
           error_inputs=_int_div_errors("fmod_cpu")),
    OpInfo("floor_divide", np.floor_divide, _nonzero_rhs(_binary(rhs_low=1, rhs_high=9)),
           dtypes=FLOATS + INTS, inplace="floor_divide_", supports_out=True, supports_grad=False,
           op_records=("floor_divide", "floor_divide_"),
           error_inputs=_int_div_errors("div_floor_cpu")),
    OpInfo("__floordiv__", np.floor_divide, _nonzero_rhs(_binary(rhs_low=1, rhs_high=9)),
           dtypes=("float32", "int64"), function=False, supports_grad=False),
    OpInfo("div", _div_mode_ref, _div_mode_samples, dtypes=FLOATS + INTS, inplace="div_",
           supports_out=True, supports_gradgrad=False,
           op_records=("div.Tensor_mode", "div_.Tensor_mode"),
           error_inputs=lambda rng: _int_div_errors("div_floor_cpu", kw={"rounding_mode": "floor"})(
               rng) + [_err(make_arg((3,), "float32", rng), (2.0,), {"rounding_mode": "bad"},
                            regex="div expected rounding_mode to be one of None")]),
    OpInfo("true_divide", _f64(np.true_divide), binary_samples(rhs_low=1, rhs_high=9),
           dtypes=FLOATS + INTS, inplace="true_divide_", supports_out=True, supports_grad=False),
    OpInfo("divide", _f64(np.true_divide), binary_samples(rhs_low=1, rhs_high=9),
           dtypes=("float32", "int64"), inplace="divide_", supports_out=True,
           supports_grad=False),
    OpInfo("rsub", _rsub_ref, _rsub_samples, dtypes=FLOATS + INTS + COMPLEX, method=False,
           supports_out=True, grad_dtypes=CGRAD, error_inputs=_rsub_errors,
           op_records=("rsub.Tensor",)),
    OpInfo("atan2", _f64(np.arctan2), _binary(scalars=False), dtypes=ALL_REAL, inplace="atan2_",
           supports_out=True, op_records=("atan2", "atan2_"),
           error_inputs=_dtype_errors(_same, COMPLEX, NotImplementedError, "atan2_cpu")),
    OpInfo("hypot", np.hypot, _binary(scalars=False), dtypes=FLOATS, inplace="hypot_",
           supports_out=True, op_records=("hypot", "hypot_"),
           error_inputs=_dtype_errors(_same, ("int64", "bool", "complex64"), NotImplementedError,
                                      "hypot_cpu")),
    OpInfo("maximum", np.maximum, _binary(scalars=False), dtypes=ALL_REAL, supports_out=True,
           op_records=("maximum",), error_inputs=_maximum_errors("maximum")),
    OpInfo("minimum", np.minimum, _binary(scalars=False), dtypes=ALL_REAL, supports_out=True,
           op_records=("minimum",), error_inputs=_maximum_errors("minimum")),
    OpInfo("fmax", np.fmax, _fmax_samples, dtypes=ALL_REAL, supports_out=True,
           op_records=("fmax",), error_inputs=_maximum_errors("fmax")),
    OpInfo("fmin", np.fmin, _fmax_samples, dtypes=ALL_REAL, supports_out=True,
           op_records=("fmin",), error_inputs=_maximum_errors("fmin")),
    OpInfo("copysign", _copysign_ref, _copysign_samples, dtypes=ALL_REAL, inplace="copysign_",
           supports_out=True, op_records=("copysign.Tensor", "copysign_.Tensor"),
           error_inputs=_dtype_errors(_same, COMPLEX, NotImplementedError, "copysign_cpu")),
    OpInfo("nextafter", np.nextafter, _binary(scalars=False), dtypes=FLOATS,
           inplace="nextafter_", supports_out=True, supports_grad=False,
           op_records=("nextafter", "nextafter_"),
           error_inputs=_dtype_errors(_same, ("int64", "bool"), NotImplementedError,
                                      "nextafter_cpu")),
    OpInfo("xlogy", _xlogy_ref, _xlogy_samples, dtypes=ALL_REAL, inplace="xlogy_",
           supports_out=True, op_records=("xlogy.Tensor", "xlogy_.Tensor"),
           error_inputs=_dtype_errors(_same, COMPLEX, NotImplementedError, "xlogy_cpu")),
    OpInfo("logaddexp", _logaddexp_ref, _binary(scalars=False, cbox=(-3, 3)),
           dtypes=FLOATS + COMPLEX, supports_out=True, grad_dtypes=CGRAD,
           op_records=("logaddexp",),
           error_inputs=_dtype_errors(_same, ("int64", "bool"), NotImplementedError,
                                      "logaddexp_cpu")),
    OpInfo("logaddexp2", np.logaddexp2, _binary(scalars=False), dtypes=FLOATS, supports_out=True,
           op_records=("logaddexp2",),
           error_inputs=_dtype_errors(_same, ("int64", "complex64"), NotImplementedError,
                                      "logaddexp2_cpu")),
    OpInfo("heaviside", _heaviside_ref, _heaviside_samples, dtypes=ALL_REAL,
           inplace="heaviside_", supports_out=True, supports_grad=False,
           op_records=("heaviside", "heaviside_"), error_inputs=_heaviside_errors),
    OpInfo("gcd", np.gcd, _gcd_samples, dtypes=INTS, inplace="gcd_", supports_out=True,
           supports_grad=False, op_records=("gcd", "gcd_"),
           error_inputs=_dtype_errors(_same, ("float32", "bool"), NotImplementedError,
                                      "gcd_cpu")),
    OpInfo("lcm", np.lcm, _gcd_samples, dtypes=INTS, inplace="lcm_", supports_out=True,
           supports_grad=False, op_records=("lcm", "lcm_"),
           error_inputs=_dtype_errors(_same, ("float32", "bool"), NotImplementedError,
                                      "lcm_cpu")),
    OpInfo("ldexp", _ldexp_ref, _ldexp_samples, dtypes=FLOATS + INTS + COMPLEX,
           inplace="ldexp_", supports_out=True, grad_dtypes=CGRAD,
           op_records=("ldexp.Tensor",)),
    OpInfo("frexp", _frexp_ref, _unary(special=(0.0, 1.0, -3.5, 1e-40, INF)), dtypes=FLOATS,
           supports_out=True, op_records=("frexp.Tensor",),
           error_inputs=_dtype_errors(_none, ("int64", "bool", "complex64"), RuntimeError,
                                      "only supports floating-point dtypes")),
    OpInfo("lerp", _lerp_ref, _lerp_samples, dtypes=FLOATS + COMPLEX, inplace="lerp_",
           supports_out=True, grad_dtypes=CGRAD, error_inputs=_lerp_errors,
           op_records=("lerp.Tensor", "lerp_.Tensor")),
    OpInfo("addcmul", _addcmul_ref, _addc_samples(False), dtypes=FLOATS + INTS + COMPLEX,
           inplace="addcmul_", supports_out=True, grad_dtypes=CGRAD,
           op_records=("addcmul", "addcmul_"), atol=1e-4, rtol=1e-5,
           error_inputs=_dtype_errors(lambda d, r: (make_arg((3,), d, r),) * 2, ("bool",),
                                      NotImplementedError, "addcmul_cpu_out")),
    OpInfo("addcdiv", _addcdiv_ref, _addc_samples(True), dtypes=FLOATS + COMPLEX,
           inplace="addcdiv_", supports_out=True, grad_dtypes=CGRAD,
           op_records=("addcdiv", "addcdiv_"), atol=1e-4, rtol=1e-5,
           error_inputs=_dtype_errors(lambda d, r: (make_arg((3,), d, r, 1, 5),) * 2, ("int64",),
                                      RuntimeError, "Integer division with addcdiv")),
]


# ------------------------------------------------------------------ bitwise / logical / comparisons

def _bitwise_errors(name):
    return _dtype_errors(_same, ("float32", "complex64"), NotImplementedError, name)


def _shift_samples(dtype, rng):
    bits = np.dtype(dtype).itemsize * 8
    lo = 0 if dtype == "uint8" else -20
    x = make_arg((3, 4), dtype, rng, lo, 20)
    return [SampleInput(x, (make_arg((3, 4), dtype, rng, 0, min(bits - 1, 8)),)),
            SampleInput(x, (make_arg((4,), dtype, rng, 0, 5),)), SampleInput(x, (2,)),
            SampleInput(make_arg((5,), dtype, rng, lo, 20),
                        (np.array([bits, bits + 1, 0, 1, min(bits + 3, 127)], dtype),),
                        name="too far")] + \
        ([SampleInput(np.array([-8, 8, -1], dtype), (np.array([-1, -2, bits - 1], dtype),),
                      name="negative")] if dtype in SIGNED else [])


def _lshift_ref(a, b):
    dt = a.dtype
    bits = dt.itemsize * 8
    bb = np.asarray(b)
    bad = (bb < 0) | (bb >= bits)
    r = np.left_shift(a, np.where(bad, 0, bb).astype(dt))
    return np.where(bad, 0, r).astype(dt)


def _rshift_ref(a, b):
    dt = a.dtype
    bits = dt.itemsize * 8
    bb = np.asarray(b)
    bad = (bb < 0) | (bb >= bits)
    r = np.right_shift(a, np.where(bad, 0, bb).astype(dt))
    fill = np.right_shift(a, bits - 1) if dt.kind == "i" else 0
    return np.where(bad, fill, r).astype(dt)


def _bit(name, ref, records, samples=None, inplace=True, dtypes=INTS + ("bool",), errors=None):
    dunder = name.startswith("__")
    return OpInfo(name, ref, samples or binary_samples(), dtypes=dtypes,
                  inplace=name + "_" if inplace else None, supports_out=not dunder,
                  function=not dunder, supports_grad=False, op_records=records,
                  error_inputs=errors)


def _logical_samples(dtype, rng):
    out = binary_samples(scalars=False)(dtype, rng)
    if dtype in FLOATS + INTS:
        out.append(SampleInput(np.array([0, 1, 0, 2], dtype), (np.array([0, 0, 3, 1], dtype),),
                               name="zeros"))
    return out


def _cmp_samples(dtype, rng):
    out = binary_samples(-3, 3)(dtype, rng)      # small range: ties happen
    if dtype in FLOATS:
        out.append(SampleInput(np.array([NAN, 1.0, INF, -0.0], dtype),
                               (np.array([NAN, NAN, INF, 0.0], dtype),), name="special"))
        out.append(SampleInput(make_arg((3,), dtype, rng), (1,), name="int scalar"))
    if dtype in INTS:
        out.append(SampleInput(make_arg((3,), dtype, rng), (1.5,), name="float scalar"))
    return out


def _cmp(name, ref, dtypes=ALL_REAL + COMPLEX, errors=None, records=None):
    return OpInfo(name, ref, _cmp_samples, dtypes=dtypes, inplace=name + "_", supports_out=True,
                  supports_grad=False, error_inputs=errors,
                  op_records=records if records is not None else (f"{name}.Tensor",
                                                                  f"{name}_.Tensor"))


def _ordered_errors(name):
    return _dtype_errors(_same, COMPLEX, NotImplementedError, f"{name}_cpu")


BITWISE = [
    _bit("bitwise_and", np.bitwise_and, ("bitwise_and.Tensor", "bitwise_and_.Tensor"),
         errors=_bitwise_errors("bitwise_and_cpu")),
    _bit("bitwise_or", np.bitwise_or, ("bitwise_or.Tensor", "bitwise_or_.Tensor"),
         errors=_bitwise_errors("bitwise_or_cpu")),
    _bit("bitwise_xor", np.bitwise_xor, ("bitwise_xor.Tensor", "bitwise_xor_.Tensor"),
         errors=_bitwise_errors("bitwise_xor_cpu")),
    OpInfo("bitwise_not", np.invert, unary_samples(), dtypes=INTS + ("bool",),
           inplace="bitwise_not_", supports_out=True, supports_grad=False,
           op_records=("bitwise_not", "bitwise_not_"),
           error_inputs=_dtype_errors(_none, ("float32",), NotImplementedError,
                                      "bitwise_not_cpu")),
    _bit("bitwise_left_shift", _lshift_ref,
         ("bitwise_left_shift.Tensor", "bitwise_left_shift_.Tensor"), _shift_samples,
         dtypes=INTS, errors=_dtype_errors(_same, ("float32", "bool"), NotImplementedError,
                                           "lshift_cpu")),
    _bit("bitwise_right_shift", _rshift_ref,
         ("bitwise_right_shift.Tensor", "bitwise_right_shift_.Tensor"), _shift_samples,
         dtypes=INTS, errors=_dtype_errors(_same, ("float32", "bool"), NotImplementedError,
                                           "rshift_cpu")),
    _bit("__and__", np.bitwise_and, (), inplace=False, dtypes=("int64", "bool")),
    _bit("__or__", np.bitwise_or, (), inplace=False, dtypes=("int64", "bool")),
    _bit("__xor__", np.bitwise_xor, (), inplace=False, dtypes=("int64", "bool")),
    _bit("__lshift__", _lshift_ref, (), _shift_samples, inplace=False, dtypes=("int64",)),
    _bit("__rshift__", _rshift_ref, (), _shift_samples, inplace=False, dtypes=("int32",)),
    OpInfo("__invert__", np.invert, unary_samples(), dtypes=("int64", "bool"), function=False,
           supports_grad=False),
    _bit("logical_and", np.logical_and, ("logical_and", "logical_and_"), _logical_samples,
         dtypes=ALL_REAL + COMPLEX),
    _bit("logical_or", np.logical_or, ("logical_or", "logical_or_"), _logical_samples,
         dtypes=ALL_REAL + COMPLEX),
    _bit("logical_xor", np.logical_xor, ("logical_xor", "logical_xor_"), _logical_samples,
         dtypes=ALL_REAL + COMPLEX),
    OpInfo("logical_not", np.logical_not, _pred_samples, dtypes=ALL_REAL + COMPLEX,
           inplace="logical_not_", supports_out=True, supports_grad=False,
           op_records=("logical_not", "logical_not_")),
    _cmp("eq", np.equal),
    _cmp("ne", np.not_equal),
    _cmp("lt", np.less, ALL_REAL, _ordered_errors("lt")),
    _cmp("le", np.less_equal, ALL_REAL, _ordered_errors("le")),
    _cmp("gt", np.greater, ALL_REAL, _ordered_errors("gt")),
    _cmp("ge", np.greater_equal, ALL_REAL, _ordered_errors("ge")),
    _cmp("greater", np.greater, ("float32", "int64"), records=()),
    _cmp("greater_equal", np.greater_equal, ("float32", "int64"), records=()),
    _cmp("less", np.less, ("float32", "int64"), records=()),
    _cmp("less_equal", np.less_equal, ("float32", "int64"), records=()),
    _cmp("not_equal", np.not_equal, ("float32", "int64"), records=()),
]
for _name, _ref in [("__lt__", np.less), ("__le__", np.less_equal), ("__gt__", np.greater),
                    ("__ge__", np.greater_equal), ("__eq__", np.equal),
                    ("__ne__", np.not_equal)]:
    BITWISE.append(OpInfo(_name, _ref, _cmp_samples, dtypes=("float32", "int64", "bool"),
                          function=False, supports_grad=False))


# ------------------------------------------------------------------ where

def _where_samples(dtype, rng):
    c = make_arg((3, 4), "bool", rng)
    s = True if dtype == "bool" else (2 if dtype in INTS else 2.5)
    return [SampleInput(c, (make_arg((3, 4), dtype, rng), make_arg((3, 4), dtype, rng))),
            SampleInput(c, (make_arg((4,), dtype, rng), make_arg((3, 1), dtype, rng))),
            SampleInput(make_arg((4,), "bool", rng), (make_arg((3, 4), dtype, rng),
                                                       make_arg((), dtype, rng))),
            SampleInput(c, (make_arg((3, 4), dtype, rng), s), name="scalar other"),
            SampleInput(c, (s, make_arg((4,), dtype, rng)), name="scalar self"),
            SampleInput(make_arg((0, 3), "bool", rng), (make_arg((0, 3), dtype, rng),
                                                         make_arg((3,), dtype, rng)))]


def _where_method_samples(dtype, rng):
    return [SampleInput(s.args[0], (s.input, s.args[1]), name=s.name)
            for s in _where_samples(dtype, rng) if isinstance(s.args[0], np.ndarray)]


def _where_ref(c, x, y):
    return np.where(c, x, y)


def _where_errors(rng):
    x = make_arg((3,), "float32", rng)
    return [_err(x, (x, x), regex="where expected condition to be a boolean tensor, but got a "
                                  "tensor with dtype Float")]


WHERE = [
    OpInfo("where", _where_ref, _where_samples, dtypes=ALL_REAL + COMPLEX, method=False,
           supports_out=True, grad_dtypes=CGRAD, error_inputs=_where_errors,
           op_records=("where.self",)),
    OpInfo("where", lambda x, c, y: np.where(c, x, y), _where_method_samples,
           dtypes=("float32", "int64"), function=False, supports_grad=False),
]


# ------------------------------------------------------------------ activations (nn.functional)

def _gelu_samples(dtype, rng):
    out = unary_samples(low=-4, high=4)(dtype, rng)
    x = make_arg((3, 4), dtype, rng, -4, 4)
    return out + [SampleInput(x, (), {"approximate": "tanh"})]


def _gelu_ref(x, approximate="none"):
    if approximate == "tanh":
        k = math.sqrt(2 / math.pi)
        return 0.5 * x * (1 + np.tanh(k * (x + 0.044715 * x ** 3)))
    return 0.5 * x * (1 + sp.erf(x / math.sqrt(2)))


def _silu_ref(x):
    return x * _sigmoid(x)


ACTIVATIONS = [
    OpInfo("_ew_gelu", _gelu_ref, _gelu_samples, dtypes=FLOATS, method=False,
           supports_out=True, check_dtype=False, op_records=("gelu",),
           error_inputs=lambda rng: [
               _err(make_arg((3,), "float32", rng), (), {"approximate": "bad"},
                    regex="approximate argument must be either none or tanh"),
               _err(make_arg((3,), "int64", rng), exc=NotImplementedError,
                    regex="GeluKernelImpl")]),
    # gelu's derivative records: values and gradients against torch.ops.aten.gelu_backward
    # in tests/test_aten_ops.py; the training-step pair (_gelu_train) in tests/test_perf_paths.py
    OpInfo("gelu_backward", None, lambda dtype, rng: [], function=False, method=False,
           supports_grad=False, op_records=("gelu_backward", "_gelu_train")),
    OpInfo("_ew_silu", _silu_ref, _unary(-5, 5, -3, 3), dtypes=FLOATS + COMPLEX, method=False,
           supports_out=True, check_dtype=False, grad_dtypes=CGRAD,
           op_records=("silu", "silu_"),
           error_inputs=_dtype_errors(_none, ("int64",), NotImplementedError, "silu_cpu")),
]


# ------------------------------------------------------------------ aliases (same fronts)

def _alias(name, ref, gen, dtypes=("float32",), inplace=True, method=True):
    return OpInfo(name, ref, gen, dtypes=dtypes, inplace=name + "_" if inplace else None,
                  supports_out=True, supports_grad=False, method=method)


ALIASES = [
    _alias("absolute", np.abs, _unary(), ("float32", "int64")),
    _alias("arcsin", np.arcsin, _unary(-0.9, 0.9)),
    _alias("arccos", np.arccos, _unary(-0.9, 0.9)),
    _alias("arctan", np.arctan, _unary()),
    _alias("arcsinh", np.arcsinh, _unary()),
    _alias("arccosh", np.arccosh, _unary(1.1, 9)),
    _alias("arctanh", np.arctanh, _unary(-0.9, 0.9)),
    _alias("fix", np.trunc, _unary(), ("float32", "int64")),
    _alias("clip", _clamp_ref, _clamp_samples, ("float32", "int64")),
    _alias("arctan2", np.arctan2, _binary(scalars=False)),
    _alias("negative", np.negative, _unary(), ("float32", "int64")),
]


OPS = UNARY_FLOAT + UNARY_KEEP + PREDICATES + BINARY + BITWISE + WHERE + ACTIVATIONS + ALIASES
for _o in OPS:
    if _o.grad_input_filter is None:
        _o.grad_input_filter = _regular
