"""Tensor functions wrapped in modules so eager quantization can observe and swap them
(torch.ao.nn.quantized.modules.functional_modules).

All three offer ``add, add_scalar, mul, mul_scalar, cat, add_relu, matmul``:
``FloatFunctional`` (float; results of the tensor-tensor ops pass the output observer
``activation_post_process``), ``FXFloatFunctional`` (float, nothing observed: FX observes
the graph) and ``QFunctional`` (the ``quantized::`` ops, results on the grid
``(scale, zero_point)`` that ``from_float`` reads from the observer). The ``*_scalar`` ops
are never observed: their quantized form derives its grid from the input's."""
from __future__ import annotations

from typing import List

import ember
from ember import Tensor, nn
from ember.ao.nn.quantized.modules.utils import _output_qparams

__all__ = ["FloatFunctional", "FXFloatFunctional", "QFunctional"]

qops = ember.ops.quantized


def _forward_refused(what):
    raise RuntimeError(f"{what} is not intended to use the 'forward'. Please use the "
                       f"underlying operation")


class _FloatOps:
    """The float ops; a tensor-tensor result goes through ``self._seen``."""

    def forward(self, x):
        _forward_refused("FloatFunctional")

    def add(self, x: Tensor, y: Tensor) -> Tensor:
        return self._seen(ember.add(x, y))

    def add_scalar(self, x: Tensor, y: float) -> Tensor:
        return ember.add(x, y)

    def mul(self, x: Tensor, y: Tensor) -> Tensor:
        return self._seen(ember.mul(x, y))

    def mul_scalar(self, x: Tensor, y: float) -> Tensor:
        return ember.mul(x, y)

    def cat(self, x: List[Tensor], dim: int = 0) -> Tensor:
        return self._seen(ember.cat(x, dim=dim))

    def add_relu(self, x: Tensor, y: Tensor) -> Tensor:
        return self._seen(ember.relu(ember.add(x, y)))

    def matmul(self, x: Tensor, y: Tensor) -> Tensor:
        return self._seen(ember.matmul(x, y))


class FloatFunctional(_FloatOps, nn.Module):
    """Float ops whose tensor-tensor results are observed (identity until ``prepare``)."""

    def __init__(self):
        super().__init__()
        self.activation_post_process = nn.Identity()

    def _seen(self, out: Tensor) -> Tensor:
        return self.activation_post_process(out)


class FXFloatFunctional(_FloatOps, nn.Module):
    """Float ops, unobserved."""

    def _seen(self, out: Tensor) -> Tensor:
        return out


class QFunctional(nn.Module):
    """Quantized ops onto ``(scale, zero_point)``, which the state_dict carries as
    0-d tensors and the module as Python numbers."""
    _GRID_TYPES = (("scale", float), ("zero_point", int))

    def __init__(self):
        super().__init__()
        self.scale, self.zero_point = 1.0, 0
        self.activation_post_process = nn.Identity()

    def _get_name(self):
        return "QFunctional"

    def extra_repr(self):
        return ", ".join(f"{name}={getattr(self, name)}" for name, _ in self._GRID_TYPES)

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        super()._save_to_state_dict(destination, prefix, keep_vars)
        for name, _ in self._GRID_TYPES:
            destination[prefix + name] = ember.tensor(getattr(self, name))

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs):
        for name, kind in self._GRID_TYPES:
            setattr(self, name, kind(state_dict.pop(prefix + name)))
        # strict=False: keys left under the prefix are not reported as unexpected
        super()._load_from_state_dict(state_dict, prefix, local_metadata, False, missing_keys,
                                      unexpected_keys, error_msgs)

    def forward(self, x):
        _forward_refused("Functional")

    def _seen(self, out: Tensor) -> Tensor:
        return self.activation_post_process(out)

    def add(self, x: Tensor, y: Tensor) -> Tensor:
        return self._seen(qops.add(x, y, scale=self.scale, zero_point=self.zero_point))

    def add_scalar(self, x: Tensor, y: float) -> Tensor:
        return qops.add_scalar(x, y)

    def mul(self, x: Tensor, y: Tensor) -> Tensor:
        return self._seen(qops.mul(x, y, scale=self.scale, zero_point=self.zero_point))

    def mul_scalar(self, x: Tensor, y: float) -> Tensor:
        return qops.mul_scalar(x, y)

    def cat(self, x: List[Tensor], dim: int = 0) -> Tensor:
        return self._seen(qops.cat(x, scale=self.scale, zero_point=self.zero_point, dim=dim))

    def add_relu(self, x: Tensor, y: Tensor) -> Tensor:
        return self._seen(qops.add_relu(x, y, scale=self.scale, zero_point=self.zero_point))

    def matmul(self, x: Tensor, y: Tensor) -> Tensor:
        return self._seen(qops.matmul(x, y, scale=self.scale, zero_point=self.zero_point))

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        if type(mod) is not FloatFunctional:
            raise AssertionError("QFunctional.from_float expects an instance of "
                                 f"FloatFunctional, got {type(mod).__name__}")
        converted = cls()
        converted.scale, converted.zero_point = _output_qparams(mod)
        return converted
