"""Small public functions torch has at top level: aliases and thin composites.

``orgqr`` (= linalg.householder_product), ``sspaddmm`` / ``saddmm`` (sparse result),
``dsmm`` (= mm), ``hsmm`` (= hspmm), ``norm_except_dim``, ``native_norm`` (sparse only, as
torch on CPU), ``embedding_bag`` (torch's 4-tuple), ``from_file`` and the ``_VF`` recurrences
``lstm`` / ``gru`` / ``rnn_tanh`` / ``rnn_relu`` over the RNN modules' ``_recurrent``.
Composites of ember ops, so gradients come from their parts.
"""
from __future__ import annotations

import os

import numpy as np

from ember._ops.registry import public


def _E():
    import ember
    return ember


@public("orgqr")
def orgqr(input, tau, *, out=None):
    """Q (*, m, n) from ``geqrf``'s reflectors: ``linalg.householder_product``."""
    return _E().linalg.householder_product(input, tau, out=out)


@public("sspaddmm", method=True)
def sspaddmm(input, mat1, mat2, *, beta=1, alpha=1, out=None):
    """beta * input + alpha * (mat1 @ mat2) as a sparse COO (m, p) tensor: ``input``'s
    entries, then one entry per (row of mat1 holding a nonzero, column of mat2)."""
    E = _E()
    if not input.is_sparse:
        raise RuntimeError("sspaddmm: expected 'self' to be a sparse COO tensor, got a "
                           f"strided tensor of shape {list(input.shape)}")
    if not mat1.is_sparse or mat1.dim() != 2 or mat2.dim() != 2:
        raise RuntimeError("sspaddmm: expected a sparse 2-D mat1 and a dense 2-D mat2, got "
                           f"{list(mat1.shape)} and {list(mat2.shape)}")
    if mat1.shape[1] != mat2.shape[0]:
        raise RuntimeError(f"addmm: Argument #3 (dense): Expected dim 0 size {mat1.shape[1]}, "
                           f"got {mat2.shape[0]}")
    m, p = mat1.shape[0], mat2.shape[1]
    if tuple(input.shape) != (m, p):
        raise RuntimeError(f"sspaddmm: Argument #1 (t): Expected dim 0 size {m} and dim 1 "
                           f"size {p}, got {list(input.shape)}")
    prod = E.sparse.mm(mat1, mat2)                          # dense (m, p)
    rows = np.unique(mat1.coalesce()._indices().numpy()[0])
    r = np.repeat(rows, p)
    c = np.tile(np.arange(p), len(rows))
    idx = E.cat([input._indices(), E.tensor(np.stack([r, c]), dtype=E.int64)], 1)
    vals = E.cat([input._values() * beta, (prod * alpha)[E.tensor(r), E.tensor(c)]])
    res = E.sparse_coo_tensor(idx, vals, (m, p))
    if out is not None:
        out.copy_(res)
        return out
    return res


@public("saddmm")
def saddmm(input, mat1, mat2, *, beta=1, alpha=1, out=None):
    """``sspaddmm`` under its older name."""
    return sspaddmm(input, mat1, mat2, beta=beta, alpha=alpha, out=out)


@public("dsmm")
def dsmm(input, mat2, *, out=None):
    """sparse-or-dense (n, m) @ dense (m, p) -> dense (n, p): ``mm``."""
    return _E().mm(input, mat2, out=out)


@public("hsmm")
def hsmm(mat1, mat2):
    """sparse (n, m) @ dense (m, p) -> hybrid sparse (n, p): ``hspmm``."""
    return _E().hspmm(mat1, mat2)


@public("norm_except_dim")
def norm_except_dim(v, pow=2, dim=0):
    """The ``pow``-norm of v over every dim but ``dim``, kept as size-1 dims (weight norm's
    helper); ``dim=-1``: the norm of all of v, a scalar."""
    if dim == -1:
        return v.norm(pow)
    d = dim % v.dim() if v.dim() else 0
    others = [i for i in range(v.dim()) if i != d]
    if not others:
        return v.abs()
    if d == 0 or not v.is_contiguous():
        return v.norm(pow, dim=others, keepdim=True)
    # torch: the slices of ``dim`` as contiguous rows (transposed to the front), one norm each
    rows = v.transpose(0, d).contiguous()
    n = rows.reshape(rows.shape[0], -1).norm(pow, dim=1)
    shape = [1] * v.dim()
    shape[d] = v.shape[d]
    return n.reshape(shape)


# Note [weight norm]: torch's ``_weight_norm(v, g, dim)`` is ``v * (g / norm)``: for ``dim``
# -1 the norm of all of v (``linalg.vector_norm``); for ``dim`` 0 or the last dim (as given)
# its fused kernel (node WeightNormInterfaceBackward0) with the norm of each slice; for
# other dims (-2 included) the composite over ``norm_except_dim`` (MulBackward0). Bit for
# bit with torch for -1, the composite dims and dim 0 (float32/float64: its order in
# ember/_ops/weight_norm.py); over the last dim torch's kernel adds the columns' squares
# in an order not found (per-thread partial sums come closest), so ember's columns take
# torch's 2-norm there (an ulp off in some).
@public("_weight_norm")
def _weight_norm(v, g, dim=0):
    E = _E()
    nd = v.dim()
    if dim == -1:
        return v * (g / E.linalg.vector_norm(v))
    if not -max(nd, 1) <= dim < max(nd, 1):
        raise IndexError(f"Dimension out of range (expected to be in range of [{-max(nd, 1)}, "
                         f"{max(nd, 1) - 1}], but got {dim})")
    if v.dtype != g.dtype:
        raise RuntimeError(f"expected scalar type {g.dtype.__repr__().split('.')[-1].title()} "
                           f"but found {v.dtype.__repr__().split('.')[-1].title()}")
    if dim == 0 and nd >= 1 and v.dtype in (E.float32, E.float64) and g.dtype == v.dtype \
            and g.numel() == v.shape[0] and v.numel():
        from ember._ops.weight_norm import weight_norm_interface
        return weight_norm_interface(v, g, 0)[0]
    w = v * (g / norm_except_dim(v, 2, dim))
    if dim == nd - 1 and w.grad_fn is not None:
        from ember.autograd.graph import rename_node
        rename_node(w.grad_fn, "WeightNormInterfaceBackward0")
    return w


@public("native_norm")
def native_norm(input, p=2, dim=None, keepdim=False, dtype=None):
    """The p-norm of a sparse COO tensor's values (a full reduction); torch has no
    strided CPU kernel for it."""
    if not input.is_sparse:
        raise NotImplementedError("Could not run 'aten::native_norm' with arguments from the "
                                  "'CPU' backend: only sparse COO inputs are supported")
    if dim is not None and sorted(d % input.dim() for d in dim) != list(range(input.dim())):
        raise RuntimeError("norm_sparse currently only supports full reductions, so 'dim' "
                           "must either be empty or contain all dimensions of the input")
    vals = input.coalesce()._values()
    if dtype is not None:
        vals = vals.to(dtype)
    res = vals.norm(p)
    return res.reshape([1] * input.dim()) if keepdim and dim is not None else res


@public("embedding_bag")
def embedding_bag(weight, indices, offsets, scale_grad_by_freq=False, mode=0, sparse=False,
                  per_sample_weights=None, include_last_offset=False, padding_idx=None):
    """(output (B, D), offset2bag, bag_size, max_indices) for 1-D ``indices`` cut into bags
    at ``offsets``; mode 0 sum, 1 mean, 2 max. The last three are torch's bookkeeping:
    the bag of each index (empty for sum), each bag's count of non-padding indices (zeros
    for sum) and, for max, the row chosen per column (bag sizes for mean)."""
    E = _E()
    if mode not in (0, 1, 2):
        raise RuntimeError(f"embedding_bag: mode must be 0 (sum), 1 (mean) or 2 (max), got "
                           f"{mode}")
    name = ("sum", "mean", "max")[mode]
    pad_given = padding_idx is not None
    out = E.nn.functional.embedding_bag(
        indices, weight, offsets, scale_grad_by_freq=scale_grad_by_freq, mode=name,
        sparse=sparse, per_sample_weights=per_sample_weights,
        include_last_offset=include_last_offset, padding_idx=padding_idx)
    idx = indices.numpy().astype(np.int64).reshape(-1)
    offs = offsets.numpy().astype(np.int64).reshape(-1)
    n_off = len(offs)
    bags = n_off - 1 if include_last_offset else n_off
    ends = np.append(offs[1:], len(idx))[:bags] if not include_last_offset else offs[1:]
    offset2bag = np.zeros(len(idx), np.int64)
    for b in range(bags):
        offset2bag[offs[b]:ends[b]] = b
    if mode == 0:                   # sum: only the bag of each index, and only with padding
        z = E.zeros(n_off, dtype=E.int64)
        o2b = E.tensor(offset2bag) if pad_given else E.zeros(0, dtype=E.int64)
        return out, o2b, z, z.clone()
    pad = -1 if padding_idx is None else padding_idx % weight.shape[0]
    real = idx != pad
    bag_size = np.array([int(real[offs[b]:ends[b]].sum()) for b in range(bags)], np.int64)
    if mode == 1:
        maxi = bag_size.copy()
    else:
        w = weight.detach().numpy()
        maxi = np.zeros((bags, weight.shape[1]), np.int64)
        for b in range(bags):
            rows = idx[offs[b]:ends[b]][real[offs[b]:ends[b]]]
            if len(rows):
                maxi[b] = rows[np.argmax(w[rows], axis=0)]
    return (out, E.tensor(offset2bag), E.tensor(bag_size), E.tensor(maxi))


@public("from_file")
def from_file(filename, shared=None, size=0, *, dtype=None, layout=None, device=None,
              pin_memory=False, requires_grad=False):
    """A 1-D tensor of ``size`` elements read from ``filename``; ``shared=True`` maps the
    file (writes reach it, and a short file is extended), otherwise the bytes are copied."""
    E = _E()
    from ember import _dtype
    dt = E.get_default_dtype() if dtype is None else _dtype.to_dtype(dtype)
    nbytes = int(size) * dt.itemsize
    filename = os.fspath(filename)
    if not os.path.exists(filename) and not shared:
        raise RuntimeError(f"unable to open file <{filename}> in read-only mode: No such file "
                           f"or directory (2)")
    if shared:
        if not os.path.exists(filename) or os.path.getsize(filename) < nbytes:
            with open(filename, "ab") as f:
                f.truncate(nbytes)
        arr = np.memmap(filename, dt.np, "r+", shape=(int(size),)) if size else \
            np.zeros(0, dt.np)
        t = E.from_numpy(np.asarray(arr) if not size else arr.view(np.ndarray))
        t._file_map = arr                         # keeps the mapping alive with the tensor
    else:
        have = os.path.getsize(filename)
        if have < nbytes:
            raise RuntimeError(f"file <{filename}> size <{have}> is smaller than the required "
                               f"mapping size <{nbytes}>")
        t = E.from_numpy(np.fromfile(filename, dt.np, int(size)))
    return t.requires_grad_(requires_grad) if requires_grad else t


# ----------------------------------------------------------------- _VF recurrences

def _names(params, has_biases, num_layers, bidirectional):
    """The module attribute names of torch's flat ``params`` order (per layer, per
    direction: w_ih, w_hh, [b_ih, b_hh], [w_hr])."""
    dirs = 2 if bidirectional else 1
    per = len(params) // (num_layers * dirs)
    roles = ["weight_ih", "weight_hh"] + (["bias_ih", "bias_hh"] if has_biases else [])
    if per == len(roles) + 1:
        roles.append("weight_hr")
    if per != len(roles) or len(params) != per * num_layers * dirs:
        raise RuntimeError(f"rnn: got {len(params)} parameters for {num_layers} layer(s), "
                           f"{dirs} direction(s) and has_biases={has_biases}")
    return [f"{r}_l{layer}{'_reverse' if d else ''}" for layer in range(num_layers)
            for d in range(dirs) for r in roles]


def _vf(mode, args):
    from ember.nn.modules.rnn import _recurrent
    packed = not isinstance(args[2], (list, tuple))
    if packed:      # (data, batch_sizes, hx, params, has_biases, layers, dropout, train, bidir)
        data, batch_sizes, hx, params, has_b, layers, p, train, bidir = args
        batch_first = False
    else:           # (input, hx, params, has_biases, layers, dropout, train, bidir, batch_first)
        data, hx, params, has_b, layers, p, train, bidir, batch_first = args
        batch_sizes = None
    params = list(params)
    names = _names(params, has_b, layers, bidir)
    proj = params[names.index("weight_hr_l0")].shape[0] if "weight_hr_l0" in names else 0
    h0, c0 = (hx[0], hx[1]) if mode == "LSTM" else (hx, None)
    x, h, c = _recurrent(mode, data, batch_sizes, h0, c0, params, names, layers, bidir, p,
                         train, batch_first, proj)
    return (x, h, c) if mode == "LSTM" else (x, h)


@public("lstm")
def lstm(*args):
    """torch._VF.lstm: (output, h_n, c_n); ``hx`` is (h_0, c_0)."""
    return _vf("LSTM", args)


@public("gru")
def gru(*args):
    """torch._VF.gru: (output, h_n)."""
    return _vf("GRU", args)


@public("rnn_tanh")
def rnn_tanh(*args):
    """torch._VF.rnn_tanh: (output, h_n)."""
    return _vf("RNN_TANH", args)


@public("rnn_relu")
def rnn_relu(*args):
    """torch._VF.rnn_relu: (output, h_n)."""
    return _vf("RNN_RELU", args)
