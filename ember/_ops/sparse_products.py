"""``torch.smm`` and ``torch.hspmm``: a 2-D sparse COO matrix times a dense one, returned
sparse. ``smm`` gives a COO matrix holding every column of each row the sparse factor
touches; ``hspmm`` gives a hybrid COO tensor (one sparse dim) whose values are those dense
rows. Neither has a derivative in torch: their backward raises, as torch's does."""
from __future__ import annotations

import numpy as np

from ember._kernels import sparse as K
from ember._dtype import TYPE_NAMES
from ember._ops.registry import public
from ember._ops.sparse import _primitive


def _product_rows(a, d):
    """Rows the sparse ``a`` (m, k) touches (sorted) and those rows of ``a @ d``."""
    rows, cols = a.indices
    out = np.zeros((a.shape[0], d.shape[1]), d.dtype)
    np.add.at(out, rows, a.values[:, None] * d[cols])
    touched = np.unique(rows)
    return touched, out[touched]


def _hspmm_kernel(a, d):
    rows, values = _product_rows(a, d)
    return K.coo(rows[None, :], values, (a.shape[0], d.shape[1]))


def _smm_kernel(a, d):
    rows, values = _product_rows(a, d)
    n = d.shape[1]
    idx = np.stack([np.repeat(rows, n), np.tile(np.arange(n), len(rows))])
    return K.coo(idx, values.reshape(-1), (a.shape[0], n))


hspmm_op = _primitive("hspmm(Tensor mat1, Tensor mat2) -> Tensor", _hspmm_kernel,
                      "NotImplemented")
smm_op = _primitive("_sparse_smm(Tensor self, Tensor mat2) -> Tensor", _smm_kernel,
                    "NotImplemented")


@hspmm_op.def_backward
def _(ctx, g, mat1, mat2):
    raise RuntimeError("derivative for aten::hspmm is not implemented")


@smm_op.def_backward
def _(ctx, g, self, mat2):
    raise RuntimeError("derivative for aten::sspaddmm is not implemented")


def _check(name, sparse, dense):
    """torch's checks: a 2-D COO matrix, a 2-D dense one, inner sizes and dtypes agreeing."""
    if sparse.layout is not K.COO and str(sparse.layout) != "torch.sparse_coo":
        if name == "hspmm":
            raise NotImplementedError("Could not run 'aten::hspmm' with arguments from the "
                                      "'CPU' backend: it needs a sparse COO first argument")
        raise RuntimeError(f"tensor.{name}(...) can only be called on sparse tensors")
    for pos, t in ((2, sparse), (3, dense)):
        if t.ndim != 2:
            raise RuntimeError(f"{name}: Argument #{pos}: matrices expected, got {t.ndim}D "
                               f"tensor")
    if dense.shape[0] != sparse.shape[1]:
        raise RuntimeError(f"{name}: Argument #3: Expected dim 0 size {sparse.shape[1]}, got "
                           f"{dense.shape[0]}")
    if dense.dtype != sparse.dtype:
        raise RuntimeError(f"expected scalar type {TYPE_NAMES[sparse.dtype.name]} but found "
                           f"{TYPE_NAMES[dense.dtype.name]}")


@public(method=True)
def smm(input, mat2):
    """Sparse COO (m, k) @ dense (k, n) -> sparse COO (m, n): every column of each row
    ``input`` touches is stored (torch's ``sspaddmm`` result)."""
    _check("sspaddmm", input, mat2)
    return smm_op(input, mat2)


@public()
def hspmm(mat1, mat2):
    """Sparse COO (m, k) @ dense (k, n) -> hybrid sparse COO (m, n): indices (1, r) of the
    r rows ``mat1`` touches, values (r, n) those rows of the product."""
    _check("hspmm", mat1, mat2)
    return hspmm_op(mat1, mat2)
