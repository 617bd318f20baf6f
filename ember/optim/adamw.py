"""AdamW: Adam with decoupled weight decay (``p *= 1 - lr * weight_decay`` every step)."""
from .adam import Adam

__all__ = ["AdamW"]


class AdamW(Adam):
    """Adam with ``decoupled_weight_decay`` always on and a default weight decay of 1e-2."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2,
                 amsgrad=False, *, maximize=False, foreach=None, capturable=False,
                 differentiable=False, fused=None):
        flags = dict(maximize=maximize, foreach=foreach, capturable=capturable,
                     differentiable=differentiable, fused=fused)
        Adam.__init__(self, params, lr, betas, eps, weight_decay, amsgrad,
                      decoupled_weight_decay=True, **flags)

    def __setstate__(self, state):
        """Groups saved by older versions lack the flag; AdamW always decouples."""
        Adam.__setstate__(self, state)
        for group in self.param_groups:
            group.update(decoupled_weight_decay=True)
