"""Matrix products: mm, bmm, mv, the ``add*`` family (addmm, addmv, addr, addbmm, baddbmm),
dot, vdot, inner, outer/ger, einsum, tensordot, kron, cross, chain_matmul, trace, cdist,
cov and corrcoef.

Primitives with a kernel (``ember/_kernels/blas.py``) carry backward rules written in
ember ops, so they are differentiable again; complex gradients follow PyTorch's convention
(grad times the conjugate derivative). Ops that torch itself builds out of others
(``inner``, ``outer``, ``kron``, ``tensordot``, ``chain_matmul``, ``cov``, ``corrcoef``) are
composites here too and get their autograd from their parts.

Note [einsum backward]: the gradient of operand k is an einsum of the output gradient with
the (conjugated) other operands into operand k's subscripts. A subscript repeated in
operand k (a diagonal) gets a fresh letter plus a constant identity operand tying the two;
a subscript that only operand k has (summed out there) is absent from the gradient einsum,
so the result is unsqueezed and expanded along it.
"""
from __future__ import annotations

import functools
import math

import warnings

import numpy as np

import ember

from ember._kernels import blas as K
from ember._kernels.util import half_in_float32
from ember._ops.core import (conj_if_complex, matmul, where_self,
                             clone, to_copy, real)
from ember._dispatch import check_int_list
from ember._ops.registry import FUNCTIONS, METHODS, OpDef, defop, public, refuse_bool, register
from ember._tensor import Tensor, _make


def _c(t):
    return conj_if_complex(t)


def _item(s):
    return s.item() if isinstance(s, Tensor) else s


def _scale(g, s):
    """torch's ``maybe_multiply(grad, s.conj())``."""
    s = _item(s)
    if s is not True and s == 1:
        return g
    if isinstance(s, complex):
        # a 0-dim tensor, not a Python complex: mul's rule conjugates tensors only
        dt = g._data.dtype if g.is_complex() else np.complex128
        return g * _const(np.asarray(s.conjugate(), dt))
    return g * s


def _as(t, dtype):
    return t if t.dtype == dtype else to_copy(t, dtype=dtype)


def _const(arr):
    return _make(np.asarray(arr))


def _constant(x):
    """An array-like in a Tensor position is a constant tensor (as the dispatcher does)."""
    if x is None or isinstance(x, Tensor):
        return x
    from ember._creation import as_tensor
    return as_tensor(x)


def _need_tensor(x, op, name, pos):
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument '{name}' (position {pos}) must be Tensor, not "
                        f"{type(x).__name__}")


# -------------------------------------------------------------------- mm, bmm, mv

def _transposed_layout(t):
    """True when ``t``'s last two dims are stored transposed (column-major), like
    ``weight.t()``: its gradient is then computed in that layout too, so that the gradient
    of the underlying parameter comes out contiguous (torch does the same)."""
    if t.dim() < 2:
        return False
    st = t.stride()
    return st[-2] == 1 and st[-1] == t.shape[-2] and t.shape[-1] != 1 and t.shape[-2] != 1


def _product_like(prod, a, b, like):
    """``prod(a, b)`` laid out like ``like`` (see _transposed_layout)."""
    if _transposed_layout(like):
        return prod(b.mT, a.mT).mT
    return prod(a, b)


mm = defop("mm(Tensor self, Tensor mat2) -> Tensor", half_in_float32(K.mm), promote=None,
           saves=("self", "mat2"), autocast="lower")


@mm.def_backward
def _(ctx, g, self, mat2):
    n = ctx.needs_input_grad
    return (_product_like(mm, g, _c(mat2).mT, self) if n[0] else None,
            _product_like(mm, _c(self).mT, g, mat2) if n[1] else None)


linear = defop("linear(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor",
               half_in_float32(K.linear), promote=None, saves=("input", "weight"),
               autocast="lower", function=False, method=False, grad_name="AddmmBackward0")


@linear.def_backward
def _(ctx, g, x, w, b):
    """Rows folded: grad_input = g W, grad_weight = g^T x (contiguous like the weight),
    grad_bias = the column sums of g."""
    n = ctx.needs_input_grad
    out_f, in_f = w.shape
    flat = x.dim() == 2
    rows = math.prod(x.shape[:-1])              # (not -1: in_f or out_f may be 0)
    g2 = g if flat else g.reshape(rows, out_f)
    gb = g2.sum(0) if n[2] else None        # first: g is in cache, its producer just wrote it
    gx = gw = None
    if n[0]:
        gx = mm(g2, _c(w))
        if not flat:
            gx = gx.reshape(x.shape)
    if n[1]:
        gw = mm(g2.mT, _c(x) if flat else _c(x).reshape(rows, in_f))
    return gx, gw, gb


bmm = defop("bmm(Tensor self, Tensor mat2) -> Tensor", half_in_float32(K.bmm), promote=None,
            saves=("self", "mat2"), autocast="lower")


@bmm.def_backward
def _(ctx, g, self, mat2):
    n = ctx.needs_input_grad
    return (_product_like(bmm, g, _c(mat2).mT, self) if n[0] else None,
            _product_like(bmm, _c(self).mT, g, mat2) if n[1] else None)


mv = defop("mv(Tensor self, Tensor vec) -> Tensor", half_in_float32(K.mv), promote=None,
           saves=("self", "vec"), autocast="lower")


@mv.def_backward
def _(ctx, g, self, vec):
    n = ctx.needs_input_grad
    return (_outer(g, _c(vec)) if n[0] else None,
            mv(_c(self).mT, g) if n[1] else None)


# -------------------------------------------------------------------- add* variants

_ADD_OPTS = dict(promote=None, inplace=True, autocast="lower")

addmm = defop("addmm(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1)"
              " -> Tensor", half_in_float32(K.addmm), saves=("mat1", "mat2"), **_ADD_OPTS)


@addmm.def_backward
def _(ctx, g, self, mat1, mat2, beta, alpha):
    n = ctx.needs_input_grad
    return (_scale(g, beta) if n[0] else None,
            _scale(_product_like(mm, g, _c(mat2).mT, mat1), alpha) if n[1] else None,
            _scale(_product_like(mm, _c(mat1).mT, g, mat2), alpha) if n[2] else None)


addmv = defop("addmv(Tensor self, Tensor mat, Tensor vec, *, Scalar beta=1, Scalar alpha=1)"
              " -> Tensor", half_in_float32(K.addmv), saves=("mat", "vec"), **_ADD_OPTS)


@addmv.def_backward
def _(ctx, g, self, mat, vec, beta, alpha):
    n = ctx.needs_input_grad
    return (_scale(g, beta) if n[0] else None,
            _scale(_outer(g, _c(vec)), alpha) if n[1] else None,
            _scale(mv(_c(mat).mT, g), alpha) if n[2] else None)


public("addmv_")(METHODS["addmv_"])     # torch.addmv_ exists as a function too

addr = defop("addr(Tensor self, Tensor vec1, Tensor vec2, *, Scalar beta=1, Scalar alpha=1)"
             " -> Tensor", K.addr, saves=("vec1", "vec2"), inplace=True, autocast="lower")


@addr.def_backward
def _(ctx, g, self, vec1, vec2, beta, alpha):
    n = ctx.needs_input_grad
    dt = g.dtype
    return (_scale(g, beta) if n[0] else None,
            _scale(mv(g, _c(_as(vec2, dt))), alpha) if n[1] else None,
            _scale(mv(g.mT, _c(_as(vec1, dt))), alpha) if n[2] else None)


addbmm = defop("addbmm(Tensor self, Tensor batch1, Tensor batch2, *, Scalar beta=1, "
               "Scalar alpha=1) -> Tensor", half_in_float32(K.addbmm),
               saves=("batch1", "batch2"), **_ADD_OPTS)


@addbmm.def_backward
def _(ctx, g, self, batch1, batch2, beta, alpha):
    n = ctx.needs_input_grad
    # the (n, p) gradient is shared by every batch entry: broadcast it through matmul
    return (_scale(g, beta) if n[0] else None,
            _scale(matmul(g, _c(batch2).mT), alpha) if n[1] else None,
            _scale(matmul(_c(batch1).mT, g), alpha) if n[2] else None)


# Note [addbmm_ resizes]: torch's in-place addbmm writes through its out= path, so a
# ``self`` that broadcasts to the (n, p) result is resized to it in place (one element, a
# (p,) row, an (n, 1) column...), not refused as other in-place ops are. torch resizes
# first and then copies ``self`` expanded from its old geometry into the grown storage one
# element at a time: where the expanded view reads an element already overwritten (an
# (n, 1) column), the copy repeats it. By experiment every value matches
# ``addbmm(source, ...)`` with that source; the gradient is the out-of-place one (self's
# part summed back to its old shape), and the node is AddbmmBackward0.
_addbmm_inplace = METHODS["addbmm_"]


def _aliased_source(old, shape):
    """The values torch's element-wise copy of ``old`` expanded to ``shape`` leaves in the
    storage it grew in place (row-major ``old``): element i reads flat index src(i), which
    was itself already overwritten when src(i) < i, so follow src to its fixed point."""
    nd = len(shape)
    olds = (1,) * (nd - old.ndim) + old.shape
    steps = []
    acc = 1
    for d in range(nd - 1, -1, -1):
        steps.append(0 if olds[d] == 1 and shape[d] != 1 else acc)
        acc *= olds[d]
    steps.reverse()
    src = np.zeros(shape, np.int64)
    for d in range(nd):
        src += (np.arange(shape[d]) * steps[d]).reshape((-1,) + (1,) * (nd - 1 - d))
    src = src.reshape(-1)
    idx = np.arange(src.size)
    while True:
        nxt = src[idx]
        moved = nxt < idx
        if not moved.any():
            break
        idx = np.where(moved, nxt, idx)
    return old.reshape(-1)[idx].reshape(shape)


def addbmm_(self, *args, **kwargs):
    b1 = args[0] if args else kwargs.get("batch1")
    b2 = args[1] if len(args) > 1 else kwargs.get("batch2")
    if not (type(self) is Tensor and isinstance(b1, Tensor) and isinstance(b2, Tensor)
            and b1.ndim == 3 and b2.ndim == 3 and self._storage_base is None
            and self._data.flags.c_contiguous and len(args) <= 2
            and set(kwargs) <= {"batch1", "batch2", "beta", "alpha"}):
        return _addbmm_inplace(self, *args, **kwargs)
    shape = (b1.shape[1], b2.shape[2])
    if tuple(self.shape) == shape:
        return _addbmm_inplace(self, *args, **kwargs)
    if self._requires_grad and self._grad_fn is None and ember.is_grad_enabled():
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place "
                           "operation.")
    beta, alpha = kwargs.get("beta", 1), kwargs.get("alpha", 1)
    r = addbmm(self.expand(shape), b1, b2, beta=beta, alpha=alpha)
    old = self._data
    if old.size > 1 and beta != 0:
        src = _aliased_source(old, shape)
        if not np.array_equal(src, np.broadcast_to(old, shape), equal_nan=True):
            with ember.no_grad():
                r._data = addbmm(_make(src), b1.detach(), b2.detach(), beta=beta,
                                 alpha=alpha)._data
    self._data = r._data
    self._vc += 1
    if r._grad_fn is not None:
        from ember.autograd.graph import rebase_history
        rebase_history(self, r._grad_fn, r._output_nr)
    return self


METHODS["addbmm_"] = addbmm_
_addbmm_function = FUNCTIONS["addbmm"]


def addbmm_function(*args, out=None, **kwargs):
    # the same resize for ``out=``: torch gives no "was resized" warning for addbmm's out
    # (it does for baddbmm, addmm, bmm... as for other ops)
    if type(out) is Tensor and out._storage_base is None and out._data.size and \
            len(args) == 3 and all(isinstance(a, Tensor) for a in args) and \
            all(out is not a for a in args) and args[1].ndim == 3 and args[2].ndim == 3 and \
            tuple(out.shape) != (args[1].shape[1], args[2].shape[2]):
        old = out._data
        out._data = old[:0].reshape(0)
        try:
            return _addbmm_function(*args, out=out, **kwargs)
        except BaseException:
            if out._data.size == 0:
                out._data = old
            raise
    return _addbmm_function(*args, out=out, **kwargs)


FUNCTIONS["addbmm"] = addbmm_function

baddbmm = defop("baddbmm(Tensor self, Tensor batch1, Tensor batch2, *, Scalar beta=1, "
                "Scalar alpha=1) -> Tensor", half_in_float32(K.baddbmm),
                saves=("batch1", "batch2"), **_ADD_OPTS)


@baddbmm.def_backward
def _(ctx, g, self, batch1, batch2, beta, alpha):
    n = ctx.needs_input_grad
    return (_scale(g, beta) if n[0] else None,
            _scale(bmm(g, _c(batch2).mT), alpha) if n[1] else None,
            _scale(bmm(_c(batch1).mT, g), alpha) if n[2] else None)


# -------------------------------------------------------------------- dot, vdot

dot = defop("dot(Tensor self, Tensor tensor) -> Tensor", half_in_float32(K.dot), promote=None,
            saves=("self", "tensor"), autocast="promote")


@dot.def_backward
def _(ctx, g, self, tensor):
    n = ctx.needs_input_grad
    return (g * _c(tensor) if n[0] else None,
            g * _c(self) if n[1] else None)


vdot = defop("vdot(Tensor self, Tensor other) -> Tensor", K.vdot, promote=None,
             saves=("self", "other"))

# each factor is kept for the other's gradient only: a weight stepped in place between
# two backwards of one graph is no error when the input needs no gradient (as torch)
for _op, (_a, _b) in ((mm, ("self", "mat2")), (bmm, ("self", "mat2")), (mv, ("self", "vec")),
                      (linear, ("input", "weight")), (addmm, ("mat1", "mat2")),
                      (addmv, ("mat", "vec")), (addr, ("vec1", "vec2")),
                      (addbmm, ("batch1", "batch2")), (baddbmm, ("batch1", "batch2")),
                      (dot, ("self", "tensor")), (vdot, ("self", "other"))):
    _op.saved_for({_a: (_b,), _b: (_a,)})


@vdot.def_backward
def _(ctx, g, self, other):
    n = ctx.needs_input_grad
    return (_c(g) * other if n[0] else None,
            g * self if n[1] else None)


# -------------------------------------------------------------------- outer, ger, inner, kron

def _check_1d(t, name, op):
    if t.ndim != 1:
        raise RuntimeError(f"{op}: Expected 1-D argument {name}, but got {t.ndim}-D")


def _outer(input, vec2):
    _need_tensor(input, "outer", "input", 1)
    _need_tensor(vec2, "outer", "vec2", 2)
    _check_1d(input, "self", "outer")
    _check_1d(vec2, "vec2", "outer")
    return input.reshape(input.shape[0], 1) * vec2


outer = defop("outer(Tensor self, Tensor vec2) -> Tensor", composite=_outer)
_ger_warned = [False]


def _ger(input, vec2):
    if not _ger_warned[0]:
        _ger_warned[0] = True
        warnings.warn("torch.ger is deprecated and will be removed in a future PyTorch release. "
                      "Use torch.outer instead.", UserWarning, stacklevel=5)
    return _outer(input, vec2)


ger = defop("ger(Tensor self, Tensor vec2) -> Tensor", composite=_ger)


def _inner(input, other):
    _need_tensor(input, "inner", "input", 1)
    _need_tensor(other, "inner", "other", 2)
    if input.ndim == 0 or other.ndim == 0:
        return input * other
    if input.shape[-1] != other.shape[-1]:
        raise RuntimeError(f"inner() the last dimension must match on both input tensors but "
                           f"got shapes {list(input.shape)} and {list(other.shape)}")
    return tensordot_op(input, other, (-1,), (-1,))


inner = defop("inner(Tensor self, Tensor other) -> Tensor", composite=_inner)


def _kron(input, other):
    _need_tensor(input, "kron", "input", 1)
    _need_tensor(other, "kron", "other", 2)
    nd = max(input.ndim, other.ndim)
    sa = (1,) * (nd - input.ndim) + tuple(input.shape)
    sb = (1,) * (nd - other.ndim) + tuple(other.shape)
    a_shape, b_shape = [], []
    for x, y in zip(sa, sb):
        a_shape += [x, 1]
        b_shape += [1, y]
    r = input.reshape(a_shape) * other.reshape(b_shape)
    return r.reshape([x * y for x, y in zip(sa, sb)])


kron = defop("kron(Tensor self, Tensor other) -> Tensor", composite=_kron)


# -------------------------------------------------------------------- tensordot

def _tensordot(a, b, dims_a, dims_b):
    _need_tensor(a, "tensordot", "self", 1)
    _need_tensor(b, "tensordot", "other", 2)
    dims_a, dims_b = [int(d) for d in dims_a], [int(d) for d in dims_b]
    if len(dims_a) != len(dims_b):
        raise RuntimeError("both dimension lists should have same length")
    if a.dtype != b.dtype:
        raise RuntimeError("both inputs should have same dtype")
    from ember._kernels.util import wrap_dim
    wa = [wrap_dim(d, a.ndim) for d in dims_a]
    wb = [wrap_dim(d, b.ndim) for d in dims_b]
    for ws in (wa, wb):
        if len(set(ws)) != len(ws):
            dup = next(d for d in ws if ws.count(d) > 1)
            raise RuntimeError(f"dim {dup} appears multiple times in the list of dims")
    t1, t2 = a, b
    csize = 1
    for da, db, ra, rb in zip(wa, wb, dims_a, dims_b):
        s1, s2 = a.shape[da], b.shape[db]
        if s2 == 1:                      # broadcast dimensions are summed right away
            t1 = t1.sum(da, keepdim=True, dtype=t1.dtype)
        elif s1 == 1:
            t2 = t2.sum(db, keepdim=True, dtype=t2.dtype)
        else:
            if s1 != s2:
                raise RuntimeError(f"contracted dimensions need to match, but first has size "
                                   f"{s1} in dim {ra} and second has size {s2} in dim {rb}")
            csize *= s1
    free_a = [i for i in range(a.ndim) if i not in wa]
    free_b = [i for i in range(b.ndim) if i not in wb]
    rsizes = [t1.shape[i] for i in free_a] + [t2.shape[i] for i in free_b]
    size1 = int(np.prod([t1.shape[i] for i in free_a], dtype=np.int64))
    size2 = int(np.prod([t2.shape[i] for i in free_b], dtype=np.int64))
    t1 = t1.permute(free_a + wa).reshape(size1, csize)
    t2 = t2.permute(wb + free_b).reshape(csize, size2)
    return mm(t1, t2).reshape(rsizes)


tensordot_op = OpDef("tensordot(Tensor self, Tensor other, int[] dims_self, int[] dims_other)"
                     " -> Tensor", composite=_tensordot, autocast="promote")
register(tensordot_op, function=False, method=False)


@public("tensordot")
def tensordot(a, b, dims=2, out=None):
    """Sum products over ``dims`` (an int: the last ``dims`` of ``a`` with the first of
    ``b``; or two lists of dimensions)."""
    if not isinstance(dims, (tuple, list, Tensor, int)):
        raise RuntimeError(f"tensordot expects dims to be int or tuple[list[int], list[int]] or "
                           f"list[list[int]] containing two lists, but got dims={dims}")
    dims_a, dims_b = [], []
    if isinstance(dims, (tuple, list)):
        dims_a, dims_b = dims
    if isinstance(dims, Tensor):
        if dims.numel() > 1:
            dims_a, dims_b = dims[0].tolist(), dims[1].tolist()
        else:
            dims = int(dims.item())
    if isinstance(dims, int):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        if dims > min(a.dim(), b.dim()):
            raise RuntimeError(f"tensordot expects dims < ndim_a or ndim_b, but got dims={dims}")
        dims_a, dims_b = list(range(-dims, 0)), list(range(dims))
    for name, pos, ds in (("dims_self", 3, dims_a), ("dims_other", 4, dims_b)):
        if isinstance(ds, int) or not isinstance(ds, (tuple, list)):
            raise TypeError(f"tensordot(): argument '{name}' (position {pos}) must be tuple of "
                            f"ints, not {type(ds).__name__}")
        check_int_list("tensordot", name, ds, pos)
    if isinstance(out, Tensor) and isinstance(a, Tensor) and isinstance(b, Tensor) and \
            a.dtype == b.dtype and out.dtype != a.dtype:
        from ember._dtype import scalar_type_name
        raise RuntimeError(f"tensordot: Expected the output tensor to have dtype "
                           f"{scalar_type_name(a.dtype)}, but got an output tensor with dtype "
                           f"{scalar_type_name(out.dtype)}")
    return tensordot_op(a, b, tuple(dims_a), tuple(dims_b), out=out)


# -------------------------------------------------------------------- cross, trace

cross = defop("cross(Tensor self, Tensor other, int? dim=None) -> Tensor", K.cross, promote=None,
              saves=("self", "other"), grad_name="LinalgCrossBackward0", autocast="promote")


@cross.def_backward
def _(ctx, g, self, other, dim):
    d = K.default_cross_dim(ctx.shapes[0]) if dim is None else dim
    n = ctx.needs_input_grad
    return (cross(_c(other), g, d) if n[0] else None,
            cross(g, _c(self), d) if n[1] else None)


trace = defop("trace(Tensor self) -> Tensor", K.trace, promote=None, out=False)
refuse_bool(trace, "\"trace\" not implemented for 'Bool'")     # before the shape check


@trace.def_backward
def _(ctx, g, self):
    shape = ctx.shapes[0]
    return g * _const(np.eye(shape[0], shape[1], dtype=g._data.dtype))


# -------------------------------------------------------------------- chain_matmul

_chain_warned = [False]


def _multi_dot_order(shapes):
    """Optimal parenthesisation (classic O(n^3) DP), as torch.linalg.multi_dot."""
    n = len(shapes)
    p = [shapes[0][0]] + [s[1] for s in shapes]
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            best = None
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + p[i] * p[k + 1] * p[j + 1]
                if best is None or c < best:
                    best, split[i][j] = c, k
            cost[i][j] = best
    return split


def _chain(ms, split, i, j):
    if i == j:
        return ms[i]
    k = split[i][j]
    return mm(_chain(ms, split, i, k), _chain(ms, split, k + 1, j))


def _check_chain(matrices):
    """multi_dot's checks: one dtype, and each inner size equal to the next one's outer."""
    for i, m in enumerate(matrices[1:], 1):
        if m.dtype != matrices[0].dtype:
            raise RuntimeError(f"multi_dot(): all tensors must have be the same dtype but tensor "
                               f"0 is {K.cname(matrices[0]._data)} and tensor {i} "
                               f"{K.cname(m._data)}")
    for i in range(len(matrices) - 1):
        a, b = matrices[i], matrices[i + 1]
        if a.shape[-1] != b.shape[0]:
            raise RuntimeError(f"multi_dot(): tensors {i} and {i + 1} with shapes "
                               f"{list(a.shape)} and {list(b.shape)} cannot be multiplied")


def _chain_matmul(matrices):
    if not _chain_warned[0]:
        _chain_warned[0] = True
        warnings.warn("torch.chain_matmul is deprecated and will be removed in a future PyTorch "
                      "release. Use torch.linalg.multi_dot instead, which accepts a list of two "
                      "or more tensors rather than multiple parameters.", UserWarning,
                      stacklevel=6)
    for m in matrices:
        if m.ndim != 2:
            raise RuntimeError(f"Tensor dimension is {m.ndim}, expected 2 instead.")
    if not matrices:
        raise RuntimeError("chain_matmul(): Expected one or more matrices")
    if len(matrices) == 1:
        return clone(matrices[0], None)
    _check_chain(matrices)
    split = _multi_dot_order([tuple(m.shape) for m in matrices])
    return _chain(list(matrices), split, 0, len(matrices) - 1)


chain_matmul_op = OpDef("chain_matmul(Tensor[] matrices) -> Tensor", composite=_chain_matmul,
                        autocast="lower")
register(chain_matmul_op, function=False, method=False)


@public("chain_matmul")
def chain_matmul(*matrices, out=None):
    """Product of 2-D matrices in the cheapest order (deprecated in torch: use
    ``linalg.multi_dot``)."""
    return chain_matmul_op(list(matrices), out=out)


# -------------------------------------------------------------------- einsum

einsum_op = OpDef("einsum(str equation, Tensor[] tensors, *, int[]? path=None) -> Tensor",
                  half_in_float32(K.einsum), promote=None, autocast="lower")
register(einsum_op, function=False, method=False)


@einsum_op.def_backward
def _(ctx, g, equation, tensors, path):
    terms, out, sizes = K.einsum_parse(equation, [tuple(t.shape) for t in tensors])
    needs = ctx.needs_input_grad[1]
    return None, [_einsum_grad(k, terms, out, tensors, g) if needs[k] else None
                  for k in range(len(tensors))], None


def _einsum_grad(k, terms, out, tensors, g):
    """Note [einsum backward]."""
    term = terms[k]
    shape = tuple(tensors[k].shape)
    used = set("".join(terms) + out)
    free = iter(c for c in K._LETTERS if c not in used)
    new_term, deltas = [], []
    for i, c in enumerate(term):
        if c in new_term:
            f = next(free)
            new_term.append(f)
            deltas.append((c + f, shape[i]))
        else:
            new_term.append(c)
    in_terms = [out] + [t for j, t in enumerate(terms) if j != k] + [d for d, _ in deltas]
    ops = [g] + [_c(t) for j, t in enumerate(tensors) if j != k] + \
        [_const(np.eye(n, dtype=g._data.dtype)) for _, n in deltas]
    available = set("".join(in_terms))
    target = "".join(c for c in new_term if c in available)
    r = einsum_op(",".join(in_terms) + "->" + target, ops, None)
    for i, c in enumerate(new_term):
        if c not in available:
            r = r.unsqueeze(i)
    # letters summed out only here, or of size 1 in the other operands (broadcast there):
    # expand to operand k's size (larger sizes are reduced by the engine)
    full = [shape[i] if r.shape[i] == 1 else r.shape[i] for i in range(len(new_term))]
    if tuple(full) != tuple(r.shape):
        r = r.expand(full)
    return r


def _sublist(n):
    if n is Ellipsis:
        return "..."
    if 0 <= n < 26:
        return chr(ord("A") + n)
    if 26 <= n < 52:
        return chr(ord("a") + n - 26)
    raise ValueError("einsum(): subscript in subscript list is not within the valid range "
                     "[0, 52)")


@public("einsum")
def einsum(*args):
    """Einstein summation: ``einsum('ij,jk->ik', a, b)``, ``einsum('ij,jk', [a, b])`` or the
    sublist form ``einsum(a, [0, 1], b, [1, 2], [0, 2])``."""
    if len(args) < 2:
        raise ValueError("einsum(): must specify the equation string and at least one operand, "
                         "or at least one operand and its subscripts list")
    if isinstance(args[0], Tensor):
        equation = ",".join("".join(_sublist(s) for s in lst) for lst in args[1::2])
        if len(args) % 2 == 1:
            equation += "->" + "".join(_sublist(s) for s in args[-1])
            operands = args[:-1:2]
        else:
            operands = args[::2]
    else:
        equation, operands = args[0], args[1:]
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = operands[0]
    out = _einsum_view(equation, operands)
    if out is not None:
        return out
    out = einsum_op(equation, list(operands), None)
    if out._grad_fn is not None and isinstance(equation, str):
        from ember.autograd.graph import rename_node
        rename_node(out._grad_fn, _einsum_node_name(equation))
    return out


def _einsum_view(equation, operands):
    """A lone operand that loses no subscript (a permutation, with diagonals where a
    subscript repeats) comes back as a view of it (diagonal and permute, batching under
    vmap), as torch's einsum returns; None otherwise."""
    if len(operands) != 1 or not isinstance(equation, str):
        return None
    x = operands[0]
    if not isinstance(x, Tensor) or x.is_sparse or ember.is_autocast_enabled("cpu"):
        return None
    terms, out, _ = K.einsum_parse(equation, [tuple(x.shape)])
    letters = list(terms[0])
    if set(letters) != set(out) or len(letters) != x.dim():
        return None
    for c in out:
        while letters.count(c) > 1:          # a repeated subscript: its diagonal, moved last
            i = letters.index(c)
            j = letters.index(c, i + 1)
            x = x.diagonal(0, i, j)
            letters = [d for k, d in enumerate(letters) if k not in (i, j)] + [c]
    return x.permute([letters.index(c) for c in out])


@functools.lru_cache(maxsize=256)
def _einsum_node_name(equation):
    """torch's last node of ``einsum(equation, ...)``: one operand is permuted (and summed
    where subscripts leave); several are multiplied, or, where subscripts are summed, go
    through bmm and come back through a view."""
    lhs, arrow, rhs = equation.replace(" ", "").partition("->")
    terms = lhs.split(",")
    letters = "".join(t.replace("...", "") for t in terms)
    if arrow:
        kept, ellipsis_summed = set(rhs.replace("...", "")), "..." not in rhs and "..." in lhs
    else:
        kept, ellipsis_summed = {c for c in letters if letters.count(c) == 1}, False
    summed = ellipsis_summed or any(c not in kept for c in letters)
    if len(terms) == 1:
        return "SumBackward1" if summed else "PermuteBackward0"
    return "ViewBackward0" if summed else "MulBackward0"


# -------------------------------------------------------------------- cdist

_blas_pow = OpDef("_blas_pow(Tensor self, float exponent) -> Tensor",
                  half_in_float32(K.pow_scalar),
                  promote=None, saves=("self",), grad_name="PowBackward0")


@_blas_pow.def_backward
def _(ctx, g, self, exponent):
    if exponent == 0:
        return g * 0
    return g * (_blas_pow(self, exponent - 1) * exponent)


cdist_op = OpDef("_cdist_forward(Tensor x1, Tensor x2, float p, int? compute_mode) -> Tensor",
                 K.cdist, promote=None, saves=("x1", "x2", "result"),
                 grad_name="CdistBackward0", autocast="fp32")


@cdist_op.def_backward
def _(ctx, g, x1, x2, p, compute_mode):
    n = ctx.needs_input_grad
    r = ctx.result
    if p == 0 or x1.numel() == 0 or x2.numel() == 0:
        return (x1 * 0 if n[0] else None, x2 * 0 if n[1] else None)
    rd = r._data
    if p == 2:
        m = _const((rd == 0).astype(rd.dtype))
        w = g / (r + m) * (1 - m)                  # g / dist, 0 where dist == 0
        g1 = w.sum(-1, keepdim=True) * x1 - matmul(w, x2) if n[0] else None
        g2 = w.sum(-2).unsqueeze(-1) * x2 - matmul(w.mT, x1) if n[1] else None
        return g1, g2
    s = K.cdist_sign(x1._data, x2._data, p, rd)
    S = _const(s)
    if p == 1 or p == float("inf"):
        t = g.unsqueeze(-1) * S
    else:
        d = x1.unsqueeze(-2) - x2.unsqueeze(-3)
        z = _const((s == 0).astype(s.dtype))       # diff == 0: derivative 0 (torch)
        a = S * _blas_pow(d * S + z, p - 1) * (1 - z)
        m = _const((rd == 0).astype(rd.dtype))
        coef = g / _blas_pow(r + m, p - 1) * (1 - m)
        t = coef.unsqueeze(-1) * a
    return (t.sum(-2) if n[0] else None, -t.sum(-3) if n[1] else None)


_CDIST_MODES = {"use_mm_for_euclid_dist_if_necessary": None, "use_mm_for_euclid_dist": 1,
                "donot_use_mm_for_euclid_dist": 2}


@public("cdist")
def cdist(x1, x2, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary"):
    """p-norm distances between the rows of ``x1`` and ``x2`` (batched)."""
    if compute_mode not in _CDIST_MODES:
        raise ValueError(f"{compute_mode} is not a valid value for compute_mode")
    return cdist_op(x1, x2, float(p), _CDIST_MODES[compute_mode])


# -------------------------------------------------------------------- cov, corrcoef

def _cov(input, correction=1, fweights=None, aweights=None):
    _need_tensor(input, "cov", "input", 1)
    if input.ndim > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got an "
                           f"input with {input.ndim} dimensions")
    if input.dtype.name == "bool":
        raise RuntimeError("cov(): bool dtype is not supported for input")
    x = input.reshape(1, -1) if input.ndim < 2 else input
    nobs = x.shape[1]
    fweights, aweights = _constant(fweights), _constant(aweights)
    w = None
    if fweights is not None:
        w = fweights
        if w.ndim > 1:
            raise RuntimeError(f"cov(): expected fweights to have one or fewer dimensions but got "
                               f"fweights with {w.ndim} dimensions")
        if not w.dtype.is_integer or w.dtype.name == "bool":
            raise RuntimeError(f"cov(): expected fweights to have integral dtype but got fweights "
                               f"with {K.sname(w._data)} dtype")
        if w.numel() != nobs:
            raise RuntimeError(f"cov(): expected fweights to have the same numel as there are "
                               f"observations in the input but got {w.numel()} != {nobs}")
        if nobs and w._data.min() < 0:
            raise RuntimeError("cov(): fweights cannot be negative")
    if aweights is not None:
        aw = aweights
        if aw.ndim > 1:
            raise RuntimeError(f"cov(): expected aweights to have one or fewer dimensions but got "
                               f"aweights with {aw.ndim} dimensions")
        if not aw.is_floating_point():
            raise RuntimeError(f"cov(): expected aweights to have floating point dtype but got "
                               f"aweights with {K.sname(aw._data)} dtype")
        if aw.numel() != nobs:
            raise RuntimeError(f"cov(): expected aweights to have the same numel as there are "
                               f"observations in the input but got {aw.numel()} != {nobs}")
        if nobs and aw._data.min() < 0:
            raise RuntimeError("cov(): aweights cannot be negative")
        w = aw if w is None else w * aw
    if w is not None:
        w_sum = w.sum()
        if w_sum._data == 0:
            raise RuntimeError("cov(): weights sum to zero, can't be normalized")
    else:
        w_sum = _const(np.asarray(nobs, np.int64))
    avg = (x if w is None else x * w).sum(1) / w_sum
    if w is not None and aweights is not None and correction != 0:
        norm = w_sum - correction * (w * aweights).sum() / w_sum
    else:
        norm = w_sum - correction
    if norm._data <= 0:
        warnings.warn("cov(): degrees of freedom is <= 0. Correction should be strictly less "
                      "than the number of observations.", UserWarning, stacklevel=5)
        norm = _const(np.zeros((), norm._data.dtype))
    x = x - avg.unsqueeze(1)
    c = mm(x, _c((x if w is None else x * w).mT))
    with np.errstate(divide="ignore", invalid="ignore"):
        return (c / norm).squeeze()


cov = defop("cov(Tensor self, *, int correction=1, Tensor? fweights=None, "
            "Tensor? aweights=None) -> Tensor", composite=_cov, out=False)


def _clip_unit(c):
    """``c.clip(-1, 1)`` (real and imaginary parts apart for complex), gradient zero where
    clipped."""
    def clip_part(x):
        hi, lo = x._data > 1, x._data < -1
        if not (hi.any() or lo.any()):
            return None
        bound = _const(np.where(hi, 1, -1).astype(x._data.dtype))
        return x - where_self(_const(hi | lo), bound, x)     # x - clip(x)
    if not c.is_complex():
        corr = clip_part(c)
        return c if corr is None else c - corr
    re = real(c)
    im = real((c - c.conj()) * -0.5j)
    for corr, unit in ((clip_part(re), 1), (clip_part(im), 1j)):
        if corr is not None:
            c = c - (corr if unit == 1 else corr * unit)
    return c


def _corrcoef(input):
    _need_tensor(input, "corrcoef", "input", 1)
    if input.ndim > 2:
        raise RuntimeError(f"corrcoef(): expected input to have two or fewer dimensions but got "
                           f"an input with {input.ndim} dimensions")
    c = _cov(input)
    with np.errstate(divide="ignore", invalid="ignore"):
        if c.ndim == 0:
            return c / c
        d = einsum_op("ii->i", [c], None)
        if d.is_complex():
            d = real(d)
        inv = _blas_pow(d, -0.5)
        c = c * inv.reshape(-1, 1)
        c = c * inv.reshape(1, -1)
        return _clip_unit(c)


corrcoef = defop("corrcoef(Tensor self) -> Tensor", composite=_corrcoef, out=False)
