"""Sorting, selection (topk, kthvalue, median, mode, quantile), uniqueness, searching and
histograms: op records, backward rules and the overloaded fronts (``median(x)`` /
``median(x, dim)``, ``unique``, ``histogram``...).

Values selected from the input (sort, topk, kthvalue, median.dim, mode) send their gradient
back to the selected indices with ``_take_along_dim_backward`` (ember/_ops/reduction.py);
full ``median()`` splits it evenly among ties (Note [ties] there). ``quantile`` is a
composite of ``sort`` and gathers, so its gradient (to the input and to ``q``) comes from
its parts, as in torch.
"""
from __future__ import annotations

import builtins

import numpy as np

from ember import _dtype
from ember._kernels import sorting as K
from ember._kernels.util import wrap_dim
from ember._ops.core import where_self
from ember._ops.registry import defop, OpDef, public, refuse_bool
from ember._ops.reduction import (take_along, take_along_backward, compare_mask, _evenly,
                                  _select_backward, amin, amax)
from ember._tensor import Tensor

# -------------------------------------------------------------------- sort family

sort = defop("sort(Tensor self, int dim=-1, bool descending=False, *, bool? stable=False) -> "
             "(Tensor values, Tensor indices)", K.sort, promote=None, saves=("indices",))


@sort.def_backward
def _(ctx, g, self, dim, descending, stable):
    if len(ctx.shapes[0]) == 0:
        return g[0]
    return take_along_backward(g[0], ctx.shapes[0], ctx.result[1], dim)


argsort = defop("argsort(Tensor self, int dim=-1, bool descending=False, *, bool stable=False) "
                "-> Tensor", K.argsort, promote=None, differentiable=False)


def _msort(self):
    return sort(self, 0, False, False)[0]


msort = defop("msort(Tensor self) -> Tensor", composite=_msort, promote=None)

topk = defop("topk(Tensor self, SymInt k, int dim=-1, bool largest=True, bool sorted=True) -> "
             "(Tensor values, Tensor indices)", K.topk, promote=None, saves=("indices",))


@topk.def_backward
def _(ctx, g, self, k, dim, largest, sorted):
    if len(ctx.shapes[0]) == 0:
        return g[0]
    return take_along_backward(g[0], ctx.shapes[0], ctx.result[1], dim)


kthvalue = defop("kthvalue(Tensor self, SymInt k, int dim=-1, bool keepdim=False) -> "
                 "(Tensor values, Tensor indices)", K.kthvalue, promote=None, saves=("indices",))


@kthvalue.def_backward
def _(ctx, g, self, k, dim, keepdim):
    return _select_backward(g[0], ctx.result[1], ctx.shapes[0], dim, keepdim)


# -------------------------------------------------------------------- median, mode

median_op = OpDef("median(Tensor self) -> Tensor", K.median, promote=None,
                  saves=("self", "result"), grad_name="MedianBackward0")
median_dim = OpDef("median.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, "
                   "Tensor indices)", K.median_dim, promote=None, saves=("indices",),
                   grad_name="MedianBackward1")
nanmedian_op = OpDef("nanmedian(Tensor self) -> Tensor", K.nanmedian, promote=None,
                     saves=("self", "result"), grad_name="NanmedianBackward0")
nanmedian_dim = OpDef("nanmedian.dim(Tensor self, int dim, bool keepdim=False) -> "
                      "(Tensor values, Tensor indices)", K.nanmedian_dim, promote=None,
                      saves=("indices",), grad_name="NanmedianBackward1")


def _full_backward(ctx, g, self):
    return _evenly(g, self, ctx.result, None, False)


def _dim_backward(ctx, g, self, dim, keepdim):
    return _select_backward(g[0], ctx.result[1], ctx.shapes[0], dim, keepdim)


for _op in (median_op, nanmedian_op):
    _op.def_backward(_full_backward)
for _op in (median_dim, nanmedian_dim):
    _op.def_backward(_dim_backward)
for _op, _kernel in ((median_op, "median_cpu"), (nanmedian_op, "median_cpu"),
                     (median_dim, "median_out"), (nanmedian_dim, "median_out")):
    refuse_bool(_op, f"\"{_kernel}\" not implemented for 'Bool'")


def _median_front(full, by_dim, name):
    def front(input, dim=None, keepdim=False, *, out=None):
        if dim is None:
            return full(input, out=out)
        if isinstance(dim, bool) or not hasattr(type(dim), "__index__"):
            from ember._ops.parser_errors import bad_argument
            raise bad_argument(name, "dim", 1, "int", dim, 1 + (keepdim is not False))
        if type(keepdim) is not bool:
            from ember._ops.parser_errors import bool_argument
            bool_argument(name, "keepdim", 2, keepdim)
        return by_dim(input, dim, keepdim, out=out)
    front.__name__ = front.__qualname__ = name
    front.__doc__ = (f"``{name}(input)``: the lower median of all elements; ``{name}(input, "
                     f"dim, keepdim=False)``: (values, indices) along ``dim``.")
    return public(name, method=True, numpy_names=True)(front)


median = _median_front(median_op, median_dim, "median")
nanmedian = _median_front(nanmedian_op, nanmedian_dim, "nanmedian")

mode = defop("mode(Tensor self, int dim=-1, bool keepdim=False) -> (Tensor values, "
             "Tensor indices)", K.mode, promote=None, saves=("indices",))


@mode.def_backward
def _(ctx, g, self, dim, keepdim):
    return _select_backward(g[0], ctx.result[1], ctx.shapes[0], dim, keepdim)


# -------------------------------------------------------------------- quantile

quantile_positions = OpDef("_quantile_positions(Tensor ranks, str interpolation) -> "
                           "(Tensor lo, Tensor hi)", K.quantile_positions, promote=None,
                           differentiable=False)
_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile_checks(self, q, interpolation):
    scalar_q = not isinstance(q, Tensor)
    if scalar_q and not 0 <= q <= 1:
        raise RuntimeError(f"quantile() q must be in the range [0, 1] but got {q:g}")
    if self.numel() == 0:
        raise RuntimeError("quantile() input tensor must be non-empty")
    if not scalar_q and q.ndim > 1:
        raise RuntimeError("quantile() q must be a scalar or 1D tensor")
    if self.dtype not in (_dtype.float32, _dtype.float64):
        raise RuntimeError("quantile() input tensor must be either float or double dtype")
    if not scalar_q and q.dtype != self.dtype:
        raise RuntimeError("quantile() q tensor must be same dtype as the input tensor")
    if interpolation not in _INTERPOLATIONS:
        raise RuntimeError(f"quantile() interpolation must be one of linear, lower, higher, "
                           f"midpoint or nearest, but got {interpolation}")
    if not scalar_q and q.numel() and (builtins.float(amin(q.detach(), (), False)) < 0 or
                                       builtins.float(amax(q.detach(), (), False)) > 1):
        raise RuntimeError("quantile() q values must be in the range [0, 1]")


def _quantile(self, q, dim, keepdim, interpolation, ignore_nan):
    _quantile_checks(self, q, interpolation)
    if dim is None:
        x = self.reshape(-1)
    else:
        d = wrap_dim(dim, self.ndim)
        x = self.reshape(1) if self.ndim == 0 else \
            self.permute(tuple(i for i in range(self.ndim) if i != d) + (d,))
    n = x.shape[-1]
    xs = sort(x, -1, False, False)[0]                       # NaN last
    k = compare_mask(xs, xs, "eq").sum(-1, True)            # non-NaN count, (..., 1)
    vector_q = isinstance(q, Tensor) and q.ndim == 1
    if isinstance(q, Tensor):
        qb = q.reshape((q.numel(),) + (1,) * x.ndim) if vector_q else q
    else:
        qb = q
    if ignore_nan:
        ranks = (k - 1).to(self.dtype) * qb
        ranks = where_self(compare_mask(ranks, 0, "lt"), 0, ranks)
    else:
        ranks = (k * 0 + (n - 1)).to(self.dtype) * qb
        ranks = where_self(compare_mask(k, n, "lt"), n - 1, ranks)
    lo, hi = quantile_positions(ranks, interpolation)
    src = xs.unsqueeze(0) if vector_q else xs
    below = take_along(src, lo, -1)
    if interpolation == "linear":
        res = below + (ranks - lo) * (take_along(src, hi, -1) - below)
    elif interpolation == "midpoint":
        res = below + (take_along(src, hi, -1) - below) * 0.5
    else:
        res = below
    res = res.squeeze(-1)
    if keepdim:
        if dim is None:
            res = res.reshape(tuple(res.shape[:1] if vector_q else ()) + (1,) * self.ndim)
        elif self.ndim:
            res = res.unsqueeze(d + 1 if vector_q else d)
    return res


quantile = defop("quantile(Tensor self, Tensor q, int? dim=None, bool keepdim=False, *, "
                 "str interpolation='linear') -> Tensor",
                 composite=lambda self, q, dim=None, keepdim=False, interpolation="linear":
                 _quantile(self, q, dim, keepdim, interpolation, False), promote=None)
nanquantile = defop("nanquantile(Tensor self, Tensor q, int? dim=None, bool keepdim=False, *, "
                    "str interpolation='linear') -> Tensor",
                    composite=lambda self, q, dim=None, keepdim=False, interpolation="linear":
                    _quantile(self, q, dim, keepdim, interpolation, True), promote=None)

# -------------------------------------------------------------------- unique

unique2 = OpDef("_unique2(Tensor self, bool sorted=True, bool return_inverse=False, "
                "bool return_counts=False) -> (Tensor, Tensor, Tensor)", K.unique2,
                promote=None, differentiable=False)
unique_dim = OpDef("unique_dim(Tensor self, int dim, bool sorted=True, "
                   "bool return_inverse=False, bool return_counts=False) -> "
                   "(Tensor, Tensor, Tensor)", K.unique_dim, promote=None, differentiable=False)
unique_consecutive_op = OpDef("unique_consecutive(Tensor self, bool return_inverse=False, "
                              "bool return_counts=False, int? dim=None) -> "
                              "(Tensor, Tensor, Tensor)", K.unique_consecutive, promote=None,
                              differentiable=False)


def _pick(res, return_inverse, return_counts):
    out, inv, cnt = res
    if return_inverse and return_counts:
        return out, inv, cnt
    if return_inverse:
        return out, inv
    if return_counts:
        return out, cnt
    return out


@public("unique", method=True)
def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):
    """The unique elements (or slices along ``dim``), sorted; optionally the inverse
    indices and the counts."""
    if dim is None:
        res = unique2(input, sorted, return_inverse, return_counts)
    else:
        res = unique_dim(input, dim, sorted, return_inverse, return_counts)
    return _pick(res, return_inverse, return_counts)


@public("unique_consecutive", method=True, numpy_names=True)
def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):
    """Collapse runs of equal consecutive elements (or slices along ``dim``)."""
    return _pick(unique_consecutive_op(input, return_inverse, return_counts, dim),
                 return_inverse, return_counts)


# -------------------------------------------------------------------- searching

searchsorted = defop("searchsorted.Tensor(Tensor sorted_sequence, Tensor input, *, "
                     "bool out_int32=False, bool right=False, str? side=None, "
                     "Tensor? sorter=None) -> Tensor", K.searchsorted, promote=None,
                     differentiable=False, method=False)
bucketize = defop("bucketize.Tensor(Tensor self, Tensor boundaries, *, bool out_int32=False, "
                  "bool right=False) -> Tensor", K.bucketize, promote=None,
                  differentiable=False, method=False)


def _refuse_two_bools(args):
    """torch searches in the common dtype of the two tensors: none for two bools."""
    a, b = (getattr(x, "_data", None) for x in args[:2])
    if a is not None and b is not None and a.dtype == np.bool_ and b.dtype == np.bool_:
        raise NotImplementedError("\"searchsorted_out_cpu\" not implemented for 'Bool'")


searchsorted.check_inputs = bucketize.check_inputs = _refuse_two_bools

# -------------------------------------------------------------------- histograms

histc = defop("histc(Tensor self, int bins=100, Scalar min=0, Scalar max=0) -> Tensor", K.histc,
              promote=None, differentiable=False)
histogram_bin_ct = OpDef("histogram.bin_ct(Tensor self, int bins=100, *, float[]? range=None, "
                         "Tensor? weight=None, bool density=False) -> (Tensor hist, "
                         "Tensor bin_edges)", K.histogram_bin_ct, promote=None,
                         differentiable=False)
histogram_bins_tensor = OpDef("histogram.bins_tensor(Tensor self, Tensor bins, *, "
                              "Tensor? weight=None, bool density=False) -> (Tensor hist, "
                              "Tensor bin_edges)", K.histogram_bins_tensor, promote=None,
                              differentiable=False)


@public("histogram", method=True)
def histogram(input, bins=100, *, range=None, weight=None, density=False, out=None):
    """(hist, bin_edges): ``bins`` equal-width bins over ``range`` (default: the data's
    min and max), or the edges given as a 1-D tensor."""
    if isinstance(bins, Tensor):
        return histogram_bins_tensor(input, bins, weight=weight, density=density, out=out)
    return histogram_bin_ct(input, bins, range=range, weight=weight, density=density, out=out)


bincount = defop("bincount(Tensor self, Tensor? weights=None, SymInt minlength=0) -> Tensor",
                 K.bincount, promote=None, differentiable=False)
