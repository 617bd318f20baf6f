"""Rprop: sign-based steps whose per-coordinate sizes grow or shrink with sign agreement."""
import ember
from .optimizer import Optimizer, _check_lr, _closure_loss, _num, _real, _scalar

__all__ = ["Rprop"]


class Rprop(Optimizer):
    """Resilient backpropagation.

    Each coordinate keeps a step size (initially ``lr``).  When the gradient keeps its sign
    from the previous step the size is multiplied by ``etas[1]``, when it flips by
    ``etas[0]`` (and that coordinate's gradient is treated as zero for this step), and the
    size is clipped to ``step_sizes``.  Then ``p -= sign(g) * step_size``.
    State: ``step``, ``prev`` (last effective gradient), ``step_size``.
    """
    _sparse_refusal = "Rprop does not support sparse gradients"

    def __init__(self, params, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), *,
                 capturable=False, foreach=None, maximize=False, differentiable=False):
        _check_lr(lr)
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        super().__init__(params, dict(
            lr=lr, etas=etas, step_sizes=step_sizes, foreach=foreach, maximize=maximize,
            differentiable=differentiable, capturable=capturable))

    def step(self, closure=None):
        loss = _closure_loss(closure)
        for group in self.param_groups:
            (shrink, grow), (smallest, largest) = group["etas"], group["step_sizes"]
            for p, g, st in self._grads(group):
                if not st:
                    st["step"] = _scalar()
                    st["prev"] = ember.zeros_like(p)
                    st["step_size"] = ember.zeros_like(p)
                    _real(st["step_size"]).fill_(_num(group["lr"]))  # both parts of complex
                st["step"].add_(1)
                p, g, prev, size = map(_real, (p, g, st["prev"], st["step_size"]))
                agreement = g.mul(prev).sign()
                flipped = agreement < 0
                factor = ember.ones_like(agreement).masked_fill_(agreement > 0, grow)
                size.mul_(factor.masked_fill_(flipped, shrink)).clamp_(smallest, largest)
                g = g.masked_fill(flipped, 0)
                p.addcmul_(g.sign(), size, value=-1)
                prev.copy_(g)
        return loss
