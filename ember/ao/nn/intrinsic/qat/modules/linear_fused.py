"""QAT LinearBn1d (torch.ao.nn.intrinsic.qat.LinearBn1d): the conv-bn approximation applied
to a Linear (``bn`` kept as a module)."""
from __future__ import annotations

from ember import nn
from ember.nn import functional as F
from ember.nn.utils.fusion import fuse_linear_bn_weights
from ember.ao.nn import intrinsic as nni
from ember.ao.nn.intrinsic.modules.fused import _FusedModule
from ember.ao.nn.intrinsic.qat.modules._simulated_bn import with_simulated_batch_norm
from ember.ao.nn.qat.modules.linear import _require_qconfig

__all__ = ["LinearBn1d"]


@with_simulated_batch_norm
class LinearBn1d(nn.modules.linear.Linear, _FusedModule):
    """``bn(linear(x, fake_quant(w * gamma / std)) / (gamma / std) + bias)``."""

    def __init__(self, in_features, out_features, bias=True, eps=1e-05, momentum=0.1,
                 freeze_bn=False, qconfig=None):
        nn.Linear.__init__(self, in_features, out_features, bias)
        _require_qconfig(qconfig)
        self._attach_bn(nn.BatchNorm1d(out_features, eps, momentum, True, True), qconfig,
                        freeze_bn)

    def forward(self, input):
        return self._simulated(input, F.linear)

    def _fold_bn(self):
        return fuse_linear_bn_weights(self.weight, self.bias, self.bn.running_mean,
                                      self.bn.running_var, self.bn.eps, self.bn.weight,
                                      self.bn.bias)

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        if type(mod) is not nni.LinearBn1d:
            raise AssertionError(f"qat.{cls.__name__}.from_float only works for "
                                 f"{nni.LinearBn1d.__name__}")
        if not getattr(mod, "qconfig", None):
            raise AssertionError("Input float module must have a valid qconfig")
        linear, bn = mod[0], mod[1]
        qat = cls(linear.in_features, linear.out_features, linear.bias is not None, bn.eps,
                  bn.momentum, False, mod.qconfig)
        qat.weight = linear.weight
        qat.bias = linear.bias
        qat.bn.weight = bn.weight
        qat.bn.bias = bn.bias
        qat.bn.running_mean = bn.running_mean
        qat.bn.running_var = bn.running_var
        qat.bn.num_batches_tracked = bn.num_batches_tracked
        return qat

    def to_float(self):
        linear = nn.Linear(self.in_features, self.out_features)
        linear.weight, linear.bias = self._fold_bn()
        linear.train(self.training)
        return linear
