"""Quantized activations (torch.ao.nn.quantized.modules.activation).

Each maps a quantized tensor ``(*)`` to a quantized tensor ``(*)`` through its
``quantized::`` op. ReLU6 stays on the input's grid; the others land on an output grid
``(scale, zero_point)`` that ``from_float`` reads from the float module's output observer
(see ``Requantizing``). Which grids are buffers and which plain numbers follows torch, so
state_dicts and reprs agree."""
from __future__ import annotations

from typing import Tuple

import ember
from ember import nn
from ember.ao.nn.quantized.modules.utils import Requantizing, _qparam_buffers

__all__ = ["ReLU6", "Hardswish", "ELU", "LeakyReLU", "Sigmoid", "Softmax", "PReLU"]

qops = ember.ops.quantized          # scripted code calls these as quantized:: ops


class _OnOutputGrid(Requantizing):
    """An activation requantized onto ``self.scale`` / ``self.zero_point``."""
    _GRID_IN_STATE_DICT = True      # buffers (saved) rather than plain attributes

    def _set_grid(self, scale, zero_point):
        if self._GRID_IN_STATE_DICT:
            _qparam_buffers(self, scale, zero_point)
        else:
            self.scale, self.zero_point = scale, zero_point

    def _grid(self) -> Tuple[float, int]:
        return float(self.scale), int(self.zero_point)


class ReLU6(nn.ReLU):
    """``clamp(x, 0, 6)`` on the input's own grid; same constructor as ``nn.ReLU``."""

    def forward(self, input):
        return qops.relu6(input, self.inplace)

    def _get_name(self):
        return "QuantizedReLU6"

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        return cls(inplace=mod.inplace)


class Hardswish(_OnOutputGrid, nn.Hardswish):
    """``x * relu6(x + 3) / 6`` onto the output grid."""

    def __init__(self, scale, zero_point, device=None, dtype=None):
        nn.Hardswish.__init__(self)
        self._set_grid(scale, zero_point)

    def forward(self, input):
        out_scale, out_zero_point = self._grid()
        return qops.hardswish(input, out_scale, out_zero_point)


class ELU(_OnOutputGrid, nn.ELU):
    """``x if x > 0 else alpha * (exp(x) - 1)`` onto the output grid."""
    _GRID_IN_STATE_DICT = False

    def __init__(self, scale, zero_point, alpha=1.0):
        nn.ELU.__init__(self, alpha=alpha)
        self._set_grid(scale, zero_point)

    def forward(self, input):
        out_scale, out_zero_point = self._grid()
        return qops.elu(input, out_scale, out_zero_point, self.alpha)

    @classmethod
    def _rebuild(cls, mod, scale, zero_point):
        return scale, zero_point, mod.alpha


class LeakyReLU(_OnOutputGrid, nn.LeakyReLU):
    """``x if x > 0 else negative_slope * x`` onto the output grid."""

    def __init__(self, scale, zero_point, negative_slope=1e-2, inplace=False, device=None,
                 dtype=None):
        nn.LeakyReLU.__init__(self, negative_slope=negative_slope, inplace=inplace)
        self._set_grid(scale, zero_point)

    def forward(self, input):
        out_scale, out_zero_point = self._grid()
        return qops.leaky_relu(input, self.negative_slope, self.inplace, out_scale,
                               out_zero_point)

    @classmethod
    def _rebuild(cls, mod, scale, zero_point):
        return scale, zero_point, mod.negative_slope, mod.inplace


class Sigmoid(Requantizing, nn.Sigmoid):
    """``1 / (1 + exp(-x))`` onto ``(output_scale, output_zero_point)``; its repr is the
    float module's."""

    def __init__(self, output_scale, output_zero_point):
        nn.Sigmoid.__init__(self)
        self.output_scale = output_scale
        self.output_zero_point = output_zero_point

    def forward(self, input):
        grid_scale, grid_zero_point = float(self.output_scale), int(self.output_zero_point)
        return qops.sigmoid(input, grid_scale, grid_zero_point)

    def _get_name(self):
        return "Sigmoid"


class Softmax(_OnOutputGrid, nn.Softmax):
    """Softmax over ``dim`` (``None``: the legacy choice) onto the output grid."""
    _GRID_IN_STATE_DICT = False

    def __init__(self, dim=None, scale=1.0, zero_point=0):
        nn.Softmax.__init__(self, dim)
        self._set_grid(scale, zero_point)

    def _axis(self, rank: int) -> int:
        """``dim``, or for ``None`` torch's legacy rule: 0 for ranks 0, 1 and 3, else 1."""
        if self.dim is not None:
            return self.dim
        if rank == 0 or rank == 1 or rank == 3:
            return 0
        return 1

    def forward(self, input):
        axis = self._axis(input.dim())
        out_scale, out_zero_point = self._grid()
        return qops.softmax(input, axis, out_scale, out_zero_point)

    @classmethod
    def _rebuild(cls, mod, scale, zero_point):
        return mod.dim, scale, zero_point


# torch keeps its quantized PReLU in this module (pickles and module lists name it here)
from ember.ao.nn.quantized.modules.prelu import PReLU  # noqa: E402

PReLU.__module__ = __name__
