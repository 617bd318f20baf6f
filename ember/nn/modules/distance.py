"""Row-wise distances between two ``(N, D)`` (or ``(D,)``) inputs."""
from ember.nn import functional as F
from ember.nn.modules.module import Module

__all__ = ["PairwiseDistance", "CosineSimilarity"]


class PairwiseDistance(Module):
    """p-norm of ``x1 - x2 + eps`` over the last dim; the order is kept as ``norm``."""
    __constants__ = ["norm", "eps", "keepdim"]

    def __init__(self, p=2.0, eps=1e-06, keepdim=False):
        super().__init__()
        self.norm, self.eps, self.keepdim = p, eps, keepdim

    def forward(self, x1, x2):
        return F.pairwise_distance(x1, x2, p=self.norm, eps=self.eps, keepdim=self.keepdim)


class CosineSimilarity(Module):
    """``x1 . x2 / max(|x1| |x2|, eps)`` along ``dim``."""
    __constants__ = ["dim", "eps"]

    def __init__(self, dim=1, eps=1e-08):
        super().__init__()
        self.dim, self.eps = dim, eps

    def forward(self, x1, x2):
        return F.cosine_similarity(x1, x2, dim=self.dim, eps=self.eps)
