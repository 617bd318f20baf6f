"""``torch.utils.dlpack``: tensors to and from DLPack capsules (CPU memory, zero copy)."""
from __future__ import annotations

import enum

from ember._creation import from_dlpack

__all__ = ["DLDeviceType", "from_dlpack", "to_dlpack"]


class DLDeviceType(enum.IntEnum):
    """DLPack's device codes (``__dlpack_device__()[0]``); ember's tensors are kDLCPU."""
    kDLCPU = 1
    kDLCUDA = 2
    kDLCUDAHost = 3
    kDLOpenCL = 4
    kDLVulkan = 7
    kDLMetal = 8
    kDLVPI = 9
    kDLROCM = 10
    kDLROCMHost = 11
    kDLExtDev = 12
    kDLCUDAManaged = 13
    kDLOneAPI = 14
    kDLWebGPU = 15
    kDLHexagon = 16
    kDLMAIA = 17


def to_dlpack(tensor):
    """A DLPack capsule ("dltensor") viewing ``tensor``'s memory; unlike
    ``Tensor.__dlpack__`` a tensor that requires grad is exported too (its data)."""
    return tensor.detach().__dlpack__()
