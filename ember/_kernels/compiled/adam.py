"""numba kernel for one Adam / AdamW parameter update: the one-pass form of
``ember._kernels.fused_optim.adam`` (the kernel of the ``_fused_adam_`` / ``_fused_adamw_``
records), used when numba is present, the compiled kernels are on and the arrays are
C-contiguous; else NumPy passes.

One pass over ``p``, ``g``, ``m``, ``v`` instead of ten NumPy passes; the float operations
and their order are those of the op-by-op update (no fast-math; the fused multiply-adds of
``lerp`` and ``addcmul`` are the CPU's, which ``ember._kernels.elementwise.fma`` rounds as),
so the result is the same bit for bit (tests/optim/test_adam_arrays.py). Scalars arrive
already in the arrays' dtype, as the ops cast them.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ember._kernels.compiled.intrinsics import fma


@njit(cache=True, nogil=True, error_model="numpy")
def adam_update(p, g, m, v, vmax, maximize, coupled_wd, decay, w, beta2, one_minus_beta2,
                c2, eps, neg_step, amsgrad, lerp_small):
    """In place on flat arrays of one dtype; ``vmax`` is used only when ``amsgrad``.
    ``coupled_wd`` (0: none) adds ``p * coupled_wd`` to the gradient, ``decay`` (1: none)
    scales ``p`` first (AdamW). The moment update is ember's lerp: ``fma(w, g - m, m)`` when
    ``lerp_small`` (|1 - beta1| < 0.5), else ``fma(w, g - m, g)`` with ``w`` = (1 - beta1) - 1
    (in the dtype)."""
    for i in range(p.size):
        gi = g[i]
        if maximize:
            gi = -gi
        pi = p[i]
        if coupled_wd != 0:
            gi = gi + pi * coupled_wd
        pi = pi * decay
        mi = m[i]                       # m.lerp_(g, 1 - beta1), as ember's lerp kernel
        m[i] = fma(w, gi - mi, mi if lerp_small else gi)
        mi = m[i]
        vi = v[i] * beta2               # v.mul_(beta2).addcmul_(g, g, value=1 - beta2)
        v[i] = fma(gi * one_minus_beta2, gi, vi)
        vi = v[i]
        if amsgrad:
            a = vmax[i]
            if not (a >= vi) and a == a:
                a = vi
            elif vi != vi:
                a = vi
            vmax[i] = a
            vi = a
        d = np.sqrt(vi) / c2 + eps
        p[i] = pi + (neg_step * mi) / d     # p.addcdiv_(m, d, value=neg_step), as torch
