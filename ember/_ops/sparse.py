"""Sparse tensors: COO and the compressed layouts (CSR, CSC, BSR, BSC) as op records.

A sparse tensor is a Tensor whose ``_data`` is a ``SparseArray`` (``ember/_kernels/sparse.py``):
shape and dtype plus the index and value arrays. A few primitive records move between the
layouts and the payload (construct from indices and values, read the values, coalesce,
densify, sparsify; a compressed layout goes through COO); each has a backward rule, so everything else is written in ember ops
over them (``sparse.mm`` gathers rows of the dense operand and scatters them with
``index_add``) and gets its autograd from its parts: gradients reach the dense operand and,
through ``values``, the sparse one as a sparse tensor, as in torch.

Note [sparse routing]: the first sparse tensor made turns on :func:`route` in the dispatcher
chain (as the meta device does): a dense record given a sparse argument runs its sparse
rule from ``SPARSE_RULES`` or raises torch's NotImplementedError naming the op and the
backend. Until then the dense path pays nothing.
"""
from __future__ import annotations

import numpy as np

from ember import _dtype
from ember._kernels import sparse as K
from ember._kernels.sparse import SparseArray
from ember._ops.registry import OpDef, public
from ember._state import state
from ember._tensor import Tensor, Size, _make

SPARSE_RULES: dict = {}        # dense record name -> rule(*args) for sparse arguments
_BACKEND = {K.COO: "SparseCPU", K.CSR: "SparseCsrCPU", K.CSC: "SparseCsrCPU",
            K.BSR: "SparseCsrCPU", K.BSC: "SparseCsrCPU"}
_KIND = {"strided": "Strided", K.COO: "Sparse", K.CSR: "SparseCsr", K.CSC: "SparseCsc",
         K.BSR: "SparseBsr", K.BSC: "SparseBsc"}


def is_sparse_data(a) -> bool:
    return type(a) is SparseArray


def _layout(t):
    return t._data.layout if type(t._data) is SparseArray else "strided"


# ------------------------------------------------------------------ primitive records

def _primitive(schema, kernel, grad_name=None):
    """A record whose kernel may return a SparseArray: it runs as a composite body that
    wraps the result itself (the dense wrapper would strip the payload) and records the
    record's own backward."""
    op = OpDef(schema, kernel, promote=None, grad_name=grad_name)
    op.saved_args = tuple(i for i, _, _ in op.tensor_args)
    op.composite = lambda *args: _run(op, args)
    SPARSE_RULES[op.name] = None        # takes sparse arguments itself
    return op


_beta_warned = [False]


def _warn_beta(layout):
    """torch's warning on the first compressed sparse tensor (once a process)."""
    import warnings
    from ember._runtime_flags import user_stacklevel
    _beta_warned[0] = True
    level = user_stacklevel()                           # point at the user's line
    warnings.warn(f"Sparse {layout[7:].upper()} tensor support is in beta state. If you miss a "
                  f"functionality in the sparse tensor support, please submit a feature "
                  f"request to https://github.com/pytorch/pytorch/issues.", UserWarning,
                  stacklevel=level)


_invariants_warned = [False]


def _warn_invariants_off(check_invariants):
    """torch's warning (once a process) when a sparse constructor is called without
    ``check_invariants`` while the global switch is off (ember checks either way)."""
    if check_invariants is not None or _invariants_warned[0]:
        return
    from ember.sparse import check_sparse_tensor_invariants
    if check_sparse_tensor_invariants.is_enabled():
        return
    import sys
    import warnings
    _invariants_warned[0] = True
    level, frame = 2, sys._getframe(1)
    while frame is not None and frame.f_globals.get("__name__", "").startswith("ember"):
        level, frame = level + 1, frame.f_back        # point at the user's line
    warnings.warn("Sparse invariant checks are implicitly disabled. Memory errors (e.g. "
                  "SEGFAULT) will occur when operating on a sparse tensor which violates the "
                  "invariants, but checks incur performance overhead. To silence this warning, "
                  "explicitly opt in or out. See "
                  "`torch.sparse.check_sparse_tensor_invariants.__doc__` for guidance.",
                  UserWarning, stacklevel=level)


def _run(op, args):
    enable()
    res = _make(op.kernel(*[a._data if isinstance(a, Tensor) else a for a in args]))
    a = res._data
    if not _beta_warned[0] and type(a) is SparseArray and a.layout in K.COMPRESSED:
        _warn_beta(a.layout)
    if state.grad_enabled and any(isinstance(a, Tensor) and a._requires_grad for a in args):
        from ember.autograd import graph
        graph.record(op, args, (res,))
    return res


def _ints(t):
    """An index array as a tensor (no gradient)."""
    return _make(t)


coo_from_parts = _primitive(
    "_sparse_coo_tensor_with_dims_and_tensors(Tensor indices, Tensor values, int[] size, "
    "bool is_coalesced) -> Tensor",
    lambda i, v, size, c: K.coo(i, v, tuple(size), c))
values_of = _primitive("_values(Tensor self) -> Tensor", lambda a: a.values, "ValuesBackward0")
values_at = _primitive("_sparse_values_at(Tensor self, Tensor indices) -> Tensor", K.values_at)
densify = _primitive("_sparse_to_dense(Tensor self) -> Tensor", K.to_dense, "ToDenseBackward0")
sparsify = _primitive("_to_sparse(Tensor self, int sparse_dim) -> Tensor", K.from_dense,
                      "ToSparseBackward1")
coalesce_op = _primitive("coalesce(Tensor self) -> Tensor", K.coalesce)
coo_to_csr = _primitive("_to_sparse_csr(Tensor self) -> Tensor", K.coo_to_csr,
                        "ToSparseCsrBackward0")
csr_to_coo = _primitive("_csr_to_coo(Tensor self) -> Tensor", K.csr_to_coo)
csr_from_parts = _primitive(
    "_sparse_csr_tensor_unsafe(Tensor crow_indices, Tensor col_indices, Tensor values, "
    "int[] size) -> Tensor", lambda r, c, v, size: K.csr(r, c, v, tuple(size)))
add_op = _primitive("_sparse_add(Tensor self, Tensor other, Scalar alpha) -> Tensor", K.add)
mul_op = _primitive("_sparse_mul(Tensor self, Tensor other) -> Tensor", K.mul)
spgemm = _primitive("_sparse_sparse_matmul(Tensor self, Tensor other) -> Tensor", K.coo_mm)
compressed_to_coo = _primitive("_sparse_compressed_to_coo(Tensor self) -> Tensor",
                               K.compressed_to_coo)
coo_to_compressed = _primitive(
    "_sparse_coo_to_compressed(Tensor self, str layout, int[] blocksize) -> Tensor",
    lambda a, layout, bs: K.coo_to_compressed(a, layout, tuple(bs)))
compressed_from_parts = _primitive(
    "_sparse_compressed_from_parts(Tensor compressed_indices, Tensor plain_indices, "
    "Tensor values, int[] size, str layout) -> Tensor",
    lambda c, p, v, size, layout: K.compressed(c, p, v, tuple(size), layout))


def _coo_grad(g):
    """A gradient arriving for a COO input, as COO."""
    return _as_coo(g)


def _gather(g, indices):
    """``g``'s entries at ``indices`` (sparse_dim, nnz): dense or sparse ``g``."""
    if _layout(g) == "strided":
        return g[tuple(_ints(r) for r in indices)]
    return values_at(_coo_grad(g), _ints(indices))


@coo_from_parts.def_backward
def _(ctx, g, indices, values, size, is_coalesced):
    return None, _gather(g, indices._data), None, None


@values_of.def_backward
def _(ctx, g, self):
    a = self._data
    if a.layout == K.CSR:
        return csr_from_parts(_ints(a.crow), _ints(a.col), g, a.shape)
    if a.layout in K.COMPRESSED:
        return compressed_from_parts(_ints(a.crow), _ints(a.col), g, a.shape, a.layout)
    return coo_from_parts(_ints(a.indices), g, a.shape, False)


@values_at.def_backward
def _(ctx, g, self, indices):
    return coo_from_parts(indices, g, self._data.shape, False), None


@densify.def_backward
def _(ctx, g, self):
    a = self._data
    sp = K.coalesce(a if a.layout == K.COO else K.compressed_to_coo(a))
    grad = coo_from_parts(_ints(sp.indices), _gather(g, sp.indices), a.shape, True)
    return _to_layout(grad, a)


@sparsify.def_backward
def _(ctx, g, self, sparse_dim):
    return densify(g) if _layout(g) != "strided" else g, None


@coalesce_op.def_backward
def _(ctx, g, self):
    return g                # the same tensor, as a dense one: the gradient passes through


@coo_to_csr.def_backward
def _(ctx, g, self):
    return _coo_grad(g)


@csr_to_coo.def_backward
def _(ctx, g, self):
    return coo_to_csr(coalesce(g))


@csr_from_parts.def_backward
def _(ctx, g, crow, col, values, size):
    rows = np.repeat(np.arange(len(crow._data) - 1), np.diff(crow._data))
    return None, None, _gather(g, np.stack([rows, col._data])), None


@compressed_to_coo.def_backward
def _(ctx, g, self):
    a = self._data
    if _layout(g) == "strided":
        sp = K.compressed_to_coo(a)
        g = coo_from_parts(_ints(sp.indices), _gather(g, sp.indices), a.shape, False)
    return _to_layout(coalesce(_as_coo(g)), a)


@coo_to_compressed.def_backward
def _(ctx, g, self, layout, blocksize):
    return _as_coo(g), None, None


@compressed_from_parts.def_backward
def _(ctx, g, cidx, pidx, values, size, layout):
    a = K.compressed(cidx._data, pidx._data, values._data, tuple(size), layout)
    sp = K.compressed_to_coo(a)
    return None, None, _gather(g, sp.indices).reshape(values.shape), None, None


@add_op.def_backward
def _(ctx, g, self, other, alpha):
    return g, (g if alpha == 1 else g * alpha)


@mul_op.def_backward
def _(ctx, g, self, other):
    return mul_op(g, other), mul_op(g, self)


@spgemm.def_backward
def _(ctx, g, self, other):
    raise RuntimeError("derivative for aten::_sparse_sparse_matmul is not implemented")


# ------------------------------------------------------------------ helpers in ember ops

def coalesce(t):
    return t if t._data.coalesced else coalesce_op(t)


def _with_values(t, values, coalesced=None):
    """A COO tensor with ``t``'s indices and new ``values`` (whose dense shape may differ)."""
    a = t._data
    shape = a.shape[:a.sparse_dim] + tuple(values.shape[1:])
    return coo_from_parts(_ints(a.indices), values, shape,
                          a.coalesced if coalesced is None else coalesced)


def _as_coo(t):
    layout = _layout(t)
    if layout == K.CSR:
        return csr_to_coo(t)
    return compressed_to_coo(t) if layout in K.COMPRESSED else t


def _to_layout(coo, a):
    """COO tensor ``coo`` in the layout (and blocksize) of payload ``a``."""
    if a.layout == K.CSR:
        return coo_to_csr(coo)
    if a.layout in K.COMPRESSED:
        return coo_to_compressed(coo, a.layout, K.blocksize(a))
    return coo


def _like_layout(result, src):
    """Return a COO result in the layout of ``src`` (CSR stays CSR, BSR keeps its blocks)."""
    if _layout(src) in K.COMPRESSED and _layout(result) == K.COO:
        return _to_layout(result, src._data)
    return result


def sparse_mm(s, d):
    """Sparse (COO/compressed, 2-D) @ dense (2-D), or sparse @ sparse (COO)."""
    _no_cpu_addmm(s, d)
    if _layout(d) != "strided":
        return spgemm(coalesce(_as_coo(s)), coalesce(_as_coo(d)))
    coo = _layout(s) == "sparse_coo"
    s = coalesce(_as_coo(s))
    if s.ndim != 2 or d.ndim != 2 or s._data.sparse_dim != 2:
        raise RuntimeError(f"mm: expected 2-D sparse and dense matrices, got {s.ndim}-D and "
                           f"{d.ndim}-D")
    if coo and s.shape[1] != d.shape[0]:      # torch's COO kernel is an addmm: its checks
        raise RuntimeError(f"addmm: Argument #3 (dense): Expected dim 0 size {s.shape[1]}, "
                           f"got {d.shape[0]}")
    if coo and s.dtype != d.dtype:
        from ember._dtype import scalar_type_name
        raise RuntimeError(f"expected scalar type {scalar_type_name(s.dtype)} but found "
                           f"{scalar_type_name(d.dtype)}")
    if s.shape[1] != d.shape[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({s.shape[0]}x"
                           f"{s.shape[1]} and {d.shape[0]}x{d.shape[1]})")
    rows, cols = s._data.indices
    terms = values_of(s).unsqueeze(1) * d.index_select(0, _ints(cols))
    from ember import zeros
    out = zeros(s.shape[0], d.shape[1], dtype=terms.dtype)
    return out.index_add(0, _ints(rows), terms)


def _no_cpu_addmm(self, other):
    """torch has no CPU kernel for BSC @ dense nor dense @ BSR, and its BSR kernel (MKL)
    takes square blocks only."""
    if _layout(self) == K.BSC or _layout(self) == "strided" and _layout(other) == K.BSR:
        raise RuntimeError(f"addmm: computation on CPU is not implemented for Strided + "
                           f"{_KIND[_layout(self)]} @ {_KIND[_layout(other)]}")
    for t in (self, other):
        if _layout(t) in K.BLOCKED and len(set(K.blocksize(t._data))) > 1:
            raise RuntimeError("MKL Sparse doesn't support matrices with non-square blocks.")


def _mm_rule(self, other):
    _no_cpu_addmm(self, other)
    if _layout(self) == "strided":          # dense @ sparse = (sparse^T @ dense^T)^T
        return sparse_mm(transpose(_as_coo(other), 0, 1), self.t()).t()
    return sparse_mm(self, other)


def _bmm_rule(self, other):
    """Sparse COO (B, n, m) @ dense (B, m, p) -> dense (B, n, p) (torch's bmm_sparse):
    each nonzero (b, i, k) adds its value times row (b, k) of ``other`` to row (b, i)."""
    if _layout(self) != K.COO or _layout(other) != "strided":
        _refuse("bmm", self if _layout(self) != "strided" else other)
    s = coalesce(self)
    if s.ndim != 3:
        raise RuntimeError(f"bmm_sparse: Tensor 'self' must have 3 dims, but has {s.ndim}")
    if s._data.sparse_dim != 3:
        raise RuntimeError(f"bmm_sparse: Tensor 'self' must have 0 dense dims, but has "
                           f"{s.ndim - s._data.sparse_dim}")
    if other.ndim != 3:
        raise RuntimeError(f"bmm_sparse: Tensor 'mat2' must have 3 dims, but has {other.ndim}")
    B, n, m = s.shape
    if other.shape[0] != B:
        raise RuntimeError("bmm_sparse: 'self.size(0)' and 'mat2.size(0)' must match")
    if other.shape[1] != m:
        raise RuntimeError("bmm_sparse: 'self.size(2)' and 'mat2.size(1)' must match")
    b, rows, cols = s._data.indices
    p = other.shape[2]
    terms = values_of(s).unsqueeze(1) * other.reshape(B * m, p).index_select(
        0, _ints(b * m + cols))
    from ember import zeros
    out = zeros(B * n, p, dtype=terms.dtype)
    return out.index_add(0, _ints(b * n + rows), terms).reshape(B, n, p)


def _matmul_rule(self, other):
    if other.ndim == 1 and _layout(other) == "strided":
        if _layout(self) == K.BSC:
            raise RuntimeError("torch.addmv: operation not supported for mat with SparseBsc "
                               "layout")
        return sparse_mm(self, other.unsqueeze(1)).squeeze(1)
    return _mm_rule(self, other)


def _mv_rule(self, vec):
    """Sparse (n, m) @ dense (m,) -> dense (n,) (torch's mv over a sparse matrix)."""
    if _layout(vec) != "strided":
        _refuse("mv", vec)
    if self.ndim != 2 or vec.ndim != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got {self.ndim}, {vec.ndim}, "
                           f"{vec.ndim}")
    return _matmul_rule(self, vec)


def addmm(input, mat1, mat2, *, beta=1, alpha=1):
    """beta * input + alpha * (mat1 @ mat2), mat1 sparse."""
    prod = _mm_rule(mat1, mat2)
    if _layout(input) != "strided":
        input = densify(input)
    return input * beta + prod * alpha if beta != 0 else prod * alpha


_TRANSPOSED = {K.CSR: K.CSC, K.CSC: K.CSR, K.BSR: K.BSC, K.BSC: K.BSR}


def _transpose_compressed(t):
    """A compressed matrix transposed: the same indices read in the other layout."""
    a = t._data
    v = values_of(t)
    if a.layout in K.BLOCKED:
        v = v.transpose(1, 2)
    layout = _TRANSPOSED[a.layout]
    if layout == K.CSR:
        return csr_from_parts(_ints(a.crow), _ints(a.col), v, a.shape[::-1])
    return compressed_from_parts(_ints(a.crow), _ints(a.col), v, a.shape[::-1], layout)


def transpose(t, dim0, dim1):
    if _layout(t) in K.COMPRESSED and t.ndim == 2:
        return t if (dim0 - dim1) % 2 == 0 else _transpose_compressed(t)
    if _layout(t) != K.COO:
        _refuse("transpose.int", t)
    a = t._data
    d0, d1 = (d % a.ndim for d in (dim0, dim1))
    if d0 >= a.sparse_dim or d1 >= a.sparse_dim:
        if d0 == d1:
            return t
        raise RuntimeError("transpose: transposing dense dimensions of a sparse tensor is not "
                           "supported by ember yet")
    order = list(range(a.sparse_dim))
    order[d0], order[d1] = order[d1], order[d0]
    shape = list(a.shape)
    shape[d0], shape[d1] = shape[d1], shape[d0]
    return coo_from_parts(_ints(a.indices[order]), values_of(t), shape, False)


def _t_rule(t):
    if t.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 sparse and 0 dense dimensions, but "
                           f"got {t.ndim} sparse and 0 dense dimensions")
    return transpose(t, 0, 1) if t.ndim == 2 else t


def _dims(dim, ndim):
    if dim is None:
        return tuple(range(ndim))
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    return tuple(sorted({d % ndim for d in dims}))


def sparse_sum(input, dim=None, dtype=None):
    """torch.sparse.sum: summing every sparse dim gives a dense tensor, else a COO one."""
    t = coalesce(_as_coo(input))
    if dtype is not None:
        t = _to_copy_rule(t, dtype)
    a = t._data
    dims = _dims(dim, a.ndim)
    sd = a.sparse_dim
    dense_dims = tuple(d - sd + 1 for d in dims if d >= sd)
    values = values_of(t)
    if dense_dims:
        values = values.sum(dense_dims)
    kept = [d for d in range(sd) if d not in dims]
    if not kept:
        return values.sum(0)
    shape = [a.shape[d] for d in kept] + list(values.shape[1:])
    return coalesce_op(coo_from_parts(_ints(a.indices[kept]), values, shape, False))


def _sum_rule(self, dim=None, keepdim=False, dtype=None):
    if keepdim:
        raise RuntimeError("sum: keepdim=True is not supported for sparse tensors by ember")
    return sparse_sum(self, dim, dtype)


def _groups(t, dim):
    """Entries of a coalesced COO tensor that share every index but ``dim``'s: a group id
    per entry and the number of groups."""
    a = t._data
    rest = np.delete(a.indices, dim, axis=0)
    keys = K.linear_index(rest, [s for i, s in enumerate(a.shape[:a.sparse_dim]) if i != dim])
    uniq, gid = np.unique(keys, return_inverse=True)
    return gid.reshape(-1), len(uniq)


def sparse_softmax(input, dim, dtype=None, *, log=False):
    """Softmax over ``dim`` among the specified entries (absent ones count as -inf)."""
    t = coalesce(_as_coo(input))
    if dtype is not None:
        t = _to_copy_rule(t, dtype)
    a = t._data
    dim %= a.ndim
    v = values_of(t)
    if dim >= a.sparse_dim:             # a dense dim: an ordinary softmax of the values
        f = v.log_softmax if log else v.softmax
        return _with_values(t, f(dim - a.sparse_dim + 1))
    gid, n = _groups(t, dim)
    top = np.full((n,) + v.shape[1:], -np.inf, v._data.dtype)
    np.maximum.at(top, gid, v._data)
    index = _ints(gid)
    shifted = v - _make(top).index_select(0, index)
    e = shifted.exp()
    from ember import zeros
    total = zeros((n,) + tuple(v.shape[1:]), dtype=v.dtype).index_add(0, index, e)
    out = shifted - total.log().index_select(0, index) if log else \
        e / total.index_select(0, index)
    return _like_layout(_with_values(t, out), input)


# ------------------------------------------------------------------ elementwise rules

_ZERO_PRESERVING = ("neg", "abs", "sqrt", "sin", "tan", "tanh", "sinh", "asin", "asinh",
                    "atan", "atanh", "relu", "sgn", "sign", "trunc", "floor", "ceil", "round",
                    "expm1", "log1p", "erf", "erfinv", "square", "deg2rad", "rad2deg",
                    "nan_to_num", "frac", "signbit", "isnan", "isinf", "angle", "conj_physical")


def _map_rule(fn, linear=False):
    def rule(self, *rest):
        t = _as_coo(self)
        if not linear:
            t = coalesce(t)
        return _like_layout(_with_values(t, fn(values_of(t), *rest)), self)
    return rule


def _is_number(x):
    return not isinstance(x, Tensor) or (x.ndim == 0 and _layout(x) == "strided")


def _add_rule(self, other, alpha=1):
    layouts = (_layout(self), _layout(other) if isinstance(other, Tensor) else "strided")
    if "strided" in layouts and (layouts[0] in K.BLOCKED or layouts[1] in K.BLOCKED):
        raise RuntimeError("src.layout() == kSparseCsr || src.layout() == kSparseCsc INTERNAL "
                           "ASSERT FAILED: torch adds a dense tensor to CSR or CSC only")
    if layouts[0] == "strided":             # dense + sparse: a dense sum
        return self.add(densify(_as_coo(other)), alpha=alpha)
    if layouts[0] in (K.CSR, K.CSC) and layouts[1] == "strided" and not _is_number(other):
        # CSR/CSC + dense is dense; torch 2.13 scales the sparse operand by alpha here
        return other.add(densify(self), alpha=alpha)
    if _is_number(other) or _layout(other) == "strided":
        raise RuntimeError("add(sparse, dense) is not supported. Use add(dense, sparse) "
                           "instead.")
    if self.shape != other.shape:
        raise RuntimeError(f"add: expected 'self' and 'other' to have same size, but self has "
                           f"size {list(self.shape)} while other has size {list(other.shape)} "
                           f"(FYI: op2-sparse addition does not currently support "
                           f"broadcasting)")
    return _like_layout(add_op(_as_coo(self), _as_coo(other), alpha), self)


def _sub_rule(self, other, alpha=1):
    return _add_rule(self, other, -alpha)


def _mul_rule(self, other):
    if _layout(self) == "strided":          # the product is sparse whichever side it is
        self, other = other, self
    if _is_number(other):
        return _map_rule(lambda v, c: v * c, linear=True)(self, other)
    s = _as_coo(self)
    if _layout(other) == "strided":         # sparse * dense: only the sparse entries
        return _like_layout(_with_values(s, values_of(s) * _gather(other, s._data.indices)),
                            self)
    return _like_layout(mul_op(s, _as_coo(other)), self)


def _div_rule(self, other):
    if not _is_number(other):
        _refuse("div.Tensor", self)
    return _map_rule(lambda v, c: v / c, linear=True)(self, other)


def _pow_rule(self, exponent):
    if not _is_number(exponent):
        _refuse("pow.Tensor_Tensor", self)
    return _map_rule(lambda v, c: v ** c)(self, exponent)


def _to_copy_rule(self, dtype=None, *rest):
    return _map_rule(lambda v: v.to(dtype) if dtype is not None else v.clone(),
                     linear=True)(self)


def _softmax_rule(self, dim, dtype=None):
    return sparse_softmax(self, dim, dtype)


def _log_softmax_rule(self, dim, dtype=None):
    return sparse_softmax(self, dim, dtype, log=True)


def _replace(self, result):
    """An in-place op on a sparse ``self``: it takes ``result``'s payload."""
    if self._requires_grad and state.grad_enabled:
        raise RuntimeError("ember does not support in-place ops on sparse tensors that "
                           "require grad")
    self._data = result._data
    self._vc += 1
    return self


def _add_inplace(self, other, alpha=1):
    if _layout(self) == "strided":          # dense += sparse (an optimizer step)
        return self.add_(densify(_as_coo(other)), alpha=alpha)
    return _replace(self, _add_rule(self, other, alpha))


def _sub_inplace(self, other, alpha=1):
    return _add_inplace(self, other, -alpha)


def _sparse_self_inplace(rule, name):
    def run(self, *rest):
        if _layout(self) == "strided":
            _refuse(name, next(a for a in rest if isinstance(a, Tensor)))
        return _replace(self, rule(self, *rest))
    return run


def _empty_like(t, dtype=None):
    a = t._data
    sd = a.sparse_dim
    from ember import zeros
    values = zeros((0,) + a.shape[sd:], dtype=dtype or t.dtype)
    out = coo_from_parts(_ints(np.zeros((sd, 0), np.int64)), values, a.shape, True)
    return _like_layout(out, t)


def _fill_inplace(self, value):
    if float(value) != 0:
        _refuse("fill_.Tensor", self)
    return _replace(self, _empty_like(self))


def _cat_rule(tensors, dim=0):
    """COO tensors joined along a sparse dim: indices shifted, values stacked."""
    parts = [_as_coo(t) for t in tensors]
    if any(_layout(t) != K.COO for t in parts):
        _refuse("cat", tensors[0])
    sd = parts[0]._data.sparse_dim
    dim %= parts[0].ndim
    if dim >= sd or any(t._data.sparse_dim != sd for t in parts):
        raise RuntimeError("cat: ember joins sparse tensors along a sparse dim of tensors with "
                           "equal sparse dims only")
    shift, indices = 0, []
    for t in parts:
        idx = t._data.indices.copy()
        idx[dim] += shift
        indices.append(idx)
        shift += t.shape[dim]
    shape = list(parts[0].shape)
    shape[dim] = shift
    from ember import cat
    values = cat([values_of(t) for t in parts])
    return coo_from_parts(_ints(np.concatenate(indices, 1)), values, shape, False)


def _select_rule(self, dim, index):
    """The entries at ``index`` along a sparse ``dim``, that dim dropped."""
    t = coalesce(_as_coo(self))
    a = t._data
    dim %= a.ndim
    if dim >= a.sparse_dim:
        return _with_values(t, values_of(t).select(dim - a.sparse_dim + 1, index))
    index = index + a.shape[dim] if index < 0 else index
    keep = np.nonzero(a.indices[dim] == index)[0]
    values = values_of(t).index_select(0, _ints(keep))
    if a.sparse_dim == 1:
        return values.sum(0)
    rest = np.delete(a.indices[:, keep], dim, axis=0)
    shape = a.shape[:dim] + a.shape[dim + 1:]
    return coo_from_parts(_ints(rest), values, shape, True)


def _index_rule(self, index):
    """``s[i]``, ``s[i, j]``: selections along the leading dims."""
    ints = index[:-1] if index and index[-1] is Ellipsis else index
    if not all(type(i) is int for i in ints):
        _refuse("_basic_index", self)
    out = self
    for i in ints:
        out = out.select(0, i)
    return out


SPARSE_RULES.update({
    "_basic_index": _index_rule,
    "add_.Tensor": _add_inplace, "sub_.Tensor": _sub_inplace,
    "mul_.Tensor": _sparse_self_inplace(_mul_rule, "mul_.Tensor"),
    "div_.Tensor": _sparse_self_inplace(_div_rule, "div_.Tensor"),
    "fill_.Tensor": _fill_inplace, "zero_": lambda self: _fill_inplace(self, 0),
    "cat": _cat_rule, "select.int": _select_rule,
    "zeros_like": lambda self, dtype=None, memory_format=None: _empty_like(self, dtype),
    "mm": _mm_rule, "bmm": _bmm_rule, "matmul": _matmul_rule, "t": _t_rule, "transpose.int": transpose,
    "mv": _mv_rule,
    "addmm": lambda input, m1, m2, beta=1, alpha=1: addmm(input, m1, m2, beta=beta,
                                                          alpha=alpha),
    "add.Tensor": _add_rule, "sub.Tensor": _sub_rule, "mul.Tensor": _mul_rule,
    "div.Tensor": _div_rule, "pow.Tensor_Tensor": _pow_rule, "sum": _sum_rule,
    "clone": lambda self, memory_format=None: _to_copy_rule(self),
    "_to_copy": _to_copy_rule, "softmax.int": _softmax_rule,
    "log_softmax.int": _log_softmax_rule,
})
for _name in _ZERO_PRESERVING:
    SPARSE_RULES[_name] = _map_rule(lambda v, *rest, _n=_name: getattr(v, _n)(*rest),
                                    linear=_name == "neg")


# ------------------------------------------------------------------ embedding

def _embedding_rows(weight, indices, padding_idx=-1):
    from ember._kernels.nn_fused import embedding
    return embedding(weight, indices)


embedding_sparse_grad = OpDef("_embedding_sparse_grad(Tensor weight, Tensor indices, "
                              "int padding_idx=-1) -> Tensor",
                              _embedding_rows, promote=None, saves=("indices", "padding_idx"),
                              grad_name="EmbeddingBackward0")


@embedding_sparse_grad.def_backward
def _(ctx, g, weight, indices, padding_idx):
    """``nn.Embedding(sparse=True)``: one gradient row per looked-up index, uncoalesced;
    torch leaves out the lookups of ``padding_idx`` (>= 0) altogether (nnz counts none)."""
    rows = indices._data.reshape(-1).astype(np.int64)
    values = g.reshape(-1, g.shape[-1])
    if padding_idx is not None and padding_idx >= 0:
        keep = rows != padding_idx
        if not keep.all():
            rows = rows[keep]
            values = values[_ints(np.flatnonzero(keep))]
    return coo_from_parts(_ints(rows.reshape(1, -1)), values, ctx.shapes[0], False), None, None


# ------------------------------------------------------------------ routing

_next_call = None


def enable():
    """Note [sparse routing]: put :func:`route` in front of the dispatcher's call (once)."""
    global _next_call
    from ember import _dispatch
    _next_call = _dispatch.add_call_layer(route)


def route(op, args, out):
    """The dispatcher's call once sparse tensors exist: dense records given a sparse
    argument run its sparse rule, or raise."""
    for i, is_list, _ in op.tensor_args:
        a = args[i]
        if isinstance(a, Tensor):
            if type(a._data) is SparseArray:
                return _sparse_call(op, args, out, a)
        elif is_list and isinstance(a, (list, tuple)):
            for x in a:
                if isinstance(x, Tensor) and type(x._data) is SparseArray:
                    return _sparse_call(op, args, out, x)
    return _next_call(op, args, out)


def _sparse_call(op, args, out, s):
    rule = SPARSE_RULES.get(op.name, _refuse)
    if rule is None:                        # a sparse record
        return _next_call(op, args, out)
    if rule is _refuse or out is not None:
        _refuse(op.name, s)
    return rule(*args)


def _refuse(name, t):
    raise NotImplementedError(
        f"Could not run 'aten::{name}' with arguments from the '{_BACKEND[_layout(t)]}' "
        f"backend. ember does not implement {name} for layout torch.{_layout(t)} (sparse "
        f"tensors support: mm, addmm, add, sub, mul, div, sum, softmax, transpose and the "
        f"zero-preserving elementwise functions).")


# ------------------------------------------------------------------ public fronts

def _as_index(x):
    from ember import as_tensor
    t = x if isinstance(x, Tensor) else as_tensor(x, dtype=_dtype.int64)
    return t._data.astype(np.int64, copy=False)


def _as_values(x, dtype):
    from ember import as_tensor
    v = x if isinstance(x, Tensor) else as_tensor(x)
    return v if dtype is None or v.dtype is dtype else v.to(dtype)


def _finish(t, requires_grad):
    if requires_grad:
        t = t.detach().requires_grad_(True)
    return t


@public()
def sparse_coo_tensor(indices=None, values=None, size=None, *, dtype=None, device=None,
                      pin_memory=False, requires_grad=False, check_invariants=None,
                      is_coalesced=None):
    """A COO tensor from ``indices`` (sparse_dim, nnz) and ``values`` (nnz, *dense); with
    only ``size``, an empty one."""
    if indices is None and values is None and size is not None:
        from ember import empty
        indices, values = np.zeros((len(size), 0), np.int64), empty(0, dtype=dtype)
    _warn_invariants_off(check_invariants)
    idx = _as_index(indices)
    v = _as_values(values, dtype)
    if idx.ndim != 2:
        raise RuntimeError(f"indices must be sparse_dim x nnz, but got: {list(idx.shape)}")
    shape = K.inferred_shape(idx, v._data) if size is None else tuple(int(s) for s in size)
    K.check_coo(idx, v._data, shape)
    return _finish(coo_from_parts(_ints(idx), v, shape, bool(is_coalesced)), requires_grad)


@public()
def sparse_csr_tensor(crow_indices, col_indices, values, size=None, *, dtype=None,
                      layout=None, device=None, pin_memory=False, requires_grad=False,
                      check_invariants=None):
    """A CSR matrix from compressed row pointers, column indices and values."""
    _warn_invariants_off(check_invariants)
    crow, col = _as_index(crow_indices), _as_index(col_indices)
    v = _as_values(values, dtype)
    if size is None:
        size = (len(crow) - 1, int(col.max()) + 1 if col.size else 0)
    if len(crow) != size[0] + 1 or crow[0] != 0 or crow[-1] != len(col) or \
            np.any(np.diff(crow) < 0) or len(col) != v.shape[0]:
        raise RuntimeError(f"sparse_csr_tensor: crow_indices of length {len(crow)} and "
                           f"col_indices of length {len(col)} do not describe a {size[0]}-row "
                           f"matrix with {v.shape[0]} values")
    if col.size and (col.min() < 0 or col.max() >= size[1]):
        raise RuntimeError(f"`0 <= col_indices < ncols` is not satisfied.")
    t = csr_from_parts(_ints(crow), _ints(col), v, tuple(int(s) for s in size))
    return _finish(t, requires_grad)


def _compressed_tensor(cidx, pidx, values, size, dtype, layout, requires_grad, name):
    """A compressed-layout tensor from its parts (2-D; blocked layouts take values
    (nnz, block_rows, block_cols))."""
    cidx, pidx = _as_index(cidx), _as_index(pidx)
    v = _as_values(values, dtype)
    blocked = layout in K.BLOCKED
    if cidx.ndim != 1 or pidx.ndim != 1:
        raise NotImplementedError(f"{name}: ember supports compressed tensors without batch "
                                  f"dimensions only")
    if v.ndim != (3 if blocked else 1):
        if blocked and v.ndim < 3:
            raise RuntimeError(f"values must have dimensionality > sum of batch and block "
                               f"dimensionalities (=0 + 2) but got {v.ndim}")
        raise NotImplementedError(f"{name}: ember supports values without dense dimensions "
                                  f"only")
    br, bc = tuple(v.shape[1:3]) if blocked else (1, 1)
    major = len(cidx) - 1
    minor = int(pidx.max()) + 1 if pidx.size else 0
    if size is None:
        size = (major * br, minor * bc) if layout in K.ROW_MAJOR else (minor * br, major * bc)
    size = tuple(int(n) for n in size)
    if len(size) != 2:
        raise NotImplementedError(f"{name}: ember supports 2-D compressed tensors only")
    nmajor, nminor = (size[0] // br, size[1] // bc) if layout in K.ROW_MAJOR else \
        (size[1] // bc, size[0] // br)
    if len(cidx) != nmajor + 1 or cidx[0] != 0 or cidx[-1] != len(pidx) or \
            np.any(np.diff(cidx) < 0) or len(pidx) != v.shape[0] or \
            pidx.size and (pidx.min() < 0 or pidx.max() >= nminor):
        raise RuntimeError(f"{name}: compressed indices of length {len(cidx)} and plain "
                           f"indices of length {len(pidx)} do not describe a "
                           f"{_KIND[layout]} tensor of size {size} with {v.shape[0]} values")
    if layout == K.CSR:
        t = csr_from_parts(_ints(cidx), _ints(pidx), v, size)
    else:
        t = compressed_from_parts(_ints(cidx), _ints(pidx), v, size, layout)
    return _finish(t, requires_grad)


@public()
def sparse_compressed_tensor(compressed_indices, plain_indices, values, size=None, *,
                             dtype=None, layout=None, device=None, pin_memory=False,
                             requires_grad=False, check_invariants=None):
    """A tensor of the compressed ``layout`` (sparse_csr, _csc, _bsr, _bsc) from its parts."""
    _warn_invariants_off(check_invariants)
    if layout is None or layout.name not in K.COMPRESSED:
        got = "none" if layout is None else _KIND.get(layout.name, layout.name)
        raise RuntimeError(f"sparse_compressed_tensor expected sparse compressed tensor "
                           f"layout but got {got}")
    return _compressed_tensor(compressed_indices, plain_indices, values, size, dtype,
                              layout.name, requires_grad, "sparse_compressed_tensor")


def _compressed_front(layout, names):
    def front(compressed_indices, plain_indices, values, size=None, *, dtype=None,
              device=None, pin_memory=False, requires_grad=False, check_invariants=None):
        _warn_invariants_off(check_invariants)
        return _compressed_tensor(compressed_indices, plain_indices, values, size, dtype,
                                  layout, requires_grad, f"{layout}_tensor")
    front.__name__ = f"{layout}_tensor"
    front.__doc__ = f"A {layout[7:].upper()} matrix from {names[0]}, {names[1]} and values."
    return public(front.__name__)(front)


sparse_csc_tensor = _compressed_front(K.CSC, ("ccol_indices", "row_indices"))
sparse_bsr_tensor = _compressed_front(K.BSR, ("crow_indices", "col_indices"))
sparse_bsc_tensor = _compressed_front(K.BSC, ("ccol_indices", "row_indices"))


@public("spmm")
def spmm(input, mat2):
    return _mm_rule(input, mat2)


_WANT = {K.COO: "sparse coordinate", K.ROW_MAJOR: "sparse row compressed",
         (K.CSC, K.BSC): "sparse column compressed"}


def _need(t, layout, name):
    if _layout(t) not in (layout if isinstance(layout, tuple) else (layout,)):
        raise RuntimeError(f"{name} expected {_WANT[layout]} tensor layout but got "
                           f"{_KIND[_layout(t)]}")
    return t._data


@public(method=True, function=False)
def to_sparse(self, sparse_dim=None, *, layout=None, blocksize=None, dense_dim=None):
    if layout is not None and layout.name in K.COMPRESSED:
        if layout.name in K.BLOCKED and blocksize is None and _layout(self) == "strided":
            raise RuntimeError(f"dense_to_sparse: conversion from Strided to "
                               f"{_KIND[layout.name]} without blocksize argument given is "
                               f"not supported")
        return _to_compressed(self, layout.name, blocksize)
    if _layout(self) == K.COO:
        return self
    if _layout(self) in K.COMPRESSED:
        return _as_coo(self)
    sd = self.ndim if sparse_dim is None else sparse_dim
    if not 0 < sd <= self.ndim and self.ndim:
        raise RuntimeError(f"sparse_dim argument must be in [1,{self.ndim}] but got {sd}")
    return sparsify(self, sd)


@public(method=True, function=False)
def sparse_mask(self, mask):
    """``self``'s entries at ``mask``'s indices, in ``mask``'s layout."""
    m = coalesce(_as_coo(mask))
    return _like_layout(_with_values(m, _gather(self, m._data.indices)), mask)


@public(method=True, function=False)
def to_sparse_coo(self):
    return to_sparse(self)


def _to_compressed(self, layout, blocksize=None):
    """``self`` (dense, COO or compressed) in a compressed layout."""
    src = _layout(self)
    block = (1, 1) if layout not in K.BLOCKED else \
        (tuple(int(b) for b in blocksize) if isinstance(blocksize, (tuple, list, Size))
         else (int(blocksize),) * 2)
    if src in K.BLOCKED and layout in K.BLOCKED:
        if K.blocksize(self._data) != block:
            raise RuntimeError(f"to_{layout}: conversion from {_KIND[src]} to {_KIND[layout]} "
                               f"with blocksize changed from {list(K.blocksize(self._data))} "
                               f"to {list(block)} is not supported")
    if src == layout:
        return self
    if src in K.BLOCKED and layout not in K.BLOCKED:
        raise RuntimeError(f"sparse_compressed_to_{layout}: expected SparseCsr or SparseCsc "
                           f"layout but got ")
    if self.ndim != 2:
        raise NotImplementedError(f"to_{layout}: ember supports 2-D tensors only, got "
                                  f"{self.ndim}-D")
    if src == "strided" and (self.shape[0] % block[0] or self.shape[1] % block[1]):
        raise RuntimeError(f"dense_to_{layout}: tensor sparse size ({self.shape[0]},"
                           f"{self.shape[1]}) must be divisible by given blocksize "
                           f"({block[0]},{block[1]})")
    coo = coalesce(to_sparse(self))
    if layout == K.CSR:
        return coo_to_csr(coo)
    return coo_to_compressed(coo, layout, block)


@public(method=True, function=False)
def to_sparse_csr(self, dense_dim=None):
    return _to_compressed(self, K.CSR)


@public(method=True, function=False)
def to_sparse_csc(self, dense_dim=None):
    return _to_compressed(self, K.CSC)


@public(method=True, function=False)
def to_sparse_bsr(self, blocksize, dense_dim=None):
    return _to_compressed(self, K.BSR, blocksize)


@public(method=True, function=False)
def to_sparse_bsc(self, blocksize, dense_dim=None):
    return _to_compressed(self, K.BSC, blocksize)


@public(method=True, function=False)
def to_dense(self, dtype=None, *, masked_grad=None):
    out = self if _layout(self) == "strided" else densify(self)
    return out if dtype is None else out.to(dtype)


@public("coalesce", method=True, function=False)
def _coalesce(self):
    _need(self, K.COO, "coalesce")
    return coalesce(self)


@public(method=True, function=False)
def is_coalesced(self):
    return _need(self, K.COO, "is_coalesced").coalesced


@public(method=True, function=False)
def indices(self):
    a = _need(self, K.COO, "indices")
    if not a.coalesced:
        raise RuntimeError("Cannot get indices on an uncoalesced tensor, please call "
                           ".coalesce() first")
    return _ints(a.indices)


@public("_indices", method=True, function=False)
def _indices(self):
    return _ints(_need(self, K.COO, "_indices").indices)


@public(method=True, function=False)
def values(self):
    if _layout(self) == K.COO and not self._data.coalesced:
        raise RuntimeError("Cannot get values on an uncoalesced tensor, please call "
                           ".coalesce() first")
    return _values(self)


def _no_dense_kernel(op):
    """torch's error for a sparse-only aten op given a strided tensor."""
    return NotImplementedError(f"Could not run 'aten::{op}' with arguments from the 'CPU' "
                               f"backend.")


@public("_values", method=True, function=False)
def _values(self):
    if _layout(self) == "strided":
        raise _no_dense_kernel("_values")
    return values_of(self)


@public(method=True, function=False)
def crow_indices(self):
    return _ints(_need(self, K.ROW_MAJOR, "crow_indices").crow)


@public(method=True, function=False)
def col_indices(self):
    return _ints(_need(self, K.ROW_MAJOR, "col_indices").col)


@public(method=True, function=False)
def ccol_indices(self):
    return _ints(_need(self, (K.CSC, K.BSC), "ccol_indices").crow)


@public(method=True, function=False)
def row_indices(self):
    return _ints(_need(self, (K.CSC, K.BSC), "row_indices").col)


@public(method=True, function=False)
def sparse_dim(self):
    return self._data.sparse_dim if _layout(self) != "strided" else 0


@public(method=True, function=False)
def dense_dim(self):
    return self.ndim - sparse_dim(self)


@public("_nnz", method=True, function=False)
def _nnz(self):
    if _layout(self) == "strided":
        raise _no_dense_kernel("_nnz")
    return self._data.nnz


# ------------------------------------------------------------------ printing, saving

def _inner(name, arr):
    """``name=tensor(...)`` of an index or value array, wrapped at its own indentation;
    torch leaves out its dtype and gives an empty one's size."""
    from ember._tensor_str import _body
    if arr.size == 0:
        return f"{name}=tensor([], size={tuple(arr.shape)})"
    return f"{name}=tensor({_body(arr, 2 * len('tensor(') + len(name) + 1)})"


def sparse_repr(t):
    """torch's repr of a sparse tensor: the index and value tensors, then size and nnz."""
    a = t._data
    if a.layout == K.COO:
        parts = [_inner("indices", a.indices)]
    elif a.layout in K.ROW_MAJOR:
        parts = [_inner("crow_indices", a.crow), _inner("col_indices", a.col)]
    else:
        parts = [_inner("ccol_indices", a.crow), _inner("row_indices", a.col)]
    parts.append(_inner("values", a.values))
    notes = [f"size={tuple(a.shape)}", f"nnz={a.nnz}"]
    default = _dtype.get_default_dtype()
    complex_default = _dtype.complex128 if default is _dtype.float64 else _dtype.complex64
    if t.dtype not in (default, complex_default, _dtype.int64, _dtype.bool):
        notes.append(f"dtype={t.dtype}")
    notes.append(f"layout=torch.{a.layout}")
    if t.grad_fn is not None:
        notes.append(f"grad_fn=<{type(t.grad_fn).__name__}>")
    elif t.requires_grad:
        notes.append("requires_grad=True")
    pad = ",\n" + " " * len("tensor(")
    text = "tensor(" + pad.join(parts)
    if a.layout == K.COO:                 # torch starts the notes on a line of their own
        text += pad + notes.pop(0)
    for note in notes:
        # the line with ", note" and its closing character; torch lets an autograd note
        # reach the line width, the others stop one short of it
        width = len(text) - text.rfind("\n") - 1 + len(note) + 3
        limit = 80 if note.startswith(("grad_fn", "requires_grad")) else 79
        text += (pad if width > limit else ", ") + note
    return text + ")"


def reduce_for_save(t):
    """torch's pickled form: ``_rebuild_sparse_tensor(layout, data)``."""
    import ember
    a = t._data
    if a.layout == K.COO:
        return ember.sparse_coo, (_ints(a.indices), _make(a.values), Size(a.shape), a.coalesced)
    return getattr(ember, a.layout), (_ints(a.crow), _ints(a.col), _make(a.values),
                                      Size(a.shape))


def rebuild_sparse_tensor(layout, data):
    """The loader's ``torch._utils._rebuild_sparse_tensor``."""
    if layout.name == K.COO:
        indices, values, size = data[:3]
        coalesced = bool(data[3]) if len(data) > 3 else False
        return coo_from_parts(indices, values, tuple(size), coalesced)
    if layout.name == K.CSR:
        crow, col, values, size = data
        return csr_from_parts(crow, col, values, tuple(size))
    if layout.name in K.COMPRESSED:
        cidx, pidx, values, size = data
        return compressed_from_parts(cidx, pidx, values, tuple(size), layout.name)
    raise NotImplementedError(f"rebuilding a sparse tensor of layout {layout} is not "
                              f"supported by ember")
