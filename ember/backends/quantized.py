"""torch.backends.quantized: which engine's arithmetic quantized kernels reproduce.

ember's quantized kernels compute the integers of torch's x86/fbgemm engine; 'qnnpack' and
'onednn' may be selected (scripts set them) and run the same kernels. The engine also picks
the default qconfigs (``ember.ao.quantization.get_default_qconfig``)."""
from __future__ import annotations

import sys
import types

_ENGINES = ("qnnpack", "onednn", "x86", "fbgemm")


class _QuantizedBackend(types.ModuleType):
    supported_engines = list(_ENGINES)
    _engine = "x86"

    @property
    def engine(self):
        return self._engine

    @engine.setter
    def engine(self, value):
        if value == "none":
            raise RuntimeError("quantized engine NoQEngine is not supported")
        if value not in _ENGINES:
            raise RuntimeError(f"{value} is not a valid value for quantized engine")
        type(self)._engine = value


_module = sys.modules[__name__]
_replacement = _QuantizedBackend(__name__, __doc__)
_replacement.__dict__.update({k: v for k, v in _module.__dict__.items()
                              if k not in ("__class__",)})
sys.modules[__name__] = _replacement
