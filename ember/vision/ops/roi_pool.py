"""RoIPool: the max positions are found in NumPy, the values gathered with ember ops, so the
result is differentiable with respect to ``input``."""
import math

import numpy as np

import ember

from ._utils import OpModule, _pair, as_rois

__all__ = ["roi_pool", "RoIPool"]


def _round(v):
    # std::round: half away from zero
    return int(math.floor(v + 0.5)) if v >= 0 else -int(math.floor(-v + 0.5))


def roi_pool(input, boxes, output_size, spatial_scale=1.0):
    rois = as_rois(boxes)
    N, C, H, W = input.shape
    PH, PW = _pair(output_size)
    K = rois.shape[0]
    x = input.detach().numpy()
    r = rois.detach().numpy()
    idx = np.zeros((K, C, PH, PW), dtype=np.int64)
    mask = np.zeros((K, C, PH, PW), dtype=bool)
    cbase = np.arange(C, dtype=np.int64) * (H * W)
    for k in range(K):
        b = int(r[k, 0])
        sw, sh = _round(float(r[k, 1]) * spatial_scale), _round(float(r[k, 2]) * spatial_scale)
        ew, eh = _round(float(r[k, 3]) * spatial_scale), _round(float(r[k, 4]) * spatial_scale)
        rw, rh = max(ew - sw + 1, 1), max(eh - sh + 1, 1)
        bh, bw = np.float32(rh) / np.float32(PH), np.float32(rw) / np.float32(PW)
        for ph in range(PH):
            hs = min(max(int(math.floor(ph * bh)) + sh, 0), H)
            he = min(max(int(math.ceil((ph + 1) * bh)) + sh, 0), H)
            for pw in range(PW):
                ws = min(max(int(math.floor(pw * bw)) + sw, 0), W)
                we = min(max(int(math.ceil((pw + 1) * bw)) + sw, 0), W)
                if he <= hs or we <= ws:
                    continue
                region = x[b, :, hs:he, ws:we].reshape(C, -1)
                a = region.argmax(1)
                hh, ww = a // (we - ws) + hs, a % (we - ws) + ws
                idx[k, :, ph, pw] = b * C * H * W + cbase + hh * W + ww
                mask[k, :, ph, pw] = True
    flat = input.reshape(-1)
    out = flat[ember.from_numpy(idx.reshape(-1))].reshape(K, C, PH, PW)
    if not mask.all():
        out = out * ember.from_numpy(mask).to(input.dtype)
    return out


class RoIPool(OpModule):
    _fields = ("output_size", "spatial_scale")
    op = staticmethod(roi_pool)

    def __init__(self, output_size, spatial_scale):
        super().__init__()
        self.output_size, self.spatial_scale = output_size, spatial_scale
