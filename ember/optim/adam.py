"""Adam: moment estimates with bias correction (AdamW is the decoupled-decay variant)."""
import functools

import numpy as np

import ember
from ember._state import state
from ember._tensor import Tensor
from .optimizer import (Optimizer, _check_betas, _check_fused_group, _check_lr, _closure_loss,
                        _num, _real, _require, _scalar, _to_scalar)

__all__ = ["Adam", "adam"]


class Adam(Optimizer):
    """Adam.

    Per step ``t`` with gradient ``g``: weight decay either adds ``weight_decay * p`` to ``g``
    or, when decoupled (AdamW), scales ``p`` by ``1 - lr * weight_decay``; then
    ``m = lerp(m, g, 1 - beta1)``, ``v = beta2 * v + (1 - beta2) * g * g`` (``v`` replaced by
    its running maximum under ``amsgrad``) and
    ``p -= lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)``.
    State: ``step``, ``exp_avg``, ``exp_avg_sq`` and, with amsgrad, ``max_exp_avg_sq``.
    """
    _sparse_refusal = "Adam does not support sparse gradients, please consider SparseAdam instead"

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 amsgrad=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False, fused=None, decoupled_weight_decay=False):
        if isinstance(lr, Tensor) and foreach and not capturable:
            raise ValueError("lr as a Tensor is not supported for capturable=False and "
                             "foreach=True")
        _check_lr(lr)
        _require(eps >= 0.0, "epsilon value", eps)
        _check_betas(betas)
        _require(weight_decay >= 0.0, "weight_decay value", weight_decay)
        if not (all(isinstance(b, float) for b in betas)
                or all(isinstance(b, Tensor) for b in betas)):
            raise ValueError("betas must be either both floats or both Tensors")
        for i, b in enumerate(betas):
            if isinstance(b, Tensor):
                if foreach and not capturable:
                    raise ValueError(f"betas[{i}] as a Tensor is not supported for "
                                     "capturable=False and foreach=True")
                if b.numel() != 1:
                    raise ValueError(f"Tensor betas[{i}] must be 1-element")
        super().__init__(params, dict(
            lr=lr, betas=tuple(_to_scalar(b) for b in betas), eps=eps,
            weight_decay=weight_decay, amsgrad=amsgrad, maximize=maximize, foreach=foreach,
            capturable=capturable, differentiable=differentiable, fused=fused,
            decoupled_weight_decay=decoupled_weight_decay))
        if fused:       # torch's checks (the fused record is the default path here)
            if differentiable:
                raise RuntimeError("`fused` does not support `differentiable`")
            if foreach:
                raise RuntimeError("`fused` and `foreach` cannot be `True` together.")

    def step(self, closure=None):
        loss = _closure_loss(closure)
        for group in self.param_groups:
            _check_fused_group(group)
            params, grads, ms, vs, vmaxes, steps = [], [], [], [], [], []
            for p, g, st in self._grads(group):
                if not st:
                    st["step"] = _scalar()
                    st["exp_avg"] = ember.zeros_like(p)
                    st["exp_avg_sq"] = ember.zeros_like(p)
                    if group["amsgrad"]:
                        st["max_exp_avg_sq"] = ember.zeros_like(p)
                params.append(p)
                grads.append(g)
                ms.append(st["exp_avg"])
                vs.append(st["exp_avg_sq"])
                vmaxes.append(st.get("max_exp_avg_sq"))
                steps.append(st["step"])
            beta1, beta2 = group["betas"]
            settings = {k: group.get(k) for k in ("lr", "eps", "weight_decay", "amsgrad",
                                                  "differentiable", "decoupled_weight_decay",
                                                  "foreach", "fused")}
            adam(params, grads, ms, vs, vmaxes, steps, beta1=beta1, beta2=beta2,
                 maximize=False, **settings)
        return loss


def adam(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, foreach=None,
         capturable=False, differentiable=False, fused=None, grad_scale=None, found_inf=None,
         has_complex=False, decoupled_weight_decay=False, *, amsgrad, beta1, beta2, lr,
         weight_decay, eps, maximize):
    """One Adam update of ``params`` in place (the moment tensors and step counters too).

    With grad mode off (an optimizer's step) and ``differentiable`` off, the parameters whose
    tensors are plain dense float32/float64 arrays of one dtype and shape take one
    ``_fused_adam_`` / ``_fused_adamw_`` call (ember/_ops/fused_optim.py: the same float
    operations, bit for bit); ``foreach=False`` (without ``fused``) asks for the op-by-op
    update, which the others take too."""
    lr, beta1, beta2 = _num(lr), _num(beta1), _num(beta2)
    fused_ids = () if differentiable or state.grad_enabled or (foreach is False and not fused) \
        else [i for i in range(len(params)) if _fusable(
            (params[i], grads[i], exp_avgs[i], exp_avg_sqs[i]) +
            ((max_exp_avg_sqs[i],) if amsgrad else ()), state_steps[i])]
    if fused_ids:
        def pick(seq):
            return [seq[i] for i in fused_ids]
        steps = pick(state_steps)
        for st in steps:
            st.add_(1)
        record = ember._fused_adamw_ if decoupled_weight_decay else ember._fused_adam_
        record(pick(params), pick(grads), pick(exp_avgs), pick(exp_avg_sqs),
               pick(max_exp_avg_sqs) if amsgrad else [], steps, lr=float(lr),
               beta1=float(beta1), beta2=float(beta2), weight_decay=float(weight_decay),
               eps=float(eps), amsgrad=bool(amsgrad), maximize=bool(maximize))
        if len(fused_ids) == len(params):
            return
    done = set(fused_ids)
    for i, (p, g) in enumerate(zip(params, grads)):
        if i in done:
            continue
        state_steps[i].add_(1)
        t = _num(state_steps[i])
        if maximize:
            g = -g
        if weight_decay != 0:
            if decoupled_weight_decay:
                p.mul_(1 - lr * weight_decay)
            else:
                g = g.add(p, alpha=weight_decay)
        p, g, m, v = map(_real, (p, g, exp_avgs[i], exp_avg_sqs[i]))
        m.lerp_(g, 1 - beta1)
        v.mul_(beta2).addcmul_(g, g, value=1 - beta2)
        if amsgrad:
            vmax = _real(max_exp_avg_sqs[i])
            if differentiable:  # keep the tensors autograd saved out of later updates
                vmax.copy_(ember.maximum(vmax.clone(), v.clone()))
            else:
                vmax.copy_(ember.maximum(vmax, v))
            v = vmax
        c2 = (1 - beta2 ** t) ** 0.5
        # (in place unless autograd records the update: sqrt saves its result)
        denom = (v.sqrt() / c2 if differentiable else v.sqrt().div_(c2)).add_(eps)
        p.addcdiv_(m.clone() if differentiable else m, denom, value=-lr / (1 - beta1 ** t))


@functools.lru_cache(maxsize=None)
def _plain_types():
    from ember.nn.parameter import Parameter     # (its __torch_function__ is disabled)
    return Tensor, Parameter


def _fusable(tensors, step):
    """May this parameter's update be part of a fused record's call: ``tensors`` (param,
    grad, moments) plain tensors (or Parameters) over dense float32/float64 NumPy arrays of
    one dtype and shape, and ``step`` a plain 0-dim tensor?"""
    plain = _plain_types()
    a0 = getattr(tensors[0], "_data", None)
    if type(step) is not Tensor or type(step._data) is not np.ndarray or step._data.shape != () \
            or getattr(a0, "dtype", None) not in _FUSED_DTYPES:
        return False
    for t in tensors:
        a = getattr(t, "_data", None)
        if type(t) not in plain or type(a) is not np.ndarray or a.dtype != a0.dtype or \
                a.shape != a0.shape:
            return False
    return True


_FUSED_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))
