"""Muon: momentum SGD for 2-D weights whose step is orthogonalised by Newton–Schulz."""
import math

import ember
from ember._tensor import Tensor
from .optimizer import Optimizer, _closure_loss, _num

__all__ = ["Muon"]

_LR_ADJUSTMENTS = {
    # scale lr by the matrix shape (rows A, columns B) so every update has a comparable rms
    "original": lambda lr, rows, cols: lr * math.sqrt(max(1.0, rows / cols)),
    "match_rms_adamw": lambda lr, rows, cols: 0.2 * lr * math.sqrt(max(rows, cols)),
}


def _check(name, value):
    if value < 0:
        raise ValueError(f"{name} should be >= 0 but is: {value}")


class Muon(Optimizer):
    """Muon for 2-D parameters (weights of hidden layers; use e.g. AdamW for the rest).

    ``b = lerp(b, g, 1 - momentum)``; the direction ``lerp(g, b, momentum)`` (``nesterov``) or
    ``b`` is orthogonalised by ``ns_steps`` Newton–Schulz iterations with coefficients
    ``(a, b, c)`` in bfloat16; then ``p *= 1 - lr * weight_decay`` and ``p -= lr' * O`` where
    ``lr'`` is ``lr`` adjusted for the shape ``(A, B)``: ``sqrt(max(1, A/B))`` ("original",
    the default) or ``0.2 * sqrt(max(A, B))`` ("match_rms_adamw").
    State: ``momentum_buffer``.
    """

    def __init__(self, params, lr=1e-3, weight_decay=0.1, momentum=0.95, nesterov=True,
                 ns_coefficients=(3.4445, -4.775, 2.0315), eps=1e-7, ns_steps=5,
                 adjust_lr_fn=None):
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        _check("Learning rate", lr)
        _check("weight decay", weight_decay)
        _check("momentum", momentum)
        if adjust_lr_fn is not None and adjust_lr_fn not in _LR_ADJUSTMENTS:
            raise ValueError(f"Adjust learning rate function {adjust_lr_fn} is not supported")
        super().__init__(params, dict(
            lr=lr, weight_decay=weight_decay, momentum=momentum, nesterov=nesterov,
            ns_coefficients=ns_coefficients, eps=eps, ns_steps=ns_steps,
            adjust_lr_fn=adjust_lr_fn))
        for group in self.param_groups:
            for p in group["params"]:
                if p.dim() != 2:
                    raise ValueError("Muon only supports 2D parameters whereas we found a "
                                     f"parameter with size: {p.size()}")

    def step(self, closure=None):
        loss = _closure_loss(closure)
        for group in self.param_groups:
            lr, mu = _num(group["lr"]), group["momentum"]
            adjust = _LR_ADJUSTMENTS[group["adjust_lr_fn"] or "original"]
            for p in group["params"]:
                g = p.grad
                if g is None:
                    continue
                if p.is_complex():
                    raise RuntimeError("Muon does not support complex parameters")
                if g.is_sparse:
                    raise RuntimeError("Muon does not support sparse gradients")
                if g.dim() != 2:  # a group added later is not checked by __init__
                    raise ValueError(f"Muon: param gradient must be a 2D matrix, got shape "
                                     f"{tuple(g.shape)}")
                st = self.state[p]
                if not st:
                    st["momentum_buffer"] = ember.zeros_like(g)
                buf = st["momentum_buffer"].lerp_(g, 1 - mu)
                direction = g.lerp(buf, mu) if group["nesterov"] else buf
                ortho = newton_schulz(direction, group["ns_coefficients"], group["ns_steps"],
                                      group["eps"])
                p.mul_(1 - lr * group["weight_decay"])
                p.add_(ortho, alpha=-adjust(lr, *p.shape))
        return loss


def newton_schulz(m, coefficients, steps, eps):
    """An approximately orthogonal matrix with ``m``'s singular vectors, shape (A, B).

    ``m`` is divided by ``max(norm(m), eps)`` in bfloat16, then (on the wide orientation, so
    ``x @ x.T`` is the smaller Gram matrix) iterated ``x <- a x + (b G + c G^2) x`` with
    ``G = x x^T``, which pushes every singular value towards 1.
    """
    a, b, c = coefficients
    x = m.to(ember.bfloat16)
    x = x / x.norm().clamp(min=eps)
    tall = x.shape[0] > x.shape[1]
    if tall:
        x = x.T
    for _ in range(steps):
        gram = x @ x.T
        poly = ember.addmm(gram, gram, gram, beta=b, alpha=c)
        x = ember.addmm(x, poly, x, beta=a)
    return x.T if tall else x
