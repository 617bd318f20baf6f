"""Adagrad: per-coordinate step sizes from the running sum of squared gradients."""
import ember
from .optimizer import Optimizer, _check_fused_group, _check_lr, _closure_loss, \
    _fused_options, _num, _real, _require, _scalar

__all__ = ["Adagrad"]


class Adagrad(Optimizer):
    """Adagrad.

    Per step ``t``: ``g += weight_decay * p``; ``sum += g * g``;
    ``p -= lr / (1 + (t - 1) * lr_decay) * g / (sqrt(sum) + eps)``.
    State (created with the optimizer): ``step`` and ``sum`` (starting at
    ``initial_accumulator_value``). A sparse gradient (``nn.Embedding(sparse=True)``) moves
    only the rows it names, and only their sums grow; weight decay is refused with it.
    """

    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0,
                 eps=1e-10, foreach=None, *, maximize=False, differentiable=False, fused=None):
        _check_lr(lr)
        _require(lr_decay >= 0.0, "lr_decay value", lr_decay)
        _require(weight_decay >= 0.0, "weight_decay value", weight_decay)
        _require(initial_accumulator_value >= 0.0, "initial_accumulator_value value",
                 initial_accumulator_value)
        _require(eps >= 0.0, "epsilon value", eps)
        super().__init__(params, dict(
            lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
            initial_accumulator_value=initial_accumulator_value, foreach=foreach,
            maximize=maximize, differentiable=differentiable, fused=fused))
        _fused_options(fused, differentiable, foreach)
        for group in self.param_groups:
            for p in group["params"]:
                self._init_state(p)

    def _init_state(self, p):
        """``step`` and ``sum``; like torch, every group starts its sum at the constructor's
        ``initial_accumulator_value`` (``v + vj`` for complex parameters)."""
        st = self.state[p]
        st["step"] = _scalar()
        st["sum"] = ember.zeros_like(p)
        _real(st["sum"]).fill_(self.defaults["initial_accumulator_value"])

    def share_memory(self):
        """A no-op on ember's CPU tensors (kept for API compatibility)."""

    def step(self, closure=None):
        loss = _closure_loss(closure)
        for group in self.param_groups:
            _check_fused_group(group, "`fused` does not support sparse grad or complex param")
            lr, decay, wd = _num(group["lr"]), group["lr_decay"], group["weight_decay"]
            for p, g, st in self._grads(group):
                if not st:  # added with add_param_group
                    self._init_state(p)
                t = _num(st["step"].add_(1))
                if g.is_sparse:
                    if wd != 0:
                        raise RuntimeError("weight_decay option is not compatible with sparse "
                                           "gradients")
                    if group["differentiable"]:      # (torch's update is in place on p)
                        raise RuntimeError("a leaf Variable that requires grad is being used "
                                           "in an in-place operation.")
                    _sparse_update(p, g, st["sum"], lr / (1 + (t - 1) * decay), group["eps"])
                    continue
                if wd != 0:
                    g = g.add(p, alpha=wd)
                p, g, acc = map(_real, (p, g, st["sum"]))
                acc.addcmul_(g, g, value=1)
                p.addcdiv_(g, acc.sqrt().add(group["eps"]), value=-lr / (1 + (t - 1) * decay))
        return loss


def _sparse_update(p, grad, acc, clr, eps):
    """Adagrad at a sparse gradient's entries: duplicates summed first (the update is not
    linear), then ``sum[i] += g * g`` and ``p[i] -= clr * g / (sqrt(sum[i]) + eps)``."""
    from ember._ops.sparse import _warn_invariants_off
    _warn_invariants_off(None)          # (torch builds a sparse update: its warning, once)
    grad = grad.coalesce()
    at = tuple(grad._indices())
    g = grad._values()
    with ember.no_grad():
        acc_at = acc[at] + g * g
        acc[at] = acc_at
        p[at] = p[at].add(g / (acc_at.sqrt() + eps), alpha=-clr)     # (one rounding)
