"""Kernels of ATen's internal ops (ember/_ops/aten.py). NumPy only."""
from __future__ import annotations

import numpy as np

from ember._kernels.util import wrap_dim


def slice_view(a, dim=0, start=None, end=None, step=1):
    """``a[..., start:end:step, ...]`` along ``dim``: a view (NumPy clamps like torch)."""
    if step <= 0:
        raise RuntimeError("slice step must be positive")
    d = wrap_dim(dim, max(a.ndim, 1))
    return a[(slice(None),) * d + (slice(start, end, step),)]


def max_pool2d_with_indices_backward(grad_output, self, kernel_size, stride, padding,
                                     dilation, ceil_mode, indices):
    """Sums each output gradient into the input position its index names (flat over each
    plane of ``self``); accumulated in float64."""
    plane = self.shape[-2] * self.shape[-1]
    planes = int(np.prod(self.shape[:-2], dtype=np.int64))
    grad = np.asarray(grad_output).reshape(planes, -1)
    where = np.asarray(indices).reshape(planes, -1) + np.arange(planes)[:, None] * plane
    total = np.bincount(where.ravel(), weights=grad.ravel().astype(np.float64),
                        minlength=planes * plane)
    return total.reshape(self.shape).astype(grad.dtype)
