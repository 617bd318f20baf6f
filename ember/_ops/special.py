"""torch.special op records (the functions that have no top-level ember op).

Functions torch.special shares with the top level (erf, digamma, i0, sinc, softmax ...)
are aliases of the existing records (see ``ember/special/__init__.py``). Records here are
named like ATen's (``special_erfcx``); their fronts live in ``ember.special`` only, except
``igamma``/``igammac`` which torch also has as ``torch.igamma`` and ``Tensor.igamma``.
The Bessel, Airy and polynomial functions are not differentiable in torch (results never
require grad); here likewise (``differentiable=False``).
"""
from __future__ import annotations

import math

from ember._kernels import special as K
from ember._ops.registry import OpDef, defop, generate

FRONTS: dict = {}                  # ember.special.<name> -> front


def _rec(name, schema, kernel, rule=None, saves=("self",), differentiable=True, **kw):
    op = OpDef(schema, kernel, promote="int_to_float", saves=saves,
               differentiable=differentiable, **kw)
    if rule is not None:
        op.def_backward(rule)
    FRONTS[name] = generate(op, with_out=True, name=name)
    return op


def _nyi(what):
    def rule(ctx, g, *args):
        raise NotImplementedError(f"the derivative for '{what}' is not implemented.")
    return rule


_SQRT_2PI = math.sqrt(2 * math.pi)
_2_SQRTPI = 2 / math.sqrt(math.pi)


def _where(c, a, b):
    from ember._ops.core import where_self
    return where_self(c, a, b)


erfcx = _rec("erfcx", "special_erfcx(Tensor self) -> Tensor", K.erfcx,
             lambda ctx, g, x: g * (2 * x * ctx.result - _2_SQRTPI),
             saves=("self", "result"))
ndtr = _rec("ndtr", "special_ndtr(Tensor self) -> Tensor", K.ndtr,
            lambda ctx, g, x: g * (-0.5 * x * x).exp() / _SQRT_2PI)
ndtri = _rec("ndtri", "special_ndtri(Tensor self) -> Tensor", K.ndtri,
             lambda ctx, g, x: g * _SQRT_2PI * (0.5 * ctx.result * ctx.result).exp(),
             saves=("result",))
log_ndtr = _rec("log_ndtr", "special_log_ndtr(Tensor self) -> Tensor", K.log_ndtr,
                lambda ctx, g, x: g * (-0.5 * x * x - ctx.result).exp() / _SQRT_2PI,
                saves=("self", "result"))
i0e = _rec("i0e", "special_i0e(Tensor self) -> Tensor", K.i0e,
           lambda ctx, g, x: g * (i1e(x) - x.sgn() * ctx.result), saves=("self", "result"))


def _i1_grad(ctx, g, x):
    zero = x == 0
    safe = _where(zero, 1, x)
    return g * _where(zero, 0.5, x.i0() - ctx.result / safe)


def _i1e_grad(ctx, g, x):
    zero = x == 0
    safe = _where(zero, 1, x)
    return g * _where(zero, 0.5, i0e(x) - ctx.result * (x.sgn() + 1 / safe))


i1 = _rec("i1", "special_i1(Tensor self) -> Tensor", K.i1, _i1_grad, saves=("self", "result"))
i1e = _rec("i1e", "special_i1e(Tensor self) -> Tensor", K.i1e, _i1e_grad,
           saves=("self", "result"))
entr = _rec("entr", "special_entr(Tensor self) -> Tensor", K.entr,
            lambda ctx, g, x: g * -(1 + x.log()))


def _xlog1py_grad(ctx, g, x, y):
    # torch: xlog1py(grad, other).masked_fill((self == 0) & (other <= -1), 0); grad*self/(1+y)
    n = ctx.needs_input_grad
    gx = gy = None
    if n[0]:
        gx = _where(g == 0, 0, g * (y + 1).log())
        gx = _where((x == 0) & (y <= -1), 0, gx)
    if n[1]:
        gy = g * x / (y + 1)
    return gx, gy


xlog1py = _rec("xlog1py", "special_xlog1py(Tensor self, Tensor other) -> Tensor", K.xlog1py,
               _xlog1py_grad, saves=("self", "other"))


def _zeta_grad(ctx, g, x, q):
    if ctx.needs_input_grad[0]:
        raise NotImplementedError("the derivative for 'zeta' is not implemented.")
    return None, g * -x * zeta(x + 1.0, q)


zeta = _rec("zeta", "special_zeta(Tensor self, Tensor other) -> Tensor", K.zeta, _zeta_grad,
            saves=("self", "other"))


def _igamma_grad(sign, name):
    def rule(ctx, g, a, x):
        if ctx.needs_input_grad[0]:
            raise NotImplementedError(f"the derivative for '{name}: input' is not implemented.")
        lgamma_a = a.lgamma() if hasattr(a, "lgamma") else math.lgamma(a)   # a Python number
        return None, sign * g * ((a - 1) * x.log() - x - lgamma_a).exp()
    return rule


# torch computes them in the promoted dtype, which must be floating (igamma(int, int) fails)
igamma = defop("igamma(Tensor self, Tensor other) -> Tensor", K.gammainc,
               inplace=True, saves=("self", "other"))
igamma.def_backward(_igamma_grad(1, "igamma"))
igammac = defop("igammac(Tensor self, Tensor other) -> Tensor", K.gammaincc,
                inplace=True, saves=("self", "other"))
igammac.def_backward(_igamma_grad(-1, "igammac"))

# ------------------------------------------------------------- not differentiable in torch

for _n in ("bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "modified_bessel_i0",
           "modified_bessel_i1", "modified_bessel_k0", "modified_bessel_k1",
           "scaled_modified_bessel_k0", "scaled_modified_bessel_k1", "spherical_bessel_j0",
           "airy_ai"):
    arg = "x" if _n in ("spherical_bessel_j0", "airy_ai") else "self"
    _rec(_n, f"special_{_n}(Tensor {arg}) -> Tensor", getattr(K, _n), saves=(),
         differentiable=False)

for _n in ("chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
           "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t",
           "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
           "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he",
           "laguerre_polynomial_l", "legendre_polynomial_p"):
    _rec(_n, f"special_{_n}(Tensor x, Tensor n) -> Tensor", getattr(K, _n), saves=(),
         differentiable=False)
