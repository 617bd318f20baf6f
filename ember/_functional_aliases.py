"""Top-level torch.<op> spellings of functional ops ember had only under nn.functional:
``pdist(input (N, M), p=2) -> (N*(N-1)/2,)``, ``bilinear(x1 (*, in1), x2 (*, in2),
weight (out, in1, in2), bias=None) -> (*, out)``, ``conv_tbc(input (T, B, C_in),
weight (K, C_in, C_out), bias (C_out,), pad=0) -> (T + 2 pad - K + 1, B, C_out)``."""
from ember.nn import functional as _F

__all__ = ["pdist", "bilinear", "conv_tbc"]


def pdist(input, p=2):
    """Pairwise p-norm distances between the rows of ``input`` (upper triangle, row-major)."""
    return _F.pdist(input, p)


def bilinear(input1, input2, weight, bias=None):
    """``y[..., o] = x1 @ weight[o] @ x2 (+ bias[o])``."""
    return _F.bilinear(input1, input2, weight, bias)


def conv_tbc(input, weight, bias, pad=0):
    """1D convolution over time-batch-channel input (see nn.functional.conv_tbc)."""
    return _F.conv_tbc(input, weight, bias, pad)
