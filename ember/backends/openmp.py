"""torch.backends.openmp: ember runs no OpenMP kernels of its own."""
from __future__ import annotations

__all__ = ["is_available"]


def is_available():
    """Whether ember was built with OpenMP: no (threading is NumPy's BLAS pool)."""
    return False
