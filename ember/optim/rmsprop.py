"""RMSprop: gradients scaled by a running RMS (optionally centered), with optional momentum."""
import ember
from .optimizer import Optimizer, _check_lr, _closure_loss, _num, _real, _require, _scalar

__all__ = ["RMSprop"]


class RMSprop(Optimizer):
    """RMSprop.

    With ``g`` plus ``weight_decay * p``: ``v = alpha * v + (1 - alpha) * g^2``; the scale is
    ``sqrt(v) + eps``, or ``sqrt(v - a^2) + eps`` when centered (``a = lerp(a, g, 1 - alpha)``).
    Without momentum ``p -= lr * g / scale``; with it ``b = momentum * b + g / scale`` and
    ``p -= lr * b``.  State: ``step``, ``square_avg``, then ``momentum_buffer`` and
    ``grad_avg`` when used.
    """
    _sparse_refusal = "RMSprop does not support sparse gradients"

    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0,
                 centered=False, capturable=False, foreach=None, maximize=False,
                 differentiable=False):
        _check_lr(lr)
        _require(eps >= 0.0, "epsilon value", eps)
        _require(momentum >= 0.0, "momentum value", momentum)
        _require(weight_decay >= 0.0, "weight_decay value", weight_decay)
        _require(alpha >= 0.0, "alpha value", alpha)
        super().__init__(params, dict(
            lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered,
            weight_decay=weight_decay, capturable=capturable, foreach=foreach,
            maximize=maximize, differentiable=differentiable))

    def step(self, closure=None):
        loss = _closure_loss(closure)
        for group in self.param_groups:
            lr, alpha, wd = _num(group["lr"]), group["alpha"], group["weight_decay"]
            momentum, centered = group["momentum"], group["centered"]
            for p, g, st in self._grads(group):
                if not st:
                    st["step"] = _scalar()
                    st["square_avg"] = ember.zeros_like(p)
                    if momentum > 0:
                        st["momentum_buffer"] = ember.zeros_like(p)
                    if centered:
                        st["grad_avg"] = ember.zeros_like(p)
                st["step"].add_(1)
                if wd != 0:
                    g = g.add(p, alpha=wd)
                p, g, v = map(_real, (p, g, st["square_avg"]))
                v.mul_(alpha).addcmul_(g, g, value=1 - alpha)
                if centered:
                    a = _real(st["grad_avg"]).lerp_(g, 1 - alpha)
                    scale = v.addcmul(a, a, value=-1).sqrt_()
                else:
                    scale = v.sqrt()
                scale.add_(group["eps"])
                if momentum > 0:
                    buf = _real(st["momentum_buffer"])
                    buf.mul_(momentum).addcdiv_(g, scale)
                    p.add_(buf, alpha=-lr)
                else:
                    p.addcdiv_(g, scale, value=-lr)
        return loss
