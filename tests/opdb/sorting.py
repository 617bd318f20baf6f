"""Op database entries for sorting, selection, uniqueness, searching and histograms
(ember/_ops/sorting.py)."""
import re

import numpy as np

from opinfo import OpInfo, SampleInput, ErrorInput, make_arg, FLOATS, INTS, ALL_REAL
from opdb.reduction import _distinct, _with_nans

E = re.escape
TOL = dict(atol=1e-4, rtol=1e-5)
NO_BOOL = FLOATS + INTS


def _stable_argsort(x, d, descending=False):
    if not descending:
        return np.argsort(x, axis=d, kind="stable")
    n = x.shape[d]
    return n - 1 - np.flip(np.argsort(np.flip(x, d), axis=d, kind="stable"), d)


def _no_grad_ties(s):
    return s.name not in ("ties", "nan")


# -------------------------------------------------------------------- sort family

def _sort_ref(x, dim=-1, descending=False, stable=False):
    if x.ndim == 0:
        return x.copy(), np.array(0)
    d = dim % x.ndim
    idx = _stable_argsort(x, d, descending)
    return np.take_along_axis(x, idx, d), idx


def _argsort_ref(x, dim=-1, descending=False, stable=False):
    return _sort_ref(x, dim, descending)[1]


def _sort_samples(dtype, rng):
    x = _distinct((2, 3, 4), dtype, rng)
    t = make_arg((3, 6), dtype, rng, low=0, high=3)
    out = [SampleInput(x), SampleInput(x, (1,)), SampleInput(x, (0, True)),
           SampleInput(x, (), {"dim": -2, "descending": True, "stable": True}),
           SampleInput(_distinct((3, 4), dtype, rng)[:, ::2], (0,), name="noncontig"),
           SampleInput(t, (1,), name="ties"), SampleInput(t, (1, True), name="ties"),
           SampleInput(t, (), {"stable": True, "descending": True}, name="ties"),
           SampleInput(_distinct((), dtype, rng)), SampleInput(_distinct((), dtype, rng), (0,)),
           SampleInput(make_arg((0, 3), dtype, rng), (0,), name="empty")]
    if dtype in FLOATS:
        out += [SampleInput(_with_nans(make_arg((3, 5), dtype, rng), rng), (1,), name="nan"),
                SampleInput(_with_nans(make_arg((3, 5), dtype, rng), rng), (1, True),
                            name="nan")]
    return out


def _sort_errors(rng):
    return [ErrorInput(SampleInput(make_arg((3,), "complex64", rng)), RuntimeError,
                       "Sort does not support complex"),
            ErrorInput(SampleInput(make_arg((2, 3), "float32", rng), (-3,)), IndexError,
                       "Dimension out of range")]


def _msort_ref(x):
    return _sort_ref(x, 0)[0] if x.ndim else x.copy()


def _msort_samples(dtype, rng):
    return [SampleInput(_distinct((3, 4), dtype, rng)), SampleInput(_distinct((5,), dtype, rng)),
            SampleInput(_distinct((), dtype, rng)),
            SampleInput(make_arg((4, 3), dtype, rng, low=0, high=3), name="ties")]


def _topk_ref(x, k, dim=-1, largest=True, sorted=True):
    """torch's own topk where it takes the dtype: its order among ties comes from libstdc++'s
    unstable selection (ember replays it); else the stable order, equal without ties."""
    if x.ndim == 0:
        return x.copy(), np.array(0)
    try:
        from helpers import torch
        r = torch.from_numpy(np.ascontiguousarray(x)).topk(k, dim, largest, sorted)
        return r.values.numpy(), r.indices.numpy()
    except (ImportError, TypeError, AttributeError):
        pass
    d = dim % x.ndim
    idx = np.take(_stable_argsort(x, d, largest), np.arange(k), axis=d)
    return np.take_along_axis(x, idx, d), idx


def _topk_samples(dtype, rng):
    x = _distinct((2, 3, 4), dtype, rng)
    t = make_arg((3, 6), dtype, rng, low=0, high=3)
    return [SampleInput(x, (2,)), SampleInput(x, (2, 1)), SampleInput(x, (1, 0, False)),
            SampleInput(x, (3,), {"largest": False, "sorted": True}),
            SampleInput(x, (4, -1)), SampleInput(x, (0,)),
            SampleInput(t, (3,), name="ties"), SampleInput(t, (2, 1, False), name="ties"),
            SampleInput(_distinct((), dtype, rng), (1,)),
            SampleInput(make_arg((0, 3), dtype, rng), (2,), name="empty")]


def _topk_errors(rng):
    x = make_arg((2, 3), "float32", rng)
    return [ErrorInput(SampleInput(x, (4,)), RuntimeError, "selected index k out of range"),
            ErrorInput(SampleInput(x, (-1,)), RuntimeError, "selected index k out of range"),
            ErrorInput(SampleInput(x, (1, 2)), IndexError, "Dimension out of range")]


def _kthvalue_ref(x, k, dim=-1, keepdim=False):
    """torch's own kthvalue where it takes the dtype: among ties its quickselect decides
    (ember replays it); else the stable order, equal without ties."""
    if x.ndim == 0:
        return x.copy(), np.array(0)
    try:
        from helpers import torch
        if x.size:
            r = torch.from_numpy(np.ascontiguousarray(x)).kthvalue(k, dim, keepdim)
            return r.values.numpy(), r.indices.numpy()
    except (ImportError, TypeError, AttributeError):
        pass
    d = dim % x.ndim
    idx = np.take(_stable_argsort(x, d), [k - 1], axis=d)
    v = np.take_along_axis(x, idx, d)
    return (v, idx) if keepdim else (v.squeeze(d), idx.squeeze(d))


def _kthvalue_samples(dtype, rng):
    x = _distinct((2, 3, 4), dtype, rng)
    return [SampleInput(x, (2,)), SampleInput(x, (1, 0)), SampleInput(x, (3, 1, True)),
            SampleInput(x, (4,), {"dim": -1, "keepdim": True}),
            SampleInput(make_arg((3, 6), dtype, rng, low=0, high=3), (3,), name="ties"),
            SampleInput(_distinct((), dtype, rng), (1,)),
            SampleInput(make_arg((0, 3), dtype, rng), (1,), name="empty")]


def _kthvalue_errors(rng):
    x = make_arg((2, 3), "float32", rng)
    return [ErrorInput(SampleInput(x, (4,)), RuntimeError,
                       E("kthvalue(): selected number k out of range for dimension 1")),
            ErrorInput(SampleInput(x, (0,)), RuntimeError, "selected number k out of range"),
            ErrorInput(SampleInput(make_arg((0, 3), "float32", rng), (1, 0)), IndexError,
                       "non-zero size")]


# -------------------------------------------------------------------- median, mode

def _median_along(x, d, ignore_nan):
    n = x.shape[d]
    idx = _stable_argsort(x, d)
    if x.dtype.kind == "f":
        nans = np.sum(np.isnan(x), axis=d, keepdims=True)
        pos = np.maximum((n - nans - 1) // 2, 0) if ignore_nan else \
            np.where(nans > 0, n - nans, (n - 1) // 2)
    else:
        pos = np.full(x.shape[:d] + (1,) + x.shape[d + 1:], (n - 1) // 2)
    i = np.take_along_axis(idx, pos, d)
    return np.take_along_axis(x, i, d), i


def _median_ref(ignore_nan):
    def ref(x, dim=None, keepdim=False):
        if dim is None:
            if x.size == 0:
                return np.array(np.nan, x.dtype)
            return _median_along(x.reshape(-1), 0, ignore_nan)[0].reshape(())
        if x.ndim == 0:
            return x.copy(), np.array(0)
        d = dim % x.ndim
        v, i = _median_along(x, d, ignore_nan)
        return (v, i) if keepdim else (v.squeeze(d), i.squeeze(d))
    return ref


def _median_samples(dtype, rng):
    x = _distinct((2, 3, 4), dtype, rng)
    out = [SampleInput(x), SampleInput(x, (1,)), SampleInput(x, (-1, True)),
           SampleInput(x, (0,), {"keepdim": True}),
           SampleInput(_distinct((5, 3), dtype, rng), (0,)),
           SampleInput(make_arg((3, 6), dtype, rng, low=0, high=3), (1,), name="ties"),
           SampleInput(_distinct((), dtype, rng)), SampleInput(_distinct((), dtype, rng), (0,)),
           SampleInput(make_arg((0, 3), dtype, rng), (1,), name="empty")]
    if dtype in FLOATS:
        out += [SampleInput(make_arg((0, 3), dtype, rng), name="empty"),
                SampleInput(_with_nans(make_arg((4, 5), dtype, rng), rng, 0.3), (1,), name="nan"),
                SampleInput(_with_nans(make_arg((4, 5), dtype, rng), rng, 0.3), name="nan")]
        allnan = make_arg((2, 3), dtype, rng)
        allnan[0] = np.nan
        out.append(SampleInput(allnan, (1,), name="nan"))
    return out


def _median_errors(name):
    def gen(rng):
        return [ErrorInput(SampleInput(make_arg((0, 3), "float32", rng), (0,)), IndexError,
                           E(f"{name}(): Expected reduction dim 0 to have non-zero size.")),
                ErrorInput(SampleInput(make_arg((2, 3), "float32", rng), (2,)), IndexError,
                           "Dimension out of range"),
                ErrorInput(SampleInput(make_arg((2,), "complex64", rng)), NotImplementedError,
                           "median_cpu")]
    return gen


def _mode_ref(x, dim=-1, keepdim=False):
    if x.ndim == 0:
        return x.copy(), np.array(0)
    d = dim % x.ndim
    xm = np.moveaxis(x, d, -1)
    vals = np.zeros(xm.shape[:-1], x.dtype)
    idx = np.zeros(xm.shape[:-1], np.int64)
    for pos in np.ndindex(xm.shape[:-1]):
        row = xm[pos]
        u, c = np.unique(row, return_counts=True)
        v = u[np.argmax(c)]                       # smallest of the most frequent
        vals[pos] = v
        idx[pos] = np.flatnonzero(row == v)[-1]   # its last occurrence
    if keepdim:
        vals, idx = np.expand_dims(vals, d), np.expand_dims(idx, d)
    return vals, idx


def _mode_samples(dtype, rng):
    x = _distinct((2, 3, 4), dtype, rng)
    return [SampleInput(make_arg((3, 8), dtype, rng, low=0, high=4), name="ties"),
            SampleInput(make_arg((4, 3, 5), dtype, rng, low=0, high=3), (1, True), name="ties"),
            SampleInput(make_arg((4, 5), dtype, rng, low=0, high=3), (0,), name="ties"),
            SampleInput(x), SampleInput(x, (0,)), SampleInput(_distinct((), dtype, rng)),
            SampleInput(make_arg((0, 3), dtype, rng), name="empty")]


def _mode_errors(rng):
    return [ErrorInput(SampleInput(make_arg((3, 0), "float32", rng)), IndexError,
                       E("mode(): Expected reduction dim 1 to have non-zero size."))]


# -------------------------------------------------------------------- quantile

def _quantile_ref(nan):
    fn = np.nanquantile if nan else np.quantile

    def ref(x, q, dim=None, keepdim=False, *, interpolation="linear"):
        ax = None if dim is None else dim % max(x.ndim, 1)
        with np.errstate(all="ignore"):
            import warnings
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                r = fn(x.astype(np.float64), q, axis=ax, keepdims=keepdim, method=interpolation)
        return np.asarray(r).astype(x.dtype)
    return ref


def _quantile_samples(dtype, rng):
    x = _distinct((2, 3, 4), dtype, rng)
    q = np.array([0.13, 0.37, 0.77], dtype)     # no integer ranks: differentiable in q
    out = [SampleInput(x, (0.3,)), SampleInput(x, (q,)), SampleInput(x, (q, 1)),
           SampleInput(x, (0.6, -1, True)), SampleInput(x, (q, 0, True)),
           SampleInput(x, (q,), {"keepdim": True}),
           SampleInput(x, (np.array(0.42, dtype),), {"dim": 2}),
           SampleInput(_distinct((5,), dtype, rng), (np.array([0.0, 1.0, 0.25], dtype),),
                       name="edges"),
           SampleInput(_distinct((), dtype, rng), (0.5,))]
    for interp in ("lower", "higher", "midpoint", "nearest"):
        out.append(SampleInput(x, (q, 1), {"interpolation": interp}))
    out.append(SampleInput(np.arange(6, dtype=dtype), (np.array([0.1, 0.3, 0.5, 0.7, 0.9],
                                                                  dtype),),
                           {"interpolation": "nearest"}, name="ties"))
    nanx = _with_nans(make_arg((4, 5), dtype, rng), rng, 0.3)
    nanx[0] = np.nan
    out += [SampleInput(nanx, (q, 1), name="nan"), SampleInput(nanx, (0.4,), name="nan")]
    return out


def _quantile_grad_filter(s):
    return s.name not in ("nan", "ties", "edges") and s.kwargs.get("interpolation", "linear") in \
        ("linear", "midpoint")


def _quantile_errors(rng):
    x = make_arg((2, 3), "float32", rng)
    return [ErrorInput(SampleInput(x, (1.5,)), RuntimeError,
                       E("quantile() q must be in the range [0, 1] but got 1.5")),
            ErrorInput(SampleInput(x, (np.array([0.1, 2.0], np.float32),)), RuntimeError,
                       E("quantile() q values must be in the range [0, 1]")),
            ErrorInput(SampleInput(x, (np.array([[0.5]], np.float32),)), RuntimeError,
                       "q must be a scalar or 1D tensor"),
            ErrorInput(SampleInput(make_arg((3,), "int64", rng), (0.5,)), RuntimeError,
                       "input tensor must be either float or double dtype"),
            ErrorInput(SampleInput(x, (np.array([0.5]),)), RuntimeError,
                       "q tensor must be same dtype as the input tensor"),
            ErrorInput(SampleInput(make_arg((0, 3), "float32", rng), (0.5,)), RuntimeError,
                       E("quantile() input tensor must be non-empty")),
            ErrorInput(SampleInput(x, (0.5,), {"interpolation": "foo"}), RuntimeError,
                       "interpolation must be one of linear, lower, higher, midpoint or nearest")]


# -------------------------------------------------------------------- unique

def _unique_ref(x, sorted=True, return_inverse=False, return_counts=False, dim=None):
    if dim is None:
        u, inv, cnt = np.unique(x.reshape(-1), return_inverse=True, return_counts=True,
                                equal_nan=False)
        inv = inv.reshape(x.shape)
    else:
        u, inv, cnt = np.unique(x, axis=dim, return_inverse=True, return_counts=True)
        inv = inv.reshape(-1)
    out = [u]
    if return_inverse:
        out.append(inv)
    if return_counts:
        out.append(cnt)
    return tuple(out) if len(out) > 1 else u


def _unique_samples(dtype, rng):
    x = make_arg((3, 4), dtype, rng, low=0, high=4)
    rows = make_arg((2, 3), dtype, rng, low=0, high=2)
    rows = np.concatenate([rows, rows[:1], rows[1:]], 0)
    out = [SampleInput(x), SampleInput(x, (), {"return_inverse": True}),
           SampleInput(x, (), {"return_counts": True}),
           SampleInput(x, (True, True, True)),
           SampleInput(rows, (), {"dim": 0, "return_inverse": True, "return_counts": True}),
           SampleInput(rows.T.copy(), (), {"dim": 1, "return_counts": True}),
           SampleInput(make_arg((), dtype, rng), (), {"return_inverse": True}),
           SampleInput(make_arg((0, 3), dtype, rng), (), {"return_counts": True}, name="empty")]
    return out


def _unique_consecutive_ref(x, return_inverse=False, return_counts=False, dim=None):
    if dim is None:
        flat = x.reshape(-1)
        keep = np.ones(flat.size, bool)
        keep[1:] = flat[1:] != flat[:-1]
        u = flat[keep]
        inv = (np.cumsum(keep) - 1).reshape(x.shape)
    else:
        m = np.moveaxis(x, dim, 0).reshape(x.shape[dim], -1)
        keep = np.ones(m.shape[0], bool)
        keep[1:] = np.any(m[1:] != m[:-1], axis=1)
        u = np.compress(keep, x, axis=dim)
        inv = np.cumsum(keep) - 1
    cnt = np.diff(np.append(np.flatnonzero(keep), keep.size))
    out = [u] + ([inv] if return_inverse else []) + ([cnt] if return_counts else [])
    return tuple(out) if len(out) > 1 else u


def _unique_consecutive_samples(dtype, rng):
    x = np.repeat(make_arg((6,), dtype, rng, low=0, high=3), 2)
    m = np.repeat(make_arg((3, 2), dtype, rng, low=0, high=2), 2, axis=0)
    return [SampleInput(x), SampleInput(x.reshape(3, 4), (True, True)),
            SampleInput(x, (), {"return_counts": True}),
            SampleInput(m, (), {"dim": 0, "return_inverse": True, "return_counts": True}),
            SampleInput(m.T.copy(), (), {"return_counts": True, "dim": 1}),
            SampleInput(make_arg((0,), dtype, rng), (True, True), name="empty")]


# -------------------------------------------------------------------- searching

def _searchsorted_ref(seq, v, *, out_int32=False, right=False, side=None, sorter=None):
    if side is not None:
        right = side == "right"
    if sorter is not None:
        seq = np.take_along_axis(seq, sorter, -1)
    s = "right" if right else "left"
    if seq.ndim == 1:
        r = np.searchsorted(seq, v, side=s)
    else:
        seq2, v2 = seq.reshape(-1, seq.shape[-1]), v.reshape(-1, v.shape[-1])
        r = np.stack([np.searchsorted(a, b, side=s) for a, b in zip(seq2, v2)]).reshape(v.shape)
    return np.asarray(r, np.int32 if out_int32 else np.int64)


def _searchsorted_samples(dtype, rng):
    seq = np.sort(make_arg((7,), dtype, rng, low=0, high=5))
    v = make_arg((3, 4), dtype, rng, low=0, high=6)
    seq2 = np.sort(make_arg((2, 3, 6), dtype, rng, low=0, high=5), -1)
    v2 = make_arg((2, 3, 4), dtype, rng, low=0, high=6)
    perm = rng.permutation(7)
    return [SampleInput(seq, (v,)), SampleInput(seq, (v,), {"right": True}),
            SampleInput(seq, (v,), {"side": "right"}), SampleInput(seq, (v,), {"side": "left"}),
            SampleInput(seq, (v,), {"out_int32": True}),
            SampleInput(seq2, (v2,)), SampleInput(seq2, (v2,), {"right": True}),
            SampleInput(seq[perm], (v,), {"sorter": np.argsort(seq[perm], kind="stable")}),
            SampleInput(seq, (3,), name="scalar"), SampleInput(seq, (make_arg((0,), dtype, rng),)),
            SampleInput(seq, (make_arg((), dtype, rng, low=0, high=6),))]


def _searchsorted_errors(rng):
    s = np.arange(3)
    return [ErrorInput(SampleInput(s, (np.array([3]),), {"side": "left", "right": True}),
                       RuntimeError, "side and right can't be set to opposites"),
            ErrorInput(SampleInput(s, (np.array([3]),), {"side": "bad"}), RuntimeError,
                       "side can only be 'left' or 'right'"),
            ErrorInput(SampleInput(np.arange(6).reshape(2, 3), (np.array([3]),)), RuntimeError,
                       "boundaries tensor should be 1 dimension or the first N-1 dimensions"),
            ErrorInput(SampleInput(s, (np.array([3]),), {"sorter": np.array([0, 1])}),
                       RuntimeError, "boundary and sorter must have the same size"),
            ErrorInput(SampleInput(np.array(3), (np.array([3]),)), RuntimeError,
                       "boundaries tensor should have positive dimension")]


def _bucketize_ref(x, boundaries, *, out_int32=False, right=False):
    return np.asarray(np.searchsorted(boundaries, x, side="right" if right else "left"),
                      np.int32 if out_int32 else np.int64)


def _bucketize_samples(dtype, rng):
    b = np.sort(make_arg((6,), dtype, rng, low=0, high=5))
    x = make_arg((3, 4), dtype, rng, low=0, high=6)
    return [SampleInput(x, (b,)), SampleInput(x, (b,), {"right": True}),
            SampleInput(x, (b,), {"out_int32": True}),
            SampleInput(make_arg((), dtype, rng, low=0, high=6), (b,))]


def _bucketize_errors(rng):
    return [ErrorInput(SampleInput(np.array([3]), (np.arange(6).reshape(2, 3),)), RuntimeError,
                       E("boundaries tensor must be 1 dimension, but got dim(2)"))]


# -------------------------------------------------------------------- histograms

def _histc_ref(x, bins=100, min=0, max=0):
    lo, hi = float(min), float(max)
    flat = x.reshape(-1).astype(np.float64)
    if lo == hi and flat.size:
        lo, hi = flat.min(), flat.max()
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    return np.histogram(flat, bins=bins, range=(lo, hi))[0].astype(x.dtype)


def _histc_samples(dtype, rng):
    x = make_arg((4, 5), dtype, rng)
    return [SampleInput(x), SampleInput(x, (7,)), SampleInput(x, (5, -3, 3)),
            SampleInput(x, (), {"bins": 4, "min": 1.5, "max": 1.5}),
            SampleInput(np.ones(3, dtype), (4,)), SampleInput(make_arg((0,), dtype, rng), (3,))]


def _histc_errors(rng):
    x = make_arg((4,), "float32", rng)
    return [ErrorInput(SampleInput(x, (4, 3, 1)), RuntimeError, "max must be larger than min"),
            ErrorInput(SampleInput(x, (0,)), RuntimeError, "bins must be > 0"),
            ErrorInput(SampleInput(make_arg((4,), "int64", rng)), NotImplementedError,
                       "not implemented for 'Long'")]


def _histogram_ref(x, bins=100, *, range=None, weight=None, density=False):
    flat = x.reshape(-1)
    w = None if weight is None else weight.reshape(-1)
    if isinstance(bins, np.ndarray):
        h, _ = np.histogram(flat, bins=bins.astype(np.float64), weights=w, density=density)
        return h.astype(x.dtype), bins.astype(x.dtype)
    if range is None:
        range = (flat.min(), flat.max()) if flat.size else (0, 0)
    lo, hi = float(range[0]), float(range[1])
    if lo == hi:
        lo, hi = lo - 0.5, hi + 0.5
    edges = np.linspace(lo, hi, bins + 1).astype(x.dtype)
    h, _ = np.histogram(flat, bins=edges.astype(np.float64), weights=w, density=density)
    return h.astype(x.dtype), edges


def _histogram_samples(dtype, rng):
    x = make_arg((4, 5), dtype, rng)
    w = make_arg((4, 5), dtype, rng, low=0, high=2)
    edges = np.array([-9, -2, 0, 1, 5, 9], dtype)
    return [SampleInput(x, (3,)), SampleInput(x, (6,), {"range": (-4.0, 4.0)}),
            SampleInput(x, (5,), {"weight": w, "density": True}),
            SampleInput(x, (edges,)), SampleInput(x, (edges,), {"weight": w}),
            SampleInput(x, (edges,), {"density": True}),
            SampleInput(np.ones(3, dtype), (3,)), SampleInput(x, (3,), {"range": (0.0, 0.0)})]


def _histogram_errors(rng):
    x = make_arg((4,), "float32", rng)
    return [ErrorInput(SampleInput(x, (3,), {"range": (4.0, 1.0)}), RuntimeError,
                       "min should not exceed max"),
            ErrorInput(SampleInput(x, (np.zeros((2, 2), np.float32),)), RuntimeError,
                       "bins tensor should have one dimension"),
            ErrorInput(SampleInput(x, (3,), {"weight": np.ones(3, np.float32)}), RuntimeError,
                       "if weight tensor is provided"),
            ErrorInput(SampleInput(make_arg((4,), "int64", rng), (3,)), NotImplementedError,
                       "histogramdd")]


def _bincount_ref(x, weights=None, minlength=0):
    if weights is None:
        return np.bincount(x, minlength=minlength).astype(np.int64)
    out = np.float32 if weights.dtype == np.float32 else np.float64
    return np.bincount(x, weights.astype(np.float64), minlength=minlength).astype(out)


def _bincount_samples(dtype, rng):
    x = make_arg((8,), dtype, rng, low=0, high=6)
    return [SampleInput(x), SampleInput(x, (), {"minlength": 10}),
            SampleInput(x, (make_arg((8,), "float32", rng),)),
            SampleInput(x, (make_arg((8,), "float64", rng), 3)),
            SampleInput(x, (make_arg((8,), "int64", rng),)),
            SampleInput(make_arg((0,), dtype, rng))]


def _bincount_errors(rng):
    return [ErrorInput(SampleInput(np.array([-1, 2])), RuntimeError,
                       E("bincount only supports 1-d non-negative integral inputs.")),
            ErrorInput(SampleInput(np.array([[1]])), RuntimeError, "1-d non-negative"),
            ErrorInput(SampleInput(np.array([1.0], np.float32)), NotImplementedError,
                       "not implemented for 'Float'"),
            ErrorInput(SampleInput(np.array([1, 2]), (), {"minlength": -1}), RuntimeError,
                       "minlength should be >= 0"),
            ErrorInput(SampleInput(np.array([1, 2]), (np.array([1.0]),)), RuntimeError,
                       "weights should be 1-d and have the same length as input")]


OPS = [
    OpInfo("sort", _sort_ref, _sort_samples, dtypes=ALL_REAL, supports_out=True,
           error_inputs=_sort_errors, grad_input_filter=_no_grad_ties, op_records=("sort",)),
    OpInfo("argsort", _argsort_ref, _sort_samples, dtypes=ALL_REAL, supports_grad=False,
           error_inputs=_sort_errors, op_records=("argsort",)),
    OpInfo("msort", _msort_ref, _msort_samples, dtypes=ALL_REAL, supports_out=True,
           grad_input_filter=_no_grad_ties, op_records=("msort",)),
    OpInfo("topk", _topk_ref, _topk_samples, dtypes=NO_BOOL, supports_out=True,
           error_inputs=_topk_errors, grad_input_filter=_no_grad_ties, op_records=("topk",)),
    OpInfo("kthvalue", _kthvalue_ref, _kthvalue_samples, dtypes=NO_BOOL, supports_out=True,
           error_inputs=_kthvalue_errors, grad_input_filter=_no_grad_ties,
           op_records=("kthvalue",)),
    OpInfo("median", _median_ref(False), _median_samples, dtypes=NO_BOOL, supports_out=True,
           error_inputs=_median_errors("median"), grad_input_filter=_no_grad_ties,
           op_records=("median", "median.dim")),
    OpInfo("nanmedian", _median_ref(True), _median_samples, dtypes=NO_BOOL, supports_out=True,
           error_inputs=_median_errors("nanmedian"), grad_input_filter=_no_grad_ties,
           op_records=("nanmedian", "nanmedian.dim")),
    OpInfo("mode", _mode_ref, _mode_samples, dtypes=NO_BOOL, error_inputs=_mode_errors,
           grad_input_filter=_no_grad_ties, op_records=("mode",)),
    OpInfo("quantile", _quantile_ref(False), _quantile_samples, dtypes=FLOATS, supports_out=True,
           error_inputs=_quantile_errors, grad_input_filter=_quantile_grad_filter,
           op_records=("quantile", "_quantile_positions", "_take_along_dim"), **TOL),
    OpInfo("nanquantile", _quantile_ref(True), _quantile_samples, dtypes=FLOATS,
           supports_out=True, error_inputs=_quantile_errors,
           grad_input_filter=_quantile_grad_filter, op_records=("nanquantile",), **TOL),
    OpInfo("unique", _unique_ref, _unique_samples, dtypes=ALL_REAL, supports_grad=False,
           op_records=("_unique2", "unique_dim")),
    OpInfo("unique_consecutive", _unique_consecutive_ref, _unique_consecutive_samples,
           dtypes=ALL_REAL, supports_grad=False, op_records=("unique_consecutive",)),
    OpInfo("searchsorted", _searchsorted_ref, _searchsorted_samples, dtypes=NO_BOOL,
           method=False, supports_out=True, supports_grad=False,
           error_inputs=_searchsorted_errors, op_records=("searchsorted.Tensor",)),
    OpInfo("bucketize", _bucketize_ref, _bucketize_samples, dtypes=NO_BOOL, method=False,
           supports_out=True, supports_grad=False, error_inputs=_bucketize_errors,
           op_records=("bucketize.Tensor",)),
    OpInfo("histc", _histc_ref, _histc_samples, dtypes=FLOATS, supports_out=True,
           supports_grad=False, error_inputs=_histc_errors, op_records=("histc",)),
    OpInfo("histogram", _histogram_ref, _histogram_samples, dtypes=FLOATS, supports_grad=False,
           error_inputs=_histogram_errors,
           op_records=("histogram.bin_ct", "histogram.bins_tensor")),
    OpInfo("bincount", _bincount_ref, _bincount_samples, dtypes=INTS, supports_out=True,
           supports_grad=False, error_inputs=_bincount_errors, op_records=("bincount",)),
]
