"""QAT Linear for dynamic quantization (torch.ao.nn.qat.dynamic.Linear): like
``qat.Linear``; its activation fake quantizer (if any) must be dynamic."""
from __future__ import annotations

from ember.ao.nn.qat.modules.linear import Linear as _QATLinear

__all__ = ["Linear"]


class Linear(_QATLinear):
    def __init__(self, in_features, out_features, bias=True, qconfig=None, device=None,
                 dtype=None):
        super().__init__(in_features, out_features, bias, qconfig, device, dtype)
        activation = qconfig.activation() if qconfig is not None else None
        if activation is not None and not getattr(activation, "is_dynamic", False):
            raise ValueError("Dynamic QAT requires a memoryless observer. This means a "
                             "MovingAverage observer with averaging constant equal to 1")
