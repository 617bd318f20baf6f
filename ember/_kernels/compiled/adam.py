"""numba kernel for one Adam / AdamW parameter update: the one-pass form of
``ember._kernels.fused_optim.adam`` (the kernel of the ``_fused_adam_`` / ``_fused_adamw_``
records), used when numba is present, the compiled kernels are on and the arrays are
C-contiguous; else NumPy passes.

One pass over ``p``, ``g``, ``m``, ``v`` instead of ten NumPy passes; the float operations
and their order are those of the op-by-op update (no fast-math, no fused multiply-add), so
the result is the same bit for bit (tests/optim/test_adam_arrays.py). Scalars arrive already
in the arrays' dtype, as the ops cast them.
"""
from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True, error_model="numpy")
def adam_update(p, g, m, v, vmax, maximize, coupled_wd, decay, w, beta2, one_minus_beta2,
                c2, eps, neg_step, amsgrad, lerp_small):
    """In place on flat arrays of one dtype; ``vmax`` is used only when ``amsgrad``.
    ``coupled_wd`` (0: none) adds ``p * coupled_wd`` to the gradient, ``decay`` (1: none)
    scales ``p`` first (AdamW). The moment update is ember's lerp: ``m + (g - m) * w`` when
    ``lerp_small`` (|1 - beta1| < 0.5), else ``g - (g - m) * w`` with ``w`` = beta1."""
    for i in range(p.size):
        gi = g[i]
        if maximize:
            gi = -gi
        pi = p[i]
        if coupled_wd != 0:
            gi = gi + pi * coupled_wd
        pi = pi * decay
        mi = m[i]
        if lerp_small:
            mi = mi + (gi - mi) * w
        else:
            mi = gi - (gi - mi) * w
        m[i] = mi
        vi = v[i] * beta2
        vi = vi + (gi * gi) * one_minus_beta2
        v[i] = vi
        if amsgrad:
            a = vmax[i]
            if not (a >= vi) and a == a:
                a = vi
            elif vi != vi:
                a = vi
            vmax[i] = a
            vi = a
        d = np.sqrt(vi) / c2 + eps
        p[i] = pi + (mi / d) * neg_step
