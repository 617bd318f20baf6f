"""What QAT ConvBn and LinearBn share: a weighted layer whose batch norm (``self.bn``) is
simulated on the fake-quantized weight — the weight scaled by the batch norm's gain
``gamma / sigma`` (running statistics) before fake quantization, the layer's output divided
back before ``bn``, so that folding at convert time gives what training saw — and the
switches that freeze the batch norm's statistics."""
from __future__ import annotations

import ember
from ember.nn import init


def with_simulated_batch_norm(cls):
    """Give ``cls`` the methods of :class:`SimulatedBatchNorm` it does not define itself
    (copied, not inherited, so the class keeps torch's bases)."""
    for name, value in vars(SimulatedBatchNorm).items():
        if callable(value) and not name.startswith("__") and name not in cls.__dict__:
            setattr(cls, name, value)
    return cls


class SimulatedBatchNorm:
    """The shared methods: ``_attach_bn(bn, qconfig, freeze_bn)`` in ``__init__``;
    ``_simulated(input, layer)`` in ``forward``, ``layer(input, weight)`` running the layer
    without bias."""

    def _attach_bn(self, bn, qconfig, freeze_bn):
        self.qconfig = qconfig
        self.freeze_bn = freeze_bn if self.training else True
        self.bn = bn
        self.weight_fake_quant = qconfig.weight()
        self.reset_bn_parameters()
        if self.training and not freeze_bn:
            self.update_bn_stats()
        else:
            self.freeze_bn_stats()

    def reset_running_stats(self):
        self.bn.reset_running_stats()

    def reset_bn_parameters(self):
        self.bn.reset_running_stats()
        init.uniform_(self.bn.weight)
        init.zeros_(self.bn.bias)

    def update_bn_stats(self):
        """Let the batch norm use and update batch statistics (training)."""
        self.freeze_bn = False
        self.bn.training = True
        return self

    def freeze_bn_stats(self):
        """Use the running statistics from now on, and stop updating them."""
        self.freeze_bn = True
        self.bn.training = False
        return self

    def train(self, mode=True):
        """The batch norm follows the mode only while its statistics are not frozen."""
        self.training = mode
        if not self.freeze_bn:
            for module in self.children():
                module.train(mode)
        return self

    def _simulated(self, input, layer):
        per_output = [-1] + [1] * (self.weight.dim() - 1)        # (C_out, 1, ...)
        per_channel = [1, -1] + [1] * (self.weight.dim() - 2)    # (1, C_out, ...)
        gain = self.bn.weight / ember.sqrt(self.bn.running_var + self.bn.eps)
        out = layer(input, self.weight_fake_quant(self.weight * gain.reshape(per_output)))
        out = out / gain.reshape(per_channel)
        if self.bias is not None:
            out = out + self.bias.reshape(per_channel)
        return self.bn(out)
