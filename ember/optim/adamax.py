"""Adamax: Adam with the second moment replaced by an exponentially weighted infinity norm."""
import ember
from .optimizer import Optimizer, _check_betas, _check_lr, _closure_loss, _num, _real, \
    _require, _scalar

__all__ = ["Adamax"]


class Adamax(Optimizer):
    """Adamax.

    With ``g`` plus ``weight_decay * p``: ``m = lerp(m, g, 1 - beta1)``;
    ``u = max(beta2 * u, |g| + eps)``; ``p -= lr / (1 - beta1^t) * m / u``.
    State: ``step``, ``exp_avg`` (m) and ``exp_inf`` (u).
    """
    _sparse_refusal = "Adamax does not support sparse gradients"

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 foreach=None, *, maximize=False, differentiable=False, capturable=False):
        _check_lr(lr)
        _require(eps >= 0.0, "epsilon value", eps)
        _check_betas(betas)
        _require(weight_decay >= 0.0, "weight_decay value", weight_decay)
        super().__init__(params, dict(
            lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, foreach=foreach,
            maximize=maximize, differentiable=differentiable, capturable=capturable))

    def step(self, closure=None):
        loss = _closure_loss(closure)
        for group in self.param_groups:
            lr, wd = _num(group["lr"]), group["weight_decay"]
            beta1, beta2 = map(_num, group["betas"])  # tensor betas are accepted too
            for p, g, st in self._grads(group):
                if not st:
                    st["step"] = _scalar()
                    st["exp_avg"] = ember.zeros_like(p)
                    st["exp_inf"] = ember.zeros_like(p)
                t = _num(st["step"].add_(1))
                if wd != 0:
                    g = g.add(p, alpha=wd)
                p, g, m, u = map(_real, (p, g, st["exp_avg"], st["exp_inf"]))
                m.lerp_(g, 1 - beta1)
                u.copy_(ember.maximum(u.mul_(beta2), g.abs().add_(group["eps"])))
                p.addcdiv_(m, u, value=-lr / (1 - beta1 ** t))
        return loss
