"""Scaled dot-product attention as one forward and one backward over NumPy arrays
(ember/_ops/attention.py records them as the op ``_sdpa_fused``).

Shapes: query (..., L, E), key (..., S, E), value (..., S, Ev) with the same leading dims;
a mask broadcasts against the (..., L, S) scores (bool: True = attend; float: added).
Forward: ``S = (Q K^T) * scale`` (+ causal / mask in place), softmax in place, ``O = P V``;
the probabilities ``P`` are the second output, saved for the backward. Rows whose every
position is masked give 0 (torch's CPU kernels). Backward: ``dV = P^T dO``,
``dP = dO V^T``, ``dS = P * (dP - rowsum(dP * P))``, ``dQ = scale dS K``,
``dK = scale dS^T Q`` (and ``dS`` summed to the mask's shape for a float mask).
"""
from __future__ import annotations

import functools

import numpy as np


def _compiled():
    """ember._kernels.compiled.attention (float32 row kernels), or None (numba missing or
    the compiled kernels switched off)."""
    from ember._kernels import compiled
    return compiled.module("attention")


@functools.lru_cache(maxsize=16)
def _causal(L, S, dtype):
    """(L, S) additive mask: 0 on and below the diagonal, -inf above (read-only)."""
    m = np.triu(np.full((L, S), -np.inf, dtype), 1)
    m.flags.writeable = False
    return m


def _rows(fn, a):
    """``fn(lo, hi)`` over ranges of ``a``'s first dim on ember's threads (the compiled row
    kernels release the GIL; rows are independent, so the split does not change a bit)."""
    from ember._kernels import split
    split.run_rows(fn, a.shape[0], a.size)


def _pooled(name, *ctx, items, grain):
    """Run the row kernel ``name`` of compiled/pool.py on OpenBLAS's threads (Note [one
    pool] in blas_pool.py), ``grain`` elements per item; False where that pool is not in use."""
    if items * grain < 1 << 16:                 # one thread: the caller runs it directly
        return False
    from ember._kernels import blas_pool
    pool = blas_pool.kernels()
    return pool is not None and blas_pool.run(getattr(pool, name), blas_pool.context(*ctx),
                                              items, max(1, (1 << 15) // max(grain, 1)))


def _swap(a):
    return np.swapaxes(a, -1, -2)


def _blocks(*arrays):
    """Note [attention blocks] (compiled/attention.py): (sgemm's address, the compiled
    module, each array's [address, batch stride, head stride, row stride] in elements) where
    float32 operands of up to four dims with contiguous rows can take the block kernels,
    else None."""
    if arrays[0].dtype != np.float32 or arrays[0].ndim > 4 or not arrays[0].size:
        return None
    c = _compiled()
    if c is None:
        return None
    from ember._kernels import numpy_blas
    fn = numpy_blas.sgemm_address()
    if not fn:
        return None
    layout = []
    for a in arrays:
        st = [d // 4 for d in a.strides]
        if a.dtype != np.float32 or st[-1] != 1 or min(st) < 0 or \
                any(d % 4 for d in a.strides):
            return None
        row = st[-2] if a.shape[-2] > 1 else a.shape[-1]
        if row < a.shape[-1]:
            return None
        lead = [0] * (4 - a.ndim) + st[:-2]
        layout.append([a.ctypes.data, lead[0], lead[1], row])
    return fn, c, layout


def _run_blocks(c, name, ctx, items, work):
    """The block kernel ``name`` over ``items`` blocks: on OpenBLAS's threads for ``work``
    multiply-adds from 2^18, else (or where that pool is not in use) on this thread."""
    if work >= 1 << 18:
        from ember._kernels import blas_pool
        pool = blas_pool.kernels()
        if pool is not None and blas_pool.run(getattr(pool, name), ctx, items):
            return
    getattr(c, name)(ctx, 0, items)


def _heads(shape):
    return shape[-3] if len(shape) >= 3 else 1


def sdpa_forward(q, k, v, mask, is_causal, scale, dropout_mask=None):
    """(output (..., L, Ev), probabilities (..., L, S)); ``dropout_mask`` (scaled keep
    mask of the probabilities' shape) multiplies the probabilities before ``@ V``."""
    dt = q.dtype
    if mask is None and dropout_mask is None and dt == np.float32 and \
            q.ndim == k.ndim == v.ndim and _compiled() is not None:
        L, S, E, Ev = q.shape[-2], k.shape[-2], q.shape[-1], v.shape[-1]
        lead = q.shape[:-2]
        p = np.empty(lead + (L, S), dt)
        out = _output_array(q, v, lead + (L, Ev), dt)
        found = _blocks(q, k, v, out) if L and S and E and Ev else None
        if found is not None:
            fn, c, (qa, ka, va, oa) = found
            ctx = np.array([fn, qa[0], ka[0], va[0], p.ctypes.data, oa[0], _heads(q.shape)]
                           + qa[1:] + ka[1:] + va[1:] + oa[1:]
                           + [L, S, E, Ev, _f64_bits(scale), int(is_causal)], np.int64)
            G = p.size // (L * S)
            _run_blocks(c, "sdpa_forward_blocks", ctx, G, G * L * S * (E + Ev))
            return out, p
    c = _compiled() if dt == np.float32 else None
    if c is None:
        found = _by_groups(q, k, v, mask, dropout_mask)
        if found is not None:
            return _grouped_forward(found, q, v, mask, is_causal, scale, dropout_mask)
        out, s = _plain_forward(q, k, v, mask, is_causal, scale, dropout_mask)
        return _flash_layout(out, q, v, dropout_mask), s
    s = np.matmul(q, np.ascontiguousarray(_swap(k)))  # (a contiguous K^T: 0.27 -> 0.21 ms)
    L, S = s.shape[-2:]
    if s.flags.c_contiguous and s.size:
        if mask is not None:
            s *= dt.type(scale)
            with np.errstate(invalid="ignore", over="ignore"):
                if mask.dtype == np.bool_:
                    np.copyto(s, dt.type(-np.inf), where=~mask)
                else:
                    s += mask.astype(dt, copy=False)
            scale = 1.0
        mats = s.reshape(-1, L, S)
        if not _pooled("softmax_rows", s, mats.shape[0], L, S, float(scale), int(is_causal),
                       items=mats.shape[0], grain=L * S):
            _rows(lambda lo, hi: c.softmax_rows(mats[lo:hi].reshape(-1, S), L, scale,
                                                is_causal), mats)
        out = np.matmul(s if dropout_mask is None else s * dropout_mask, v)
        return _flash_layout(out if out.dtype == dt else out.astype(dt), q, v,
                             dropout_mask), s
    out, s = _plain_forward(q, k, v, mask, is_causal, scale, dropout_mask)
    return _flash_layout(out, q, v, dropout_mask), s


# Note [attention by groups]: without the compiled kernels the forward and backward are a
# dozen NumPy passes and batched GEMMs over all of (..., L, S), on the caller's thread. Where
# query, key, value (and the dropout mask, the gradients) share their leading dims and a
# mask, if any, is one (L, S) matrix, the flattened groups are cut into one contiguous range
# per thread (split.run_rows), each range running the same passes on its own slices (NumPy
# releases the GIL) into slices of the results: per group the same computation, so the same
# bits at any thread count. OpenBLAS is held at one thread meanwhile, as for ember's split
# GEMMs (Note [one thread plan] in numpy_blas.py). GPT's (16, 4, 64, 32) causal forward:
# 2.0 -> ~1.1 ms at 2 threads.

def _by_groups(q, k, v, mask, *others):
    """(G, and q, k, v and ``others`` as (G, rows, cols) arrays, None kept) where the
    attention can run by ranges of its flattened leading dims on several threads, else
    None (Note [attention by groups])."""
    from ember._kernels import split
    lead = q.shape[:-2]
    if q.ndim < 3 or q.dtype.char not in "fd" or split.threads() < 2 or \
            (mask is not None and mask.ndim > 2):
        return None
    arrays = (q, k, v) + others
    if any(a is not None and (a.shape[:-2] != lead or a.dtype != q.dtype) for a in arrays):
        return None
    G = int(np.prod(lead))
    L, S, E = q.shape[-2], k.shape[-2], q.shape[-1]
    if G < 2 or G * L * S * (E + v.shape[-1]) < 1 << 21:
        return None
    return G, [None if a is None else a.reshape((G,) + a.shape[-2:]) for a in arrays]


def _run_groups(G, part, work):
    """``part(lo, hi)`` over ranges of G groups on ember's threads, OpenBLAS on one."""
    from ember._kernels import numpy_blas, split
    with numpy_blas.one_thread():
        split.run_rows(part, G, work)


def _grouped_forward(found, q, v, mask, is_causal, scale, dropout_mask):
    G, (q3, k3, v3, d3) = found
    L, S, Ev = q.shape[-2], k3.shape[-2], v.shape[-1]
    s = np.empty((G, L, S), q.dtype)
    out = np.empty((G, L, Ev), q.dtype)

    def part(lo, hi):
        _plain_forward(q3[lo:hi], k3[lo:hi], v3[lo:hi], mask, is_causal, scale,
                       None if d3 is None else d3[lo:hi], s[lo:hi], out[lo:hi])
    _run_groups(G, part, G * L * S)
    lead = q.shape[:-2]
    return _flash_layout(out.reshape(lead + (L, Ev)), q, v, dropout_mask), \
        s.reshape(lead + (L, S))


def _plain_forward(q, k, v, mask, is_causal, scale, dropout_mask, s_out=None, out=None):
    """The forward in NumPy passes: (output, probabilities), into ``out`` and ``s_out``
    when given (float32/float64 operands of one dtype then)."""
    dt = q.dtype
    s = np.matmul(q, np.ascontiguousarray(_swap(k)), out=s_out)
    if s.dtype != dt:
        s = s.astype(dt)
    L, S = s.shape[-2:]
    s *= dt.type(scale)
    masked = False
    with np.errstate(invalid="ignore", over="ignore"):
        if is_causal:
            s += _causal(L, S, dt)
            masked = L > S          # a causal row keeps its first key when L <= S
        if mask is not None:
            if mask.dtype == np.bool_:
                np.copyto(s, dt.type(-np.inf), where=~mask)
            else:
                s += mask.astype(dt, copy=False)
            masked = True
        top = s.max(-1, keepdims=True)
        if masked:
            top[np.isneginf(top)] = 0       # all-masked rows: exp(-inf) = 0 throughout
        s -= top
        np.exp(s, out=s)
        total = s.sum(-1, keepdims=True)
        if masked:
            total[total == 0] = 1           # ... and stay 0
        s /= total
    out = np.matmul(s if dropout_mask is None else s * dropout_mask, v, out=out)
    return (out if out.dtype == dt else out.astype(dt)), s


def _flash_order(q, v, ndim, dropout_mask):
    """torch's CPU flash kernel (4-D, no dropout, equal head dims, flash enabled) lays its
    output out in query's order of the batch, head and sequence dims: a query made by
    ``x.view(B, L, H, D).transpose(1, 2)`` gives an output whose ``transpose(1, 2)`` is
    contiguous, so ``.view(B, L, H * D)`` of it works (the SDPA tutorial relies on that).
    That order of the first three dims (outermost first), or None for a contiguous one."""
    if ndim != 4 or dropout_mask is not None or q.shape[-1] != v.shape[-1] or \
            q.strides[-1] != q.itemsize or q.flags.c_contiguous:
        return None
    from ember.backends import cuda
    if not cuda._sdp["flash"]:
        return None
    order = sorted(range(3), key=lambda d: -q.strides[d])   # outermost first, ties kept
    return None if order == [0, 1, 2] else order


def _laid(order, shape, dt):
    """An empty array of ``shape`` whose first three dims lie in memory in ``order``."""
    dense = np.empty([shape[d] for d in order] + [shape[3]], dt)
    return dense.transpose([order.index(d) for d in range(3)] + [3])


def _output_array(q, v, shape, dt):
    order = _flash_order(q, v, len(shape), None)
    return np.empty(shape, dt) if order is None else _laid(order, shape, dt)


def _flash_layout(out, q, v, dropout_mask):
    """``out`` in the flash kernel's layout (``_flash_order``)."""
    order = _flash_order(q, v, out.ndim, dropout_mask)
    if order is None:
        return out
    laid = _laid(order, out.shape, out.dtype)
    laid[...] = out
    return laid


def _f64_bits(x):
    return int(np.array(x, np.float64).view(np.int64))


def _sum_to(a, shape):
    """``a`` summed over the dims that ``shape`` broadcasts (a new array)."""
    lead = a.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(i + lead for i, n in enumerate(shape)
                                      if n == 1 and a.shape[i + lead] != 1)
    r = a.sum(axes, keepdims=True) if axes else a.copy()
    return r.reshape(shape)


def sdpa_backward(grad_out, grad_attn, q, k, v, attn, scale, mask_shape, need,
                  dropout_mask=None):
    """(dQ, dK, dV, d mask) for the forward above; ``need`` says which (four flags) and
    ``mask_shape`` is that of a float mask (None: no mask gradient)."""
    dt = q.dtype
    if grad_attn is None and dropout_mask is None and not need[3] and \
            q.ndim == k.ndim == v.ndim == grad_out.ndim == attn.ndim and \
            attn.flags.c_contiguous and (found := _blocks(q, k, v, grad_out)) is not None:
        fn, c, (qa, ka, va, ga) = found
        L, S, E, Ev = q.shape[-2], k.shape[-2], q.shape[-1], v.shape[-1]
        grads = [np.empty(a.shape, dt) if n else None for a, n in zip((q, k, v), need)]
        ctx = np.array([fn, qa[0], ka[0], va[0], attn.ctypes.data, ga[0]]
                       + [0 if g is None else g.ctypes.data for g in grads]
                       + [_heads(q.shape)] + qa[1:] + ka[1:] + va[1:] + ga[1:]
                       + [L, S, E, Ev, _f64_bits(scale),
                          need[0] + 2 * need[1] + 4 * need[2]], np.int64)
        G = attn.size // (L * S)
        _run_blocks(c, "sdpa_backward_blocks", ctx, G, G * L * S * (2 * E + 2 * Ev))
        return tuple(grads) + (None,)
    if not need[3] and (dt != np.float32 or _compiled() is None):
        found = _by_groups(q, k, v, None, grad_out, attn, grad_attn, dropout_mask)
        if found is not None:
            return _grouped_backward(found, q, k, v, scale, need)
    return _plain_backward(grad_out, grad_attn, q, k, v, attn, scale, mask_shape, need,
                           dropout_mask)


def _grouped_backward(found, q, k, v, scale, need):
    """The backward by ranges of groups (Note [attention by groups])."""
    G, (q3, k3, v3, g3, p3, ga3, d3) = found
    grads = [np.empty(a.shape, a.dtype) if n else None for a, n in zip((q3, k3, v3), need)]

    def part(lo, hi):
        def cut(a):
            return None if a is None else a[lo:hi]
        _plain_backward(g3[lo:hi], cut(ga3), q3[lo:hi], k3[lo:hi], v3[lo:hi], p3[lo:hi],
                        scale, None, need, cut(d3), [cut(g) for g in grads])
    L, S = p3.shape[-2:]
    _run_groups(G, part, G * L * S)
    return tuple(None if g is None else g.reshape(a.shape)
                 for g, a in zip(grads, (q, k, v))) + (None,)


def _plain_backward(grad_out, grad_attn, q, k, v, attn, scale, mask_shape, need,
                    dropout_mask, outs=(None, None, None)):
    """The backward in NumPy passes (the compiled row kernels where they serve): (dQ, dK,
    dV, d mask), dQ, dK and dV into ``outs`` where given."""
    dt = q.dtype
    dq = dk = dv = dmask = None
    if need[2]:
        dropped = attn if dropout_mask is None else attn * dropout_mask
        dv = np.matmul(_swap(dropped), grad_out, out=outs[2])
    if need[0] or need[1] or need[3]:
        dp = np.matmul(grad_out, _swap(v))
        if dropout_mask is not None:
            dp *= dropout_mask
        if grad_attn is not None:
            dp += grad_attn
        c = _compiled() if dt == np.float32 and not need[3] else None
        if c is not None and dp.flags.c_contiguous and attn.flags.c_contiguous and dp.size:
            S = dp.shape[-1]
            d2, p2 = dp.reshape(-1, S), attn.reshape(-1, S)
            if not _pooled("softmax_grad_rows", d2, p2, d2.shape[0], S, float(scale),
                           items=d2.shape[0], grain=S):
                _rows(lambda lo, hi: c.softmax_grad_rows(d2[lo:hi], p2[lo:hi], scale), d2)
            dq = np.matmul(dp, k, out=outs[0]) if need[0] else None
            dk = np.matmul(_swap(dp), q, out=outs[1]) if need[1] else None
            return tuple(None if a is None else (a if a.dtype == dt else a.astype(dt))
                         for a in (dq, dk, dv, None))
        prod = np.multiply(dp, attn)
        dp -= prod.sum(-1, keepdims=True)
        np.multiply(dp, attn, out=dp)             # dS (of the scaled, masked scores)
        if need[3] and mask_shape is not None:
            dmask = _sum_to(dp, mask_shape)
        dp *= dt.type(scale)
        if need[0]:
            dq = np.matmul(dp, k, out=outs[0])
        if need[1]:
            dk = np.matmul(_swap(dp), q, out=outs[1])
    return tuple(None if a is None else (a if a.dtype == dt else a.astype(dt))
                 for a in (dq, dk, dv, dmask))
