"""ASGD: SGD with a decaying step size and a running (Polyak) average of the iterates."""
import ember
from .optimizer import Optimizer, _check_lr, _closure_loss, _num, _real, _require, _scalar

__all__ = ["ASGD"]


class ASGD(Optimizer):
    """Averaged SGD.

    With ``g`` plus ``weight_decay * p`` and the current ``eta``:
    ``p = p * (1 - lambd * eta) - eta * g``; the average moves ``ax += mu * (p - ax)``.
    Afterwards ``eta = lr / (1 + lambd * lr * t)^alpha`` and ``mu = 1 / max(1, t - t0)``.
    State: ``step``, ``eta``, ``mu`` (0-dim tensors) and ``ax``.
    """
    _sparse_refusal = "ASGD does not support sparse gradients"

    def __init__(self, params, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0,
                 foreach=None, maximize=False, differentiable=False, capturable=False):
        _check_lr(lr)
        _require(weight_decay >= 0.0, "weight_decay value", weight_decay)
        super().__init__(params, dict(
            lr=lr, lambd=lambd, alpha=alpha, t0=t0, weight_decay=weight_decay, foreach=foreach,
            maximize=maximize, differentiable=differentiable, capturable=capturable))

    def step(self, closure=None):
        loss = _closure_loss(closure)
        for group in self.param_groups:
            lr, lambd, wd = _num(group["lr"]), group["lambd"], group["weight_decay"]
            for p, g, st in self._grads(group):
                if not st:
                    st["step"] = _scalar()
                    st["eta"] = _scalar(lr)
                    st["mu"] = _scalar(1.0)
                    st["ax"] = ember.zeros_like(p)
                t = _num(st["step"].add_(1))
                if wd != 0:
                    g = g.add(p, alpha=wd)
                eta, mu = _num(st["eta"]), _num(st["mu"])
                p, g, ax = map(_real, (p, g, st["ax"]))
                p.mul_(1 - lambd * eta).add_(g, alpha=-eta)
                if mu != 1:
                    ax.add_(p.sub(ax).mul_(mu))
                else:
                    ax.copy_(p)
                # the new values pass through the scalar dtype even if the state was loaded
                # as float64 (torch does the same)
                st["eta"].copy_(_scalar(lr / (1 + lambd * lr * t) ** group["alpha"]))
                st["mu"].copy_(_scalar(1 / max(1, t - group["t0"])))
        return loss
