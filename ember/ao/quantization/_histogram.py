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
- the search (:meth:`HistogramObserver._non_linear_param_search`) walks the range inwards
  from both ends, cutting off the side holding fewer values, in steps of 1e-5 of the total
  mass, while the quantization error (:meth:`_compute_quantization_error`) keeps falling.
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
                                      "torch.per_tensor_symmetric and torch.per_tensor_affine.")
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

    @staticmethod
    def _get_norm(delta_begin, delta_end, density):
        """L2 error of a uniform density over [delta_begin, delta_end] around a level."""
        return density * ((delta_end * delta_end * delta_end -
                           delta_begin * delta_begin * delta_begin) / 3)

    def _compute_quantization_error(self, next_start_bin, next_end_bin):
        """Error of quantizing the histogram onto ``dst_nbins`` levels spanning the source
        bins ``next_start_bin..next_end_bin``."""
        bin_width = (float(self.max_val) - float(self.min_val)) / self.bins
        dst_bin_width = bin_width * (next_end_bin - next_start_bin + 1) / self.dst_nbins
        if dst_bin_width == 0.0:
            return 0.0
        src_bin = ember.arange(self.bins)
        src_begin = (src_bin - next_start_bin) * bin_width
        src_end = src_begin + bin_width
        dst_of_begin = ember.clamp(ember.div(src_begin, dst_bin_width, rounding_mode="floor"),
                                   0, self.dst_nbins - 1)
        dst_of_begin_center = (dst_of_begin + 0.5) * dst_bin_width
        dst_of_end = ember.clamp(ember.div(src_end, dst_bin_width, rounding_mode="floor"),
                                 0, self.dst_nbins - 1)
        density = self.histogram / bin_width
        norm = ember.zeros(self.bins)
        delta_begin = src_begin - dst_of_begin_center
        norm += self._get_norm(delta_begin, ember.ones(self.bins) * (dst_bin_width / 2), density)
        norm += (dst_of_end - dst_of_begin - 1) * self._get_norm(
            ember.tensor(-dst_bin_width / 2), ember.tensor(dst_bin_width / 2), density)
        dst_of_end_center = dst_of_end * dst_bin_width + dst_bin_width / 2
        norm += self._get_norm(ember.tensor(-dst_bin_width / 2), src_end - dst_of_end_center,
                               density)
        return norm.sum().item()

    def _non_linear_param_search(self):
        """(new_min, new_max): 0-dim tensors of the error-minimising sub-range."""
        if self.histogram.shape[0] != self.bins:
            raise AssertionError("bins mismatch")
        bin_width = (self.max_val - self.min_val) / self.bins
        total = ember.sum(self.histogram).item()
        csum = ember.cumsum(self.histogram, dim=0).tolist()      # float32 values
        stepsize = 1e-5
        alpha, beta = 0.0, 1.0
        start_bin, end_bin = 0, self.bins - 1
        norm_min = float("inf")
        while alpha < beta:
            next_alpha, next_beta = alpha + stepsize, beta - stepsize
            # torch compares float32 sums against the bound rounded to float32
            lo_bound, hi_bound = _F32(next_alpha * total), _F32(next_beta * total)
            left, right = start_bin, end_bin
            while left < end_bin and csum[left] <= lo_bound:
                left += 1
            while right > start_bin and csum[right] >= hi_bound:
                right -= 1
            next_start, next_end = start_bin, end_bin
            if (left - start_bin) > (end_bin - right):
                next_start, alpha = left, next_alpha
            else:
                next_end, beta = right, next_beta
            if next_start == start_bin and next_end == end_bin:
                continue
            norm = self._compute_quantization_error(next_start, next_end)
            if norm > norm_min:
                break
            norm_min = norm
            start_bin, end_bin = next_start, next_end
        new_min = self.min_val + bin_width * start_bin
        new_max = self.min_val + bin_width * (end_bin + 1)
        return new_min, new_max

    def calculate_qparams(self):
        if float(self.min_val) == float("inf") and float(self.max_val) == float("-inf"):
            warnings.warn("must run observer before calling calculate_qparams. Returning "
                          "default scale and zero point ")
            return ember.tensor([1.0]), ember.tensor([0])
        if self.bins != len(self.histogram):
            raise AssertionError("The number of bins in histogram should be equal to the "
                                 "number of bins supplied while making this observer")
        new_min, new_max = self._non_linear_param_search()
        return self._calculate_qparams(new_min, new_max)

    def extra_repr(self):
        return f"min_val={self.min_val}, max_val={self.max_val}"

    def reset_min_max_vals(self):
        self.min_val.copy_(ember.tensor(float("inf")))
        self.max_val.copy_(ember.tensor(float("-inf")))
        self.histogram.zero_()


HistogramObserver.__module__ = "ember.ao.quantization.observer"
default_histogram_observer = HistogramObserver.with_args(quant_min=0, quant_max=127)
