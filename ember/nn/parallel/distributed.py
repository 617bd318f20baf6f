"""The import path of DistributedDataParallel; ember has no torch.distributed yet."""
from __future__ import annotations

from ember.nn.modules.module import Module

__all__ = ["DistributedDataParallel"]


class DistributedDataParallel(Module):
    """Not built yet: constructing one raises NotImplementedError."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0, *args, **kwargs):
        raise NotImplementedError("DistributedDataParallel needs torch.distributed (process "
                                  "groups, collectives), which ember does not implement yet")
