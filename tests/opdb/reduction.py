"""Op database entries for the reductions, scans and softmax (ember/_ops/reduction.py)."""
import re

import numpy as np

import ember
from opinfo import OpInfo, SampleInput, ErrorInput, make_arg, FLOATS, INTS, ALL_REAL, COMPLEX

E = re.escape
TOL = dict(atol=1e-4, rtol=1e-5)
GRAD_C = ("float64", "complex128")


def _axis(x, dim):
    """NumPy axis for a torch ``dim`` (None: all; a 0-d input reduces to itself)."""
    if dim is None or x.ndim == 0:
        return None
    if isinstance(dim, (tuple, list)):
        return tuple(d % x.ndim for d in dim) if len(dim) else None
    return dim % x.ndim


def _np_dt(d):
    return None if d is None else np.dtype(d.np)


def _acc_dtype(x):
    return np.int64 if x.dtype.kind in "biu" else x.dtype


def _distinct(shape, dtype, rng, low=-9, high=9):
    """Values without ties (a permutation), so gradients and indices are well defined."""
    n = int(np.prod(shape))
    if dtype == "bool":
        return make_arg(shape, dtype, rng)
    if dtype in INTS:
        lo = 0 if dtype == "uint8" else -n // 2
        return (rng.permutation(n) + lo).reshape(shape).astype(dtype)
    v = rng.permutation(n) * ((high - low) / max(n, 1)) + low + rng.uniform(0, 0.1, n)
    return v.reshape(shape).astype(dtype)


def _with_nans(x, rng, frac=0.25):
    x = x.copy()
    if x.dtype.kind == "f" and x.size:
        x[rng.random(x.shape) < frac] = np.nan
    return x


def _dim_samples(dtype, rng, shape=(2, 3, 4), empty=True, zero_d=True, tuple_dims=True,
                 make=None):
    custom = make is not None
    make = make or (lambda s: make_arg(s, dtype, rng))
    x = make(shape)
    out = [SampleInput(x), SampleInput(x, (1,)), SampleInput(x, (-1,), {"keepdim": True})]
    if tuple_dims:
        out += [SampleInput(x, ((-1, 0),)), SampleInput(x, ((0, 2),), {"keepdim": True})]
    out.append(SampleInput(make(shape)[..., ::-1] if custom else
                           make_arg(shape, dtype, rng, noncontiguous=True), (0,), name="noncontig"))
    if zero_d:
        z = make(())
        out += [SampleInput(z), SampleInput(z, (0,)), SampleInput(z, (-1,), {"keepdim": True})]
    if empty:
        out.append(SampleInput(make((0, 3)), (1,), name="empty"))
    return out


def _dim_errors(fn_name):
    def gen(rng):
        x = make_arg((2, 3), "float32", rng)
        return [ErrorInput(SampleInput(x, (2,)), IndexError, "Dimension out of range"),
                ErrorInput(SampleInput(x, ((0, 0),)), RuntimeError, "appears multiple times")]
    return gen


# -------------------------------------------------------------------- mean, nansum, nanmean

def _mean_ref(x, dim=None, keepdim=False, dtype=None):
    x = x.astype(_np_dt(dtype)) if dtype is not None else x
    with np.errstate(all="ignore"), _warnings_off():
        return np.asarray(np.mean(x, axis=_axis(x, dim), keepdims=keepdim and x.ndim > 0))


def _mean_samples(dtype, rng):
    out = _dim_samples(dtype, rng)
    out.append(SampleInput(make_arg((0, 3), dtype, rng), (0,), name="empty_reduced"))
    out.append(SampleInput(make_arg((3, 4), dtype, rng), (1,),
                           {"dtype": ember.complex128 if dtype in COMPLEX else ember.float64}))
    return out


def _mean_errors(rng):
    return _dim_errors("mean")(rng) + [
        ErrorInput(SampleInput(make_arg((3,), "int64", rng)), RuntimeError,
                   E("mean(): could not infer output dtype. Input dtype must be either a "
                     "floating point or complex dtype. Got: Long")),
        ErrorInput(SampleInput(make_arg((3,), "float32", rng), (), {"dtype": ember.int32}),
                   RuntimeError, "Optional dtype must be either a floating point"),
    ]


def _nansum_ref(x, dim=None, keepdim=False, dtype=None):
    dt = _np_dt(dtype) or _acc_dtype(x)
    return np.asarray(np.nansum(x, axis=_axis(x, dim), keepdims=keepdim and x.ndim > 0,
                                dtype=dt)).astype(dt)


def _nan_samples(dtype, rng):
    return _dim_samples(dtype, rng, make=lambda s: _with_nans(make_arg(s, dtype, rng), rng))


def _nanmean_ref(x, dim=None, keepdim=False, dtype=None):
    with np.errstate(all="ignore"), _warnings_off():
        return np.asarray(np.nanmean(x, axis=_axis(x, dim), keepdims=keepdim and x.ndim > 0))


class _warnings_off:
    def __enter__(self):
        import warnings
        self._cm = warnings.catch_warnings()
        self._cm.__enter__()
        warnings.simplefilter("ignore")

    def __exit__(self, *exc):
        return self._cm.__exit__(*exc)


# -------------------------------------------------------------------- prod

def _prod_ref(x, dim=None, keepdim=False, dtype=None):
    dt = _np_dt(dtype) or _acc_dtype(x)
    return np.asarray(np.prod(x, axis=_axis(x, dim), keepdims=keepdim and x.ndim > 0,
                              dtype=dt))


def _prod_samples(dtype, rng):
    def mk(s):
        return make_arg(s, dtype, rng, low=-2, high=2) if dtype not in FLOATS + COMPLEX else \
            np.asarray(make_arg(s, dtype, rng, low=0.5, high=1.5) *
                       np.where(rng.random(s) < .5, -1, 1).astype(dtype))
    x = mk((2, 3, 4))
    one_zero = x.copy()
    one_zero[0, 1, 2] = 0
    one_zero[1, 0, 0] = 0
    two_zeros = x.copy()
    two_zeros[0, 1, 1:3] = 0
    out = [SampleInput(x), SampleInput(x, (1,)), SampleInput(x, (-1, True)),
           SampleInput(x, (0,), {"keepdim": True}),
           SampleInput(mk(())), SampleInput(mk(()), (0,)),
           SampleInput(one_zero, name="two_zeros"), SampleInput(one_zero, (2,), name="one_zero"),
           SampleInput(one_zero[0, 1], name="one_zero"),
           SampleInput(two_zeros, (2,), name="two_zeros"),
           SampleInput(two_zeros, name="two_zeros"),
           SampleInput(mk((0, 3)), (1,), name="empty"), SampleInput(mk((0, 3)), (0,)),
           SampleInput(mk((3, 4)), (1,), {"dtype": ember.complex128 if dtype in COMPLEX
                                          else ember.float64})]
    return out


def _prod_errors(rng):
    x = make_arg((2, 3), "float32", rng)
    return [ErrorInput(SampleInput(x, ((0, 1),)), TypeError, "invalid combination"),
            ErrorInput(SampleInput(x, (2,)), IndexError, "Dimension out of range")]


# -------------------------------------------------------------------- max / min family

def _extreme_ref(fn, argfn, binary):
    def ref(x, dim=None, keepdim=False):
        if isinstance(dim, np.ndarray):
            return binary(x, dim)
        if dim is None:
            return np.asarray(fn(x))
        if x.ndim == 0:
            return x.copy(), np.array(0)
        d = dim % x.ndim
        idx = argfn(x, axis=d, keepdims=True)
        v = np.take_along_axis(x, idx, d)
        if not keepdim:
            v, idx = v.squeeze(d), idx.squeeze(d)
        return v, idx
    return ref


def _extreme_samples(dtype, rng):
    x = _distinct((2, 3, 4), dtype, rng)
    out = [SampleInput(x), SampleInput(x, (1,)), SampleInput(x, (-1, True)),
           SampleInput(x, (0,), {"keepdim": True}), SampleInput(_distinct((), dtype, rng)),
           SampleInput(_distinct((), dtype, rng), (0,)),
           SampleInput(_distinct((3, 4), dtype, rng)[:, ::2], (0,), name="noncontig"),
           SampleInput(make_arg((0, 3), dtype, rng), (1,), name="empty")]
    if dtype in FLOATS:
        out.append(SampleInput(_with_nans(make_arg((3, 4), dtype, rng), rng, 0.2), (1,),
                               name="nan"))
    out.append(SampleInput(x, (_distinct((3, 4), dtype, rng),), name="binary"))
    return out


def _extreme_errors(name):
    def gen(rng):
        e = make_arg((0, 3), "float32", rng)
        return [ErrorInput(SampleInput(e), RuntimeError,
                           E(f"{name}(): Expected reduction dim to be specified for "
                             f"input.numel() == 0.")),
                ErrorInput(SampleInput(e, (0,)), IndexError,
                           E(f"{name}(): Expected reduction dim 0 to have non-zero size.")),
                ErrorInput(SampleInput(e, (2,)), IndexError, "Dimension out of range"),
                ErrorInput(SampleInput(make_arg((2,), "complex64", rng)), NotImplementedError,
                           f"{name}_all")]
    return gen


def _aextreme_ref(fn):
    def ref(x, dim=(), keepdim=False):
        return np.asarray(fn(x, axis=_axis(x, dim), keepdims=keepdim and x.ndim > 0))
    return ref


def _aextreme_samples(dtype, rng):
    return _dim_samples(dtype, rng, make=lambda s: _distinct(s, dtype, rng))


def _aextreme_errors(name):
    def gen(rng):
        e = make_arg((0, 3), "float32", rng)
        return [ErrorInput(SampleInput(e), RuntimeError, "Expected reduction dim to be "
                           "specified"),
                ErrorInput(SampleInput(e, (0,)), IndexError,
                           E(f"{name}(): Expected reduction dim 0 to have non-zero size."))]
    return gen


def _arg_ref(fn):
    def ref(x, dim=None, keepdim=False):
        if dim is None:
            r = np.asarray(fn(x))
            return r.reshape((1,) * x.ndim) if keepdim else r
        if x.ndim == 0:
            return np.array(0)
        return np.asarray(fn(x, axis=dim % x.ndim, keepdims=keepdim))
    return ref


def _arg_samples(dtype, rng):
    x = make_arg((3, 4, 5), dtype, rng)
    out = [SampleInput(x), SampleInput(x, (1,)), SampleInput(x, (-1, True)),
           SampleInput(x, (), {"keepdim": True}), SampleInput(make_arg((), dtype, rng)),
           SampleInput(make_arg((), dtype, rng), (0,)),
           SampleInput(make_arg((0, 3), dtype, rng), (1,), name="empty")]
    if dtype in FLOATS:
        out.append(SampleInput(_with_nans(make_arg((4, 5), dtype, rng), rng), (1,), name="nan"))
    return out


def _arg_errors(name):
    def gen(rng):
        e = make_arg((0, 3), "float32", rng)
        return [ErrorInput(SampleInput(e), IndexError, E(f"{name}(): Expected reduction dim to "
                                                         f"be specified")),
                ErrorInput(SampleInput(e, (0,)), IndexError, "to have non-zero size"),
                ErrorInput(SampleInput(make_arg((2,), "complex64", rng)), RuntimeError,
                           E(f"{name}(): does not support complex input")),
                ErrorInput(SampleInput(make_arg((2,), "bool", rng)), RuntimeError,
                           E(f"{name}(): does not support bool input"))]
    return gen


def _aminmax_ref(x, *, dim=None, keepdim=False):
    ax = None if dim is None or x.ndim == 0 else dim % x.ndim
    kd = keepdim and x.ndim > 0
    mn, mx = np.min(x, axis=ax, keepdims=kd), np.max(x, axis=ax, keepdims=kd)
    return np.asarray(mn), np.asarray(mx)


def _aminmax_samples(dtype, rng):
    x = _distinct((2, 3, 4), dtype, rng)
    return [SampleInput(x), SampleInput(x, (), {"dim": 1}),
            SampleInput(x, (), {"dim": -1, "keepdim": True}), SampleInput(x, (), {"keepdim": True}),
            SampleInput(_distinct((), dtype, rng)), SampleInput(_distinct((), dtype, rng), (),
                                                                {"dim": 0}),
            SampleInput(make_arg((0, 3), dtype, rng), (), {"dim": 1}, name="empty")]


def _aminmax_errors(rng):
    e = make_arg((0, 3), "float32", rng)
    return [ErrorInput(SampleInput(e), RuntimeError, "cannot compute aminmax over an empty"),
            ErrorInput(SampleInput(e, (), {"dim": 0}), IndexError, "non-zero size")]


# -------------------------------------------------------------------- var / std

def _parse_var(dim, unbiased, keepdim, correction):
    if isinstance(dim, bool):
        dim, unbiased = None, dim
    if unbiased is not None:
        correction = 1 if unbiased else 0
    return dim, (1 if correction is None else correction), keepdim


def _var_ref(x, dim=None, unbiased=None, keepdim=False, *, correction=None):
    dim, c, keepdim = _parse_var(dim, unbiased, keepdim, correction)
    with np.errstate(all="ignore"), _warnings_off():
        return np.asarray(np.var(x, axis=_axis(x, dim), ddof=c, keepdims=keepdim and x.ndim))


def _std_ref(x, *a, **k):
    return np.sqrt(_var_ref(x, *a, **k))


def _var_mean_ref(x, dim=None, unbiased=None, keepdim=False, *, correction=None):
    d, _, kd = _parse_var(dim, unbiased, keepdim, correction)
    return (_var_ref(x, dim, unbiased, keepdim, correction=correction),
            np.asarray(np.mean(x, axis=_axis(x, d), keepdims=kd and x.ndim > 0)))


def _std_mean_ref(x, *a, **k):
    v, m = _var_mean_ref(x, *a, **k)
    return np.sqrt(v), m


def _var_samples(dtype, rng):
    x = make_arg((2, 3, 4), dtype, rng)
    return [SampleInput(x), SampleInput(x, (1,)), SampleInput(x, ((0, -1),)),
            SampleInput(x, (1, False)), SampleInput(x, (1, True, True)), SampleInput(x, (False,)),
            SampleInput(x, (), {"unbiased": False}),
            SampleInput(x, (-1,), {"correction": 0, "keepdim": True}),
            SampleInput(x, (None,), {"correction": 2}),
            SampleInput(x, ((0, 2),), {"correction": 1.5}),
            SampleInput(make_arg((3, 4), dtype, rng, noncontiguous=True), (0,), name="noncontig"),
            SampleInput(make_arg((0, 3), dtype, rng), (1,), name="empty")]


def _var_errors(rng):
    return _dim_errors("var")(rng) + [
        ErrorInput(SampleInput(make_arg((3,), "int64", rng)), RuntimeError,
                   "std and var only support floating point and complex dtypes")]


# -------------------------------------------------------------------- logsumexp, norm

def _logsumexp_ref(x, dim, keepdim=False):
    x = x.astype(np.float32) if x.dtype.kind in "biu" else x
    ax = _axis(x, dim)
    with np.errstate(all="ignore"):
        m = np.max(x, axis=ax, keepdims=True, initial=-np.inf)
        m = np.where(np.isfinite(m), m, 0)
        r = np.log(np.sum(np.exp(x - m), axis=ax, keepdims=True)) + m
    if not keepdim or x.ndim == 0:
        r = np.squeeze(r, axis=ax) if ax is not None else r.reshape(())
    return r.astype(x.dtype)


def _logsumexp_samples(dtype, rng):
    x = make_arg((2, 3, 4), dtype, rng, low=-5, high=5)
    out = [SampleInput(x, (1,)), SampleInput(x, ((0, -1),)), SampleInput(x, (-1, True)),
           SampleInput(make_arg((), dtype, rng), (0,)),
           SampleInput(make_arg((0, 3), dtype, rng), (0,), name="empty")]
    if dtype in FLOATS:
        big = make_arg((3, 4), dtype, rng) * 100
        big[0, :] = -np.inf
        out.append(SampleInput(big, (1,), name="large"))
    return out


def _norm_ref(x, p="fro", dim=None, keepdim=False, dtype=None):
    if dtype is not None:
        x = x.astype(_np_dt(dtype))
    p = 2 if p in ("fro", None) else p
    ax = _axis(x, dim)
    a = np.abs(x).astype(np.float64)
    if np.isinf(p):
        r = (np.max if p > 0 else np.min)(a, axis=ax, keepdims=True)
    elif p == 0:
        r = np.sum(a != 0, axis=ax, keepdims=True).astype(np.float64)
    else:
        r = np.sum(a ** p, axis=ax, keepdims=True) ** (1 / p)
    if not keepdim or x.ndim == 0:
        r = np.squeeze(r, axis=ax) if ax is not None else r.reshape(())
    return r.astype(np.abs(x).dtype)


def _norm_samples(dtype, rng):
    x = _distinct((2, 3, 4), dtype, rng) if dtype in FLOATS else make_arg((2, 3, 4), dtype, rng)
    out = [SampleInput(x), SampleInput(x, (1,)), SampleInput(x, (3, 1)),
           SampleInput(x, (float("inf"), (0, 2))), SampleInput(x, (-float("inf"),)),
           SampleInput(x, (0, -1)), SampleInput(x, (0.5, 1, True)),
           SampleInput(x, ("fro", (1, 2), True)), SampleInput(x, (), {"p": 2, "dim": 0}),
           SampleInput(x, (), {"dim": (0, 1), "dtype": ember.complex128 if dtype in COMPLEX
                               else ember.float64}),
           SampleInput(make_arg((), dtype, rng)), SampleInput(make_arg((), dtype, rng), (1, 0)),
           SampleInput(make_arg((0, 3), dtype, rng), (2, 1), name="empty"),
           SampleInput(make_arg((0, 3), dtype, rng), name="empty")]
    return out


def _norm_errors(rng):
    x = make_arg((2, 3), "float32", rng)
    return [ErrorInput(SampleInput(make_arg((3,), "int64", rng)), RuntimeError,
                       "linalg.vector_norm: Expected a floating point or complex tensor"),
            ErrorInput(SampleInput(x, ("bad",)), RuntimeError, "Order bad not supported"),
            ErrorInput(SampleInput(make_arg((2, 3, 4), "float32", rng), ("fro", (0, 1, 2))),
                       RuntimeError, "dim must be a 2-tuple"),
            ErrorInput(SampleInput(make_arg((0,), "float32", rng), (float("inf"),)),
                       RuntimeError, "cannot compute the inf norm on an empty tensor")]


# -------------------------------------------------------------------- all / any / counts

def _bool_reduce_ref(fn):
    def ref(x, dim=None, keepdim=False):
        r = np.asarray(fn(x, axis=_axis(x, dim), keepdims=keepdim and x.ndim > 0))
        return r.astype(np.uint8) if x.dtype == np.uint8 else r
    return ref


def _bool_samples(dtype, rng):
    x = make_arg((2, 3, 4), dtype, rng, low=0, high=3)
    return _dim_samples(dtype, rng, make=lambda s: make_arg(s, dtype, rng, low=0, high=3)) + \
        [SampleInput(np.ones((2, 3), dtype), (1,)), SampleInput(x, (None,))]


def _count_nonzero_ref(x, dim=None):
    return np.asarray(np.count_nonzero(x, axis=_axis(x, dim)), np.int64)


def _count_samples(dtype, rng):
    x = make_arg((2, 3, 4), dtype, rng, low=0, high=3)
    return [SampleInput(x), SampleInput(x, (1,)), SampleInput(x, ((0, -1),)),
            SampleInput(make_arg((), dtype, rng)), SampleInput(make_arg((0, 3), dtype, rng), (1,))]


# -------------------------------------------------------------------- scans

def _cum_ref(fn):
    def ref(x, dim, dtype=None):
        dt = _np_dt(dtype) or _acc_dtype(x)
        if x.ndim == 0:
            return x.astype(dt)
        return fn(x, axis=dim % x.ndim, dtype=dt)
    return ref


def _cumsum_samples(dtype, rng):
    x = make_arg((2, 3, 4), dtype, rng)
    return [SampleInput(x, (1,)), SampleInput(x, (-1,)), SampleInput(x, (0,)),
            SampleInput(make_arg((3, 4), dtype, rng, noncontiguous=True), (1,), name="noncontig"),
            SampleInput(make_arg((), dtype, rng), (0,)),
            SampleInput(make_arg((0, 3), dtype, rng), (0,), name="empty"),
            SampleInput(make_arg((3, 4), dtype, rng), (1,),
                        {"dtype": ember.complex128 if dtype in COMPLEX else ember.float64})]


def _cumprod_samples(dtype, rng):
    def mk(s):
        return make_arg(s, dtype, rng, low=-2, high=2) if dtype not in FLOATS + COMPLEX else \
            make_arg(s, dtype, rng, low=0.5, high=1.5)
    x = mk((2, 3, 4))
    z = mk((3, 5))
    z[0, 2] = 0
    z[1, 0] = 0
    z[2, 4] = 0
    z2 = mk((2, 5))
    z2[0, 1] = z2[0, 3] = 0
    return [SampleInput(x, (1,)), SampleInput(x, (-1,)), SampleInput(x, (0,)),
            SampleInput(mk(()), (0,)), SampleInput(mk((0, 3)), (0,), name="empty"),
            SampleInput(z, (1,), name="one_zero"), SampleInput(z.T.copy(), (0,), name="one_zero"),
            SampleInput(z2, (1,), name="two_zeros"),
            SampleInput(mk((3, 4)), (1,),
                        {"dtype": ember.complex128 if dtype in COMPLEX else ember.float64})]


def _scan_errors(rng):
    return [ErrorInput(SampleInput(make_arg((2, 3), "float32", rng), (2,)), IndexError,
                       "Dimension out of range"),
            ErrorInput(SampleInput(make_arg((), "float32", rng), (1,)), IndexError,
                       "Dimension out of range|Expected reduction dim -1 or 0 for scalar")]


def _cum_extreme_ref(fn):
    def ref(x, dim):
        if x.ndim == 0:
            return x.copy(), np.array(0)
        d = dim % x.ndim
        v = fn.accumulate(x, axis=d)
        vm = np.moveaxis(v, d, -1)
        xm = np.moveaxis(x, d, -1)
        idx = np.zeros(xm.shape, np.int64)
        for pos in np.ndindex(xm.shape[:-1]):
            best = 0
            for i in range(xm.shape[-1]):
                xv = xm[pos + (i,)]
                if (xv != xv) or xv == vm[pos + (i,)]:
                    best = i
                idx[pos + (i,)] = best
        return v, np.moveaxis(idx, -1, d)
    return ref


def _cum_extreme_samples(dtype, rng):
    out = [SampleInput(_distinct((2, 3, 4), dtype, rng), (1,)),
           SampleInput(_distinct((2, 3, 4), dtype, rng), (-1,)),
           SampleInput(make_arg((4, 6), dtype, rng, low=0, high=3), (1,), name="ties"),
           SampleInput(_distinct((), dtype, rng), (0,)),
           SampleInput(make_arg((0, 3), dtype, rng), (0,), name="empty")]
    if dtype in FLOATS:
        out.append(SampleInput(_with_nans(make_arg((3, 6), dtype, rng), rng), (1,), name="nan"))
    return out


def _finite_output(ref):
    """Gradient samples whose outputs are finite (NaN outputs make NaN Jacobians)."""
    def keep(s):
        with np.errstate(all="ignore"), _warnings_off():
            r = ref(s.input, *s.args, **s.kwargs)
        r = r if isinstance(r, tuple) else (r,)
        return all(np.all(np.isfinite(np.asarray(v, np.complex128))) for v in r)
    return keep


def _not_ties(s):
    return s.name != "ties"


def _logcumsumexp_ref(x, dim):
    if x.ndim == 0:
        return x.copy()
    with np.errstate(all="ignore"):
        return np.logaddexp.accumulate(x.astype(np.float64), axis=dim % x.ndim).astype(x.dtype)


def _logcumsumexp_samples(dtype, rng):
    x = make_arg((2, 3, 4), dtype, rng, low=-5, high=5)
    big = make_arg((3, 5), dtype, rng) * 50
    big[1, :2] = -np.inf
    return [SampleInput(x, (1,)), SampleInput(x, (-1,)),
            SampleInput(make_arg((), dtype, rng), (0,)),
            SampleInput(make_arg((0, 3), dtype, rng), (0,), name="empty"),
            SampleInput(big, (1,), name="large")]


def _grad_finite(s):
    return s.name not in ("large", "nan", "ties")


# -------------------------------------------------------------------- softmax

def _softmax_ref(x, dim, dtype=None):
    x = x.astype(_np_dt(dtype)) if dtype is not None else x
    x64 = x.astype(np.float64)
    d = dim % x.ndim if x.ndim else None
    with np.errstate(all="ignore"):
        e = np.exp(x64 - np.max(x64, axis=d, keepdims=True, initial=-np.inf))
        return (e / np.sum(e, axis=d, keepdims=True)).astype(x.dtype)


def _log_softmax_ref(x, dim, dtype=None):
    x = x.astype(_np_dt(dtype)) if dtype is not None else x
    x64 = x.astype(np.float64)
    d = dim % x.ndim if x.ndim else None
    with np.errstate(all="ignore"):
        s = x64 - np.max(x64, axis=d, keepdims=True, initial=-np.inf)
        return (s - np.log(np.sum(np.exp(s), axis=d, keepdims=True))).astype(x.dtype)


def _softmax_samples(dtype, rng):
    kw = {} if dtype in FLOATS else {"dtype": ember.float64}
    x = make_arg((2, 3, 4), dtype, rng)
    out = [SampleInput(x, (1,), kw), SampleInput(x, (-1,), kw), SampleInput(x, (0,), kw),
           SampleInput(make_arg((), dtype, rng), (0,), kw),
           SampleInput(make_arg((0, 3), dtype, rng), (1,), kw, name="empty")]
    if dtype in FLOATS:
        big = make_arg((3, 4), dtype, rng) * 100
        big[0, 1] = -np.inf
        out += [SampleInput(big, (1,), name="large"),
                SampleInput(x, (1,), {"dtype": ember.float64})]
    return out


def _softmax_errors(name):
    def gen(rng):
        return [ErrorInput(SampleInput(make_arg((3,), "int64", rng), (0,)), NotImplementedError,
                           "not implemented for 'Long'"),
                ErrorInput(SampleInput(make_arg((2, 3), "float32", rng), (2,)), IndexError,
                           "Dimension out of range")]
    return gen


OPS = [
    OpInfo("mean", _mean_ref, _mean_samples, dtypes=FLOATS + COMPLEX, supports_out=True,
           error_inputs=_mean_errors, grad_dtypes=GRAD_C, op_records=("mean",), **TOL),
    OpInfo("nansum", _nansum_ref, _nan_samples, dtypes=ALL_REAL, supports_out=True,
           op_records=("nansum",), **TOL),
    OpInfo("nanmean", _nanmean_ref, _nan_samples, dtypes=FLOATS, supports_out=True,
           grad_input_filter=_finite_output(_nanmean_ref), op_records=("nanmean",), **TOL),
    OpInfo("prod", _prod_ref, _prod_samples, dtypes=FLOATS + INTS + ("bool",) + COMPLEX,
           supports_out=True, error_inputs=_prod_errors, grad_dtypes=GRAD_C,
           op_records=("prod", "prod.dim_int"), **TOL),
    OpInfo("max", _extreme_ref(np.max, np.argmax, np.maximum), _extreme_samples, dtypes=ALL_REAL,
           supports_out=True, error_inputs=_extreme_errors("max"),
           grad_input_filter=lambda s: s.name != "nan",
           op_records=("max", "max.dim", "_compare_mask", "_take_along_dim_backward")),
    OpInfo("min", _extreme_ref(np.min, np.argmin, np.minimum), _extreme_samples, dtypes=ALL_REAL,
           supports_out=True, error_inputs=_extreme_errors("min"),
           grad_input_filter=lambda s: s.name != "nan", op_records=("min", "min.dim")),
    OpInfo("amax", _aextreme_ref(np.max), _aextreme_samples, dtypes=ALL_REAL, supports_out=True,
           error_inputs=_aextreme_errors("amax"), op_records=("amax",)),
    OpInfo("amin", _aextreme_ref(np.min), _aextreme_samples, dtypes=ALL_REAL, supports_out=True,
           error_inputs=_aextreme_errors("amin"), op_records=("amin",)),
    OpInfo("argmax", _arg_ref(np.argmax), _arg_samples, dtypes=FLOATS + INTS, supports_out=True,
           supports_grad=False, error_inputs=_arg_errors("argmax"), op_records=("argmax",)),
    OpInfo("argmin", _arg_ref(np.argmin), _arg_samples, dtypes=FLOATS + INTS, supports_out=True,
           supports_grad=False, error_inputs=_arg_errors("argmin"), op_records=("argmin",)),
    OpInfo("aminmax", _aminmax_ref, _aminmax_samples, dtypes=ALL_REAL,
           error_inputs=_aminmax_errors, op_records=("aminmax",)),
    OpInfo("var", _var_ref, _var_samples, dtypes=FLOATS + COMPLEX, supports_out=True,
           error_inputs=_var_errors, grad_dtypes=GRAD_C, op_records=("var.correction",), **TOL),
    OpInfo("std", _std_ref, _var_samples, dtypes=FLOATS + COMPLEX, supports_out=True,
           error_inputs=_var_errors, grad_dtypes=GRAD_C, op_records=("std.correction",), **TOL),
    OpInfo("var_mean", _var_mean_ref, _var_samples, dtypes=FLOATS + COMPLEX, method=False,
           grad_dtypes=GRAD_C, op_records=("var_mean.correction",), **TOL),
    OpInfo("std_mean", _std_mean_ref, _var_samples, dtypes=FLOATS + COMPLEX, method=False,
           grad_dtypes=GRAD_C, op_records=("std_mean.correction",), **TOL),
    OpInfo("logsumexp", _logsumexp_ref, _logsumexp_samples, dtypes=ALL_REAL, supports_out=True,
           grad_input_filter=_grad_finite, error_inputs=_dim_errors("logsumexp"),
           op_records=("logsumexp",), **TOL),
    OpInfo("norm", _norm_ref, _norm_samples, dtypes=FLOATS + COMPLEX, supports_out=True,
           error_inputs=_norm_errors, grad_dtypes=GRAD_C,
           op_records=("norm", "_abs_pow", "_sgn"), **TOL),
    OpInfo("all", _bool_reduce_ref(np.all), _bool_samples, dtypes=ALL_REAL + COMPLEX,
           supports_out=True, supports_grad=False, op_records=("all",)),
    OpInfo("any", _bool_reduce_ref(np.any), _bool_samples, dtypes=ALL_REAL + COMPLEX,
           supports_out=True, supports_grad=False, op_records=("any",)),
    OpInfo("count_nonzero", _count_nonzero_ref, _count_samples, dtypes=ALL_REAL + COMPLEX,
           supports_grad=False, op_records=("count_nonzero",)),
    OpInfo("cumsum", _cum_ref(np.cumsum), _cumsum_samples, dtypes=ALL_REAL + COMPLEX,
           inplace="cumsum_", supports_out=True, error_inputs=_scan_errors, grad_dtypes=GRAD_C,
           op_records=("cumsum", "cumsum_", "_reverse_cumsum"), **TOL),
    OpInfo("cumprod", _cum_ref(np.cumprod), _cumprod_samples, dtypes=ALL_REAL + COMPLEX,
           inplace="cumprod_", supports_out=True, error_inputs=_scan_errors, grad_dtypes=GRAD_C,
           grad_input_filter=_not_ties, op_records=("cumprod", "cumprod_", "_nth_zero_mask"),
           **TOL),
    OpInfo("cummax", _cum_extreme_ref(np.maximum), _cum_extreme_samples, dtypes=ALL_REAL,
           error_inputs=_scan_errors, grad_input_filter=_grad_finite, op_records=("cummax",)),
    OpInfo("cummin", _cum_extreme_ref(np.minimum), _cum_extreme_samples, dtypes=ALL_REAL,
           error_inputs=_scan_errors, grad_input_filter=_grad_finite, op_records=("cummin",)),
    OpInfo("logcumsumexp", _logcumsumexp_ref, _logcumsumexp_samples, dtypes=FLOATS,
           supports_out=True, error_inputs=_scan_errors, grad_input_filter=_grad_finite,
           op_records=("logcumsumexp", "_logcumsumexp_grad"), **TOL),
    OpInfo("softmax", _softmax_ref, _softmax_samples, dtypes=FLOATS + INTS, supports_out=True,
           error_inputs=_softmax_errors("softmax"), grad_input_filter=_grad_finite,
           op_records=("softmax.int",), **TOL),
    OpInfo("log_softmax", _log_softmax_ref, _softmax_samples, dtypes=FLOATS + INTS,
           supports_out=True, error_inputs=_softmax_errors("log_softmax"),
           grad_input_filter=_grad_finite, op_records=("log_softmax.int",), **TOL),
]
