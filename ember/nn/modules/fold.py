"""Sliding blocks: ``Unfold`` maps ``(N, C, H, W)`` to columns ``(N, C*prod(k), L)``;
``Fold`` sums such columns back into ``(N, C, *output_size)``."""
from ember.nn import functional as F
from ember.nn.modules.module import Module

__all__ = ["Fold", "Unfold"]


def _block_repr(m):
    return (f"kernel_size={m.kernel_size}, dilation={m.dilation}, padding={m.padding}, "
            f"stride={m.stride}")


class Fold(Module):
    __constants__ = ["output_size", "kernel_size", "dilation", "padding", "stride"]

    def __init__(self, output_size, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.output_size, self.kernel_size = output_size, kernel_size
        self.dilation, self.padding, self.stride = dilation, padding, stride

    def forward(self, input):
        blocks = self.kernel_size
        return F.fold(input, output_size=self.output_size, kernel_size=blocks,
                      dilation=self.dilation, padding=self.padding, stride=self.stride)

    def extra_repr(self):
        return f"output_size={self.output_size}, " + _block_repr(self)


class Unfold(Module):
    __constants__ = ["kernel_size", "dilation", "padding", "stride"]

    def __init__(self, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.kernel_size = kernel_size
        self.dilation, self.padding, self.stride = dilation, padding, stride

    def forward(self, input):
        blocks = self.kernel_size
        return F.unfold(input, kernel_size=blocks, dilation=self.dilation, padding=self.padding,
                        stride=self.stride)

    def extra_repr(self):
        return _block_repr(self)
