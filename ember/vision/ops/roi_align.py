"""RoIAlign. Bilinear sampling is separable, so each RoI's output is A_y @ x[b] @ A_x^T with
small interpolation matrices built in NumPy: written in ember matmuls, so it is differentiable
with respect to ``input`` (not to the boxes, as in torchvision)."""
import math

import numpy as np

import ember

from ._utils import OpModule, _pair, as_rois

__all__ = ["roi_align", "RoIAlign"]


def _axis_weights(start, bin_size, grid, pooled, size, dtype):
    """[pooled, size] matrix: summed bilinear weights of each input row/column per output bin."""
    A = np.zeros((pooled, size), dtype=np.float64)
    p = np.arange(pooled, dtype=dtype)[:, None]
    i = np.arange(grid, dtype=dtype)[None, :]
    c = dtype.type(start) + p * dtype.type(bin_size) + (i + dtype.type(0.5)) * dtype.type(bin_size) / dtype.type(grid)
    valid = ~((c < -1.0) | (c > size))
    c = np.where(c <= 0, dtype.type(0), c)
    low = c.astype(np.int64)
    top = low >= size - 1
    low = np.where(top, size - 1, low)
    high = np.where(top, size - 1, low + 1)
    c = np.where(top, low.astype(dtype), c)
    lw = (c - low).astype(np.float64)
    hw = 1.0 - lw
    rows = np.broadcast_to(np.arange(pooled)[:, None], c.shape)
    np.add.at(A, (rows[valid], low[valid]), hw[valid])
    np.add.at(A, (rows[valid], high[valid]), lw[valid])
    return A


def roi_align(input, boxes, output_size, spatial_scale=1.0, sampling_ratio=-1, aligned=False):
    rois = as_rois(boxes)
    N, C, H, W = input.shape
    PH, PW = _pair(output_size)
    K = rois.shape[0]
    if K == 0:
        return input.new_zeros((0, C, PH, PW))
    npdt = np.dtype(np.float64) if input.dtype == ember.float64 else np.dtype(np.float32)
    r = rois.detach().numpy().astype(npdt)
    offset = npdt.type(0.5) if aligned else npdt.type(0.0)
    scale = npdt.type(spatial_scale)
    Ays, Axs = [], []
    for k in range(K):
        sw = r[k, 1] * scale - offset
        sh = r[k, 2] * scale - offset
        ew = r[k, 3] * scale - offset
        eh = r[k, 4] * scale - offset
        rw, rh = ew - sw, eh - sh
        if not aligned:
            rw = max(rw, npdt.type(1.0))
            rh = max(rh, npdt.type(1.0))
        bh = npdt.type(rh / npdt.type(PH))
        bw = npdt.type(rw / npdt.type(PW))
        gh = sampling_ratio if sampling_ratio > 0 else int(math.ceil(rh / npdt.type(PH)))
        gw = sampling_ratio if sampling_ratio > 0 else int(math.ceil(rw / npdt.type(PW)))
        count = max(gh * gw, 1)
        Ay = _axis_weights(sh, bh, gh, PH, H, npdt) / count if gh > 0 else np.zeros((PH, H))
        Ax = _axis_weights(sw, bw, gw, PW, W, npdt) if gw > 0 else np.zeros((PW, W))
        Ays.append(Ay)
        Axs.append(Ax)
    Ay = ember.from_numpy(np.stack(Ays).astype(npdt))
    Ax = ember.from_numpy(np.stack(Axs).astype(npdt))
    if input.dtype not in (ember.float32, ember.float64):
        Ay, Ax = Ay.to(input.dtype), Ax.to(input.dtype)
    bidx = r[:, 0].astype(np.int64)
    pieces, order = [], []
    for b in np.unique(bidx):
        sel = np.nonzero(bidx == b)[0]
        t = ember.from_numpy(sel)
        xb = input[int(b)]                                   # C, H, W
        y = ember.matmul(Ay[t][:, None], xb[None])           # k, C, PH, W
        y = ember.matmul(y, Ax[t].transpose(1, 2)[:, None])  # k, C, PH, PW
        pieces.append(y)
        order.append(sel)
    result = ember.cat(pieces, 0)
    order = np.concatenate(order)
    if not np.array_equal(order, np.arange(K)):
        inv = np.empty_like(order)
        inv[order] = np.arange(K)
        result = result[ember.from_numpy(inv)]
    return result


class RoIAlign(OpModule):
    _fields = ("output_size", "spatial_scale", "sampling_ratio", "aligned")
    op = staticmethod(roi_align)

    def __init__(self, output_size, spatial_scale, sampling_ratio, aligned=False):
        super().__init__()
        self.output_size, self.spatial_scale = output_size, spatial_scale
        self.sampling_ratio, self.aligned = sampling_ratio, aligned
