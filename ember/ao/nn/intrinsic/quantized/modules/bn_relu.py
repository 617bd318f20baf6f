"""Quantized BNReLU2d/3d (torch.ao.nn.intrinsic.quantized): batch norm then relu, one
requantization (``quantized::batch_norm2d_relu``)."""
from __future__ import annotations

from ember.ao.nn import quantized as nnq
from ember.ao.nn.intrinsic.modules import fused as nni
from ember.ops import quantized as Q

__all__ = ["BNReLU2d", "BNReLU3d"]


class BNReLU2d(nnq.BatchNorm2d):
    _FLOAT_MODULE = nni.BNReLU2d

    def forward(self, input):
        if input.dim() != 4:
            raise ValueError("Input shape must be `(N, C, H, W)`!")
        return Q.batch_norm2d_relu(input, self.weight, self.bias, self.running_mean,
                                   self.running_var, self.eps, self.scale, self.zero_point)


class BNReLU3d(BNReLU2d):
    _FLOAT_MODULE = nni.BNReLU3d
    _NDIM = 5
    _SHAPE = "(N, C, D, H, W)"

    def forward(self, input):
        if input.dim() != 5:
            raise ValueError("Input shape must be `(N, C, D, H, W)`!")
        return Q.batch_norm3d_relu(input, self.weight, self.bias, self.running_mean,
                                   self.running_var, self.eps, self.scale, self.zero_point)
