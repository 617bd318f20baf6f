"""``ember.linalg``: torch.linalg on NumPy/LAPACK (records and fronts in ember/_ops/linalg.py)."""
from ember._ops.linalg import LINALG as _LINALG

globals().update(_LINALG)
__all__ = sorted(_LINALG)
from ember._kernels.linalg import LinAlgError  # noqa: E402,F401
