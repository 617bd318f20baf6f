"""Model averagers: ``PeriodicModelAverager(period, warmup_steps)`` averages parameters
every ``period`` steps once ``warmup_steps`` have passed (call ``average_parameters``
after each ``optimizer.step()``)."""
from __future__ import annotations

import warnings
from abc import ABC, abstractmethod

from ember.distributed.algorithms.model_averaging import utils

__all__ = ["ModelAverager", "PeriodicModelAverager"]


class ModelAverager(ABC):
    """Base class: ``process_group`` (default: the world) and the ``step`` counter."""

    def __init__(self, process_group=None):
        import ember.distributed as dist
        self.process_group = process_group if process_group is not None else \
            dist.distributed_c10d._default()
        self.step = 0

    @abstractmethod
    def average_parameters(self, params):
        raise NotImplementedError


class PeriodicModelAverager(ModelAverager):
    """Average when ``step >= warmup_steps`` and ``(step - warmup_steps) % period == 0``,
    then count the step."""

    def __init__(self, period, warmup_steps=0, process_group=None):
        super().__init__(process_group)
        if warmup_steps < 0:
            raise ValueError("Arg ``warmup_steps`` must be a non-negative value.")
        self.warmup_steps = warmup_steps
        if period < 1:
            raise ValueError("Arg ``period`` must be a positive value.")
        if period == 1:
            warnings.warn("When period is 1, no need to use model averaging because the "
                          "communication cost of all-reducing parameters will be no less "
                          "than the cost of all-reducing gradients by "
                          "DistributedDataParallel in the backward pass. Therefore, only "
                          "DistributedDataParallel should be used for this case.",
                          stacklevel=2)
        self.period = period

    def average_parameters(self, params):
        """``params``: ``model.parameters()`` or an optimizer's ``param_groups``."""
        if self.step >= self.warmup_steps and \
                (self.step - self.warmup_steps) % self.period == 0:
            utils.average_parameters_or_parameter_groups(params, self.process_group)
        self.step += 1
