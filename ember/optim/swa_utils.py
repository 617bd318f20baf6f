"""Stochastic Weight Averaging and EMA helpers (torch.optim.swa_utils) for ember.

``AveragedModel`` keeps a running average of another model's parameters: the SWA mean
by default, or any rule given as ``avg_fn(avg, cur, n)`` (one tensor at a time) or
``multi_avg_fn(avgs, curs, n)`` (lists of tensors, updated in place). ``update_bn``
recomputes BatchNorm statistics for the averaged weights, and ``SWALR`` anneals each
param group's lr towards a constant SWA lr.
"""
from __future__ import annotations

import itertools
import math
from copy import deepcopy

import ember
from ember.nn import Module

from .lr_scheduler import LRScheduler, _configure, _format_param, _state_without

__all__ = ["AveragedModel", "update_bn", "SWALR", "get_ema_multi_avg_fn",
           "get_swa_multi_avg_fn", "get_ema_avg_fn", "get_swa_avg_fn"]


def _check_decay(decay) -> None:
    if decay < 0.0 or decay > 1.0:
        raise ValueError(f"Invalid decay value {decay} provided. "
                         "Please provide a value in [0,1] range.")


def _lerp_capable(t) -> bool:
    return ember.is_floating_point(t) or ember.is_complex(t)


def get_ema_multi_avg_fn(decay=0.999):
    """In place, for lists of tensors: ema = decay * ema + (1 - decay) * current."""
    _check_decay(decay)

    @ember.no_grad()
    def ema_update(ema_params, current_params, num_averaged):
        for ema, cur in zip(ema_params, current_params):
            if _lerp_capable(ema):
                ema.lerp_(cur, 1 - decay)
            else:
                ema.copy_(ema * decay + cur * (1 - decay))

    return ema_update


def get_swa_multi_avg_fn():
    """In place, for lists of tensors: avg += (current - avg) / (n + 1) (running mean)."""

    @ember.no_grad()
    def swa_update(averaged_params, current_params, num_averaged):
        weight = 1.0 / (float(num_averaged) + 1)
        for avg, cur in zip(averaged_params, current_params):
            if _lerp_capable(avg):
                avg.lerp_(cur, weight)
            else:
                avg.copy_(avg + (cur - avg) / (num_averaged + 1))

    return swa_update


def get_ema_avg_fn(decay=0.999):
    """Returns decay * ema + (1 - decay) * current for one tensor."""
    _check_decay(decay)

    def ema_update(ema_param, current_param, num_averaged):
        with ember.no_grad():
            return decay * ema_param + (1 - decay) * current_param
    return ema_update


def get_swa_avg_fn():
    """Returns avg + (current - avg) / (n + 1) for one tensor."""
    def swa_update(averaged_param, current_param, num_averaged):
        with ember.no_grad():
            return averaged_param + (current_param - averaged_param) / (num_averaged + 1)
    return swa_update


class AveragedModel(Module):
    """A deep copy of ``model`` whose parameters track an average of ``model``'s.

    The first ``update_parameters`` copies the weights; later calls fold them in with
    ``avg_fn`` / ``multi_avg_fn`` (equal-weight SWA mean when neither is given).
    ``n_averaged`` counts the updates. With ``use_buffers`` the buffers are averaged too;
    otherwise they are copied from ``model`` on each update.
    """

    def __init__(self, model: Module, device=None, avg_fn=None, multi_avg_fn=None,
                 use_buffers: bool = False) -> None:
        super().__init__()
        assert avg_fn is None or multi_avg_fn is None, (
            "Only one of avg_fn and multi_avg_fn should be provided")
        copy = deepcopy(model)
        self.module = copy if device is None else copy.to(device)
        self.register_buffer("n_averaged", ember.zeros((), dtype=ember.long, device=device))
        self.avg_fn, self.multi_avg_fn, self.use_buffers = avg_fn, multi_avg_fn, use_buffers

    def forward(self, *args, **kwargs):
        """Runs the averaged copy."""
        return self.module(*args, **kwargs)

    def _tensors(self, model: Module):
        """What gets averaged: the parameters, plus the buffers with ``use_buffers``."""
        params = model.parameters()
        return itertools.chain(params, model.buffers()) if self.use_buffers else params

    def update_parameters(self, model: Module) -> None:
        """Fold ``model``'s current weights into the average."""
        mine = self.module if self.use_buffers else self
        pairs = [(avg.detach(), cur.detach().to(avg.device))
                 for avg, cur in zip(self._tensors(mine), self._tensors(model))]
        if bool(self.n_averaged == 0):
            for avg, cur in pairs:
                avg.copy_(cur)
        elif self.multi_avg_fn is not None:
            if pairs:
                averaged, current = map(list, zip(*pairs))
                self.multi_avg_fn(averaged, current, self.n_averaged)
        else:
            # one tensor at a time; the SWA running mean unless avg_fn says otherwise
            avg_fn = self.avg_fn or get_swa_avg_fn()
            for avg, cur in pairs:
                avg.copy_(avg_fn(avg, cur, self.n_averaged))
        if not self.use_buffers:
            # buffers are not averaged: keep them equal to the source model's
            for mine_b, theirs in zip(self.module.buffers(), model.buffers()):
                mine_b.detach().copy_(theirs.detach().to(mine_b.device))
        self.n_averaged += 1


def _batchnorm_types():
    from ember.nn.modules.batchnorm import _BatchNorm
    return _BatchNorm


@ember.no_grad()
def update_bn(loader, model: Module, device=None) -> None:
    """Recompute BatchNorm running statistics with one pass over ``loader``.

    Running stats are reset and accumulated as a plain average (momentum None). A batch that
    is a list or tuple is fed through its first element.
    """
    batchnorm = _batchnorm_types()
    saved_momenta = {}
    for module in model.modules():
        if isinstance(module, batchnorm):
            module.reset_running_stats()
            saved_momenta[module] = module.momentum
    if not saved_momenta:
        return
    was_training = model.training
    model.train()
    for module in saved_momenta:
        module.momentum = None
    for batch in loader:
        if isinstance(batch, (list, tuple)):
            batch = batch[0]
        if device is not None:
            batch = batch.to(device)
        model(batch)
    for module, momentum in saved_momenta.items():
        module.momentum = momentum
    model.train(was_training)


def _cosine_anneal(t: float) -> float:
    return (1 - math.cos(math.pi * t)) / 2


def _linear_anneal(t: float) -> float:
    return t


_ANNEALS = {"cos": _cosine_anneal, "linear": _linear_anneal}


class SWALR(LRScheduler):
    """Anneal every group's lr to ``swa_lr`` over ``anneal_epochs`` steps, then hold it.

    With alpha = anneal(min(1, step / anneal_epochs)) (cos: (1 - cos(pi * t)) / 2, or linear),
    lr = alpha * swa_lr + (1 - alpha) * lr_0, where lr_0 is recovered from the current lr
    and the previous alpha so the schedule composes with the lr already in the group.
    """

    def __init__(self, optimizer, swa_lr, anneal_epochs: int = 10,
                 anneal_strategy: str = "cos", last_epoch: int = -1) -> None:
        targets = _format_param("swa_lr", optimizer, swa_lr)
        for group, target in zip(optimizer.param_groups, targets):
            group["swa_lr"] = target
        if anneal_strategy not in _ANNEALS:
            raise ValueError("anneal_strategy must be one of 'cos' or 'linear', "
                             f"instead got {anneal_strategy}")
        self._anneal_strategy = anneal_strategy
        self._set_anneal_func()
        if not (isinstance(anneal_epochs, int) and anneal_epochs >= 0):
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got {anneal_epochs}")
        _configure(self, optimizer, last_epoch, anneal_epochs=anneal_epochs)

    def _set_anneal_func(self) -> None:
        self.anneal_func = _ANNEALS[self._anneal_strategy]

    @staticmethod
    def _get_initial_lr(lr, swa_lr, alpha):
        """Invert lr = alpha * swa_lr + (1 - alpha) * lr_0 for lr_0 (swa_lr once alpha is 1)."""
        return swa_lr if alpha == 1 else (lr - alpha * swa_lr) / (1 - alpha)

    def _alpha(self, step) -> float:
        return self.anneal_func(max(0, min(1, step / max(1, self.anneal_epochs))))

    def get_lr(self) -> list:
        self._warn_outside_step()
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        prev_alpha, alpha = self._alpha(step - 1), self._alpha(step)
        groups = self.optimizer.param_groups
        start = [self._get_initial_lr(g["lr"], g["swa_lr"], prev_alpha) for g in groups]
        return [g["swa_lr"] * alpha + lr * (1 - alpha) for g, lr in zip(groups, start)]

    def state_dict(self) -> dict:
        return _state_without(self, "optimizer", "anneal_func")

    def load_state_dict(self, state_dict: dict) -> None:
        super().load_state_dict(state_dict)
        self._set_anneal_func()
