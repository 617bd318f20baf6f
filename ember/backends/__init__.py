"""torch.backends: flags and availability probes for the native backends torch can use.

ember computes everything with NumPy on the CPU, so no accelerator backend (cuDNN, MPS,
CUDA) is available; their flags still exist, hold torch's defaults and can be set (they are
recorded and have no effect), so training scripts that tune them run unchanged.
"""
from __future__ import annotations

from ember.backends import cpu, cuda, cudnn, mkl, mkldnn, mps, openmp, opt_einsum  # noqa: F401
from ember.backends import quantized  # noqa: F401

__all__ = ["cpu", "cuda", "cudnn", "mkl", "mkldnn", "mps", "openmp", "opt_einsum", "quantized",
           "disable_global_flags", "flags_frozen"]

_flags_frozen = False


def disable_global_flags():
    """Forbid changing backend flags by assignment (torch's test-suite helper)."""
    global _flags_frozen
    _flags_frozen = True


def flags_frozen():
    return _flags_frozen

