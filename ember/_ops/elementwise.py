"""Elementwise op records: arithmetic, transcendental and special functions, rounding,
clamping, comparisons, bitwise/logical ops, predicates, ``where``.

One record per op (a Python number is accepted in every ``Tensor`` position, so torch's
``.Scalar`` overloads fold into the ``.Tensor`` record). Backward rules are ember ops
(differentiable again) and follow PyTorch's complex convention, grad * conj(f'(z)).
Aliases (``arcsin``, ``clip``, ``greater`` ...) share their op's fronts, as in torch.
"""
from __future__ import annotations

import cmath
import math

import numpy as np

from ember import _dtype
from ember._dispatch import dispatch
from ember._kernels import elementwise as K
from ember._kernels.util import half_in_float32
from ember._ops.core import conj_if_complex as cj, where_self, real as _real, mul as _mul
from ember._ops.core import sub as _sub_op, _veltkamp_split, half_rsub
from ember._ops.factory import zeros_like
from ember._ops.registry import FUNCTIONS, METHODS, OpDef, defop, generate, public, refuse_bool
from ember._tensor import Tensor
from ember.autograd.grad_mode import is_grad_enabled

_LN2 = math.log(2.0)
_LN10 = math.log(10.0)
_PI = math.pi

RECORDS: dict = {}          # public name -> functional record (for function-level in-place)


def _where(cond, a, b):
    return where_self(cond, a, b)


def _conj(x):
    """Conjugate of a tensor or a Python number (identity for real ones)."""
    if isinstance(x, Tensor):
        return cj(x)
    return x.conjugate() if isinstance(x, complex) else x


def _ct(s, like):
    """A Python complex number as a 0-d tensor; other values pass through. (core's mul/div
    backward rules conjugate tensor factors only, so a Python complex factor in a rule
    would break double backward.)"""
    if not isinstance(s, complex):
        return s
    from ember._creation import tensor
    dt = like.dtype if like.is_complex() else \
        _dtype.complex64 if like.dtype is _dtype.float16 else like.dtype.to_complex()
    return tensor(s, dtype=dt)


def _zeros(g):
    return zeros_like(g)


def _not_implemented_grad(name):
    def rule(ctx, g, *args):
        raise RuntimeError(f"derivative for aten::{name} is not implemented")
    return rule


def _default_float():
    return _dtype._default[0].np


def _op(schema, kernel=None, *, inplace=True, **kw):
    # bfloat16 computes in float32 and rounds once, like torch's opmath (ml_dtypes' loops
    # are scalar: relu's gradient on bfloat16 was 20x slower); Note [half GEMMs]
    if kernel is not None:
        kernel = half_in_float32(kernel, ("bfloat16",))
    op = defop(schema, kernel, inplace=inplace, **kw)
    RECORDS.setdefault(op.public_name, op)
    return op


def _renamed(fn, name):
    """A copy of front ``fn`` named ``name`` (same code: torch's aliases are functions of
    their own name, as FX graphs and printed code show)."""
    import types
    new = types.FunctionType(fn.__code__, fn.__globals__, name, fn.__defaults__, fn.__closure__)
    new.__kwdefaults__ = fn.__kwdefaults__
    new.__dict__.update(fn.__dict__)
    new.__qualname__ = name
    new.__doc__ = fn.__doc__
    new.__module__ = fn.__module__
    return new


def _alias(new, old, inplace=True):
    """``new`` runs ``old``'s op record under its own name (torch's aliases dispatch to the
    same op)."""
    if old in FUNCTIONS:
        FUNCTIONS[new] = _renamed(FUNCTIONS[old], new)
    if old in METHODS:
        METHODS[new] = _renamed(METHODS[old], new)
    if inplace and old + "_" in METHODS:
        METHODS[new + "_"] = _renamed(METHODS[old + "_"], new + "_")
    if old in RECORDS:
        RECORDS[new] = RECORDS[old]


# ==================================================================== unary, float results

def _unary(name, kernel, rule, saves=("self",), **kw):
    op = _op(f"{name}(Tensor self) -> Tensor", kernel, promote="int_to_float", saves=saves, **kw)
    op.def_backward(rule)
    return op


# Note [activation gradients]: torch's tanh and sigmoid backward are ops of their own,
# ``g * (1 - y^2)`` with ``1 - y^2`` one fused multiply-add and ``(g * (1 - y)) * y``: one
# dispatched op in place of three, and torch's bits (the composites ``g * (1 - y ** 2)`` and
# ``g * (y * (1 - y))`` were an ulp off in 30% of elements). Without a graph to build
# (create_graph off) and on real float32/float64 only; else the composites, differentiable.
def _in_float32(kernel, chars="eE"):
    """``kernel`` on half-type operands (dtype chars ``chars``: e float16, E bfloat16)
    computed in float32 and rounded once, as torch's CPU kernels compute those gradients
    (found against torch: tanh's for both, sigmoid's for bfloat16; its float16 sigmoid
    gradient rounds each step, as the composite does)."""
    def run(g, y):
        if y.dtype.char in chars:
            return kernel(g.astype(np.float32), y.astype(np.float32)).astype(y.dtype)
        return kernel(g, y)
    return run


def _tanh_backward_kernel(g, y):
    if y.dtype == np.float32:                         # 1 - y^2 exact in float64, rounded once
        r = np.subtract(1.0, np.multiply(y, y, dtype=np.float64)).astype(np.float32)
    else:                                             # float64: Dekker's exact square, then
        with np.errstate(all="ignore"):               # 1 - p - e with the 1 - p error kept
            p = y * y
            hi, lo = _veltkamp_split(y)
            e = ((hi * hi - p) + 2 * hi * lo) + lo * lo      # y^2 == p + e exactly
            r = 1 - p
            back = r - 1
            r += ((1 - (r - back)) + (-p - back)) - e        # + the error of 1 - p, - e
    return np.multiply(g, r)


def _sigmoid_backward_kernel(g, y):
    return np.multiply(np.multiply(g, np.subtract(1, y)), y)


tanh_backward = OpDef("tanh_backward(Tensor grad_output, Tensor output) -> Tensor",
                      _in_float32(_tanh_backward_kernel), promote=None,
                      differentiable=False)
sigmoid_backward = OpDef("sigmoid_backward(Tensor grad_output, Tensor output) -> Tensor",
                         _in_float32(_sigmoid_backward_kernel, "E"), promote=None,
                         differentiable=False)


def _fused_grad_ok(g, y):
    return not is_grad_enabled() and type(g) is Tensor and type(y) is Tensor and \
        g._data.dtype == y._data.dtype and g._data.dtype.char in "fdeE" and \
        g._data.shape == y._data.shape


def _tanh_grad(g, y):
    if _fused_grad_ok(g, y):
        return tanh_backward(g, y)
    return g * (1 - cj(y) ** 2)


def _sigmoid_grad(g, y):
    if _fused_grad_ok(g, y):
        return sigmoid_backward(g, y)
    return g * cj((1 - y) * y) if y.is_complex() else (g * (1 - y)) * y


sqrt = _unary("sqrt", K.sqrt, lambda ctx, g, x: g / (2 * cj(ctx.result)), saves=("result",))
rsqrt = _unary("rsqrt", K.rsqrt, lambda ctx, g, x: g * (-0.5 * cj(ctx.result) ** 3),
               saves=("result",))
exp2 = _unary("exp2", K.exp2, lambda ctx, g, x: g * cj(ctx.result) * _LN2, saves=("result",))
expm1 = _unary("expm1", K.expm1, lambda ctx, g, x: g * (cj(ctx.result) + 1), saves=("result",))
log = _unary("log", K.log, lambda ctx, g, x: g / cj(x))
log2 = _unary("log2", K.log2, lambda ctx, g, x: g / (cj(x) * _LN2))
log10 = _unary("log10", K.log10, lambda ctx, g, x: g / (cj(x) * _LN10))
log1p = _unary("log1p", K.log1p, lambda ctx, g, x: g / (cj(x) + 1))
sin = _unary("sin", K.sin, lambda ctx, g, x: g * cj(x.cos()))
cos = _unary("cos", K.cos, lambda ctx, g, x: g * -cj(x.sin()))
tan = _unary("tan", K.tan, lambda ctx, g, x: g * (1 + cj(ctx.result) ** 2), saves=("result",))
asin = _unary("asin", K.asin, lambda ctx, g, x: g * cj((1 - x * x).rsqrt()))
acos = _unary("acos", K.acos, lambda ctx, g, x: g * -cj((1 - x * x).rsqrt()))
atan = _unary("atan", K.atan, lambda ctx, g, x: g / cj(x * x + 1))
sinh = _unary("sinh", K.sinh, lambda ctx, g, x: g * cj(x.cosh()))
cosh = _unary("cosh", K.cosh, lambda ctx, g, x: g * cj(x.sinh()))
tanh = _unary("tanh", K.tanh, lambda ctx, g, x: _tanh_grad(g, ctx.result), saves=("result",))
asinh = _unary("asinh", K.asinh, lambda ctx, g, x: g * cj((x * x + 1).rsqrt()))
acosh = _unary("acosh", K.acosh,
               lambda ctx, g, x: g / cj((x - 1).sqrt() * (x + 1).sqrt()))
atanh = _unary("atanh", K.atanh, lambda ctx, g, x: g / cj(1 - x * x))
sigmoid = _unary("sigmoid", K.sigmoid, lambda ctx, g, x: _sigmoid_grad(g, ctx.result),
                 saves=("result",))
reciprocal = _unary("reciprocal", K.reciprocal, lambda ctx, g, x: g * -cj(ctx.result) ** 2,
                    saves=("result",))
deg2rad = _unary("deg2rad", K.deg2rad, lambda ctx, g, x: g * (_PI / 180), saves=())
rad2deg = _unary("rad2deg", K.rad2deg, lambda ctx, g, x: g * (180 / _PI), saves=())
erf = _unary("erf", K.erf, lambda ctx, g, x: g * (2 / math.sqrt(_PI)) * (-x * x).exp())
erfc = _unary("erfc", K.erfc, lambda ctx, g, x: g * (-2 / math.sqrt(_PI)) * (-x * x).exp())
# erfinv, logaddexp(2), frexp keep their inputs (or the exponent) for backward, not their
# result, as torch: the returned tensor may be changed in place before backward
erfinv = _unary("erfinv", K.erfinv,
                lambda ctx, g, x: g * (math.sqrt(_PI) / 2) * x.erfinv().square().exp())
lgamma = _unary("lgamma", K.lgamma, lambda ctx, g, x: g * x.digamma())
i0 = _unary("i0", K.i0, lambda ctx, g, x: g * _i1(x))


def _sinc_grad(ctx, g, x):
    zero = x == 0
    px = x * _PI
    safe = _where(zero, 1, x)
    d = (px.cos() * px - px.sin()) / (safe * safe * _PI)
    return g * cj(_where(zero, 0, d))


sinc = _unary("sinc", K.sinc, _sinc_grad)

# the derivative of i0 (internal: torch's special_i1 belongs to the special family)
_i1 = defop("_i1(Tensor self) -> Tensor", K.i1, function=False, method=False,
            promote="int_to_float", saves=("self",))


@_i1.def_backward
def _(ctx, g, x):
    zero = x == 0
    safe = _where(zero, 1, x)
    return g * _where(zero, 0.5, x.i0() - _i1(x) / safe)


digamma = _op("digamma(Tensor self) -> Tensor", K.digamma, promote="int_to_float",
              saves=("self",))

# polygamma's record takes ``self`` first (the in-place variant writes into argument 0);
# the public fronts keep torch's ``polygamma(n, input)`` order.
polygamma_op = OpDef("polygamma(Tensor self, int n) -> Tensor", K.polygamma,
                     promote="int_to_float", saves=("self",))
polygamma_op.make_inplace()


@digamma.def_backward
def _(ctx, g, x):
    return g * polygamma_op(x, 1)


@polygamma_op.def_backward
def _(ctx, g, x, n):
    return g * polygamma_op(x, n + 1)


def _order(n, name="polygamma"):
    """torch's parser refuses a float or bool order."""
    if isinstance(n, (bool, float)):
        raise TypeError(f"{name}(): argument 'n' (position 1) must be int, not "
                        f"{type(n).__name__}")
    return n


@public("polygamma")
def polygamma(n, input, *, out=None):
    """polygamma(n, input): the n-th derivative of digamma."""
    return dispatch(polygamma_op, (input, _order(n)), out)


@public("polygamma", method=True, function=False)
def _polygamma_method(self, n):
    return dispatch(polygamma_op, (self, _order(n)), None)


@public("polygamma_", method=True, function=False)
def _polygamma_inplace(self, n):
    return dispatch(polygamma_op.inplace_variant, (self, _order(n, "polygamma_")), None)


mvlgamma = _op("mvlgamma(Tensor self, int p) -> Tensor", K.mvlgamma, promote="int_to_float",
               saves=("self",))
refuse_bool(mvlgamma, "The input tensor may not be a boolean tensor.", RuntimeError)


@mvlgamma.def_backward
def _(ctx, g, x, p):
    d = x.digamma()
    for j in range(1, p):
        d = d + (x - j / 2).digamma()
    return g * d


logit = _op("logit(Tensor self, float? eps=None) -> Tensor", K.logit, promote="int_to_float",
            saves=("self",))


@logit.def_backward
def _(ctx, g, x, eps):
    d = g / (x * (1 - x))
    if eps is None:
        return _where((x < 0) | (x > 1), math.nan, d)
    return _where((x < eps) | (x > 1 - eps), 0, d)


# angle: complex -> real, integers -> the default float (the kernel decides the dtype)
angle = _op("angle(Tensor self) -> Tensor", lambda a: K.angle(a, _default_float()),
            inplace=False, promote=None, saves=("self",))


@angle.def_backward
def _(ctx, g, x):
    if not x.is_complex():
        return _zeros(g)
    zero = x == 0
    a2 = _where(zero, 1, x.abs() ** 2)
    # i * x as a tensor product (a Python complex factor is not conjugated by mul's rule)
    return _where(zero, 0, g * x / a2 * _ct(1j, x))


# ==================================================================== unary, dtype kept

abs = _op("abs(Tensor self) -> Tensor", K.abs, promote=None, saves=("self",))
abs.inplace_variant.kernel = K.abs_inplace


@abs.def_backward
def _(ctx, g, x):
    return g * x.sgn()


sign = _op("sign(Tensor self) -> Tensor", K.sign)
sgn = _op("sgn(Tensor self) -> Tensor", K.sgn, saves=("self", "result"))


@sign.def_backward
def _(ctx, g, x):
    return _zeros(g)


@sgn.def_backward
def _(ctx, g, x):
    if not x.is_complex():
        return _zeros(g)
    r = ctx.result
    a = x.abs()
    zero = a == 0
    return _where(zero, 0, (g - r * _real(cj(r) * g)) / _where(zero, 1, a))


square = _op("square(Tensor self) -> Tensor", K.square, promote=None, saves=("self",))
# torch's square is pow(x, 2): a bool tensor squares to int64, which square_ cannot write back
refuse_bool(square, "result type Long can't be cast to the desired output type Bool",
            RuntimeError, inplace_only=True)


@square.def_backward
def _(ctx, g, x):
    return g * 2 * cj(x)


def _zero_rule(ctx, g, *args):
    return _zeros(g)


floor = _op("floor(Tensor self) -> Tensor", K.floor)
ceil = _op("ceil(Tensor self) -> Tensor", K.ceil)
trunc = _op("trunc(Tensor self) -> Tensor", K.trunc)
for _r in (floor, ceil, trunc):
    _r.def_backward(_zero_rule)

round_op = OpDef("round(Tensor self) -> Tensor", K.round)
round_op.make_inplace()
round_decimals = OpDef("round.decimals(Tensor self, *, int decimals) -> Tensor",
                       K.round_decimals, grad_name="RoundBackward1")
round_decimals.make_inplace()
round_op.def_backward(_zero_rule)
round_decimals.def_backward(_zero_rule)


@public("round")
def round(input, *, decimals=None, out=None):
    """Round half to even; ``decimals`` digits after the point (negative: before it).
    Passing ``decimals`` (even 0) is torch's round.decimals overload (RoundBackward1)."""
    if decimals is None:
        return dispatch(round_op, (input,), out)
    return dispatch(round_decimals, (input, decimals), out)


@public("round", method=True, function=False)
def _round_method(self, decimals=None):
    return round(self, decimals=decimals)


@public("round_", method=True)
def round_(input, *, decimals=None):
    if decimals is None:
        return dispatch(round_op.inplace_variant, (input,), None)
    return dispatch(round_decimals.inplace_variant, (input, decimals), None)


frac = _op("frac(Tensor self) -> Tensor", K.frac)


@frac.def_backward
def _(ctx, g, x):
    return g


relu = _op("relu(Tensor self) -> Tensor", K.relu, saves=("result",))


@relu.def_backward
def _(ctx, g, x):
    return threshold_backward(g, ctx.result, 0)


threshold_backward = _op("threshold_backward(Tensor grad_output, Tensor self, Scalar threshold)"
                         " -> Tensor", K.threshold_backward, inplace=False, function=False,
                         method=False, saves=("self",))


@threshold_backward.def_backward
def _(ctx, g, grad_output, x, threshold):
    # torch's rule gives ``self`` a zero gradient (not none): ReLU's input still gets a
    # defined .grad from a double backward
    return threshold_backward(g, x, threshold), zeros_like(x)


nan_to_num = _op("nan_to_num(Tensor self, float? nan=0.0, float? posinf=None, "
                 "float? neginf=None) -> Tensor", K.nan_to_num, saves=("self",))


@nan_to_num.def_backward
def _(ctx, g, x, nan, posinf, neginf):
    return _where(x.isfinite(), g, 0)


@public("positive", method=True)
def positive(input):
    """``input`` itself (an error for bool tensors)."""
    if input.dtype is _dtype.bool:
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return input


# ==================================================================== predicates (bool results)

def _pred(name, kernel):
    return _op(f"{name}(Tensor self) -> Tensor", kernel, inplace=False, promote="bool",
               differentiable=False)


isnan = _pred("isnan", K.isnan)
isinf = _pred("isinf", K.isinf)
isfinite = _pred("isfinite", K.isfinite)
isposinf = _pred("isposinf", K.isposinf)
isneginf = _pred("isneginf", K.isneginf)
isreal = _pred("isreal", K.isreal)
signbit = _pred("signbit", K.signbit)

# ==================================================================== binary arithmetic

# the result is not saved (torch's pow with a number exponent saves only self: x ** 2 keeps
# x alone for backward); the exponent's rare gradient recomputes it
pow = _op("pow.Tensor_Tensor(Tensor self, Tensor exponent) -> Tensor", K.pow,
          saves=("self", "exponent"))


def _scalar_log(b):
    if isinstance(b, complex):
        return cmath.log(b)
    return math.log(b) if b > 0 else (-math.inf if b == 0 else math.nan)


@pow.def_backward
def _(ctx, g, self, exponent):
    n = ctx.needs_input_grad
    gs = ge = None
    if n[0]:
        if isinstance(exponent, Tensor):
            gs = _where(exponent == 0, 0, g * cj(exponent * self.pow(exponent - 1)))
        elif exponent == 0:
            gs = _zeros(g)
        else:
            gs = g * cj(self.pow(exponent - 1) * _ct(exponent, g))
    if n[1]:
        r = pow(self, exponent)
        if isinstance(exponent, Tensor):
            e_re = _real(exponent) if exponent.is_complex() else exponent
        else:
            e_re = exponent.real if isinstance(exponent, complex) else exponent
        if isinstance(self, Tensor):
            cond = (self == 0) & (e_re >= 0)
            ge = _where(cond, 0, g * cj(r * self.log()))
        elif self == 0:
            ge = _where(e_re >= 0, 0, g * cj(r * -math.inf))
        else:
            ge = g * cj(r * _ct(_scalar_log(self), r))
    return gs, ge


def _float_power_dtype(self, exponent):
    cplx = any(x.is_complex() if isinstance(x, Tensor) else isinstance(x, complex)
               for x in (self, exponent))
    return _dtype.complex128 if cplx else _dtype.float64


def _to(x, dt):
    if isinstance(x, Tensor):
        return x if x.dtype is dt else x.to(dt)
    return complex(x) if dt.is_complex else float(x)


def _float_power(self, exponent):
    dt = _float_power_dtype(self, exponent)
    return pow(_to(self, dt), _to(exponent, dt))


float_power = _op("float_power.Tensor_Tensor(Tensor self, Tensor exponent) -> Tensor",
                  composite=_float_power, inplace=False)


@public("float_power_", method=True, function=False)
def float_power_(self, exponent):
    dt = _float_power_dtype(self, exponent)
    if self.dtype is not dt:
        raise RuntimeError(f"the base given to float_power_ has dtype "
                           f"{_dtype.scalar_type_name(self.dtype)} but the operation's result "
                           f"requires dtype {_dtype.scalar_type_name(dt)}")
    return dispatch(pow.inplace_variant, (self, _to(exponent, dt)), None)


def _remainder(a, b):
    """Python's modulo, a zero result signed as the dividend: torch takes ``fmod`` and adds
    the divisor where the signs differ (``-6. % 3`` and ``-0. % 3`` are -0.); NumPy signs
    a zero as the divisor."""
    r = K.remainder(a, b)
    if getattr(r, "dtype", None) is not None and r.dtype.kind in "fV":
        zero = r == 0
        if zero.any():
            r = np.where(zero, np.copysign(np.zeros((), np.float32), a).astype(r.dtype), r)
    return r


remainder = _op("remainder.Tensor(Tensor self, Tensor other) -> Tensor", _remainder,
                saves=("self", "other"))
fmod = _op("fmod.Tensor(Tensor self, Tensor other) -> Tensor", K.fmod, saves=("self", "other"))
floor_divide = _op("floor_divide(Tensor self, Tensor other) -> Tensor", K.floor_divide)
floor_divide.def_backward(_not_implemented_grad("floor_divide"))


def _div_mode(a, b, mode):
    from ember._ops.core import div_mode
    return div_mode(a, b, rounding_mode=mode)


@remainder.def_backward
def _(ctx, g, self, other):
    n = ctx.needs_input_grad
    return (g if n[0] else None,
            -g * _div_mode(self, other, "floor") if n[1] else None)


@fmod.def_backward
def _(ctx, g, self, other):
    n = ctx.needs_input_grad
    return (g if n[0] else None,
            -g * _div_mode(self, other, "trunc") if n[1] else None)


rsub_op = defop("rsub.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor",
                half_rsub(K.rsub),
                function=False, method=False)


def _is_bool(x):
    return x.dtype is _dtype.bool if isinstance(x, Tensor) else isinstance(x, bool)


def _refuse_bool_sub(args):
    """torch refuses a bool operand of ``-``, checked before promotion casts it away."""
    a, b = _is_bool(args[0]), _is_bool(args[1])
    if a and b:
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not "
                           "supported. Use the `^` or `logical_xor()` operator instead.")
    if a or b:
        raise RuntimeError("Subtraction, the `-` operator, with a bool tensor is not supported. "
                           "If you are trying to invert a mask, use the `~` or `logical_not()` "
                           "operator instead.")


_sub_op.check_operands = _sub_op.inplace_variant.check_operands = _refuse_bool_sub


@public("rsub")
def rsub(input, other, *, alpha=1, out=None):
    """``other - alpha * input``."""
    _refuse_bool_sub((input, other))
    return dispatch(rsub_op, (input, other, alpha), out)


@rsub_op.def_backward
def _(ctx, g, self, other, alpha):
    return (-g if alpha == 1 else g * -_conj(_ct(alpha, g))), g


@public("true_divide", method=True)
def true_divide(input, other, *, out=None):
    """Alias of ``div`` without rounding."""
    from ember._ops.core import div
    return dispatch(div, (input, other), out)


@public("true_divide_", method=True, function=False)
def true_divide_(self, other):
    from ember._ops.core import div
    return dispatch(div.inplace_variant, (self, other), None)


atan2 = _op("atan2(Tensor self, Tensor other) -> Tensor", K.atan2, promote="int_to_float",
            saves=("self", "other"))


@atan2.def_backward
def _(ctx, g, self, other):
    # g * x / (x^2 + y^2) through the reciprocal, 0 at the origin (torch's values, bit for bit;
    # the plain quotient was nan at (0, 0), where atan2's gradient is taken as zero)
    n = ctx.needs_input_grad
    d = self * self + other * other
    recip = where_self(d == 0, d.new_zeros(()), d.reciprocal())
    return (g * other * recip if n[0] else None, g * -self * recip if n[1] else None)


hypot = _op("hypot(Tensor self, Tensor other) -> Tensor", K.hypot,
            saves=("self", "other", "result"))


@hypot.def_backward
def _(ctx, g, self, other):
    n = ctx.needs_input_grad
    r = ctx.result
    return (g * self / r if n[0] else None, g * other / r if n[1] else None)


maximum = _op("maximum(Tensor self, Tensor other) -> Tensor", K.maximum, inplace=False,
              saves=("self", "other"))
minimum = _op("minimum(Tensor self, Tensor other) -> Tensor", K.minimum, inplace=False,
              saves=("self", "other"))


@maximum.def_backward
def _(ctx, g, self, other):
    n = ctx.needs_input_grad
    half = _where(self == other, g / 2, g)
    return (_where(self < other, 0, half) if n[0] else None,
            _where(self > other, 0, half) if n[1] else None)


@minimum.def_backward
def _(ctx, g, self, other):
    n = ctx.needs_input_grad
    half = _where(self == other, g / 2, g)
    return (_where(self > other, 0, half) if n[0] else None,
            _where(self < other, 0, half) if n[1] else None)


fmax = _op("fmax(Tensor self, Tensor other) -> Tensor", K.fmax, inplace=False,
           saves=("self", "other"))
fmin = _op("fmin(Tensor self, Tensor other) -> Tensor", K.fmin, inplace=False,
           saves=("self", "other"))


def _isnan(x):
    return isnan(x) if isinstance(x, Tensor) else x != x


@fmax.def_backward
def _(ctx, g, self, other):
    pick_self = (self >= other) | _isnan(other)
    n = ctx.needs_input_grad
    return (_where(pick_self, g, 0) if n[0] else None, _where(pick_self, 0, g) if n[1] else None)


@fmin.def_backward
def _(ctx, g, self, other):
    pick_self = (self <= other) | _isnan(other)
    n = ctx.needs_input_grad
    return (_where(pick_self, g, 0) if n[0] else None, _where(pick_self, 0, g) if n[1] else None)


copysign = _op("copysign.Tensor(Tensor self, Tensor other) -> Tensor", K.copysign,
               promote="int_to_float", saves=("self", "result"))


@copysign.def_backward
def _(ctx, g, self, other):
    n = ctx.needs_input_grad
    gs = _where(self == 0, 0, g * self.sign() * ctx.result.sign()) if n[0] else None
    return gs, (_zeros(g) if n[1] else None)


nextafter = _op("nextafter(Tensor self, Tensor other) -> Tensor", K.nextafter)


@nextafter.def_backward
def _(ctx, g, self, other):
    # torch's derivative: the gradient passes through to self; other gets zero
    return g, _zeros(g)


xlogy = _op("xlogy.Tensor(Tensor self, Tensor other) -> Tensor", K.xlogy, promote="int_to_float",
            saves=("self", "other"))


@xlogy.def_backward
def _(ctx, g, self, other):
    n = ctx.needs_input_grad
    gs = go = None
    if n[0]:
        gs = _where((self == 0) & (other <= 0), 0, xlogy(g, other))
    if n[1]:
        go = g * self / other
    return gs, go


logaddexp = _op("logaddexp(Tensor self, Tensor other) -> Tensor", K.logaddexp, inplace=False,
                saves=("self", "other"))
logaddexp2 = _op("logaddexp2(Tensor self, Tensor other) -> Tensor", K.logaddexp2, inplace=False,
                 saves=("self", "other"))


@logaddexp.def_backward
def _(ctx, g, self, other):
    n = ctx.needs_input_grad
    r = logaddexp(self, other)
    return (g * cj((self - r).exp()) if n[0] else None,
            g * cj((other - r).exp()) if n[1] else None)


@logaddexp2.def_backward
def _(ctx, g, self, other):
    n = ctx.needs_input_grad
    r = logaddexp2(self, other)
    return (g * (self - r).exp2() if n[0] else None, g * (other - r).exp2() if n[1] else None)


heaviside = _op("heaviside(Tensor self, Tensor values) -> Tensor", K.heaviside, promote=None)
heaviside.def_backward(_not_implemented_grad("heaviside"))
gcd = _op("gcd(Tensor self, Tensor other) -> Tensor", K.gcd, differentiable=False)
lcm = _op("lcm(Tensor self, Tensor other) -> Tensor", K.lcm, differentiable=False)


def _ldexp(self, other):
    # torch: computed in the promoted dtype (integers -> the default float) as self * 2**other
    dt = _dtype.result_type(self, other)
    if not (dt.is_floating_point or dt.is_complex):
        dt = _dtype._default[0]
    elif dt.is_floating_point and isinstance(other, Tensor) and other.dtype is _dtype.bool:
        raise NotImplementedError("\"ldexp_cpu_exp\" not implemented for 'Bool'")
    return _mul(_to(self, dt), pow(2.0, _to(other, dt)))


ldexp = _op("ldexp.Tensor(Tensor self, Tensor other) -> Tensor", composite=_ldexp,
            inplace=False)


@public("ldexp_", method=True)
def ldexp_(input, other):
    return input.mul_(pow(2.0, other))


frexp = _op("frexp.Tensor(Tensor self) -> (Tensor mantissa, Tensor exponent)", K.frexp,
            inplace=False, promote=None, saves=("exponent",))


@frexp.def_backward
def _(ctx, g, self):
    return g[0] / ctx.result[1].exp2()


lerp = _op("lerp.Tensor(Tensor self, Tensor end, Tensor weight) -> Tensor", K.lerp,
           promote=None, saves=("self", "end", "weight"))


@lerp.def_backward
def _(ctx, g, self, end, weight):
    n = ctx.needs_input_grad
    w = _ct(weight, g)
    return (g * _conj(1 - w) if n[0] else None,
            g * _conj(w) if n[1] else None,
            g * cj(end - self) if n[2] else None)


addcmul = _op("addcmul(Tensor self, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> Tensor",
              K.addcmul, saves=("tensor1", "tensor2"))
addcdiv = _op("addcdiv(Tensor self, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> Tensor",
              K.addcdiv, saves=("tensor1", "tensor2"))
addcmul.def_kernel_out(K.addcmul_out)
addcdiv.def_kernel_out(K.addcdiv_out)
lerp.def_kernel_out(K.lerp_out)


def _check_addcdiv(t1, t2):
    # torch rejects integer tensor1 and tensor2 before promotion
    if all(isinstance(t, int) or isinstance(t, Tensor) and not (t.is_floating_point()
                                                                  or t.is_complex())
           for t in (t1, t2)):
        raise RuntimeError(K._ADDCDIV_INT)


@public("addcdiv")
def _addcdiv_function(input, tensor1, tensor2, *, value=1, out=None):
    _check_addcdiv(tensor1, tensor2)
    return dispatch(addcdiv, (input, tensor1, tensor2, value), out)


@public("addcdiv", method=True, function=False)
def _addcdiv_method(self, tensor1, tensor2, *, value=1):
    _check_addcdiv(tensor1, tensor2)
    return dispatch(addcdiv, (self, tensor1, tensor2, value), None)


@public("addcdiv_", method=True, function=False)
def _addcdiv_inplace(self, tensor1, tensor2, *, value=1):
    _check_addcdiv(tensor1, tensor2)
    return dispatch(addcdiv.inplace_variant, (self, tensor1, tensor2, value), None)


@addcmul.def_backward
def _(ctx, g, self, t1, t2, value):
    n = ctx.needs_input_grad
    value = _ct(value, g)
    return (g if n[0] else None,
            g * _conj(t2 * value) if n[1] else None,
            g * _conj(t1 * value) if n[2] else None)


@addcdiv.def_backward
def _(ctx, g, self, t1, t2, value):
    n = ctx.needs_input_grad
    value = _ct(value, g)
    return (g if n[0] else None,
            g * _conj(value / t2) if n[1] else None,
            -g * _conj(value * t1 / (t2 * t2)) if n[2] else None)


# ==================================================================== clamp

clamp = _op("clamp.Tensor(Tensor self, Tensor? min=None, Tensor? max=None) -> Tensor", K.clamp,
            saves=("self", "min", "max"))
clamp.def_kernel_out(K.clamp_out)
clamp_min = _op("clamp_min.Tensor(Tensor self, Tensor min) -> Tensor", K.clamp_min,
                saves=("self", "min"))
clamp_max = _op("clamp_max.Tensor(Tensor self, Tensor max) -> Tensor", K.clamp_max,
                saves=("self", "max"))


@clamp.def_backward
def _(ctx, g, self, min, max):
    n = ctx.needs_input_grad
    gs = gmin = gmax = None
    if min is not None and max is not None:
        if n[0]:
            gs = _where((self >= min) & (self <= max), g, 0)
        if n[1]:
            gmin = _where((self < min) & (min < max), g, 0)
        if n[2]:
            gmax = _where((self > max) | (max < min), g, 0)
    elif min is not None:
        gs = _where(self >= min, g, 0) if n[0] else None
        gmin = _where(self < min, g, 0) if n[1] else None
    else:
        gs = _where(self <= max, g, 0) if n[0] else None
        gmax = _where(self > max, g, 0) if n[2] else None
    return gs, gmin, gmax


@clamp_min.def_backward
def _(ctx, g, self, min):
    n = ctx.needs_input_grad
    return (_where(self >= min, g, 0) if n[0] else None,
            _where(self < min, g, 0) if n[1] else None)


@clamp_max.def_backward
def _(ctx, g, self, max):
    n = ctx.needs_input_grad
    return (_where(self <= max, g, 0) if n[0] else None,
            _where(self > max, g, 0) if n[1] else None)


# ==================================================================== bitwise, logical, comparisons

def _nodiff(schema, kernel, promote="default", inplace=True):
    return _op(schema, kernel, inplace=inplace, promote=promote, differentiable=False)


bitwise_and = _nodiff("bitwise_and.Tensor(Tensor self, Tensor other) -> Tensor", K.bitwise_and)
bitwise_or = _nodiff("bitwise_or.Tensor(Tensor self, Tensor other) -> Tensor", K.bitwise_or)
bitwise_xor = _nodiff("bitwise_xor.Tensor(Tensor self, Tensor other) -> Tensor", K.bitwise_xor)
bitwise_not = _nodiff("bitwise_not(Tensor self) -> Tensor", K.bitwise_not)
bitwise_left_shift = _nodiff("bitwise_left_shift.Tensor(Tensor self, Tensor other) -> Tensor",
                             K.bitwise_left_shift)
bitwise_right_shift = _nodiff("bitwise_right_shift.Tensor(Tensor self, Tensor other) -> Tensor",
                              K.bitwise_right_shift)

logical_and = _nodiff("logical_and(Tensor self, Tensor other) -> Tensor", K.logical_and, "bool")
logical_or = _nodiff("logical_or(Tensor self, Tensor other) -> Tensor", K.logical_or, "bool")
logical_xor = _nodiff("logical_xor(Tensor self, Tensor other) -> Tensor", K.logical_xor, "bool")
logical_not = _nodiff("logical_not(Tensor self) -> Tensor", K.logical_not, "bool")

eq = _nodiff("eq.Tensor(Tensor self, Tensor other) -> Tensor", K.eq, "bool")
ne = _nodiff("ne.Tensor(Tensor self, Tensor other) -> Tensor", K.ne, "bool")
lt = _nodiff("lt.Tensor(Tensor self, Tensor other) -> Tensor", K.lt, "bool")
le = _nodiff("le.Tensor(Tensor self, Tensor other) -> Tensor", K.le, "bool")
gt = _nodiff("gt.Tensor(Tensor self, Tensor other) -> Tensor", K.gt, "bool")
ge = _nodiff("ge.Tensor(Tensor self, Tensor other) -> Tensor", K.ge, "bool")

# ==================================================================== activations (nn.functional)
# torch has no torch.gelu / torch.silu / Tensor.gelu: these records get no ember.* fronts; the
# functional fronts below are for ember.nn.functional.

gelu_op = defop("gelu(Tensor self, *, str approximate='none') -> Tensor", K.gelu,
                function=False, method=False, saves=("self",))
silu_op = defop("silu(Tensor self) -> Tensor", K.silu, function=False, method=False,
                saves=("self",))
silu_op.make_inplace()


@gelu_op.def_backward
def _(ctx, g, x, approximate):
    if approximate == "tanh":
        k_beta = math.sqrt(2 / _PI)
        k_kappa = 0.044715
        x_sq = x * x
        inner = k_beta * (x + k_kappa * x_sq * x)
        t = inner.tanh()
        left = 0.5 * x
        right = 1 + t
        left_d = 0.5 * right
        right_d = left * (1 - t * t) * k_beta * (1 + 3 * k_kappa * x_sq)
        return g * (left_d + right_d)
    from ember._ops.nn_activation import gelu_backward
    return gelu_backward(g, x)


def _silu_backward_half(g, x):
    """torch's float16/bfloat16 silu gradient: (g s) (1 + x (1 - s)), s = sigmoid(x), in
    float32 from the half values, rounded once (found against torch)."""
    gf, xf = g.astype(np.float32), x.astype(np.float32)
    sf = K.sigmoid(xf)
    one = np.float32(1)
    return ((gf * sf) * (one + xf * (one - sf))).astype(x.dtype)


silu_backward = OpDef("silu_backward(Tensor grad_output, Tensor self) -> Tensor",
                      _silu_backward_half, promote=None, differentiable=False)


@silu_op.def_backward
def _(ctx, g, x):
    if _fused_grad_ok(g, x) and x._data.dtype.char in "eE":
        return silu_backward(g, x)
    s = x.sigmoid()
    return g * cj(s * (1 + x * (1 - s)))


gelu = generate(gelu_op, with_out=True)
silu = generate(silu_op, with_out=True)
silu_ = generate(silu_op.inplace_variant)

# ==================================================================== where


@public("where")
def where(condition, input=None, other=None, *, out=None):
    """``input`` where ``condition`` else ``other``; ``where(condition)`` is
    ``nonzero(condition, as_tuple=True)``."""
    if (input is None) != (other is None):
        raise TypeError("where() received an invalid combination of arguments: expected "
                        "(Tensor condition) or (Tensor condition, Tensor input, Tensor other)")
    if not isinstance(condition, Tensor):
        raise TypeError(f"where(): argument 'condition' (position 1) must be Tensor, not "
                        f"{type(condition).__name__}")
    if input is None:
        return FUNCTIONS["nonzero"](condition, as_tuple=True)
    if condition.dtype is not _dtype.bool and condition.dtype is not _dtype.uint8:
        raise RuntimeError(f"where expected condition to be a boolean tensor, but got a tensor "
                           f"with dtype {_dtype.scalar_type_name(condition.dtype)}")
    return dispatch(where_self, (condition, input, other), out)


@public("where", method=True, function=False)
def _where_method(self, condition, other):
    return where(condition, self, other)


# ==================================================================== aliases

for _new, _old in [("absolute", "abs"), ("arcsin", "asin"), ("arccos", "acos"),
                   ("arctan", "atan"), ("arcsinh", "asinh"), ("arccosh", "acosh"),
                   ("arctanh", "atanh"), ("fix", "trunc"), ("clip", "clamp"),
                   ("arctan2", "atan2"), ("negative", "neg"), ("greater", "gt"),
                   ("greater_equal", "ge"), ("less", "lt"), ("less_equal", "le"),
                   ("not_equal", "ne"), ("divide", "div"), ("multiply", "mul"),
                   ("subtract", "sub")]:
    _alias(_new, _old)

# torch also has function forms of some in-place ops (torch.sqrt_, torch.relu_ ...)
for _n in ("abs", "reciprocal", "sqrt", "rsqrt", "square", "exp2", "expm1", "log", "log2",
           "log10", "log1p", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh",
           "asinh", "acosh", "atanh", "sigmoid", "logit", "erf", "erfc", "i0", "sinc", "floor",
           "ceil", "trunc", "frac", "clamp", "clamp_min", "clamp_max", "relu", "xlogy",
           "deg2rad", "rad2deg", "gcd", "lcm", "nan_to_num"):
    FUNCTIONS[_n + "_"] = generate(RECORDS[_n].inplace_variant)
for _new, _old in [("arcsin", "asin"), ("arccos", "acos"), ("arctan", "atan"),
                   ("arcsinh", "asinh"), ("arccosh", "acosh"), ("arctanh", "atanh"),
                   ("fix", "trunc"), ("clip", "clamp")]:
    FUNCTIONS[_new + "_"] = FUNCTIONS[_old + "_"]
from ember._ops.core import neg as _neg, exp as _exp  # noqa: E402
FUNCTIONS["negative_"] = FUNCTIONS["neg_"] = generate(_neg.inplace_variant)
FUNCTIONS["exp_"] = generate(_exp.inplace_variant)
