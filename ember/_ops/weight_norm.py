"""``_weight_norm_interface``: torch's fused weight norm over dim 0 as one record (Note
[weight norm] in ember/_ops/api_gaps.py): ``w = v * (g / norm)`` with each row's norm
added in the order of torch's kernel, found by experiment (bit for bit on every row of 1 to
129 elements tried): float32 rows of 8 or more in eight lanes of rounded squares over the
whole blocks of 8, the last partial block's squares added to lanes 0.., the lanes summed as
a tree (lane i + lane i+4, then i + i+2, then 0 + 1); shorter float32 rows one square after
another; float64 rows in four lanes the same way, the lanes summed in order. The backward
is the usual one, in ember ops (so it is differentiable again)."""
from __future__ import annotations

import numpy as np

from ember._ops.registry import OpDef


def _row_norms(x):
    """Norms of the rows of the C-contiguous 2-d float32/float64 array ``x``."""
    return np.sqrt(_row_dots(x, x))


def _row_dots(a, b):
    """Each row's sum of ``a * b`` in torch's weight-norm order (the module docstring): the
    squared norms (a = b), and the backward's sum of ``grad_w * v`` (its ``g`` gradient
    ``sum / norm`` bit for bit)."""
    R, n = a.shape
    if a.dtype == np.float32 and n < 8:
        s = np.zeros(R, np.float32)
        for i in range(n):
            s += a[:, i] * b[:, i]
        return s
    K = 8 if a.dtype == np.float32 else 4
    m = n // K * K
    lanes = np.add.reduce((a[:, :m] * b[:, :m]).reshape(R, m // K, K), axis=1) if m else \
        np.zeros((R, K), a.dtype)
    if m < n:
        lanes[:, :n - m] += a[:, m:] * b[:, m:]
    if K == 8:
        lanes = lanes[:, :4] + lanes[:, 4:]
        lanes = lanes[:, :2] + lanes[:, 2:]
        return lanes[:, 0] + lanes[:, 1]
    s = lanes[:, 0] + lanes[:, 1]
    s += lanes[:, 2]
    s += lanes[:, 3]
    return s


def _kernel(v, g, dim):
    R = v.shape[0]
    x = np.ascontiguousarray(v).reshape(R, -1)
    norms = _row_norms(x).reshape((R,) + (1,) * (v.ndim - 1))
    with np.errstate(divide="ignore", invalid="ignore"):
        w = v * (g.reshape(norms.shape) / norms)
    return w.astype(v.dtype, copy=False), norms.astype(v.dtype, copy=False)


weight_norm_interface = OpDef(
    "_weight_norm_interface(Tensor v, Tensor g, int dim=0) -> (Tensor output, Tensor norms)",
    _kernel, promote=None, saves=("v", "g", "norms"), grad_name="WeightNormInterfaceBackward0",
    none_grads=True)


@weight_norm_interface.def_backward
def _(ctx, grads, v, g, dim):
    gw = grads[0]
    if gw is None:
        return None, None, None
    from ember.autograd.grad_mode import is_grad_enabled
    others = list(range(1, v.dim()))
    if is_grad_enabled() or ctx.result is None:     # create_graph: norms that depend on v
        norms = (v * v).sum(others, keepdim=True).sqrt() if others else v.abs()
        s = (gw * v).sum(others, keepdim=True) if others else gw * v
    else:
        import ember
        norms = ctx.result[1]
        R = v.shape[0]
        a = np.ascontiguousarray(gw.detach().numpy()).reshape(R, -1)
        b = np.ascontiguousarray(v.detach().numpy()).reshape(R, -1)
        s = ember.from_numpy(_row_dots(a.astype(b.dtype, copy=False), b).reshape(norms.shape))
    gg = (s / norms).reshape(g.shape)
    gv = (g.reshape(norms.shape) / norms) * (gw - v * (s / (norms * norms)))
    n = ctx.needs_input_grad
    return (gv if n[0] else None), (gg if n[1] else None), None
