"""Fused optimizer records: a whole Adam / AdamW step over lists of parameters in one call
(torch's ``_fused_adam_`` / ``_fused_adamw_``), the path ember.optim.Adam and AdamW take.

They return nothing and write into several arguments at once (``Tensor(a!)[]`` in the
schema): the parameters and the moment estimates. The dispatcher runs such a record through
``_call_mutating`` (ember/_dispatch.py): it checks the written tensors, calls the kernel
(ember/_kernels/fused_optim.py) and bumps each written tensor's version. Nothing is
recorded by autograd. As in torch, the caller increments ``state_steps`` beforehand.
"""
from __future__ import annotations

import numpy as np

from ember._kernels import fused_optim as K
from ember._ops.core import _fma_alpha
from ember._ops.registry import defop

_ARGS = ("(Tensor(a!)[] self, Tensor[] grads, Tensor(b!)[] exp_avgs, Tensor(c!)[] exp_avg_sqs, "
         "Tensor(d!)[] max_exp_avg_sqs, Tensor[] state_steps, *, float lr, float beta1, "
         "float beta2, float weight_decay, float eps, bool amsgrad, bool maximize, "
         "Tensor? grad_scale=None, Tensor? found_inf=None) -> ()")



def _adam(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, lr, beta1,
          beta2, weight_decay, eps, amsgrad, maximize, grad_scale=None, found_inf=None):
    """Coupled weight decay first: torch's ``grad.add(param, alpha=weight_decay)`` (after
    ``maximize``'s negation) is one fused multiply-add, where the kernel's one pass would
    round ``weight_decay * param`` before the sum (an ulp apart in about a fifth of the
    elements); the kernel then runs without decay."""
    if weight_decay != 0:
        decayed = [_fma_alpha(np.negative(g) if maximize else g, p, weight_decay)
                   for p, g in zip(params, grads)]
        if all(d is not None for d in decayed):        # (float32 and float64)
            grads = [np.asarray(d, p.dtype) for p, d in zip(params, decayed)]  # (0-d: scalars)
            weight_decay, maximize = 0.0, False
    K.adam(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, lr, beta1,
           beta2, weight_decay, eps, amsgrad, maximize, grad_scale, found_inf)


fused_adam = defop("_fused_adam_" + _ARGS, _adam, method=False, out=False, promote=None,
                   differentiable=False)
fused_adamw = defop("_fused_adamw_" + _ARGS, K.adamw, method=False, out=False, promote=None,
                    differentiable=False)
