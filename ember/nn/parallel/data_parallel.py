"""DataParallel as torch's behaves without GPUs: the wrapped module runs as is."""
from __future__ import annotations

from ember.nn.modules.module import Module

__all__ = ["DataParallel", "data_parallel"]


class DataParallel(Module):
    """Wraps ``module`` (kept as ``self.module``, so state_dict keys gain the ``module.``
    prefix); with no accelerator, forward calls it directly and ``device_ids`` is empty."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0):
        super().__init__()
        self.module = module
        self.device_ids = []

    def forward(self, *inputs, **kwargs):
        return self.module(*inputs, **kwargs)


def data_parallel(module, inputs, device_ids=None, output_device=None, dim=0,
                  module_kwargs=None):
    """The functional form: torch cannot pick a device type without an accelerator."""
    raise RuntimeError("device type could not be determined")
