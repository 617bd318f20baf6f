"""Reductions, scans and softmax: op records, their backward rules and the overloaded fronts
(``max``/``min``, ``prod``, ``var``/``std``..., ``norm``).

Backward rules are written in ember ops (differentiable again). Rules need a few things the
core lacks; they are private records here, each closed under differentiation:

- ``_compare_mask`` (bool masks, not differentiable), ``_sgn`` (zero derivative),
  ``_abs_pow`` (|x|**p),
- ``_take_along_dim`` / ``_take_along_dim_backward`` (gather along a dim and its adjoint,
  scatter-add; each is the other's backward),
- ``_reverse_cumsum`` (the adjoint of cumsum, and vice versa), ``_nth_zero_mask``,
- ``_logcumsumexp_grad`` (the stable VJP of logcumsumexp; its own VJPs are itself with the
  direction flipped).

Note [ties]: full reductions that select a value (``max()``, ``amax``, ``median()``...) split
the gradient evenly among the elements equal to the result, like torch; the ``dim``
overloads that return indices send it to the selected index only.
"""
from __future__ import annotations

import builtins

from ember._kernels import reduction as K
from ember._kernels import sorting as KS
from ember._kernels.util import wrap_dim
from ember._ops.core import _expand_reduced, where_self, conj_if_complex
from ember._ops.core import sum as sum_op
from ember._ops.registry import defop, OpDef, public, FUNCTIONS
from ember._dispatch import check_int_list
from ember._tensor import Tensor

# -------------------------------------------------------------------- private helpers

compare_mask = OpDef("_compare_mask(Tensor self, Tensor other, str op) -> Tensor",
                     K.compare_mask, promote=None, differentiable=False)
sgn_op = OpDef("_sgn(Tensor self) -> Tensor", K.sgn, promote=None, grad_name="SgnBackward0")
abs_pow = OpDef("_abs_pow(Tensor self, float p) -> Tensor", K.abs_pow, promote=None,
                saves=("self",))


@sgn_op.def_backward
def _(ctx, g, self):
    # piecewise constant: zeros, as torch's sign/sgn (so a norm's first-order gradient is
    # a function of its input under create_graph, as torch's is)
    from ember._ops.factory import zeros_like
    return zeros_like(g)


def _sign(x):
    """sign(x) for real x (a constant for autograd); x / |x| (0 at 0) for complex x, written
    in differentiable ops."""
    if x.is_complex():
        m = abs_pow(x, 1.0)
        return x / where_self(compare_mask(m, 0, "eq"), 1, m)
    return sgn_op(x)


@abs_pow.def_backward
def _(ctx, g, self, p):
    if p == 0:
        return g * sgn_op(self) * 0
    return g * (abs_pow(self, p - 1) * p) * _sign(self)


take_along = OpDef("_take_along_dim(Tensor self, Tensor indices, int dim) -> Tensor",
                   KS.take_along_dim, promote=None, saves=("indices",),
                   grad_name="GatherBackward0")
take_along_backward = OpDef("_take_along_dim_backward(Tensor grad, int[] shape, Tensor indices, "
                            "int dim) -> Tensor", KS.take_along_dim_backward, promote=None,
                            saves=("indices",), grad_name="ScatterAddBackward0")


@take_along.def_backward
def _(ctx, g, self, indices, dim):
    shape = ctx.shapes[0]
    if len(shape):
        shape = KS._bshape(tuple(shape), tuple(ctx.shapes[1]), wrap_dim(dim, len(shape)))[0]
    return take_along_backward(g, shape, indices, dim), None


@take_along_backward.def_backward
def _(ctx, g, grad, shape, indices, dim):
    return take_along(g, indices, dim), None, None, None


reverse_cumsum = OpDef("_reverse_cumsum(Tensor self, int dim) -> Tensor", K.reverse_cumsum,
                       promote=None)
nth_zero_mask = OpDef("_nth_zero_mask(Tensor self, int dim, int n) -> Tensor", K.nth_zero_mask,
                      promote=None, differentiable=False)


@reverse_cumsum.def_backward
def _(ctx, g, self, dim):
    return cumsum(g, dim, None)


def _expand(t, shape, dim, keepdim):
    return _expand_reduced(t, shape, dim, keepdim)


def _rsum(t, dim):
    """``t`` summed over ``dim`` (None / () for all) keeping dims."""
    return sum_op(t, None if dim is None or dim == () or dim == [] else dim, True, None)


def _evenly(g, x, r, dim, keepdim):
    """Note [ties]: the gradient split evenly among the elements equal to the result."""
    shape = x.shape
    g = _expand(g, shape, dim, keepdim)
    mask = compare_mask(x, _expand(r, shape, dim, keepdim), "eqnan")
    return g * mask / _rsum(mask, dim)


def _select_backward(g, indices, shape, dim, keepdim):
    """Gradient of a value selected at ``indices`` along ``dim`` (max.dim, median.dim...)."""
    if len(shape) == 0:
        return g
    if not keepdim:
        g = g.unsqueeze(dim)
        indices = indices.unsqueeze(dim)
    return take_along_backward(g, shape, indices, dim)


def _any_true(mask):
    return builtins.bool(any_(mask, None, False))


def _numel(shape, dim):
    return K.numel_reduced(tuple(shape), K.reduce_axes(dim, len(shape)))


# -------------------------------------------------------------------- mean, nansum, nanmean

mean = defop("mean(Tensor self, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None)"
             " -> Tensor", K.mean, promote=None)


@mean.def_backward
def _(ctx, g, self, dim, keepdim, dtype):
    shape = ctx.shapes[0]
    return _expand(g, shape, dim, keepdim) / builtins.max(_numel(shape, dim), 1)


nansum = defop("nansum(Tensor self, int[1]? dim=None, bool keepdim=False, *, "
               "ScalarType? dtype=None) -> Tensor", K.nansum, promote=None, saves=("self",))


@nansum.def_backward
def _(ctx, g, self, dim, keepdim, dtype):
    g = _expand(g, ctx.shapes[0], dim, keepdim)
    return where_self(compare_mask(self, self, "eq"), g, 0)


nanmean = defop("nanmean(Tensor self, int[1]? dim=None, bool keepdim=False, *, "
                "ScalarType? dtype=None) -> Tensor", K.nanmean, promote=None, saves=("self",))


@nanmean.def_backward
def _(ctx, g, self, dim, keepdim, dtype):
    g = _expand(g, ctx.shapes[0], dim, keepdim)
    notnan = compare_mask(self, self, "eq")
    cnt = _rsum(notnan, dim)
    return where_self(notnan, g / where_self(compare_mask(cnt, 0, "eq"), 1, cnt), 0)


# -------------------------------------------------------------------- prod

prod_op = OpDef("prod(Tensor self, *, ScalarType? dtype=None) -> Tensor", K.prod, promote=None,
                saves=("self", "result"))
prod_dim = OpDef("prod.dim_int(Tensor self, int dim, bool keepdim=False, *, "
                 "ScalarType? dtype=None) -> Tensor", K.prod_dim, promote=None,
                 saves=("self", "result"), grad_name="ProdBackward1")


def _prod_backward(g, x, r, dim, keepdim):
    """d prod / dx_j = the product of the others, also where some x are zero. With q the
    product of a slice's non-zeros and s the sum of its zeros (differentiable: the zeros'
    values): no zero -> q / x_j; one zero -> q at it, q * s / x_j elsewhere; two zeros ->
    q * (s - x_j) at them, 0 elsewhere; more -> 0. Exact to second order (double
    backward)."""
    if x.ndim == 0:
        return g
    if dim is None:
        return _prod_backward(g, x.reshape(-1), r, 0, False).reshape(x.shape)
    g = _expand(g, x.shape, dim, keepdim)
    re = _expand(r, x.shape, dim, keepdim)
    z = compare_mask(x, 0, "eq")
    if not _any_true(z):
        return g * conj_if_complex(re / x)
    cnt = sum_op(z, dim, True, None)
    one, two = compare_mask(cnt, 1, "eq"), compare_mask(cnt, 2, "eq")
    x_nz = where_self(z, 1, x)
    q = prod_dim(x_nz, dim, True, None)
    s = sum_op(where_self(z, x, 0), dim, True, None)
    at_zero = where_self(one, q, where_self(two, q * (s - x), 0))
    elsewhere = q * where_self(one, s, where_self(compare_mask(cnt, 0, "eq"), 1, 0)) / x_nz
    return g * conj_if_complex(where_self(z, at_zero, elsewhere))


@prod_op.def_backward
def _(ctx, g, self, dtype):
    return _prod_backward(g, self, ctx.result, None, False)


@prod_dim.def_backward
def _(ctx, g, self, dim, keepdim, dtype):
    return _prod_backward(g, self, ctx.result, dim, keepdim)


@public("prod", method=True, numpy_names=True)
def prod(input, dim=None, keepdim=False, *, dtype=None, out=None):
    """Product of all elements, or along one ``dim`` (an int, like torch)."""
    if dim is None:
        return prod_op(input, dtype=dtype, out=out)
    if not isinstance(dim, int) or isinstance(dim, builtins.bool):
        from ember._ops.parser_errors import hand_written
        err = hand_written("prod", input, [("dim", dim)] + _kept(keepdim) + _kept(dtype, "dtype"))
        if err is not None:
            raise err
        raise TypeError(f"prod() received an invalid combination of arguments - got (Tensor, "
                        f"{type(dim).__name__}), but expected one of:\n * (Tensor input, *, "
                        f"torch.dtype dtype = None)\n * (Tensor input, int dim, bool keepdim = "
                        f"False, *, torch.dtype dtype = None, Tensor out = None)\n")
    if type(keepdim) is not builtins.bool:
        from ember._ops.parser_errors import bool_argument
        bool_argument("prod", "keepdim", 2, keepdim)
    return prod_dim(input, dim, keepdim, dtype=dtype, out=out)


# -------------------------------------------------------------------- max / min family

max_op = OpDef("max(Tensor self) -> Tensor", K.max_all, promote=None, saves=("self", "result"),
               grad_name="MaxBackward1")
min_op = OpDef("min(Tensor self) -> Tensor", K.min_all, promote=None, saves=("self", "result"),
               grad_name="MinBackward1")
max_dim = OpDef("max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, "
                "Tensor indices)", K.max_dim, promote=None, saves=("indices",))
min_dim = OpDef("min.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, "
                "Tensor indices)", K.min_dim, promote=None, saves=("indices",))


@max_op.def_backward
def _(ctx, g, self):
    return _evenly(g, self, ctx.result, None, False)


@min_op.def_backward
def _(ctx, g, self):
    return _evenly(g, self, ctx.result, None, False)


@max_dim.def_backward
def _(ctx, g, self, dim, keepdim):
    return _select_backward(g[0], ctx.result[1], ctx.shapes[0], dim, keepdim)


@min_dim.def_backward
def _(ctx, g, self, dim, keepdim):
    return _select_backward(g[0], ctx.result[1], ctx.shapes[0], dim, keepdim)


def _binary(name, fname, input, other, out):
    fn = FUNCTIONS.get(name)
    if fn is None:
        raise NotImplementedError(f"{fname}(input, other) is the elementwise ember.{name}, which "
                                  f"is not available in this build")
    return fn(input, other) if out is None else fn(input, other, out=out)


def _kept(value, name="keepdim", default=False):
    """[(name, value)] when an argument differs from its default (taken as given)."""
    return [] if value is default or value is None and default is False and \
        name != "keepdim" else [(name, value)]


def _extreme_front(full, by_dim, binary, fname):
    def front(input, dim=None, keepdim=False, *, other=None, out=None, **_kw):
        if _kw:                     # Note [unknown keywords]
            from ember._ops.parser_errors import hand_keywords
            raise hand_keywords(fname, input, ([("dim", dim)] if dim is not None else []) +
                                _kept(keepdim) + _kept(other, "other") + _kept(out, "out"), _kw)
        if other is not None or isinstance(dim, Tensor):
            return _binary(binary, fname, input, dim if other is None else other, out)
        if dim is None:
            return full(input, out=out)
        if isinstance(dim, builtins.bool) or not hasattr(dim, "__index__"):
            from ember._ops.parser_errors import hand_written
            err = hand_written(fname, input, [("dim", dim)] + _kept(keepdim))
            if err is not None:
                raise err
            raise TypeError(f"{fname}() received an invalid combination of arguments - got "
                            f"(Tensor, {type(dim).__name__}), but expected one of:\n"
                            f" * (Tensor input, *, Tensor out = None)\n"
                            f" * (Tensor input, Tensor other, *, Tensor out = None)\n"
                            f" * (Tensor input, int dim, bool keepdim = False, *, tuple of "
                            f"Tensors out = None)\n")
        if type(keepdim) is not builtins.bool:
            from ember._ops.parser_errors import bad_argument
            raise bad_argument(fname, "keepdim", 2, "bool", keepdim, 2)
        return by_dim(input, dim, keepdim, out=out)
    front.__name__ = front.__qualname__ = fname
    front.__doc__ = (f"``{fname}(input)``: the {fname}imum of all elements; "
                     f"``{fname}(input, dim, keepdim=False)``: (values, indices) along ``dim``; "
                     f"``{fname}(input, other)``: elementwise ``{binary}``.")
    return front


max = public("max", method=True, numpy_names=True)(
    _extreme_front(max_op, max_dim, "maximum", "max"))
min = public("min", method=True, numpy_names=True)(
    _extreme_front(min_op, min_dim, "minimum", "min"))

amax = defop("amax(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor", K.amax,
             promote=None, saves=("self", "result"))
amin = defop("amin(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor", K.amin,
             promote=None, saves=("self", "result"))


@amax.def_backward
def _(ctx, g, self, dim, keepdim):
    return _evenly(g, self, ctx.result, dim, keepdim)


@amin.def_backward
def _(ctx, g, self, dim, keepdim):
    return _evenly(g, self, ctx.result, dim, keepdim)


argmax = defop("argmax(Tensor self, int? dim=None, bool keepdim=False) -> Tensor", K.argmax,
               promote=None, differentiable=False)
argmin = defop("argmin(Tensor self, int? dim=None, bool keepdim=False) -> Tensor", K.argmin,
               promote=None, differentiable=False)

aminmax = defop("aminmax(Tensor self, *, int? dim=None, bool keepdim=False) -> (Tensor min, "
                "Tensor max)", K.aminmax, promote=None, saves=("self", "result"))


@aminmax.def_backward
def _(ctx, g, self, dim, keepdim):
    mn, mx = ctx.result
    return _evenly(g[0], self, mn, dim, keepdim) + _evenly(g[1], self, mx, dim, keepdim)


# -------------------------------------------------------------------- var / std

_VAR = "(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False)"
var_op = OpDef(f"var.correction{_VAR} -> Tensor", K.var, promote=None, saves=("self",),
               grad_name="VarBackward0")
std_op = OpDef(f"std.correction{_VAR} -> Tensor", K.std, promote=None,
               saves=("self", "result"), grad_name="StdBackward0")
var_mean_op = OpDef(f"var_mean.correction{_VAR} -> (Tensor, Tensor)", K.var_mean, promote=None,
                    saves=("self",), grad_name="VarMeanBackward0")
std_mean_op = OpDef(f"std_mean.correction{_VAR} -> (Tensor, Tensor)", K.std_mean, promote=None,
                    saves=("self", "result"), grad_name="StdMeanBackward0")


def _var_backward(g, x, dim, correction, keepdim):
    n = _numel(x.shape, dim)
    c = 1 if correction is None else correction
    coef = 2.0 / (n - c) if n != c else float("inf")
    g = _expand(g, x.shape, dim, keepdim)
    return g * coef * (x - mean(x, dim, True, None))


def _std_to_var_grad(g, std):
    z = compare_mask(std, 0, "eq")
    return where_self(z, 0, g / (where_self(z, 1, std) * 2))


def _mean_backward(g, x, dim, keepdim):
    return _expand(g, x.shape, dim, keepdim) / builtins.max(_numel(x.shape, dim), 1)


@var_op.def_backward
def _(ctx, g, self, dim, correction, keepdim):
    return _var_backward(g, self, dim, correction, keepdim)


@std_op.def_backward
def _(ctx, g, self, dim, correction, keepdim):
    return _var_backward(_std_to_var_grad(g, ctx.result), self, dim, correction, keepdim)


@var_mean_op.def_backward
def _(ctx, g, self, dim, correction, keepdim):
    return _var_backward(g[0], self, dim, correction, keepdim) + \
        _mean_backward(g[1], self, dim, keepdim)


@std_mean_op.def_backward
def _(ctx, g, self, dim, correction, keepdim):
    return _var_backward(_std_to_var_grad(g[0], ctx.result[0]), self, dim, correction,
                         keepdim) + _mean_backward(g[1], self, dim, keepdim)


def _var_front(op, name, method):
    def front(input, dim=None, unbiased=None, keepdim=False, *, correction=None, out=None,
              **_kw):
        if _kw:                     # Note [unknown keywords]
            from ember._ops.parser_errors import hand_keywords
            raise hand_keywords(name, input, ([("dim", dim)] if dim is not None else []) +
                                ([("unbiased", unbiased)] if unbiased is not None else []) +
                                _kept(keepdim) + _kept(correction, "correction") +
                                _kept(out, "out"), _kw)
        d0, u0, c0 = dim, unbiased, correction
        if isinstance(dim, builtins.bool):          # var(input, unbiased)
            dim, unbiased = None, dim
        if unbiased is not None:
            if correction is not None:
                raise TypeError(f"{name}() received an invalid combination of arguments - got "
                                f"both 'unbiased' and 'correction'")
            correction = 1 if unbiased else 0
        if isinstance(dim, (tuple, list)) and (not dim or hasattr(type(dim[0]), "__index__")
                                               and not isinstance(dim[0], builtins.bool)):
            check_int_list(name, "dim", dim)
        elif dim is not None and (isinstance(dim, (builtins.bool, tuple, list)) or
                                  not hasattr(type(dim), "__index__")):
            from ember._ops.parser_errors import hand_written
            given = [("dim", d0)] + ([("unbiased", u0)] if u0 is not None else []) + \
                _kept(keepdim) + ([("correction", c0)] if c0 is not None else [])
            err = hand_written(name, input, given)
            raise err if err is not None else TypeError(
                f"{name}(): argument 'dim' must be tuple of ints, not {type(dim).__name__}")
        return op(input, dim, correction=correction, keepdim=keepdim, out=out)
    front.__name__ = front.__qualname__ = name
    front.__doc__ = (f"{name}(input, dim=None, *, correction=1, keepdim=False); also the legacy "
                     f"{name}(input, dim, unbiased, keepdim) and {name}(input, unbiased).")
    return public(name, method=method, numpy_names=True)(front)


var = _var_front(var_op, "var", True)
std = _var_front(std_op, "std", True)
var_mean = _var_front(var_mean_op, "var_mean", False)
std_mean = _var_front(std_mean_op, "std_mean", False)

# -------------------------------------------------------------------- logsumexp, norm

logsumexp = defop("logsumexp(Tensor self, int[1] dim, bool keepdim=False) -> Tensor",
                  K.logsumexp, promote="int_to_float", saves=("self", "result"))


@logsumexp.def_backward
def _(ctx, g, self, dim, keepdim):
    shape = ctx.shapes[0]
    g = _expand(g, shape, dim, keepdim)
    r = _expand(ctx.result, shape, dim, keepdim)
    return g * conj_if_complex((self - r).exp())


norm_op = OpDef("norm(Tensor self, Scalar? p=2, int[1]? dim=None, bool keepdim=False, *, "
                "ScalarType? dtype=None) -> Tensor", K.vector_norm, promote=None,
                saves=("self", "result"), grad_name="LinalgVectorNormBackward0")


@norm_op.def_backward
def _(ctx, g, self, p, dim, keepdim, dtype):
    shape = ctx.shapes[0]
    p = 2.0 if p is None else float(p)
    x = self if dtype is None else self.to(dtype)
    g = _expand(g, shape, dim, keepdim)
    r = _expand(ctx.result, shape, dim, keepdim)
    if p == 0:
        return g * 0
    if p == 1:
        return g * _sign(x)
    rz = compare_mask(r, 0, "eq")
    r_safe = where_self(rz, 1, r)
    if p == 2:              # torch's order: (x / r) * g (found by experiment)
        return where_self(rz, 0, x / r_safe * g)
    if p in (float("inf"), float("-inf")):
        mask = compare_mask(abs_pow(x, 1.0), r, "eq")
        return g * _sign(x) * mask / _rsum(mask, dim)
    if p > 2:               # torch: x * |x|^(p-2) * (g / r^(p-1)) (found by experiment)
        return where_self(rz, 0, x * abs_pow(x, p - 2) * (g / abs_pow(r_safe, p - 1)))
    xz = compare_mask(x, 0, "eq")
    scaled = _sign(x) * abs_pow(where_self(xz, 1, x), p - 1) if p < 1 else \
        _sign(x) * abs_pow(x, p - 1)
    return where_self(rz, 0, scaled * (g / abs_pow(r_safe, p - 1)))


def _matrix_norm(input, p, dim, keepdim, dtype, out):
    if p not in ("fro", "nuc"):
        raise RuntimeError(f"linalg.matrix_norm: Order {p} not supported.")
    if input.dim() < 2:
        raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 "
                           "dimensions.")
    if len(dim) != 2:
        raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got "
                           f"{' '.join(str(d) for d in dim)}")
    try:
        from ember import linalg
        fn = linalg.matrix_norm
    except (ImportError, AttributeError):
        raise NotImplementedError("norm(p='nuc') is the nuclear norm, a singular value "
                                  "decomposition: it needs ember.linalg.matrix_norm, which is not "
                                  "available in this build") from None
    kw = {} if out is None else {"out": out}
    return fn(input, p, tuple(dim), keepdim, dtype=dtype, **kw)


@public("norm", method=True)
def norm(input, p="fro", dim=None, keepdim=False, out=None, dtype=None):
    """torch.norm: a vector norm (``p`` a number, 'fro') over ``dim`` (all dims by default);
    'nuc' and other matrix orders go to ``linalg.matrix_norm``."""
    _dim = None if dim is None else (dim,) if isinstance(dim, int) else \
        check_int_list("linalg_vector_norm", "dim", tuple(dim))
    if isinstance(p, str):
        if p == "fro" and (dim is None or isinstance(dim, int) or len(dim) <= 2):
            return norm_op(input, 2, _dim, keepdim, dtype=dtype, out=out)
        if _dim is None:
            _dim = tuple(range(input.ndim))
        return _matrix_norm(input, p, _dim, keepdim, dtype, out)
    return norm_op(input, 2.0 if p is None else p, _dim, keepdim, dtype=dtype, out=out)


# -------------------------------------------------------------------- all / any / counts

all = defop("all(Tensor self, int[1]? dim=None, bool keepdim=False) -> Tensor", K.all_,
            promote=None, differentiable=False)
any_ = defop("any(Tensor self, int[1]? dim=None, bool keepdim=False) -> Tensor", K.any_,
             promote=None, differentiable=False)
count_nonzero = defop("count_nonzero(Tensor self, int[1]? dim=None) -> Tensor", K.count_nonzero,
                      promote=None, differentiable=False)

# -------------------------------------------------------------------- scans

cumsum = defop("cumsum(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor", K.cumsum,
               promote=None, inplace=True)


@cumsum.def_backward
def _(ctx, g, self, dim, dtype):
    if len(ctx.shapes[0]) == 0:
        return g
    return reverse_cumsum(g, dim)


cumprod = defop("cumprod(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor", K.cumprod,
                promote=None, inplace=True, saves=("self", "result"))


@cumprod.def_backward
def _(ctx, g, self, dim, dtype):
    """grad_k = sum_{i>=k} g_i prod_{j<=i, j!=k} x_j. Where x_k != 0 that is
    revcumsum(g * out)_k / x_k; at the first zero z of a slice it is revcumsum(g *
    cumprod(x with x_z := 1))_z; at the second zero k it is x_z * revcumsum(g * cumprod(x
    with x_z, x_k := 1))_k (zero, but with the right derivative in x_z); at later zeros 0.
    Exact to second order."""
    if self.ndim == 0:
        return g
    x = self
    out = ctx.result
    z = compare_mask(x, 0, "eq")
    part = reverse_cumsum(g * conj_if_complex(out), dim) / conj_if_complex(where_self(z, 1, x))
    if not _any_true(z):
        return part
    first = nth_zero_mask(x, dim, 1)
    x1 = where_self(first, 1, x)
    at_first = reverse_cumsum(g * conj_if_complex(cumprod(x1, dim, None)), dim)
    res = where_self(z, 0, part)
    second = nth_zero_mask(x, dim, 2)
    if _any_true(second):
        xz = sum_op(where_self(first, x, 0), dim, True, None)
        x2 = where_self(second, 1, x1)
        at_second = conj_if_complex(xz) * reverse_cumsum(
            g * conj_if_complex(cumprod(x2, dim, None)), dim)
        res = where_self(second, at_second, res)
    return where_self(first, at_first, res)


def _cum_extreme_backward(ctx, g, self, dim):
    if len(ctx.shapes[0]) == 0:
        return g[0]
    return take_along_backward(g[0], ctx.shapes[0], ctx.result[1], dim)


cummax = defop("cummax(Tensor self, int dim) -> (Tensor values, Tensor indices)", K.cummax,
               promote=None, saves=("indices",))
cummin = defop("cummin(Tensor self, int dim) -> (Tensor values, Tensor indices)", K.cummin,
               promote=None, saves=("indices",))
cummax.def_backward(_cum_extreme_backward)
cummin.def_backward(_cum_extreme_backward)

logcumsumexp = defop("logcumsumexp(Tensor self, int dim) -> Tensor", K.logcumsumexp,
                     promote=None, saves=("self", "result"))
logcumsumexp_grad = OpDef("_logcumsumexp_grad(Tensor grad, Tensor self, Tensor lse, int dim, "
                          "bool reverse) -> Tensor", K.logcumsumexp_grad, promote=None,
                          saves=("grad", "self", "lse", "result"))


@logcumsumexp.def_backward
def _(ctx, g, self, dim):
    return logcumsumexp_grad(g, self, ctx.result, dim, True)


@logcumsumexp_grad.def_backward
def _(ctx, u, grad, self, lse, dim, reverse):
    """reverse R(g)_k = sum_{i>=k} g_i e^(x_k - r_i), forward L(g)_i = sum_{k<=i} g_k
    e^(x_k - r_i): each is the other's VJP in ``g``; d/dx and d/dr follow."""
    other = logcumsumexp_grad(u, self, lse, dim, not reverse)
    res = ctx.result
    if reverse:
        return other, u * res, -grad * other, None, None
    return other, grad * other, -u * res, None, None


# -------------------------------------------------------------------- softmax

softmax = defop("softmax.int(Tensor self, int dim, ScalarType? dtype=None) -> Tensor",
                K.softmax, promote=None, saves=("result",), autocast="fp32")
log_softmax = defop("log_softmax.int(Tensor self, int dim, ScalarType? dtype=None) -> Tensor",
                    K.log_softmax, promote=None, saves=("result",), autocast="fp32")


# torch's backward ops (also its fused kernels for a plain backward: one full-size buffer
# each); their own backward rules are in ember ops (double backward)
softmax_backward_data = defop(
    "_softmax_backward_data(Tensor grad_output, Tensor output, int dim, ScalarType input_dtype)"
    " -> Tensor", K.softmax_backward_data, promote=None, method=False,
    saves=("grad_output", "output"))
log_softmax_backward_data = defop(
    "_log_softmax_backward_data(Tensor grad_output, Tensor output, int dim, "
    "ScalarType input_dtype) -> Tensor", K.log_softmax_backward_data, promote=None,
    method=False, saves=("grad_output", "output"))


@softmax_backward_data.def_backward
def _(ctx, v, g, y, dim, input_dtype):
    """r = y (g - s), s = sum(g y): the map g -> r is symmetric, and
    dr/dy applied to v is v (g - s) - g sum(v y)."""
    vy = sum_op(v * y, dim, True, None)
    gs = sum_op(g * y, dim, True, None)
    grad_g = y * (v - vy) if ctx.needs_input_grad[0] else None
    grad_y = v * (g - gs) - g * vy if ctx.needs_input_grad[1] else None
    return grad_g, grad_y, None, None


@log_softmax_backward_data.def_backward
def _(ctx, v, g, y, dim, input_dtype):
    """r = g - exp(y) sum(g): dr/dg^T v = v - sum(v exp(y)), dr/dy^T v = -v exp(y) sum(g)."""
    e = y.exp()
    grad_g = v - sum_op(v * e, dim, True, None) if ctx.needs_input_grad[0] else None
    grad_y = -v * e * sum_op(g, dim, True, None) if ctx.needs_input_grad[1] else None
    return grad_g, grad_y, None, None


def _fused_softmax_grad(g, y):
    """May the fused backward kernel run (plain backward, same float dtype, no subclass)?"""
    from ember.autograd.grad_mode import is_grad_enabled
    return (not is_grad_enabled() and type(g) is Tensor and type(y) is Tensor
            and g.dtype == y.dtype and g.shape == y.shape and not g.is_complex())


@softmax.def_backward
def _(ctx, g, self, dim, dtype):
    y = ctx.result
    if _fused_softmax_grad(g, y):
        return softmax_backward_data(g, y, dim, y.dtype)
    return y * (g - sum_op(g * y, dim, True, None))


@log_softmax.def_backward
def _(ctx, g, self, dim, dtype):
    if _fused_softmax_grad(g, ctx.result):
        return log_softmax_backward_data(g, ctx.result, dim, ctx.result.dtype)
    return g - ctx.result.exp() * sum_op(g, dim, True, None)
