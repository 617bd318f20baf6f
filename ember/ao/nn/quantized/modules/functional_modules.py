"""Functional ops as modules, so eager quantization can observe and replace them
(torch.ao.nn.quantized.modules.functional_modules): ``FloatFunctional`` in the float
model (observes its outputs), ``QFunctional`` after ``convert`` (the ``quantized::`` ops
with the observed output parameters), ``FXFloatFunctional`` for FX graph mode."""
from __future__ import annotations

from typing import List

import ember
from ember import Tensor, nn

__all__ = ["FloatFunctional", "FXFloatFunctional", "QFunctional"]



def _no_forward(name):
    raise RuntimeError(f"{name} is not intended to use the 'forward'. Please use the "
                       f"underlying operation")


class FloatFunctional(nn.Module):
    """``add``, ``add_scalar``, ``mul``, ``mul_scalar``, ``cat``, ``add_relu``, ``matmul`` on
    float tensors; outputs of the tensor-tensor ops pass ``activation_post_process``
    (identity until ``prepare`` puts an observer there)."""

    def __init__(self):
        super().__init__()
        self.activation_post_process = nn.Identity()

    def forward(self, x):
        _no_forward("FloatFunctional")

    def add(self, x: Tensor, y: Tensor) -> Tensor:
        return self.activation_post_process(ember.add(x, y))

    def add_scalar(self, x: Tensor, y: float) -> Tensor:
        # not observed: the quantized op derives its output parameters from the input's
        return ember.add(x, y)

    def mul(self, x: Tensor, y: Tensor) -> Tensor:
        return self.activation_post_process(ember.mul(x, y))

    def mul_scalar(self, x: Tensor, y: float) -> Tensor:
        return ember.mul(x, y)

    def cat(self, x: List[Tensor], dim: int = 0) -> Tensor:
        return self.activation_post_process(ember.cat(x, dim=dim))

    def add_relu(self, x: Tensor, y: Tensor) -> Tensor:
        return self.activation_post_process(ember.relu(ember.add(x, y)))

    def matmul(self, x: Tensor, y: Tensor) -> Tensor:
        return self.activation_post_process(ember.matmul(x, y))


class FXFloatFunctional(nn.Module):
    """FloatFunctional without an observer slot (FX graph mode observes the graph)."""

    def forward(self, x):
        _no_forward("FloatFunctional")

    def add(self, x: Tensor, y: Tensor) -> Tensor:
        return ember.add(x, y)

    def add_scalar(self, x: Tensor, y: float) -> Tensor:
        return ember.add(x, y)

    def mul(self, x: Tensor, y: Tensor) -> Tensor:
        return ember.mul(x, y)

    def mul_scalar(self, x: Tensor, y: float) -> Tensor:
        return ember.mul(x, y)

    def cat(self, x: List[Tensor], dim: int = 0) -> Tensor:
        return ember.cat(x, dim=dim)

    def add_relu(self, x: Tensor, y: Tensor) -> Tensor:
        return ember.relu(ember.add(x, y))

    def matmul(self, x: Tensor, y: Tensor) -> Tensor:
        return ember.matmul(x, y)


class QFunctional(nn.Module):
    """The quantized counterpart of :class:`FloatFunctional`: results requantized to
    (``scale``, ``zero_point``)."""

    def __init__(self):
        super().__init__()
        self.scale = 1.0
        self.zero_point = 0
        self.activation_post_process = nn.Identity()

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        super()._save_to_state_dict(destination, prefix, keep_vars)
        destination[prefix + "scale"] = ember.tensor(self.scale)
        destination[prefix + "zero_point"] = ember.tensor(self.zero_point)

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs):
        self.scale = float(state_dict.pop(prefix + "scale"))
        self.zero_point = int(state_dict.pop(prefix + "zero_point"))
        super()._load_from_state_dict(state_dict, prefix, local_metadata, False, missing_keys,
                                      unexpected_keys, error_msgs)

    def _get_name(self):
        return "QFunctional"

    def extra_repr(self):
        return f"scale={self.scale}, zero_point={self.zero_point}"

    def forward(self, x):
        _no_forward("Functional")

    def add(self, x: Tensor, y: Tensor) -> Tensor:
        return self.activation_post_process(
            ember.ops.quantized.add(x, y, scale=self.scale, zero_point=self.zero_point))

    def add_scalar(self, x: Tensor, y: float) -> Tensor:
        return ember.ops.quantized.add_scalar(x, y)

    def mul(self, x: Tensor, y: Tensor) -> Tensor:
        return self.activation_post_process(
            ember.ops.quantized.mul(x, y, scale=self.scale, zero_point=self.zero_point))

    def mul_scalar(self, x: Tensor, y: float) -> Tensor:
        return ember.ops.quantized.mul_scalar(x, y)

    def cat(self, x: List[Tensor], dim: int = 0) -> Tensor:
        return self.activation_post_process(
            ember.ops.quantized.cat(x, scale=self.scale, zero_point=self.zero_point, dim=dim))

    def add_relu(self, x: Tensor, y: Tensor) -> Tensor:
        return self.activation_post_process(
            ember.ops.quantized.add_relu(x, y, scale=self.scale, zero_point=self.zero_point))

    def matmul(self, x: Tensor, y: Tensor) -> Tensor:
        return self.activation_post_process(
            ember.ops.quantized.matmul(x, y, scale=self.scale, zero_point=self.zero_point))

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        if type(mod) is not FloatFunctional:
            raise AssertionError("QFunctional.from_float expects an instance of "
                                 "FloatFunctional")
        scale, zero_point = mod.activation_post_process.calculate_qparams()
        new_mod = QFunctional()
        new_mod.scale = float(scale)
        new_mod.zero_point = int(zero_point)
        return new_mod
