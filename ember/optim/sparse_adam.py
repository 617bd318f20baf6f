"""SparseAdam: lazy Adam for sparse gradients.  ember has no sparse tensors, so constructing
one works (for torch-compatible code and state dicts) but stepping with a gradient raises."""
from .optimizer import Optimizer, _check_betas, _check_lr, _closure_loss, _require

__all__ = ["SparseAdam"]


class SparseAdam(Optimizer):
    """Adam that only updates the moments of the rows present in a sparse gradient."""

    _tensor_step = False

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, maximize=False):
        _check_lr(lr)
        _require(lr > 0.0, "learning rate", lr)
        _require(eps > 0.0, "epsilon value", eps)
        _check_betas(betas)
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, maximize=maximize))
        checks = (("Sparse", lambda p: p.is_sparse, "SparseAdam requires dense parameter tensors"),
                  ("Complex", lambda p: p.is_complex(),
                   "SparseAdam does not support complex parameters"))
        for kind, bad, why in checks:
            where = [[i, j] for i, group in enumerate(self.param_groups)
                     for j, p in enumerate(group["params"]) if bad(p)]
            if where:
                raise ValueError(f"{kind} params at indices {where}: {why}")

    def step(self, closure=None):
        loss = _closure_loss(closure)
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None and not p.grad.is_sparse:
                    raise RuntimeError("SparseAdam does not support dense gradients, please "
                                       "consider Adam instead")
        return loss
