"""NAdam: Adam with Nesterov momentum (Dozat, 2016) and a momentum-decay schedule."""
import ember
from .optimizer import Optimizer, _check_betas, _check_lr, _closure_loss, _num, _real, \
    _require, _scalar

__all__ = ["NAdam"]


class NAdam(Optimizer):
    """NAdam.

    With ``mu_t = beta1 * (1 - 0.5 * 0.96^(t * momentum_decay))`` and ``P_t`` the running
    product of the ``mu``'s: after Adam's weight decay and moment updates,
    ``p -= lr * (1 - mu_t) / (1 - P_t) * g / d`` and
    ``p -= lr * mu_{t+1} / (1 - P_t * mu_{t+1}) * m / d`` with
    ``d = sqrt(v / (1 - beta2^t)) + eps``.
    State: ``step``, ``mu_product`` (P_t), ``exp_avg`` (m), ``exp_avg_sq`` (v).
    """
    _sparse_refusal = "NAdam does not support sparse gradients"

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 momentum_decay=4e-3, decoupled_weight_decay=False, *, foreach=None,
                 maximize=False, capturable=False, differentiable=False):
        _check_lr(lr)
        _require(eps >= 0.0, "epsilon value", eps)
        _check_betas(betas)
        _require(weight_decay >= 0.0, "weight_decay value", weight_decay)
        _require(momentum_decay >= 0.0, "momentum_decay value", momentum_decay)
        super().__init__(params, dict(
            lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
            momentum_decay=momentum_decay, decoupled_weight_decay=decoupled_weight_decay,
            maximize=maximize, foreach=foreach, capturable=capturable,
            differentiable=differentiable))

    def step(self, closure=None):
        loss = _closure_loss(closure)
        for group in self.param_groups:
            lr, wd = _num(group["lr"]), group["weight_decay"]
            beta1, beta2 = map(_num, group["betas"])  # tensor betas are accepted too
            psi = group["momentum_decay"]
            for p, g, st in self._grads(group):
                if not st:
                    st["step"] = _scalar()
                    st["mu_product"] = _scalar(1.0)
                    st["exp_avg"] = ember.zeros_like(p)
                    st["exp_avg_sq"] = ember.zeros_like(p)
                t = _num(st["step"].add_(1))
                if wd != 0:
                    if group["decoupled_weight_decay"]:
                        p.mul_(1 - lr * wd)
                    else:
                        g = g.add(p, alpha=wd)
                mu = beta1 * (1 - 0.5 * 0.96 ** (t * psi))
                mu_next = beta1 * (1 - 0.5 * 0.96 ** ((t + 1) * psi))
                prod = _num(st["mu_product"].mul_(mu))
                p, g, m, v = map(_real, (p, g, st["exp_avg"], st["exp_avg_sq"]))
                m.lerp_(g, 1 - beta1)
                v.mul_(beta2).addcmul_(g, g, value=1 - beta2)
                if group["differentiable"]:  # m and v are updated in place next step
                    m, v = m.clone(), v.clone()
                denom = v.div(1 - beta2 ** t).sqrt().add(group["eps"])
                p.addcdiv_(g, denom, value=-lr * (1 - mu) / (1 - prod))
                p.addcdiv_(m, denom, value=-lr * mu_next / (1 - prod * mu_next))
        return loss
