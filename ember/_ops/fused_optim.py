"""Fused optimizer records: a whole Adam / AdamW step over lists of parameters in one call
(torch's ``_fused_adam_`` / ``_fused_adamw_``), the path ember.optim.Adam and AdamW take.

They return nothing and write into several arguments at once (``Tensor(a!)[]`` in the
schema): the parameters and the moment estimates. The dispatcher runs such a record through
``_call_mutating`` (ember/_dispatch.py): it checks the written tensors, calls the kernel
(ember/_kernels/fused_optim.py) and bumps each written tensor's version. Nothing is
recorded by autograd. As in torch, the caller increments ``state_steps`` beforehand.
"""
from __future__ import annotations

from ember._kernels import fused_optim as K
from ember._ops.registry import defop

_ARGS = ("(Tensor(a!)[] self, Tensor[] grads, Tensor(b!)[] exp_avgs, Tensor(c!)[] exp_avg_sqs, "
         "Tensor(d!)[] max_exp_avg_sqs, Tensor[] state_steps, *, float lr, float beta1, "
         "float beta2, float weight_decay, float eps, bool amsgrad, bool maximize, "
         "Tensor? grad_scale=None, Tensor? found_inf=None) -> ()")

fused_adam = defop("_fused_adam_" + _ARGS, K.adam, method=False, out=False, promote=None,
                   differentiable=False)
fused_adamw = defop("_fused_adamw_" + _ARGS, K.adamw, method=False, out=False, promote=None,
                    differentiable=False)
