"""ember.utils.tensorboard (torch.utils.tensorboard): SummaryWriter over the optional
``tensorboard`` package (``pip install 'ember[tensorboard]'``), imported lazily."""
from __future__ import annotations

from .writer import SummaryWriter

__all__ = ["SummaryWriter"]
