"""torch.sparse: products, reductions and normalizations of sparse tensors.

The layouts, records and routing live in ``ember/_ops/sparse.py``; this is the namespace.
"""
from __future__ import annotations

from ember._ops.sparse import addmm, sparse_mm, sparse_softmax, sparse_sum

__all__ = ["addmm", "check_sparse_tensor_invariants", "mm", "sum", "softmax", "log_softmax",
           "sampled_addmm", "spdiags"]


def mm(mat1, mat2, reduce="sum"):
    """Sparse @ dense (a dense result, gradients to both) or sparse @ sparse."""
    if reduce != "sum":
        raise NotImplementedError(f"torch.sparse.mm: reduce={reduce!r} is not supported by "
                                  f"ember")
    return sparse_mm(mat1, mat2)


def spdiags(diagonals, offsets, shape, layout=None):
    """A sparse (m, n) matrix from the rows of ``diagonals``: row i's j-th value at
    ``(j - offsets[i], j)`` where that lies inside (torch's, SciPy's convention); COO by
    default, else ``layout`` (sparse_csr, sparse_csc)."""
    import numpy as np

    import ember
    offs = [int(o) for o in offsets.reshape(-1).tolist()]
    if diagonals.dim() == 2 and diagonals.shape[0] != len(offs):
        raise RuntimeError(f"Number of diagonals ({diagonals.shape[0]}) does not match the "
                           f"number of offsets ({len(offs)})")
    if len(set(offs)) != len(offs):
        raise RuntimeError("Offset tensor contains duplicate values")
    m, n = (int(v) for v in shape)
    d = diagonals.reshape(len(offs), -1)
    rows, cols, picks = [], [], []
    for i, o in enumerate(offs):
        j = np.arange(max(0, o), min(n, m + o, d.shape[1]))
        rows.append(j - o)
        cols.append(j)
        picks.append(np.stack([np.full_like(j, i), j]))
    rows, cols = np.concatenate(rows), np.concatenate(cols)
    pick = np.concatenate(picks, 1)
    values = d[ember.tensor(pick[0]), ember.tensor(pick[1])]
    out = ember.sparse_coo_tensor(ember.tensor(np.stack([rows, cols])), values, (m, n))
    if layout is None or layout == ember.sparse_coo:
        return out
    return out.to_sparse(layout=layout)


def sum(input, dim=None, dtype=None):
    """Sum over ``dim`` (all dims by default); a dense result once every sparse dim is summed."""
    return sparse_sum(input, dim, dtype)


def softmax(input, dim, *, dtype=None):
    """Softmax over ``dim`` of the specified entries only (the others stay unspecified)."""
    return sparse_softmax(input, dim, dtype)


def log_softmax(input, dim, *, dtype=None):
    return sparse_softmax(input, dim, dtype, log=True)


class check_sparse_tensor_invariants:
    """torch's switch for invariant checks (off by default, as torch's): ember always
    checks, so this only records, and decides the constructors' once-a-process warning."""
    _enabled = False

    def __init__(self, enable=True):
        self._on = enable

    @staticmethod
    def is_enabled():
        return check_sparse_tensor_invariants._enabled

    @staticmethod
    def enable():
        check_sparse_tensor_invariants._enabled = True

    @staticmethod
    def disable():
        check_sparse_tensor_invariants._enabled = False

    def __enter__(self):
        self._saved = check_sparse_tensor_invariants._enabled
        check_sparse_tensor_invariants._enabled = self._on

    def __exit__(self, *exc):
        check_sparse_tensor_invariants._enabled = self._saved


def sampled_addmm(input, mat1, mat2, *, beta=1.0, alpha=1.0, out=None):
    """``beta * input + alpha * (mat1 @ mat2)`` at the specified entries of the sparse CSR
    ``input`` (m, n) only: a CSR result with ``input``'s sparsity. mat1 (m, k), mat2 (k, n)
    dense; gradients reach both and ``input``'s values (the product's entries are gathered)."""
    import ember
    if out is not None:
        raise NotImplementedError("torch.sparse.sampled_addmm: out= is not supported by ember")
    if input.layout is not ember.sparse_csr:
        where = "SparseCPU" if input.layout is ember.sparse_coo else "CPU"
        raise NotImplementedError(f"Could not run 'aten::sparse_sampled_addmm' with arguments "
                                  f"from the '{where}' backend (ember: a sparse CSR input "
                                  f"only)")
    if input.dim() != 2 or mat1.dim() != 2 or mat2.dim() != 2:
        raise NotImplementedError("torch.sparse.sampled_addmm: ember supports 2-D input, mat1 "
                                  "and mat2 only (no batches)")
    if mat1.shape[1] != mat2.shape[0]:
        raise RuntimeError(f"sampled_addmm: mat1 and mat2 shapes cannot be multiplied "
                           f"({mat1.shape[0]}x{mat1.shape[1]} and {mat2.shape[0]}x"
                           f"{mat2.shape[1]})")
    if tuple(input.shape) != (mat1.shape[0], mat2.shape[1]):
        raise RuntimeError(f"sampled_addmm: Expected input to have shape ({mat1.shape[0]}, "
                           f"{mat2.shape[1]}), but got {tuple(input.shape)}")
    crow, col = input.crow_indices(), input.col_indices()
    counts = crow[1:] - crow[:-1]
    rows = ember.repeat_interleave(ember.arange(input.shape[0]), counts)
    picked = (mat1 @ mat2)[rows, col]
    values = beta * input.values() + alpha * picked if beta != 0 else alpha * picked
    return ember.sparse_csr_tensor(crow, col, values, tuple(input.shape),
                                   check_invariants=False)
