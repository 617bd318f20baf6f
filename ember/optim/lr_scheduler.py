"""Learning-rate schedulers (torch.optim.lr_scheduler) for ember optimizers.

A scheduler owns an optimizer and rewrites ``group["lr"]`` of every param group on each
``step()``. Most schedulers are *chainable*: ``get_lr`` derives the next lr from the lr
currently in the group, so several schedulers can drive one optimizer and their effects
multiply. Where a closed form exists (``_get_closed_form_lr``) it is used when ``step`` is
given an explicit epoch, a calling convention torch deprecates.

State dicts are the instance ``__dict__`` minus the optimizer, so they hold the same keys
as torch's (``base_lrs``, ``last_epoch``, ``_step_count``, ``_is_initial``, ...).
"""
from __future__ import annotations

import contextlib
import functools
import math
import types
import warnings
import weakref
from bisect import bisect_right
from collections import Counter
from typing import Any

from ember._tensor import Tensor

from .optimizer import Optimizer

__all__ = ["ChainedScheduler", "ConstantLR", "CosineAnnealingLR", "CosineAnnealingWarmRestarts",
           "CyclicLR", "ExponentialLR", "LRScheduler", "LambdaLR", "LinearLR", "MultiStepLR",
           "MultiplicativeLR", "OneCycleLR", "PolynomialLR", "ReduceLROnPlateau", "SequentialLR",
           "StepLR"]

# Warning texts are part of the observable behaviour: they match torch word for word.
EPOCH_DEPRECATION_WARNING = (
    "The epoch parameter in `scheduler.step()` was not necessary and is being "
    "deprecated where possible. Please use `scheduler.step()` to step the "
    "scheduler. During the deprecation, if epoch is different from None, the "
    "closed form is used instead of the new chainable form, where available. "
    "Please open an issue if you are unable to replicate your use case: "
    "https://github.com/pytorch/pytorch/issues/new/choose."
)
_SEE_DOCS = "See more details at https://pytorch.org/docs/stable/optim.html#how-to-adjust-learning-rate"
_STEP_OVERRIDDEN_WARNING = (
    "Seems like `optimizer.step()` has been overridden after learning rate scheduler "
    "initialization. Please, make sure to call `optimizer.step()` before "
    "`lr_scheduler.step()`. " + _SEE_DOCS)
_STEP_ORDER_WARNING = (
    "Detected call of `lr_scheduler.step()` before `optimizer.step()`. "
    "In PyTorch 1.1.0 and later, you should call them in the opposite order: "
    "`optimizer.step()` before `lr_scheduler.step()`.  Failure to do this "
    "will result in PyTorch skipping the first value of the learning rate schedule. " + _SEE_DOCS)
_GET_LR_WARNING = ("To get the last learning rate computed by the scheduler, "
                   "please use `get_last_lr()`.")
_NO_MOMENTUM = "optimizer must support momentum or beta1 with `cycle_momentum` option enabled"


# ----------------------------------------------------------------------------- helpers

def _copy(value):
    """Tensors are cloned so that a schedule never aliases a param group's tensor lr."""
    return value.clone() if isinstance(value, Tensor) else value


def _group_values(optimizer, key: str) -> list:
    return [_copy(group[key]) for group in optimizer.param_groups]


def _set_group_value(group: dict, key: str, value) -> None:
    """Write ``value`` into ``group[key]``, in place when the group holds a tensor."""
    if isinstance(group[key], Tensor):
        group[key].fill_(value.item() if isinstance(value, Tensor) else value)
    else:
        group[key] = value


def _state_without(obj, *skipped) -> dict:
    """The instance dict minus the named entries: what a scheduler saves."""
    return {name: value for name, value in vars(obj).items() if name not in skipped}


def _configure(sched, optimizer, last_epoch, **settings) -> None:
    """Store a scheduler's settings (in the order its state_dict lists them) and start it."""
    vars(sched).update(settings)
    LRScheduler.__init__(sched, optimizer, last_epoch)


def _format_param(name: str, optimizer, value) -> list:
    """One value per param group: broadcast a scalar, length-check a list or tuple."""
    groups = optimizer.param_groups
    if isinstance(value, (list, tuple)):
        if len(value) != len(groups):
            raise ValueError(
                f"{name} must have the same length as optimizer.param_groups. "
                f"{name} has {len(value)} values, param_groups has {len(groups)}.")
    else:
        value = [value] * len(groups)
    return [_copy(v) for v in value]


def _check_optimizer(optimizer) -> None:
    if not isinstance(optimizer, Optimizer):
        raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")


def _track_optimizer_steps(optimizer) -> None:
    """Wrap ``optimizer.step`` (once) so that it sets ``optimizer._opt_called``.

    The flag lets a scheduler warn when it is stepped before its optimizer. The wrapper holds
    the optimizer weakly so it does not keep the optimizer alive through a cycle.
    """
    if hasattr(optimizer.step, "_wrapped_by_lr_sched"):
        return
    func = optimizer.step.__func__
    owner = weakref.ref(optimizer)

    @functools.wraps(func)
    def step(*args, **kwargs):
        opt = owner()
        opt._opt_called = True
        return func(opt, *args, **kwargs)

    step._wrapped_by_lr_sched = True
    optimizer.step = step


def _callable_state(fn):
    """Plain functions are not saved (None); callable objects keep a copy of their __dict__."""
    return None if isinstance(fn, types.FunctionType) else fn.__dict__.copy()


def _restore_callables(fns, saved) -> None:
    for fn, state in zip(fns, saved):
        if state is not None:
            fn.__dict__.update(state)


def _check_lambdas(optimizer, lr_lambda) -> list:
    groups = optimizer.param_groups
    if not isinstance(lr_lambda, (list, tuple)):
        return [lr_lambda] * len(groups)
    if len(lr_lambda) != len(groups):
        raise ValueError(f"Expected {len(groups)} lr_lambdas, but got {len(lr_lambda)}")
    return list(lr_lambda)


# -------------------------------------------------------------------------- base class

class LRScheduler:
    """Base class. Subclasses implement ``get_lr`` (the lrs for ``self.last_epoch``)."""

    _get_lr_called_within_step = False
    _is_initial = False

    def __init__(self, optimizer, last_epoch: int = -1) -> None:
        _check_optimizer(optimizer)
        self.optimizer = optimizer
        if last_epoch == -1:
            for group in optimizer.param_groups:
                group.setdefault("initial_lr", _copy(group["lr"]))
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError(f"param 'initial_lr' is not specified in param_groups[{i}] "
                                   "when resuming scheduler with last_epoch >= 0.\nThis "
                                   "typically happens when:\n1. You're trying to resume "
                                   "training from a checkpoint but haven't properly loaded the "
                                   "optimizer state\n2. You're using last_epoch >= 0 for a "
                                   "fresh training run (not recommended)")
        self.base_lrs = _group_values(optimizer, "initial_lr")
        self.last_epoch = last_epoch
        _track_optimizer_steps(optimizer)
        self._initial_step()

    def _initial_step(self) -> None:
        """Reset the step count and take the step that moves ``last_epoch`` to its start."""
        self._step_count = 0
        self._is_initial = True
        self._get_lr_called_within_step = False
        try:
            self.step()
        finally:
            self._is_initial = False

    def state_dict(self) -> dict[str, Any]:
        """Everything but the optimizer."""
        return _state_without(self, "optimizer")

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        vars(self).update(state_dict)

    def get_last_lr(self) -> list:
        """The lrs written by the latest ``step``."""
        return self._last_lr

    def get_lr(self) -> list:
        raise NotImplementedError

    @contextlib.contextmanager
    def _in_step(self):
        self._get_lr_called_within_step = True
        try:
            yield
        finally:
            self._get_lr_called_within_step = False

    def _warn_outside_step(self) -> None:
        if not self._get_lr_called_within_step:
            warnings.warn(_GET_LR_WARNING, UserWarning, stacklevel=3)

    def _check_call_order(self) -> None:
        if not hasattr(self.optimizer.step, "_wrapped_by_lr_sched"):
            warnings.warn(_STEP_OVERRIDDEN_WARNING, UserWarning, stacklevel=3)
        elif not getattr(self.optimizer, "_opt_called", False):
            warnings.warn(_STEP_ORDER_WARNING, UserWarning, stacklevel=3)

    def step(self, epoch: int | None = None) -> None:
        """Advance one epoch (or jump to ``epoch``, deprecated) and write the new lrs."""
        if self._step_count == 1:  # first user step after construction
            self._check_call_order()
        self._step_count += 1
        with self._in_step():
            if epoch is None:
                self.last_epoch += 1
                lrs = self.get_lr()
            else:
                warnings.warn(EPOCH_DEPRECATION_WARNING, UserWarning, stacklevel=2)
                self.last_epoch = epoch
                closed_form = getattr(self, "_get_closed_form_lr", None)
                lrs = closed_form() if closed_form is not None else self.get_lr()
        self._write_lrs(lrs)

    def _write_lrs(self, lrs) -> None:
        for group, lr in zip(self.optimizer.param_groups, lrs):
            _set_group_value(group, "lr", lr)
        self._last_lr = _group_values(self.optimizer, "lr")

    def _current_lrs(self) -> list:
        return _group_values(self.optimizer, "lr")

    def _scaled(self, factor) -> list:
        """The chainable form: every group's current lr times ``factor`` (a factor of 1 leaves
        each lr exactly as it is, its type included)."""
        lrs = self._current_lrs()
        return lrs if factor == 1 else [lr * factor for lr in lrs]


class _LRScheduler(LRScheduler):
    """Old name of :class:`LRScheduler`."""


# ------------------------------------------------------------------ simple schedules

class _LambdaScheduler(LRScheduler):
    """Holds ``lr_lambdas`` (one per param group) and saves them the way torch does."""

    def __init__(self, optimizer, lr_lambda, last_epoch: int = -1) -> None:
        self.optimizer = optimizer
        self.lr_lambdas = _check_lambdas(optimizer, lr_lambda)
        super().__init__(optimizer, last_epoch)

    def state_dict(self) -> dict[str, Any]:
        state = _state_without(self, "optimizer", "lr_lambdas")
        state["lr_lambdas"] = [_callable_state(fn) for fn in self.lr_lambdas]
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        saved = state_dict.pop("lr_lambdas")
        vars(self).update(state_dict)
        state_dict["lr_lambdas"] = saved  # leave the caller's dict as it was
        _restore_callables(self.lr_lambdas, saved)


class LambdaLR(_LambdaScheduler):
    """lr = base_lr * lr_lambda(epoch); one lambda, or one per param group."""

    def get_lr(self) -> list:
        self._warn_outside_step()
        return [base * fn(self.last_epoch) for fn, base in zip(self.lr_lambdas, self.base_lrs)]


class MultiplicativeLR(_LambdaScheduler):
    """lr = lr * lr_lambda(epoch) after every step (the lambda returns a factor)."""

    def get_lr(self) -> list:
        self._warn_outside_step()
        if self._is_initial:
            return self._current_lrs()
        return [group["lr"] * fn(self.last_epoch)
                for fn, group in zip(self.lr_lambdas, self.optimizer.param_groups)]


class StepLR(LRScheduler):
    """lr = base_lr * gamma ** (epoch // step_size)."""

    def __init__(self, optimizer, step_size: int, gamma: float = 0.1,
                 last_epoch: int = -1) -> None:
        _configure(self, optimizer, last_epoch, step_size=step_size, gamma=gamma)

    def get_lr(self) -> list:
        self._warn_outside_step()
        at_boundary = self.last_epoch > 0 and self.last_epoch % self.step_size == 0
        return self._scaled(self.gamma if at_boundary else 1)

    def _get_closed_form_lr(self) -> list:
        return [base * self.gamma ** (self.last_epoch // self.step_size) for base in self.base_lrs]


class MultiStepLR(LRScheduler):
    """lr = base_lr * gamma ** (number of milestones <= epoch); repeats count twice."""

    def __init__(self, optimizer, milestones, gamma: float = 0.1, last_epoch: int = -1) -> None:
        _configure(self, optimizer, last_epoch, milestones=Counter(milestones), gamma=gamma)

    def get_lr(self) -> list:
        self._warn_outside_step()
        return self._scaled(self.gamma ** self.milestones.get(self.last_epoch, 0))

    def _get_closed_form_lr(self) -> list:
        passed = bisect_right(sorted(self.milestones.elements()), self.last_epoch)
        return [base * self.gamma ** passed for base in self.base_lrs]


class ConstantLR(LRScheduler):
    """lr = base_lr * factor while epoch < total_iters, then base_lr."""

    def __init__(self, optimizer, factor: float = 1.0 / 3, total_iters: int = 5,
                 last_epoch: int = -1) -> None:
        if factor < 0 or factor > 1.0:
            raise ValueError("Constant multiplicative factor expected to be between 0 and 1.")
        _configure(self, optimizer, last_epoch, factor=factor, total_iters=total_iters)

    def get_lr(self) -> list:
        self._warn_outside_step()
        if self.last_epoch == 0:
            return self._scaled(self.factor)
        return self._scaled(1.0 / self.factor if self.last_epoch == self.total_iters else 1)

    def _get_closed_form_lr(self) -> list:
        reached = self.last_epoch >= self.total_iters
        return [base * (self.factor + reached * (1 - self.factor)) for base in self.base_lrs]


class LinearLR(LRScheduler):
    """lr = base_lr * (start + (end - start) * min(epoch, total_iters) / total_iters)."""

    def __init__(self, optimizer, start_factor: float = 1.0 / 3, end_factor: float = 1.0,
                 total_iters: int = 5, last_epoch: int = -1) -> None:
        if start_factor <= 0 or start_factor > 1.0:
            raise ValueError("Starting multiplicative factor expected to be greater than 0 "
                             "and less or equal to 1.")
        if end_factor < 0 or end_factor > 1.0:
            raise ValueError("Ending multiplicative factor expected to be between 0 and 1.")
        _configure(self, optimizer, last_epoch, start_factor=start_factor,
                   end_factor=end_factor, total_iters=total_iters)

    def get_lr(self) -> list:
        self._warn_outside_step()
        if self.last_epoch == 0:
            return self._scaled(self.start_factor)
        if self._is_initial or self.last_epoch > self.total_iters:
            return self._current_lrs()
        # ratio of the factor at this epoch to the factor at the previous one
        span = self.end_factor - self.start_factor
        return self._scaled(
            1.0 + span / (self.total_iters * self.start_factor + (self.last_epoch - 1) * span))

    def _get_closed_form_lr(self) -> list:
        done = min(self.total_iters, self.last_epoch) / self.total_iters
        return [base * (self.start_factor + (self.end_factor - self.start_factor) * done)
                for base in self.base_lrs]


class ExponentialLR(LRScheduler):
    """lr = base_lr * gamma ** epoch."""

    def __init__(self, optimizer, gamma: float, last_epoch: int = -1) -> None:
        _configure(self, optimizer, last_epoch, gamma=gamma)

    def get_lr(self) -> list:
        self._warn_outside_step()
        first = self._is_initial or self.last_epoch == 0
        return self._current_lrs() if first else self._scaled(self.gamma)

    def _get_closed_form_lr(self) -> list:
        return [base * self.gamma ** self.last_epoch for base in self.base_lrs]


class PolynomialLR(LRScheduler):
    """lr = base_lr * (1 - min(epoch, total_iters) / total_iters) ** power."""

    def __init__(self, optimizer, total_iters: int = 5, power: float = 1.0,
                 last_epoch: int = -1) -> None:
        _configure(self, optimizer, last_epoch, total_iters=total_iters, power=power)

    def get_lr(self) -> list:
        self._warn_outside_step()
        if self._is_initial or self.last_epoch == 0 or self.last_epoch > self.total_iters:
            return self._current_lrs()
        n, t = self.total_iters, self.last_epoch
        return self._scaled(((1.0 - t / n) / (1.0 - (t - 1) / n)) ** self.power)

    def _get_closed_form_lr(self) -> list:
        left = 1.0 - min(self.total_iters, self.last_epoch) / self.total_iters
        return [base * left ** self.power for base in self.base_lrs]


class CosineAnnealingLR(LRScheduler):
    """lr = eta_min + (base_lr - eta_min) * (1 + cos(pi * epoch / T_max)) / 2.

    Stepped without an epoch it applies the ratio of consecutive values to the current lr,
    so it composes with other schedulers; past T_max the cosine keeps going (it rises).
    """

    def __init__(self, optimizer, T_max: int, eta_min: float = 0.0,
                 last_epoch: int = -1) -> None:
        _configure(self, optimizer, last_epoch, T_max=T_max, eta_min=eta_min)

    def get_lr(self) -> list:
        self._warn_outside_step()
        t, T, lo = self.last_epoch, self.T_max, self.eta_min
        groups = self.optimizer.param_groups
        if self._is_initial or t == 0:
            return self._current_lrs()
        if (t - 1 - T) % (2 * T) == 0:  # leaving the trough: the ratio form would divide by 0
            return [group["lr"] + (base - lo) * (1 - math.cos(math.pi / T)) / 2
                    for base, group in zip(self.base_lrs, groups)]
        ratio = (1 + math.cos(math.pi * t / T)) / (1 + math.cos(math.pi * (t - 1) / T))
        return [ratio * (group["lr"] - lo) + lo for group in groups]

    def _get_closed_form_lr(self) -> list:
        cos = math.cos(math.pi * self.last_epoch / self.T_max)
        return [self.eta_min + (base - self.eta_min) * (1 + cos) / 2 for base in self.base_lrs]


class CosineAnnealingWarmRestarts(LRScheduler):
    """lr = eta_min + (base_lr - eta_min) * (1 + cos(pi * T_cur / T_i)) / 2.

    T_cur counts epochs since the last restart; the period starts at T_0 and is multiplied
    by T_mult at each restart. ``step(epoch)`` accepts fractional epochs without warning.
    """

    def __init__(self, optimizer, T_0: int, T_mult: int = 1, eta_min: float = 0.0,
                 last_epoch: int = -1) -> None:
        if not (T_0 > 0 and isinstance(T_0, int)):
            raise ValueError(f"Expected positive integer T_0, but got {T_0}")
        if not (T_mult >= 1 and isinstance(T_mult, int)):
            raise ValueError(f"Expected integer T_mult >= 1, but got {T_mult}")
        if not isinstance(eta_min, (float, int)):
            raise ValueError(f"Expected float or int eta_min, but got {eta_min} "
                             f"of type {type(eta_min)}")
        _configure(self, optimizer, last_epoch, T_0=T_0, T_i=T_0, T_mult=T_mult,
                   eta_min=eta_min, T_cur=last_epoch)

    def get_lr(self) -> list:
        self._warn_outside_step()
        cos = math.cos(math.pi * self.T_cur / self.T_i)
        return [self.eta_min + (base - self.eta_min) * (1 + cos) / 2 for base in self.base_lrs]

    def step(self, epoch=None) -> None:
        if epoch is not None or self.last_epoch < 0:      # jump (the initial step jumps to 0)
            epoch = 0 if epoch is None else epoch
            self.T_cur, self.T_i = self._position(epoch)
        else:
            epoch = self.last_epoch + 1
            self.T_cur += 1
            if self.T_cur >= self.T_i:  # restart (a resumed T_cur may span several periods)
                self.T_cur %= self.T_i
                self.T_i *= self.T_mult
        self.last_epoch = math.floor(epoch)
        with self._in_step():
            lrs = self.get_lr()
        self._write_lrs(lrs)

    def _position(self, epoch):
        """(T_cur, T_i) at ``epoch``. The periods are T_0 * T_mult**k, so the first n of them
        end at T_0 * (T_mult**n - 1) / (T_mult - 1); n is found with a logarithm, rounded
        exactly as torch rounds it (so epochs on a boundary land where torch puts them)."""
        if epoch < 0:
            raise ValueError(f"Expected non-negative epoch, but got {epoch}")
        t0, mult = self.T_0, self.T_mult
        if epoch < t0 or mult == 1:
            return epoch % t0, t0
        done = int(math.log(epoch / t0 * (mult - 1) + 1, mult))
        return epoch - t0 * (mult ** done - 1) / (mult - 1), t0 * mult ** done


# ------------------------------------------------------------ schedulers of schedulers

def _check_children(owner: str, schedulers, optimizer, empty_message: str) -> None:
    if len(schedulers) < 1:
        raise ValueError(empty_message)
    for i, sched in enumerate(schedulers):
        if not hasattr(sched, "optimizer"):
            raise TypeError(f"{owner} at index {i} should have `optimizer` as its attribute.")
        if isinstance(sched, ReduceLROnPlateau):
            raise ValueError(
                f"{owner} does not support `ReduceLROnPlateau` scheduler as it requires "
                "additional kwargs to be specified when calling `step`, but got one at "
                f"index {i} in the given schedulers sequence.")
        if optimizer != sched.optimizer:
            raise ValueError(
                f"{owner} expects all schedulers to belong to the same optimizer, but got "
                f"scheduler {sched.__class__.__name__} at index {i} has {sched.optimizer}, "
                f"which is different from {optimizer.__class__.__name__}.")


class _SchedulerGroup(LRScheduler):
    """State handling shared by SequentialLR and ChainedScheduler: children save their own."""

    def state_dict(self) -> dict[str, Any]:
        state = _state_without(self, "optimizer", "_schedulers")
        state["_schedulers"] = [s.state_dict() for s in self._schedulers]
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        saved = state_dict.pop("_schedulers")
        vars(self).update(state_dict)
        state_dict["_schedulers"] = saved
        for sched, state in zip(self._schedulers, saved):
            sched.load_state_dict(state)


class SequentialLR(_SchedulerGroup):
    """Run ``schedulers[i]`` between ``milestones[i-1]`` and ``milestones[i]``.

    On reaching a milestone the next scheduler is restarted with ``step(0)``.
    """

    def __init__(self, optimizer, schedulers, milestones, last_epoch: int = -1) -> None:
        name = self.__class__.__name__
        _check_children(name, schedulers, optimizer,
                        f"{name} expects at least one scheduler, but got no scheduler.")
        if len(milestones) != len(schedulers) - 1:
            raise ValueError(
                "Sequential Schedulers expects number of schedulers provided to be one more "
                "than the number of milestone points, but got number of schedulers "
                f"{len(schedulers)} and the number of milestones to be equal to {len(milestones)}")
        vars(self).update(_schedulers=schedulers, _milestones=milestones,
                          last_epoch=last_epoch + 1, optimizer=optimizer)
        # the children already took their initial steps; start over from the first one
        for group in optimizer.param_groups:
            group["lr"] = group["initial_lr"]
        self.recursive_undo()
        schedulers[0]._initial_step()
        self._last_lr = schedulers[0].get_last_lr()

    def recursive_undo(self, sched=None) -> None:
        """Take back the initial step of every (nested) child scheduler."""
        for child in (sched or self)._schedulers:
            if isinstance(child, SequentialLR):
                self.recursive_undo(child)
            elif hasattr(child, "last_epoch"):
                child.last_epoch -= 1

    def step(self) -> None:
        self.last_epoch += 1
        i = bisect_right(self._milestones, self.last_epoch)
        sched = self._schedulers[i]
        if i > 0 and self._milestones[i - 1] == self.last_epoch:
            with warnings.catch_warnings():     # torch restarts the child without a warning
                warnings.filterwarnings("ignore", message="The epoch parameter")
                sched.step(0)
        else:
            sched.step()
        self._last_lr = sched.get_last_lr()


class ChainedScheduler(_SchedulerGroup):
    """Step every scheduler in turn on each ``step()``; their effects compose."""

    def __init__(self, schedulers, optimizer=None) -> None:
        name = self.__class__.__name__
        if len(schedulers) < 1:
            raise ValueError(f"{name} expects at least one scheduler to be chained, "
                             "but got no scheduler.")
        optimizer = optimizer or schedulers[0].optimizer
        _check_children(name, schedulers, optimizer, "")
        self._schedulers = schedulers
        self.optimizer = optimizer
        self._last_lr = _group_values(schedulers[-1].optimizer, "lr")

    def step(self) -> None:
        for sched in self._schedulers:
            sched.step()
        self._last_lr = _group_values(self._schedulers[-1].optimizer, "lr")


# ------------------------------------------------------------------ metric-driven

class ReduceLROnPlateau(LRScheduler):
    """lr = max(lr * factor, min_lr) once the metric fails to improve for ``patience`` steps.

    Improvement for mode="min": rel: a < best * (1 - threshold); abs: a < best - threshold
    (mirrored for "max"). A reduction smaller than ``eps`` is skipped; after a reduction
    ``cooldown`` steps pass before bad epochs count again.
    """

    def __init__(self, optimizer, mode: str = "min", factor: float = 0.1, patience: int = 10,
                 threshold: float = 1e-4, threshold_mode: str = "rel", cooldown: int = 0,
                 min_lr=0, eps: float = 1e-8) -> None:
        if factor >= 1.0:
            raise ValueError("Factor should be < 1.0.")
        _check_optimizer(optimizer)
        groups = len(optimizer.param_groups)
        per_group = isinstance(min_lr, (list, tuple))
        if per_group and len(min_lr) != groups:
            raise ValueError(f"expected {groups} min_lrs, got {len(min_lr)}")
        vars(self).update(
            factor=factor, optimizer=optimizer,
            default_min_lr=None if per_group else min_lr,
            min_lrs=list(min_lr) if per_group else [min_lr] * groups,
            patience=patience, cooldown=cooldown, eps=eps, last_epoch=0,
            _last_lr=_group_values(optimizer, "lr"))
        self._init_is_better(mode, threshold, threshold_mode)
        self._reset()

    def _reset(self) -> None:
        """Forget the best value seen and any cooldown or bad-epoch count."""
        vars(self).update(best=self.mode_worse, cooldown_counter=0, num_bad_epochs=0)

    def step(self, metrics, epoch=None) -> None:
        value = float(metrics)
        if epoch is not None:
            warnings.warn(EPOCH_DEPRECATION_WARNING, UserWarning, stacklevel=2)
        self.last_epoch = self.last_epoch + 1 if epoch is None else epoch
        improved = self._is_better(value, self.best)
        if improved:
            self.best = value
        self.num_bad_epochs = 0 if improved else self.num_bad_epochs + 1
        if self.in_cooldown:                 # epochs inside a cooldown never count as bad
            self.num_bad_epochs, self.cooldown_counter = 0, self.cooldown_counter - 1
        if self.num_bad_epochs > self.patience:
            self._reduce_lr(self.last_epoch)
            self.cooldown_counter, self.num_bad_epochs = self.cooldown, 0
        self._last_lr = _group_values(self.optimizer, "lr")

    def _reduce_lr(self, epoch) -> None:
        groups = self.optimizer.param_groups
        if len(groups) != len(self.min_lrs):
            if self.default_min_lr is None:
                raise RuntimeError(
                    f"The number of param groups in the `optimizer` ({len(groups)}) differs "
                    f"from when `ReduceLROnPlateau` was initialized ({len(self.min_lrs)}), "
                    "usually due to a new param group being added to the optimizer. Please "
                    "modify the `min_lrs` field to match the length of the `optimizer` "
                    "param groups.")
            self.min_lrs = [self.default_min_lr] * len(groups)
        for group, min_lr in zip(groups, self.min_lrs):
            old = float(group["lr"])
            new = max(old * self.factor, min_lr)
            if old - new > self.eps:
                _set_group_value(group, "lr", new)

    @property
    def in_cooldown(self) -> bool:
        return self.cooldown_counter > 0

    def _is_better(self, a: float, best: float) -> bool:
        if self.mode == "min":
            bar = best * (1.0 - self.threshold) if self.threshold_mode == "rel" \
                else best - self.threshold
            return a < bar
        bar = best * (self.threshold + 1.0) if self.threshold_mode == "rel" \
            else best + self.threshold
        return a > bar

    def _init_is_better(self, mode: str, threshold: float, threshold_mode: str) -> None:
        """Check and store the comparison settings; the worst value is +inf for "min"."""
        worst = {"min": math.inf, "max": -math.inf}
        if mode not in worst:
            raise ValueError(f"mode {mode} is unknown!")
        if threshold_mode not in ("rel", "abs"):
            raise ValueError(f"threshold mode {threshold_mode} is unknown!")
        vars(self).update(mode_worse=worst[mode], mode=mode, threshold=threshold,
                          threshold_mode=threshold_mode)

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        vars(self).update(state_dict)
        self._init_is_better(self.mode, self.threshold, self.threshold_mode)


# -------------------------------------------------------------------- cyclic schedules

def _momentum_key(optimizer) -> str:
    """"betas" (beta1 is cycled) or "momentum"; error if the optimizer has neither."""
    if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
        raise ValueError(_NO_MOMENTUM)
    return "betas" if "betas" in optimizer.defaults else "momentum"


def _set_momentum(group: dict, value, use_beta1: bool) -> None:
    if use_beta1:
        group["betas"] = (value, *group["betas"][1:])
    else:
        group["momentum"] = value


def _start_momentum(sched, optimizer, low, high, last_epoch) -> tuple:
    """Momentum cycling setup shared by CyclicLR and OneCycleLR: sets ``use_beta1`` and, on a
    fresh start, puts every group at its high momentum and records both ends in the group."""
    sched.use_beta1 = _momentum_key(optimizer) == "betas"
    lows = _format_param("base_momentum", optimizer, low)
    highs = _format_param("max_momentum", optimizer, high)
    if last_epoch == -1:
        for group, lo, hi in zip(optimizer.param_groups, lows, highs):
            _set_momentum(group, hi, sched.use_beta1)
            group.update(max_momentum=hi, base_momentum=lo)
    return lows, highs


_SCALE_MODE = {"triangular": "cycle", "triangular2": "cycle", "exp_range": "iterations"}


class CyclicLR(LRScheduler):
    """Cycle lr between base_lr and max_lr (momentum in the opposite direction).

    With c = floor(1 + epoch / total) and x = 1 + epoch / total - c, the height is
    x / step_ratio on the way up and (x - 1) / (step_ratio - 1) on the way down, and
    lr = base_lr + (max_lr - base_lr) * height * scale_fn(c or epoch).
    Modes: triangular (scale 1), triangular2 (halve every cycle), exp_range (gamma ** epoch).
    """

    def __init__(self, optimizer, base_lr, max_lr, step_size_up: int = 2000,
                 step_size_down: int | None = None, mode: str = "triangular",
                 gamma: float = 1.0, scale_fn=None, scale_mode: str = "cycle",
                 cycle_momentum: bool = True, base_momentum=0.8, max_momentum=0.9,
                 last_epoch: int = -1) -> None:
        _check_optimizer(optimizer)
        lows = _format_param("base_lr", optimizer, base_lr)
        if last_epoch == -1:
            for group, lr in zip(optimizer.param_groups, lows):
                _set_group_value(group, "lr", lr)
        up = float(step_size_up)
        down = up if step_size_down is None else float(step_size_down)
        if scale_fn is None and mode not in _SCALE_MODE:
            raise ValueError("mode is invalid and scale_fn is None")
        vars(self).update(max_lrs=_format_param("max_lr", optimizer, max_lr),
                          total_size=up + down, step_ratio=up / (up + down), mode=mode,
                          gamma=gamma, _scale_fn_ref=None, _scale_fn_custom=scale_fn,
                          scale_mode=scale_mode)
        self._init_scale_fn()
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            self.base_momentums, self.max_momentums = _start_momentum(
                self, optimizer, base_momentum, max_momentum, last_epoch)
        LRScheduler.__init__(self, optimizer, last_epoch)
        self.base_lrs = lows

    def _init_scale_fn(self) -> None:
        """The built-in scale function of ``mode`` (a custom ``scale_fn`` takes precedence)."""
        if self._scale_fn_custom is None and self.mode in _SCALE_MODE:
            self.scale_mode = _SCALE_MODE[self.mode]
            self._scale_fn_ref = functools.partial(_exp_range_scale, self.gamma) \
                if self.mode == "exp_range" else \
                (_triangular_scale if self.mode == "triangular" else _triangular2_scale)

    def scale_fn(self, x) -> float:
        custom = self._scale_fn_custom
        return (self._scale_fn_ref if custom is None else custom)(x)

    def get_lr(self) -> list:
        self._warn_outside_step()
        progress = self.last_epoch / self.total_size       # in cycles
        cycle = math.floor(1 + progress)
        x = 1.0 + progress - cycle                          # position within the cycle
        rising = x <= self.step_ratio
        height = x / self.step_ratio if rising else (x - 1) / (self.step_ratio - 1)
        scale = self.scale_fn(cycle if self.scale_mode == "cycle" else self.last_epoch)
        if self.cycle_momentum:
            for group, lo, hi in zip(self.optimizer.param_groups, self.base_momentums,
                                     self.max_momentums):
                _set_momentum(group, hi - (hi - lo) * height * scale, self.use_beta1)
        return [lo + (hi - lo) * height * scale for lo, hi in zip(self.base_lrs, self.max_lrs)]

    def state_dict(self) -> dict[str, Any]:
        state = _state_without(self, "optimizer", "_scale_fn_ref", "_scale_fn_custom")
        custom = self._scale_fn_custom
        state["_scale_fn_custom"] = None if custom is None else _callable_state(custom)
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        saved = state_dict.pop("_scale_fn_custom")
        super().load_state_dict(state_dict)
        if saved is not None:
            self._scale_fn_custom.__dict__.update(saved)
        self._init_scale_fn()


def _triangular_scale(x) -> float:
    return 1.0


def _triangular2_scale(x) -> float:
    return 1 / (2.0 ** (x - 1))


def _exp_range_scale(gamma, x) -> float:
    return gamma ** x


def _cos_anneal(start, end, pct):
    """Cosine from start (pct=0) to end (pct=1)."""
    return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)


def _linear_anneal(start, end, pct):
    return (end - start) * pct + start


class OneCycleLR(LRScheduler):
    """The 1cycle policy: initial_lr = max_lr / div_factor warms up to max_lr, then anneals
    to min_lr = initial_lr / final_div_factor (momentum moves the opposite way).

    Phases end at pct_start * total_steps - 1 and total_steps - 1; with ``three_phase`` the
    lr first returns to initial_lr (ending at 2 * pct_start * total_steps - 2) and then
    falls to min_lr. Within a phase: lr = anneal(start, end, steps_in_phase / phase_len).
    """

    def __init__(self, optimizer, max_lr, total_steps: int | None = None,
                 epochs: int | None = None, steps_per_epoch: int | None = None,
                 pct_start: float = 0.3, anneal_strategy: str = "cos",
                 cycle_momentum: bool = True, base_momentum=0.85, max_momentum=0.95,
                 div_factor: float = 25.0, final_div_factor: float = 1e4,
                 three_phase: bool = False, last_epoch: int = -1) -> None:
        _check_optimizer(optimizer)
        self.optimizer = optimizer
        if total_steps is None and (epochs is None or steps_per_epoch is None):
            raise ValueError("You must define either total_steps OR (epochs AND steps_per_epoch)")
        if total_steps is None:
            _check_positive_int("epochs", epochs)
            _check_positive_int("steps_per_epoch", steps_per_epoch)
            total_steps = epochs * steps_per_epoch
        else:
            _check_positive_int("total_steps", total_steps)
        if not (isinstance(pct_start, float) and 0 <= pct_start <= 1):
            raise ValueError(f"Expected float between 0 and 1 pct_start, but got {pct_start}")
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError("anneal_strategy must be one of 'cos' or 'linear', "
                             f"instead got {anneal_strategy}")
        vars(self).update(total_steps=total_steps,
                          _schedule_phases=_one_cycle_phases(total_steps, pct_start, three_phase),
                          _anneal_func_type=anneal_strategy, cycle_momentum=cycle_momentum)
        if last_epoch == -1:
            for group, peak in zip(optimizer.param_groups,
                                   _format_param("max_lr", optimizer, max_lr)):
                start = peak / div_factor
                group.update(initial_lr=start, max_lr=peak, min_lr=start / final_div_factor)
        if cycle_momentum:
            _start_momentum(self, optimizer, base_momentum, max_momentum, last_epoch)
        LRScheduler.__init__(self, optimizer, last_epoch)

    def _anneal_func(self, start, end, pct):
        return (_cos_anneal if self._anneal_func_type == "cos" else _linear_anneal)(start, end, pct)

    def get_lr(self) -> list:
        self._warn_outside_step()
        step = self.last_epoch
        if step > self.total_steps:
            raise ValueError(f"Tried to step {step} times. The specified number of total "
                             f"steps is {self.total_steps}")
        # the phase holding `step` (the last phase takes any overshoot) and where it begins
        begin, last = 0.0, len(self._schedule_phases) - 1
        for i, phase in enumerate(self._schedule_phases):
            if step <= phase["end_step"] or i == last:
                break
            begin = phase["end_step"]
        pct = (step - begin) / (phase["end_step"] - begin)
        lrs = []
        for group in self.optimizer.param_groups:
            lrs.append(self._anneal_func(group[phase["start_lr"]], group[phase["end_lr"]], pct))
            if self.cycle_momentum:
                m = self._anneal_func(group[phase["start_momentum"]],
                                      group[phase["end_momentum"]], pct)
                _set_momentum(group, m, self.use_beta1)
        return lrs


def _check_positive_int(name: str, value) -> None:
    if value <= 0 or not isinstance(value, int):
        raise ValueError(f"Expected positive integer {name}, but got {value}")


_PHASE_KEYS = ("end_step", "start_lr", "end_lr", "start_momentum", "end_momentum")


def _one_cycle_phases(total: int, pct_start: float, three_phase: bool) -> list:
    """The phases of the 1cycle policy as torch saves them: where each ends (a step index)
    and which group entries its lr and momentum run between."""
    warm_end = float(pct_start * total) - 1
    if three_phase:
        rows = [(warm_end, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                (float(2 * pct_start * total) - 2, "max_lr", "initial_lr", "base_momentum",
                 "max_momentum"),
                (total - 1, "initial_lr", "min_lr", "max_momentum", "max_momentum")]
    else:
        rows = [(warm_end, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                (total - 1, "max_lr", "min_lr", "base_momentum", "max_momentum")]
    return [dict(zip(_PHASE_KEYS, row)) for row in rows]
