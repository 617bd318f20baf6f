"""SparseAdam: lazy Adam for sparse gradients (``nn.Embedding(sparse=True)``): only the rows a
gradient names move, and only their moments are updated."""
import math

import ember

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
        stepped = [(p, group) for group in self.param_groups for p in group["params"]
                   if p.grad is not None]
        if any(not p.grad.is_sparse for p, _ in stepped):
            raise RuntimeError("SparseAdam does not support dense gradients, please consider "
                               "Adam instead")
        with ember.no_grad():
            for p, group in stepped:
                self._update(p, group)
        return loss

    def _update(self, p, group):
        """Adam's moment and parameter updates at the gradient's entries only."""
        state = self.state[p]
        if not state:
            state.update(step=0, exp_avg=ember.zeros_like(p), exp_avg_sq=ember.zeros_like(p))
        grad = p.grad.coalesce()
        at = tuple(grad._indices())
        g = -grad._values() if group["maximize"] else grad._values()
        beta1, beta2 = group["betas"]
        state["step"] += 1
        m, v = state["exp_avg"], state["exp_avg_sq"]
        m_at = m[at] + (g - m[at]) * (1 - beta1)
        v_at = v[at] + (g * g - v[at]) * (1 - beta2)
        m[at], v[at] = m_at, v_at
        step = state["step"]
        step_size = group["lr"] * math.sqrt(1 - beta2 ** step) / (1 - beta1 ** step)
        p[at] = p[at] - step_size * (m_at / (v_at.sqrt() + group["eps"]))
