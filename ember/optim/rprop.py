"""torch.optim.Rprop."""
import ember
from .optimizer import Optimizer, _check_lr, _get_value, _to_scalar, \
    _use_grad_for_differentiable, _view_as_real
from ._common import _step_zero, _closure_loss

__all__ = ["Rprop", "rprop"]


class Rprop(Optimizer):
    """Resilient backpropagation."""

    def __init__(self, params, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), *,
                 capturable=False, foreach=None, maximize=False, differentiable=False):
        _check_lr(lr)
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        defaults = {"lr": lr, "etas": etas, "step_sizes": step_sizes, "foreach": foreach,
                    "maximize": maximize, "differentiable": differentiable,
                    "capturable": capturable}
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("foreach", None)
            group.setdefault("maximize", False)
            group.setdefault("differentiable", False)
            group.setdefault("capturable", False)

    def _init_group(self, group, params, grads, prevs, step_sizes, state_steps):
        has_complex = False
        for p in group["params"]:
            if p.grad is None:
                continue
            has_complex |= ember.is_complex(p)
            params.append(p)
            grad = p.grad
            if grad.is_sparse:
                raise RuntimeError("Rprop does not support sparse gradients")
            grads.append(grad)
            state = self.state[p]
            if len(state) == 0:
                state["step"] = _step_zero()
                state["prev"] = ember.zeros_like(p)
                lr = _get_value(_to_scalar(group["lr"]))
                if p.dtype.is_complex:
                    state["step_size"] = ember.full_like(grad, complex(lr, lr))
                else:
                    state["step_size"] = ember.full_like(grad, lr)
            prevs.append(state["prev"])
            step_sizes.append(state["step_size"])
            state_steps.append(state["step"])
        return has_complex

    @_use_grad_for_differentiable
    def step(self, closure=None):
        """Perform a single optimization step."""
        loss = _closure_loss(closure)
        for group in self.param_groups:
            params, grads, prevs, step_sizes, state_steps = [], [], [], [], []
            etaminus, etaplus = group["etas"]
            step_size_min, step_size_max = group["step_sizes"]
            has_complex = self._init_group(group, params, grads, prevs, step_sizes, state_steps)
            rprop(params, grads, prevs, step_sizes, state_steps, step_size_min=step_size_min,
                  step_size_max=step_size_max, etaminus=etaminus, etaplus=etaplus,
                  foreach=group["foreach"], maximize=group["maximize"],
                  differentiable=group["differentiable"], capturable=group["capturable"],
                  has_complex=has_complex)
        return loss


def rprop(params, grads, prevs, step_sizes, state_steps, foreach=None, capturable=False,
          maximize=False, differentiable=False, has_complex=False, *, step_size_min,
          step_size_max, etaminus, etaplus):
    """Functional API for Rprop."""
    for i, param in enumerate(params):
        grad = grads[i]
        grad = grad if not maximize else -grad
        prev = prevs[i]
        step_size = step_sizes[i]
        step = state_steps[i]
        step += 1
        if ember.is_complex(param):
            grad = _view_as_real(grad)
            prev = _view_as_real(prev)
            param = _view_as_real(param)
            step_size = _view_as_real(step_size)
        sign = grad.mul(prev).sign()
        sign = ember.where(sign.gt(0), etaplus, ember.where(sign.lt(0), etaminus,
                                                            ember.ones_like(sign)))
        step_size.mul_(sign).clamp_(step_size_min, step_size_max)
        grad = ember.where(sign.eq(etaminus), 0, grad)
        param.addcmul_(grad.sign(), step_size, value=-1)
        prev.copy_(grad)
