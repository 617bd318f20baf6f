"""numba kernel for randperm's swap loop (torch's Fisher-Yates), imported only through
ember._kernels.random when numba is present and not switched off."""
from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def fisher_yates(offsets):
    """0..n-1 (n = offsets.size + 1) with r[i] swapped for r[i + offsets[i]], i ascending."""
    n = offsets.size + 1
    r = np.arange(n)
    for i in range(n - 1):
        j = i + offsets[i]
        t = r[i]
        r[i] = r[j]
        r[j] = t
    return r
