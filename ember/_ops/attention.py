"""``_sdpa_fused``: scaled dot-product attention as one record (kernels in
ember/_kernels/attention.py). ember.nn.functional.scaled_dot_product_attention takes it for
float32 / float64 query, key and value with equal leading dims and a mask that broadcasts to
the scores; it returns the output and the attention probabilities (saved; the backward needs
no recomputation). Dropout arrives as ``dropout_mask``, the scaled keep mask the front draws
exactly as ``F.dropout`` would (same random stream as the composite), saved too. Its backward calls ``_sdpa_fused_backward`` (GEMMs and
one softmax-gradient pass); under create_graph (double backward, forward-mode AD) the same
formulas run in ember ops, so the gradient is differentiable again.
"""
from __future__ import annotations

import numpy as np

from ember._kernels import attention as K
from ember._ops.registry import OpDef
from ember.autograd.grad_mode import is_grad_enabled

sdpa_fused = OpDef(
    "_sdpa_fused(Tensor query, Tensor key, Tensor value, Tensor? attn_mask=None, "
    "bool is_causal=False, float scale=1.0, Tensor? dropout_mask=None) "
    "-> (Tensor output, Tensor attn)",
    K.sdpa_forward, promote=None,
    saves=("query", "key", "value", "attn_mask", "dropout_mask", "attn"),
    grad_name="ScaledDotProductAttentionBackward0", none_grads=True)


def _backward_kernel(grad_out, grad_attn, q, k, v, attn, scale, mask_size, need,
                     dropout_mask=None):
    shape = None if mask_size is None else tuple(mask_size)
    grads = K.sdpa_backward(grad_out, grad_attn, q, k, v, attn, scale, shape, need,
                            dropout_mask)
    return tuple(np.empty((0,), q.dtype) if g is None else g for g in grads)


sdpa_fused_backward = OpDef(
    "_sdpa_fused_backward(Tensor grad_out, Tensor? grad_attn, Tensor query, Tensor key, "
    "Tensor value, Tensor attn, float scale, int[]? mask_size, bool[] output_mask, "
    "Tensor? dropout_mask=None) "
    "-> (Tensor grad_query, Tensor grad_key, Tensor grad_value, Tensor grad_mask)",
    _backward_kernel, promote=None, differentiable=False)


@sdpa_fused.def_backward
def _(ctx, grads, query, key, value, attn_mask, is_causal, scale, dropout_mask):
    n = ctx.needs_input_grad
    g, g_attn = grads[0], grads[1]
    mask_grad = bool(n[3]) and attn_mask is not None and attn_mask.is_floating_point()
    need = [bool(n[0]), bool(n[1]), bool(n[2]), mask_grad]
    if g is None and g_attn is None or not any(need):
        return (None,) * 7
    if g is None:
        import ember
        g = ember.zeros(query.shape[:-1] + value.shape[-1:], dtype=query.dtype)
    if not is_grad_enabled():
        attn = ctx.result[1]
        gq, gk, gv, gm = sdpa_fused_backward(
            g, g_attn, query, key, value, attn, scale,
            list(attn_mask.shape) if mask_grad else None, need, dropout_mask)
    else:
        gq, gk, gv, gm = _differentiable_grads(g, g_attn, query, key, value, attn_mask,
                                               is_causal, scale, dropout_mask)
    return ((gq if need[0] else None), (gk if need[1] else None), (gv if need[2] else None),
            (gm if need[3] else None), None, None, None)


def _differentiable_grads(g, g_attn, q, k, v, mask, is_causal, scale, dropout_mask):
    """The backward in ember ops (create_graph): P recomputed from q, k (differentiable)."""
    import ember
    s = ember.matmul(q, k.transpose(-2, -1)) * scale
    L, S = s.shape[-2:]
    if is_causal:
        above = ember.ones(L, S, dtype=ember.bool).triu(1)
        s = s.masked_fill(above, float("-inf"))
    if mask is not None:
        s = s.masked_fill(mask.logical_not(), float("-inf")) if mask.dtype == ember.bool \
            else s + mask
    dead = (s.detach() == float("-inf")).all(-1, keepdim=True)
    p = ember.softmax(s.masked_fill(dead, 0.0), -1).masked_fill(dead, 0.0)
    dropped = p if dropout_mask is None else p * dropout_mask
    gv = ember.matmul(dropped.transpose(-2, -1), g)
    dp = ember.matmul(g, v.transpose(-2, -1))
    if dropout_mask is not None:
        dp = dp * dropout_mask
    if g_attn is not None:
        dp = dp + g_attn
    ds = p * (dp - (dp * p).sum(-1, keepdim=True))
    gm = None
    if mask is not None and mask.is_floating_point():
        gm = ds.sum_to_size(mask.shape)
    ds = ds * scale
    return ember.matmul(ds, k), ember.matmul(ds.transpose(-2, -1), q), gv, gm
