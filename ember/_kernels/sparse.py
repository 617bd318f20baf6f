"""Sparse kernels: COO and CSR payloads on NumPy arrays.

A sparse tensor's ``_data`` is a :class:`SparseArray`: a read-only, zero-stride array of the
tensor's shape and dtype (no memory, like a meta placeholder) that carries the payload.
COO: ``indices`` (sparse_dim, nnz) int64 and ``values`` (nnz, *dense_shape). The compressed
layouts (2-D) keep their compressed index in ``crow`` and their plain index in ``col``:
CSR ``crow_indices`` (rows + 1) / ``col_indices`` (nnz), CSC ``ccol_indices`` (cols + 1) /
``row_indices``; values (nnz,). BSR and BSC do the same over blocks: values
(nnz, block_rows, block_cols). The dispatcher never hands a SparseArray to a dense kernel
(``ember/_ops/sparse.py`` routes or refuses first).
"""
from __future__ import annotations

import numpy as np

COO, CSR, CSC, BSR, BSC = "sparse_coo", "sparse_csr", "sparse_csc", "sparse_bsr", "sparse_bsc"
COMPRESSED = (CSR, CSC, BSR, BSC)
ROW_MAJOR = (CSR, BSR)              # compressed over rows (the others over columns)
BLOCKED = (BSR, BSC)


class SparseArray(np.ndarray):
    """Shape and dtype of a sparse tensor, plus its index and value arrays."""
    layout = COO
    indices = crow = col = values = None
    coalesced = False

    @property
    def sparse_dim(self):
        return 2 if self.layout != COO else self.indices.shape[0]

    @property
    def nnz(self):
        return self.values.shape[0]

    def copy(self, order="C"):
        """A copy of the payload (the shell itself holds no data)."""
        out = _shell(self.shape, self.dtype, self.layout)
        for name in ("indices", "crow", "col", "values"):
            part = getattr(self, name)
            setattr(out, name, None if part is None else part.copy())
        out.coalesced = self.coalesced
        return out


def _shell(shape, dtype, layout):
    a = np.broadcast_to(np.zeros((), dtype), tuple(shape)).view(SparseArray)
    a.layout = layout
    return a


def coo(indices, values, shape, coalesced=False):
    a = _shell(shape, values.dtype, COO)
    a.indices = np.asarray(indices, np.int64)
    a.values = values
    a.coalesced = bool(coalesced) or a.indices.shape[1] <= 1
    return a


def csr(crow, col, values, shape):
    return compressed(crow, col, values, shape, CSR)


def compressed(cidx, pidx, values, shape, layout):
    """A compressed layout's payload: compressed and plain indices, values."""
    a = _shell(shape, values.dtype, layout)
    a.crow, a.col, a.values = np.asarray(cidx, np.int64), np.asarray(pidx, np.int64), values
    return a


def blocksize(a):
    return tuple(a.values.shape[1:3]) if a.layout in BLOCKED else (1, 1)


def compressed_to_coo(a):
    """COO of a compressed payload, entries in torch's order: CSR row-major (coalesced),
    CSC column-major, BSR/BSC block by block with every entry of each block (row-major
    within a block)."""
    if a.layout == CSR:
        return csr_to_coo(a)
    major = np.repeat(np.arange(len(a.crow) - 1, dtype=np.int64), np.diff(a.crow))
    rows, cols = (major, a.col) if a.layout in ROW_MAJOR else (a.col, major)
    if a.layout not in BLOCKED:
        return coo(np.stack([rows, cols]), a.values, a.shape, False)
    br, bc = blocksize(a)
    r = (rows[:, None, None] * br + np.arange(br)[None, :, None]) + 0 * np.arange(bc)
    c = (cols[:, None, None] * bc + np.arange(bc)[None, None, :]) + 0 * r
    return coo(np.stack([r.reshape(-1), c.reshape(-1)]), a.values.reshape(-1), a.shape,
               a.layout == BSR and br == 1)     # one-row blocks come out row-major


def coo_to_compressed(a, layout, block=(1, 1)):
    """A 2-D COO payload in a compressed layout; blocked layouts keep every block holding a
    specified entry (its other entries zero)."""
    if layout == CSR:
        return coo_to_csr(a)
    a = coalesce(a)
    br, bc = block if layout in BLOCKED else (1, 1)
    nr, nc = a.shape
    if nr % br or nc % bc:
        raise RuntimeError(f"Tensor size({'-2' if nr % br else '-1'}) "
                           f"{nr if nr % br else nc} needs to be divisible by blocksize"
                           f"[{0 if nr % br else 1}] {br if nr % br else bc}")
    rows, cols = a.indices
    brow, bcol = rows // br, cols // bc
    major, minor, nmajor = (brow, bcol, nr // br) if layout in ROW_MAJOR else \
        (bcol, brow, nc // bc)
    key = major * (max(nr // br, nc // bc) + 1) + minor
    uniq, slot = np.unique(key, return_inverse=True)
    slot = slot.reshape(-1)
    umajor, uminor = np.divmod(uniq, max(nr // br, nc // bc) + 1)
    cidx = np.zeros(nmajor + 1, np.int64)
    np.cumsum(np.bincount(umajor, minlength=nmajor), out=cidx[1:])
    if layout not in BLOCKED:
        values = np.zeros((len(uniq),) + a.values.shape[1:], a.values.dtype)
        values[slot] = a.values
    else:
        values = np.zeros((len(uniq), br, bc), a.values.dtype)
        values[slot, rows % br, cols % bc] = a.values
    return compressed(cidx, uminor.astype(np.int64), values, a.shape, layout)


# ------------------------------------------------------------------ construction checks

def check_coo(indices, values, shape):
    """torch's invariants for ``sparse_coo_tensor(indices, values, size)``."""
    sd = indices.shape[0]
    if len(shape) != sd + values.ndim - 1:
        raise RuntimeError(f"'len(size) == sparse_dim + dense_dim' is not satisfied: len(size) "
                           f"= {len(shape)}, sparse_dim = {sd}, dense_dim = {values.ndim - 1}")
    if indices.shape[1] != values.shape[0]:
        raise RuntimeError(f"indices and values must have same nnz, but got nnz from indices: "
                           f"{indices.shape[1]}, nnz from values: {values.shape[0]}")
    if indices.size:
        for d in range(sd):
            lo, hi = indices[d].min(), indices[d].max()
            if lo < 0:
                raise RuntimeError(f"found negative index {lo} for dim {d}")
            if hi >= shape[d]:
                raise RuntimeError(f"size is inconsistent with indices: for dim {d}, size is "
                                   f"{shape[d]} but found index {hi}")


def inferred_shape(indices, values):
    """The smallest size holding every index (torch's default when no size is given)."""
    top = indices.max(axis=1) + 1 if indices.size else np.zeros(indices.shape[0], np.int64)
    return tuple(int(n) for n in top) + values.shape[1:]


# ------------------------------------------------------------------ layout changes

def linear_index(indices, shape):
    """Row-major position of each index column among the sparse dims."""
    if indices.shape[0] == 0:
        return np.zeros(indices.shape[1], np.int64)
    return np.ravel_multi_index(tuple(indices), tuple(shape[:indices.shape[0]]))


def coalesce(a):
    """Sorted, duplicate-free indices; duplicates' values summed."""
    if a.coalesced:
        return a
    shape = a.shape
    keys = linear_index(a.indices, shape)
    uniq, slot = np.unique(keys, return_inverse=True)
    values = np.zeros((len(uniq),) + a.values.shape[1:], a.values.dtype)
    np.add.at(values, slot, a.values)
    sd = a.indices.shape[0]
    indices = np.array(np.unravel_index(uniq, shape[:sd]), np.int64).reshape(sd, len(uniq))
    return coo(indices, values, shape, True)


def to_dense(a):
    if a.layout != COO:
        a = compressed_to_coo(a)
    out = np.zeros(a.shape, a.dtype)
    np.add.at(out, tuple(a.indices), a.values)
    return out


def from_dense(x, sparse_dim=None):
    """COO of a dense array: entries (or dense slices) with any nonzero."""
    sd = x.ndim if sparse_dim is None else sparse_dim
    lead = x.reshape(x.shape[:sd] + (-1,)) if sd < x.ndim else x[..., None]
    hit = np.nonzero(lead.any(axis=-1))
    indices = np.array(hit, np.int64).reshape(sd, -1)
    return coo(indices, x[hit].copy(), x.shape, True)


def coo_to_csr(a):
    a = coalesce(a)
    rows, cols = a.indices
    crow = np.zeros(a.shape[0] + 1, np.int64)
    np.cumsum(np.bincount(rows, minlength=a.shape[0]), out=crow[1:])
    return csr(crow, cols.copy(), a.values.copy(), a.shape)


def csr_to_coo(a):
    rows = np.repeat(np.arange(a.shape[0], dtype=np.int64), np.diff(a.crow))
    return coo(np.stack([rows, a.col]), a.values, a.shape, True)


def values_at(a, indices):
    """Values of ``a`` at the index columns ``indices`` (zero where ``a`` has none)."""
    a = coalesce(a)
    shape = a.shape
    have = linear_index(a.indices, shape)
    want = linear_index(indices, shape)
    out = np.zeros((want.shape[0],) + a.values.shape[1:], a.dtype)
    if have.size:
        pos = np.minimum(np.searchsorted(have, want), have.size - 1)
        found = have[pos] == want
        out[found] = a.values[pos[found]]
    return out


# ------------------------------------------------------------------ arithmetic

def add(a, b, alpha=1):
    """COO sum (same shape): the concatenated entries, coalesced."""
    vb = b.values if alpha == 1 else b.values * alpha
    values = np.concatenate([a.values, vb.astype(np.result_type(a.values, vb), copy=False)])
    return coalesce(coo(np.concatenate([a.indices, b.indices], 1), values, a.shape))


def mul(a, b):
    """COO product: the entries both have."""
    a, b = coalesce(a), coalesce(b)
    ka, kb = linear_index(a.indices, a.shape), linear_index(b.indices, b.shape)
    both, ia, ib = np.intersect1d(ka, kb, assume_unique=True, return_indices=True)
    return coo(a.indices[:, ia], a.values[ia] * b.values[ib], a.shape, True)


def coo_mm(a, b):
    """Sparse (2-D COO) @ sparse: a COO result, via SciPy."""
    import scipy.sparse as ss
    x = ss.coo_matrix((a.values, tuple(a.indices)), a.shape).tocsr()
    y = ss.coo_matrix((b.values, tuple(b.indices)), b.shape).tocsr()
    r = (x @ y).tocoo()
    order = np.lexsort((r.col, r.row))
    idx = np.stack([r.row[order], r.col[order]]).astype(np.int64)
    return coo(idx, np.asarray(r.data[order], np.result_type(a.dtype, b.dtype)),
               (a.shape[0], b.shape[1]), True)
