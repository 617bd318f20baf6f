"""RAdam: Adam whose adaptive term is switched on once its variance is tractable."""
import math

import ember
from .optimizer import Optimizer, _check_betas, _check_lr, _closure_loss, _num, _real, \
    _require, _scalar

__all__ = ["RAdam"]


class RAdam(Optimizer):
    """Rectified Adam.

    After Adam's weight decay and moment updates, with ``rho_inf = 2 / (1 - beta2) - 1`` and
    ``rho_t = rho_inf - 2 t beta2^t / (1 - beta2^t)``: if ``rho_t > 5`` the step is
    ``lr * m_hat * r_t * sqrt(1 - beta2^t) / (sqrt(v) + eps)`` with the rectification
    ``r_t = sqrt((rho_t - 4)(rho_t - 2) rho_inf / ((rho_inf - 4)(rho_inf - 2) rho_t))``,
    otherwise plain momentum ``lr * m_hat`` (``m_hat = m / (1 - beta1^t)``).
    State: ``step``, ``exp_avg``, ``exp_avg_sq``.
    """
    _sparse_refusal = "RAdam does not support sparse gradients"

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 decoupled_weight_decay=False, *, foreach=None, maximize=False,
                 capturable=False, differentiable=False):
        _check_lr(lr)
        _require(eps >= 0.0, "epsilon value", eps)
        _check_betas(betas)
        _require(weight_decay >= 0.0, "weight_decay value", weight_decay)
        super().__init__(params, dict(
            lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, maximize=maximize,
            foreach=foreach, capturable=capturable,
            decoupled_weight_decay=decoupled_weight_decay, differentiable=differentiable))

    def step(self, closure=None):
        loss = _closure_loss(closure)
        for group in self.param_groups:
            lr, wd = _num(group["lr"]), group["weight_decay"]
            beta1, beta2 = map(_num, group["betas"])  # tensor betas are accepted too
            rho_inf = 2 / (1 - beta2) - 1
            for p, g, st in self._grads(group):
                if not st:
                    st["step"] = _scalar()
                    st["exp_avg"] = ember.zeros_like(p)
                    st["exp_avg_sq"] = ember.zeros_like(p)
                t = _num(st["step"].add_(1))
                if wd != 0:
                    if group["decoupled_weight_decay"]:
                        p.mul_(1 - lr * wd)
                    else:
                        g = g.add(p, alpha=wd)
                p, g, m, v = map(_real, (p, g, st["exp_avg"], st["exp_avg_sq"]))
                m.lerp_(g, 1 - beta1)
                v.mul_(beta2).addcmul_(g, g, value=1 - beta2)
                bc2 = 1 - beta2 ** t
                m_hat = (m.clone() if group["differentiable"] else m) / (1 - beta1 ** t)
                rho_t = rho_inf - 2 * t * beta2 ** t / bc2
                if rho_t > 5.0:
                    rect = math.sqrt(((rho_t - 4) * (rho_t - 2) * rho_inf)
                                     / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
                    adaptive = v.sqrt().add(group["eps"]).reciprocal().mul(bc2 ** 0.5)
                    p.add_(m_hat * adaptive, alpha=-lr * rect)
                else:
                    p.add_(m_hat, alpha=-lr)
        return loss
