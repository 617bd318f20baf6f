"""Kernels of the fused optimizer records (ember/_ops/fused_optim.py): whole Adam / AdamW
steps over lists of parameters, written into the arrays in place.

Each update performs the float operations of ember's op-by-op update (ember/optim/adam.py),
in the same order and in the parameter's dtype, so both give the same bits: one numba pass
per parameter (ember/_kernels/compiled/adam.py) when the compiled kernels are on and its
arrays are C-contiguous, else in-place NumPy passes sharing one scratch array.
"""
from __future__ import annotations

import numpy as np

from ember._kernels import compiled
from ember._kernels.elementwise import fma


def adam(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, lr, beta1,
         beta2, weight_decay, eps, amsgrad, maximize, grad_scale=None, found_inf=None,
         decoupled=False):
    """One Adam step (AdamW's when ``decoupled``) of every parameter, in place.

    Lists of arrays, one entry per parameter: ``params``, ``grads``, ``exp_avgs``,
    ``exp_avg_sqs`` (and ``max_exp_avg_sqs`` with ``amsgrad``, else empty) share a dtype
    (float32 or float64) and a shape per parameter; ``state_steps`` are 0-d arrays already
    counting this step (the caller increments them, as torch's optimizer does). Coupled
    ``weight_decay`` here rounds ``weight_decay * param`` before the sum; the record
    (ember/_ops/fused_optim.py) adds it beforehand, rounded once as torch, and passes 0."""
    if grad_scale is not None or found_inf is not None:
        raise NotImplementedError("_fused_adam_: grad_scale and found_inf are not supported")
    kernel = compiled.module("adam")
    for i, p in enumerate(params):
        arrays = [p, grads[i], exp_avgs[i], exp_avg_sqs[i]]
        if amsgrad:
            arrays.append(max_exp_avg_sqs[i])
        arrays = [a.reshape(1) if a.ndim == 0 else a for a in arrays]  # (ufuncs make 0-d scalars)
        t = float(state_steps[i])
        if kernel is not None and all(a.flags.c_contiguous for a in arrays):
            _one_pass(kernel.adam_update, arrays, t, lr, beta1, beta2, weight_decay, eps,
                      amsgrad, maximize, decoupled)
        else:
            _numpy_passes(arrays, t, lr, beta1, beta2, weight_decay, eps, amsgrad, maximize,
                          decoupled)


def _one_pass(update, arrays, t, lr, beta1, beta2, weight_decay, eps, amsgrad, maximize,
              decoupled):
    """The numba update of one parameter; scalars cast to its dtype as the ops cast them."""
    f = arrays[0].dtype.type
    w = 1 - beta1                       # m.lerp_(g, w), the formula of ember's lerp kernel
    small = abs(w) < 0.5
    coupled = weight_decay != 0 and not decoupled
    decay = 1 - lr * weight_decay if weight_decay != 0 and decoupled else 1
    flat = [a.reshape(-1) for a in arrays]
    update(*flat[:4], flat[4] if amsgrad else flat[0], bool(maximize),
           f(weight_decay if coupled else 0), f(decay), f(w) if small else f(w) - f(1), f(beta2),
           f(1 - beta2), f((1 - beta2 ** t) ** 0.5), f(eps), f(-lr / (1 - beta1 ** t)),
           bool(amsgrad), small)


def _numpy_passes(arrays, t, lr, beta1, beta2, weight_decay, eps, amsgrad, maximize,
                  decoupled):
    """The update of one parameter as in-place NumPy passes over one scratch array ``d``."""
    pa, ga, ma, va = arrays[:4]
    if maximize:
        ga = np.negative(ga)
    if weight_decay != 0:
        if decoupled:
            np.multiply(pa, 1 - lr * weight_decay, out=pa)
        else:
            ga = np.add(ga, np.multiply(pa, weight_decay))
    w = pa.dtype.type(1 - beta1)        # m.lerp_(g, w): fma(w, g - m, m), or for a weight
    d = np.subtract(ga, ma)             # of 0.5 or more fma(w - 1, g - m, g)
    if abs(w) < 0.5:
        ma[...] = fma(w, d, ma)
    else:
        ma[...] = fma(w - pa.dtype.type(1), d, ga)
    va *= beta2                         # v.mul_(beta2).addcmul_(g, g, value=1 - beta2):
    np.multiply(ga, 1 - beta2, out=d)   # fma(g * (1 - beta2), g, v), as torch's addcmul
    va[...] = fma(d, ga, va)
    if amsgrad:
        np.maximum(arrays[4], va, out=arrays[4])
        va = arrays[4]
    np.sqrt(va, out=d)                  # denom = sqrt(v) / sqrt(1 - beta2^t) + eps
    d /= (1 - beta2 ** t) ** 0.5
    d += eps
    # p.addcdiv_(m, denom, value=-lr / (1 - beta1^t)): (value * m) / denom, as torch
    np.divide(np.multiply(ma, pa.dtype.type(-lr / (1 - beta1 ** t))), d, out=d)
    pa += d


def adamw(*args, **kwargs):
    """``adam`` with decoupled weight decay (``_fused_adamw_``)."""
    return adam(*args, decoupled=True, **kwargs)
