"""torch.sparse: products, reductions and normalizations of sparse tensors.

The layouts, records and routing live in ``ember/_ops/sparse.py``; this is the namespace.
"""
from __future__ import annotations

from ember._ops.sparse import addmm, sparse_mm, sparse_softmax, sparse_sum

__all__ = ["addmm", "check_sparse_tensor_invariants", "mm", "sum", "softmax", "log_softmax"]


def mm(mat1, mat2, reduce="sum"):
    """Sparse @ dense (a dense result, gradients to both) or sparse @ sparse."""
    if reduce != "sum":
        raise NotImplementedError(f"torch.sparse.mm: reduce={reduce!r} is not supported by "
                                  f"ember")
    return sparse_mm(mat1, mat2)


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
