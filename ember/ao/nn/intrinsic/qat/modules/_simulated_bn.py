"""What QAT ConvBn and LinearBn share: a weighted layer whose batch norm (``self.bn``) is
simulated on the fake-quantized weight. With ``g = gamma / sqrt(running_var + eps)`` of
shape ``(C_out,)``, the layer runs on ``fake_quant(W * g)``, its output is divided by
``g`` and the bias added back before ``bn`` — so folding ``bn`` at convert time gives what
training saw. Plus the switches that freeze the batch norm's statistics."""
from __future__ import annotations

import ember
from ember.nn import init


def with_simulated_batch_norm(cls):
    """Give ``cls`` the methods of :class:`SimulatedBatchNorm` it does not define itself
    (copied, not inherited, so the class keeps torch's bases)."""
    missing = {name: member for name, member in vars(SimulatedBatchNorm).items()
               if callable(member) and not name.startswith("__") and name not in vars(cls)}
    for name, member in missing.items():
        setattr(cls, name, member)
    return cls


class SimulatedBatchNorm:
    """The shared methods: ``_attach_bn(bn, qconfig, freeze_bn)`` in ``__init__``;
    ``_simulated(input, layer)`` in ``forward``, ``layer(input, weight)`` running the layer
    without bias."""

    def _attach_bn(self, bn, qconfig, freeze_bn):
        self.qconfig, self.bn = qconfig, bn
        self.weight_fake_quant = qconfig.weight()
        self.reset_bn_parameters()
        # outside training the statistics are always frozen
        self._bn_frozen(freeze_bn or not self.training)

    def _bn_frozen(self, frozen):
        """Frozen: ``bn`` normalizes with, and stops updating, its running statistics."""
        self.freeze_bn = frozen
        self.bn.training = not frozen
        return self

    def update_bn_stats(self):
        return self._bn_frozen(False)

    def freeze_bn_stats(self):
        return self._bn_frozen(True)

    def reset_running_stats(self):
        self.bn.reset_running_stats()

    def reset_bn_parameters(self):
        """Fresh statistics, gamma ~ U(0, 1), beta = 0."""
        bn = self.bn
        bn.reset_running_stats()
        init.uniform_(bn.weight)
        init.zeros_(bn.bias)

    def train(self, mode=True):
        """Children (``bn`` among them) follow ``mode`` only while not frozen."""
        self.training = mode
        followers = () if self.freeze_bn else self.children()
        for child in followers:
            child.train(mode)
        return self

    def _fold_bn(self):
        """(weight, bias) Parameters with ``bn`` folded in: what convert quantizes."""
        return self._folded(self.weight, self.bias)

    def _folded(self, weight, bias):
        """``weight`` / ``bias`` folded with ``bn`` by the class's ``_FOLD`` function."""
        bn = self.bn
        return self._FOLD(weight, bias, bn.running_mean, bn.running_var, bn.eps, bn.weight,
                          bn.bias)

    def _simulated(self, input, layer):
        rank = self.weight.dim()
        as_rows = (-1,) + (1,) * (rank - 1)           # (C_out, 1, ...) against the weight
        as_channels = (1, -1) + (1,) * (rank - 2)     # (1, C_out, ...) against the output
        bn = self.bn
        gain = bn.weight / ember.sqrt(bn.running_var + bn.eps)
        out = layer(input, self.weight_fake_quant(self.weight * gain.reshape(as_rows)))
        out = out / gain.reshape(as_channels)
        if self.bias is not None:
            out = out + self.bias.reshape(as_channels)
        return bn(out)


_BN_STATE = ("weight", "bias", "running_mean", "running_var", "num_batches_tracked")


def from_fused_float(cls, mod, float_cls, layer_kwargs, qconfig_word="qconfig"):
    """``cls.from_float`` of a fused float ``float_cls(layer, bn)`` carrying ``qconfig``:
    ``cls(**layer_kwargs(layer), eps, momentum, qconfig)`` sharing (not copying) the layer's
    weight and bias and the batch norm's parameters and statistics. ``qconfig_word`` is
    what the falsy-qconfig error calls it (torch's LinearBn1d says "config")."""
    if type(mod) is not float_cls:
        raise AssertionError(f"qat.{cls.__name__}.from_float only works for "
                             f"{float_cls.__name__}")
    if not hasattr(mod, "qconfig"):
        raise AssertionError("Input float module must have qconfig defined")
    if not mod.qconfig:
        raise AssertionError(f"Input float module must have a valid {qconfig_word}")
    layer, bn = mod[0], mod[1]
    qat = cls(**layer_kwargs(layer), eps=bn.eps, momentum=bn.momentum, qconfig=mod.qconfig)
    qat.weight, qat.bias = layer.weight, layer.bias
    for name in _BN_STATE:
        setattr(qat.bn, name, getattr(bn, name))
    return qat
