"""QAT LinearBn1d (torch.ao.nn.intrinsic.qat.LinearBn1d): a Linear trained with its
following BatchNorm1d simulated on the fake-quantized weight (see ``_simulated_bn``);
input ``(N, in_features)``, output ``(N, out_features)``, ``bn`` kept as a module."""
from __future__ import annotations

from ember import nn
from ember.nn import functional as F
from ember.nn.utils.fusion import fuse_linear_bn_weights
from ember.ao.nn import intrinsic as nni
from ember.ao.nn.intrinsic.modules.fused import _FusedModule
from ember.ao.nn.intrinsic.qat.modules._simulated_bn import (from_fused_float,
                                                             with_simulated_batch_norm)
from ember.ao.nn.qat.modules.linear import _require_qconfig

__all__ = ["LinearBn1d"]


def _linear_kwargs(linear):
    """Constructor arguments that rebuild ``linear``'s shape (and whether it has a bias)."""
    return {"in_features": linear.in_features, "out_features": linear.out_features,
            "bias": linear.bias is not None}


@with_simulated_batch_norm
class LinearBn1d(nn.modules.linear.Linear, _FusedModule):
    """``bn(linear(x, fake_quant(w * g)) / g + bias)`` with ``g = gamma / running_std``."""
    _FOLD = staticmethod(fuse_linear_bn_weights)

    def __init__(self, in_features, out_features, bias=True, eps=1e-05, momentum=0.1,
                 freeze_bn=False, qconfig=None):
        nn.Linear.__init__(self, in_features, out_features, bias)
        _require_qconfig(qconfig)
        batch_norm = nn.BatchNorm1d(out_features, eps=eps, momentum=momentum)
        self._attach_bn(batch_norm, qconfig, freeze_bn)

    def forward(self, input):
        return self._simulated(input, F.linear)

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        return from_fused_float(cls, mod, nni.LinearBn1d, _linear_kwargs, "config")

    def to_float(self):
        """A float ``nn.Linear`` with ``bn`` folded in, in this module's mode."""
        linear = nn.Linear(self.in_features, self.out_features, bias=True)
        linear.weight, linear.bias = self._fold_bn()
        return linear.train(self.training)
