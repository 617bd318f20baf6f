"""Numerical ops: ``diff``, ``gradient``, ``trapezoid``/``trapz``, ``cumulative_trapezoid``,
``vander``, ``isin``, ``isclose``, ``allclose``, ``equal``, ``dist``, ``renorm`` and the
``*_copy`` variants of the view ops (``narrow_copy`` is the shape family's).

Most are composites written in ember ops, as ATen writes them (``diff`` is slices and
subtractions, ``gradient`` is slices, arithmetic and ``cat``, ``dist`` is a vector norm
of ``self - other``), so autograd, double backward and dtype promotion come from their
parts. ``vander`` (with a backward rule that calls ``vander``), ``isin`` and ``isclose``
have NumPy kernels. Other families' ops (``cat``, ``cumsum``, the view ops of the
``*_copy`` variants) are looked up at call time.
"""
from __future__ import annotations

import math
import numbers

import numpy as np

import ember
from ember import _dtype
from ember._creation import as_tensor
from ember._dispatch import dispatch
from ember._kernels import numeric as K
from ember._kernels.util import wrap_dim, wrap_dims
from ember._ops.core import clone, conj_if_complex, expand, permute, reshape, squeeze, \
    transpose, unsqueeze
from ember._ops.registry import OPS, defop, public
from ember._tensor import Tensor

_INF = math.inf


# -------------------------------------------------------------------- helpers

def _along(t, dim, index):
    """``t`` indexed by ``index`` (an int or a slice) along ``dim`` (a view)."""
    return t[(slice(None),) * dim + (index,)]


def _type_of(v):
    return "Tensor" if isinstance(v, Tensor) else type(v).__name__


def _check_tensor(fname, argname, pos, v):
    if not isinstance(v, Tensor):
        raise TypeError(f"{fname}(): argument '{argname}' (position {pos}) must be Tensor, not "
                        f"{type(v).__name__}")


def _is_float_or_complex(t):
    return t.is_floating_point() or t.is_complex()


def _scalar(v):
    """A Python number from a number or a one-element tensor (torch's Scalar arguments)."""
    if isinstance(v, Tensor):
        return v.item()
    if isinstance(v, np.generic):
        return v.item()
    return v


def _fmt(v):
    return f"{float(v):g}"


def _const(arr):
    """A constant tensor (no history) holding NumPy data computed from a tensor's values:
    masks and weights that the composites below treat as piecewise constant."""
    return as_tensor(np.array(arr, order="C"))


# -------------------------------------------------------------------- diff

def _diff_check_other(self, other, dim):
    if other is None:
        return
    d = wrap_dim(dim, self.ndim)
    if other.ndim != self.ndim:
        raise RuntimeError("diff expects prepend or append to be the same dimension as input")
    for i in range(other.ndim):
        if i != d and other.shape[i] != self.shape[i]:
            raise RuntimeError(f"diff expects the shape of tensor to prepend or append to match "
                               f"that of input except along the differencing dimension; "
                               f"input.size({i}) = {self.shape[i]}, but got tensor.size({i}) = "
                               f"{other.shape[i]}")


def _diff(self, n=1, dim=-1, prepend=None, append=None):
    _check_tensor("diff", "input", 1, self)
    if self.ndim < 1:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    for name, other in (("prepend", prepend), ("append", append)):
        if other is not None and not isinstance(other, Tensor):
            raise TypeError(f"diff(): argument '{name}' must be Tensor, not "
                            f"{type(other).__name__}")
        _diff_check_other(self, other, dim)
    d = wrap_dim(dim, self.ndim)
    if n == 0:                       # torch returns a copy of self (prepend/append unused)
        return clone(self, None)
    x = self
    if prepend is not None or append is not None:
        parts = [t for t in (prepend, self, append) if t is not None]
        x = ember.cat(parts, d)
    n = min(n, x.shape[d])
    is_bool = x.dtype is _dtype.bool
    for _ in range(n):
        hi, lo = _along(x, d, slice(1, None)), _along(x, d, slice(None, -1))
        x = ember.logical_xor(hi, lo) if is_bool else hi - lo
    return x


diff = defop("diff(Tensor self, int n=1, int dim=-1, Tensor? prepend=None, Tensor? append=None)"
             " -> Tensor", composite=_diff)


# -------------------------------------------------------------------- gradient

def _gradient_check(self, spacing_size, dims, edge_order):
    """ATen's pre_check_gradient; ``dims`` is None when the user gave no ``dim``."""
    if self.dtype is _dtype.uint8:
        raise RuntimeError("torch.gradient does not support uint8 input.")
    if spacing_size is not None and dims is None and spacing_size != self.ndim:
        raise RuntimeError(f"torch.gradient expected spacing to be unspecified, a scalar, or a "
                           f"list of length equal to 'self.dim() = {self.ndim}', since dim "
                           f"argument was not given, but got a list of length {spacing_size}")
    if spacing_size is not None and dims is not None and spacing_size != len(dims):
        raise RuntimeError(f"torch.gradient expected spacing to be unspecified, a scalar or it's "
                           f"spacing and dim arguments to have the same length, but got a "
                           f"spacing argument of length {spacing_size} and a dim argument of "
                           f"length {len(dims)}.")
    if edge_order not in (1, 2):
        raise RuntimeError("torch.gradient only supports edge_order=1 and edge_order=2.")
    for d in (wrap_dims(dims, self.ndim) if dims is not None else range(self.ndim)):
        if self.shape[d] < edge_order + 1:
            raise RuntimeError("torch.gradient expected each dimension size to be at least "
                               "edge_order+1")


def _gradient_scalar(self, spacing, dim, edge_order=1):
    """ATen's gradient_helper_float: uniform spacing ``spacing[i]`` along ``dim[i]``."""
    out = []
    for h, d in zip(spacing, dim):
        d = wrap_dim(d, self.ndim)
        f = lambda a, b=None: _along(self, d, slice(a, b))     # noqa: E731
        center = (f(2) - f(0, -2)) / h
        if edge_order == 1:
            first = (f(1, 2) - f(0, 1)) / h
            last = (f(-1) - f(-2, -1)) / h
        else:
            first = (f(0, 1) * -1.5 + f(1, 2) * 2 - f(2, 3) * 0.5) / h
            last = (f(-3, -2) * 0.5 + f(-2, -1) * -2 + f(-1) * 1.5) / h
        out.append(ember.cat([first, center / 2, last], d))
    return tuple(out)


def _gradient_coords(self, spacing, dim, edge_order=1):
    """ATen's gradient_helper: sample coordinates ``spacing[i]`` along ``dim[i]``."""
    out = []
    for coords, d in zip(spacing, dim):
        if coords.ndim != 1:
            raise RuntimeError(f"torch.gradient expected each element of spacing to have one "
                               f"dimension, but got an element with {coords.ndim} dimensions!")
        d = wrap_dim(d, self.ndim)
        f = lambda a, b=None: _along(self, d, slice(a, b))     # noqa: E731
        shape = [1] * self.ndim
        shape[d] = -1
        h = ember.diff(coords, 1, 0)
        h1, h2 = h[:-1], h[1:]
        a = (-h2 / (h1 * (h1 + h2))).reshape(shape)
        b = ((h2 - h1) / (h1 * h2)).reshape(shape)
        c = (h1 / (h2 * (h1 + h2))).reshape(shape)
        center = a * f(0, -2) + b * f(1, -1) + c * f(2)
        if edge_order == 1:
            first = (f(1, 2) - f(0, 1)) / h[0]
            last = (f(-1) - f(-2, -1)) / h[-1]
        else:
            a = -(2.0 * h[0] + h[1]) / (h[0] * (h[0] + h[1]))
            b = (h[0] + h[1]) / (h[0] * h[1])
            c = -h[0] / (h[1] * (h[0] + h[1]))
            first = a * f(0, 1) + b * f(1, 2) + c * f(2, 3)
            a = h[-1] / (h[-2] * (h[-1] + h[-2]))
            b = -(h[-1] + h[-2]) / (h[-1] * h[-2])
            c = (2 * h[-1] + h[-2]) / (h[-1] * (h[-1] + h[-2]))
            last = a * f(-3, -2) + b * f(-2, -1) + c * f(-1)
        out.append(ember.cat([first, center, last], d))
    return tuple(out)


gradient_scalar = defop("gradient.scalararray(Tensor self, *, Scalar[] spacing, int[] dim, "
                        "int edge_order=1) -> Tensor[]", composite=_gradient_scalar,
                        function=False, method=False, out=False)
gradient_coords = defop("gradient.tensorarray(Tensor self, *, Tensor[] spacing, int[] dim, "
                        "int edge_order=1) -> Tensor[]", composite=_gradient_coords,
                        function=False, method=False, out=False)


_GRADIENT_SIGS = tuple(
    "Tensor input, *, " + s for s in (
        "tuple of ints dim, int edge_order = 1",
        "Number spacing, tuple of ints dim, int edge_order = 1",
        "Number spacing = None, int dim = None, int edge_order = 1",
        "tuple of Scalars spacing, int dim = None, int edge_order = 1",
        "tuple of Scalars spacing, tuple of ints dim, int edge_order = 1",
        "tuple of Tensors spacing, int dim = None, int edge_order = 1",
        "tuple of Tensors spacing, tuple of ints dim, int edge_order = 1"))


@public("gradient")
def gradient(input, *, spacing=1, dim=None, edge_order=1):
    """Estimates the derivative of ``input`` along ``dim`` (all dims by default) by central
    differences (one-sided at the edges, of ``edge_order`` 1 or 2); ``spacing`` is a scalar,
    a list of scalars or a list of 1-D coordinate tensors. Returns a tuple, one per dim."""
    _check_tensor("gradient", "input", 1, input)
    if dim is None:
        dims, given = list(range(input.ndim)), None
    elif isinstance(dim, numbers.Integral):
        dims = given = [int(dim)]
    else:
        dims = given = [int(d) for d in dim]
    if spacing is None:     # torch: spacing=None is the default unit spacing
        spacing = 1
    if isinstance(spacing, (list, tuple)):
        items = [as_tensor(s) if isinstance(s, np.ndarray) else s for s in spacing]
        if any(isinstance(s, Tensor) for s in items):
            for i, s in enumerate(items):
                if not isinstance(s, Tensor):
                    raise TypeError(f"expected Tensor as element {i} in argument 1, but got "
                                    f"{type(s).__name__}")
            _gradient_check(input, len(items), given, edge_order)
            return dispatch(gradient_coords, (input, items, dims, edge_order))
        items = [_scalar(s) for s in items]
        _gradient_check(input, len(items), given, edge_order)
        return dispatch(gradient_scalar, (input, items, dims, edge_order))
    if isinstance(spacing, Tensor) and spacing.ndim > 0:
        kw = [("spacing", spacing)] + ([("dim", dim)] if dim is not None else [])
        raise _bad_combination("gradient", (input,), kw, _GRADIENT_SIGS)
    s = _scalar(spacing)
    _gradient_check(input, None, given, edge_order)
    return dispatch(gradient_scalar, (input, [s] * len(dims), dims, edge_order))


# -------------------------------------------------------------------- trapezoid

def _trapezoid_dim(y, dim, wrap_first):
    if y.ndim == 0:
        d = wrap_dim(dim, 0) if wrap_first else dim
        raise IndexError(f"Dimension specified as {d} but tensor has no dimensions")
    return wrap_dim(dim, y.ndim)


def _zeros_except(y, d):
    return ember.zeros(tuple(s for i, s in enumerate(y.shape) if i != d), dtype=y.dtype)


def _check_dx(dx, fname):
    dx = _scalar(dx)
    if isinstance(dx, (bool, complex)):
        raise RuntimeError(f"{fname}: Currently, we only support dx as a real number.")
    return float(dx)


def _x_along(y, x, d, fname):
    """ATen's view of ``x`` against ``y``: 1-D ``x`` lies along ``d``; a lower-dimensional
    one gets leading 1s. Returns the spacings x[1:] - x[:-1] along ``d``."""
    if x.ndim == 1:
        if x.shape[0] != y.shape[d]:
            raise RuntimeError(f"{fname}: There must be one `x` value for each sample point")
        shape = [1] * y.ndim
        shape[d] = x.shape[0]
        x = reshape(x, shape)
    elif x.ndim < y.ndim:
        x = reshape(x, (1,) * (y.ndim - x.ndim) + tuple(x.shape))
    return _along(x, d, slice(1, None)) - _along(x, d, slice(None, -1))


def _trapezoid_x(y, x, dim=-1):
    d = _trapezoid_dim(y, dim, True)
    if y.shape[d] == 0:
        return _zeros_except(y, d)
    if y.dtype is _dtype.bool or x.dtype is _dtype.bool:
        raise RuntimeError("trapezoid: received a bool input for `x` or `y`, but bool is not "
                           "supported")
    dx = _x_along(y, x, d, "trapezoid")
    return (dx * (_along(y, d, slice(1, None)) + _along(y, d, slice(None, -1)))).sum(d) / 2.


def _trapezoid_dx(y, dx=1, dim=-1):
    d = _trapezoid_dim(y, dim, False)
    if y.shape[d] == 0:
        return _zeros_except(y, d)
    if y.dtype is _dtype.bool:
        raise RuntimeError("trapezoid: received a bool input for `y`, but bool is not supported")
    dx = _check_dx(dx, "trapezoid")
    # constant spacing: dx * (sum(y) - (y[0] + y[-1]) / 2), as ATen computes it
    return (y.sum(d) - (_along(y, d, 0) + _along(y, d, -1)) * 0.5) * dx


trapezoid_x = defop("trapezoid.x(Tensor y, Tensor x, *, int dim=-1) -> Tensor",
                    composite=_trapezoid_x, function=False, method=False, out=False)
trapezoid_dx = defop("trapezoid.dx(Tensor y, *, Scalar dx=1, int dim=-1) -> Tensor",
                     composite=_trapezoid_dx, function=False, method=False, out=False)


def _bad_combination(fname, args, kwargs, signatures):
    got = ", ".join([_type_of(a) for a in args] + [f"{k}={_type_of(v)}" for k, v in kwargs])
    lines = "".join(f"\n * ({s})" for s in signatures)
    return TypeError(f"{fname}() received an invalid combination of arguments - got ({got}), "
                     f"but expected one of:{lines}\n")


_TRAPZ_SIGS = ("Tensor y, Tensor x, *, int dim = -1", "Tensor y, *, Number dx = 1, int dim = -1")


def _trapezoid_front(fname, y, x, dx, dim, float_dx=False):
    _check_tensor(fname, "y", 1, y)
    if x is not None and (dx is not None or not isinstance(x, Tensor)):
        kw = [("dx", dx)] if dx is not None else []
        raise _bad_combination(fname, (y, x), kw, _TRAPZ_SIGS)
    if x is not None:
        return x, None
    dx = 1 if dx is None else _scalar(dx)
    if float_dx:
        if isinstance(dx, complex):
            raise _bad_combination(fname, (y,), [("dx", dx)], _TRAPZ_SIGS)
        dx = float(dx)
    return None, dx


@public("trapezoid")
def trapezoid(y, x=None, *, dx=None, dim=-1):
    """The trapezoidal rule along ``dim``: sample points ``x`` or constant spacing ``dx``."""
    x, dx = _trapezoid_front("trapezoid", y, x, dx, dim)
    if x is not None:
        return dispatch(trapezoid_x, (y, x, dim))
    return dispatch(trapezoid_dx, (y, dx, dim))


@public("trapz")
def trapz(y, x=None, *, dx=None, dim=-1):
    """Alias of ``trapezoid`` (``dx`` is a float)."""
    x, dx = _trapezoid_front("trapz", y, x, dx, dim, float_dx=True)
    if x is not None:
        return dispatch(trapezoid_x, (y, x, dim))
    return dispatch(trapezoid_dx, (y, dx, dim))


def _cumulative_trapezoid_x(y, x, dim=-1):
    d = wrap_dim(dim, y.ndim)
    if y.dtype is _dtype.bool or x.dtype is _dtype.bool:
        raise RuntimeError("cumulative_trapezoid: received a bool input for `x` or `y`, but bool "
                           "is not supported")
    if y.ndim == 0:
        raise IndexError("slice() cannot be applied to a 0-dim tensor.")
    dx = _x_along(y, x, d, "cumulative_trapezoid")
    s = _along(y, d, slice(None, -1)) + _along(y, d, slice(1, None))
    return ((dx * s) / 2.).cumsum(d)


def _cumulative_trapezoid_dx(y, dx=1, dim=-1):
    if y.dtype is _dtype.bool:
        raise RuntimeError("cumulative_trapezoid: received a bool input for `y`, but bool is not "
                           "supported")
    dx = _check_dx(dx, "cumulative_trapezoid")
    if y.ndim == 0:
        raise IndexError("slice() cannot be applied to a 0-dim tensor.")
    d = wrap_dim(dim, y.ndim)
    s = _along(y, d, slice(None, -1)) + _along(y, d, slice(1, None))
    return (s * (dx / 2.)).cumsum(d)


cumulative_trapezoid_x = defop("cumulative_trapezoid.x(Tensor y, Tensor x, *, int dim=-1) -> "
                               "Tensor", composite=_cumulative_trapezoid_x, function=False,
                               method=False, out=False)
cumulative_trapezoid_dx = defop("cumulative_trapezoid.dx(Tensor y, *, Scalar dx=1, int dim=-1) "
                                "-> Tensor", composite=_cumulative_trapezoid_dx, function=False,
                                method=False, out=False)


@public("cumulative_trapezoid")
def cumulative_trapezoid(y, x=None, *, dx=None, dim=-1):
    """The running trapezoidal integral along ``dim`` (one fewer element along it)."""
    x, dx = _trapezoid_front("cumulative_trapezoid", y, x, dx, dim)
    if x is not None:
        return dispatch(cumulative_trapezoid_x, (y, x, dim))
    return dispatch(cumulative_trapezoid_dx, (y, dx, dim))


# -------------------------------------------------------------------- vander

vander = defop("vander(Tensor x, int? N=None, bool increasing=False) -> Tensor", K.vander,
               promote=None, method=False, out=False, saves=("x",))


@vander.def_backward
def _(ctx, g, x, N, increasing):
    n = ctx.shapes[0][0] if N is None else N
    if n <= 1:
        return (g * 0).sum(1)
    rdt = np.empty(0, g._data.dtype).real.dtype
    if increasing:   # d/dx x^k = k x^(k-1): columns 1.. against vander(x, n-1) increasing
        k = _const(np.arange(1, n, dtype=rdt))
        gk = _along(g, 1, slice(1, None))
    else:
        k = _const(np.arange(n - 1, 0, -1, dtype=rdt))
        gk = _along(g, 1, slice(None, -1))
    return (gk * k * conj_if_complex(vander(x, n - 1, increasing))).sum(1)


# -------------------------------------------------------------------- isin / isclose / equal

isin_op = defop("isin.Tensor_Tensor(Tensor elements, Tensor test_elements, *, "
                "bool assume_unique=False, bool invert=False) -> Tensor", K.isin, promote="bool",
                function=False, method=False)


_ISIN_SIGS = tuple(s + ", *, bool assume_unique = False, bool invert = False, Tensor out = None"
                   for s in ("Tensor elements, Tensor test_elements",
                             "Number element, Tensor test_elements",
                             "Tensor elements, Number test_element"))


@public("isin")
def isin(elements, test_elements, *, assume_unique=False, invert=False, out=None):
    """Whether each of ``elements`` is in ``test_elements`` (either may be a number)."""
    kinds = [isinstance(v, Tensor) or isinstance(v, (numbers.Number, np.generic))
             for v in (elements, test_elements)]
    if not all(kinds) or not (isinstance(elements, Tensor) or isinstance(test_elements, Tensor)):
        raise _bad_combination("isin", (elements, test_elements), [], _ISIN_SIGS)
    for v in (elements, test_elements):
        dt = v.dtype if isinstance(v, Tensor) else _dtype.scalar_dtype(v)
        if dt is _dtype.bool or dt.is_complex:
            raise RuntimeError(f"Unsupported input type encountered for isin(): "
                               f"{_dtype.scalar_type_name(dt)}")
    return dispatch(isin_op, (elements, test_elements, assume_unique, invert), out)


def _isclose_kernel(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    return K.isclose(a, b, rtol, atol, equal_nan, _dtype.default_float().np)


_isclose_kernel.__doc__ = K.isclose.__doc__
isclose = defop("isclose(Tensor self, Tensor other, float rtol=1e-05, float atol=1e-08, "
                "bool equal_nan=False) -> Tensor", _isclose_kernel, promote=None,
                out_dtype=_dtype.bool, out=False)


def _allclose(self, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    _check_tensor("allclose", "input", 1, self)
    _check_tensor("allclose", "other", 2, other)
    close = isclose(self, other, rtol, atol, equal_nan)
    return int(close.sum().item()) == close.numel()


allclose = defop("allclose(Tensor self, Tensor other, float rtol=1e-05, float atol=1e-08, "
                 "bool equal_nan=False) -> bool", composite=_allclose, out=False)


def _equal(self, other):
    _check_tensor("equal", "input", 1, self)
    _check_tensor("equal", "other", 2, other)
    if self.shape != other.shape:
        return False
    return int(ember.eq(self, other).sum().item()) == self.numel()


equal = defop("equal(Tensor self, Tensor other) -> bool", composite=_equal, out=False)


# -------------------------------------------------------------------- norms: dist, renorm

def _vector_norm(x, p, dims=None, keepdim=False):
    """The ``p``-norm of ``x`` over ``dims`` (all when None): ``linalg.vector_norm``."""
    from ember import linalg
    return linalg.vector_norm(x, p, None if dims is None else tuple(dims), keepdim)


def _dist(self, other, p=2):
    _check_tensor("dist", "input", 1, self)
    _check_tensor("dist", "other", 2, other)
    p = _scalar(p)
    if isinstance(p, complex):
        raise RuntimeError("linalg.vector_norm: Expected a non-complex scalar as the order of "
                           "norm.")
    K.broadcast_shape(self.shape, other.shape)
    d = self - other
    if not _is_float_or_complex(d):
        raise RuntimeError(f"norm(): input dtype should be either floating point or complex. "
                           f"Got {_dtype.scalar_type_name(d.dtype)} instead.")
    return _vector_norm(d, float(p))


dist = defop("dist(Tensor self, Tensor other, Scalar p=2) -> Tensor", composite=_dist, out=False)


def _renorm(self, p, dim, maxnorm, inplace=False):
    _check_tensor("renorm", "input", 1, self)
    p, maxnorm = _scalar(p), _scalar(maxnorm)
    if isinstance(p, complex):
        raise RuntimeError("renorm: p must be real-valued")
    if not p > 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    if isinstance(maxnorm, complex):
        raise RuntimeError("renorm: maxnorm must be real-valued")
    if not maxnorm >= 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {_fmt(maxnorm)}")
    if self.ndim <= 1:
        raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {self.ndim} "
                           f"dimensions")
    d = wrap_dim(dim, self.ndim)
    if not _is_float_or_complex(self):
        raise RuntimeError(f"linalg.vector_norm: Expected a floating point or complex tensor as "
                           f"input. Got {_dtype.scalar_type_name(self.dtype)}")
    dims = [i for i in range(self.ndim) if i != d]

    half = self.dtype in (_dtype.float16, _dtype.bfloat16)

    def scaled(x):      # torch: norm and factor in float32 for half x, the factor rounded
        norm = _vector_norm(x.float() if half else x, float(p), dims, keepdim=True)
        over = (norm > maxnorm).detach()
        factor = ember.where(over, maxnorm / (norm + 1e-7), 1.)
        return x * (factor.to(x.dtype) if half else factor)
    from ember.autograd.composite import record_as, record_inplace_as
    if inplace:
        return record_inplace_as("RenormBackward0", scaled, self)
    return record_as("RenormBackward0", scaled, self)


renorm = defop("renorm(Tensor self, Scalar p, int dim, Scalar maxnorm) -> Tensor",
               composite=_renorm)


@public("renorm_", method=True, function=False)
def renorm_(self, p, dim, maxnorm):
    """In-place ``renorm``."""
    return _renorm(self, p, dim, maxnorm, inplace=True)


# -------------------------------------------------------------------- *_copy of the view ops
# Each is the view op followed by a contiguous copy; the view ops of the shape family are
# looked up at call time (Tensor methods).

def _contiguous_copy(t):
    return clone(t, memory_format="contiguous_format")


def _copy_op(schema, fn, **opts):
    """Register ``fn`` as a composite record unless another family already defined it."""
    name = schema.partition("(")[0]
    if name in OPS:
        return OPS[name]
    return defop(schema, composite=fn, method=opts.pop("method", False), **opts)


def _slice_copy(self, dim=0, start=None, end=None, step=1):
    if self.ndim == 0:
        raise IndexError("slice() cannot be applied to a 0-dim tensor.")
    if step <= 0:
        raise RuntimeError("slice step must be positive")
    return _contiguous_copy(_along(self, wrap_dim(dim, self.ndim), slice(start, end, step)))


def _unsqueeze_copy(self, dim):
    return _contiguous_copy(unsqueeze(self, dim))


view_copy = _copy_op("view_copy(Tensor self, SymInt[] size) -> Tensor",
                     lambda self, size: _contiguous_copy(reshape(self, size)), function=False)
view_copy_dtype = _copy_op("view_copy.dtype(Tensor self, ScalarType dtype) -> Tensor",
                           lambda self, dtype: _contiguous_copy(self.view(dtype)),
                           function=False)


@public("view_copy")
def view_copy_front(input, size, *, out=None):
    """A copy of ``input.view(size)`` (or of ``input.view(dtype)``)."""
    if isinstance(size, _dtype.dtype):
        return dispatch(view_copy_dtype, (input, size), out)
    if not isinstance(size, (tuple, list)):
        raise _bad_combination("view_copy", (input, size), [],
                               ("Tensor input, torch.dtype dtype, *, Tensor out = None",
                                "Tensor input, tuple of ints size, *, Tensor out = None"))
    return dispatch(view_copy, (input, tuple(size)), out)


_copy_op("expand_copy(Tensor self, SymInt[] size, *, bool implicit=False) -> Tensor",
         lambda self, size, implicit=False: _contiguous_copy(expand(self, size, implicit)))
_copy_op("permute_copy(Tensor self, int[] dims) -> Tensor",
         lambda self, dims: _contiguous_copy(permute(self, dims)))
_copy_op("transpose_copy.int(Tensor self, int dim0, int dim1) -> Tensor",
         lambda self, dim0, dim1: _contiguous_copy(transpose(self, dim0, dim1)))
_copy_op("t_copy(Tensor self) -> Tensor", lambda self: _contiguous_copy(self.t()))
_copy_op("unsqueeze_copy(Tensor self, int dim) -> Tensor", _unsqueeze_copy)
_copy_op("squeeze_copy(Tensor self, int[1]? dim=None) -> Tensor",
         lambda self, dim=None: _contiguous_copy(squeeze(self, dim)))
_copy_op("diagonal_copy(Tensor self, int offset=0, int dim1=0, int dim2=1) -> Tensor",
         lambda self, offset=0, dim1=0, dim2=1:
         _contiguous_copy(self.diagonal(offset, dim1, dim2)))
_copy_op("select_copy.int(Tensor self, int dim, SymInt index) -> Tensor",
         lambda self, dim, index: _contiguous_copy(self.select(dim, index)))
_copy_op("slice_copy.Tensor(Tensor self, int dim=0, SymInt? start=None, SymInt? end=None, "
         "SymInt step=1) -> Tensor", _slice_copy)
_copy_op("unfold_copy(Tensor self, int dimension, int size, int step) -> Tensor",
         lambda self, dimension, size, step: _contiguous_copy(self.unfold(dimension, size, step)))
_copy_op("alias_copy(Tensor self) -> Tensor", _contiguous_copy)
_copy_op("as_strided_copy(Tensor self, SymInt[] size, SymInt[] stride, "
         "SymInt? storage_offset=None) -> Tensor",
         lambda self, size, stride, storage_offset=None:
         _contiguous_copy(self.as_strided(size, stride, storage_offset)))
_copy_op("detach_copy(Tensor self) -> Tensor", lambda self: _contiguous_copy(self.detach()))
_copy_op("unbind_copy.int(Tensor self, int dim=0) -> Tensor[]",
         lambda self, dim=0: tuple(_contiguous_copy(t) for t in self.unbind(dim)))
_copy_op("split_copy.Tensor(Tensor self, SymInt split_size, int dim=0) -> Tensor[]",
         lambda self, split_size, dim=0:
         tuple(_contiguous_copy(t) for t in self.split(split_size, dim)))
_copy_op("split_with_sizes_copy(Tensor self, SymInt[] split_sizes, int dim=0) -> Tensor[]",
         lambda self, split_sizes, dim=0:
         tuple(_contiguous_copy(t) for t in self.split(list(split_sizes), dim)))
