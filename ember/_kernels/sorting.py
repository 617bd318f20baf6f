"""Kernels of sorting, selection, uniqueness, searching and histograms (NumPy only; see
ember/_ops/sorting.py). Sorts are stable (ties keep their input order; NaN sorts as the
largest value, like torch)."""
import numpy as np

from ember._kernels.layout import contiguous_result, follows_inputs
from ember._kernels.util import wrap_dim
from ember._kernels.reduction import is_float, not_implemented, tname


def _no_complex(a, msg=None, kname=None):
    if a.dtype.kind == "c":
        if kname is not None:
            raise not_implemented(kname, a.dtype)
        raise RuntimeError(msg)


def _orderable(a):
    """``a`` with the same order in a dtype NumPy sorts NaN-last: bfloat16 (ml_dtypes,
    whose comparison sort leaves NaNs in place) as float32, exactly."""
    if a.dtype.kind == "V" and a.dtype.itemsize == 2:
        return a.astype(np.float32)
    return a


def argsort_along(a, d, descending=False):
    """Stable argsort along axis ``d`` (descending keeps ties in input order)."""
    a = _orderable(a)
    if not descending:
        return np.argsort(a, axis=d, kind="stable").astype(np.int64)
    n = a.shape[d]
    i = np.argsort(np.flip(a, d), axis=d, kind="stable")
    return (n - 1 - np.flip(i, d)).astype(np.int64)


# -------------------------------------------------------------------- gather / scatter

def _bshape(a_shape, i_shape, d):
    """Broadcast of two shapes except along ``d`` (where each keeps its own size)."""
    a_rest = a_shape[:d] + (1,) + a_shape[d + 1:]
    i_rest = i_shape[:d] + (1,) + i_shape[d + 1:]
    b = np.broadcast_shapes(a_rest, i_rest)
    return b[:d] + (a_shape[d],) + b[d + 1:], b[:d] + (i_shape[d],) + b[d + 1:]


def take_along_dim(a, idx, dim):
    if a.ndim == 0:
        return a.copy()
    d = wrap_dim(dim, a.ndim)
    if idx.ndim != a.ndim:
        raise RuntimeError(f"torch.take_along_dim(): input and indices should have the same "
                           f"number of dimensions, but got {a.ndim} dimensions for input, and "
                           f"{idx.ndim} dimensions for indices")
    sa, si = _bshape(a.shape, idx.shape, d)
    return np.take_along_axis(np.broadcast_to(a, sa), np.broadcast_to(idx, si), d)


def take_along_dim_backward(g, shape, idx, dim):
    """Scatter-add ``g`` into zeros of ``shape`` at ``idx`` along ``dim``."""
    shape = tuple(shape)
    out = np.zeros(shape, g.dtype)
    if len(shape) == 0:
        out[()] = g
        return out
    d = wrap_dim(dim, len(shape))
    g, idx = np.broadcast_arrays(g, idx)
    grids = list(np.indices(idx.shape, sparse=True))
    grids[d] = idx
    np.add.at(out, tuple(grids), g)
    return out


# -------------------------------------------------------------------- sort family

@follows_inputs             # values and indices laid out as the input, as torch's
def sort(a, dim=-1, descending=False, stable=False):
    _no_complex(a, " Sort does not support complex dtypes on CPU")
    d = wrap_dim(dim, a.ndim)
    if a.ndim == 0:
        return a.copy(), np.zeros((), np.int64)
    idx = argsort_along(a, d, descending)
    if not stable:
        idx = _unstable_sort_order(a, idx, d, descending)
    return np.take_along_axis(a, idx, d), idx


_SORT_REPLAY_BUDGET = 1 << 16   # elements of tied rows sorts replay in Python per call


def _unstable_sort_order(a, idx, d, descending):
    """``idx`` (the stable order) with the rows torch's unstable sort orders differently
    replayed: libstdc++'s ``std::sort`` of (value, index) pairs, NaN above every number.
    Rows of at most 16 elements (insertion sort, stable) and rows without equal values
    come out alike; beyond the budget the stable order stays."""
    n = a.shape[d]
    if n <= 16:
        return idx
    rows = np.moveaxis(_orderable(a), d, -1).reshape(-1, n)
    srt = np.take_along_axis(rows, np.moveaxis(idx, d, -1).reshape(-1, n), 1)
    same = srt[:, 1:] == srt[:, :-1]
    if is_float(srt.dtype):
        same |= np.isnan(srt[:, 1:]) & np.isnan(srt[:, :-1])
    todo = np.flatnonzero(same.any(1))
    if todo.size == 0 or todo.size * n > _SORT_REPLAY_BUDGET:
        return idx
    from ember._kernels.stl_select import _sort

    def isnan(v):
        return v != v
    if descending:
        def less(x, y):
            return x[0] > y[0] or (isnan(x[0]) and not isnan(y[0]))
    else:
        def less(x, y):
            return x[0] < y[0] or (isnan(y[0]) and not isnan(x[0]))
    out = np.moveaxis(idx, d, -1).reshape(-1, n).copy()
    for r in todo:
        pairs = list(zip(rows[r].tolist(), range(n)))
        _sort(pairs, 0, n, less)
        out[r] = [i for _, i in pairs]
    return np.moveaxis(out.reshape(np.moveaxis(idx, d, -1).shape), -1, d)


def argsort(a, dim=-1, descending=False, stable=False):
    return sort(a, dim, descending, stable)[1]


def topk(a, k, dim=-1, largest=True, sorted=True):
    d = wrap_dim(dim, a.ndim)
    n = a.shape[d] if a.ndim else 1
    if not 0 <= k <= n:
        raise RuntimeError("selected index k out of range")
    _no_complex(a, " topk does not support complex dtypes on CPU")
    if a.dtype == np.bool_:
        raise RuntimeError("topk does not support bool dtypes on CPU")
    if a.ndim == 0:
        return a.copy(), np.zeros((), np.int64)
    if sorted and 0 < k and d == a.ndim - 1 and n <= _TOPK_SORT_MAX:
        found = _topk_by_sort(a, k, largest)
        if found is not None:
            return found
    if 0 < k < n and a.dtype != np.bool_:
        idx = _topk_select(a, k, d, largest)
    else:
        idx = np.take(argsort_along(a, d, largest), np.arange(k), axis=d)
    if k > 0:
        idx = _torch_tie_order(a, idx, k, d, largest, sorted)
    return np.take_along_axis(a, idx, d), idx


_TIE_REPLAY_BUDGET = 1 << 18    # elements of rows replayed in Python per call


def _torch_tie_order(a, idx, k, d, largest, sorted_):
    """``idx`` (the stable order's top ``k``) reordered as torch returns it: rows where ties
    decide the answer (or every row, for ``sorted=False``) replay torch's selection
    (ember/_kernels/stl_select.py), within a budget; beyond it the stable order stays."""
    n = a.shape[d]
    rows = np.moveaxis(_orderable(a), d, -1).reshape(-1, n)
    picked = np.moveaxis(idx, d, -1).reshape(-1, k)
    vals = np.take_along_axis(rows, picked, 1)
    if sorted_:
        need = _ties_matter(rows, vals)
    else:
        need = np.ones(rows.shape[0], bool)
    todo = np.flatnonzero(need)
    if todo.size == 0 or todo.size * n > _TIE_REPLAY_BUDGET:
        return idx
    from ember._kernels.stl_select import topk_order
    less = _topk_less(largest)
    picked = picked.copy()
    for r in todo:
        pairs = list(zip(rows[r].tolist(), range(n)))
        picked[r] = [i for _, i in topk_order(pairs, k, less, sorted_)]
    shape = np.moveaxis(idx, d, -1).shape
    return np.moveaxis(picked.reshape(shape), -1, d)


def _ties_matter(rows, vals):
    """Per row: two selected values are equal, or the last selected value also occurs
    among the unselected (NaNs count as equal)."""
    def eq(x, y):
        same = x == y
        if is_float(x.dtype):
            same |= np.isnan(x) & np.isnan(y)
        return same
    dup = eq(vals[:, 1:], vals[:, :-1]).any(1) if vals.shape[1] > 1 else \
        np.zeros(len(vals), bool)
    edge = vals[:, -1:]
    return dup | (eq(rows, edge).sum(1) > eq(vals, edge).sum(1))


def _topk_less(largest):
    import math

    def isnan(v):
        return isinstance(v, float) and math.isnan(v)
    if largest:
        return lambda x, y: (isnan(x[0]) and not isnan(y[0])) or x[0] > y[0]
    return lambda x, y: (not isnan(x[0]) and isnan(y[0])) or x[0] < y[0]


_TOPK_SORT_MAX = 256        # row length up to which topk sorts whole rows (few NumPy calls)


def _topk_by_sort(a, k, largest):
    """Sorted topk along the last axis of short rows: the first ``k`` of each row's stable
    order, or None where ties (or NaNs) decide the answer (torch's selection is then
    replayed): a tie matters only between neighbours among the first k + 1 sorted."""
    n = a.shape[-1]
    rows = _orderable(a).reshape(-1, n)
    if is_float(rows.dtype):
        if np.isnan(rows).any():
            return None
        order = np.argsort(np.negative(rows) if largest else rows, axis=1, kind="stable")
    else:
        order = argsort_along(rows, 1, largest)
    r = np.arange(rows.shape[0])[:, None]
    top = order[:, :k + 1]
    vals = rows[r, top]
    if (vals[:, 1:] == vals[:, :-1]).any():
        return None
    idx = top[:, :k].astype(np.int64, copy=False)
    shape = a.shape[:-1] + (k,)
    return a.reshape(-1, n)[r, idx].reshape(shape), idx.reshape(shape)


def _topk_select(a, k, d, largest):
    """The first ``k`` of the stable (value, index) order without a full sort: a partition
    finds the k-th value, ties with it are taken in index order, and only the ``k``
    selected are sorted."""
    n = a.shape[d]
    a = _orderable(a)
    t = np.take(np.partition(a, n - k if largest else k - 1, axis=d), [n - k if largest
                                                                       else k - 1], axis=d)
    if is_float(a.dtype):
        an, tn = np.isnan(a), np.isnan(t)
        beyond = ((a > t) | (an & ~tn)) if largest else ((a < t) | (~an & tn))
        equal = (a == t) | (an & tn)
    else:
        beyond = (a > t) if largest else (a < t)
        equal = a == t
    need = k - np.sum(beyond, axis=d, keepdims=True)
    if np.array_equal(np.sum(equal, axis=d, keepdims=True), need):
        sel = beyond | equal                    # no ties cut at the k-th value (the usual case)
    else:
        sel = beyond | (equal & (np.cumsum(equal, axis=d) <= need))
    # each row holds exactly k selected: their positions in index order, row by row
    rows = np.moveaxis(sel, d, -1)
    cols = np.nonzero(rows.reshape(-1, n))[1].reshape(rows.shape[:-1] + (k,))
    cand = np.moveaxis(cols, -1, d)
    order = argsort_along(np.take_along_axis(a, cand, d), d, largest)
    return np.take_along_axis(cand, order, d).astype(np.int64)


def _select_at(a, d, pos, keepdim):
    """Values and indices of the stable ascending sort of ``a`` at positions ``pos``
    (an int array broadcastable to the result with size 1 along ``d``)."""
    order = argsort_along(a, d)
    idx = np.take_along_axis(order, pos, d)
    vals = np.take_along_axis(a, idx, d)
    if not keepdim:
        vals, idx = np.squeeze(vals, d), np.squeeze(idx, d)
    return vals, idx


def _pos_shape(a, d):
    return a.shape[:d] + (1,) + a.shape[d + 1:]


def kthvalue(a, k, dim=-1, keepdim=False):
    d = wrap_dim(dim, a.ndim)
    if a.ndim and a.shape[d] == 0:
        raise IndexError(f"kthvalue(): Expected reduction dim {d} to have non-zero size.")
    n = a.shape[d] if a.ndim else 1
    if not 1 <= k <= n:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {d}")
    if a.ndim == 0:
        return a.copy(), np.zeros((), np.int64)
    if a.dtype.kind in "bc":            # torch's CPU kernel has no bool or complex instance
        raise not_implemented("kthvalue_cpu", a.dtype)
    vals, idx = _select_at(a, d, np.full(_pos_shape(a, d), k - 1, np.int64), True)
    idx = _kth_tie_index(a, d, k - 1, vals, idx)
    vals = np.take_along_axis(a, idx, d)          # (a -0.0 tied with 0.0 comes out as is)
    if not keepdim:
        vals, idx = np.squeeze(vals, d), np.squeeze(idx, d)
    return vals, idx


def _kth_tie_index(a, d, k, vals, idx):
    """``idx`` (the stable order's k-th, keepdim) with the rows where the k-th value occurs
    more than once (NaNs equal) replaced by the index torch's quickselect leaves there."""
    n = a.shape[d]
    rows = np.moveaxis(_orderable(a), d, -1).reshape(-1, n)
    kth = np.moveaxis(_orderable(vals), d, -1).reshape(-1, 1)
    same = rows == kth
    if is_float(rows.dtype):
        same |= np.isnan(rows) & np.isnan(kth)
    todo = np.flatnonzero(same.sum(1) > 1)
    if todo.size == 0 or todo.size * n > _TIE_REPLAY_BUDGET:
        return idx
    out = np.moveaxis(idx, d, -1).reshape(-1).copy()
    for r in todo:
        out[r] = _quickselect_index(rows[r].tolist(), k)
    return np.moveaxis(out.reshape(np.moveaxis(idx, d, -1).shape), -1, d)


def _quickselect_index(vals, k):
    """The original index that ends at position ``k`` of ``vals`` after torch's CPU
    selection (kthvalue): a median-of-three quickselect, swapping values and indices
    together, with NaN above every number."""
    idx = list(range(len(vals)))

    def gt(x, y):
        return x > y or (x != x and y == y)

    def swap(i, j):
        vals[i], vals[j] = vals[j], vals[i]
        idx[i], idx[j] = idx[j], idx[i]
    lo, hi = 0, len(vals) - 1
    while hi > lo:
        if hi == lo + 1:
            if gt(vals[lo], vals[hi]):
                swap(lo, hi)
            break
        swap(lo + (hi - lo) // 2, lo + 1)       # median of three to ``lo``, ordered ends
        if gt(vals[lo + 1], vals[hi]):
            swap(lo + 1, hi)
        if gt(vals[lo], vals[hi]):
            swap(lo, hi)
        if gt(vals[lo + 1], vals[lo]):
            swap(lo + 1, lo)
        i, j, pivot = lo + 1, hi, vals[lo]
        while True:
            i += 1
            while gt(pivot, vals[i]):
                i += 1
            j -= 1
            while gt(vals[j], pivot):
                j -= 1
            if j < i:
                break
            swap(i, j)
        swap(lo, j)
        if j <= k:
            lo = i
        if j >= k:
            hi = j - 1
    return idx[k]


def _median_pos(a, d, ignore_nan):
    n = a.shape[d]
    if is_float(a.dtype):
        nans = np.sum(np.isnan(a), axis=d, keepdims=True)
        if ignore_nan:
            return np.maximum((n - nans - 1) // 2, 0)
        return np.where(nans > 0, n - nans, (n - 1) // 2)
    return np.full(_pos_shape(a, d), (n - 1) // 2, np.int64)


def _median_dim(a, dim, keepdim, ignore_nan, name):
    _no_complex(a, kname="median_cpu")
    d = wrap_dim(dim, a.ndim)
    if a.ndim and a.shape[d] == 0:
        raise IndexError(f"{name}(): Expected reduction dim {d} to have non-zero size.")
    if a.ndim == 0:
        return a.copy(), np.zeros((), np.int64)
    return _select_at(a, d, _median_pos(a, d, ignore_nan), keepdim)


def _median_all(a, ignore_nan):
    _no_complex(a, kname="median_cpu")
    if a.size == 0:
        if is_float(a.dtype):
            return np.full((), np.nan, a.dtype)
        return np.full((), np.iinfo(a.dtype).min if a.dtype.kind in "iu" else 0, a.dtype)
    flat = a.reshape(-1)
    return _median_dim(flat, 0, False, ignore_nan, "median")[0]


def median(a):
    return _median_all(a, False)


def median_dim(a, dim, keepdim=False):
    return _median_dim(a, dim, keepdim, False, "median")


def nanmedian(a):
    return _median_all(a, True)


def nanmedian_dim(a, dim, keepdim=False):
    return _median_dim(a, dim, keepdim, True, "nanmedian")


def mode(a, dim=-1, keepdim=False):
    """Most frequent value (the smallest among equally frequent ones) and the index of its
    last occurrence, like torch's CPU kernel."""
    _no_complex(a, kname="mode_cpu")
    d = wrap_dim(dim, a.ndim)
    if a.ndim == 0:
        return a.copy(), np.zeros((), np.int64)
    n = a.shape[d]
    out_shape = a.shape[:d] + ((1,) if keepdim else ()) + a.shape[d + 1:]
    if n == 0:
        if int(np.prod(out_shape)) != 0:
            raise IndexError(f"mode(): Expected reduction dim {d} to have non-zero size.")
        return np.zeros(out_shape, a.dtype), np.zeros(out_shape, np.int64)
    x = np.moveaxis(a, d, -1)
    order = np.argsort(_orderable(x), axis=-1, kind="stable")
    s = np.take_along_axis(x, order, -1)
    new = np.ones(s.shape, np.bool_)
    new[..., 1:] = s[..., 1:] != s[..., :-1]
    pos = np.arange(n)
    start = np.maximum.accumulate(np.where(new, pos, 0), axis=-1)
    p = np.argmax(pos - start + 1, axis=-1)[..., None]
    vals = np.take_along_axis(s, p, -1)
    idx = np.take_along_axis(order, p, -1).astype(np.int64)
    _mode_replay(x, s, new, vals, idx)
    vals, idx = np.moveaxis(vals, -1, d), np.moveaxis(idx, -1, d)
    if not keepdim:
        vals, idx = np.squeeze(vals, d), np.squeeze(idx, d)
    # (np.ascontiguousarray would turn a 0-d result into shape (1,))
    return np.array(vals, order="C"), np.array(idx, order="C")


def _mode_replay(x, s, new, vals, idx):
    """Rows of ``x`` (last axis) whose answer depends on the order of equal values are
    recomputed as torch's kernel does: libstdc++'s unstable ``std::sort`` of (value, index)
    by value (stable only below 17 elements, and not at all with NaNs), then the first
    longest run of ``!=``-separated values, its last index. In place on ``vals``/``idx``."""
    n = x.shape[-1]
    rows = _orderable(x).reshape(-1, n)
    nan = np.isnan(rows).any(1) if is_float(rows.dtype) else np.zeros(len(rows), bool)
    repeats = (~new.reshape(-1, n)).any(1)
    todo = np.flatnonzero(nan | (repeats & (n > 16)))
    if todo.size == 0 or todo.size * n > _TIE_REPLAY_BUDGET:
        return
    from ember._kernels.stl_select import _sort
    flat_v, flat_i = vals.reshape(-1), idx.reshape(-1)
    for r in todo:
        pairs = list(zip(rows[r].tolist(), range(n)))
        _sort(pairs, 0, n, lambda p, q: p[0] < q[0])
        best, run = 0, 0
        for j in range(n):
            run += 1
            if j == n - 1 or pairs[j][0] != pairs[j + 1][0]:
                if run > best:
                    best, pick = run, pairs[j][1]
                run = 0
        flat_i[r] = pick
        flat_v[r] = x.reshape(-1, n)[r, pick]


def quantile_positions(ranks, interpolation):
    """Lower and upper sorted positions for quantile ranks (float array)."""
    if interpolation == "nearest":
        lo = hi = np.round(ranks)
    elif interpolation == "lower":
        lo = hi = np.floor(ranks)
    elif interpolation == "higher":
        lo = hi = np.ceil(ranks)
    else:
        lo, hi = np.floor(ranks), np.ceil(ranks)
    return lo.astype(np.int64), np.array(hi, np.int64)


# -------------------------------------------------------------------- unique

def _empty_long():
    return np.zeros((0,), np.int64)


def unique2(a, sorted=True, return_inverse=False, return_counts=False):
    _no_complex(a, kname="unique")
    flat = a.reshape(-1)
    dense = _unique_dense_ints(flat)
    if dense is not None:
        u, inv, cnt = dense
    else:
        u, inv, cnt = np.unique(_orderable(flat), return_inverse=True, return_counts=True,
                                equal_nan=False)
    return (u.astype(a.dtype, copy=False), inv.reshape(a.shape).astype(np.int64) if return_inverse else _empty_long(),
            cnt.astype(np.int64) if return_counts else _empty_long())


def _unique_dense_ints(flat):
    """np.unique's three answers by counting, for integers whose range is at most a few
    times their number (class labels, token ids): O(n) instead of a sort (100k labels in
    0..511: ~0.5 vs 10 ms). None for other inputs."""
    if flat.dtype.kind not in "iu" or flat.size < 1024:
        return None
    lo, hi = int(flat.min()), int(flat.max())
    if hi - lo > 4 * flat.size:
        return None
    shifted = flat.astype(np.int64) - lo          # (int64: no wrap-around for int8 and the like)
    cnt = np.bincount(shifted, minlength=hi - lo + 1)
    present = np.flatnonzero(cnt)
    slot = np.zeros(hi - lo + 1, np.int64)
    slot[present] = np.arange(present.size)
    return (present + lo).astype(flat.dtype), slot[shifted], cnt[present]


def _empty_along(a, d):
    """unique along ``d`` of an empty ``a``: the answer when ``d`` is the empty dimension,
    torch's error when another is; None for a non-empty ``a``."""
    if a.shape[d] == 0:
        return a.copy(), _empty_long(), _empty_long()
    if a.size == 0:
        raise RuntimeError("There are 0 sized dimensions, and they aren't selected, so unique "
                           "cannot be applied")
    return None


def unique_dim(a, dim, sorted=True, return_inverse=False, return_counts=False):
    _no_complex(a, kname="unique")
    d = wrap_dim(dim, a.ndim)
    if a.ndim == 0:
        a = a.reshape(1)
    empty = _empty_along(a, d)
    if empty is not None:
        return empty
    u, inv, cnt = np.unique(a, axis=d, return_inverse=True, return_counts=True)
    return (np.ascontiguousarray(u),
            inv.reshape(-1).astype(np.int64) if return_inverse else _empty_long(),
            cnt.astype(np.int64) if return_counts else _empty_long())


def unique_consecutive(a, return_inverse=False, return_counts=False, dim=None):
    _no_complex(a, kname="unique_consecutive")
    if dim is None:
        x = a.reshape(-1)
        n = x.size
        new = np.ones(n, np.bool_)
        new[1:] = x[1:] != x[:-1]
        u = x[new]
    else:
        d = wrap_dim(dim, a.ndim)
        if a.ndim == 0:
            a = a.reshape(1)
        empty = _empty_along(a, d)
        if empty is not None:
            return empty
        n = a.shape[d]
        m = np.moveaxis(a, d, 0).reshape(n, -1)
        new = np.ones(n, np.bool_)
        new[1:] = np.any(m[1:] != m[:-1], axis=1)
        u = np.ascontiguousarray(np.compress(new, a, axis=d))
    inv = np.cumsum(new) - 1
    if dim is None:
        inv = inv.reshape(a.shape)
    starts = np.flatnonzero(new)
    cnt = np.diff(np.append(starts, n))
    return (u, inv.astype(np.int64) if return_inverse else _empty_long(),
            cnt.astype(np.int64) if return_counts else _empty_long())


# -------------------------------------------------------------------- searching

def _searchsorted_nd(seq, v, right):
    """Row-wise searchsorted for matching leading dims: one stable sort of the merged
    rows (values before equal boundaries for side='left', after them for 'right')."""
    m, k = seq.shape[-1], v.shape[-1]
    dt = np.result_type(seq, v)
    seq, v = seq.astype(dt, copy=False), v.astype(dt, copy=False)
    merged = np.concatenate([seq, v] if right else [v, seq], axis=-1)
    order = np.argsort(merged, axis=-1, kind="stable")
    is_seq = order < m if right else order >= k
    counts = np.cumsum(is_seq, axis=-1)
    vpos = np.argsort(is_seq, axis=-1, kind="stable")[..., :k]     # where the values sit
    vidx = np.take_along_axis(order - m if right else order, vpos, -1)
    res = np.empty(v.shape, np.int64)
    np.put_along_axis(res, vidx, np.take_along_axis(counts, vpos, -1), -1)
    return res


def searchsorted(seq, v, out_int32=False, right=False, side=None, sorter=None):
    _no_complex(seq, kname="searchsorted_out_cpu")
    v = np.asarray(v)
    _no_complex(v, kname="searchsorted_out_cpu")
    if seq.ndim == 0:
        raise RuntimeError("torch.searchsorted(): boundaries tensor should have positive "
                           "dimension, but got 0 dimension")
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(f"torch.searchsorted(): side can only be 'left' or 'right' but "
                               f"got {side}")
        if right and side == "left":
            raise RuntimeError("torch.searchsorted(): side and right can't be set to opposites, "
                               "got side of left while right was True")
        right = side == "right"
    if sorter is not None:
        if sorter.dtype != np.int64:
            raise RuntimeError(f"torch.searchsorted(): sorter must be a tensor of long dtype but "
                               f"got dtype {tname(sorter.dtype)}")
        if sorter.shape != seq.shape:
            raise RuntimeError(f"torch.searchsorted(): boundary and sorter must have the same "
                               f"size, but got boundary tensor {list(seq.shape)}and got sorter "
                               f"tensor {list(sorter.shape)}")
        if sorter.size and (sorter.min() < 0 or sorter.max() >= seq.shape[-1]):
            raise RuntimeError("torch.searchsorted(): sorter index out of range")
        seq = np.take_along_axis(seq, sorter, -1)
    if seq.ndim > 1 and (v.ndim != seq.ndim or v.shape[:-1] != seq.shape[:-1]):
        raise RuntimeError(f"torch.searchsorted(): boundaries tensor should be 1 dimension or "
                           f"the first N-1 dimensions of boundaries tensor and input value "
                           f"tensor must match, but we got boundaries tensor {list(seq.shape)} "
                           f"and input value tensor {list(v.shape)}")
    if seq.shape[-1] and not (seq[..., 1:] >= seq[..., :-1]).all() or \
            seq.dtype.kind == "f" and seq.shape[-1] == 1 and np.isnan(seq).any():
        r = _bisect(seq, v, right)       # unsorted rows, NaN boundaries: torch's own answers
    elif seq.ndim == 1:
        dt = np.result_type(seq, v)
        r = np.searchsorted(seq.astype(dt, copy=False), v.astype(dt, copy=False),
                            side="right" if right else "left")
    else:
        r = _searchsorted_nd(seq, v, right)
    return np.asarray(r, np.int32 if out_int32 else np.int64)


def _bisect(seq, v, right):
    """torch's binary search, vectorised over the values (found by experiment: it moves
    past the middle boundary b when ``not b >= v``, ``not b > v`` for side='right'): what
    it answers for rows that are not sorted, or hold NaN, where NumPy's search differs."""
    m = seq.shape[-1]
    if m == 0:
        return np.zeros(v.shape, np.int64)
    dt = np.result_type(seq, v)
    seq, v = seq.astype(dt, copy=False), v.astype(dt, copy=False)
    if seq.ndim == 1:
        seq = np.broadcast_to(seq, v.shape[:-1] + (m,)) if v.ndim else seq
    lo = np.zeros(v.shape, np.int64)
    hi = np.full(v.shape, m, np.int64)
    while True:
        active = lo < hi
        if not active.any():
            return lo
        mid = (lo + hi) // 2
        at = np.minimum(mid, m - 1)
        b = np.take_along_axis(seq, at, -1) if v.ndim else seq[at]
        with np.errstate(invalid="ignore"):
            past = ~(b > v) if right else ~(b >= v)
        lo = np.where(active & past, mid + 1, lo)
        hi = np.where(active & ~past, mid, hi)


def bucketize(a, boundaries, out_int32=False, right=False):
    if boundaries.ndim != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim("
                           f"{boundaries.ndim})")
    return searchsorted(boundaries, a, out_int32, right)


# -------------------------------------------------------------------- histograms

def histc(a, bins=100, min=0, max=0):
    if not is_float(a.dtype):
        raise not_implemented("histogram_cpu" if a.dtype.kind != "c" else "aminmax_cpu",
                              a.dtype)
    if bins <= 0:
        raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for "
                           f"dimension 0")
    if isinstance(min, complex) or isinstance(max, complex):
        raise RuntimeError("value cannot be converted to type double without overflow")
    lo, hi = float(min), float(max)
    if lo > hi:
        raise RuntimeError("torch.histc: max must be larger than min")
    ct = np.float64 if a.dtype == np.float64 else np.float32
    x = a.reshape(-1).astype(ct)
    if lo == hi and x.size:
        lo, hi = float(x.min()), float(x.max())
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    # torch's rule, in the input's computing type: bin = int((x - min) * bins / (max - min)),
    # the maximum itself in the last bin, values outside [min, max] not counted
    lo_c, hi_c = ct(lo), ct(hi)
    inside = x[(x >= lo_c) & (x <= hi_c)]
    with np.errstate(all="ignore"):
        pos = ((inside - lo_c) * ct(bins) / (hi_c - lo_c)).astype(np.int64)
    np.minimum(pos, bins - 1, out=pos)
    return np.bincount(pos, minlength=bins)[:bins].astype(a.dtype)


def _hist_checks(a, weight):
    if not is_float(a.dtype):
        raise not_implemented("histogramdd", a.dtype)
    if weight is not None and weight.shape != a.shape:
        raise RuntimeError(f"torch.histogramdd: if weight tensor is provided it should have the "
                           f"same shape as the input tensor excluding its innermost dimension, "
                           f"but got input with shape {[a.size, 1]} and weight with shape "
                           f"{list(weight.shape)}")
    return None if weight is None else weight.reshape(-1)


def histogram_bin_ct(a, bins=100, range=None, weight=None, density=False):
    w = _hist_checks(a, weight)
    if bins <= 0:
        raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for "
                           f"dimension 0")
    x = a.reshape(-1)
    if range is not None:
        lo, hi = float(range[0]), float(range[1])
        if lo > hi:
            raise RuntimeError(f"torch.histogramdd: min should not exceed max, but got min "
                               f"{lo:g} max {hi:g} for dimension 0")
    elif x.size:
        lo, hi = float(x.min()), float(x.max())
    else:                               # torch's default range of an empty input
        lo, hi = 0.0, 1.0
    if lo == hi:
        lo, hi = lo - 0.5, hi + 0.5
    # the edges are torch's linspace in the input's dtype (float32's middle edge of
    # (-2, 2) in 6 bins is -5.96e-08, not 0)
    from ember._dtype import from_numpy_dtype
    from ember._kernels.factory import linspace
    edges = linspace(lo, hi, bins + 1, from_numpy_dtype(a.dtype))
    h, _ = np.histogram(x, bins=edges.astype(np.float64), weights=w, density=density)
    return h.astype(a.dtype), edges


def histogram_bins_tensor(a, bins, weight=None, density=False):
    w = _hist_checks(a, weight)
    if bins.ndim != 1:
        raise RuntimeError(f"torch.histogramdd: bins tensor should have one dimension, but got "
                           f"{bins.ndim} dimensions in the bins tensor for dimension 0")
    h, _ = np.histogram(a.reshape(-1), bins=bins.astype(np.float64), weights=w,
                        density=density)
    return h.astype(a.dtype), bins.astype(a.dtype)


def bincount(a, weights=None, minlength=0):
    if not isinstance(minlength, (int, np.integer)) or isinstance(minlength, bool):
        raise TypeError(f"bincount(): argument 'minlength' must be int, not "
                        f"{type(minlength).__name__}")
    if a.dtype.kind not in "iu":
        raise not_implemented("bincount_cpu", a.dtype)
    if a.ndim != 1 or (a.size and a.min() < 0):
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if minlength < 0:
        raise RuntimeError("minlength should be >= 0")
    if weights is not None and (weights.ndim != 1 or weights.shape[0] != a.shape[0]):
        raise RuntimeError("weights should be 1-d and have the same length as input")
    if weights is None:
        return np.bincount(a, minlength=minlength).astype(np.int64)
    out = np.float32 if weights.dtype == np.float32 else np.float64
    return np.bincount(a, weights.astype(np.float64), minlength=minlength).astype(out)


# torch allocates these (values, indices) contiguous whatever the input's layout
topk, kthvalue, median_dim, nanmedian_dim, mode = map(
    contiguous_result, (topk, kthvalue, median_dim, nanmedian_dim, mode))
