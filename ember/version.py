"""torch.version: build facts. ember is a NumPy build: no CUDA, HIP, ROCm or XPU."""
from __future__ import annotations

from ember import __version__

__all__ = ["__version__", "cuda", "hip", "rocm", "xpu", "debug", "git_version"]

cuda = None
hip = None
rocm = None
xpu = None
debug = False
git_version = "unknown"
