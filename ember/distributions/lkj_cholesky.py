"""LKJCholesky(dim, concentration): Cholesky factors of LKJ-distributed correlation matrices."""
import math

import ember
from . import constraints
from ._discrete import checks_value
from .beta import Beta
from .distribution import Distribution

__all__ = ["LKJCholesky"]


class LKJCholesky(Distribution):
    """Lower Cholesky factors ``L (..., dim, dim)`` of correlation matrices ``L L^T`` with density
    proportional to ``det(L L^T)^(concentration - 1)``.

    Drawn by the onion method: row ``k`` of ``L`` is ``(sqrt(y_k) u_k, sqrt(1 - y_k))`` with
    ``u_k`` uniform on the unit sphere of its ``k`` off-diagonal entries and ``y_k`` Beta
    distributed (``_beta``, one column per row)."""
    support = constraints.corr_cholesky
    _batched = ("concentration",)
    arg_constraints = {"concentration": constraints.positive}

    def __init__(self, dim, concentration=1.0, validate_args=None):
        if dim < 2:
            raise ValueError(f"Expected dim to be an integer greater than or equal to 2. "
                             f"Found dim={dim}.")
        self.dim = dim
        self._set_params(concentration)
        # row k >= 1 takes Beta(k - 1/2, eta + (dim - 1 - k) / 2); row 0 (no off-diagonal) is
        # given k = 1's second concentration and is unused
        prior_rows = (ember.arange(dim, dtype=self.concentration.dtype) - 1).clamp(min=0)
        first = prior_rows + 0.5
        second = self.concentration.unsqueeze(-1) + (dim - 2 - prior_rows) / 2
        self._beta = Beta(first, second)
        super().__init__(self.concentration.shape, (dim, dim), validate_args=validate_args)

    def sample(self, sample_shape=ember.Size()):
        with ember.no_grad():
            y = self._beta.sample(sample_shape).unsqueeze(-1)
            normals = ember.randn(self._extended_shape(sample_shape), dtype=y.dtype).tril(-1)
            tiny = ember.finfo(y.dtype).tiny
            directions = normals / normals.norm(dim=-1, keepdim=True).clamp(min=tiny)  # row 0: 0
            off_diagonal = y.sqrt() * directions
            diagonal = (1 - off_diagonal.square().sum(-1)).clamp(min=tiny).sqrt()
            return off_diagonal + ember.diag_embed(diagonal)

    @checks_value
    def log_prob(self, value):
        """``sum_{k >= 1} (2 (eta - 1) + dim - 1 - k) log L_kk`` (0-based ``k``) minus the log
        normaliser ``(dim - 1) / 2 log pi + log Gamma_{dim-1}(a - 1/2) - (dim - 1) log Gamma(a)``,
        ``a = eta + (dim - 1) / 2``."""
        d, eta = self.dim, self.concentration
        k = ember.arange(1, d, dtype=eta.dtype)
        powers = 2 * (eta.unsqueeze(-1) - 1) + (d - 1 - k)
        log_diagonal = value.diagonal(dim1=-2, dim2=-1)[..., 1:].log()
        a = eta + (d - 1) / 2
        log_normalizer = ((d - 1) / 2 * math.log(math.pi) + ember.mvlgamma(a - 0.5, d - 1)
                          - (d - 1) * a.lgamma())
        return (powers * log_diagonal).sum(-1) - log_normalizer
