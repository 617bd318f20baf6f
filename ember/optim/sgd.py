"""Stochastic gradient descent, with optional (Nesterov) momentum."""
from ember._tensor import Tensor
from .optimizer import Optimizer, _check_fused_group, _closure_loss, _fused_options, _num, \
    _require

__all__ = ["SGD", "sgd"]


class SGD(Optimizer):
    """Plain or momentum SGD.

    With ``g`` the (sign-adjusted) gradient plus ``weight_decay * p``: the momentum buffer
    starts as a copy of ``g`` and then follows ``b = momentum * b + (1 - dampening) * g``;
    the step direction is ``b`` (or ``g + momentum * b`` with ``nesterov``), and
    ``p -= lr * direction``.  State: ``momentum_buffer`` (only when momentum is non-zero).
    """

    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False,
                 *, maximize=False, foreach=None, differentiable=False, fused=None):
        # SGD rejects only values below zero (so NaN passes, as in torch)
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        _require(not lr < 0.0, "learning rate", lr)
        _require(not momentum < 0.0, "momentum value", momentum)
        _require(not weight_decay < 0.0, "weight_decay value", weight_decay)
        if nesterov and (dampening != 0 or momentum <= 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        Optimizer.__init__(self, params, dict(
            lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
            nesterov=nesterov, maximize=maximize, foreach=foreach,
            differentiable=differentiable, fused=fused))
        _fused_options(fused, differentiable, foreach)

    def step(self, closure=None):
        loss = _closure_loss(closure)
        for group in self.param_groups:
            _check_fused_group(group, "`_fused_sgd` does not support sparse gradients")
            uses_buffer = group["momentum"] != 0
            params, grads, buffers = [], [], []
            for p in group["params"]:
                if p.grad is not None:
                    params.append(p)
                    grads.append(p.grad)
                    buffers.append(self.state[p].get("momentum_buffer") if uses_buffer else None)
            sgd(params, grads, buffers, **{k: group[k] for k in _UPDATE_KEYS})
            if uses_buffer:
                for p, b in zip(params, buffers):
                    self.state[p]["momentum_buffer"] = b
        return loss


_UPDATE_KEYS = ("lr", "momentum", "dampening", "weight_decay", "nesterov", "maximize")


def sgd(params, d_p_list, momentum_buffer_list, has_sparse_grad=False, foreach=None, fused=None,
        grad_scale=None, found_inf=None, *, weight_decay, momentum, lr, dampening, nesterov,
        maximize):
    """One SGD update of ``params`` in place; new momentum buffers are written back into
    ``momentum_buffer_list`` (whose ``None`` entries mean "first step")."""
    for i, (p, g) in enumerate(zip(params, d_p_list)):
        if maximize:
            g = -g
        if weight_decay != 0:
            g = g.add(p, alpha=_num(weight_decay))
        if momentum != 0:
            buf = momentum_buffer_list[i]
            if buf is None:
                buf = momentum_buffer_list[i] = g.detach().clone()
            else:
                buf.mul_(momentum).add_(g, alpha=1 - dampening)
            g = g.add(buf, alpha=momentum) if nesterov else buf
        if isinstance(lr, Tensor) and lr.requires_grad:
            p.addcmul_(g, lr, value=-1)
        else:
            p.add_(g, alpha=-_num(lr))
