"""ember.nn.modules.distance (torch.nn.modules.distance), ported onto ember."""
import math
import collections
from itertools import repeat
from collections.abc import Sequence
import ember as torch
from ember import Tensor
from ember.nn import functional as F, init
from ember.nn.modules.module import Module
try:
    from ember.nn.parameter import Parameter, UninitializedParameter
except ImportError:  # pragma: no cover
    pass


def _ntuple(n, name="parse"):
    def parse(x):
        if isinstance(x, collections.abc.Iterable):
            return tuple(x)
        return tuple(repeat(x, n))
    parse.__name__ = name
    return parse


_single = _ntuple(1, "_single")
_pair = _ntuple(2, "_pair")
_triple = _ntuple(3, "_triple")
_quadruple = _ntuple(4, "_quadruple")


def _reverse_repeat_tuple(t, n):
    return tuple(x for x in reversed(t) for _ in range(n))


__all__ = ['PairwiseDistance', 'CosineSimilarity']

class PairwiseDistance(Module):
    __constants__ = ['norm', 'eps', 'keepdim']

    def __init__(self, p=2.0, eps=1e-06, keepdim=False):
        super().__init__()
        self.norm = p
        self.eps = eps
        self.keepdim = keepdim

    def forward(self, x1, x2):
        return F.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)

class CosineSimilarity(Module):
    __constants__ = ['dim', 'eps']

    def __init__(self, dim=1, eps=1e-08):
        super().__init__()
        self.dim = dim
        self.eps = eps

    def forward(self, x1, x2):
        return F.cosine_similarity(x1, x2, self.dim, self.eps)
