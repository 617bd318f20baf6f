"""``ChannelShuffle(g)``: split the channels of ``(N, C, *)`` into ``g`` groups and
interleave them (a ``(g, C/g)`` -> ``(C/g, g)`` transpose of the channel axis)."""
from ember.nn import functional as F
from ember.nn.modules.module import Module

__all__ = ["ChannelShuffle"]


class ChannelShuffle(Module):
    __constants__ = ["groups"]

    def __init__(self, groups):
        super().__init__()
        self.groups = groups

    def forward(self, input):
        return F.channel_shuffle(input, self.groups)

    def extra_repr(self):
        return f"groups={self.groups}"
