"""Adadelta: step sizes from the ratio of running RMS of updates to running RMS of gradients."""
import ember
from .optimizer import Optimizer, _check_lr, _closure_loss, _num, _real, _require, _scalar

__all__ = ["Adadelta"]


class Adadelta(Optimizer):
    """Adadelta.

    With ``g`` plus ``weight_decay * p``: ``v = rho * v + (1 - rho) * g^2``;
    ``d = sqrt(u + eps) / sqrt(v + eps) * g``; ``u = rho * u + (1 - rho) * d^2``;
    ``p -= lr * d``.  State: ``step``, ``square_avg`` (v) and ``acc_delta`` (u).
    """
    _sparse_refusal = "Adadelta does not support sparse gradients"

    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None, *,
                 capturable=False, maximize=False, differentiable=False):
        _check_lr(lr)
        _require(0.0 <= rho <= 1.0, "rho value", rho)
        _require(eps >= 0.0, "epsilon value", eps)
        _require(weight_decay >= 0.0, "weight_decay value", weight_decay)
        super().__init__(params, dict(
            lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize,
            capturable=capturable, foreach=foreach, differentiable=differentiable))

    def step(self, closure=None):
        loss = _closure_loss(closure)
        for group in self.param_groups:
            lr, rho, eps, wd = _num(group["lr"]), group["rho"], group["eps"], group["weight_decay"]
            for p, g, st in self._grads(group):
                if not st:
                    st["step"] = _scalar()
                    st["square_avg"] = ember.zeros_like(p)
                    st["acc_delta"] = ember.zeros_like(p)
                st["step"].add_(1)
                if wd != 0:
                    g = g.add(p, alpha=wd)
                p, g, v, u = map(_real, (p, g, st["square_avg"], st["acc_delta"]))
                v.mul_(rho).addcmul_(g, g, value=1 - rho)
                # out of place, so a differentiable step can backpropagate through it
                delta = u.add(eps).sqrt().div(v.add(eps).sqrt()).mul(g)
                u.mul_(rho).addcmul_(delta, delta, value=1 - rho)
                p.add_(delta, alpha=-lr)
        return loss
