import ember

from ._utils import OpModule

__all__ = ["stochastic_depth", "StochasticDepth"]


def stochastic_depth(input, p, mode, training=True):
    """Stochastic depth (Huang et al. 2016, https://arxiv.org/abs/1603.09382): in training,
    zero the residual branch ``input`` with probability ``p``, per sample ("row") or for the
    whole batch ("batch"), scaling what survives by ``1 / (1 - p)``."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"drop probability has to be between 0 and 1, but got {p}")
    if mode not in ("batch", "row"):
        raise ValueError(f"mode has to be either 'batch' or 'row', but got {mode}")
    if not training or p == 0.0:
        return input
    shape = [1] * input.ndim
    if mode == "row":
        shape[0] = input.shape[0]
    survive = 1.0 - p
    mask = ember.empty(shape, dtype=input.dtype, device=input.device).bernoulli_(survive)
    return input * (mask / survive if survive > 0.0 else mask)


class StochasticDepth(OpModule):
    _fields = ("p", "mode")

    def __init__(self, p, mode):
        super().__init__()
        self.p, self.mode = p, mode

    def forward(self, input):
        return stochastic_depth(input, self.p, self.mode, self.training)
