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


class Requantizing:
    """Mixin of the quantized form of a float module whose output is put on its own grid:
    ``from_float`` reads that grid from the float module's output observer,
    ``from_reference`` is given it; a subclass says how to rebuild itself from the float
    module in ``_rebuild(mod, scale, zero_point) -> constructor arguments``."""

    @classmethod
    def _rebuild(cls, mod, scale, zero_point):
        return scale, zero_point

    @classmethod
    def from_reference(cls, mod, scale, zero_point):
        return cls(*cls._rebuild(mod, float(scale), int(zero_point)))

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        return cls.from_reference(mod, *_output_qparams(mod))

    def _get_name(self):
        return "Quantized" + type(self).__name__


def _qparam_buffers(mod, scale, zero_point):
    """``scale`` / ``zero_point`` as buffers (saved in the state_dict)."""
    mod.register_buffer("scale", ember.tensor(scale))
    mod.register_buffer("zero_point", ember.tensor(zero_point))


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
