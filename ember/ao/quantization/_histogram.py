"""HistogramObserver: a histogram of everything seen (``bins`` bins over the running
[min, max]); its qparams come from the sub-range that minimises the L2 error of quantizing
the histogram onto ``2**bits`` levels.

How the pieces work (ember's reading of torch's documented design, checked value for value
against torch on random data):

- the first batch sets ``min_val``/``max_val`` and ``histogram = histc(x, bins, min, max)``;
- a later batch widening the range re-bins the old histogram into the new range: each old
  bin is split into ``upsample_rate`` equal parts whose mid-points are placed in the new bins
  (``bucketize``), weighted by an equal share of the old count; then the new batch's
  ``histc`` over the new range is added;
- the search (:meth:`HistogramObserver._trimmed_range`) walks the range inwards from both
  ends, trimming the side that gives up more bins, in steps of 1e-5 of the total mass,
  while the rounding error (:meth:`HistogramObserver._range_error`) keeps falling.
"""
from __future__ import annotations

import warnings

import numpy as np

import ember
from ember.ao.quantization.observer import UniformQuantizationObserverBase, _EPS

__all__ = ["HistogramObserver", "default_histogram_observer"]

_F32 = np.float32
_BITS = {"quint8": 8, "qint8": 8, "uint8": 8, "int8": 8, "quint4x2": 4, "qint32": 32,
         "int32": 32, "int16": 16, "uint16": 16}


class HistogramObserver(UniformQuantizationObserverBase):
    """Histogram observer (per tensor). Buffers: ``histogram`` [bins], ``min_val``,
    ``max_val`` (0-dim)."""
    histogram: ember.Tensor
    min_val: ember.Tensor
    max_val: ember.Tensor

    def __init__(self, bins=2048, dtype=ember.quint8, qscheme=ember.per_tensor_affine,
                 reduce_range=False, quant_min=None, quant_max=None, factory_kwargs=None,
                 eps=_EPS, is_dynamic=False, **kwargs):
        if qscheme not in (ember.per_tensor_affine, ember.per_tensor_symmetric):
            raise NotImplementedError("HistogramObserver's qscheme only support "
                                      "torch.per_tensor_symmetric                     and "
                                      "torch.per_tensor_affine.")
        if is_dynamic:
            raise NotImplementedError("HistogramObserver doesn't support dynamic quantization")
        super().__init__(dtype=dtype, qscheme=qscheme, reduce_range=reduce_range,
                         quant_min=quant_min, quant_max=quant_max,
                         factory_kwargs=factory_kwargs, eps=eps, is_dynamic=is_dynamic,
                         **kwargs)
        self.bins = bins
        self.register_buffer("histogram", ember.zeros(self.bins))
        self.register_buffer("min_val", ember.tensor(float("inf")))
        self.register_buffer("max_val", ember.tensor(float("-inf")))
        self.dst_nbins = 2 ** _BITS[str(dtype).replace("torch.", "")]
        self.upsample_rate = 16

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs):
        for name in ("min_val", "max_val"):     # torch reports these twice when missing
            if strict and prefix + name not in state_dict:
                missing_keys.append(prefix + name)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys,
                                      unexpected_keys, error_msgs)

    # ------------------------------------------------------------ observing

    def forward(self, x_orig):
        if x_orig.numel() == 0:
            return x_orig
        x = x_orig.detach()
        x_min, x_max = ember.aminmax(x)
        if float(x_min) == float("-inf") or float(x_max) == float("inf"):
            warnings.warn("torch.inf detected in input tensor, ignoring input")
            x = x[x.abs() != float("inf")]
            if x.numel() == 0:
                return x_orig
            x_min, x_max = ember.aminmax(x)
        if float(self.min_val) == float("inf") or float(self.max_val) == float("-inf"):
            self.min_val.copy_(x_min)
            self.max_val.copy_(x_max)
            self.histogram.copy_(ember.histc(x, self.bins, min=float(x_min), max=float(x_max)))
            return x_orig
        old_min, old_max = float(self.min_val), float(self.max_val)
        new_min = ember.minimum(self.min_val, x_min)
        new_max = ember.maximum(self.max_val, x_max)
        lo, hi = float(new_min), float(new_max)
        update = ember.histc(x, self.bins, min=lo, max=hi)
        if lo == old_min and hi == old_max:
            combined = self.histogram + update
        elif old_min == old_max:
            # the old histogram is one value: all of its mass goes to that value's new bin
            point = ember.tensor(old_min)
            combined = update + ember.histc(point, self.bins, min=lo, max=hi) * \
                ember.sum(self.histogram)
        else:
            combined = update + self._rebin(self.histogram, old_min, old_max, lo, hi)
        self.histogram.copy_(combined)
        self.min_val.copy_(new_min)
        self.max_val.copy_(new_max)
        return x_orig

    def _rebin(self, hist, old_min, old_max, new_min, new_max):
        """``hist`` over [old_min, old_max] re-binned onto ``bins`` bins over
        [new_min, new_max] (old bins split ``upsample_rate`` ways, placed by mid-point)."""
        n = self.bins * self.upsample_rate
        parts = hist.repeat_interleave(self.upsample_rate) / self.upsample_rate
        width = (old_max - old_min) / n
        mids = ember.linspace(old_min, old_max, n + 1)[:-1] + 0.5 * width
        edges = ember.linspace(new_min, new_max, self.bins + 1)
        where = ember.bucketize(mids, edges, right=True) - 1
        where = ember.clamp(where, 0, self.bins - 1)
        return ember.bincount(where, weights=parts, minlength=self.bins)

    # ------------------------------------------------------------ the range search
    # calculate_qparams does not take [min_val, max_val] as it is: it trims the histogram's
    # tails while that lowers the squared error of rounding the kept mass onto the
    # dst_nbins levels of the trimmed range (each step trims 1e-5 of the mass from the side
    # that gives up more bins). Arithmetic in float32 tensors, in the order torch's observer
    # was measured to use, so the chosen range (and the qparams) equal torch's.

    def _range_error(self, first, last):
        """Squared rounding error of the histogram when levels span bins first..last (mass
        outside goes to the end levels): per source bin, the part in its left edge's level,
        the whole levels it covers, and the part in its right edge's level."""
        width = (float(self.max_val) - float(self.min_val)) / self.bins
        step = width * (last - first + 1) / self.dst_nbins
        if step == 0.0:
            return 0.0
        half = step / 2
        top = self.dst_nbins - 1
        left = (ember.arange(self.bins) - first) * width     # bin edges, from level 0's start
        right = left + width
        level_left = ember.clamp(ember.div(left, step, rounding_mode="floor"), 0, top)
        level_right = ember.clamp(ember.div(right, step, rounding_mode="floor"), 0, top)
        density = self.histogram / width
        error = _squared_mass(left - (level_left + 0.5) * step, ember.ones(self.bins) * half,
                              density)
        error = error + (level_right - level_left - 1) * _squared_mass(
            ember.tensor(-half), ember.tensor(half), density)
        error = error + _squared_mass(ember.tensor(-half), right - (level_right * step + half),
                                      density)
        return error.sum().item()

    def _trimmed_range(self):
        """(new_min, new_max): 0-dim tensors of the error-minimising sub-range."""
        if self.histogram.shape[0] != self.bins:
            raise AssertionError("bins mismatch")
        total = ember.sum(self.histogram).item()
        running = ember.cumsum(self.histogram, dim=0).tolist()     # float32 values
        first, last = 0, self.bins - 1
        cut_low, cut_high = 0.0, 1.0          # mass fractions trimmed so far, from each side
        best = float("inf")
        while cut_low < cut_high:
            try_low, try_high = cut_low + 1e-5, cut_high - 1e-5
            # the running sums (float32) against the bounds rounded to float32
            low_bound, high_bound = _F32(try_low * total), _F32(try_high * total)
            lo = first
            while lo < last and running[lo] <= low_bound:
                lo += 1
            hi = last
            while hi > first and running[hi] >= high_bound:
                hi -= 1
            if lo - first > last - hi:
                candidate, cut_low = (lo, last), try_low
            else:
                candidate, cut_high = (first, hi), try_high
            if candidate == (first, last):
                continue
            error = self._range_error(*candidate)
            if error > best:
                break
            best = error
            first, last = candidate
        width = (self.max_val - self.min_val) / self.bins
        return self.min_val + width * first, self.min_val + width * (last + 1)

    def calculate_qparams(self):
        if float(self.min_val) == float("inf") and float(self.max_val) == float("-inf"):
            warnings.warn("must run observer before calling calculate_qparams." + " " * 36 +
                          "Returning default scale and zero point ", stacklevel=2)
            return ember.tensor([1.0]), ember.tensor([0])
        if self.bins != len(self.histogram):
            raise AssertionError("The number of bins in histogram should be equal to the "
                                 "number of bins supplied while making this observer")
        new_min, new_max = self._trimmed_range()
        return self._calculate_qparams(new_min, new_max)

    def extra_repr(self):
        return f"min_val={self.min_val}, max_val={self.max_val}"

    def reset_min_max_vals(self):
        self.min_val.copy_(ember.tensor(float("inf")))
        self.max_val.copy_(ember.tensor(float("-inf")))
        self.histogram.zero_()


def _squared_mass(a, b, density):
    """``density`` times the integral of x**2 over [a, b]."""
    return density * ((b * b * b - a * a * a) / 3)


HistogramObserver.__module__ = "ember.ao.quantization.observer"
default_histogram_observer = HistogramObserver.with_args(quant_min=0, quant_max=127)
