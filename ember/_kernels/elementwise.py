"""Kernels of the elementwise ops (ember/_ops/elementwise.py): NumPy arrays in, arrays out.

Arguments arrive already promoted by the dispatcher (a Python number stays a Python number).
Kernels check the dtypes torch rejects and raise torch's exception class and message; the
floating-point ones run with NumPy's warnings silenced (torch never warns on ``log(0)``).
"""
import builtins
import math

import numpy as np

from ember import _dtype
from ember._kernels import split
from ember._kernels.fast_elementwise import (COMPILED_MIN, POOL_MIN, TANH_MIN, maximum_scalar,
                                              pooled_relu, pooled_threshold_backward)
from ember._kernels.fast_elementwise import exp as fast_exp, fma as fast_fma, tanh as fast_tanh
from ember._kernels.layout import follows_inputs, shared_dense_order
from ember._kernels.util import half_in_float32

# torch's C++ ScalarType names, used in "not implemented for 'Float'" messages
_TNAME = _dtype.TYPE_NAMES

# ------------------------------------------------------------------ helpers

try:  # NumPy >= 2: set the error state through its context variable (~5x cheaper)
    from numpy._core._ufunc_config import _extobj_contextvar as _cv
    from numpy._core.umath import _make_extobj
    _IGNORE = _make_extobj(all="ignore")

    def quiet(fn):
        """``fn`` with NumPy's floating-point warnings silenced."""
        def kernel(*args):
            tok = _cv.set(_IGNORE)
            try:
                return fn(*args)
            finally:
                _cv.reset(tok)
        kernel.__name__ = getattr(fn, "__name__", "kernel")
        kernel.__doc__ = fn.__doc__
        return kernel
except ImportError:  # pragma: no cover
    def quiet(fn):
        def kernel(*args):
            with np.errstate(all="ignore"):
                return fn(*args)
        kernel.__name__ = getattr(fn, "__name__", "kernel")
        kernel.__doc__ = fn.__doc__
        return kernel


def dtype_of(*xs):
    """The computation dtype: the first array's (the dispatcher promoted them alike)."""
    for x in xs:
        if isinstance(x, np.ndarray):
            return x.dtype
    return np.result_type(*[x for x in xs if x is not None])


def tname(dt):
    return _TNAME.get(np.dtype(dt).name, str(dt))


def not_implemented(name, dt):
    raise NotImplementedError(f'"{name}" not implemented for \'{tname(dt)}\'')


def _kind(dt):
    k = dt.kind
    return "f" if k == "V" and dt.name == "bfloat16" else k


def check_kinds(name, allowed, *xs):
    """NotImplementedError like torch's dispatch macros when the dtype kind is not allowed
    (kinds: b bool, i/u integer, f floating, c complex)."""
    dt = dtype_of(*xs)
    if _kind(dt) not in allowed:
        not_implemented(name, dt)
    return dt


def _up(a):
    """float16/bfloat16 arrays computed in float32 (SciPy has no kernels for them)."""
    if isinstance(a, np.ndarray) and a.dtype.itemsize == 2 and _kind(a.dtype) == "f":
        return a.astype(np.float32)
    return a


_SP = None


def special():
    global _SP
    if _SP is None:
        import scipy.special as sp
        _SP = sp
    return _SP


def _check_int_zero(b):
    if isinstance(b, np.ndarray):
        if not b.all():
            raise RuntimeError("ZeroDivisionError")
    elif b == 0:
        raise RuntimeError("ZeroDivisionError")


# ------------------------------------------------------------------ unary, floating results
# (inputs arrive as floating or complex: the records promote integers to the default float)

sqrt = quiet(np.sqrt)
exp2 = quiet(np.exp2)
expm1 = quiet(np.expm1)


# Note [float32 transcendentals]: torch's float32 exp, tanh, log, sin and cos are vector
# routines that land on the correctly rounded value almost always; NumPy's float32 loops
# miss it by an ulp on a large share of inputs (exp 40%, tanh 33%, log 17%, sin/cos 14-19%
# of standard normal inputs against torch 2.13 on AVX2). Below ``TANH_MIN`` elements ember
# computes them in float64 and rounds once (then 0.9%, 0.2%, 8%, 5% differ), for 1-2 us
# more on 64 values and 5-12 us on 1024 (the printed values of small models are torch's);
# larger arrays take the compiled kernels (within 1 ulp) or NumPy's float32 loops.


def _float32_in_double(fn):
    """``fn`` of a float32 array below ``TANH_MIN`` elements computed in float64 and rounded
    once (Note [float32 transcendentals]); other inputs as ``fn`` gives them."""
    def kernel(a):
        if type(a) is np.ndarray and a.dtype == np.float32 and a.size < TANH_MIN:
            return fn(a.astype(np.float64)).astype(np.float32)
        return fn(a)
    kernel.__name__ = fn.__name__
    return kernel


@quiet
def exp(a):
    """exp: float32 arrays below ``TANH_MIN`` elements in float64, rounded once (Note
    [float32 transcendentals]), larger ones through the compiled, vectorised kernel
    (``fast_elementwise.exp``: within 1 ulp)."""
    if type(a) is np.ndarray and a.dtype == np.float32:
        if a.size < TANH_MIN:
            return np.exp(a.astype(np.float64)).astype(np.float32)
        out = fast_exp(a)
        if out is not None:
            return out
    return np.exp(a)


log = quiet(_float32_in_double(np.log))


def _in_double(fn):
    """``fn`` of a float32 array computed in float64 and rounded once: NumPy's float32
    log10/log2 miss torch's values by an ulp on a large share of inputs (log10(100.) is
    2.0000002 there, 2. in torch); rounding the double result agrees almost everywhere."""
    def kernel(a, *args, **kwargs):
        if getattr(a, "dtype", None) == np.float32 and not kwargs:
            return fn(a.astype(np.float64)).astype(np.float32)
        return fn(a, *args, **kwargs)
    kernel.__name__ = fn.__name__
    return kernel


log2 = quiet(_in_double(np.log2))
log10 = quiet(_in_double(np.log10))
log1p = quiet(np.log1p)
sin = quiet(_float32_in_double(np.sin))
cos = quiet(_float32_in_double(np.cos))
tan = quiet(np.tan)
asin = quiet(np.arcsin)
acos = quiet(np.arccos)
atan = quiet(np.arctan)
sinh = quiet(np.sinh)
cosh = quiet(np.cosh)


@quiet
def tanh(a):
    """tanh: float32 arrays below ``TANH_MIN`` elements in float64, rounded once (Note
    [float32 transcendentals]), larger ones through the compiled, vectorised kernel
    (``fast_elementwise.tanh``: within 1 ulp, as NumPy's own)."""
    if type(a) is np.ndarray and a.dtype == np.float32:
        if a.size < TANH_MIN:
            return np.tanh(a.astype(np.float64)).astype(np.float32)
        out = fast_tanh(a)
        if out is not None:
            return out
    return np.tanh(a)


asinh = quiet(np.arcsinh)
acosh = quiet(np.arccosh)
atanh = quiet(np.arctanh)
reciprocal = quiet(np.reciprocal)


@quiet
def rsqrt(a):
    a = np.asarray(a)
    if a.dtype.name in ("float16", "bfloat16"):     # torch: float32 math, rounded once
        return np.reciprocal(np.sqrt(a.astype(np.float32))).astype(a.dtype)
    return np.reciprocal(np.sqrt(a))


@quiet
def sigmoid(a):
    """1 / (1 + exp(-a)) as torch computes it (exp overflowing to inf gives 0), in three
    in-place NumPy passes: 1M float32 1.0 ms against SciPy's ``expit`` loop 3.8 ms."""
    if getattr(a, "dtype", None) == np.float16:         # computed in float32, rounded once
        return sigmoid(a.astype(np.float32)).astype(np.float16)
    e = fast_exp(np.negative(a)) if type(a) is np.ndarray and a.dtype == np.float32 and \
        a.size >= TANH_MIN else None
    if e is None:
        e = np.exp(np.negative(a))
    if not isinstance(e, np.ndarray):
        return np.reciprocal(1 + e)
    e += 1
    if e.dtype.kind == "c":           # 1 / e as a complex division (NumPy's reciprocal
        return np.divide(1, e, out=e)   # differs in the last bits and zeros' signs)
    return np.reciprocal(e, out=e)


@quiet
def sinc(a):
    return np.sinc(a)


def _real_only(name, a, msg=None):
    dt = dtype_of(a)
    if dt.kind == "c":
        if msg:
            raise RuntimeError(msg)
        not_implemented(name, dt)


@quiet
def deg2rad(a):
    _real_only("", a, "deg2rad is not supported for complex tensors.")
    return np.deg2rad(a)


@quiet
def rad2deg(a):
    _real_only("", a, "rad2deg is not supported for complex tensors.")
    return np.rad2deg(a)


@quiet
def logit(a, eps=None):
    _real_only("logit_cpu", a)
    if eps is not None:
        a = np.clip(a, eps, 1 - eps)
    return np.log(a / (1 - a))


def _scipy_unary(torch_name, sp_name):
    @quiet
    def kernel(a):
        _real_only(torch_name, a)
        return getattr(special(), sp_name)(_up(a))
    kernel.__name__ = sp_name
    return kernel


_scipy_erf = _scipy_unary("erf_vml_cpu", "erf")


def erf(a):
    """erf; large float32 arrays through the compiled kernel (ember/_kernels/compiled/erf.py:
    1M elements 18.7 -> 7.8 ms, torch 1.3), the rest through SciPy."""
    if type(a) is np.ndarray and a.dtype == np.float32 and a.size >= 4096 and \
            a.flags.c_contiguous:
        from ember._kernels import compiled
        kernels = compiled.module("erf")
        if kernels is not None:
            out = np.empty(a.shape, np.float32)
            kernels.erf_f32(a.reshape(-1), out.reshape(-1))
            return out
    return _scipy_erf(a)
erfc = _scipy_unary("erfc_vml_cpu", "erfc")
erfinv = _scipy_unary("erfinv_vml_cpu", "erfinv")
lgamma = _scipy_unary("lgamma_vml_cpu", "gammaln")
digamma = _scipy_unary("digamma", "psi")
i0 = _scipy_unary("i0_vml_cpu", "i0")
i1 = _scipy_unary("i1_vml_cpu", "i1")


@quiet
def polygamma(a, n):
    if n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")
    _real_only("trigamma" if n == 1 else "polygamma", a)
    if n == 0:
        return special().psi(_up(a))
    if n == 1:                   # torch's recurrence and series (Note [torch's trigamma])
        x = np.asarray(_up(a))
        if x.dtype.char in "fd":
            from ember._kernels.special import trigamma
            return trigamma(x)
        return special().polygamma(1, x)
    return special().polygamma(n, _up(a))


@quiet
def mvlgamma(a, p):
    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    _real_only("arange_cpu", a)
    a = _up(a)
    j = np.arange(p, dtype=a.dtype) / 2
    r = special().gammaln(np.asarray(a)[..., None] - j).sum(-1)
    return r + p * (p - 1) / 4 * math.log(math.pi)


def angle(a, float_dtype):
    """Angle of complex numbers; 0 / pi (nan for nan) for real ones; integers give floats."""
    dt = dtype_of(a)
    if dt.kind == "c":
        return np.angle(a)
    if dt.kind in "biu":
        return np.where(np.asarray(a) < 0, np.pi, 0.0).astype(float_dtype)
    a = np.asarray(a)
    return np.where(a < 0, np.asarray(np.pi, a.dtype), np.where(np.isnan(a), a, 0)).astype(dt)


# ------------------------------------------------------------------ unary, dtype kept


def abs(a):
    check_kinds("abs_cpu", "iufc", a)
    return np.abs(a)


def abs_inplace(a):
    if dtype_of(a).kind == "c":
        raise RuntimeError("In-place abs is not supported for complex tensors.")
    return abs(a)


def sign(a):
    dt = dtype_of(a)
    if dt.kind == "c":
        raise NotImplementedError("Unlike NumPy, torch.sign is not intended to support complex "
                                  "numbers. Please use torch.sgn instead.")
    return _sign_real(a, dt)


def _sign_real(a, dt):
    if dt.kind == "b":
        return np.array(a, copy=True)
    if dt.kind in "iu":
        return np.sign(a)
    r = np.sign(a)              # torch: (0 < a) - (a < 0), so sign(nan) == 0
    nan = r != r
    if nan.any():
        r[nan] = 0
    return r


@quiet
def sgn(a):
    dt = dtype_of(a)
    if dt.kind == "c":
        a = np.asarray(a)
        m = np.abs(a)
        return np.where(m == 0, 0, a / np.where(m == 0, 1, m)).astype(dt)
    return _sign_real(a, dt)


def square(a):
    if dtype_of(a).kind == "b":
        a = np.asarray(a, np.int64)
    return np.square(a)


def _rounding(name, fn):
    def kernel(a):
        dt = dtype_of(a)
        if dt.kind == "b":
            not_implemented(f"{name}_vml_cpu", dt)
        if dt.kind == "c":
            if name == "round":
                not_implemented("round_vml_cpu", dt)
            raise NotImplementedError(f"{name} is not supported for complex inputs")
        if dt.kind in "iu":
            return np.array(a, copy=True)
        return fn(a)
    kernel.__name__ = name
    return kernel


floor = _rounding("floor", np.floor)
ceil = _rounding("ceil", np.ceil)
trunc = _rounding("trunc", np.trunc)
round = _rounding("round", np.rint)


@quiet
def round_decimals(a, decimals):
    dt = dtype_of(a)
    if _kind(dt) != "f":
        not_implemented("round_vml_cpu" if decimals == 0 else "round_cpu", dt)
    a = np.asarray(a)
    if decimals == 0:
        return np.rint(a)
    ten = np.asarray(10.0 ** builtins.abs(decimals), a.dtype)
    if decimals > 0:
        return np.rint(a * ten) / ten
    return np.rint(a / ten) * ten



@quiet
def frac(a):
    check_kinds("frac_cpu", "f", a)
    return np.subtract(a, np.trunc(a))


def relu(a):
    dt = dtype_of(a)
    if dt.kind == "b":
        raise RuntimeError("Boolean inputs not supported for relu")
    if dt.kind == "c":
        raise NotImplementedError("clamp is not supported for complex types")
    if dt.kind == "f":
        r = pooled_relu(a) if type(a) is np.ndarray and a.size >= COMPILED_MIN else None
        return maximum_scalar(a, 0) if r is None else r
    return np.maximum(a, np.zeros((), dt))


def nan_to_num(a, nan=None, posinf=None, neginf=None):
    dt = dtype_of(a)
    if _kind(dt) not in "fc":
        return np.array(a, copy=True)
    return np.nan_to_num(a, copy=True, nan=0.0 if nan is None else nan, posinf=posinf,
                         neginf=neginf)


def bitwise_not(a):
    check_kinds("bitwise_not_cpu", "biu", a)
    return np.invert(a)


def logical_not(a):
    return np.logical_not(a)


def isnan(a):
    return np.isnan(a) if _kind(dtype_of(a)) in "fc" else np.zeros(np.shape(a), np.bool_)


def isinf(a):
    return np.isinf(a) if _kind(dtype_of(a)) in "fc" else np.zeros(np.shape(a), np.bool_)


def isfinite(a):
    return np.isfinite(a) if _kind(dtype_of(a)) in "fc" else np.ones(np.shape(a), np.bool_)


def isposinf(a):
    dt = dtype_of(a)
    if dt.kind == "c":
        raise RuntimeError("isposinf does not support complex inputs.")
    return np.isposinf(a) if _kind(dt) == "f" else np.zeros(np.shape(a), np.bool_)


def isneginf(a):
    dt = dtype_of(a)
    if dt.kind == "c":
        raise RuntimeError("isneginf does not support complex inputs.")
    return np.isneginf(a) if _kind(dt) == "f" else np.zeros(np.shape(a), np.bool_)


def isreal(a):
    if dtype_of(a).kind == "c":
        return np.equal(np.imag(a), 0)
    return np.ones(np.shape(a), np.bool_)


def signbit(a):
    dt = dtype_of(a)
    if dt.kind == "c":
        raise NotImplementedError("signbit is not implemented for complex tensors.")
    if dt.kind in "bu":
        return np.zeros(np.shape(a), np.bool_)
    if dt.kind == "i":
        return np.less(a, 0)
    return np.signbit(a)


def frexp(a):
    if _kind(dtype_of(a)) != "f":
        raise RuntimeError("torch.frexp() only supports floating-point dtypes")
    m, e = np.frexp(a)
    return m, e.astype(np.int32, copy=False)


# ------------------------------------------------------------------ binary arithmetic


def _int_pow(a, b):
    """Integer power with torch's rules for negative exponents held in a tensor."""
    if not isinstance(b, np.ndarray):
        if b < 0:
            raise RuntimeError("Integers to negative integer powers are not allowed.")
        return np.power(a, b)
    neg = b < 0
    if not neg.any():
        return np.power(a, b)
    r = np.power(a, np.where(neg, 0, b).astype(b.dtype, copy=False))
    a_ = np.asarray(a)
    odd = np.remainder(b, 2) != 0
    special_ = np.where(a_ == 1, 1, np.where(a_ == -1, np.where(odd, -1, 1), 0))
    return np.where(neg, special_, r)


@quiet
def pow(a, b):
    dt = dtype_of(a, b)
    if dt.kind == "b":
        not_implemented("pow", dt)
    if dt.kind in "iu":
        return _int_pow(a, b)
    if type(a) is np.ndarray and a.dtype == dt and dt.char in "fd" and \
            type(b) in (int, float) and b in (3, -2):
        # as torch's scalar-exponent kernel (bit for bit): glibc's powf takes ~170 ns an
        # element for x ** 3.0 (minGPT's tanh GELU: 13 ms on (1, 100, 768))
        sq = np.multiply(a, a)
        out = sq if type(sq) is np.ndarray else None      # (a 0-d operand gives a scalar)
        return np.multiply(sq, a, out=out) if b == 3 else np.divide(dt.type(1), sq, out=out)
    return np.power(a, b)


def _modulo(name, ufunc):
    @quiet
    def kernel(a, b):
        dt = check_kinds(f"{name}_cpu", "iuf", a, b)
        if dt.kind in "iu":
            _check_int_zero(b)
        return ufunc(a, b)
    kernel.__name__ = name
    return kernel


remainder = _modulo("remainder", np.remainder)   # sign of the divisor (Python's %)
fmod = _modulo("fmod", np.fmod)                  # sign of the dividend (C's fmod)


@quiet
def true_divide(a, b):
    return np.true_divide(a, b)


def _trunc_div_int(a, b):
    q = np.floor_divide(a, b)
    fix = (np.remainder(a, b) != 0) & ((np.asarray(a) < 0) != (np.asarray(b) < 0))
    return np.where(fix, q + 1, q) if fix.any() else q


@quiet
def div_mode(a, b, rounding_mode=None):
    if rounding_mode is None:
        return np.true_divide(a, b)
    if rounding_mode == "trunc":
        dt = check_kinds("div_trunc_cpu", "iuf", a, b)
        if dt.kind in "iu":
            _check_int_zero(b)
            return _trunc_div_int(a, b)
        return np.trunc(np.true_divide(a, b))
    if rounding_mode == "floor":
        return floor_divide(a, b)
    raise RuntimeError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but "
                       f"found '{rounding_mode}'")


@quiet
def floor_divide(a, b):
    dt = check_kinds("div_floor_cpu", "iuf", a, b)
    if dt.kind in "iu":
        _check_int_zero(b)
    return np.floor_divide(a, b)


def rsub(a, b, alpha=1):
    """``other - alpha * self`` (bool inputs are rejected by the front, before promotion)."""
    return np.subtract(b, a) if alpha == 1 else np.subtract(b, np.multiply(a, alpha))


@quiet
def atan2(a, b):
    check_kinds("atan2_cpu", "f", a, b)
    return np.arctan2(a, b)


@quiet
def hypot(a, b):
    check_kinds("hypot_cpu", "f", a, b)
    return np.hypot(a, b)


def _no_complex_rt(name, a, b):
    dt = dtype_of(a, b)
    if dt.kind == "c":
        raise RuntimeError(f"{name} not implemented for complex tensors.")
    return dt


def maximum(a, b):
    _no_complex_rt("maximum", a, b)
    return np.maximum(a, b)


def minimum(a, b):
    _no_complex_rt("minimum", a, b)
    return np.minimum(a, b)


def fmax(a, b):
    _no_complex_rt("fmax", a, b)
    return np.fmax(a, b)


def fmin(a, b):
    _no_complex_rt("fmin", a, b)
    return np.fmin(a, b)


def copysign(a, b):
    check_kinds("copysign_cpu", "f", a, b)
    return np.copysign(a, b)


def nextafter(a, b):
    check_kinds("nextafter_cpu", "f", a, b)
    return np.nextafter(a, b)


@quiet
def xlogy(a, b):
    check_kinds("xlogy_cpu", "f", a, b)
    a_, b_ = np.asarray(a), np.asarray(b)
    r = np.multiply(a_, np.log(b_))
    r = np.where(a_ == 0, np.zeros((), r.dtype), r)
    return np.where(np.isnan(b_), b_, r)


@quiet
def logaddexp(a, b):
    dt = check_kinds("logaddexp_cpu", "fc", a, b)
    if dt.kind != "c":
        return np.logaddexp(a, b)
    a_, b_ = np.asarray(a, dt), np.asarray(b, dt)
    m = np.where(a_.real >= b_.real, a_, b_)
    m = np.where(np.isinf(m.real), 0, m)      # keep inf - inf out of the shifted sum
    return m + np.log(np.exp(a_ - m) + np.exp(b_ - m))


@quiet
def logaddexp2(a, b):
    check_kinds("logaddexp2_cpu", "f", a, b)
    return np.logaddexp2(a, b)


def heaviside(a, b):
    da, db = dtype_of(a), dtype_of(b)
    if da.kind == "c" or db.kind == "c":
        raise RuntimeError("heaviside is not yet implemented for complex tensors.")
    if isinstance(b, np.ndarray) and isinstance(a, np.ndarray) and da != db:
        raise RuntimeError("heaviside is not yet implemented for tensors with different dtypes.")
    a = np.asarray(a)
    return np.where(a == 0, b, a > 0).astype(da)


def gcd(a, b):
    check_kinds("gcd_cpu", "iu", a, b)
    return np.gcd(a, b)


def lcm(a, b):
    check_kinds("lcm_cpu", "iu", a, b)
    return np.lcm(a, b)


def _lerp_check(a, b, w):
    da = dtype_of(a)
    if isinstance(b, np.ndarray) and b.dtype != da:
        raise RuntimeError(f"expected dtype {_pyname(da)} for `end` but got dtype "
                           f"{_pyname(b.dtype)}")
    if isinstance(w, np.ndarray) and w.dtype != da:
        raise RuntimeError(f"expected dtype {_pyname(da)} for `weight` but got dtype "
                           f"{_pyname(w.dtype)}")
    if _kind(da) not in "fc":
        not_implemented("lerp_kernel_scalar" if not isinstance(w, np.ndarray)
                        else "lerp_kernel_tensor", da)
    if isinstance(w, complex) and da.kind != "c":
        raise RuntimeError("value cannot be converted to type float without overflow")
    return da


def _pyname(dt):
    return {"float32": "float", "float64": "double", "float16": "c10::Half",
            "complex64": "c10::complex<float>", "complex128": "c10::complex<double>",
            "int64": "long int", "int32": "int", "bfloat16": "c10::BFloat16", "int16": "short int",
            "int8": "signed char", "uint8": "unsigned char"}.get(np.dtype(dt).name,
                                                                 np.dtype(dt).name)


def _lerp_fma(a, b, w, dt):
    """torch's float lerp: ``fma(w, end - self, self)`` where ``|w| < 0.5``, else
    ``fma(w - 1, end - self, end)`` (one rounding each; the weight in the dtype first, and
    ``w - 1`` in it), found by experiment; None for other dtypes."""
    if dt != np.float32 and dt != np.float64:
        return None
    d = np.subtract(b, a, dtype=dt)
    if not isinstance(w, np.ndarray):
        w = dt.type(w)
        if abs(w) < 0.5:
            return fma(w, d, a).astype(dt, copy=False)
        return fma(w - dt.type(1), d, b).astype(dt, copy=False)
    w = np.asarray(w, dt)
    small = np.abs(w) < 0.5
    return fma(np.where(small, w, w - dt.type(1)), d,
               np.where(small, a, b)).astype(dt, copy=False)


@quiet
def lerp(a, b, w):
    dt = _lerp_check(a, b, w)
    r = _lerp_fma(a, b, w, dt)
    if r is not None:
        return r
    a = np.asarray(a)
    d = np.subtract(b, a)
    if type(w) in (float, int) and type(d) is np.ndarray:
        # one weight: one branch for every element, in d's buffer (the optimizers' moment
        # update m.lerp_(g, 1 - beta1): 156 -> ~30 us on 65536 float32)
        if abs(w) < 0.5:
            d *= w
            return np.add(a, d, out=d).astype(dt, copy=False)
        d *= 1 - w
        return np.subtract(b, d, out=d).astype(dt, copy=False)
    small = np.abs(w) < 0.5
    r = np.where(small, a + w * d, b - d * (1 - np.asarray(w)))
    return r.astype(dt, copy=False)


def _value(value, dt):
    if dt.kind in "iu":
        if isinstance(value, complex) or isinstance(value, float) and not math.isfinite(value):
            raise RuntimeError("value cannot be converted to type int64_t without overflow")
        return dt.type(int(value))
    if dt.kind != "c" and isinstance(value, complex):
        raise RuntimeError("value cannot be converted to type float without overflow")
    return value


_LOW29, _MID29 = np.int64(0x1FFFFFFF), np.int64(0x10000000)    # a float32 midpoint's bits
_FMA_BLOCK = 1 << 16
_FMA_BLOCKS_MIN = _FMA_BLOCK + 1     # (below, the one-shot path is as fast)


def _fma32_blocks(x, y, z):
    """``fma``'s float32 fast path for large contiguous y, z of one shape and x a number or
    one more such array (SGD's ``p.add_(g, alpha=-lr)`` where BLAS's axpy does not apply,
    Adam's addcmul, without the compiled kernels): the same float64 sums
    and midpoint check, a block at a time in two float64 buffers that stay in cache, with
    no mixed-dtype ufunc (NumPy casts those through its own buffers): 670K values 2.6 ->
    1.7 ms. None where it does not apply or a block holds a midpoint or a tiny sum."""
    if type(y) is not np.ndarray or type(z) is not np.ndarray or z.size < _FMA_BLOCKS_MIN or \
            y.dtype != np.float32 or z.dtype != np.float32 or y.shape != z.shape or \
            not (y.flags.c_contiguous and z.flags.c_contiguous):
        return None
    xf = None
    if np.ndim(x):                              # an array: of the same kind, or not here
        if type(x) is not np.ndarray or x.dtype != np.float32 or x.shape != z.shape or \
                not x.flags.c_contiguous:
            return None
        xf = x.reshape(-1)
    n = z.size
    yf, zf = y.reshape(-1), z.reshape(-1)
    out = np.empty(z.shape, np.float32)
    flat = out.reshape(-1)
    s, t = np.empty(_FMA_BLOCK), np.empty(_FMA_BLOCK)
    bits = t.view(np.int64)
    if xf is None:
        x = np.float64(x)
    try:
        with np.errstate(under="raise", over="ignore", invalid="ignore"):
            for lo in range(0, n, _FMA_BLOCK):
                hi = min(n, lo + _FMA_BLOCK)
                sk, tk, bk = s[:hi - lo], t[:hi - lo], bits[:hi - lo]
                np.copyto(sk, yf[lo:hi])
                if xf is None:
                    np.multiply(sk, x, out=sk)          # exact
                else:
                    np.copyto(tk, xf[lo:hi])
                    np.multiply(sk, tk, out=sk)
                np.copyto(tk, zf[lo:hi])
                np.add(sk, tk, out=sk)
                np.bitwise_and(sk.view(np.int64), _LOW29, out=bk)
                if np.count_nonzero(np.equal(bk, _MID29)):
                    return None
                np.copyto(flat[lo:hi], sk, casting="same_kind")
    except FloatingPointError:
        return None
    return out


def fma(x, y, z):
    """``x * y + z`` rounded once (float32 or float64 arrays; None for other dtypes). float32:
    the float64 product is exact and the float64 sum's error (Knuth's two-sum) decides the
    float32 rounding by round-to-odd, so a float64 sum on a float32 midpoint rounds the right
    way; float64: Dekker's exact product and a compensated sum (as ``_fma_alpha``)."""
    dt = np.result_type(x, y, z)
    if dt != np.float32 and dt != np.float64:
        return None
    if type(z) is np.ndarray and (r := fast_fma(x, y, z)) is not None:
        return r                                        # compiled: the CPU's fma
    if dt == np.float32 and (r := _fma32_blocks(x, y, z)) is not None:
        return r
    if dt == np.float32:
        # the float64 product is exact (24 + 24 bits) and rounding the float64 sum to
        # float32 is the one rounding of x * y + z unless the sum fell on a float32 midpoint
        # (its significand's low 29 bits 1 then zeros) or below float32's normal range (the
        # cast's underflow flag); only then the two-sum below (64 values: 16 -> 12 us)
        try:
            with np.errstate(under="raise", over="ignore", invalid="ignore"):
                s = np.add(np.multiply(x, y, dtype=np.float64), z, dtype=np.float64)
                if not np.count_nonzero(np.equal(np.bitwise_and(s.view(np.int64), _LOW29),
                                                 _MID29)):
                    return s.astype(np.float32)
        except FloatingPointError:
            pass
    with np.errstate(all="ignore"):
        x = np.asarray(x, np.float64)
        y = np.asarray(y, np.float64)
        z = np.asarray(z, np.float64)
        if dt == np.float32:
            p = x * y                                   # exact: 24 + 24 bits
            s = p + z
            # (the rare case above: two-sum where s is a midpoint or tiny)
            risky = (s.view(np.int64) & 0x1FFFFFFF) == 0x10000000
            risky |= (np.abs(s) < 2.0 ** -125) & (s != 0)
            if risky.any():
                v = s - p
                t = (p - (s - v)) + (z - v)             # s + t == p + z exactly
                inexact = (t != 0) & np.isfinite(s) & risky
                if inexact.any():                       # round to odd: the odd neighbour
                    n = np.nextafter(s, np.where(t > 0, np.inf, -np.inf))
                    odd = (s.view(np.int64) & 1).astype(bool)
                    s = np.where(inexact & ~odd, n, s)
            return s.astype(np.float32)
        p = x * y
        c = x * 134217729.0                             # Veltkamp's split, 2 ** 27 + 1
        xh = c - (c - x)
        xl = x - xh
        c = y * 134217729.0
        yh = c - (c - y)
        yl = y - yh
        e = ((xh * yh - p) + xh * yl + xl * yh) + xl * yl     # p + e == x * y exactly
        s = p + z
        v = s - p
        t = (p - (s - v)) + (z - v)
        r = s + (t + e)
        bad = ~np.isfinite(r)
        if bad.any():
            r = np.where(bad, s, r)
        return r


def _addcmul_float(a, t1, t2, value):
    """torch's float addcmul: ``fma(value * tensor1, tensor2, self)``, the product with the
    value rounded to the dtype first (float32 value for float32), then one rounding."""
    dt = dtype_of(a, t1, t2)
    if dt != np.float32 and dt != np.float64:
        return None
    if value != 1:
        with np.errstate(all="ignore"):
            t1 = np.multiply(t1, dt.type(value), dtype=dt)
    r = fma(t1, t2, a)
    if r is not None and r.dtype != dt:
        r = r.astype(dt)
    return r


@half_in_float32                # torch: float32 math for half operands, one rounding
def addcmul(a, t1, t2, value=1):
    dt = check_kinds("addcmul_cpu_out", "iufc", a, t1, t2)
    value = _value(value, dt)
    r = _addcmul_float(a, t1, t2, value)
    if r is not None:
        return r
    return np.add(a, np.multiply(np.multiply(t1, t2), value) if value != 1
                  else np.multiply(t1, t2))


_ADDCDIV_INT = ("Integer division with addcdiv is no longer supported, and in a future  release "
                "addcdiv will perform a true division of tensor1 and tensor2. The historic "
                "addcdiv behavior can be implemented as (input + value * torch.trunc(tensor1 / "
                "tensor2)).to(input.dtype) for integer inputs and as (input + value * tensor1 / "
                "tensor2) for float inputs. The future addcdiv behavior is just the latter "
                "implementation: (input + value * tensor1 / tensor2), for all dtypes.")


@half_in_float32
@quiet
def addcdiv(a, t1, t2, value=1):
    dt = dtype_of(a, t1, t2)
    if dt.kind in "biu":      # (integer tensor1 and tensor2 are rejected by the front)
        raise RuntimeError(_ADDCDIV_INT)
    value = _value(value, dt)
    if dt.kind == "f" and value != 1:       # torch: self + (value * tensor1) / tensor2
        return np.add(a, np.true_divide(np.multiply(t1, dt.type(value), dtype=dt), t2))
    q = np.true_divide(t1, t2)
    return np.add(a, np.multiply(q, value) if value != 1 else q)


# ``*_out`` kernels: the in-place variants' writers (``out`` has the result's dtype and shape,
# checked by the dispatcher); the arithmetic is the same as the kernels above, op for op.


def addcmul_out(out, a, t1, t2, value=1):
    if out.dtype.itemsize == 2 and out.dtype.kind in "fV":
        out[...] = addcmul(a, t1, t2, value)
        return
    dt = check_kinds("addcmul_cpu_out", "iufc", a, t1, t2)
    value = _value(value, dt)
    r = _addcmul_float(a, t1, t2, value)
    if r is not None:
        out[...] = r
        return
    np.add(a, np.multiply(np.multiply(t1, t2), value) if value != 1 else np.multiply(t1, t2),
           out=out)


def addcdiv_out(out, a, t1, t2, value=1):
    if out.dtype.itemsize == 2 and out.dtype.kind in "fV":
        out[...] = addcdiv(a, t1, t2, value)
        return
    dt = dtype_of(a, t1, t2)
    if dt.kind in "biu":
        raise RuntimeError(_ADDCDIV_INT)
    value = _value(value, dt)
    if dt.kind == "f" and value != 1:
        with np.errstate(all="ignore"):
            np.add(a, np.true_divide(np.multiply(t1, dt.type(value), dtype=dt), t2), out=out)
        return
    q = np.true_divide(t1, t2)
    np.add(a, np.multiply(q, value) if value != 1 else q, out=out)


def lerp_out(out, a, b, w):
    if isinstance(w, np.ndarray) or type(w) not in (float, int):
        np.copyto(out, lerp(a, b, w), casting="unsafe")
        return
    dt = _lerp_check(a, b, w)
    with np.errstate(all="ignore"):
        r = _lerp_fma(a, b, w, dt)
    if r is not None:
        np.copyto(out, r, casting="unsafe")
        return
    a = np.asarray(a)
    d = np.subtract(b, a)
    # lerp's where(small, ...) with a scalar weight picks one branch for every element
    if abs(w) < 0.5:
        np.add(a, w * d, out=out, casting="unsafe")
    else:
        np.subtract(b, d * (1 - np.asarray(w)), out=out, casting="unsafe")


def clamp_out(out, a, lo=None, hi=None):
    dt = dtype_of(a)
    if lo is None or hi is None or dt.kind in "cb":
        np.copyto(out, clamp(a, lo, hi), casting="unsafe")
    else:
        np.clip(a, lo, hi, out=out)


# ------------------------------------------------------------------ clamp


def clamp(a, lo=None, hi=None):
    if lo is None and hi is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    dt = dtype_of(a)
    if dt.kind == "c":
        raise NotImplementedError("clamp is not supported for complex types")
    if dt.kind == "b":
        # torch: a single tensor bound works on bool (clamp_min/clamp_max.Tensor are
        # minimum/maximum); scalar bounds and the two-bound kernel are not implemented.
        if lo is not None and hi is not None:
            tens = isinstance(lo, np.ndarray) and isinstance(hi, np.ndarray)
            not_implemented("clamp_cpu" if tens else "clamp_scalar_cpu", dt)
        bound = hi if lo is None else lo
        if not isinstance(bound, np.ndarray):
            not_implemented("clamp_max_scalar_cpu" if lo is None else "clamp_min_scalar_cpu", dt)
    if lo is None:
        return np.minimum(hi, a)     # (a bound equal to a gives a's value: -0.0 as torch)
    if hi is None:
        if type(a) is np.ndarray and a.dtype.kind == "f" and _scalar_like(lo, a.dtype):
            return maximum_scalar(a, lo)     # (NumPy's scalar-operand loop is not SIMD)
        return np.maximum(lo, a)
    return np.clip(a, lo, hi)    # == minimum(maximum(a, lo), hi), NaN-propagating, one pass


def _scalar_like(v, dtype):
    """Whether ``v`` is a Python number or a 0-d array of ``dtype`` (a bound that leaves the
    result in ``dtype``)."""
    return type(v) in (int, float) or type(v) is np.ndarray and v.ndim == 0 and \
        v.dtype == dtype


def clamp_min(a, lo):
    return clamp(a, lo, None)


def clamp_max(a, hi):
    return clamp(a, None, hi)


# ------------------------------------------------------------------ bitwise / logical


def _bitwise(name, ufunc):
    def kernel(a, b):
        check_kinds(name, "biu", a, b)
        return ufunc(a, b)
    kernel.__name__ = name
    return kernel


bitwise_and = _bitwise("bitwise_and_cpu", np.bitwise_and)
bitwise_or = _bitwise("bitwise_or_cpu", np.bitwise_or)
bitwise_xor = _bitwise("bitwise_xor_cpu", np.bitwise_xor)


def _shift_parts(a, b, name):
    dt = check_kinds(name, "iu", a, b)
    bits = dt.itemsize * 8
    bb = np.asarray(b)
    bad = (bb < 0) | (bb >= bits)
    safe = np.where(bad, 0, bb).astype(dt, copy=False) if bad.any() else bb.astype(dt,
                                                                                   copy=False)
    return dt, bits, bad, safe


def bitwise_left_shift(a, b):
    dt, bits, bad, safe = _shift_parts(a, b, "lshift_cpu")
    r = np.left_shift(a, safe)
    return np.where(bad, np.zeros((), dt), r) if bad.any() else r


def bitwise_right_shift(a, b):
    dt, bits, bad, safe = _shift_parts(a, b, "rshift_cpu")
    r = np.right_shift(a, safe)
    if bad.any():
        fill = np.right_shift(a, bits - 1) if dt.kind == "i" else np.zeros((), dt)
        r = np.where(bad, fill, r)
    return r


logical_and = np.logical_and
logical_or = np.logical_or
logical_xor = np.logical_xor


# ------------------------------------------------------------------ comparisons


def _ordered(name, ufunc):
    def kernel(a, b):
        dt = dtype_of(a, b)
        if dt.kind == "c":
            not_implemented(name, dt)
        return ufunc(a, b)
    kernel.__name__ = name
    return kernel


eq = np.equal
ne = np.not_equal
lt = _ordered("lt_cpu", np.less)
le = _ordered("le_cpu", np.less_equal)
gt = _ordered("gt_cpu", np.greater)
ge = _ordered("ge_cpu", np.greater_equal)


# ------------------------------------------------------------------ activations


@quiet
def gelu(a, approximate="none"):
    if approximate not in ("none", "tanh"):
        raise RuntimeError("approximate argument must be either none or tanh.")
    check_kinds("GeluKernelImpl", "f", a)
    a = _up(np.asarray(a))
    if approximate == "tanh":
        k = math.sqrt(2 / math.pi)
        return 0.5 * a * (1 + np.tanh(k * (a + 0.044715 * a * a * a)))
    from ember._kernels.nn_activation import gelu_exact
    return gelu_exact(a)


@quiet
def silu(a):
    check_kinds("silu_cpu", "fc", a)
    a = np.asarray(a)
    if a.dtype.name in ("bfloat16", "float16"):   # torch: x / (1 + exp(-x)) in float32,
        f = a.astype(np.float32)                   # rounded once
        return (f / (np.float32(1) + np.exp(-f))).astype(a.dtype)
    return np.multiply(a, sigmoid(a))


@quiet
def threshold_backward(g, x, threshold):
    """``0 if x <= threshold else g`` (relu's gradient; a NaN ``x`` passes ``g``).

    float32/64 ``g`` of ``x``'s shape: ``g``'s bits ANDed with a mask of all ones (kept) or
    zeros (a masked element becomes +0.0 whatever ``g`` holds there; 1.7 -> 1.0 ms on
    (64, 32, 28, 28)). Otherwise a multiply by the boolean mask (``np.where`` is several
    times slower); a NaN or infinity in ``g`` under a masked position would survive it
    (``inf * 0``), so a non-finite sum sends the rare case through an exact masked write."""
    g, x = np.asarray(g), np.asarray(x)
    if x.dtype == np.float32 and (r := pooled_threshold_backward(g, x, threshold)) is not None:
        return r
    if g.shape == x.shape and g.dtype.char in "fd" and x.dtype.kind in "fiu":
        bits = np.int32 if g.dtype.char == "f" else np.int64
        order = None
        if not (g.flags.c_contiguous and x.flags.c_contiguous):
            order = shared_dense_order([g, x])       # channels-last: run in memory order
            if order is not None:
                g, x = g.transpose(order), x.transpose(order)
            else:
                g, x = np.ascontiguousarray(g), np.ascontiguousarray(x)
        out = np.empty(g.shape, bits)
        gf, xf, of = g.reshape(-1).view(bits), x.reshape(-1), out.reshape(-1)
        if of.size < split.MIN_SPLIT_ELEMENTS:       # one piece: no split's hand-off
            np.copyto(of, np.less_equal(xf, threshold))
            np.subtract(of, 1, out=of)
            np.bitwise_and(gf, of, out=of)
            out = out.view(g.dtype)
            return out if order is None else out.transpose(np.argsort(order))

        def part(lo, hi):              # over ember's threads for large arrays
            mask = of[lo:hi]
            np.copyto(mask, np.less_equal(xf[lo:hi], threshold))
            np.subtract(mask, 1, out=mask)
            np.bitwise_and(gf[lo:hi], mask, out=mask)
        split.run_rows(part, of.size, of.size)
        out = out.view(g.dtype)
        return out if order is None else out.transpose(np.argsort(order))
    keep = np.logical_not(np.less_equal(x, threshold))
    r = np.asarray(np.multiply(g, keep))
    if r.dtype.kind in "fcV" and r.size and not np.isfinite(np.add.reduce(r, axis=None)):
        r = np.where(keep, g, np.zeros((), r.dtype))
    return r


# ------------------------------------------------------------------ output layout
# Kernels of several tensor operands lay their result out as torch does (the operands'
# stride order, the first operand deciding: Note [output layout] in layout.py).

rsub = follows_inputs(rsub, swapped=True)
threshold_backward = follows_inputs(threshold_backward, swapped=True)   # torch: ``self`` first
pow = follows_inputs(pow, number_first_contiguous=True)
(remainder, fmod, true_divide, div_mode, floor_divide, atan2, hypot, maximum, minimum,
 fmax, fmin, copysign, nextafter, xlogy, logaddexp, logaddexp2, heaviside, gcd, lcm, lerp,
 addcmul, addcdiv, clamp, clamp_min, clamp_max, bitwise_and, bitwise_or, bitwise_xor,
 bitwise_left_shift, bitwise_right_shift, logical_and, logical_or, logical_xor, eq, ne, lt,
 le, gt, ge) = map(follows_inputs, (
    remainder, fmod, true_divide, div_mode, floor_divide, atan2, hypot, maximum, minimum,
    fmax, fmin, copysign, nextafter, xlogy, logaddexp, logaddexp2, heaviside, gcd, lcm, lerp,
    addcmul, addcdiv, clamp, clamp_min, clamp_max, bitwise_and, bitwise_or, bitwise_xor,
    bitwise_left_shift, bitwise_right_shift, logical_and, logical_or, logical_xor, eq, ne, lt,
    le, gt, ge))
