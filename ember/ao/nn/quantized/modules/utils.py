"""Helpers shared by the quantized modules (torch.ao.nn.quantized.modules.utils)."""
from __future__ import annotations

import itertools

import ember

__all__ = ["WeightedQuantizedModule"]


class WeightedQuantizedModule(ember.nn.Module):
    """Base of quantized modules with weights that reference modules convert into."""

    @classmethod
    def from_reference(cls, ref_module, output_scale, output_zero_point):
        raise NotImplementedError


def _output_qparams(mod):
    """(scale, zero_point) of the observer on float module ``mod``'s output, as Python
    numbers."""
    scale, zero_point = mod.activation_post_process.calculate_qparams()
    return float(scale), int(zero_point)


def _ntuple_from_first(n):
    """Parse a value (or the first element of a sequence) into an ``n``-tuple."""
    def parse(x):
        while isinstance(x, (list, tuple)) and len(x) and isinstance(x[0], (list, tuple)):
            x = x[0]
        if isinstance(x, (list, tuple)):
            return tuple(x)
        return tuple(itertools.repeat(x, n))
    return parse


_pair_from_first = _ntuple_from_first(2)
