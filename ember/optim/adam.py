"""Adam: moment estimates with bias correction (AdamW is the decoupled-decay variant)."""
import functools

import numpy as np

import ember
from ember._state import state
from ember._tensor import Tensor
from ember.autograd.graph import bump_version
from .optimizer import (Optimizer, _check_betas, _check_lr, _closure_loss, _no_fused, _num,
                        _real, _require, _scalar, _to_scalar)

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
        _no_fused(fused, differentiable, foreach)

    def step(self, closure=None):
        loss = _closure_loss(closure)
        for group in self.param_groups:
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
            settings = {k: group[k] for k in ("lr", "eps", "weight_decay", "amsgrad",
                                              "differentiable", "decoupled_weight_decay")}
            adam(params, grads, ms, vs, vmaxes, steps, beta1=beta1, beta2=beta2,
                 maximize=False, **settings)
        return loss


def adam(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, foreach=None,
         capturable=False, differentiable=False, fused=None, grad_scale=None, found_inf=None,
         has_complex=False, decoupled_weight_decay=False, *, amsgrad, beta1, beta2, lr,
         weight_decay, eps, maximize):
    """One Adam update of ``params`` in place (the moment tensors and step counters too)."""
    lr, beta1, beta2 = _num(lr), _num(beta1), _num(beta2)
    for i, (p, g) in enumerate(zip(params, grads)):
        if not differentiable and _adam_arrays(
                p, g, exp_avgs[i], exp_avg_sqs[i], max_exp_avg_sqs[i] if amsgrad else None,
                state_steps[i], lr, beta1, beta2, weight_decay, eps, maximize,
                decoupled_weight_decay):
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


def _arrays(*tensors):
    """The NumPy arrays of plain real float tensors (or Parameters) of one dtype and shape,
    else None."""
    arrays = []
    plain = _plain_types()
    for t in tensors:
        if type(t) not in plain:
            return None
        a = t._data
        if type(a) is not np.ndarray:
            return None
        arrays.append(a.reshape(1) if a.ndim == 0 else a)     # (ufuncs make 0-d scalars)
    a0 = arrays[0]
    if a0.dtype not in (np.float32, np.float64) or any(
            a.dtype != a0.dtype or a.shape != a0.shape for a in arrays[1:]):
        return None
    return arrays


def _adam_arrays(p, g, m, v, vmax, step, lr, beta1, beta2, weight_decay, eps, maximize,
                 decoupled):
    """The update of ``adam`` for one parameter on the arrays, no op records: one compiled
    pass (ember/optim/_compiled_adam.py) or in-place NumPy passes with one scratch array,
    either way the same float operations in the same order as the op-by-op path. False (nothing done) unless ``p``, ``g``, ``m``, ``v``
    (and ``vmax``) are plain dense real float tensors of one dtype and shape and ``step`` a
    0-dim plain tensor, with no dispatch mode active (profiler, tracing, vmap, inference
    mode: they see the op-by-op path) and grad mode off (the optimizer's step)."""
    if state.modes or state.grad_enabled:
        return False
    arrays = _arrays(p, g, m, v, *(() if vmax is None else (vmax,)))
    if arrays is None or type(step) is not Tensor or type(step._data) is not np.ndarray \
            or step._data.shape != ():
        return False
    pa, ga, ma, va = arrays[:4]
    step._data[...] += 1
    t = float(step._data)
    w = 1 - beta1                       # m.lerp_(g, w), the formula of ember's lerp kernel
    kernel = _compiled_update(arrays)
    if kernel is not None:
        f = pa.dtype.type
        coupled = weight_decay != 0 and not decoupled
        decay = 1 - lr * weight_decay if weight_decay != 0 and decoupled else 1
        kernel(*(a.reshape(-1) for a in arrays[:4]),
               (arrays[4] if vmax is not None else pa).reshape(-1), bool(maximize),
               f(weight_decay if coupled else 0), f(decay), f(w if abs(w) < 0.5 else 1 - w),
               f(beta2), f(1 - beta2), f((1 - beta2 ** t) ** 0.5), f(eps),
               f(-lr / (1 - beta1 ** t)), vmax is not None, abs(w) < 0.5)
    else:
        if maximize:
            ga = np.negative(ga)
        if weight_decay != 0:
            if decoupled:
                np.multiply(pa, 1 - lr * weight_decay, out=pa)
            else:
                ga = np.add(ga, np.multiply(pa, weight_decay))
        d = np.subtract(ga, ma)
        if abs(w) < 0.5:
            d *= w
            np.add(ma, d, out=ma)
        else:
            d *= 1 - w
            np.subtract(ga, d, out=ma)
        va *= beta2                         # v.mul_(beta2).addcmul_(g, g, value=1 - beta2)
        np.multiply(ga, ga, out=d)
        d *= 1 - beta2
        va += d
        if vmax is not None:
            np.maximum(arrays[4], va, out=arrays[4])
            va = arrays[4]
        np.sqrt(va, out=d)                  # denom = sqrt(v) / sqrt(1 - beta2^t) + eps
        d /= (1 - beta2 ** t) ** 0.5
        d += eps
        np.divide(ma, d, out=d)             # p.addcdiv_(m, denom, value=-lr / (1 - beta1^t))
        d *= -lr / (1 - beta1 ** t)
        pa += d
    for x in (step, p, m, v) + (() if vmax is None else (vmax,)):
        bump_version(x)
    return True


_compiled_kernel = []


def _compiled_update(arrays):
    """The numba update (ember/optim/_compiled_adam.py) when numba is present, the compiled
    kernels are on and every array is C-contiguous; else None (NumPy passes)."""
    from ember._kernels import compiled
    if not compiled.switched_on() or not all(a.flags.c_contiguous for a in arrays):
        return None
    if not _compiled_kernel:
        try:
            from ember.optim._compiled_adam import adam_update
        except ImportError:
            adam_update = None
        _compiled_kernel.append(adam_update)
    return _compiled_kernel[0]
