"""Op database entries for the numerical ops (ember/_ops/numeric.py): diff, gradient,
trapezoid/trapz, cumulative_trapezoid, vander, isin, isclose, allclose, equal, dist, renorm
and the *_copy variants of the view ops."""
import math

import numpy as np
import scipy.integrate

import ember
from opinfo import OpInfo, SampleInput, ErrorInput, make_arg, FLOATS, INTS, ALL_REAL, COMPLEX

_INF = math.inf
_NOT_UINT8 = ("int64", "int32", "int16", "int8")


def _as_float(x):
    """Integer/bool samples in float64 for references that should not wrap or truncate."""
    return x.astype(np.float64) if x.dtype.kind in "biu" else x


def _sorted_coords(n, dtype, rng):
    """Strictly increasing sample points (integers for integer dtypes)."""
    if dtype in INTS:
        return np.cumsum(rng.integers(1, 3, n)).astype(dtype)
    real = "float64" if dtype in COMPLEX or dtype == "bool" else dtype
    return np.cumsum(rng.uniform(0.5, 2.0, n)).astype(real)


# -------------------------------------------------------------------- diff

def _diff_samples(dtype, rng):
    x = make_arg((3, 4), dtype, rng)
    return [SampleInput(x), SampleInput(x, (2,)), SampleInput(x, (1, 0)),
            SampleInput(x, (1, -1, make_arg((3, 1), dtype, rng), make_arg((3, 2), dtype, rng)),
                        name="prepend_append"),
            SampleInput(x, (2, 0, make_arg((2, 4), dtype, rng)), name="prepend"),
            SampleInput(x, (1, 0, None, make_arg((1, 4), dtype, rng)), name="append"),
            SampleInput(x, (0, -1, make_arg((3, 1), dtype, rng)), name="n0"),
            SampleInput(x, (6,), name="n_large"),
            SampleInput(make_arg((5,), dtype, rng), (3,)),
            SampleInput(make_arg((2, 3, 4), dtype, rng), (1, 1)),
            SampleInput(make_arg((3, 4), dtype, rng, noncontiguous=True), name="noncontig"),
            SampleInput(make_arg((0, 3), dtype, rng), (1, 0), name="empty")]


def _diff_ref(x, n=1, dim=-1, prepend=None, append=None):
    kw = {k: v for k, v in (("prepend", prepend), ("append", append)) if v is not None}
    return np.diff(x, n, dim, **kw)


def _diff_errors(rng):
    x = make_arg((3, 4), "float32", rng)
    return [ErrorInput(SampleInput(make_arg((), "float32", rng)), RuntimeError,
                       "diff expects input to be at least one-dimensional"),
            ErrorInput(SampleInput(x, (-1,)), RuntimeError, "order must be non-negative but "
                       "got -1"),
            ErrorInput(SampleInput(x, (1, -1, make_arg((3,), "float32", rng))), RuntimeError,
                       "diff expects prepend or append to be the same dimension as input"),
            ErrorInput(SampleInput(x, (1, -1, None, make_arg((2, 1), "float32", rng))),
                       RuntimeError, r"input.size\(0\) = 3, but got tensor.size\(0\) = 2"),
            ErrorInput(SampleInput(x, (1, 2)), IndexError, "Dimension out of range"),
            ErrorInput(SampleInput(x, (), {"prepend": 1.0}), TypeError,
                       "argument 'prepend' must be Tensor, not float")]


# -------------------------------------------------------------------- gradient

def _gradient_samples(dtype, rng):
    x = make_arg((3, 4), dtype, rng)
    c0, c1 = _sorted_coords(3, dtype, rng), _sorted_coords(4, dtype, rng)
    h = 2 if dtype in INTS else 2.5
    return [SampleInput(x), SampleInput(x, (), {"dim": 1}), SampleInput(x, (), {"dim": (1, 0)}),
            SampleInput(x, (), {"spacing": h}),
            SampleInput(x, (), {"spacing": [h, 0.5]}),
            SampleInput(x, (), {"spacing": (c0, c1)}, name="coords"),
            SampleInput(x, (), {"spacing": [c1], "dim": 1}, name="coords_dim"),
            SampleInput(x, (), {"edge_order": 2}),
            SampleInput(x, (), {"spacing": [c0, c1], "edge_order": 2}, name="coords_edge2"),
            SampleInput(x, (), {"spacing": 0.5, "dim": [-1], "edge_order": 2}),
            SampleInput(make_arg((5,), dtype, rng)),
            SampleInput(make_arg((2, 3, 3), dtype, rng), (), {"dim": (0, 2)}),
            SampleInput(make_arg((3, 4), dtype, rng, noncontiguous=True), name="noncontig"),
            SampleInput(make_arg((), dtype, rng), name="scalar")]


def _gradient_ref(x, spacing=1, dim=None, edge_order=1):
    if x.ndim == 0:
        return ()
    axes = tuple(range(x.ndim)) if dim is None else \
        ((dim,) if isinstance(dim, int) else tuple(dim))
    sp = list(spacing) if isinstance(spacing, (list, tuple)) else [spacing] * len(axes)
    sp = [_as_float(s) if isinstance(s, np.ndarray) else s for s in sp]
    r = np.gradient(_as_float(x), *sp, axis=axes, edge_order=edge_order)
    return tuple(r) if isinstance(r, (list, tuple)) else (r,)


def _gradient_errors(rng):
    x = make_arg((3, 4), "float32", rng)
    return [ErrorInput(SampleInput(make_arg((3, 4), "uint8", rng)), RuntimeError,
                       "torch.gradient does not support uint8 input."),
            ErrorInput(SampleInput(x, (), {"edge_order": 3}), RuntimeError,
                       "only supports edge_order=1 and edge_order=2"),
            ErrorInput(SampleInput(x, (), {"spacing": [2.0]}), RuntimeError,
                       r"list of length equal to 'self.dim\(\) = 2'"),
            ErrorInput(SampleInput(x, (), {"spacing": [1.0, 2.0], "dim": [1]}), RuntimeError,
                       "spacing argument of length 2 and a dim argument of length 1"),
            ErrorInput(SampleInput(x[:2], (), {"edge_order": 2}), RuntimeError,
                       r"each dimension size to be at least edge_order\+1"),
            ErrorInput(SampleInput(x, (), {"dim": (0, 0)}), RuntimeError,
                       "appears multiple times"),
            ErrorInput(SampleInput(x, (), {"dim": 2}), IndexError, "Dimension out of range"),
            ErrorInput(SampleInput(x, (), {"spacing": [np.array(2.0)], "dim": 0}), RuntimeError,
                       "each element of spacing to have one dimension"),
            ErrorInput(SampleInput(x, (), {"spacing": [1.0, np.ones(4)]}), TypeError,
                       "expected Tensor as element 0"),
            ErrorInput(SampleInput(make_arg((3,), "bool", rng)), RuntimeError,
                       "Subtraction, the `-` operator, with")]


# -------------------------------------------------------------------- trapezoid

def _points(shape, dtype, rng):
    """Sample points along the last dim: random, or increasing small integers for integer
    dtypes (torch computes x[1:] - x[:-1] and the products in the integer dtype)."""
    if dtype in INTS:
        return np.cumsum(rng.integers(0, 3, shape), axis=-1).astype(dtype)
    return make_arg(shape, dtype, rng)


def _trapezoid_samples(dtype, rng):
    y = make_arg((3, 4), dtype, rng)
    dx = 2 if dtype in INTS else 2.5
    return [SampleInput(y), SampleInput(y, (_sorted_coords(4, dtype, rng),), name="x1d"),
            SampleInput(y, (_points((3, 4), dtype, rng),), name="x_full"),
            SampleInput(y, (_points((1, 4), dtype, rng),), name="x_broadcast"),
            SampleInput(y, (), {"dx": dx}),
            SampleInput(y, (), {"dx": dx, "dim": 0}),
            SampleInput(y, (_sorted_coords(3, dtype, rng),), {"dim": 0}, name="x1d_dim0"),
            SampleInput(make_arg((5,), dtype, rng)),
            SampleInput(make_arg((2, 3, 4), dtype, rng), (), {"dim": 1}),
            SampleInput(make_arg((3, 4), dtype, rng, noncontiguous=True), name="noncontig"),
            SampleInput(make_arg((2, 0), dtype, rng), name="empty_dim"),
            SampleInput(make_arg((0, 3), dtype, rng), name="empty")]


def _trapezoid_ref(y, x=None, dx=None, dim=-1):
    if x is not None:
        return np.asarray(np.trapezoid(_as_float(y), _as_float(x), axis=dim))
    return np.asarray(np.trapezoid(_as_float(y), dx=1.0 if dx is None else dx, axis=dim))


def _trapezoid_errors(name):
    def gen(rng):
        y = make_arg((3, 4), "float32", rng)
        errs = [ErrorInput(SampleInput(y > 0), RuntimeError,
                           "received a bool input for `y`, but bool is not supported"),
                ErrorInput(SampleInput(y, (y > 0,)), RuntimeError,
                           "received a bool input for `x` or `y`"),
                ErrorInput(SampleInput(y, (make_arg((3,), "float32", rng),)), RuntimeError,
                           "There must be one `x` value for each sample point"),
                ErrorInput(SampleInput(y, (y,), {"dx": 1}), TypeError,
                           "received an invalid combination of arguments"),
                ErrorInput(SampleInput(y, (), {"dim": 2}), IndexError, "Dimension out of range")]
        if name == "trapz":
            errs.append(ErrorInput(SampleInput(y, (), {"dx": 1j}), TypeError,
                                   "received an invalid combination of arguments"))
        else:
            errs.append(ErrorInput(SampleInput(y, (), {"dx": 1j}), RuntimeError,
                                   "only support dx as a real number"))
            errs.append(ErrorInput(SampleInput(y, (), {"dx": True}), RuntimeError,
                                   "only support dx as a real number"))
        if name == "cumulative_trapezoid":
            errs.append(ErrorInput(SampleInput(make_arg((), "float32", rng)), IndexError,
                                   "slice\\(\\) cannot be applied to a 0-dim tensor"))
        else:
            errs.append(ErrorInput(SampleInput(make_arg((), "float32", rng)), IndexError,
                                   "Dimension specified as -1 but tensor has no dimensions"))
        return errs
    return gen


def _cumulative_trapezoid_samples(dtype, rng):
    return [s for s in _trapezoid_samples(dtype, rng) if s.name != "empty_dim"]


def _cumulative_trapezoid_ref(y, x=None, dx=None, dim=-1):
    if x is not None:
        return scipy.integrate.cumulative_trapezoid(_as_float(y), _as_float(x), axis=dim)
    return scipy.integrate.cumulative_trapezoid(_as_float(y), dx=1.0 if dx is None else dx,
                                                axis=dim)


# -------------------------------------------------------------------- vander

def _vander_samples(dtype, rng):
    x = make_arg((4,), dtype, rng)
    return [SampleInput(x), SampleInput(x, (2, True)), SampleInput(x, (0,)),
            SampleInput(x, (), {"N": 6}), SampleInput(x, (), {"N": 5, "increasing": True}),
            SampleInput(make_arg((3,), dtype, rng), (1,)),
            SampleInput(make_arg((5,), dtype, rng, noncontiguous=True), name="noncontig"),
            SampleInput(make_arg((0,), dtype, rng), name="empty")]


def _vander_ref(x, N=None, increasing=False):
    return np.vander(x.astype(np.int64) if x.dtype.kind in "biu" else x, N, increasing)


def _vander_errors(rng):
    return [ErrorInput(SampleInput(make_arg((2, 2), "float32", rng)), RuntimeError,
                       "x must be a one-dimensional tensor."),
            ErrorInput(SampleInput(make_arg((), "float32", rng)), RuntimeError,
                       "x must be a one-dimensional tensor."),
            ErrorInput(SampleInput(make_arg((3,), "float32", rng), (-1,)), RuntimeError,
                       "N must be non-negative.")]


# -------------------------------------------------------------------- isin

def _isin_samples(dtype, rng):
    lo = 0 if dtype == "uint8" else -5
    e = rng.integers(lo, lo + 10, (3, 4)).astype(dtype)
    t = rng.integers(lo, lo + 10, (5,)).astype(dtype)
    return [SampleInput(e, (t,)), SampleInput(e, (t.reshape(5, 1),), name="test_2d"),
            SampleInput(e, (t,), {"invert": True}),
            SampleInput(e, (np.unique(t),), {"assume_unique": True}),
            SampleInput(e, (3,), name="scalar_test"),
            SampleInput(3, (t,), name="scalar_element"),
            SampleInput(e[:, 0].copy(), (t[:1].reshape(()),), name="zero_dim_test"),
            SampleInput(e, (np.zeros((0,), dtype),), name="empty_test")]


def _isin_ref(e, t, assume_unique=False, invert=False):
    return np.asarray(np.isin(e, t, assume_unique=assume_unique, invert=invert))


def _isin_errors(rng):
    x = make_arg((3,), "int64", rng)
    return [ErrorInput(SampleInput(x > 0, (x,)), RuntimeError,
                       "Unsupported input type encountered for isin\\(\\): Bool"),
            ErrorInput(SampleInput(x, (True,)), RuntimeError,
                       "Unsupported input type encountered for isin\\(\\): Bool"),
            ErrorInput(SampleInput(make_arg((3,), "complex64", rng), (x,)), RuntimeError,
                       "Unsupported input type encountered for isin\\(\\): ComplexFloat"),
            ErrorInput(SampleInput(3, (3,)), TypeError,
                       "received an invalid combination of arguments")]


# -------------------------------------------------------------------- isclose / allclose / equal

def _close_pair(dtype, rng, shape=(3, 4)):
    a = make_arg(shape, dtype, rng)
    if dtype == "bool":
        return a, make_arg(shape, dtype, rng)
    if dtype in INTS:
        return a, (a + rng.integers(0, 2, shape)).astype(dtype)
    b = a.copy()
    flat = b.reshape(-1)
    flat[0::3] += 1                       # far apart
    flat[1::3] += flat[1::3] * 1e-6       # within rtol
    if a.size >= 6:
        a.reshape(-1)[2] = flat[2] = np.nan
        a.reshape(-1)[5] = flat[5] = np.inf
    return a, b


def _isclose_samples(dtype, rng):
    a, b = _close_pair(dtype, rng)
    return [SampleInput(a, (b,)), SampleInput(a, (b,), {"equal_nan": True}),
            SampleInput(a, (b,), {"rtol": 0.25, "atol": 0.5}),
            SampleInput(a, (b, 0.0, 0.0), name="zero_tol"),
            SampleInput(a, (b[0].copy(),), name="broadcast"),
            SampleInput(make_arg((), dtype, rng), (make_arg((), dtype, rng),), name="scalar")]


def _isclose_ref(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    return np.asarray(np.isclose(a, b, rtol, atol, equal_nan))


def _close_errors(name):
    def gen(rng):
        x = make_arg((3,), "float32", rng)
        errs = [ErrorInput(SampleInput(x, (x.astype(np.float64),)), RuntimeError,
                           "Float did not match Double"),
                ErrorInput(SampleInput(x, (2.0,)), TypeError,
                           f"{name}\\(\\): argument 'other' \\(position 2\\) must be Tensor, not "
                           f"float"),
                ErrorInput(SampleInput(x, (x, -1)), RuntimeError,
                           "rtol must be greater than or equal to zero, but got -1"),
                ErrorInput(SampleInput(x, (x, 0.0, -0.5)), RuntimeError,
                           "atol must be greater than or equal to zero, but got -0.5"),
                ErrorInput(SampleInput(x, (make_arg((2,), "float32", rng),)), RuntimeError,
                           "must match the size of tensor b")]
        return errs
    return gen


def _allclose_ref(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    return bool(np.allclose(a, b, rtol, atol, equal_nan))


def _equal_samples(dtype, rng):
    a, b = _close_pair(dtype, rng)
    c = make_arg((3, 4), dtype, rng)
    out = [SampleInput(c, (c.copy(),), name="same"), SampleInput(a, (b,)),
           SampleInput(c, (c[:2].copy(),), name="shape"),
           SampleInput(c, (c.reshape(1, 3, 4).copy(),), name="ndim"),
           SampleInput(c[0].copy(), (c[0].astype(np.complex128 if dtype in COMPLEX else
                                                  np.float64),), name="dtypes"),
           SampleInput(make_arg((), dtype, rng), (make_arg((), dtype, rng),), name="scalar")]
    if dtype in FLOATS:
        n = c.copy()
        n[0, 0] = np.nan
        out.append(SampleInput(n, (n.copy(),), name="nan"))
    return out


def _equal_ref(a, b):
    return a.shape == b.shape and bool(np.array_equal(a, b))


def _equal_errors(rng):
    x = make_arg((3,), "float32", rng)
    return [ErrorInput(SampleInput(x, (1.0,)), TypeError,
                       "equal\\(\\): argument 'other' \\(position 2\\) must be Tensor, not float")]


# -------------------------------------------------------------------- dist / renorm

def _dist_samples(dtype, rng):
    a, b = make_arg((3, 4), dtype, rng), make_arg((3, 4), dtype, rng)
    out = [SampleInput(a, (b,)), SampleInput(a, (make_arg((4,), dtype, rng),), name="bcast")]
    out += [SampleInput(a, (b, p), name=f"p={p}") for p in (1, 0, 3.5, _INF, -_INF, 0.5, -1.5)]
    out.append(SampleInput(make_arg((), dtype, rng), (make_arg((), dtype, rng),),
                           name="scalar"))
    return out


def _dist_ref(a, b, p=2):
    return np.asarray(np.linalg.norm((a - b).reshape(-1), ord=p))


def _dist_errors(rng):
    x = make_arg((3,), "float32", rng)
    xi = make_arg((3,), "int64", rng)
    return [ErrorInput(SampleInput(xi, (xi,)), RuntimeError,
                       "norm\\(\\): input dtype should be either floating point or complex. "
                       "Got Long instead."),
            ErrorInput(SampleInput(x, (2.0,)), TypeError,
                       "dist\\(\\): argument 'other' \\(position 2\\) must be Tensor, not float"),
            ErrorInput(SampleInput(x, (x, 1j)), RuntimeError,
                       "Expected a non-complex scalar as the order of norm"),
            ErrorInput(SampleInput(x, (make_arg((2,), "float32", rng),)), RuntimeError,
                       "must match the size of tensor b")]


def _slice_norms(x, p, dim):
    d = dim % x.ndim
    axes = tuple(i for i in range(x.ndim) if i != d)
    a = np.abs(x).astype(np.float64)
    if p == _INF:
        return a.max(axis=axes, keepdims=True)
    return (a ** p).sum(axis=axes, keepdims=True) ** (1.0 / p)


def _renorm_samples(dtype, rng):
    out = []
    for shape, p, dim in [((3, 4), 2, 0), ((3, 4), 1, 1), ((4, 3), _INF, 0),
                          ((2, 3, 2), 3, -1), ((3, 5), 0.5, 0)]:
        x = make_arg(shape, dtype, rng)
        n = np.sort(_slice_norms(x, p, dim).reshape(-1))
        k = len(n) // 2
        maxnorm = float((n[k - 1] + n[k]) / 2)           # some slices scaled, some not
        out.append(SampleInput(x, (p, dim, maxnorm), name=f"p={p}"))
    x = make_arg((3, 4), dtype, rng)
    out.append(SampleInput(x, (2, 1, 1e3), name="none_scaled"))
    return out


def _renorm_ref(x, p, dim, maxnorm):
    n = _slice_norms(x, p, dim)
    return x * np.where(n > maxnorm, maxnorm / (n + 1e-7), 1.0)


def _renorm_errors(rng):
    x = make_arg((3, 4), "float32", rng)
    return [ErrorInput(SampleInput(x, (0, 0, 1.0)), RuntimeError,
                       "renorm: non-positive-norm not supported"),
            ErrorInput(SampleInput(x, (-1, 0, 1.0)), RuntimeError,
                       "renorm: non-positive-norm not supported"),
            ErrorInput(SampleInput(x, (2, 0, -5)), RuntimeError,
                       "renorm: expected maxnorm to be >= 0 but got -5"),
            ErrorInput(SampleInput(x, (2j, 0, 1.0)), RuntimeError,
                       "renorm: p must be real-valued"),
            ErrorInput(SampleInput(x, (2, 0, 1j)), RuntimeError,
                       "renorm: maxnorm must be real-valued"),
            ErrorInput(SampleInput(x[0].copy(), (2, 0, 1.0)), RuntimeError,
                       "renorm: input needs at least 2 dimensions, got 1 dimensions"),
            ErrorInput(SampleInput(make_arg((3, 4), "int64", rng), (2, 0, 1.0)), RuntimeError,
                       "Expected a floating point or complex tensor as input. Got Long"),
            ErrorInput(SampleInput(x, (2, 2, 1.0)), IndexError, "Dimension out of range")]


# -------------------------------------------------------------------- *_copy of the view ops

def _samples(*specs):
    """Sample generator from (shape, args, kwargs) specs, plus a non-contiguous one."""
    def gen(dtype, rng):
        out = [SampleInput(make_arg(shape, dtype, rng), args, kw) for shape, args, kw in specs]
        shape, args, kw = specs[0]
        if len(shape) >= 1:
            out.append(SampleInput(make_arg(shape, dtype, rng, noncontiguous=True), args, kw,
                                   name="noncontig"))
        return out
    return gen


def _view_copy_samples(dtype, rng):
    out = _samples(((2, 3, 4), ((6, 4),), {}), ((2, 3, 4), ((-1,),), {}),
                   ((2, 3, 4), ((4, -1, 2),), {}), ((), ((1, 1),), {}))(dtype, rng)
    same_size = {"float32": ember.int32, "int32": ember.float32, "float64": ember.int64,
                 "int64": ember.float64}
    if dtype in same_size:
        out.append(SampleInput(make_arg((2, 3), dtype, rng), (same_size[dtype],), name="dtype"))
    return out


def _view_copy_ref(x, size):
    if isinstance(size, ember.dtype):
        return x.view(size.np).copy()
    return np.reshape(x, size).copy()


def _resolve(size, shape):
    lead = len(size) - len(shape)
    return tuple(shape[i - lead] if s == -1 else s for i, s in enumerate(size))


def _squeeze_ref(x, dim=None):
    if dim is None:
        return np.squeeze(x)
    dims = (dim,) if isinstance(dim, int) else dim
    return np.squeeze(x, tuple(d % x.ndim for d in dims if x.shape[d] == 1))


def _slice_ref(x, dim=0, start=None, end=None, step=1):
    return x[(slice(None),) * (dim % x.ndim) + (slice(start, end, step),)].copy()


def _unfold_ref(x, dim, size, step):
    d = dim % max(x.ndim, 1)
    w = np.lib.stride_tricks.sliding_window_view(x, size, axis=d)
    return np.moveaxis(np.moveaxis(w, d, 0)[::step], 0, d).copy()


def _as_strided_ref(x, size, stride, offset=0):
    flat = np.ascontiguousarray(x).reshape(-1)[offset or 0:]
    return np.lib.stride_tricks.as_strided(flat, size, [s * x.itemsize for s in stride]).copy()


def _split_ref(x, split_size, dim=0):
    n = x.shape[dim]
    return tuple(np.split(x, list(range(split_size, n, split_size)), axis=dim))


def _split_sizes_ref(x, sizes, dim=0):
    return tuple(np.split(x, list(np.cumsum(sizes)[:-1]), axis=dim))


def _copy_errors(name):
    def gen(rng):
        x = make_arg((3, 4), "float32", rng)
        return {
            "view_copy": [ErrorInput(SampleInput(x, ((5, 2),)), RuntimeError,
                                     "is invalid for input of size 12")],
            "slice_copy": [ErrorInput(SampleInput(x, (1, 0, 3, 0)), RuntimeError,
                                      "slice step must be positive"),
                           ErrorInput(SampleInput(make_arg((), "float32", rng)), IndexError,
                                      "slice\\(\\) cannot be applied to a 0-dim tensor"),
                           ErrorInput(SampleInput(x, (2,)), IndexError,
                                      "Dimension out of range")],
            "select_copy": [ErrorInput(SampleInput(x, (1, 5)), IndexError,
                                       "index 5 out of range")],
            "t_copy": [ErrorInput(SampleInput(make_arg((2, 2, 2), "float32", rng)),
                                  RuntimeError, "expects a tensor with <= 2 dimensions")],
        }[name]
    return gen


def _copy_info(name, ref, samples, record=None, **kw):
    return OpInfo(name, ref, samples, dtypes=kw.pop("dtypes", ALL_REAL), method=False,
                  supports_out=kw.pop("supports_out", True),
                  op_records=kw.pop("op_records", (record or name,)), **kw)


COPY_OPS = [
    _copy_info("view_copy", _view_copy_ref, _view_copy_samples,
               op_records=("view_copy", "view_copy.dtype"), error_inputs=_copy_errors("view_copy")),
    _copy_info("expand_copy", lambda x, s, implicit=False: np.broadcast_to(
        x, _resolve(s, x.shape)).copy(),
        _samples(((3, 1), ((2, 3, 4),), {}), ((3, 1), ((-1, 5),), {}), ((), ((2,),), {}))),
    _copy_info("permute_copy", lambda x, d: np.transpose(x, d).copy(),
               _samples(((2, 3, 4), ((2, 0, 1),), {}), ((2, 3), ((-1, 0),), {}))),
    _copy_info("transpose_copy", lambda x, a, b: np.swapaxes(x, a, b).copy(),
               _samples(((2, 3, 4), (0, 2), {}), ((3, 4), (-1, 0), {})),
               record="transpose_copy.int"),
    _copy_info("t_copy", lambda x: x.T.copy(),
               _samples(((3, 4), (), {}), ((4,), (), {}), ((), (), {})),
               error_inputs=_copy_errors("t_copy")),
    _copy_info("unsqueeze_copy", lambda x, d: np.expand_dims(x, d).copy(),
               _samples(((3, 4), (1,), {}), ((3, 4), (-1,), {}), ((), (0,), {}))),
    _copy_info("squeeze_copy", _squeeze_ref,
               _samples(((1, 3, 1, 4), (), {}), ((1, 3, 1, 4), (0,), {}),
                        ((1, 3, 1, 4), ((0, 2),), {}), ((1, 3, 1, 4), (1,), {}))),
    _copy_info("diagonal_copy", lambda x, o=0, a=0, b=1: np.diagonal(x, o, a, b).copy(),
               _samples(((3, 4), (), {}), ((3, 4), (1,), {}), ((3, 4), (-1, 1, 0), {}),
                        ((2, 3, 4), (0, 1, 2), {}))),
    _copy_info("select_copy", lambda x, d, i: np.take(x, i, axis=d),
               _samples(((3, 4), (1, 2), {}), ((2, 3, 4), (0, -1), {})),
               record="select_copy.int", error_inputs=_copy_errors("select_copy")),
    _copy_info("slice_copy", _slice_ref,
               _samples(((3, 4), (1, 1, 3), {}), ((3, 4), (), {}), ((3, 4), (0, None, None, 2), {}),
                        ((3, 5), (1, -10, 10, 2), {}), ((3, 4), (-1, 1), {})),
               record="slice_copy.Tensor", error_inputs=_copy_errors("slice_copy")),
    _copy_info("unfold_copy", _unfold_ref,
               _samples(((3, 4), (1, 2, 1), {}), ((5, 2), (0, 2, 2), {}),
                        ((3, 4), (-1, 3, 1), {}))),
    _copy_info("alias_copy", lambda x: x.copy(), _samples(((3, 4), (), {}), ((), (), {}))),
    _copy_info("as_strided_copy", _as_strided_ref,
               lambda dtype, rng: [SampleInput(make_arg((3, 4), dtype, rng), ((2, 2), (1, 2))),
                                   SampleInput(make_arg((3, 4), dtype, rng), ((2, 3), (4, 1), 1)),
                                   SampleInput(make_arg((3, 4), dtype, rng), ((3,), (0,)))]),
    _copy_info("detach_copy", lambda x: x.copy(), _samples(((3, 4), (), {})),
               supports_grad=False),
    _copy_info("unbind_copy", lambda x, d=0: tuple(np.moveaxis(x, d, 0)),
               _samples(((3, 4), (), {}), ((3, 4), (1,), {}), ((2, 3, 4), (-1,), {})),
               record="unbind_copy.int", supports_out=False),
    _copy_info("split_copy", _split_ref,
               _samples(((5, 4), (2,), {}), ((3, 4), (3, 1), {}), ((3, 4), (1, -1), {})),
               record="split_copy.Tensor", supports_out=False),
    _copy_info("split_with_sizes_copy", _split_sizes_ref,
               _samples(((3, 4), ([1, 3], 1), {}), ((5, 2), ([2, 0, 3],), {})),
               supports_out=False),
]


OPS = [
    OpInfo("diff", _diff_ref, _diff_samples, dtypes=ALL_REAL + COMPLEX, supports_out=True,
           error_inputs=_diff_errors, op_records=("diff",)),
    OpInfo("gradient", _gradient_ref, _gradient_samples, dtypes=FLOATS + _NOT_UINT8 + COMPLEX,
           method=False, error_inputs=_gradient_errors, atol=1e-4, rtol=1e-5,
           op_records=("gradient.scalararray", "gradient.tensorarray")),
    OpInfo("trapezoid", _trapezoid_ref, _trapezoid_samples, dtypes=FLOATS + INTS + COMPLEX,
           method=False, error_inputs=_trapezoid_errors("trapezoid"), atol=1e-4, rtol=1e-5,
           op_records=("trapezoid.x", "trapezoid.dx")),
    OpInfo("trapz", _trapezoid_ref, _trapezoid_samples, dtypes=FLOATS + INTS + COMPLEX,
           method=False, error_inputs=_trapezoid_errors("trapz"), atol=1e-4, rtol=1e-5,
           op_records=("trapezoid.x", "trapezoid.dx")),
    OpInfo("cumulative_trapezoid", _cumulative_trapezoid_ref, _cumulative_trapezoid_samples,
           dtypes=FLOATS + INTS + COMPLEX, method=False, atol=1e-4, rtol=1e-5,
           error_inputs=_trapezoid_errors("cumulative_trapezoid"),
           op_records=("cumulative_trapezoid.x", "cumulative_trapezoid.dx")),
    OpInfo("vander", _vander_ref, _vander_samples, dtypes=ALL_REAL + COMPLEX, method=False,
           error_inputs=_vander_errors, atol=1e-4, rtol=1e-5, op_records=("vander",)),
    OpInfo("isin", _isin_ref, _isin_samples, dtypes=FLOATS + INTS, method=False,
           supports_out=True, supports_grad=False, error_inputs=_isin_errors,
           op_records=("isin.Tensor_Tensor",)),
    OpInfo("isclose", _isclose_ref, _isclose_samples, dtypes=ALL_REAL + COMPLEX,
           supports_grad=False, error_inputs=_close_errors("isclose"), op_records=("isclose",)),
    OpInfo("allclose", _allclose_ref, _isclose_samples, dtypes=ALL_REAL + COMPLEX,
           supports_grad=False, error_inputs=_close_errors("allclose"),
           op_records=("allclose",)),
    OpInfo("equal", _equal_ref, _equal_samples, dtypes=ALL_REAL + COMPLEX, supports_grad=False,
           error_inputs=_equal_errors, op_records=("equal",)),
    OpInfo("dist", _dist_ref, _dist_samples, dtypes=FLOATS + COMPLEX,
           grad_dtypes=("float64", "complex128"), error_inputs=_dist_errors, atol=1e-4,
           rtol=1e-5, op_records=("dist",)),
    OpInfo("renorm", _renorm_ref, _renorm_samples, dtypes=FLOATS + COMPLEX, inplace="renorm_",
           supports_out=True, grad_dtypes=("float64", "complex128"), error_inputs=_renorm_errors,
           atol=1e-5, rtol=1e-5, op_records=("renorm",)),
] + COPY_OPS
